#include "schedule/runtime/collectives.h"

#include <torch/csrc/autograd/custom_function.h>

#include "core/error.h"

namespace slapo::schedule {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The communicator and axis travel through the autograd context as integers: the context keeps
// IValues only, and the communicator outlives every step that uses it.
void save(AutogradContext* ctx, Communicator& comm, int64_t axis) {
  ctx->saved_data["comm"] = reinterpret_cast<int64_t>(&comm);
  ctx->saved_data["axis"] = axis;
}
Communicator& comm_of(AutogradContext* ctx) {
  return *reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
}
int64_t axis_of(AutogradContext* ctx) { return ctx->saved_data["axis"].toInt(); }

at::Tensor reduced(const at::Tensor& x, Communicator& comm) {
  at::Tensor out = x.contiguous().clone();
  comm.all_reduce(out);
  return out;
}

int64_t normalized_axis(const at::Tensor& x, int64_t axis) {
  const int64_t dims = x.dim();
  const int64_t a = axis < 0 ? axis + dims : axis;
  SLAPO_CHECK(a >= 0 && a < dims, ErrorCode::kInvalidArgument, "collective: axis ", axis,
              " is out of range for a tensor of ", dims, " dimensions");
  return a;
}

struct CopyToGroup : torch::autograd::Function<CopyToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {reduced(grads[0], comm_of(ctx)), at::Tensor()};
  }
};

struct ReduceFromGroup : torch::autograd::Function<ReduceFromGroup> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, int64_t comm) {
    return reduced(x, *reinterpret_cast<Communicator*>(comm));
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], at::Tensor()};
  }
};

struct GatherFromGroup : torch::autograd::Function<GatherFromGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm, int64_t axis) {
    Communicator& c = *reinterpret_cast<Communicator*>(comm);
    save(ctx, c, axis);
    return all_gather_cat(x, c, axis);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {own_slice(grads[0], comm_of(ctx), axis_of(ctx)).contiguous(), at::Tensor(),
            at::Tensor()};
  }
};

struct SplitToGroup : torch::autograd::Function<SplitToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm, int64_t axis) {
    Communicator& c = *reinterpret_cast<Communicator*>(comm);
    save(ctx, c, axis);
    return own_slice(x, c, axis).contiguous();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {all_gather_cat(grads[0], comm_of(ctx), axis_of(ctx)), at::Tensor(), at::Tensor()};
  }
};

struct ReduceScatterGroup : torch::autograd::Function<ReduceScatterGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm, int64_t axis) {
    Communicator& c = *reinterpret_cast<Communicator*>(comm);
    save(ctx, c, axis);
    return own_slice(reduced(x, c), c, axis).contiguous();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {all_gather_cat(grads[0], comm_of(ctx), axis_of(ctx)), at::Tensor(), at::Tensor()};
  }
};

struct GatherReduceScatter : torch::autograd::Function<GatherReduceScatter> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm, int64_t axis) {
    Communicator& c = *reinterpret_cast<Communicator*>(comm);
    save(ctx, c, axis);
    return all_gather_cat(x, c, axis);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Communicator& c = comm_of(ctx);
    return {own_slice(reduced(grads[0], c), c, axis_of(ctx)).contiguous(), at::Tensor(),
            at::Tensor()};
  }
};

int64_t handle(Communicator& comm) { return reinterpret_cast<int64_t>(&comm); }

}  // namespace

at::Tensor all_gather_cat(const at::Tensor& x, Communicator& comm, int64_t axis) {
  if (comm.size() == 1) return x;
  const int64_t a = normalized_axis(x, axis);
  return at::cat(comm.all_gather(x.contiguous()), a);
}

at::Tensor own_slice(const at::Tensor& x, Communicator& comm, int64_t axis) {
  if (comm.size() == 1) return x;
  const int64_t a = normalized_axis(x, axis);
  SLAPO_CHECK(x.size(a) % comm.size() == 0, ErrorCode::kInvalidArgument, "collective on group '",
              comm.name(), "': size ", x.size(a), " along axis ", axis, " does not divide into ",
              comm.size(), " parts");
  const int64_t part = x.size(a) / comm.size();
  return x.narrow(a, comm.rank() * part, part);
}

at::Tensor copy_to_group(const at::Tensor& x, Communicator& comm) {
  if (comm.size() == 1) return x;
  return CopyToGroup::apply(x, handle(comm));
}
at::Tensor reduce_from_group(const at::Tensor& x, Communicator& comm) {
  if (comm.size() == 1) return x;
  return ReduceFromGroup::apply(x, handle(comm));
}
at::Tensor gather_from_group(const at::Tensor& x, Communicator& comm, int64_t axis) {
  if (comm.size() == 1) return x;
  return GatherFromGroup::apply(x, handle(comm), axis);
}
at::Tensor split_to_group(const at::Tensor& x, Communicator& comm, int64_t axis) {
  if (comm.size() == 1) return x;
  return SplitToGroup::apply(x, handle(comm), axis);
}
at::Tensor reduce_scatter_group(const at::Tensor& x, Communicator& comm, int64_t axis) {
  if (comm.size() == 1) return x;
  return ReduceScatterGroup::apply(x, handle(comm), axis);
}
at::Tensor gather_reduce_scatter(const at::Tensor& x, Communicator& comm, int64_t axis) {
  if (comm.size() == 1) return x;
  return GatherReduceScatter::apply(x, handle(comm), axis);
}

std::unique_ptr<SendHandle> LocalCommunicator::send(const at::Tensor&, int peer, int) {
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "send to rank ", peer, " in group '", name_,
             "' of one process");
}
void LocalCommunicator::recv(at::Tensor&, int peer, int) {
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "recv from rank ", peer, " in group '", name_,
             "' of one process");
}

}  // namespace slapo::schedule
