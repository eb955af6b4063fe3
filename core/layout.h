#pragma once
// Layout: how the ranks of one job split into tensor-, data- and pipeline-parallel groups.
// The tensor-parallel rank varies fastest, then the data-parallel rank, then the stage:
//   global = tp_rank + tp * (dp_rank + dp * pp_rank)
// so a tensor-parallel group is a block of neighbouring ranks (one machine, the most traffic).

#include <string>

namespace slapo {

struct Layout {
  int tp = 1, dp = 1, pp = 1;

  int world() const { return tp * dp * pp; }
  int rank_of(int tp_rank, int dp_rank, int pp_rank) const {
    return tp_rank + tp * (dp_rank + dp * pp_rank);
  }
  int tp_rank(int rank) const { return rank % tp; }
  int dp_rank(int rank) const { return (rank / tp) % dp; }
  int pp_rank(int rank) const { return rank / (tp * dp); }
  bool operator==(const Layout& o) const { return tp == o.tp && dp == o.dp && pp == o.pp; }
  bool operator!=(const Layout& o) const { return !(*this == o); }
  // "tp=2 dp=1 pp=2"
  std::string to_string() const;

  // Throws Error(kInvalidArgument) unless world() == `ranks`: "the configuration (tp=2 dp=1 pp=2)
  // needs 4 ranks; this run has 2".
  void check_world(int ranks) const;
};

}  // namespace slapo
