#include "core/process.h"

#include "core/error.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

namespace slapo {

namespace {

void append_capped(std::string* buffer, const char* data, size_t n, size_t cap) {
  buffer->append(data, n);
  if (buffer->size() > cap) buffer->erase(0, buffer->size() - cap);
}

void collect(pid_t pid, int out_fd, int err_fd, const ProcessOptions& options,
             std::chrono::steady_clock::time_point start, ProcessResult* out) {
  ProcessResult& result = *out;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  bool open[2] = {true, true};
  char buffer[65536];
  while (open[0] || open[1]) {
    int wait_ms = -1;
    if (options.timeout_s > 0) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (elapsed >= options.timeout_s) {
        result.timed_out = true;
        kill(-pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>((options.timeout_s - elapsed) * 1000) + 1;
    }
    for (int i = 0; i < 2; ++i) fds[i].fd = open[i] ? (i == 0 ? out_fd : err_fd) : -1;
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        open[i] = false;
      } else {
        append_capped(i == 0 ? &result.out : &result.err, buffer, static_cast<size_t>(n),
                      options.max_output_bytes);
      }
    }
  }
  close(out_fd);
  close(err_fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever it left behind in its group goes too.
  kill(-pid, SIGKILL);
  result.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
}

}  // namespace

std::string signal_name(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

std::string tail_lines(const std::string& text, size_t lines) {
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  size_t found = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++found == lines) break;
    --pos;
  }
  return text.substr(pos);
}

SpawnArgs::SpawnArgs(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& extra)
    : argv_(argv) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  for (const auto& [k, v] : env) env_.push_back(k + "=" + v);
  for (auto& s : env_) env_ptrs_.push_back(s.data());
  env_ptrs_.push_back(nullptr);
  for (auto& s : argv_) argv_ptrs_.push_back(s.data());
  argv_ptrs_.push_back(nullptr);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult result;
  if (argv.empty()) {
    result.error = "empty command";
    return result;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a time-out kills it and everything it started.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

  SpawnArgs spawn(argv, options.env);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, spawn.argv()[0], &actions, &attr, spawn.argv(), spawn.envp());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.error = "cannot run '" + argv[0] + "': " + std::strerror(rc);
    return result;
  }
  result.started = true;
  collect(pid, out_pipe[0], err_pipe[0], options, start, &result);
  return result;
}

ProcessResult fork_and_run(const std::function<int()>& body, const ProcessOptions& options) {
  ProcessResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    // The child: its own process group, output to the pipes, no input, the environment added.
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    const int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (const auto& [k, v] : options.env) setenv(k.c_str(), v.c_str(), 1);
    int code = 1;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "uncaught exception: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "uncaught exception of a type that is not std::exception\n");
    }
    fflush(stdout);
    fflush(stderr);
    _exit(code);
  }
  setpgid(pid, pid);  // also from here, so a kill at once reaches the group
  close(out_pipe[1]);
  close(err_pipe[1]);
  result.started = true;
  collect(pid, out_pipe[0], err_pipe[0], options, start, &result);
  return result;
}

std::string self_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  SLAPO_CHECK(n > 0, ErrorCode::kIo, "cannot find this program's executable (/proc/self/exe)");
  return std::string(path, static_cast<size_t>(n));
}

}  // namespace slapo
