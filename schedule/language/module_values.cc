#include "schedule/language/module_values.h"

#include <array>

#include "core/error.h"

namespace slapo::schedule {

namespace {

using torch::nn::AnyValue;

// The argument as the forward's declared type: AnyModule compares types exactly.
AnyValue argument(const at::Tensor& x, InputKind kind) {
  switch (kind) {
    case InputKind::kTensor: return AnyValue(at::Tensor(x));
    case InputKind::kOptional:
      return AnyValue(x.defined() ? c10::optional<at::Tensor>(x) : c10::optional<at::Tensor>());
    case InputKind::kStdOptional:
      return AnyValue(x.defined() ? std::optional<at::Tensor>(x) : std::optional<at::Tensor>());
  }
  return AnyValue(at::Tensor(x));
}

AnyValue call_any(torch::nn::AnyModule& m, std::vector<AnyValue>& a) {
  // AnyModule takes its arguments as a parameter pack: one call per count.
  switch (a.size()) {
    case 1: return m.any_forward(std::move(a[0]));
    case 2: return m.any_forward(std::move(a[0]), std::move(a[1]));
    case 3: return m.any_forward(std::move(a[0]), std::move(a[1]), std::move(a[2]));
    case 4:
      return m.any_forward(std::move(a[0]), std::move(a[1]), std::move(a[2]), std::move(a[3]));
    case 5:
      return m.any_forward(std::move(a[0]), std::move(a[1]), std::move(a[2]), std::move(a[3]),
                           std::move(a[4]));
    case 6:
      return m.any_forward(std::move(a[0]), std::move(a[1]), std::move(a[2]), std::move(a[3]),
                           std::move(a[4]), std::move(a[5]));
    case 7:
      return m.any_forward(std::move(a[0]), std::move(a[1]), std::move(a[2]), std::move(a[3]),
                           std::move(a[4]), std::move(a[5]), std::move(a[6]));
    default:
      static_assert(kMaxValueInputs == 8, "one case per input count");
      return m.any_forward(std::move(a[0]), std::move(a[1]), std::move(a[2]), std::move(a[3]),
                           std::move(a[4]), std::move(a[5]), std::move(a[6]), std::move(a[7]));
  }
}

template <typename Tuple, size_t... I>
Values tuple_values(Tuple&& t, std::index_sequence<I...>) {
  return Values{std::get<I>(std::move(t))...};
}

template <size_t N>
Values result_of_tuple(AnyValue& result) {
  using Tuple = decltype(std::tuple_cat(std::declval<std::array<at::Tensor, N>>()));
  return tuple_values(std::move(result.get<Tuple>()), std::make_index_sequence<N>{});
}

}  // namespace

Values forward_values(torch::nn::AnyModule& module, const Signature& signature,
                      const Values& inputs, const std::string& where) {
  SLAPO_CHECK(signature.by_values, ErrorCode::kInvalidArgument, "'", where,
              "': a forward called through a list of tensors takes 1 to ", kMaxValueInputs,
              " tensors or optional tensors and returns a tensor or a tuple of up to ",
              kMaxValueOutputs, "; this one is ", signature.text);
  SLAPO_CHECK(inputs.size() == signature.inputs.size(), ErrorCode::kInvalidArgument, "'", where,
              "': its forward (", signature.text, ") takes ", signature.inputs.size(),
              " inputs, given ", inputs.size());
  std::vector<AnyValue> args;
  args.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    args.push_back(argument(inputs[i], signature.inputs[i]));
  AnyValue result = call_any(module, args);
  if (!signature.tuple_output) return {result.get<at::Tensor>()};
  switch (signature.outputs) {
    case 1: return result_of_tuple<1>(result);
    case 2: return result_of_tuple<2>(result);
    case 3: return result_of_tuple<3>(result);
    default:
      static_assert(kMaxValueOutputs == 4, "one case per output count");
      return result_of_tuple<4>(result);
  }
}

}  // namespace slapo::schedule
