#pragma once
// Calling a module through a list of tensors, whatever its forward's signature — as long as every
// input is a tensor or an optional tensor and the result is a tensor or a tuple of tensors.
//
// The schedule's call policies (checkpoint, fork_rng, sync, trace) and the pipeline wrap a forward
// they know only by its slot: they see its inputs and outputs as `Values`, a vector of tensors in
// which an undefined tensor stands for an absent optional input (a mask that is not given). The
// Signature, taken from the forward's C++ type when the slot is added, says how to turn the list
// back into the exact argument types the module's forward takes (AnyModule checks them) and how
// many tensors its result holds:
//
//   Tensor forward(const Tensor& x)                                        1 in, 1 out
//   std::tuple<Tensor, Tensor> forward(const Tensor& x, c10::optional<Tensor> mask)  2 in, 2 out

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <torch/nn/modules/container/any.h>

namespace slapo::schedule {

using Values = std::vector<at::Tensor>;

// The most inputs a forward called through Values may take.
constexpr size_t kMaxValueInputs = 8;
// The most tensors its tuple result may hold.
constexpr size_t kMaxValueOutputs = 4;

// How one input is passed to the forward.
enum class InputKind {
  kTensor,       // Tensor, const Tensor& (may still be undefined)
  kOptional,     // c10::optional<Tensor> (LibTorch's)
  kStdOptional,  // std::optional<Tensor>
};

namespace detail {
template <typename A>
constexpr int input_kind() {
  using T = std::decay_t<A>;
  if constexpr (std::is_same_v<T, at::Tensor>)
    return static_cast<int>(InputKind::kTensor);
  else if constexpr (std::is_same_v<T, c10::optional<at::Tensor>>)
    return static_cast<int>(InputKind::kOptional);
  else if constexpr (std::is_same_v<T, std::optional<at::Tensor>>)
    return static_cast<int>(InputKind::kStdOptional);
  else
    return -1;
}

template <typename R>
struct OutputCount {
  static constexpr size_t value = 0;
};
template <>
struct OutputCount<at::Tensor> {
  static constexpr size_t value = 1;
};
template <typename... T>
struct OutputCount<std::tuple<T...>> {
  static constexpr size_t value =
      (std::is_same_v<T, at::Tensor> && ...) && sizeof...(T) >= 1 ? sizeof...(T) : 0;
};

inline const char* kind_text(int kind) {
  switch (kind) {
    case 0: return "const Tensor&";
    case 1: return "c10::optional<Tensor>";
    case 2: return "std::optional<Tensor>";
    default: return "?";
  }
}
}  // namespace detail

// The forward signature of a module type without its class: Tensor(const Tensor&).
template <typename T>
struct ForwardSignature;
template <typename C, typename R, typename... A>
struct ForwardSignature<R (C::*)(A...)> {
  using type = R(A...);
  using result = R;
  static constexpr size_t arity = sizeof...(A);
  static constexpr bool inputs_are_values = ((detail::input_kind<A>() >= 0) && ...);
  static std::vector<int> kinds() { return {detail::input_kind<A>()...}; }
};
template <typename C, typename R, typename... A>
struct ForwardSignature<R (C::*)(A...) const> : ForwardSignature<R (C::*)(A...)> {};

// What the schedule needs to know of a slot's forward to swap or wrap it safely.
struct Signature {
  std::type_index type = typeid(void);
  std::string text;               // readable: "Tensor(const Tensor&, c10::optional<Tensor>)"
  std::vector<InputKind> inputs;  // when by_values
  size_t outputs = 0;             // 1: a Tensor; n: a tuple of n tensors (when by_values)
  bool tuple_output = false;      // the result is a std::tuple (even of one tensor)
  // Every input is a tensor or an optional tensor, and the result a tensor or a tuple of them,
  // within kMaxValueInputs/kMaxValueOutputs: the forward can be called through Values.
  bool by_values = false;

  // A forward of tensors to one tensor: what a graph's subgraph call can stand for.
  bool plain_tensors() const {
    if (!by_values || tuple_output || outputs != 1) return false;
    for (InputKind k : inputs)
      if (k != InputKind::kTensor) return false;
    return true;
  }

  bool operator==(const Signature& other) const { return type == other.type; }
  bool operator!=(const Signature& other) const { return !(*this == other); }
};

// The signature of module class Impl (e.g. torch::nn::LinearImpl).
template <typename Impl>
Signature signature_of_impl() {
  using S = ForwardSignature<decltype(&Impl::forward)>;
  using R = typename S::result;
  Signature s;
  s.type = typeid(typename S::type);
  s.outputs = detail::OutputCount<R>::value;
  s.tuple_output = s.outputs > 0 && !std::is_same_v<R, at::Tensor>;
  s.by_values = S::inputs_are_values && s.outputs >= 1 && S::arity >= 1 &&
                S::arity <= kMaxValueInputs && s.outputs <= kMaxValueOutputs;
  if (!s.by_values) {
    s.text = std::string("forward of ") + typeid(Impl).name();
    return s;
  }
  if (s.tuple_output) {
    s.text = "std::tuple<Tensor";
    for (size_t i = 1; i < s.outputs; ++i) s.text += ", Tensor";
    s.text += ">(";
  } else {
    s.text = "Tensor(";
  }
  const std::vector<int> kinds = S::kinds();
  for (size_t i = 0; i < kinds.size(); ++i) {
    s.inputs.push_back(static_cast<InputKind>(kinds[i]));
    s.text += (i ? ", " : "") + std::string(detail::kind_text(kinds[i]));
  }
  s.text += ")";
  return s;
}

// The signature of a module holder (e.g. torch::nn::Linear).
template <typename Holder>
Signature signature_of() {
  return signature_of_impl<typename Holder::ContainedType>();
}

// Calls `module` (whose forward has `signature`) with `inputs`, one per forward input (an
// undefined tensor for an absent optional). Returns the result's tensors (one, or the tuple's).
// Throws Error(kInvalidArgument) naming `where` when the signature cannot be called by values or
// the count of inputs differs.
Values forward_values(torch::nn::AnyModule& module, const Signature& signature,
                      const Values& inputs, const std::string& where);

// One argument as a Values entry: a tensor, an optional tensor (undefined when absent), nullopt.
inline at::Tensor to_value(const at::Tensor& x) { return x; }
inline at::Tensor to_value(const c10::optional<at::Tensor>& x) {
  return x.has_value() ? *x : at::Tensor();
}
inline at::Tensor to_value(const std::optional<at::Tensor>& x) {
  return x.has_value() ? *x : at::Tensor();
}
inline at::Tensor to_value(c10::nullopt_t) { return at::Tensor(); }

// A result of type R (Tensor or std::tuple of tensors) from Values.
template <typename R>
struct FromValues;
template <>
struct FromValues<at::Tensor> {
  static at::Tensor get(Values&& values) { return std::move(values.at(0)); }
  static constexpr size_t count = 1;
};
template <typename... T>
struct FromValues<std::tuple<T...>> {
  static std::tuple<T...> get(Values&& values) {
    return get(std::move(values), std::index_sequence_for<T...>{});
  }
  template <size_t... I>
  static std::tuple<T...> get(Values&& values, std::index_sequence<I...>) {
    return std::tuple<T...>(std::move(values.at(I))...);
  }
  static constexpr size_t count = sizeof...(T);
};

}  // namespace slapo::schedule
