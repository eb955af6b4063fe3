#include "runners/collective_profile.h"

#include <algorithm>
#include <chrono>
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

// Runs per message: warm-ups, then timed runs, of which the mean is read. Not the median: a small
// message's call takes ~0.1–0.4 ms or ~3–5 ms (a thread woken at the scheduler's next 4 ms tick on
// two cores shared by both ranks' threads), the two mixed within a run (2026-11-28: 4 KiB
// all-reduces of 0.33 4.65 3.98 0.29 3.71 4.01 0.33 0.43 0.43 ms) — so the median fell on one mode
// or the other from one profile to the next (table 3's α of the all-reduce 3.45 ms in one
// recording, 0.69 in the next; its `tp = 2` steps at 8 samples, 26 all-reduces each, predicted
// 26% over and then 27% under the trials), where a step's calls cost the mixture: their mean. So
// more runs of the small messages, whose runs cost little. A message of kLargeMessage bytes or
// more is bandwidth-bound, its runs agree, and they cost the profile most (nine of the 16 MiB
// and the gradients' sizes were 1.0 s of the collectives' 1.2): fewer of them. The counts depend
// on the size alone, so every rank runs as many collectives.
constexpr int kWarmup = 2, kRepeats = 15;
constexpr int kLargeWarmup = 1, kLargeRepeats = 3;
constexpr double kLargeMessage = 4 << 20;
// Message sizes: the latency end, the pipeline messages of small models, the gradient buckets.
const double kSizes[] = {4096, 256 << 10, 4 << 20, 16 << 20};
// Gradients averaged by data parallelism: a bucket's worth and two buckets (of 25 MiB), in tensors
// of 1 MiB — a model's gradients, out of the caches (the packing's cost a byte rises with the
// bytes: 0.37 ms a MB at 28 MB, 0.76 at 126 MB on this machine).
const double kGradientSizes[] = {12 << 20, 48 << 20};
constexpr int64_t kGradientTensorFloats = 1 << 18;

// The mean of `f`'s timed runs, for a message of `bytes`.
template <typename F>
double mean_ms(double bytes, F&& f) {
  const bool large = bytes >= kLargeMessage;
  const int warmup = large ? kLargeWarmup : kWarmup;
  const int repeats = large ? kLargeRepeats : kRepeats;
  double total = 0;
  for (int i = 0; i < warmup + repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= warmup) total += t;
  }
  return total / repeats;
}

}  // namespace

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
    profile.samples.push_back({"all_reduce", bytes, mean_ms(bytes, [&] { world.all_reduce(t); })});
    world.barrier();
    profile.samples.push_back({"all_gather", bytes, mean_ms(bytes, [&] { world.all_gather(t); })});
    world.barrier();
    // A round trip between ranks 0 and 1, halved; the other ranks wait at the barrier.
    const double round_trip = mean_ms(bytes, [&] {
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
    profile.samples.push_back({"gradient_sync", bytes, mean_ms(bytes, [&] {
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
