#include "schedule/language/verify.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <torch/utils.h>

#include "schedule/runtime/keyed_dropout.h"

namespace slapo::schedule {

namespace {

TensorDiff diff(const std::string& name, const torch::Tensor& ref, const torch::Tensor& got) {
  TensorDiff d;
  d.name = name;
  if (!ref.defined() || !got.defined()) {
    d.max_abs = (ref.defined() == got.defined()) ? 0 : INFINITY;
    return d;
  }
  if (ref.sizes() != got.sizes()) {
    d.max_abs = INFINITY;
    return d;
  }
  d.max_abs = (ref.to(torch::kDouble) - got.to(torch::kDouble)).abs().max().item<double>();
  d.max_ref = ref.to(torch::kDouble).abs().max().item<double>();
  return d;
}

std::pair<torch::Tensor, torch::Tensor> run_once(torch::nn::Module& model, const ForwardLoss& run,
                                                 uint64_t seed) {
  model.train();
  model.zero_grad();
  torch::manual_seed(seed);
  // Keyed dropout draws from (step, sample): both models get the same key, so the same masks.
  DropoutScope scope(seed, 0);
  auto [output, loss] = run(model);
  loss.backward();
  return {output.detach(), loss.detach()};
}

}  // namespace

VerifyReport verify(torch::nn::Module& original, torch::nn::Module& scheduled,
                    const ForwardLoss& run, uint64_t seed) {
  VerifyReport report;
  auto [out_a, loss_a] = run_once(original, run, seed);
  auto [out_b, loss_b] = run_once(scheduled, run, seed);
  report.output = diff("output", out_a, out_b);
  report.loss = diff("loss", loss_a, loss_b);
  std::map<std::string, torch::Tensor> grads_b;
  for (const auto& p : scheduled.named_parameters()) grads_b[p.key()] = p.value().grad();
  std::set<std::string> matched;
  for (const auto& p : original.named_parameters()) {
    auto it = grads_b.find(p.key());
    if (it == grads_b.end()) {
      report.unmatched.push_back(p.key() + " (original only)");
      continue;
    }
    matched.insert(p.key());
    report.grads.push_back(diff(p.key(), p.value().grad(), it->second));
  }
  for (const auto& [name, g] : grads_b) {
    if (!matched.count(name)) report.unmatched.push_back(name + " (scheduled only)");
  }
  return report;
}

double VerifyReport::max_grad_diff() const {
  double m = 0;
  for (const auto& g : grads) m = std::max(m, g.max_abs);
  return m;
}

bool VerifyReport::within(double tolerance) const {
  return output.max_abs <= tolerance && loss.max_abs <= tolerance && max_grad_diff() <= tolerance;
}

std::string VerifyReport::to_string(size_t top) const {
  std::ostringstream out;
  out.precision(3);
  out << std::scientific;
  out << "output  max |diff| " << output.max_abs << "  (max |value| " << output.max_ref << ")\n";
  out << "loss    max |diff| " << loss.max_abs << "  (value " << loss.max_ref << ")\n";
  std::vector<TensorDiff> sorted = grads;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.max_abs > b.max_abs; });
  out << "gradients: " << grads.size() << " compared, largest differences:\n";
  for (size_t i = 0; i < sorted.size() && i < top; ++i) {
    out << "  " << sorted[i].max_abs << "  " << sorted[i].name << "  (max |grad| "
        << sorted[i].max_ref << ")\n";
  }
  if (!unmatched.empty()) {
    out << "not compared (" << unmatched.size() << "):";
    for (const auto& u : unmatched) out << " " << u;
    out << "\n";
  }
  return out.str();
}

}  // namespace slapo::schedule
