#pragma once
// Schedule: primitives applied to a model by module path, without editing the model's code.
//
//   auto sch = slapo::schedule::create_schedule(model);
//   sch["h.0"].checkpoint();
//   sch["h.1.attn"].replace(FusedQkvAttention(...));
//   sch["h.0.mlp.fc_in"].shard("weight", 0);
//   auto built = slapo::schedule::build(*sch);
//
// The schedule tree mirrors the module tree; children of a SlotModule are its slots, children of
// containers are addressed by index ("h.3"). Every primitive applied is recorded in order, so the
// schedule prints as readable text (to_string()).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/util/Type.h>
#include <torch/nn/module.h>

#include "schedule/graph/graph_match.h"
#include "schedule/language/slot_module.h"

namespace slapo::schedule {

class Communicator;  // schedule/runtime/communicator.h

struct ScheduleOptions {
  // The tensor-parallel group of this rank. When set, shard() keeps this rank's slice of the tensor
  // and sync() runs its collectives over the group. When null, the schedule is a plan only:
  // shard() checks and records a split into `tp_size` parts, sync() records the collective.
  std::shared_ptr<Communicator> tp_group;
  int64_t tp_size = 1;
  uint64_t seed = 0;  // fork_rng streams without an explicit seed derive theirs from this

  int64_t tp_parts() const;  // the group's size, or tp_size
  int64_t tp_rank() const;   // this rank in the group, or 0
};

struct ShardSpec {
  std::string path;   // module path
  std::string param;  // parameter or buffer name within it
  int64_t axis = 0;
  int64_t parts = 1;
  std::vector<std::string> tied;  // other full names of the same tensor
};

struct SyncRecord {
  std::string path;
  std::string mode;  // fwd_pre | fwd_post | bwd_post
  std::string op;    // all_reduce | all_gather | reduce_scatter | split
  int64_t axis = -1;
};

struct AppliedPrimitive {
  std::string path;
  std::string primitive;
  std::string args;               // as written: "\"weight\", 0"
  std::string to_string() const;  // sch["h.0.mlp.fc_in"].shard("weight", 0)
};

// What a schedule did, for build() and for people.
struct ScheduleRecord {
  std::vector<AppliedPrimitive> applied;                      // every primitive, in order
  std::vector<std::string> checkpointed;                      // paths
  std::vector<std::string> forked;                            // paths with their own random stream
  std::vector<std::pair<std::string, std::string>> replaced;  // path, type of the new module
  std::vector<ShardSpec> shards;
  std::vector<SyncRecord> syncs;
  std::vector<std::string> cuts;  // a stage begins after each of these paths
};

class ScheduleHandle;

class Schedule {
 public:
  // REQUIRES: root is not null. Throws Error(kInvalidArgument) otherwise.
  static ScheduleHandle create(std::shared_ptr<SlotModule> root, ScheduleOptions options = {});

  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;
  ~Schedule();

  // The sub-schedule at `path`, relative to this one ("" is this one). An unknown path throws
  // Error(kNotFound) naming the nearest valid paths.
  Schedule& operator[](const std::string& path);
  // The full dotted path from the root ("" for the root).
  const std::string& path() const { return path_; }
  std::shared_ptr<torch::nn::Module> module() const { return module_; }
  SlotModule* slot_module() const { return dynamic_cast<SlotModule*>(module_.get()); }
  // This schedule and every sub-schedule, depth first, with their full paths.
  std::vector<std::pair<std::string, Schedule*>> named_schedules();
  const ScheduleOptions& options() const;

  // ---- primitives (each returns *this, so calls chain) --------------------------------------
  // Swaps this module for `module`, whose forward must have the same signature.
  template <typename Holder>
  Schedule& replace(Holder module) {
    return replace_any(torch::nn::AnyModule(module), signature_of<Holder>(),
                       c10::demangle(typeid(typename Holder::ContainedType).name()));
  }
  template <typename Impl>
  Schedule& replace(std::shared_ptr<Impl> module) {
    return replace_any(torch::nn::AnyModule(module), signature_of_impl<Impl>(),
                       c10::demangle(typeid(Impl).name()));
  }
  Schedule& replace_any(torch::nn::AnyModule module, Signature signature,
                        const std::string& type_name);
  // Replaces every module of type Impl below (and including) this one by factory(impl), where
  // factory returns a module holder. Returns how many were replaced.
  template <typename Impl, typename Factory>
  int replace_all(Factory&& factory) {
    int count = 0;
    std::vector<std::string> replaced;
    for (auto& [p, s] : named_schedules()) {
      // A replacement rebuilds the sub-schedules below it: their entries in this list are gone.
      const bool below_replaced =
          std::any_of(replaced.begin(), replaced.end(), [&p = p](const std::string& r) {
            return p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '.';
          });
      if (below_replaced) continue;
      if (auto impl = std::dynamic_pointer_cast<Impl>(s->module())) {
        s->replace(factory(*impl));
        replaced.push_back(p);
        ++count;
      }
    }
    return count;
  }
  // Recompute this module's activations in backward instead of keeping them.
  Schedule& checkpoint();
  // Give this module its own random stream (seeded by `seed`, or from the options' seed and the
  // path).
  Schedule& fork_rng(std::optional<uint64_t> seed = std::nullopt);
  // Attach key = value to a parameter or buffer of this module.
  Schedule& annotate(const std::string& name, const std::string& key, const std::string& value);
  // Split a parameter or buffer along `axis` across the tensor-parallel group: with a group in the
  // options, this rank keeps its slice (the tensor is narrowed in place, so the module, tied
  // names and an optimizer made later all see it).
  Schedule& shard(const std::string& name, int64_t axis);
  // Run a collective around this module's forward over the tensor-parallel group, with its
  // conjugate in backward: mode "fwd_pre" | "fwd_post" | "bwd_post"; op "all_reduce" |
  // "all_gather" | "reduce_scatter" | "split" (axis for the last three). Checked against the
  // shards: a collective that needs a sharded tensor the schedule did not shard is an error.
  Schedule& sync(const std::string& mode, const std::string& op, int64_t axis = -1);
  // A pipeline stage begins after this module. It must be a child of a Sequence, not the last.
  Schedule& cut_pipeline_stage();
  // An nn::Linear becomes a DecomposedLinear: the same parameters, the product and the bias add as
  // two operations (so the add can fuse with what follows). Must come before shard.
  Schedule& decompose();

  // ---- static graph (schedule/graph/static_graph.cc)
  // ------------------------------------------------ Trace this module's forward into a TorchScript
  // graph that runs in its place (its parameters stay where they are, as graph inputs). With
  // example inputs it is traced and checked now; without, at its first call ("trace by need"). A
  // module whose forward reads tensor values in C++ cannot be traced, and says so. A checkpointed
  // module runs its graph under checkpointing.
  Schedule& trace(const std::vector<torch::Tensor>& example_inputs = {});
  // The traced graph as TorchScript IR. Throws when the module is not traced (or not yet run).
  std::string print_graph();
  // The paths at or below this module that match `path_regex` (ECMAScript, the whole path).
  std::vector<std::string> find(const std::string& path_regex);
  // The occurrences of the TorchScript IR `pattern` (a graph(...) text returning one value) in
  // this module's traced graph, in graph order. No occurrence: empty. A malformed pattern throws
  // Error(kParse) saying where. The matches are what fuse, replace and checkpoint below take.
  std::vector<GraphMatch> find_pattern(const std::string& pattern);
  // The same with the pattern given as a small C++ function over tensors, traced on `examples`
  // (any shapes the function accepts: shapes are not part of a pattern).
  std::vector<GraphMatch> find_pattern(
      const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& pattern,
      const std::vector<torch::Tensor>& examples);
  // The occurrence `index` of `pattern`, named without looking at a graph: for a module traced by
  // need (no graph yet; what replay uses). Checked when each graph is traced.
  GraphMatch deferred_match(const std::string& pattern, size_t index);
  // One matched chain becomes one of the project's fused kernels (compiler "native"; the match
  // must be exactly a chain of fusion_chains.h) — in this graph and in those traced later for
  // other shapes. "nnc" (LibTorch's fuser) only where it has a working CPU backend.
  // A match found before the graph last changed is stale, and refused.
  Schedule& fuse(const GraphMatch& match, const std::string& compiler = "native");
  // Every occurrence of a named chain (bias_gelu, bias_dropout_add, layer_norm) becomes its kernel.
  // The number of occurrences in the graphs traced so far is in *matches when given.
  Schedule& fuse(const std::string& chain, const std::string& compiler = "native",
                 size_t* matches = nullptr);
  // The matched subgraph is computed by `module` instead: its forward takes the match's tensor
  // inputs in the pattern's order (its constant inputs are the module's business). The module
  // becomes a child of this one (slot "subgraph_N"), so its parameters are the model's.
  template <typename Holder>
  Schedule& replace(const GraphMatch& match, Holder module) {
    return replace_match(match, torch::nn::AnyModule(module), signature_of<Holder>(),
                         c10::demangle(typeid(typename Holder::ContainedType).name()));
  }
  Schedule& replace_match(const GraphMatch& match, torch::nn::AnyModule module, Signature signature,
                          const std::string& type_name);
  // The matched subgraph keeps no activations: backward recomputes it from its inputs.
  Schedule& checkpoint(const GraphMatch& match);

  // ---- queries --------------------------------------------------------------------------------
  // Annotations of this module's parameter or buffer `name`.
  std::map<std::string, std::string> annotations(const std::string& name);
  // What the whole schedule tree did (shared by every sub-schedule).
  const ScheduleRecord& record() const;
  // The model this schedule was created for.
  std::shared_ptr<SlotModule> model() const;
  // The applied primitives, one per line.
  std::string to_string() const;

  struct Root;

 private:
  Schedule(Root* root, Schedule* parent, std::string path, std::string slot_name,
           std::shared_ptr<torch::nn::Module> module);
  void rebuild_children();
  Schedule* find_child(const std::string& name);
  SlotModule& parent_slots(const char* primitive);
  // This module's slot in its parent, for primitives that set a call policy.
  Slot& policy_slot(const char* primitive);
  void record_primitive(const std::string& primitive, const std::string& args);
  Schedule& root_schedule();
  torch::Tensor tensor_named(const std::string& name, const char* primitive);
  // This module's traced slot (traced now or by need): for the primitives on matches.
  TracedGraph& traced_slot(const char* primitive);
  // This module's slot in its parent, or null (the root; a parent that is not a SlotModule).
  Slot* own_slot();
  // Traced graphs never go stale (static_graph.cc). A primitive that changes a module changes what
  // the graphs of the traced modules at and above it compute:
  enum class Change {
    kModule,  // replace, decompose, shard: those graphs are traced again at their next call
    kPolicy,  // checkpoint, fork_rng, sync: a graph cannot hold them, so refused below a traced one
  };
  // Refuses `primitive` with the reason when a traced graph at or above this module cannot follow
  // the change (a kPolicy change below a traced module; a graph that fuse or a match rewrote).
  void check_traced_graphs(const char* primitive, Change change);
  // After a kModule change: the graphs at and above this module are traced again by need.
  void retrace_graphs();
  // A match of this module's current graphs, or an error naming what is wrong with it.
  void check_match(const GraphMatch& match, const char* primitive);
  // The shards of tensors at or below this module: (name relative to it, spec).
  std::vector<std::pair<std::string, const ShardSpec*>> shards_below();

  Root* root_;
  std::unique_ptr<Root> owned_root_;  // set on the root schedule only
  Schedule* parent_;
  std::string path_;
  std::string slot_name_;  // this module's name in its parent
  std::shared_ptr<torch::nn::Module> module_;
  std::vector<std::unique_ptr<Schedule>> children_;
};

// What create_schedule returns: it owns the root schedule and reads as Slapo's `sch["h.0"]`,
// while `sch->` and `*sch` still reach the root (it is a unique_ptr that also indexes by path).
class ScheduleHandle : public std::unique_ptr<Schedule> {
 public:
  ScheduleHandle() = default;
  explicit ScheduleHandle(Schedule* root) : std::unique_ptr<Schedule>(root) {}
  // The sub-schedule at `path` (Schedule::operator[]).
  Schedule& operator[](const std::string& path) const { return (**this)[path]; }
};

inline ScheduleHandle create_schedule(std::shared_ptr<SlotModule> model,
                                      ScheduleOptions options = {}) {
  return Schedule::create(std::move(model), options);
}

}  // namespace slapo::schedule
