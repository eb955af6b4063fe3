#include "tuner/alike_failures.h"

namespace slapo::tuner {

namespace {

bool fails_whatever_the_configuration(TrialStatus status) {
  return status == TrialStatus::kRuntimeError || status == TrialStatus::kCrashed ||
         status == TrialStatus::kInvalidMetric;
}

}  // namespace

bool AlikeFailures::observe(const Config& config, TrialStatus status, const std::string& error) {
  if (status == TrialStatus::kOk) succeeded_ = true;
  if (limit_ == 0 || succeeded_) return false;
  if (!fails_whatever_the_configuration(status)) {
    in_a_row_ = 0;
    failure_.clear();
    values_.clear();
    return false;
  }
  const std::string failure =
      std::string(to_string(status)) + ": " + error.substr(0, error.find('\n'));
  if (failure != failure_) {
    in_a_row_ = 0;
    values_.clear();
    failure_ = failure;
  }
  ++in_a_row_;
  for (const std::string& knob : knobs_) {
    if (const Value* v = config.find(knob)) values_[knob].insert(to_string(*v));
  }
  if (in_a_row_ < limit_) return false;
  for (const std::string& knob : knobs_) {
    if (values_[knob].size() < 2) return false;
  }
  return true;
}

std::string AlikeFailures::why() const {
  return std::to_string(in_a_row_) + " trials in a row failed alike (" + failure_ +
         ") before any succeeded, whatever the value of each knob: a fault of the workload or command, not of the "
         "configurations - fix it and run again (every trial is recorded; --stop-after-failures 0 "
         "measures on regardless)";
}

}  // namespace slapo::tuner
