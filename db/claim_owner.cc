#include "db/claim_owner.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace slapo::db {

namespace {
// Field 22 of /proc/PID/stat (starttime); 0 when the process does not exist. The command name
// (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
int64_t start_time(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) return std::stoll(field);
  }
  return 0;
}
}  // namespace

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string ClaimOwner::id() const {
  return host + ":" + std::to_string(pid) + ":" + std::to_string(started);
}

ClaimOwner ClaimOwner::self() {
  ClaimOwner o;
  o.host = host_name();
  o.pid = getpid();
  o.started = start_time(o.pid);
  return o;
}

bool ClaimOwner::known_gone() const {
  if (host != host_name()) return false;
  return start_time(pid) != started;
}

}  // namespace slapo::db
