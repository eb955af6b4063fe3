#pragma once
// What a profile reads off a built-in workload's model besides its steps (runners/profiler.h):
// the parameters of its parts as the schedule shards them, the bytes a step's token batch holds,
// the optimizer's temporaries per parameter element, the embeddings' time per sample.

#include <cstdint>

#include "core/config.h"
#include "cost/profile.h"
#include "models/template_config.h"
#include "models/zoo.h"
#include "runners/workload.h"

namespace slapo::runners {

// The bytes a step's token batch holds beside the model (cost::ModelShape's input bytes), read
// off the tracking allocator at one and two samples: a trial's batches (runners/token_batches.h:
// the data file's tokens, held whole, and each sample's window), and the profile's own steps'
// (random windows, as measure_sweep makes them).
void measure_input_bytes(const Workload& w, const models::ModelSpec& spec, int64_t seq,
                         cost::ModelShape& shape);

// The parameters of a block, of the prologue and of the epilogue, and the tied ones, as the
// schedule shards them: a two-block variant cut into two stages.
cost::ModelShape model_shape(const Workload& w, const Config& knobs, int tp);

// The bytes of temporaries one optimizer step makes per element of a parameter, measured on one
// flat tensor of `params` elements, at most kOptimizerProbeElements (its state allocated by a step
// before; an elementwise step's temporaries grow with the elements, so a slice tells the same:
// neo-parallel's base key spent 1.54 s of its 14 s stepping a tensor of all its parameters here,
// on a host where its trials took 5.0 s): AdamW's are of one
// parameter at a time, the largest a rank holds sets its least peak (cost/predictor.h). Its time
// is not read here: on one flat tensor of as many elements LibTorch's AdamW ran from 0.6 to 2.1
// times its time on a model's own parameters, by their shapes (benchmark/kernel_bench.cc,
// BM_AdamW: llama-mini 42.3 ms against 20.3, gpt2 549 against 883) — the profile times it within
// the model's steps (measure_sweep).
double optimizer_temp_bytes_per_element(const Workload& w, const models::TemplateConfig& tc,
                                        double params);
constexpr int64_t kOptimizerProbeElements = int64_t{1} << 20;

// The embeddings' forward and backward, per sample, at `batch` samples.
double prologue_ms_per_sample(const Workload& w, const Config& knobs, int64_t batch);

}  // namespace slapo::runners
