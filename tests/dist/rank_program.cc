// One rank of the distributed tests, launched by dist_test through dist::launch_ranks.
//
//   rank_program collectives   every collective and its autograd conjugate, checked by value
//   rank_program schedules     pp=2 × tp=2: GPipe and 1F1B give bit-identical gradients
//   rank_program masked_pipeline  pp=2: blocks taking (hidden, mask) and returning (hidden,
//                              probabilities) pass the mask between stages; gradients as in one
//                              process
//   rank_program die           rank 1 exits before the first collective; the others must fail
//   rank_program hang          rank 1 sleeps past the timeout; the others must fail at it
//   rank_program collective_oom  an all-gather past the memory budget: out of memory, named
//
// Exit 0 when the rank saw what it should, 1 with a one-line reason otherwise, 3 for the rank
// that was told to die.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include <torch/torch.h>

#include "../schedule/masked_model.h"
#include "core/config.h"
#include "core/error.h"
#include "dist/world.h"
#include "models/model_spec.h"
#include "runners/parallel_trainer.h"
#include "runners/tracking_allocator.h"
#include "schedule/runtime/collectives.h"
#include "schedule/runtime/pipeline.h"

using namespace slapo;

namespace {

int fail(const std::string& why) {
  std::cout << "FAIL " << why << std::endl;
  return 1;
}

bool near(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && torch::allclose(a, b, 1e-6, 1e-6);
}

int collectives() {
  Layout layout;
  layout.tp = 2;
  const dist::ParallelGroups g = dist::connect(dist::RankEnv::from_env(), layout);
  schedule::Communicator& tp = *g.tp;
  const int r = tp.rank();
  // all_reduce, all_gather, broadcast, send/recv.
  torch::Tensor x = torch::full({3}, static_cast<float>(r + 1));
  tp.all_reduce(x);
  if (!near(x, torch::full({3}, 3.0f))) return fail("all_reduce");
  torch::Tensor m = torch::full({2}, static_cast<float>(r));
  tp.all_reduce(m, schedule::ReduceOp::kMax);
  if (!near(m, torch::full({2}, 1.0f))) return fail("all_reduce max");
  auto parts = tp.all_gather(torch::full({2}, static_cast<float>(r)));
  if (parts.size() != 2 || !near(parts[1], torch::ones({2}))) return fail("all_gather");
  torch::Tensor b = torch::full({2}, static_cast<float>(r + 5));
  tp.broadcast(b, 1);
  if (!near(b, torch::full({2}, 6.0f))) return fail("broadcast");
  torch::Tensor sent = torch::arange(4, torch::kFloat) + static_cast<float>(r);
  auto handle = tp.send(sent, 1 - r, 7);
  torch::Tensor got = torch::empty({4});
  tp.recv(got, 1 - r, 7);
  handle->wait();
  if (!near(got, torch::arange(4, torch::kFloat) + static_cast<float>(1 - r)))
    return fail("send/recv");

  // Autograd conjugates: forward value and backward gradient of each.
  const torch::Tensor full = torch::arange(8, torch::kFloat).view({2, 4});
  auto grad_of = [](const torch::Tensor& leaf, const torch::Tensor& out,
                    const torch::Tensor& weight) {
    (out * weight).sum().backward();
    return leaf.grad().clone();
  };
  {
    torch::Tensor in = full.clone().requires_grad_(true);
    torch::Tensor out = schedule::copy_to_group(in, tp);  // identity; backward all-reduces
    torch::Tensor grad = grad_of(in, out, torch::full({2, 4}, static_cast<float>(r + 1)));
    if (!near(out, full) || !near(grad, torch::full({2, 4}, 3.0f))) return fail("copy_to_group");
  }
  {
    torch::Tensor in = (full * static_cast<float>(r + 1)).detach().requires_grad_(true);
    torch::Tensor out = schedule::reduce_from_group(in, tp);  // all-reduce; backward identity
    torch::Tensor grad = grad_of(in, out, torch::ones({2, 4}));
    if (!near(out, full * 3) || !near(grad, torch::ones({2, 4}))) return fail("reduce_from_group");
  }
  {
    torch::Tensor in = full.narrow(1, 2 * r, 2).clone().requires_grad_(true);
    torch::Tensor out = schedule::gather_from_group(in, tp, -1);  // all-gather; backward slice
    torch::Tensor grad = grad_of(in, out, torch::arange(8, torch::kFloat).view({2, 4}));
    if (!near(out, full) || !near(grad, full.narrow(1, 2 * r, 2))) return fail("gather_from_group");
  }
  {
    torch::Tensor in = full.clone().requires_grad_(true);
    torch::Tensor out = schedule::split_to_group(in, tp, 1);  // slice; backward all-gather
    torch::Tensor grad = grad_of(in, out, torch::full({2, 2}, static_cast<float>(r + 1)));
    torch::Tensor expected = torch::cat({torch::ones({2, 2}), torch::full({2, 2}, 2.0f)}, 1);
    if (!near(out, full.narrow(1, 2 * r, 2)) || !near(grad, expected))
      return fail("split_to_group");
  }
  {
    torch::Tensor in = (full * static_cast<float>(r + 1)).detach().requires_grad_(true);
    torch::Tensor out = schedule::reduce_scatter_group(in, tp, 0);  // emulated on Gloo
    torch::Tensor grad = grad_of(in, out, torch::full({1, 4}, static_cast<float>(r + 1)));
    torch::Tensor expected = torch::cat({torch::ones({1, 4}), torch::full({1, 4}, 2.0f)}, 0);
    if (!near(out, (full * 3).narrow(0, r, 1)) || !near(grad, expected))
      return fail("reduce_scatter_group");
  }
  {
    torch::Tensor in = full.narrow(0, r, 1).clone().requires_grad_(true);
    torch::Tensor out =
        schedule::gather_reduce_scatter(in, tp, 0);  // all-gather; backward reduce-scatter
    torch::Tensor grad = grad_of(in, out, torch::full({2, 4}, static_cast<float>(r + 1)));
    if (!near(out, full) || !near(grad, torch::full({1, 4}, 3.0f)))
      return fail("gather_reduce_scatter");
  }
  if (tp.stats().calls < 10 || tp.stats().seconds <= 0)
    return fail("communication statistics were not kept");
  std::cout << "ok collectives rank " << g.rank << std::endl;
  return 0;
}

int schedules() {
  Layout layout;
  layout.tp = 2;
  layout.pp = 2;
  const dist::ParallelGroups g = dist::connect(dist::RankEnv::from_env(), layout);
  auto grads = [&](const std::string& schedule) {
    runners::TrainerSetup setup;
    setup.spec = models::model_preset("gpt-tiny");
    setup.template_name = "gpt";
    setup.config = Config::from_json(
        R"({"tp": 2, "pp": 2, "micro_batches": 4, "ckpt_ratio": 0.5, "pipeline_schedule": ")" +
        schedule + "\"}");
    runners::ParallelTrainer trainer(setup, g);
    torch::manual_seed(3);
    torch::Tensor tokens = torch::randint(setup.spec.vocab, {8, 17}, torch::kLong);
    trainer.step(tokens.narrow(1, 0, 16), tokens.narrow(1, 1, 16), 0, /*update=*/false);
    std::vector<torch::Tensor> out;
    for (const auto& [name, p] : trainer.parameters()) out.push_back(p.grad().clone());
    return out;
  };
  const auto gpipe = grads("gpipe"), one_f_one_b = grads("1f1b");
  if (gpipe.size() != one_f_one_b.size() || gpipe.empty()) return fail("different parameter sets");
  for (size_t i = 0; i < gpipe.size(); ++i) {
    if (!torch::equal(gpipe[i], one_f_one_b[i]))
      return fail("gradient " + std::to_string(i) + " differs");
  }
  std::cout << "ok schedules rank " << g.rank << ": " << gpipe.size() << " gradients identical"
            << std::endl;
  return 0;
}

int masked_pipeline() {
  Layout layout;
  layout.pp = 2;
  const dist::ParallelGroups g = dist::connect(dist::RankEnv::from_env(), layout);
  auto make = [] {
    torch::manual_seed(4);
    return testing::MaskedModel(4, /*dropout=*/0.0);
  };
  auto loss = [](const torch::Tensor& logits, const torch::Tensor& targets) {
    return torch::nn::functional::cross_entropy(
        logits.reshape({-1, testing::MaskedModelImpl::kVocab}), targets.reshape({-1}));
  };
  torch::manual_seed(8);
  const torch::Tensor tokens = testing::masked_tokens(4, 6);
  // The reference: the whole model in this process.
  testing::MaskedModel whole = make();
  loss(std::get<0>(whole->forward(tokens)), tokens).backward();
  std::map<std::string, torch::Tensor> expected;
  for (const auto& p : whole->named_parameters()) expected[p.key()] = p.value().grad();

  testing::MaskedModel staged = make();
  const schedule::StagePlan plan = schedule::plan_stages(*staged, {"h.1"});
  for (const char* schedule : {"gpipe", "1f1b"}) {
    for (auto& p : staged->parameters()) p.mutable_grad() = torch::Tensor();
    schedule::PipelineRunner runner(staged.ptr(), plan, g.pp,
                                    {2, schedule::parse_pipeline_schedule(schedule)});
    runner.run(tokens, tokens, loss, 0, 0);
    const auto mine = schedule::stage_parameters(*staged, plan, g.pp_rank());
    if (mine.empty()) return fail("stage " + std::to_string(g.pp_rank()) + " has no parameters");
    for (const auto& [name, p] : mine) {
      if (!p.grad().defined()) return fail(std::string(schedule) + ": no gradient for " + name);
      if (!torch::allclose(p.grad(), expected.at(name), 1e-5, 1e-6))
        return fail(std::string(schedule) + ": gradient of " + name + " differs");
    }
  }
  std::cout << "ok masked_pipeline stage " << g.pp_rank() << ": gradients as in one process"
            << std::endl;
  return 0;
}

// The others must fail with a clear error, not hang.
int fault(bool hang) {
  const dist::RankEnv env = dist::RankEnv::from_env();
  Layout layout;
  layout.dp = env.world_size;
  const dist::ParallelGroups g = dist::connect(env, layout);
  if (g.rank == 1) {
    if (!hang) std::exit(3);
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    torch::Tensor x = torch::ones({4});
    g.dp->all_reduce(x);
  } catch (const Error& e) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "failed after " << s << " s: " << e.what() << std::endl;
    return 0;
  }
  return fail("the collective succeeded without its peer");
}

// An all-gather that runs out of memory under the budget: the error keeps its type (the workload
// records such a trial as oom, not runtime_error) and names the collective.
int collective_oom() {
  const dist::RankEnv env = dist::RankEnv::from_env();
  Layout layout;
  layout.tp = env.world_size;
  const dist::ParallelGroups g = dist::connect(env, layout);
  runners::TrackingAllocator& allocator = runners::TrackingAllocator::instance();
  // 4 MiB: the gathered output takes 8 more, and Gloo gathers into a flat buffer of 8 more.
  torch::Tensor x = torch::ones({1 << 20});
  allocator.set_budget(allocator.live_bytes() + (12 << 20));  // the output fits, Gloo's buffer not
  try {
    g.tp->all_gather(x);
  } catch (const c10::OutOfMemoryError& e) {
    const std::string what = e.what();
    std::cout << "out of memory: " << what.substr(0, what.find('\n')) << std::endl;
    return 0;
  } catch (const std::exception& e) {
    return fail(std::string("not an out-of-memory error: ") + e.what());
  }
  return fail("the all-gather fit in the budget");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  torch::set_num_threads(1);
  try {
    if (mode == "collectives") return collectives();
    if (mode == "schedules") return schedules();
    if (mode == "masked_pipeline") return masked_pipeline();
    if (mode == "die") return fault(false);
    if (mode == "hang") return fault(true);
    if (mode == "collective_oom") return collective_oom();
  } catch (const std::exception& e) {
    return fail(std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
  }
  return fail("unknown mode '" + mode + "'");
}
