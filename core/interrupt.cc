#include "core/interrupt.h"

#include <signal.h>
#include <unistd.h>
#include <cerrno>

#include <atomic>
#include <initializer_list>

namespace slapo {

namespace {

constexpr int kSlots = 1024;  // more children than any job of this machine runs at once
std::atomic<pid_t> g_groups[kSlots];
std::atomic<int> g_interrupts{0};

void kill_registered_groups() {
  for (auto& slot : g_groups) {
    const pid_t pgid = slot.load();
    if (pgid > 0) kill(-pgid, SIGKILL);
  }
}

void on_signal(int) {
  const int saved_errno = errno;
  const int count = ++g_interrupts;
  kill_registered_groups();
  if (count >= 2) _exit(130);
  errno = saved_errno;
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking poll returns EINTR and looks at the flag
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
}

bool interrupt_requested() { return g_interrupts.load() > 0; }

void request_interrupt() {
  ++g_interrupts;
  kill_registered_groups();
}

void clear_interrupt() { g_interrupts = 0; }

bool register_child_group(pid_t pgid) {
  for (auto& slot : g_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pgid)) {
      // An interrupt that came between the fork and this registration did not see the group.
      if (interrupt_requested()) kill(-pgid, SIGKILL);
      return true;
    }
  }
  return false;
}

void unregister_child_group(pid_t pgid) {
  for (auto& slot : g_groups) {
    pid_t expected = pgid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace slapo
