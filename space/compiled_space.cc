// The compiled space's public interface: size, enumeration, ranking and unranking, sampling,
// membership, neighbours and the encoding for model-based search. The compiler is
// space_compiler.cc, the nest walk nest_walk.cc, describe() describe.cc.

#include "space/compiled_space.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "space/compiled_space_impl.h"

namespace slapo::space {

using namespace detail;  // the nest's data (compiled_space_impl.h)
using slapo::to_string;

// --------------------------------------------------------------------------------------------
// Public interface

CompiledSpace::CompiledSpace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledSpace::CompiledSpace(CompiledSpace&&) noexcept = default;
CompiledSpace& CompiledSpace::operator=(CompiledSpace&&) noexcept = default;
CompiledSpace::~CompiledSpace() = default;

const Space& CompiledSpace::space() const { return impl_->space; }
const std::vector<KnobInfo>& CompiledSpace::knobs() const { return impl_->knobs; }

size_t PointView::num_knobs() const { return space_->knobs().size(); }

Config PointView::to_config() const { return space_->impl_->make_config(slots_, cuts_); }

uint64_t CompiledSpace::size() const {
  if (!impl_->size_known) {
    if (impl_->empty) {
      impl_->size_value = 0;
    } else {
      std::vector<double> slots(impl_->n() + 1, 0);
      impl_->size_value = impl_->count_from(0, slots.data());
    }
    impl_->size_known = true;
  }
  return impl_->size_value;
}

void CompiledSpace::for_each_impl(void* visit, bool (*call)(void*, const PointView&)) const {
  if (impl_->empty) return;
  const size_t n = impl_->n();
  std::vector<double> slots(n + 1, 0);
  std::vector<int64_t> index(n + 1, 0);
  std::vector<IntList> cuts(n + 1);
  PointView view;
  view.space_ = this;
  view.slots_ = slots.data();
  view.index_ = index.data();
  view.cuts_ = cuts.data();
  if (n == 0) {
    call(visit, view);
    return;
  }
  impl_->enumerate(0, slots.data(), index.data(), cuts.data(), view, visit, call);
}

Config CompiledSpace::at(uint64_t index) const {
  const uint64_t total = size();
  SLAPO_CHECK(index < total, ErrorCode::kOutOfRange, "index ", index,
              " is out of range: the space has ", total, " configurations");
  const Impl& m = *impl_;
  const size_t n = m.n();
  std::vector<double> slots(n + 1, 0);
  std::vector<IntList> cuts(n + 1);
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    // count_from(k + 1) overwrites slots after k; each level sets its own before moving on.
    if (level.is_cuts) {
      const uint64_t sub = m.count_from(k + 1, slots.data());
      cuts[k] = m.splits(k, slots.data()).at(index / sub);
      index %= sub;
      continue;
    }
    int64_t a, b;
    const bool nonempty = m.range(k, slots.data(), &a, &b);
    SLAPO_INTERNAL_ASSERT(nonempty, "empty range while unranking");
    const Impl::Walk w = m.walk_level(k, slots.data(), a, b + 1, &index);
    SLAPO_INTERNAL_ASSERT(w.at >= 0, "unranking ran past level ", level.info.name);
    slots[k] = level.domain.value(w.at);
    index -= w.before;
  }
  return m.make_config(slots.data(), cuts.data());
}

uint64_t CompiledSpace::index_of(const Config& config) const {
  const Impl& m = *impl_;
  const size_t n = m.n();
  Point target(n);
  std::vector<double> slots(n + 1, 0);
  std::string problem = m.read(config, &target);
  SLAPO_CHECK(problem.empty(), ErrorCode::kInvalidArgument, "configuration ", config.to_string(),
              " is not in the space: ", problem);
  const std::vector<int64_t>& index = target.index;
  const std::vector<IntList>& cuts = target.cuts;
  Validity v = m.check(target.slots.data(), cuts.data());
  SLAPO_CHECK(v.ok, ErrorCode::kInvalidArgument, "configuration ", config.to_string(),
              " is not in the space: ", v.reason);
  uint64_t rank = 0;
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    if (level.is_cuts) {
      const uint64_t sub = m.count_from(k + 1, slots.data());
      rank = checked_add(rank, checked_mul(m.splits(k, slots.data()).rank_of(cuts[k]), sub));
      continue;
    }
    int64_t a, b;
    m.range(k, slots.data(), &a, &b);
    rank = checked_add(rank, m.walk_level(k, slots.data(), a, index[k], nullptr).before);
    slots[k] = target.slots[k];
  }
  return rank;
}

Config CompiledSpace::sample(Rng& rng) const {
  const uint64_t total = size();
  SLAPO_CHECK(total > 0, ErrorCode::kInvalidArgument, impl_->space.origin,
              ": cannot sample: the space is empty",
              impl_->empty_reason.empty() ? "" : " (" + impl_->empty_reason + ")");
  return at(rng.uniform(total));
}

Validity CompiledSpace::contains(const Config& config) const {
  Point p(impl_->n());
  std::string problem = impl_->read(config, &p);
  if (!problem.empty()) return Validity{false, problem, ""};
  return impl_->check(p.slots.data(), p.cuts.data());
}

std::vector<Config> CompiledSpace::neighbours(const Config& config) const {
  const Impl& m = *impl_;
  const size_t n = m.n();
  const Validity v = contains(config);
  SLAPO_CHECK(v.ok, ErrorCode::kInvalidArgument, "neighbours of ", config.to_string(),
              ": not in the space: ", v.reason);
  Point p(n);
  m.read(config, &p);
  std::vector<double>& slots = p.slots;
  const std::vector<int64_t>& index = p.index;
  const std::vector<IntList>& cuts = p.cuts;
  std::vector<Config> out;
  // Re-balances the cut points that depend on slot `changed` when they no longer fit.
  auto rebalance = [&](size_t changed, std::vector<IntList>* c) {
    for (size_t k = 0; k < n; ++k) {
      const Level& level = m.levels[k];
      if (!level.is_cuts) continue;
      if (std::find(level.deps.begin(), level.deps.end(), static_cast<int>(changed)) ==
          level.deps.end())
        continue;
      const StageSplits& s = m.splits(k, slots.data());
      if (!s.contains((*c)[k]) && s.count() > 0) (*c)[k] = s.balanced();
    }
  };
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    if (level.is_cuts) {
      for (size_t j = 0; j < cuts[k].size(); ++j) {
        for (int dir : {-1, 1}) {
          std::vector<IntList> moved = cuts;
          moved[k][j] += dir;
          if (m.check(slots.data(), moved.data()).ok)
            out.push_back(m.make_config(slots.data(), moved.data()));
        }
      }
      continue;
    }
    const double original = slots[k];
    auto try_index = [&](int64_t i) {
      slots[k] = level.domain.value(i);
      std::vector<IntList> c = cuts;
      rebalance(k, &c);
      const bool ok = m.check(slots.data(), c.data()).ok;
      if (ok) out.push_back(m.make_config(slots.data(), c.data()));
      slots[k] = original;
      return ok;
    };
    if (level.info.kind == KnobKind::kChoice) {
      for (int64_t i = 0; i < level.domain.n; ++i) {
        if (i != index[k]) try_index(i);
      }
      continue;
    }
    for (int dir : {-1, 1}) {
      for (int step = 1; step <= kNeighbourSearch; ++step) {
        const int64_t i = index[k] + dir * step;
        if (i < 0 || i >= level.domain.n) break;
        if (try_index(i)) break;
      }
    }
  }
  return out;
}

size_t CompiledSpace::encoded_size() const {
  size_t dims = 0;
  for (const Level& level : impl_->levels) {
    if (level.is_cuts)
      dims += level.cut_dims;
    else if (level.info.kind == KnobKind::kChoice)
      dims += static_cast<size_t>(level.domain.n);
    else
      dims += 1;
  }
  return dims;
}

std::vector<double> CompiledSpace::encode(const Config& config) const {
  const Impl& m = *impl_;
  const size_t n = m.n();
  Point p(n);
  std::string problem = m.read(config, &p);
  SLAPO_CHECK(problem.empty(), ErrorCode::kInvalidArgument, "encode ", config.to_string(), ": ",
              problem);
  const double* slots = p.slots.data();
  const std::vector<int64_t>& index = p.index;
  const std::vector<IntList>& cuts = p.cuts;
  std::vector<double> out;
  out.reserve(encoded_size());
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    if (level.is_cuts) {
      const double layers = static_cast<double>(m.splits(k, slots).layers());
      for (size_t j = 0; j < level.cut_dims; ++j) {
        out.push_back(j < cuts[k].size() && layers > 0 ? static_cast<double>(cuts[k][j]) / layers
                                                       : 1.0);
      }
    } else if (level.info.kind == KnobKind::kChoice) {
      for (int64_t i = 0; i < level.domain.n; ++i) out.push_back(i == index[k] ? 1.0 : 0.0);
    } else {
      const int64_t size = level.domain.n;
      out.push_back(size > 1 ? static_cast<double>(index[k]) / static_cast<double>(size - 1) : 0.5);
    }
  }
  return out;
}

}  // namespace slapo::space

namespace slapo::space {

std::string CompiledSpace::cut_knob() const {
  std::string knob;
  for (const detail::Level& level : impl_->levels) {
    if (!level.is_cuts) continue;
    SLAPO_CHECK(knob.empty(), ErrorCode::kInvalidArgument, "the space has two cut-point knobs, '",
                knob, "' and '", level.info.name, "': a planner chooses the cuts of one");
    knob = level.info.name;
  }
  return knob;
}

void CompiledSpace::for_each_cut_family(
    const std::function<bool(const Config& config, const StageSplits& splits)>& visit) const {
  const std::string knob = cut_knob();
  SLAPO_CHECK(!knob.empty(), ErrorCode::kInvalidArgument, "the space has no cut-point knob");
  // The other knobs' space: constraints cannot name a cut knob, and a cut knob is read by no other
  // knob, so leaving it out keeps every other configuration as it is.
  Space others = impl_->space;
  others.knobs.erase(std::remove_if(others.knobs.begin(), others.knobs.end(),
                                    [&](const KnobDecl& k) { return k.name == knob; }),
                     others.knobs.end());
  others.order.erase(std::remove(others.order.begin(), others.order.end(), knob),
                     others.order.end());
  const CompiledSpace rest = compile(others);
  const Impl& m = *impl_;
  const size_t n = m.n();
  size_t level_of_knob = 0;
  for (size_t k = 0; k < n; ++k) {
    if (m.levels[k].info.name == knob) level_of_knob = k;
  }
  std::vector<double> slots(n + 1, 0);
  std::vector<int64_t> index(n + 1, 0);
  std::vector<IntList> cuts(n + 1);
  rest.for_each([&](const PointView& p) {
    const Config config = p.to_config();
    Config full = config;
    full.set(knob, Value(IntList{}));  // read_config takes any list for the cut knob
    const std::string error = m.read_config(full, slots.data(), index.data(), cuts.data());
    SLAPO_CHECK(error.empty(), ErrorCode::kInternal, "cut families: ", error);
    return visit(config, m.splits(level_of_knob, slots.data()));
  });
}

}  // namespace slapo::space
