#pragma once
// Defaults that several parts must agree on, in one place.

namespace slapo::defaults {

// Seconds before a trial (every rank of it) is killed; 0 means no limit.
inline constexpr double kTrialTimeoutS = 600;

}  // namespace slapo::defaults
