#include "core/coprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/process.h"

namespace slapo {

std::unique_ptr<Coprocess> Coprocess::start(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& extra_env) {
  SLAPO_CHECK(!argv.empty(), ErrorCode::kInvalidArgument, "coprocess: empty command");
  int in_pipe[2], out_pipe[2];
  SLAPO_CHECK(pipe2(in_pipe, O_CLOEXEC) == 0 && pipe2(out_pipe, O_CLOEXEC) == 0, ErrorCode::kIo,
              "pipe: ", std::strerror(errno));
  ChildSetup setup;
  setup.env = extra_env;
  setup.in_fd = in_pipe[0];
  setup.out_fd = out_pipe[1];
  std::string error;
  const pid_t pid = spawn_child(argv, setup, &error);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (pid < 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    SLAPO_FAIL(ErrorCode::kNotFound, error);
  }
  std::unique_ptr<Coprocess> c(new Coprocess());
  c->pid_ = pid;
  register_child_group(pid);
  c->in_ = in_pipe[1];
  c->out_ = out_pipe[0];
  return c;
}

Coprocess::~Coprocess() {
  if (in_ >= 0) close(in_);
  if (out_ >= 0) close(out_);
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    unregister_child_group(pid_);
  }
}

bool Coprocess::write_line(const std::string& line) {
  const std::string data = line + "\n";
  size_t done = 0;
  while (done < data.size()) {
    // MSG_NOSIGNAL does not apply to pipes: a closed reader would raise SIGPIPE, so block it here.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    const ssize_t n = write(in_, data.data() + done, data.size() - done);
    const int saved = errno;
    if (n < 0 && saved == EPIPE) {
      timespec zero{0, 0};
      sigtimedwait(&block, nullptr, &zero);  // consume the pending SIGPIPE
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (n < 0) {
      if (saved == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string> Coprocess::read_line(double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  char chunk[65536];
  while (true) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    int wait_ms = -1;
    if (timeout_s > 0) {
      const double left =
          timeout_s -
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (left <= 0) return std::nullopt;
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd fd{out_, POLLIN, 0};
    const int ready = poll(&fd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends it
    const ssize_t n = read(out_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace slapo
