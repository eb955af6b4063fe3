#include "runners/collective_profile.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <ostream>
#include <thread>

#include <torch/torch.h>

#include "core/error.h"
#include "core/text.h"
#include "dist/launcher.h"
#include "dist/world.h"
#include "schedule/runtime/data_parallel.h"

namespace slapo::runners {

namespace {

// Runs per message (message_runs): a small message's runs cost little and mix two speeds, so
// many; from kLargeMessage bytes they are bandwidth-bound, agree, and cost the profile most (nine
// of the 16 MiB and the gradients' sizes were 1.0 s of the collectives' 1.2), so few.
constexpr MessageRuns kSmallRuns{2, 15}, kLargeRuns{1, 3};
constexpr double kLargeMessage = 4 << 20;
// Message sizes: the latency end, the pipeline messages of small models, the gradient buckets.
const double kSizes[] = {4096, 256 << 10, 4 << 20, 16 << 20};
// Gradients averaged by data parallelism: a bucket's worth and two buckets (of 25 MiB), in tensors
// of 1 MiB — a model's gradients, out of the caches (the packing's cost a byte rises with the
// bytes: 0.37 ms a MB at 28 MB, 0.76 at 126 MB on this machine).
const double kGradientSizes[] = {12 << 20, 48 << 20};
constexpr int64_t kGradientTensorFloats = 1 << 18;

// What one call of `f` costs (call_ms over its timed runs), for a message of `bytes`.
template <typename F>
double timed_call_ms(double bytes, F&& f) {
  const MessageRuns runs = message_runs(bytes);
  std::vector<double> timed;
  for (int i = 0; i < runs.warmup + runs.timed; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= runs.warmup) timed.push_back(t);
  }
  return call_ms(timed);
}

}  // namespace

MessageRuns message_runs(double bytes) { return bytes >= kLargeMessage ? kLargeRuns : kSmallRuns; }

double call_ms(const std::vector<double>& timed_ms) {
  SLAPO_CHECK(!timed_ms.empty(), ErrorCode::kInvalidArgument, "a collective timed no run");
  return std::accumulate(timed_ms.begin(), timed_ms.end(), 0.0) /
         static_cast<double>(timed_ms.size());
}

cost::CollectiveProfile measure_collectives() {
  const dist::RankEnv env = dist::RankEnv::from_env();
  Layout layout;
  layout.dp = env.world_size;
  const dist::ParallelGroups groups = dist::connect(env, layout);
  schedule::Communicator& world = *groups.world;
  cost::CollectiveProfile profile;
  profile.ranks = world.size();
  const auto start = std::chrono::steady_clock::now();
  for (double bytes : kSizes) {
    const int64_t n = static_cast<int64_t>(bytes / 4);
    torch::Tensor t = torch::ones({n});
    world.barrier();
    profile.samples.push_back(
        {"all_reduce", bytes, timed_call_ms(bytes, [&] { world.all_reduce(t); })});
    world.barrier();
    profile.samples.push_back(
        {"all_gather", bytes, timed_call_ms(bytes, [&] { world.all_gather(t); })});
    world.barrier();
    // A round trip between ranks 0 and 1, halved; the other ranks wait at the barrier.
    const double round_trip = timed_call_ms(bytes, [&] {
      if (world.rank() == 0) {
        world.send(t, 1, 0)->wait();
        world.recv(t, 1, 1);
      } else if (world.rank() == 1) {
        world.recv(t, 0, 0);
        world.send(t, 0, 1)->wait();
      }
    });
    profile.samples.push_back({"send_recv", bytes, round_trip / 2});
  }
  // Packing is the rank's own work, on its share of the cores as in a job of this many ranks.
  torch::set_num_threads(
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / world.size()));
  for (double bytes : kGradientSizes) {
    std::vector<torch::Tensor> params;
    for (int64_t left = static_cast<int64_t>(bytes / 4); left > 0; left -= kGradientTensorFloats) {
      params.push_back(torch::zeros({std::min(left, kGradientTensorFloats)}));
      params.back().mutable_grad() = torch::ones_like(params.back());
    }
    world.barrier();
    profile.samples.push_back({"gradient_sync", bytes, timed_call_ms(bytes, [&] {
                                 schedule::average_gradients(params, world);
                               })});
  }
  world.barrier();
  profile.profile_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return profile;
}

void run_collective_worker(std::ostream& out) {
  const cost::CollectiveProfile profile = measure_collectives();
  if (dist::RankEnv::from_env().rank == 0) out << profile.to_json() << std::endl;
}

cost::CollectiveProfile profile_collectives(int ranks, const std::vector<std::string>& worker) {
  SLAPO_CHECK(ranks >= 2, ErrorCode::kInvalidArgument, "collectives need two ranks or more, not ",
              ranks);
  dist::check_not_in_a_rank("profiling the collectives", worker);
  dist::LaunchOptions launch;
  launch.nproc = ranks;
  launch.argv = worker;
  launch.env.emplace("OMP_WAIT_POLICY", "passive");
  launch.timeout_s = 120;
  const auto start = std::chrono::steady_clock::now();
  const dist::LaunchResult job = dist::launch_ranks(launch);
  SLAPO_CHECK(job.ok(), ErrorCode::kRuntime, "profiling the collectives failed: ", job.failure());
  cost::CollectiveProfile profile = cost::CollectiveProfile::from_json(
      last_line(job.ranks[0].out), "the collective profiling job");
  profile.profile_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return profile;
}

}  // namespace slapo::runners
