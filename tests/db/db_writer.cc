// Test helper: writes `count` trials into a database, printing "committed <index>" after each one
// is committed. Used by the crash and concurrency tests.
//   db_writer FILE WRITER_ID COUNT

#include <cstdio>
#include <cstdlib>
#include <string>

#include "db/database.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  using namespace slapo;
  auto database = db::Database::open(argv[1]);
  db::TaskKey key;
  key.workload_json = "{\"model\":\"gpt-tiny\"}";
  key.space_hash = "s";
  key.fingerprint_json = "{}";
  const int64_t task = database->find_or_create_task(key, {"samples_per_s", false}).id;
  const std::string writer = argv[2];
  const int count = std::atoi(argv[3]);
  for (int i = 0; i < count; ++i) {
    db::TrialRecord t;
    t.task_id = task;
    t.config.set("writer", writer);
    t.config.set("i", int64_t{i});
    t.result.metrics["samples_per_s"] = i;
    t.result.log_tail = std::string(2000, 'x');  // make writes span pages
    t.objective = i;
    t.strategy = "test";
    const int64_t index = database->add_trial(t);
    std::printf("committed %s %d %lld\n", writer.c_str(), i, static_cast<long long>(index));
    std::fflush(stdout);
  }
  return 0;
}
