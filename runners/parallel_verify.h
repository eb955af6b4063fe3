#pragma once
// Verification across ranks: does this rank's part of a tp × pp × dp job compute what the
// single-process original computes?
//
// Every rank also builds the original model (the presets this is meant for are tiny) and trains it
// alone on the global batch; then it compares, for the parameters it holds, its gradient (of its
// shard, of its stage) with the matching slice of the original's, the loss, and the loss curve
// over `steps` optimizer steps. Nothing is gathered: each rank checks its own part, and the
// launcher reports every rank's verdict. Dropout is on: keyed masks make the two agree.

#include <algorithm>
#include <string>
#include <vector>

#include "core/config.h"
#include "dist/world.h"
#include "runners/workload.h"

namespace slapo::runners {

struct GradDiff {
  std::string name;
  double max_abs = 0;
  double max_ref = 0;  // the original gradient's largest magnitude
  // Gradients that are zero in exact arithmetic (the key projection's bias: softmax ignores a
  // constant added to every score) are rounding noise of ~1e-10; relative to themselves they mean
  // nothing. So a difference is relative to the gradient's magnitude, or to a thousandth of the
  // largest gradient on the rank, whichever is larger.
  double floor = 0;
  double relative() const { return max_abs / std::max({max_ref, floor, 1e-30}); }
};

struct ParallelVerifyReport {
  int rank = 0;
  std::string layout;
  std::string schedule_text;
  double loss_ref = 0, loss = 0;
  std::vector<GradDiff> grads;           // this rank's parameters, worst first
  std::vector<std::string> unmatched;    // this rank's parameters the original does not have
  std::vector<double> curve_ref, curve;  // losses over the optimizer steps

  double loss_relative() const;
  double worst_grad_relative() const { return grads.empty() ? 0 : grads.front().relative(); }
  double curve_max_abs() const;
  bool within(double tolerance, double curve_tolerance) const;
  // One line: "rank 3 (tp=2 dp=2 pp=2): loss rel 1e-8, 14 grads worst rel 2e-7
  // (h.1.mlp.fc_in.weight), ..."
  std::string summary() const;
};

// `lr` is the optimizer's learning rate for the curve (AdamW or the workload's optimizer).
ParallelVerifyReport verify_parallel(const Workload& workload, const Config& config,
                                     const dist::ParallelGroups& groups, int steps, double lr);

// This process as one rank of a verification job started by a launcher (RankEnv from the
// environment): joins the job in the configuration's layout (dp, when unnamed, fills what tp and
// pp leave) at one thread per rank, and verifies its part.
ParallelVerifyReport verify_this_rank(const Workload& workload, const Config& config, int steps,
                                      double lr);

}  // namespace slapo::runners
