#pragma once
// The batches a profile measures its variants at (runners/profiler.h): the smallest and the
// largest of the space's range, and a middle one between them. A prediction is a measurement
// where the profile measured the configuration's own batch, and an interpolation along the batch
// elsewhere — and a step's time is not linear in the batch: bert-mini at sequence 64 ran 22.1,
// 24.6 and 23.6 samples/s at 4, 8 and 16 samples (benchmark/tables/bert-mini-batch-ckpt), its
// best batch between the profile's geometric points 4, 10 and 23, where the interpolation
// flattened the peak and ranked 16 samples over 8. So the middle (and, under a memory budget, the
// batch a profile is first measured up to) are taken from the batches the space's
// configurations run when one is near: their predictions are then measured, not interpolated.

#include <cstdint>
#include <vector>

namespace slapo::cost {

// The batch nearest the geometric mean of `lo` and `hi` (by ratio; the smaller of two as near)
// among `taken` (a rank's micro-batches the space runs, any order) strictly between them; none (0)
// when the space runs none there, and the geometric mean itself, rounded, when what it runs is not
// known (`taken` empty).
int64_t middle_batch(int64_t lo, int64_t hi, const std::vector<int64_t>& taken);

// The largest of `taken` from `at_least` up to `at_most`; `at_most` when none is.
int64_t taken_at_most(int64_t at_most, int64_t at_least, const std::vector<int64_t>& taken);

}  // namespace slapo::cost
