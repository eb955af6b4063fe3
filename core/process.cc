#include "core/process.h"

#include "core/error.h"
#include "core/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

extern char** environ;

namespace slapo {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void append_capped(std::string* buffer, const char* data, size_t n, size_t cap) {
  buffer->append(data, n);
  if (buffer->size() > cap) buffer->erase(0, buffer->size() - cap);
}

// The kernel's count of processes its OOM killer killed (0 where the system does not say).
int64_t oom_kill_count() {
  FILE* f = std::fopen("/proc/vmstat", "r");
  if (!f) return 0;
  char name[64];
  long long value = 0;
  int64_t count = 0;
  while (std::fscanf(f, "%63s %lld", name, &value) == 2) {
    if (std::strcmp(name, "oom_kill") == 0) count = value;
  }
  std::fclose(f);
  return count;
}

constexpr double kTickS = 0.25;         // how often a running child is looked at
constexpr double kGraceAfterExitS = 1;  // output read after the child exited or was killed

// Reads the child's output until both pipes close (or the grace after its end), enforcing the
// time limit and the watcher; reaps it and kills what is left of its group.
void collect(pid_t pid, int out_fd, int err_fd, const ProcessOptions& options,
             Clock::time_point start, ProcessResult* out) {
  ProcessResult& result = *out;
  register_child_group(pid);
  const int64_t oom_kills_before = oom_kill_count();
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  bool open[2] = {true, true};
  char buffer[65536];
  int status = 0;
  bool exited = false, killed = false;
  Clock::time_point ended;  // when it exited or was killed
  const auto end_group = [&] {
    kill(-pid, SIGKILL);
    if (!killed) ended = Clock::now();
    killed = true;
  };
  const auto reap = [&](int flags) {
    if (exited) return;
    pid_t w;
    while ((w = waitpid(pid, &status, flags)) < 0 && errno == EINTR) {
    }
    if (w == pid) {
      exited = true;
      if (!killed) ended = Clock::now();
    }
  };
  // The time limit, then the watcher (given the new output): either ends the group.
  const auto enforce = [&](const std::string& fresh) {
    if (killed || exited) return;
    if (options.timeout_s > 0 && seconds_since(start) >= options.timeout_s) {
      result.timed_out = true;
      end_group();
    } else if (options.watch && options.watch(fresh)) {
      result.stopped = true;
      end_group();
    }
  };
  while (open[0] || open[1]) {
    reap(WNOHANG);
    if ((exited || killed) && seconds_since(ended) > kGraceAfterExitS) break;
    double wait_s = kTickS;
    if (!killed && options.timeout_s > 0)
      wait_s = std::min(wait_s, options.timeout_s - seconds_since(start));
    for (int i = 0; i < 2; ++i) fds[i].fd = open[i] ? (i == 0 ? out_fd : err_fd) : -1;
    const int ready = poll(fds, 2, static_cast<int>(std::max(0.0, wait_s) * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    std::string fresh;
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        open[i] = false;
      } else {
        append_capped(i == 0 ? &result.out : &result.err, buffer, static_cast<size_t>(n),
                      options.max_output_bytes);
        if (i == 0) fresh.assign(buffer, static_cast<size_t>(n));
      }
    }
    enforce(fresh);
  }
  close(out_fd);
  close(err_fd);
  // It closed its output but may still run: the time limit and the watcher still hold.
  for (reap(WNOHANG); !exited; reap(killed ? 0 : WNOHANG)) {
    enforce("");
    if (!killed) usleep(static_cast<useconds_t>(kTickS * 1e6 / 5));
  }
  // Whatever it left behind in its group goes too.
  kill(-pid, SIGKILL);
  unregister_child_group(pid);
  result.duration_s = seconds_since(start);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  const bool failed = result.signal != 0 || result.exit_code != 0;
  result.interrupted = failed && !result.timed_out && !result.stopped && interrupt_requested();
  result.oom_killed = result.signal == SIGKILL && !result.timed_out && !result.stopped &&
                      !result.interrupted && oom_kill_count() > oom_kills_before;
}

// In a forked child, before exec: only async-signal-safe calls. Its own process group, killed
// when its parent dies, default signal handling, no input, output to the pipes.
// in_fd -1: /dev/null; err_fd -1: this process's standard error.
void prepare_child(pid_t parent, int out_fd, int err_fd, int in_fd = -1) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before the line above
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD}) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (in_fd >= 0) {
    dup2(in_fd, 0);
  } else {
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) dup2(null, 0);
  }
  dup2(out_fd, 1);
  if (err_fd >= 0) dup2(err_fd, 2);
}

// The child's report of a failure before exec: which step and errno, on a close-on-exec pipe.
struct ExecFailure {
  int step;  // 0: chdir, 1: setrlimit, 2: exec
  int error;
};

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

pid_t spawn_child(const std::vector<std::string>& argv, const ChildSetup& setup, std::string* error,
                  int* error_number) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    if (error_number) *error_number = errno;
    return -1;
  }
  SpawnArgs spawn(argv, setup.env);  // built before the fork: the child must not allocate
  const char* cwd = setup.cwd.empty() ? nullptr : setup.cwd.c_str();
  const rlimit limit{static_cast<rlim_t>(setup.address_space_bytes),
                     static_cast<rlim_t>(setup.address_space_bytes)};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prepare_child(parent, setup.out_fd, setup.err_fd, setup.in_fd);
    ExecFailure failure{0, 0};
    if (cwd && chdir(cwd) != 0) {
      failure = {0, errno};
    } else if (setup.address_space_bytes > 0 && setrlimit(RLIMIT_AS, &limit) != 0) {
      failure = {1, errno};
    } else {
      execvpe(spawn.argv()[0], spawn.argv(), spawn.envp());
      failure = {2, errno};
    }
    (void)!write(report[1], &failure, sizeof failure);
    _exit(127);
  }
  close(report[1]);
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    if (error_number) *error_number = errno;
    close(report[0]);
    return -1;
  }
  ExecFailure failure{};
  ssize_t n;
  while ((n = read(report[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n != static_cast<ssize_t>(sizeof failure)) return pid;  // exec'd: the pipe closed empty
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string why = std::strerror(failure.error);
  if (error_number) *error_number = failure.error;
  *error = failure.step == 0   ? "cannot enter the directory '" + setup.cwd + "': " + why
           : failure.step == 1 ? "cannot limit the address space: " + why
                               : "cannot run '" + argv[0] + "': " + why;
  return -1;
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
  ChildSetup setup;
  setup.env = options.env;
  setup.cwd = options.cwd;
  setup.address_space_bytes = options.address_space_bytes;
  setup.out_fd = out_pipe[1];
  setup.err_fd = err_pipe[1];
  const auto start = Clock::now();
  const pid_t pid = spawn_child(argv, setup, &result.error, &result.start_errno);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
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
  const pid_t parent = getpid();
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    // The child: as an exec'd one (prepare_child), then the body.
    prepare_child(parent, out_pipe[1], err_pipe[1]);
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
