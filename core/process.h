#pragma once
// Running a child process: argv (never a shell), extra environment, a working directory, an
// address-space limit, a time limit that kills its whole process group, a watcher that may end it
// early, and its output captured. Used by the subprocess and command runners.
//
// The child is fork+exec'd with only async-signal-safe calls between the two (a fork of a process
// that has run an OpenMP region must not run OpenMP: exec at once is safe). It leads its own
// process group, is registered for interruption (core/interrupt.h) and dies with this process
// (PR_SET_PDEATHSIG). Its output is read until both pipes close, or for at most a second after it
// exited: a grandchild that left its group cannot hold the run open.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace slapo {

struct ProcessOptions {
  std::map<std::string, std::string> env;  // added to (or overriding) this process's environment
  double timeout_s = 0;                    // 0: no limit
  size_t max_output_bytes = 64 << 20;      // output beyond this is dropped (the tail is kept)
  std::string cwd;                         // the child's working directory; empty: this one's
  uint64_t address_space_bytes = 0;        // RLIMIT_AS of the child (virtual memory); 0: none
  // Called with each new piece of standard output, and with an empty one at least every 250 ms
  // while the child runs; returning true ends the child's process group (ProcessResult::stopped).
  std::function<bool(const std::string& chunk)> watch;
};

struct ProcessResult {
  bool started = false;      // false: the executable could not be started (see error)
  bool timed_out = false;    // killed (with its process group) at the time limit
  bool stopped = false;      // killed (with its process group) because `watch` asked
  bool interrupted = false;  // ended by an interrupt of this process (core/interrupt.h)
  bool peer_failed = false;  // a rank ended because another rank of its job failed (run_ranks)
  // Killed by SIGKILL that this process did not send while the kernel's count of out-of-memory
  // kills (/proc/vmstat oom_kill) went up: the kernel's OOM killer.
  bool oom_killed = false;
  int exit_code = -1;   // when it exited normally
  int signal = 0;       // when a signal ended it
  std::string out;      // standard output
  std::string err;      // standard error
  std::string error;    // why it could not start
  int start_errno = 0;  // ... its errno (E2BIG: the arguments and environment are too long)
  double duration_s = 0;
};

// argv and an environment — this process's, with `extra` added or overriding — as the arrays
// execve takes, kept alive as long as this object.
class SpawnArgs {
 public:
  SpawnArgs(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra);
  char* const* argv() { return argv_ptrs_.data(); }
  char* const* envp() { return env_ptrs_.data(); }

 private:
  std::vector<std::string> argv_, env_;
  std::vector<char*> argv_ptrs_, env_ptrs_;
};

// How a child is started (spawn_child): its environment (added to this process's), working
// directory, address-space limit, and standard streams.
struct ChildSetup {
  std::map<std::string, std::string> env;
  std::string cwd;                   // empty: this process's
  uint64_t address_space_bytes = 0;  // RLIMIT_AS; 0: none
  int in_fd = -1;                    // -1: /dev/null
  int out_fd = 1;
  int err_fd = -1;  // -1: this process's standard error
};

// Starts argv[0] (searched in PATH when it has no slash) in a fork+exec'd child set up as every
// child here is: its own process group, killed when this process dies (PR_SET_PDEATHSIG), default
// signal handling. Returns its pid, or -1 with `*error` (and `*error_number`) saying which step
// failed: entering the directory, the limit, or the exec. The caller registers and reaps it.
pid_t spawn_child(const std::vector<std::string>& argv, const ChildSetup& setup, std::string* error,
                  int* error_number = nullptr);

// Runs argv[0] (searched in PATH when it has no slash) with argv, waits for it, returns what
// happened. Never throws for the child's failures.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Runs `body` in a fork of this process (its own process group, standard output and error
// captured, no input, `options.env` added), with the same time limit and result as run_process;
// the child exits with body's return value; an exception that escapes `body` is printed on the
// child's standard error ("uncaught exception: ...") and the child exits 1. REQUIRES: this process
// has not run an OpenMP parallel region (libgomp deadlocks in such a child) — the fork server
// (`slapo-tune worker --serve`) forks before any.
ProcessResult fork_and_run(const std::function<int()>& body, const ProcessOptions& options = {});

// The last `lines` lines of `text`.
std::string tail_lines(const std::string& text, size_t lines);

// "SIGSEGV" for 11, etc.
std::string signal_name(int signal);

// The path of the running executable (/proc/self/exe), to start more of it (workers, ranks).
// Throws Error(kIo) when the system does not say.
std::string self_executable();

}  // namespace slapo
