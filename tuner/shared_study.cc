#include "tuner/shared_study.h"

#include <algorithm>
#include <chrono>

#include "core/interrupt.h"

namespace slapo::tuner {

SharedStudy::SharedStudy(db::Database& database, int64_t task, double stale_after_s)
    : database_(database),
      task_(task),
      stale_after_s_(stale_after_s),
      owner_(db::ClaimOwner::self()),
      heartbeat_db_(database.reopen()) {
  if (heartbeat_db_) heartbeat_ = std::thread([this] { beat(); });
}

SharedStudy::~SharedStudy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (held_) {
    try {
      database_.release(task_, *held_, owner_);
    } catch (...) {
      // The process is ending anyway; the claim is adopted once its owner is seen gone.
    }
  }
}

void SharedStudy::beat() {
  const auto period = std::chrono::duration<double>(std::max(0.05, stale_after_s_ / 4));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    try {
      heartbeat_db_->heartbeat(owner_);
    } catch (...) {
      // A busy or failing database: the next beat tries again; a long silence lets others adopt.
    }
    lock.lock();
  }
}

std::vector<db::TrialRecord> SharedStudy::news() { return database_.trials_since(task_, &cursor_); }

const std::unordered_set<std::string>& SharedStudy::claimed_by_others() {
  claimed_.clear();
  for (const db::Claim& c : database_.claims(task_)) {
    if (c.owner.id() != owner_.id()) claimed_.insert(c.config.canonical_json());
  }
  return claimed_;
}

std::optional<Config> SharedStudy::adopt_orphan() {
  held_ = database_.adopt_orphan(task_, owner_, stale_after_s_);
  return held_;
}

db::ClaimOutcome SharedStudy::claim(const Config& config, size_t budget) {
  const db::ClaimOutcome outcome = database_.claim(task_, config, owner_, budget, stale_after_s_);
  if (outcome == db::ClaimOutcome::kClaimed) held_ = config;
  return outcome;
}

void SharedStudy::wait_for_others() {
  for (int i = 0; i < 10 && !interrupt_requested(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace slapo::tuner
