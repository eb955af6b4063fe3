#include "schedule/language/primitives.h"

#include "core/error.h"
#include "core/named.h"
#include "schedule/language/arg_reader.h"

namespace slapo::schedule {

namespace {

// The replay forms that need more than one line.
void replay_replace(Schedule& target, ArgReader& args, const ReplayStep& step) {
  SLAPO_CHECK(static_cast<bool>(step.factory), ErrorCode::kInvalidArgument, "replay step ",
              step.index, " (", step.step.to_string(), "): replacing needs a module factory");
  step.factory(target, args.word());
}

void replay_replace_match(Schedule&, ArgReader&, const ReplayStep& step) {
  SLAPO_FAIL(
      ErrorCode::kInvalidArgument, "replay step ", step.index, " (",
      step.step.to_string().substr(0, 60),
      "...): a subgraph replaced by a C++ module cannot be replayed from text; apply it in code");
}

// The pattern and which occurrence, found again in each graph as it is traced.
GraphMatch deferred_match(Schedule& target, ArgReader& args, const ReplayStep& step) {
  const std::string pattern = args.string();
  const int64_t occurrence = args.integer();
  SLAPO_CHECK(occurrence >= 0, ErrorCode::kParse, "replay step ", step.index, ": occurrence ",
              occurrence, " < 0");
  return target.deferred_match(pattern, static_cast<size_t>(occurrence));
}

void replay_fuse_match(Schedule& target, ArgReader& args, const ReplayStep& step) {
  const GraphMatch match = deferred_match(target, args, step);
  target.fuse(match, args.done() ? "native" : args.string());
}

void replay_checkpoint_match(Schedule& target, ArgReader& args, const ReplayStep& step) {
  target.checkpoint(deferred_match(target, args, step));
}

}  // namespace

const std::vector<Primitive>& list_primitives() {
  static const std::vector<Primitive> table = {
      {"replace",
       "swap a module for another with the same forward signature",
       "sch[path].replace(module)\n"
       "  Replaces the module at `path` by `module` in its parent's slot (the parent must be a\n"
       "  SlotModule). The new module's forward must have the same signature. Annotations of\n"
       "  parameters and buffers move to those of the same name. The sub-schedule now mirrors the\n"
       "  new module. Errors: the root, a non-schedulable parent, a different signature.\n"
       "sch[path].replace_all<Impl>(factory)\n"
       "  Replaces every module of type Impl at or below `path` by factory(impl).\n"
       "sch[path].replace(match, module)\n"
       "  On a traced module: the matched subgraph (find_pattern) is computed by `module`, whose\n"
       "  forward takes the match's tensor inputs in the pattern's order; the module becomes a child\n"
       "  of the traced one (subgraph_0, ...), so its parameters are the model's.",
       {{"replace", replay_replace}, {"replace_match", replay_replace_match}}},
      {"checkpoint",
       "recompute the module's activations in backward instead of keeping them",
       "sch[path].checkpoint()\n"
       "  Runs the module under activation checkpointing: forward keeps only its inputs; backward\n"
       "  re-runs forward with the random state of the first run restored (the default generator and\n"
       "  every forked stream inside), so dropout masks and gradients are bit-identical; each\n"
       "  parameter's gradient is added to its .grad as it is made, as a plain module's backward\n"
       "  does (the recompute needs the module's activations once more, not all its gradients at\n"
       "  once). Skipped in eval mode and when grad mode is off. Any forward of tensors and optional\n"
       "  tensors to a tensor or a tuple of tensors (docs/schedule.md, \"Forward signatures\").\n"
       "sch[path].checkpoint(match)\n"
       "  On a traced module: the matched subgraph (find_pattern) keeps no activations; backward\n"
       "  recomputes it with the random state and the dropout key of the forward.",
       {{"checkpoint", [](Schedule& t, ArgReader&, const ReplayStep&) { t.checkpoint(); }},
        {"checkpoint_match", replay_checkpoint_match}}},
      {"fork_rng",
       "give the module its own seeded random stream",
       "sch[path].fork_rng([seed])\n"
       "  The module draws dropout masks from its own generator, seeded by `seed` or by the schedule's\n"
       "  seed and the path; the default generator does not advance for its draws. Tensor-parallel\n"
       "  regions use it so ranks draw different masks where data is sharded.",
       {{"fork_rng",
         [](Schedule& t, ArgReader& args, const ReplayStep&) {
           if (args.done())
             t.fork_rng();
           else
             t.fork_rng(static_cast<uint64_t>(args.integer()));
         }}}},
      {"annotate",
       "attach a key and value to a parameter or buffer",
       "sch[path].annotate(name, key, value)\n"
       "  Records key = value on the parameter or buffer `name` of the module. Annotations survive\n"
       "  replace (by name) and shard (same tensor). Read them with sch[path].annotations(name).",
       {{"annotate",
         [](Schedule& t, ArgReader& args, const ReplayStep&) {
           const std::string name = args.string(), key = args.string(), value = args.string();
           t.annotate(name, key, value);
         }}}},
      {"shard",
       "split a parameter or buffer along an axis across the tensor-parallel group",
       "sch[path].shard(name, axis)\n"
       "  Splits `name` along `axis` into one part per tensor-parallel rank. With a group in the\n"
       "  ScheduleOptions this rank keeps its slice (narrowed in place: tied names and optimizers see\n"
       "  it); without one the split is checked and recorded. The size along the axis must divide; a\n"
       "  tensor cannot be sharded twice; tied parameters are listed with the shard.",
       {{"shard",
         [](Schedule& t, ArgReader& args, const ReplayStep&) {
           const std::string name = args.string();
           t.shard(name, args.integer());
         }}}},
      {"sync",
       "run a collective around the module, with its conjugate in backward",
       "sch[path].sync(mode, op[, axis])\n"
       "  mode: fwd_pre (on the inputs), fwd_post (on the output), bwd_post (on the inputs' gradient).\n"
       "  op: all_reduce, all_gather(axis), reduce_scatter(axis), split(axis; fwd_pre only).\n"
       "  Megatron's pairs: fwd_post all_reduce is identity in backward; bwd_post all_reduce is\n"
       "  identity in forward; all_gather's backward keeps this rank's slice. Checked against the\n"
       "  shards: a Linear needs its weight split along the inputs (axis 1) to all-reduce its output,\n"
       "  along the outputs (axis 0) to all-gather it; a row-split Linear adds its bias once, after\n"
       "  the all-reduce. Reduce-scatter on Gloo is an all-reduce and a slice.",
       {{"sync",
         [](Schedule& t, ArgReader& args, const ReplayStep&) {
           const std::string mode = args.string(), op = args.string();
           if (args.done())
             t.sync(mode, op);
           else
             t.sync(mode, op, args.integer());
         }}}},
      {"decompose",
       "split a Linear into its matrix product and a separate bias add",
       "sch[path].decompose()\n"
       "  The nn::Linear at `path` becomes a DecomposedLinear with the same weight and bias tensors\n"
       "  (same names; shards, annotations and optimizers still see them): matmul(x, weight^T), then\n"
       "  + bias, as two operations, so that in a traced graph the bias add can fuse with what\n"
       "  follows. Must come before shard (a sharded Linear is refused); sync treats a decomposed\n"
       "  Linear as a Linear (a row-split one adds its bias after the all-reduce).",
       {{"decompose", [](Schedule& t, ArgReader&, const ReplayStep&) { t.decompose(); }}}},
      {"trace",
       "run the module as a traced TorchScript graph (trace by need)",
       "sch[path].trace([example_inputs])\n"
       "  Traces the module's forward into a TorchScript graph that runs in its place; its parameters\n"
       "  stay where they are and enter the graph as inputs, so gradients reach them. One graph per\n"
       "  input and parameter shape, each checked against the eager forward when traced. With\n"
       "  example inputs the first trace happens now; without, at the first call. A forward that\n"
       "  reads tensor values in C++ (data-dependent control flow) is refused with the reason.\n"
       "sch[path].print_graph()      the graph as TorchScript IR\n"
       "sch[path].find(regex)        paths at or below that match (no trace needed)\n"
       "sch[path].find_pattern(ir)   the occurrences of a TorchScript IR pattern in the traced graph,\n"
       "                             as matches for fuse, replace and checkpoint (stale once the\n"
       "                             graph changes)",
       {{"trace",
         [](Schedule& t, ArgReader&, const ReplayStep&) {
           t.trace(); /* traced at its first call */
         }}}},
      {"find",
       "the paths, or the occurrences of a graph pattern, a primitive should apply to",
       "sch[path].find(regex)\n"
       "  The paths at or below `path` whose whole path matches the ECMAScript regex, in tree order:\n"
       "  for (auto& p : sch.find(\"h\\\\.[0-9]+\\\\.mlp\")) sch[p].checkpoint(); no trace needed.\n"
       "sch[path].find_pattern(ir)   sch[path].find_pattern(fn, examples)\n"
       "  On a traced module: the occurrences of a TorchScript IR pattern (or of a small C++ function\n"
       "  traced on examples), in graph order, as matches that fuse, replace and checkpoint take; a\n"
       "  match goes stale once the graph changes. A query: it records nothing and replays nothing.",
       {}},
      {"fuse",
       "replace a matched chain in a traced graph by one fused kernel",
       "sch[path].fuse(match[, compiler])   sch[path].fuse(chain[, compiler])\n"
       "  The match (or every occurrence of the named chain) becomes one operator, now and in graphs\n"
       "  traced later. Chains (decompose() the Linear a bias add comes from first):\n"
       "    bias_gelu         add(x, b) -> gelu                 -> slapo::bias_gelu\n"
       "    bias_dropout_add  add(x, b) -> keyed_dropout -> + r -> slapo::bias_dropout_add\n"
       "    layer_norm        layer_norm over the last axis     -> slapo::layer_norm\n"
       "  compiler: native (the project's kernels); nnc is refused where LibTorch's fuser has no\n"
       "  working CPU backend (this build has no LLVM).",
       {{"fuse",
         [](Schedule& t, ArgReader& args, const ReplayStep&) {
           const std::string chain = args.string();
           t.fuse(chain, args.done() ? "native" : args.string());
         }},
        {"fuse_match", replay_fuse_match}}},
      {"cut_pipeline_stage",
       "begin a new pipeline stage after this module",
       "sch[path].cut_pipeline_stage()\n"
       "  The module must be a child of a Sequence and not its last child; the root cannot be cut.\n"
       "  build() reports the cuts; the pipeline runtime gives each rank its stage.",
       {{"cut_pipeline_stage",
         [](Schedule& t, ArgReader&, const ReplayStep&) { t.cut_pipeline_stage(); }}}},
  };
  return table;
}

const ReplayForm* find_replay_form(const std::string& recorded) {
  for (const Primitive& p : list_primitives()) {
    for (const ReplayForm& f : p.forms) {
      if (f.recorded == recorded) return &f;
    }
  }
  return nullptr;
}

const Primitive& find_primitive(const std::string& name) {
  return find_named(list_primitives(), name, "primitive", "primitives", ErrorCode::kNotFound);
}

std::string primitive_reference_markdown() {
  std::string md;
  for (const Primitive& p : list_primitives()) {
    md += (md.empty() ? "" : "\n") + std::string("### `") + p.name + "`\n\n" + p.summary +
          ".\n\n```\n" + p.help + "\n```\n";
  }
  return md;
}

}  // namespace slapo::schedule
