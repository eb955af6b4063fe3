#pragma once
// Who claimed a trial (db/database.h, a study shared by several tuners): a tuner process, named
// by its host, its pid and the pid's start time (a pid reused by a later process is another
// owner). On its own host an owner's death is seen at once; elsewhere only through its heartbeat.

#include <cstdint>
#include <string>

namespace slapo::db {

struct ClaimOwner {
  std::string host;
  int64_t pid = 0;
  int64_t started = 0;  // the process's start time (clock ticks since boot, /proc/PID/stat)

  // "host:pid:started": what the database stores and compares.
  std::string id() const;
  // This process.
  static ClaimOwner self();
  // True when the owner ran on this host and that process no longer exists (or the pid now
  // belongs to a process started at another time). An owner on another host is never known gone.
  bool known_gone() const;
};

// This machine's host name.
std::string host_name();

}  // namespace slapo::db
