#include "tuner/alike_failures.h"

namespace slapo::tuner {

namespace {

bool fails_whatever_the_configuration(TrialStatus status) {
  return status == TrialStatus::kRuntimeError || status == TrialStatus::kCrashed ||
         status == TrialStatus::kScheduleError || status == TrialStatus::kInvalidMetric;
}

}  // namespace

bool AlikeFailures::observe(TrialStatus status, const std::string& error) {
  if (status == TrialStatus::kOk) succeeded_ = true;
  if (limit_ == 0 || succeeded_) return false;
  if (!fails_whatever_the_configuration(status)) {
    in_a_row_ = 0;
    failure_.clear();
    return false;
  }
  const std::string failure =
      std::string(to_string(status)) + ": " + error.substr(0, error.find('\n'));
  in_a_row_ = failure == failure_ ? in_a_row_ + 1 : 1;
  failure_ = failure;
  return in_a_row_ >= limit_;
}

std::string AlikeFailures::why() const {
  return "the first " + std::to_string(in_a_row_) + " trials failed alike (" + failure_ +
         "): the workload or command fails whatever the configuration - fix it and run again "
         "(every trial is recorded; --stop-after-failures 0 measures on regardless)";
}

}  // namespace slapo::tuner
