// The SQLite implementation of Database. Every statement is prepared with parameters; every write
// runs in a transaction (BEGIN IMMEDIATE, so concurrent writers queue on the busy timeout
// instead of failing on upgrade).

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stats.h"
#include "db/database.h"

namespace slapo::db {

namespace {

// The columns read_task() and read_trial() expect, in order (string literals, so queries can
// be completed by concatenation).
#define SLAPO_DB_TASK_SELECT                                                                    \
  "SELECT t.id, t.workload, t.space_hash, t.runner, t.world_size, t.fingerprint, t.objective, " \
  "t.minimize, t.created_at, (SELECT count(*) FROM trials WHERE task_id = t.id), "              \
  "COALESCE(t.study, ''), COALESCE(t.runner_spec, '') FROM tasks t "
#define SLAPO_DB_TRIAL_SELECT                                                                  \
  "SELECT task_id, idx, config, status, objective, metrics, error, log_tail, strategy, seed, " \
  "started_at, duration_s, pruned_by, confirmed, "                                             \
  "(SELECT count(*) FROM remeasurements r WHERE r.task_id = trials.task_id AND r.trial_idx = " \
  "trials.idx), "                                                                              \
  "(SELECT count(*) FROM remeasurements r WHERE r.task_id = trials.task_id AND r.trial_idx = " \
  "trials.idx "                                                                                \
  "AND r.status != 'ok') FROM trials "
#define SLAPO_DB_REMEASUREMENT_SELECT                                                            \
  "SELECT task_id, trial_idx, round, status, objective, metrics, error, started_at, duration_s " \
  "FROM remeasurements "
// A trial that failed a re-measurement is not ranked (Database::best).
#define SLAPO_DB_RELIABLE                                                                          \
  "NOT EXISTS (SELECT 1 FROM remeasurements r WHERE r.task_id = trials.task_id AND r.trial_idx = " \
  "trials.idx "                                                                                    \
  "AND r.status != 'ok') "

constexpr int kSchemaVersion = 5;
constexpr int32_t kApplicationId = 0x534c4150;  // "SLAP"
constexpr int kBusyTimeoutMs = 30000;
// The largest cell read or written (a configuration, a log tail, a profile are kilobytes): SQLite
// refuses a longer one (SQLITE_TOOBIG) instead of allocating it, so a hostile file cannot make a
// query allocate gigabytes.
constexpr int kMaxCellBytes = 64 << 20;

// Forward migrations: kMigrations[v] takes schema v to v + 1.
const char* const kMigrations[] = {
    // 0 → 1
    "CREATE TABLE tasks ("
    "  id INTEGER PRIMARY KEY,"
    "  key_hash TEXT NOT NULL UNIQUE,"
    "  workload TEXT NOT NULL, space_hash TEXT NOT NULL, runner TEXT NOT NULL,"
    "  world_size INTEGER NOT NULL, fingerprint TEXT NOT NULL,"
    "  objective TEXT NOT NULL, minimize INTEGER NOT NULL, created_at TEXT NOT NULL);"
    "CREATE TABLE trials ("
    "  id INTEGER PRIMARY KEY,"
    "  task_id INTEGER NOT NULL REFERENCES tasks(id),"
    "  idx INTEGER NOT NULL, config TEXT NOT NULL, config_hash TEXT NOT NULL,"
    "  status TEXT NOT NULL, objective REAL, metrics TEXT NOT NULL, error TEXT NOT NULL,"
    "  log_tail TEXT NOT NULL, strategy TEXT NOT NULL, seed INTEGER NOT NULL,"
    "  started_at TEXT NOT NULL, duration_s REAL NOT NULL, pruned_by INTEGER,"
    "  UNIQUE (task_id, idx), UNIQUE (task_id, config_hash));"
    "CREATE INDEX trials_by_objective ON trials (task_id, status, objective);",
    // 1 → 2: re-measurements (the tuner's confirmation of its best few) and the median they give
    "CREATE TABLE remeasurements ("
    "  id INTEGER PRIMARY KEY,"
    "  task_id INTEGER NOT NULL REFERENCES tasks(id),"
    "  trial_idx INTEGER NOT NULL, round INTEGER NOT NULL,"
    "  status TEXT NOT NULL, objective REAL, metrics TEXT NOT NULL, error TEXT NOT NULL,"
    "  started_at TEXT NOT NULL, duration_s REAL NOT NULL,"
    "  UNIQUE (task_id, trial_idx, round));"
    "ALTER TABLE trials ADD COLUMN confirmed REAL;"
    "CREATE INDEX trials_by_ranking ON trials (task_id, status, COALESCE(confirmed, objective));",
    // 2 → 3: profiles of the cost model (cost/profile.h), by what they depend on
    "CREATE TABLE profiles ("
    "  key TEXT PRIMARY KEY, profile TEXT NOT NULL, created_at TEXT NOT NULL);",
    // 3 → 4: a task's study name (unique) and the runner spec its last run used (replay)
    "ALTER TABLE tasks ADD COLUMN study TEXT;"
    "ALTER TABLE tasks ADD COLUMN runner_spec TEXT;"
    "CREATE UNIQUE INDEX tasks_by_study ON tasks (study) WHERE study IS NOT NULL;",
    // 4 → 5: claims of the trials being measured (a study shared by several tuners)
    "CREATE TABLE claims ("
    "  task_id INTEGER NOT NULL REFERENCES tasks(id),"
    "  config_hash TEXT NOT NULL, config TEXT NOT NULL,"
    "  owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, started INTEGER NOT NULL,"
    "  claimed_at TEXT NOT NULL, heartbeat REAL NOT NULL,"
    "  PRIMARY KEY (task_id, config_hash));"
    "CREATE INDEX claims_by_owner ON claims (owner);",
};

// Seconds since the epoch: heartbeats are compared across processes (and hosts: their clocks
// must agree to within the heartbeat timeout).
double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class Connection {
 public:
  // `target` is what SQLite opens (a path or a URI); `path` names the file in errors.
  Connection(const std::string& target, int flags, const std::string& path) : path_(path) {
    const int rc = sqlite3_open_v2(target.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      SLAPO_FAIL(ErrorCode::kIo, path, ": cannot open the database: ", why);
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, kMaxCellBytes);
  }
  ~Connection() { sqlite3_close(db_); }
  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  void exec(const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string why = message ? message : "unknown error";
      sqlite3_free(message);
      fail(why);
    }
  }
  // A damaged file is bad input (exit 2), as a malformed space file is; the rest is the system's.
  [[noreturn]] void fail(const std::string& why) const {
    if (why.find("string or blob too big") != std::string::npos) {
      SLAPO_FAIL(ErrorCode::kParse, path_, ": a cell is longer than ", kMaxCellBytes >> 20,
                 " MiB, more than slapo ever writes; it was not read");
    }
    if (why.find("malformed") != std::string::npos ||
        why.find("file is not a database") != std::string::npos) {
      SLAPO_FAIL(ErrorCode::kParse, path_, ": the database is corrupt (", why,
                 "); it was not modified");
    }
    SLAPO_FAIL(ErrorCode::kIo, path_, ": database error: ", why);
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// A prepared statement, finalized on destruction. Parameters bind from 1.
class Statement {
 public:
  Statement(Connection& c, const char* sql) : c_(c) {
    if (sqlite3_prepare_v2(c.get(), sql, -1, &stmt_, nullptr) != SQLITE_OK)
      c.fail(sqlite3_errmsg(c.get()));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Statement& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    c_.fail(sqlite3_errmsg(c_.get()));
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  Connection& c_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back in the destructor unless committed.
class Transaction {
 public:
  explicit Transaction(Connection& c) : c_(c) { c_.exec("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(c_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    c_.exec("COMMIT");
    done_ = true;
  }

 private:
  Connection& c_;
  bool done_ = false;
};

// Finite metrics as a JSON object (SQLite's JSON has no NaN or infinity).
std::string metrics_json(const std::map<std::string, double>& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : metrics) {
    if (std::isfinite(v)) out[k] = v;
  }
  return out.dump();
}

void read_metrics(const std::string& text, std::map<std::string, double>* metrics) {
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_object()) return;
  for (auto it = parsed.begin(); it != parsed.end(); ++it) {
    if (it.value().is_number()) (*metrics)[it.key()] = it.value().get<double>();
  }
}

int64_t pragma_int(Connection& c, const char* sql) {
  Statement s(c, sql);
  return s.step() ? s.integer(0) : 0;
}

// Refuses files that are not SQLite without touching them (sqlite3 would happily overwrite a
// zero-length file, and reports foreign files only at the first query), and paths that are not
// regular files (a directory, /dev/null, a pipe). Missing files pass: they may be created.
void check_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;
  SLAPO_CHECK(S_ISREG(st.st_mode), ErrorCode::kInvalidArgument, path,
              ": not a regular file, so not a database");
  if (st.st_size == 0) return;
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof header);
  SLAPO_CHECK(in.gcount() == 16 && std::memcmp(header, "SQLite format 3", 16) == 0,
              ErrorCode::kInvalidArgument, path,
              ": not a slapo database (not an SQLite file); it was not modified");
}

// The folder a database file lives in (its -wal and -shm files go there too).
std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A database that is written needs its file and its folder (for the -wal file) writable.
void check_writable(const std::string& path) {
  const bool exists = access(path.c_str(), F_OK) == 0;
  for (const std::string& p : {exists ? path : std::string(), folder_of(path)}) {
    if (p.empty() || access(p.c_str(), W_OK) == 0) continue;
    SLAPO_FAIL(ErrorCode::kIo, path, ": cannot be written (", p, ": ", std::strerror(errno),
               "); it can still be read by db queries and report");
  }
}

void check_exists(const std::string& path) {
  struct stat st {};
  SLAPO_CHECK(stat(path.c_str(), &st) == 0, ErrorCode::kNotFound, path, ": no such database");
  check_file(path);
}
// A path as an SQLite URI ("file:" and the path, %-escaping what URIs reserve).
std::string uri_of(const std::string& path, const std::string& query) {
  std::string out = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "?" + query;
}

// How a database is opened. kCreate: created when absent, migrated. kWrite: must exist, migrated.
// kRead: must exist; nothing is written, not even -wal or -shm files where they could not be
// removed again (a read-only file or folder).
enum class OpenMode { kCreate, kWrite, kRead };

// What a read-only open opens. Where the file and its folder are writable, a read-write
// connection that writes nothing (query_only): as the last connection it removes the -wal and
// -shm files it made when it closes, which a read-only connection cannot. Otherwise a read-only
// one, immutable when no other process can be writing — no -wal file exists, and none could be
// made — so SQLite makes no -shm file either.
struct Target {
  std::string name;
  int flags = 0;
};
Target target_of(const std::string& path, OpenMode mode) {
  if (mode == OpenMode::kCreate) return {path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE};
  const bool writable =
      access(path.c_str(), W_OK) == 0 && access(folder_of(path).c_str(), W_OK) == 0;
  if (mode == OpenMode::kWrite || writable) return {path, SQLITE_OPEN_READWRITE};
  const bool frozen = access((path + "-wal").c_str(), F_OK) != 0;
  return {uri_of(path, frozen ? "mode=ro&immutable=1" : "mode=ro"),
          SQLITE_OPEN_READONLY | SQLITE_OPEN_URI};
}

bool busy(const Error& e) {
  const std::string what = e.what();
  return what.find("database is locked") != std::string::npos ||
         what.find("database table is locked") != std::string::npos;
}

class SqliteDatabase : public Database {
 public:
  SqliteDatabase(const std::string& path, OpenMode mode)
      : SqliteDatabase(path, mode, target_of(path, mode)) {}

 private:
  SqliteDatabase(const std::string& path, OpenMode mode, const Target& target)
      : c_(target.name, target.flags, path) {
    const Identity id = identify();
    if (mode == OpenMode::kRead) {
      c_.exec("PRAGMA query_only=ON");
      SLAPO_CHECK(id.version == kSchemaVersion || id.tables == 0, ErrorCode::kInvalidArgument, path,
                  ": written by an older slapo (schema ", id.version,
                  "); a tuning command upgrades it, but it cannot be written here");
      return;
    }
    if (path != ":memory:") switch_to_wal();
    c_.exec("PRAGMA foreign_keys=ON");
    migrate();
  }

 public:
  TaskRecord find_or_create_task(const TaskKey& key, const Objective& objective) override {
    Transaction tx(c_);
    {
      Statement find(c_, "SELECT id FROM tasks WHERE key_hash = ?");
      find.bind(1, key.hash());
      if (find.step()) {
        const int64_t id = find.integer(0);
        tx.commit();
        return task(id);
      }
    }
    Statement insert(
        c_,
        "INSERT INTO tasks (key_hash, workload, space_hash, runner, world_size, fingerprint, "
        "objective, minimize, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, key.hash())
        .bind(2, key.workload_json)
        .bind(3, key.space_hash)
        .bind(4, key.runner)
        .bind(5, int64_t{key.world_size})
        .bind(6, key.fingerprint_json)
        .bind(7, objective.metric)
        .bind(8, int64_t{objective.minimize ? 1 : 0})
        .bind(9, utc_now());
    insert.step();
    const int64_t id = sqlite3_last_insert_rowid(c_.get());
    tx.commit();
    return task(id);
  }

  std::vector<TaskRecord> tasks() override {
    std::vector<TaskRecord> out;
    Statement s(c_, SLAPO_DB_TASK_SELECT "ORDER BY t.id");
    while (s.step()) out.push_back(read_task(s));
    return out;
  }

  std::optional<TaskRecord> task_by_study(const std::string& study) override {
    Statement s(c_, SLAPO_DB_TASK_SELECT "WHERE t.study = ?");
    s.bind(1, study);
    if (s.step()) return read_task(s);
    return std::nullopt;
  }

  void name_task(int64_t id, const std::string& study) override {
    SLAPO_CHECK(!study.empty(), ErrorCode::kInvalidArgument, "a study's name cannot be empty");
    Transaction tx(c_);
    if (const auto other = task_by_study(study)) {
      SLAPO_CHECK(other->id == id, ErrorCode::kInvalidArgument, c_.path(), ": study '", study,
                  "' is task ", other->id, ", not task ", id);
    }
    Statement s(c_, "UPDATE tasks SET study = ? WHERE id = ?");
    s.bind(1, study).bind(2, id);
    s.step();
    tx.commit();
  }

  void set_runner_spec(int64_t id, const std::string& runner_spec_json) override {
    Transaction tx(c_);
    Statement s(c_, "UPDATE tasks SET runner_spec = ? WHERE id = ?");
    s.bind(1, runner_spec_json).bind(2, id);
    s.step();
    tx.commit();
  }

  TaskRecord task(int64_t id) override {
    Statement s(c_, SLAPO_DB_TASK_SELECT "WHERE t.id = ?");
    s.bind(1, id);
    if (s.step()) return read_task(s);
    std::string ids;
    for (const TaskRecord& t : tasks()) ids += (ids.empty() ? "" : ", ") + std::to_string(t.id);
    SLAPO_FAIL(ErrorCode::kNotFound, c_.path(), ": no task ", id,
               ids.empty() ? " (the database has no tasks)" : " (tasks: " + ids + ")");
  }

  int64_t add_trial(TrialRecord t) override {
    Transaction tx(c_);
    std::optional<int64_t> replaced;
    {
      Statement find(c_, "SELECT idx, status FROM trials WHERE task_id = ? AND config_hash = ?");
      find.bind(1, t.task_id).bind(2, t.config_hash());
      if (find.step()) {
        const int64_t existing = find.integer(0);
        if (find.text(1) != to_string(TrialStatus::kInterrupted)) {
          tx.commit();
          return existing;
        }
        replaced = existing;
      }
    }
    if (replaced) {
      // An interrupted trial was never measured: its configuration's measurement takes its place.
      Statement drop(c_, "DELETE FROM trials WHERE task_id = ? AND idx = ?");
      drop.bind(1, t.task_id).bind(2, *replaced);
      drop.step();
    }
    const int64_t index = replaced ? *replaced : [&] {
      Statement next(c_, "SELECT COALESCE(MAX(idx), -1) + 1 FROM trials WHERE task_id = ?");
      next.bind(1, t.task_id);
      next.step();
      return next.integer(0);
    }();
    Statement insert(
        c_,
        "INSERT INTO trials (task_id, idx, config, config_hash, status, objective, metrics, error, "
        "log_tail, strategy, seed, started_at, duration_s, pruned_by) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, t.task_id)
        .bind(2, index)
        .bind(3, t.config.to_json())
        .bind(4, t.config_hash())
        .bind(5, std::string(to_string(t.result.status)));
    if (t.objective && std::isfinite(*t.objective))
      insert.bind(6, *t.objective);
    else
      insert.bind_null(6);
    insert.bind(7, metrics_json(t.result.metrics))
        .bind(8, t.result.error)
        .bind(9, t.result.log_tail)
        .bind(10, t.strategy)
        .bind(11, static_cast<int64_t>(t.seed))
        .bind(12, t.started_at.empty() ? utc_now() : t.started_at)
        .bind(13, t.duration_s);
    if (t.pruned_by)
      insert.bind(14, *t.pruned_by);
    else
      insert.bind_null(14);
    insert.step();
    Statement unclaim(c_, "DELETE FROM claims WHERE task_id = ? AND config_hash = ?");
    unclaim.bind(1, t.task_id).bind(2, t.config_hash());
    unclaim.step();
    tx.commit();
    return index;
  }

  ClaimOutcome claim(int64_t task, const Config& config, const ClaimOwner& owner, size_t budget,
                     double stale_after_s) override {
    Transaction tx(c_);
    const std::string hash = config.hash();
    {
      Statement recorded(c_,
                         "SELECT 1 FROM trials WHERE task_id = ? AND config_hash = ? AND status != "
                         "'interrupted'");
      recorded.bind(1, task).bind(2, hash);
      if (recorded.step()) return ClaimOutcome::kRecorded;
    }
    const std::vector<Claim> held = claims(task);
    bool orphaned = false;  // the configuration's claim, held by an owner that is gone
    for (const Claim& c : held) {
      if (c.config.hash() != hash) continue;
      if (c.owner.id() == owner.id()) return ClaimOutcome::kClaimed;
      if (!gone(c, stale_after_s)) return ClaimOutcome::kClaimedByOther;
      orphaned = true;
    }
    if (budget > 0 && !orphaned) {
      // Every other claim will be measured (a gone owner's by whoever adopts it).
      const auto others = static_cast<size_t>(held.size());
      if (measured_count(task) + others >= budget) return ClaimOutcome::kBudgetSpent;
    }
    Statement put(c_,
                  "INSERT OR REPLACE INTO claims (task_id, config_hash, config, owner, host, pid, "
                  "started, claimed_at, heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    put.bind(1, task)
        .bind(2, hash)
        .bind(3, config.to_json())
        .bind(4, owner.id())
        .bind(5, owner.host)
        .bind(6, owner.pid)
        .bind(7, owner.started)
        .bind(8, utc_now())
        .bind(9, unix_now());
    put.step();
    tx.commit();
    return ClaimOutcome::kClaimed;
  }

  std::optional<Config> adopt_orphan(int64_t task, const ClaimOwner& owner,
                                     double stale_after_s) override {
    Transaction tx(c_);
    for (const Claim& c : claims(task)) {
      if (c.owner.id() == owner.id() || !gone(c, stale_after_s)) continue;
      Statement take(c_,
                     "UPDATE claims SET owner = ?, host = ?, pid = ?, started = ?, heartbeat = ? "
                     "WHERE task_id = ? AND config_hash = ?");
      take.bind(1, owner.id())
          .bind(2, owner.host)
          .bind(3, owner.pid)
          .bind(4, owner.started)
          .bind(5, unix_now())
          .bind(6, task)
          .bind(7, c.config.hash());
      take.step();
      tx.commit();
      return c.config;
    }
    tx.commit();
    return std::nullopt;
  }

  void heartbeat(const ClaimOwner& owner) override {
    Transaction tx(c_);
    Statement s(c_, "UPDATE claims SET heartbeat = ? WHERE owner = ?");
    s.bind(1, unix_now()).bind(2, owner.id());
    s.step();
    tx.commit();
  }

  void release(int64_t task, const Config& config, const ClaimOwner& owner) override {
    Transaction tx(c_);
    Statement s(c_, "DELETE FROM claims WHERE task_id = ? AND config_hash = ? AND owner = ?");
    s.bind(1, task).bind(2, config.hash()).bind(3, owner.id());
    s.step();
    tx.commit();
  }

  std::vector<Claim> claims(int64_t task) override {
    std::vector<Claim> out;
    Statement s(c_,
                "SELECT config, host, pid, started, claimed_at, heartbeat FROM claims "
                "WHERE task_id = ? ORDER BY claimed_at, config_hash");
    s.bind(1, task);
    const double now = unix_now();
    while (s.step()) {
      Claim c;
      c.task_id = task;
      c.config =
          Config::from_json(s.text(0), c_.path() + ": a claim of task " + std::to_string(task));
      c.owner.host = s.text(1);
      c.owner.pid = s.integer(2);
      c.owner.started = s.integer(3);
      c.claimed_at = s.text(4);
      c.heartbeat_age_s = now - s.real(5);
      out.push_back(std::move(c));
    }
    return out;
  }

  std::vector<TrialRecord> trials_since(int64_t task, int64_t* cursor) override {
    std::vector<TrialRecord> out;
    c_.exec("BEGIN");  // the rows and the new cursor from one snapshot
    try {
      Statement s(c_, SLAPO_DB_TRIAL_SELECT "WHERE task_id = ? AND id > ? ORDER BY id");
      s.bind(1, task).bind(2, *cursor);
      while (s.step()) out.push_back(read_trial(s));
      Statement last(c_, "SELECT COALESCE(MAX(id), 0) FROM trials WHERE task_id = ?");
      last.bind(1, task);
      last.step();
      *cursor = std::max(*cursor, last.integer(0));
    } catch (...) {
      sqlite3_exec(c_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    c_.exec("COMMIT");
    return out;
  }

  std::unique_ptr<Database> reopen() override {
    if (c_.path() == ":memory:") return nullptr;
    return Database::open_existing(c_.path());
  }

  std::optional<TrialRecord> find_trial(int64_t task, const Config& config) override {
    Statement s(c_, SLAPO_DB_TRIAL_SELECT "WHERE task_id = ? AND config_hash = ?");
    s.bind(1, task).bind(2, config.hash());
    if (s.step()) return read_trial(s);
    return std::nullopt;
  }

  std::optional<std::string> profile(const std::string& key) override {
    Statement s(c_, "SELECT profile FROM profiles WHERE key = ?");
    s.bind(1, key);
    if (s.step()) return s.text(0);
    return std::nullopt;
  }

  void put_profile(const std::string& key, const std::string& profile_json) override {
    Transaction tx(c_);
    Statement s(c_, "INSERT OR REPLACE INTO profiles (key, profile, created_at) VALUES (?, ?, ?)");
    s.bind(1, key).bind(2, profile_json).bind(3, utc_now());
    s.step();
    tx.commit();
  }

  std::vector<StoredProfile> profiles() override {
    Statement s(c_, "SELECT key, profile, created_at FROM profiles ORDER BY created_at, key");
    std::vector<StoredProfile> out;
    while (s.step()) out.push_back({s.text(0), s.text(1), s.text(2)});
    return out;
  }

  TrialRecord trial(int64_t task_id, int64_t index) override {
    {
      Statement s(c_, SLAPO_DB_TRIAL_SELECT "WHERE task_id = ? AND idx = ?");
      s.bind(1, task_id).bind(2, index);
      if (s.step()) return read_trial(s);
    }
    const TaskRecord t = task(task_id);  // throws for a task that does not exist
    SLAPO_FAIL(ErrorCode::kNotFound, "task ", task_id, " has no trial ", index, " (", t.trial_count,
               " trials)");
  }

  std::vector<TrialRecord> trials(int64_t task, const TrialFilter& filter) override {
    std::vector<TrialRecord> out;
    Statement s(c_, filter.status ? SLAPO_DB_TRIAL_SELECT
                        "WHERE task_id = ? AND status = ? ORDER BY idx"
                                  : SLAPO_DB_TRIAL_SELECT "WHERE task_id = ? ORDER BY idx");
    s.bind(1, task);
    if (filter.status) s.bind(2, std::string(to_string(*filter.status)));
    while (s.step()) out.push_back(read_trial(s));
    return out;
  }

  std::vector<TrialRecord> best(int64_t task_id, size_t k, const std::string& metric) override {
    // Only the objective is needed: task() would also count the task's trials.
    Objective objective;
    {
      Statement s(c_, "SELECT objective, minimize FROM tasks WHERE id = ?");
      s.bind(1, task_id);
      if (!s.step()) task(task_id);  // throws the not-found error
      objective = {s.text(0), s.integer(1) != 0};
    }
    std::vector<TrialRecord> out;
    if (metric.empty() || metric == objective.metric) {
      // The ranking expression is indexed: the query reads about k rows.
      Statement s(c_, objective.minimize ? SLAPO_DB_TRIAL_SELECT
                          "WHERE task_id = ? AND status = 'ok' AND objective IS NOT NULL "
                          "AND " SLAPO_DB_RELIABLE
                          "ORDER BY COALESCE(confirmed, objective) ASC, idx LIMIT ?"
                                         : SLAPO_DB_TRIAL_SELECT
                          "WHERE task_id = ? AND status = 'ok' AND objective IS NOT NULL "
                          "AND " SLAPO_DB_RELIABLE
                          "ORDER BY COALESCE(confirmed, objective) DESC, idx LIMIT ?");
      s.bind(1, task_id).bind(2, static_cast<int64_t>(k));
      while (s.step()) out.push_back(read_trial(s));
      return out;
    }
    // Another metric: sorted by its value in the metrics JSON, in its own direction.
    Statement s(c_, lower_is_better(metric) ? SLAPO_DB_TRIAL_SELECT
                        "WHERE task_id = ? AND status = 'ok' AND "
                        "json_extract(metrics, ?) IS NOT NULL "
                        "ORDER BY json_extract(metrics, ?) ASC, idx LIMIT ?"
                                            : SLAPO_DB_TRIAL_SELECT
                        "WHERE task_id = ? AND status = 'ok' AND "
                        "json_extract(metrics, ?) IS NOT NULL "
                        "ORDER BY json_extract(metrics, ?) DESC, idx LIMIT ?");
    const std::string path = "$.\"" + metric + "\"";
    s.bind(1, task_id).bind(2, path).bind(3, path).bind(4, static_cast<int64_t>(k));
    while (s.step()) out.push_back(read_trial(s));
    return out;
  }

  int64_t add_remeasurement(Remeasurement m) override {
    Transaction tx(c_);
    std::vector<double> ok;  // the trial's ok objectives, the first one included
    {
      Statement trial(c_, "SELECT status, objective FROM trials WHERE task_id = ? AND idx = ?");
      trial.bind(1, m.task_id).bind(2, m.trial_index);
      SLAPO_CHECK(trial.step(), ErrorCode::kNotFound, c_.path(), ": task ", m.task_id,
                  " has no trial ", m.trial_index);
      SLAPO_CHECK(trial.text(0) == "ok" && !trial.is_null(1), ErrorCode::kNotFound, c_.path(),
                  ": trial ", m.trial_index, " of task ", m.task_id, " is ", trial.text(0),
                  ", not a measured objective to confirm");
      ok.push_back(trial.real(1));
    }
    {
      Statement before(
          c_,
          "SELECT objective FROM remeasurements WHERE task_id = ? AND trial_idx = ? AND status = 'ok' "
          "AND objective IS NOT NULL");
      before.bind(1, m.task_id).bind(2, m.trial_index);
      while (before.step()) ok.push_back(before.real(0));
    }
    m.round = [&] {
      Statement next(
          c_,
          "SELECT COALESCE(MAX(round), 0) + 1 FROM remeasurements WHERE task_id = ? AND trial_idx = ?");
      next.bind(1, m.task_id).bind(2, m.trial_index);
      next.step();
      return next.integer(0);
    }();
    const bool has_objective =
        m.result.status == TrialStatus::kOk && m.objective && std::isfinite(*m.objective);
    Statement insert(
        c_,
        "INSERT INTO remeasurements (task_id, trial_idx, round, status, objective, metrics, error, "
        "started_at, duration_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, m.task_id)
        .bind(2, m.trial_index)
        .bind(3, m.round)
        .bind(4, std::string(to_string(m.result.status)));
    if (has_objective)
      insert.bind(5, *m.objective);
    else
      insert.bind_null(5);
    insert.bind(6, metrics_json(m.result.metrics))
        .bind(7, m.result.error)
        .bind(8, m.started_at.empty() ? utc_now() : m.started_at)
        .bind(9, m.duration_s);
    insert.step();
    if (has_objective) ok.push_back(*m.objective);
    Statement update(c_, "UPDATE trials SET confirmed = ? WHERE task_id = ? AND idx = ?");
    update.bind(1, median(ok)).bind(2, m.task_id).bind(3, m.trial_index);
    update.step();
    tx.commit();
    return m.round;
  }

  std::vector<Remeasurement> remeasurements(int64_t task_id,
                                            std::optional<int64_t> trial_index) override {
    std::vector<Remeasurement> out;
    Statement s(c_, trial_index ? SLAPO_DB_REMEASUREMENT_SELECT
                        "WHERE task_id = ? AND trial_idx = ? ORDER BY trial_idx, round"
                                : SLAPO_DB_REMEASUREMENT_SELECT
                        "WHERE task_id = ? ORDER BY trial_idx, round");
    s.bind(1, task_id);
    if (trial_index) s.bind(2, *trial_index);
    while (s.step()) {
      Remeasurement m;
      m.task_id = s.integer(0);
      m.trial_index = s.integer(1);
      m.round = s.integer(2);
      const auto status = trial_status_from_string(s.text(3));
      SLAPO_CHECK(status.has_value(), ErrorCode::kIo, c_.path(), ": a re-measurement of trial ",
                  m.trial_index, " has unknown status '", s.text(3), "'");
      m.result.status = *status;
      if (!s.is_null(4)) m.objective = s.real(4);
      read_metrics(s.text(5), &m.result.metrics);
      m.result.error = s.text(6);
      m.started_at = s.text(7);
      m.duration_s = s.real(8);
      out.push_back(std::move(m));
    }
    return out;
  }

  int64_t prune(int64_t task_id, TrialStatus status) override {
    task(task_id);
    Transaction tx(c_);
    {
      // Their indices may be given to new trials: nothing of theirs may stay behind.
      Statement r(c_,
                  "DELETE FROM remeasurements WHERE task_id = ? AND trial_idx IN "
                  "(SELECT idx FROM trials WHERE task_id = ? AND status = ?)");
      r.bind(1, task_id).bind(2, task_id).bind(3, std::string(to_string(status)));
      r.step();
    }
    Statement s(c_, "DELETE FROM trials WHERE task_id = ? AND status = ?");
    s.bind(1, task_id).bind(2, std::string(to_string(status)));
    s.step();
    const int64_t n = sqlite3_changes(c_.get());
    tx.commit();
    return n;
  }

 private:
  static bool gone(const Claim& c, double stale_after_s) {
    return c.heartbeat_age_s > stale_after_s || c.owner.known_gone();
  }

  size_t measured_count(int64_t task) {
    Statement s(c_,
                "SELECT count(*) FROM trials WHERE task_id = ? AND status != 'interrupted' AND "
                "NOT (status = 'pruned' AND duration_s <= 0)");
    s.bind(1, task);
    s.step();
    return static_cast<size_t>(s.integer(0));
  }

  struct Identity {
    int64_t version = 0;
    int64_t tables = 0;
  };

  // Reads what the file is, in one read transaction (a tuner creating it at the same moment is
  // seen before or after its creation, never half-way), and refuses a file that is not a slapo
  // database or is newer than this slapo, before anything is written.
  Identity identify() {
    c_.exec("BEGIN");
    Identity id;
    const int64_t app = pragma_int(c_, "PRAGMA application_id");
    id.version = pragma_int(c_, "PRAGMA user_version");
    id.tables = pragma_int(c_, "SELECT count(*) FROM sqlite_master");
    c_.exec("COMMIT");
    SLAPO_CHECK(app == kApplicationId || (app == 0 && id.tables == 0), ErrorCode::kInvalidArgument,
                c_.path(),
                ": not a slapo database (another application's SQLite file); it was not modified");
    SLAPO_CHECK(id.version <= kSchemaVersion, ErrorCode::kInvalidArgument, c_.path(),
                ": written by a newer slapo (schema ", id.version, ", this one reads up to ",
                kSchemaVersion, "); it was not modified");
    return id;
  }

  // Switching to WAL takes an exclusive lock, for which SQLite does not wait: several tuners
  // opening one new file at once retry here until the busy timeout.
  void switch_to_wal() {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (int attempt = 0;; ++attempt) {
      try {
        c_.exec("PRAGMA journal_mode=WAL");
        return;
      } catch (const Error& e) {
        if (!busy(e) || std::chrono::steady_clock::now() > deadline) throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + 5 * std::min(attempt, 10)));
    }
  }

  // Creates or upgrades the schema. The version is read again inside the write transaction: of
  // several tuners opening one file, the first migrates and the others find it done.
  void migrate() {
    Transaction tx(c_);
    const int64_t from = pragma_int(c_, "PRAGMA user_version");
    if (from == kSchemaVersion) {
      tx.commit();
      return;
    }
    for (int64_t v = from; v < kSchemaVersion; ++v) c_.exec(kMigrations[v]);
    c_.exec(("PRAGMA application_id = " + std::to_string(kApplicationId)).c_str());
    c_.exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
    tx.commit();
  }

  static TaskRecord read_task(const Statement& s) {
    TaskRecord t;
    t.id = s.integer(0);
    t.key.workload_json = s.text(1);
    t.key.space_hash = s.text(2);
    t.key.runner = s.text(3);
    t.key.world_size = static_cast<int>(s.integer(4));
    t.key.fingerprint_json = s.text(5);
    t.objective = {s.text(6), s.integer(7) != 0};
    t.created_at = s.text(8);
    t.trial_count = s.integer(9);
    t.study = s.text(10);
    t.runner_spec_json = s.text(11);
    return t;
  }

  TrialRecord read_trial(const Statement& s) const {
    TrialRecord t;
    t.task_id = s.integer(0);
    t.index = s.integer(1);
    t.config = Config::from_json(s.text(2), c_.path() + ": trial " + std::to_string(t.index) +
                                                " of task " + std::to_string(t.task_id));
    const auto status = trial_status_from_string(s.text(3));
    SLAPO_CHECK(status.has_value(), ErrorCode::kIo, c_.path(), ": trial ", t.index,
                " has unknown status '", s.text(3), "'");
    t.result.status = *status;
    if (!s.is_null(4)) t.objective = s.real(4);
    read_metrics(s.text(5), &t.result.metrics);
    t.result.error = s.text(6);
    t.result.log_tail = s.text(7);
    t.strategy = s.text(8);
    t.seed = static_cast<uint64_t>(s.integer(9));
    t.started_at = s.text(10);
    t.duration_s = s.real(11);
    if (!s.is_null(12)) t.pruned_by = s.integer(12);
    if (!s.is_null(13)) t.confirmed_objective = s.real(13);
    t.remeasured = s.integer(14);
    t.remeasure_failed = s.integer(15);
    return t;
  }

  Connection c_;
};

}  // namespace

std::string TaskKey::hash() const {
  return stable_hash(workload_json + '\x1f' + space_hash + '\x1f' + runner + '\x1f' +
                     std::to_string(world_size) + '\x1f' + fingerprint_json);
}

std::unique_ptr<Database> Database::open(const std::string& path) {
  check_file(path);
  struct stat st {};
  SLAPO_CHECK(stat(folder_of(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode), ErrorCode::kNotFound,
              path, ": no such folder as ", folder_of(path));
  check_writable(path);
  return std::make_unique<SqliteDatabase>(path, OpenMode::kCreate);
}

std::unique_ptr<Database> Database::open_existing(const std::string& path) {
  check_exists(path);
  check_writable(path);
  return std::make_unique<SqliteDatabase>(path, OpenMode::kWrite);
}

std::unique_ptr<Database> Database::open_read_only(const std::string& path) {
  check_exists(path);
  return std::make_unique<SqliteDatabase>(path, OpenMode::kRead);
}

std::unique_ptr<Database> Database::in_memory() {
  return std::make_unique<SqliteDatabase>(":memory:", OpenMode::kCreate);
}

bool counts_as_measured(const TrialRecord& trial) {
  if (trial.result.status == TrialStatus::kInterrupted) return false;
  return trial.result.status != TrialStatus::kPruned || trial.duration_s > 0;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

}  // namespace slapo::db
