#include "dist/world.h"

#include <cstdlib>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "core/error.h"
#include "dist/gloo_communicator.h"

namespace slapo::dist {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

int env_int(const char* name, int fallback, int min, int max) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  SLAPO_CHECK(*end == '\0' && n >= min && n <= max, ErrorCode::kInvalidArgument,
              "environment variable ", name, "='", v, "' is not an integer in [", min, ", ", max,
              "]");
  return static_cast<int>(n);
}

}  // namespace

bool RankEnv::present() { return std::getenv("WORLD_SIZE") != nullptr; }

RankEnv RankEnv::from_env() {
  RankEnv e;
  e.world_size = env_int("WORLD_SIZE", 1, 1, 1 << 20);
  SLAPO_CHECK(std::getenv("RANK") != nullptr || e.world_size == 1, ErrorCode::kInvalidArgument,
              "environment variable RANK is not set (WORLD_SIZE=", e.world_size, ")");
  e.rank = env_int("RANK", 0, 0, e.world_size - 1);
  e.local_rank = env_int("LOCAL_RANK", e.rank, 0, 1 << 20);
  e.master_addr = env_or("MASTER_ADDR", "127.0.0.1");
  e.master_port = env_int("MASTER_PORT", 29500, 1, 65535);
  e.store_hosted = env_or("SLAPO_STORE_HOSTED", "0") == "1";
  e.timeout = std::chrono::milliseconds(1000LL * env_int("SLAPO_DIST_TIMEOUT", 30, 1, 86400));
  return e;
}

ParallelGroups local_groups() {
  ParallelGroups g;
  g.world = std::make_shared<schedule::LocalCommunicator>("world");
  g.tp = std::make_shared<schedule::LocalCommunicator>("tp");
  g.dp = std::make_shared<schedule::LocalCommunicator>("dp");
  g.pp = std::make_shared<schedule::LocalCommunicator>("pp");
  return g;
}

ParallelGroups connect(const RankEnv& env, const Layout& layout) {
  SLAPO_CHECK(
      layout.tp >= 1 && layout.dp >= 1 && layout.pp >= 1 && layout.world() == env.world_size,
      ErrorCode::kInvalidArgument, "parallel layout ", layout.to_string(), " needs ",
      layout.world(), " ranks, but WORLD_SIZE is ", env.world_size);
  if (env.world_size == 1) {
    ParallelGroups g = local_groups();
    g.layout = layout;
    return g;
  }
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(env.master_port);
  so.isServer = env.rank == 0 && !env.store_hosted;
  so.numWorkers = c10::nullopt;
  so.waitWorkers = false;
  so.timeout = env.timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    SLAPO_FAIL(ErrorCode::kRuntime, "rank ", env.rank, ": cannot reach the store at ",
               env.master_addr, ":", env.master_port, ": ", what.substr(0, what.find('\n')));
  }
  GlooOptions gloo;
  gloo.timeout = env.timeout;
  const bool loopback = env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
  gloo.hostname = loopback ? "127.0.0.1" : "";

  ParallelGroups g;
  g.layout = layout;
  g.rank = env.rank;
  const int t = g.tp_rank(), d = g.dp_rank(), p = g.pp_rank();
  auto group = [&](const std::string& name, std::vector<int> members) {
    std::string key = name;
    for (int m : members) key += "/" + std::to_string(m);
    return make_gloo_group(store, key, members, env.rank, gloo);
  };
  std::vector<int> all, tp, dp, pp;
  for (int r = 0; r < env.world_size; ++r) all.push_back(r);
  for (int i = 0; i < layout.tp; ++i) tp.push_back(layout.rank_of(i, d, p));
  for (int i = 0; i < layout.dp; ++i) dp.push_back(layout.rank_of(t, i, p));
  for (int i = 0; i < layout.pp; ++i) pp.push_back(layout.rank_of(t, d, i));
  // Every rank creates its groups in the same order, so members meet in each one.
  g.world = group("world", all);
  g.tp = layout.tp > 1 ? group("tp", tp) : std::make_shared<schedule::LocalCommunicator>("tp");
  g.dp = layout.dp > 1 ? group("dp", dp) : std::make_shared<schedule::LocalCommunicator>("dp");
  g.pp = layout.pp > 1 ? group("pp", pp) : std::make_shared<schedule::LocalCommunicator>("pp");
  if (layout.pp > 1 && (p == 0 || p == layout.pp - 1))
    g.ends = group("ends", {pp.front(), pp.back()});
  return g;
}

}  // namespace slapo::dist
