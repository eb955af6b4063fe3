#pragma once
// What a built-in workload's ranks may take of this machine's memory when the space sets no
// memory budget. Without one, nothing held the cost model's profile or the tuner to the machine:
// a space of gpt-mini at sequence 128 and batches up to 1024 had its profile step at 1024 samples
// inside `slapo-tune plan` itself, which the kernel's out-of-memory killer ended after two minutes
// (24 GiB resident), and a trial there thrashed for 57 s before its worker was killed.
//
// Two bounds, both per rank of a job whose ranks share the machine:
// - the budget the cost model holds its predictions to (tensor_budget): what the profile measures
//   up to, and past which the tuner and `plan` leave a configuration out as predicted out of
//   memory. Tensor bytes are not resident bytes: the kept heap and the large blocks the tracking
//   allocator keeps make a process resident 1.3-1.8 times its tensors' peak (measured below);
// - the ceiling past which a step is stopped as out of memory (tensor_ceiling), the tracking
//   allocator's budget where the space sets none: a clean failure, recorded, where the kernel's
//   killer would have ended the process — the tuner's own, when it profiles on one rank.
// No LibTorch.

#include <optional>
#include <string>

namespace slapo::runners {

// A process's resident bytes per byte of its tensors' peak, at most: measured by trials of this
// machine (subprocess runner, kept heap; `max_rss_bytes` over `peak_bytes`): gpt-mini at sequence
// 128, 16-128 samples, 1.32-1.51 without checkpointing and 1.76 with every block checkpointed;
// bert-mini at sequence 96, 32 samples, 1.53 and 1.82. The budget uses 2.
inline constexpr double kResidentPerTensorByte = 2.0;
// A process's own resident bytes before its first tensor (LibTorch and the other libraries):
// trials' max_rss_bytes less peak_bytes run to 150-200 MiB at a few samples of gpt-mini.
inline constexpr double kProcessBytes = 256.0 * 1024 * 1024;
// The share of the available memory a rank's tensors may reach before a step is stopped: 1 /
// 0.75 = 1.33, the least resident factor measured — past it the process would be resident over
// the machine's memory anyway, and the kernel's killer comes first (a ceiling of 0.9 let a trial of
// 1024 samples above thrash 43 s before it stopped at 19.6 GiB of tensors).
inline constexpr double kCeilingShare = 0.75;

struct MachineMemory {
  double available = 0;  // bytes the machine had available when read (available_memory.h)
  int ranks = 1;         // the ranks of a job, sharing them

  // The tensor bytes a rank's peak is held to: (available / ranks - kProcessBytes) /
  // kResidentPerTensorByte, at least one byte — a machine with no room left holds every
  // configuration out of memory (a budget of 0 would mean none at all).
  double tensor_budget() const;
  // The tensor bytes past which a rank's allocation throws out of memory: kCeilingShare of its
  // share of the available memory.
  double tensor_ceiling() const;
  // For a reason's text: "this machine's memory (9.87 GiB of tensors a rank: 22.00 GiB available,
  // 1 rank)".
  std::string describe() const;
  // For an out-of-memory trial's or profile's reason: "this machine's memory: past 19.80 GiB of
  // tensors a rank (0.75 of 22.00 GiB available, 1 rank)".
  std::string ceiling_reason() const;
};

// This machine's memory for a job of `ranks` ranks, read now; nullopt when the machine does not
// say (no /proc).
std::optional<MachineMemory> machine_memory(int ranks);

}  // namespace slapo::runners
