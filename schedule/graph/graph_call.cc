#include "schedule/graph/graph_call.h"

#include <atomic>
#include <map>
#include <mutex>

#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "core/error.h"

namespace slapo::schedule {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<int64_t, TensorFunction> functions;
  std::atomic<int64_t> next{1};
};

Registry& registry() {
  static Registry* r = new Registry();  // outlives every static graph
  return *r;
}

at::Tensor call(int64_t id, at::TensorList inputs) {
  TensorFunction fn;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.functions.find(id);
    SLAPO_CHECK(it != r.functions.end(), ErrorCode::kInternal,
                "slapo::call: no function under handle ", id,
                " (the schedule that made this graph is gone)");
    fn = it->second;
  }
  return fn(std::vector<at::Tensor>(inputs.begin(), inputs.end()));
}

}  // namespace

GraphCallable::GraphCallable(TensorFunction fn) {
  Registry& r = registry();
  id_ = r.next.fetch_add(1);
  std::lock_guard<std::mutex> lock(r.mutex);
  r.functions.emplace(id_, std::move(fn));
}

GraphCallable::~GraphCallable() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.functions.erase(id_);
}

// Conservative aliasing: the graph optimizer must neither merge two calls nor move one (the code
// behind a handle may draw dropout masks).
TORCH_LIBRARY_FRAGMENT(slapo, m) {
  m.def(torch::schema("call(int id, Tensor[] inputs) -> Tensor",
                      c10::AliasAnalysisKind::CONSERVATIVE));
}
TORCH_LIBRARY_IMPL(slapo, CompositeImplicitAutograd, m) { m.impl("call", call); }

}  // namespace slapo::schedule
