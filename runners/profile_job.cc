// A profile measured beside peers: the job of `ranks` copies of the profile that
// measure_profiles_beside_peers launches, and the worker each of them runs (runners/profiler.h).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "dist/launcher.h"
#include "runners/collective_profile.h"
#include "runners/profile_sweep.h"
#include "runners/profiler.h"

namespace slapo::runners {

using Clock = std::chrono::steady_clock;

void run_profile_worker(const std::string& request_json, std::ostream& out) {
  const ProfileRequest request = ProfileRequest::from_json(request_json, "--profile");
  const std::vector<cost::Profile> profiles = measure_profiles(request);
  // After the profile: every rank's sweeps done (the ranks meet when they join the group), the
  // machine as quiet as for the collectives' own job.
  std::optional<cost::CollectiveProfile> collectives;
  if (request.collectives) collectives = measure_collectives();
  const char* rank = std::getenv("RANK");
  if (rank && std::string(rank) != "0") return;
  if (collectives) out << collectives->to_json() << std::endl;
  nlohmann::json line = nlohmann::json::array();
  for (const cost::Profile& p : profiles) line.push_back(nlohmann::json::parse(p.to_json()));
  out << line.dump() << std::endl;
}

std::vector<cost::Profile> measure_profiles_beside_peers(const ProfileRequest& request, int ranks,
                                                         const std::vector<std::string>& worker,
                                                         cost::CollectiveProfile* collectives) {
  SLAPO_CHECK(!request.collectives || (collectives && ranks > 1), ErrorCode::kInvalidArgument,
              "a profile that times the collectives too runs beside peers and returns them");
  if (ranks <= 1) return measure_profiles(request);
  dist::check_not_in_a_rank("profiling", worker);
  dist::LaunchOptions launch;
  launch.nproc = ranks;
  launch.argv = worker;
  launch.argv.push_back("--profile");
  launch.argv.push_back(request.to_json());
  launch.env.emplace("OMP_WAIT_POLICY", "passive");
  const auto start = Clock::now();
  const dist::LaunchResult job = dist::launch_ranks(launch);
  SLAPO_CHECK(job.ok(), ErrorCode::kRuntime, "profiling failed: ", job.failure());
  if (profile_tracing()) std::fputs(job.ranks[0].err.c_str(), stderr);  // rank 0's trace
  const nlohmann::json line = nlohmann::json::parse(last_line(job.ranks[0].out), nullptr, false);
  SLAPO_CHECK(line.is_array() && !line.empty(), ErrorCode::kRuntime,
              "the profiling job printed no profiles");
  std::vector<cost::Profile> profiles;
  for (const nlohmann::json& p : line)
    profiles.push_back(cost::Profile::from_json(p.dump(), "the profiling job"));
  // The job's whole time, its launch too, shared evenly — but the collectives' own measuring.
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (request.collectives) {
    // The line before the profiles'.
    const std::string& out = job.ranks[0].out;
    const std::string before = last_line(out.substr(0, out.rfind(last_line(out))));
    SLAPO_CHECK(!before.empty(), ErrorCode::kRuntime,
                "the profiling job printed no profile of the collectives");
    *collectives = cost::CollectiveProfile::from_json(before, "the profiling job's collectives");
    seconds = std::max(0.0, seconds - collectives->profile_s);
  }
  for (cost::Profile& p : profiles) p.profile_s = seconds / static_cast<double>(profiles.size());
  return profiles;
}

}  // namespace slapo::runners
