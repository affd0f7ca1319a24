#include <torch/csrc/autograd/functions/tensor.h>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/dynamo/compiled_autograd.h>

#include <ATen/ATen.h>
#include <c10/util/irange.h>

#include <memory>
#include <stdexcept>
#include <utility>

namespace torch::autograd {

using torch::dynamo::autograd::ivalue_list;
using torch::dynamo::autograd::IValuePacker;
using torch::dynamo::autograd::PackedArgs;
using torch::dynamo::autograd::PackedArgsBuilder;
using torch::dynamo::autograd::proxy_functional_call;

static variable_list CopyBackwards_apply_functional(
    variable_list&& grads,
    std::array<bool, 2> needs_input_grad,
    const c10::TensorOptions& src_options) {
  check_input_variables("CopyBackwards", grads, 1, -1, true);
  auto grad = c10::MaybeOwned<at::Tensor>::borrowed(grads[0]);
  variable_list grad_inputs(2);
  if (grad->defined()) {
    if (needs_input_grad[0]) {
      grad_inputs[0] = at::zeros_like(*grad, LEGACY_CONTIGUOUS_MEMORY_FORMAT);
    }
    if (needs_input_grad[1]) {
      // Handle R->C copies without raising a warning
      const auto src_type = src_options.dtype().toScalarType();
      if (!c10::isComplexType(src_type) && grad->is_complex()) {
        grad = c10::MaybeOwned<at::Tensor>::owned(at::real(grads[0]));
      }

      at::DeviceGuard device_guard(src_options.device());
      grad_inputs[1] = grad->to(src_options);
    }
  }
  return grad_inputs;
}

auto CopyBackwards::apply(variable_list&& grads) -> variable_list {
  return CopyBackwards_apply_functional(
      std::move(grads),
      {task_should_compute_output(0), task_should_compute_output(1)},
      src_options);
}

void CopyBackwards::compiled_args(CompiledNodeArgs& args) {
  args.collect(src_options);
}
// [functional autograd] What ops.CopyBackwards runs: unpacks what
// CopyBackwards::apply_with_saved packed and calls the same functional as
// apply, on FakeTensors when the compiled autograd graph is traced and on real
// tensors at runtime.
static variable_list CopyBackwards_apply_functional_ivalue(
    const variable_list& grads,
    const ivalue_list& packed) {
  PackedArgs packed_reader(packed);
  auto needs_input_grad = packed_reader.unpack<std::array<bool, 2>>();
  auto src_options = packed_reader.unpack<c10::TensorOptions>();
  packed_reader.done();
  return CopyBackwards_apply_functional(
      variable_list(grads), needs_input_grad, src_options);
}

// Compiled autograd's capture records ONE opaque call ops.CopyBackwards
// instead of tracing the copy's backward (zeros_like, real(), to()) on fake
// tensors, which would bake their metadata into the graph.
variable_list CopyBackwards::apply_with_saved(
    const variable_list& grads,
    SwapSavedVariables& saved) {
  saved.before(src_options);
  static const std::vector<at::TypePtr> schema = {
      IValuePacker<std::array<bool, 2>>::packed_type(),
      IValuePacker<c10::TensorOptions>::packed_type(),
  };
  PackedArgsBuilder packed;
  packed.pack<std::array<bool, 2>>(
      {task_should_compute_output(0), task_should_compute_output(1)});
  packed.pack<c10::TensorOptions>(src_options);
  // both outputs are undefined when the incoming grad is
  const bool grad_defined = !grads.empty() && grads[0].defined();
  auto result = proxy_functional_call(
      saved,
      *this,
      "CopyBackwards",
      &CopyBackwards_apply_functional_ivalue,
      schema,
      grads,
      std::move(packed.stack),
      std::vector<bool>(num_outputs(), grad_defined));
  saved.after(src_options);
  return result;
}

CopySlices::CopySlices(
    const Variable& base_var,
    at::TensorGeometry view_,
    std::unique_ptr<ViewFunc> view_fn_,
    std::shared_ptr<Node> fn_)
    : Node(),
      base(base_var),
      view(std::move(view_)),
      view_fn(std::move(view_fn_)),
      fn(std::move(fn_)) {
  // Take the next_edges of fn as our own, except for index 0 which goes
  // to base instead of the view.
  add_input_metadata(base_var);
  const auto num_outputs = fn->num_outputs();
  next_edges_.reserve(num_outputs);
  add_next_edge(impl::gradient_edge(base_var));
  for (const auto i : c10::irange(1, num_outputs)) {
    add_next_edge(fn->next_edge(i));
  }
}

// See Note [View + Inplace update for view tensor] For more details on this
// block.  Since the gradient edge for the 0th input is different between
// `self` and `fn`, make sure that the one from `fn` has the same metadata in
// the current GraphTask's exec_info as the one on `self`.  Shared by
// apply_impl and apply_with_saved.
static void sync_fn_edge_exec_info(const Node& self, const Node& fn) {
  const auto exec_info = get_current_graph_task_exec_info();
  if (exec_info && !exec_info->empty()) {
    const auto& fn_edge = fn.next_edge(0);
    const auto& this_edge = self.next_edge(0);
    TORCH_INTERNAL_ASSERT(fn_edge.is_valid() == this_edge.is_valid());
    if (fn_edge.is_valid()) {
      const auto fn_next_node = fn_edge.function.get();
      auto it = exec_info->find(fn_next_node);
      if (it == exec_info->end()) {
        // Node is not in the exec_info already
        if (self.task_should_compute_output(0)) {
          // And we need gradient for the corresponding output
          add_node_to_current_graph_task_exec_info(fn_next_node);
          // There is no need to remove this after execution because we are
          // guaranteed that self.next_edge(0) must be in the history of
          // fn.next_edge(0) (we cannot easily assert this as it might be far
          // away if there were many chained views). This means that, since
          // fn.next_edge(0) was not needed (no exec_info entry for it), we
          // know that nothing downstream of fn.next_edge(0) is needed either
          // (otherwise the whole path from that Node to self.next_edge(0)
          // would be needed as well). This means that no other Node will ever
          // look at fn.next_edge(0) metadata and thus there is no need to
          // clean them up.
        }
      } else {
        TORCH_INTERNAL_ASSERT(
            it->second.should_execute() == self.task_should_compute_output(0));
      }
    }
  }
}

// common code between apply/apply_with_saved
template <typename T>
inline variable_list CopySlices::apply_impl(
    variable_list&& inputs,
    const T& call_fn) {
  check_input_variables("CopySlices", inputs, 1, -1, true);
  auto& grad = inputs[0];
  if (!grad.defined()) {
    return variable_list(num_outputs());
  }

  // Acquire lock to here protect thread safety on fn
  // see Note [Thread Safety on Autograd Node]
  std::lock_guard<std::mutex> lock(mutex_);

  if (!fn) {
    throw std::runtime_error(ERR_BACKWARD_TWICE);
  }

  auto result =
      grad.new_empty_strided_symint(base.sym_sizes(), base.sym_strides());
  result.copy_(grad);

  at::Tensor grad_slice;
  if (view_fn) {
    grad_slice = (*view_fn)(result);
  } else {
    auto offset = view.sym_storage_offset() - base.sym_storage_offset();
    grad_slice =
        result.as_strided_symint(view.sym_sizes(), view.sym_strides(), offset);
  }

  sync_fn_edge_exec_info(*this, *fn);

  // Sanity check that the graph was never modified after the fact (it is
  // read-only!)
  TORCH_INTERNAL_ASSERT(num_outputs() == fn->num_outputs());
  for (const auto i : c10::irange(1, this->num_outputs())) {
    TORCH_INTERNAL_ASSERT(
        fn->next_edge(i).function.get() == this->next_edge(i).function.get());
  }

  // TODO: We clone grad_slice because we modify it below and "fn" might save
  // it for the backward of res. We might be able to avoid the clone() if
  // double-backprop is disabled.
  auto res = call_fn({grad_slice.clone(at::MemoryFormat::Contiguous)});

  variable_list grad_inputs(num_outputs());
  for (const auto i : c10::irange(res.size())) {
    if (task_should_compute_output(i)) {
      if (!res[i].defined()) {
        // If the output is not defined, treat it as if it was a zero tensor.
        // This can happen if users define a custom Function.
        continue;
      }
      if (i == 0) {
        grad_slice.copy_(res[i]);
        // NOLINTNEXTLINE(clang-analyzer-cplusplus.Move)
        grad_inputs[i] = std::move(result); // NOLINT(bugprone-use-after-move)
      } else {
        grad_inputs[i] = std::move(res[i]);
      }
    }
  }

  return grad_inputs;
}

void CopySlices::release_variables() {
  // Acquire lock to here protect thread safety on fn
  std::lock_guard<std::mutex> lock(mutex_);
  fn = nullptr;
}

void CopySlices::compiled_args(CompiledNodeArgs& args) {
  if (view_fn) {
    // [compiled autograd] A view_fn (view replay on, a base without
    // as_strided, view_as_real...) is a C++ closure: nothing describes it to
    // compiled autograd, so this node runs eagerly in the graph, its own
    // apply_impl on the real grads (see the nodes that run eagerly in
    // python_compiled_autograd.cpp).  Said, with the default's own error,
    // before anything is collected.
    Node::compiled_args(args);
  }
  TORCH_INTERNAL_ASSERT((bool)fn);
  args.collect(base);
  args.collect(view);
  args.collect(fn);
  fn->compiled_args(args);
}

// [functional autograd] What ops.CopySlices_prologue runs: allocate the
// base-shaped grad, copy the incoming grad into it, and take the (cloned) slice
// of it that `fn` gets, as apply_impl does.  packed: base sizes, base strides,
// view sizes, view strides, offset of the view into the base.
static variable_list CopySlices_prologue_functional(
    const variable_list& grads,
    const ivalue_list& packed) {
  PackedArgs r(packed);
  auto base_sizes = r.unpack<std::vector<c10::SymInt>>();
  auto base_strides = r.unpack<std::vector<c10::SymInt>>();
  auto view_sizes = r.unpack<std::vector<c10::SymInt>>();
  auto view_strides = r.unpack<std::vector<c10::SymInt>>();
  auto offset = r.unpack<c10::SymInt>();
  r.done();
  TORCH_INTERNAL_ASSERT(grads.size() == 1);
  if (!grads[0].defined()) {
    // the grad was a dummy at capture and is undefined at runtime (a Python
    // backward returned None): as apply_impl, nothing flows to base
    return {at::Tensor(), at::Tensor()};
  }
  auto result = grads[0].new_empty_strided_symint(base_sizes, base_strides);
  result.copy_(grads[0]);
  auto grad_slice = result.as_strided_symint(view_sizes, view_strides, offset);
  return {result, grad_slice.clone(at::MemoryFormat::Contiguous)};
}

// [functional autograd] What ops.CopySlices_epilogue runs: copy fn's grad for
// the view back into its slice of the base-shaped grad, and return that grad.
// grads: [the prologue's result, fn's grad 0]; packed: view sizes, view
// strides, offset.  The result is a fresh tensor of the prologue's that
// nothing else uses, so it is updated in place, as in apply_impl.
static variable_list CopySlices_epilogue_functional(
    const variable_list& grads,
    const ivalue_list& packed) {
  PackedArgs r(packed);
  auto view_sizes = r.unpack<std::vector<c10::SymInt>>();
  auto view_strides = r.unpack<std::vector<c10::SymInt>>();
  auto offset = r.unpack<c10::SymInt>();
  r.done();
  TORCH_INTERNAL_ASSERT(grads.size() == 2);
  at::Tensor result = grads[0];
  if (!result.defined()) {
    return {at::Tensor()}; // the prologue's grad was undefined
  }
  if (!grads[1].defined()) {
    // fn's grad 0 undefined at runtime: apply_impl treats it as zero and
    // leaves the base-shaped grad out
    return {at::Tensor()};
  }
  result.as_strided_symint(view_sizes, view_strides, offset).copy_(grads[1]);
  return {result};
}

static torch::autograd::InputMetadata copy_slices_metadata(
    const at::Tensor& like,
    c10::SymIntArrayRef sizes) {
  return torch::autograd::InputMetadata(
      like.options(),
      MetadataShape(SymIntSmallVec(sizes.begin(), sizes.end())),
      /*is_tensor_subclass=*/false,
      /*is_nested=*/false);
}

// Compiled autograd's capture records CopySlices as three opaque calls
// instead of tracing apply_impl on fake tensors with base's and view's
// metadata: ops.CopySlices_prologue(grad, geometry) -> (result, grad slice),
// then fn (itself an opaque call), then ops.CopySlices_epilogue(result, fn's
// grad 0, view geometry) -> result.  The geometry is the SavedVariables'
// (sizes lifted by compiled_args), never the metadata of the fake grads.
// (With a view_fn the node runs eagerly instead: see compiled_args.)
variable_list CopySlices::apply_with_saved(
    const variable_list& grads,
    SwapSavedVariables& saved) {
  check_input_variables("CopySlices", grads, 1, -1, true);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fn) {
    throw std::runtime_error(ERR_BACKWARD_TWICE);
  }
  TORCH_INTERNAL_ASSERT(!view_fn);
  // before/after in every case, also for an undefined grad: compiled_args
  // collected base's and view's sizes, and the nodes after this one read
  // theirs from where these end
  saved.before(base);
  saved.before(view);
  if (!grads[0].defined()) {
    saved.after(base);
    saved.after(view);
    return variable_list(num_outputs());
  }
  const auto* iface = torch::dynamo::autograd::getPyCompilerInterface();
  TORCH_INTERNAL_ASSERT(iface != nullptr);
  PyObject* py_compiler = saved.get_py_compiler();
  using SymInts = std::vector<c10::SymInt>;
  const auto offset = view.sym_storage_offset() - base.sym_storage_offset();
  static const std::vector<at::TypePtr> prologue_schema = {
      IValuePacker<SymInts>::packed_type(),
      IValuePacker<SymInts>::packed_type(),
      IValuePacker<SymInts>::packed_type(),
      IValuePacker<SymInts>::packed_type(),
      IValuePacker<c10::SymInt>::packed_type(),
  };
  static const std::vector<at::TypePtr> epilogue_schema = {
      IValuePacker<SymInts>::packed_type(),
      IValuePacker<SymInts>::packed_type(),
      IValuePacker<c10::SymInt>::packed_type(),
  };
  auto to_vec = [](c10::SymIntArrayRef a) {
    return SymInts(a.begin(), a.end());
  };
  iface->bind_function(
      py_compiler,
      "CopySlices_prologue",
      &CopySlices_prologue_functional,
      prologue_schema,
      /*traceable=*/true);
  iface->bind_function(
      py_compiler,
      "CopySlices_epilogue",
      &CopySlices_epilogue_functional,
      epilogue_schema,
      /*traceable=*/true);
  PackedArgsBuilder prologue_args;
  prologue_args.pack<SymInts>(to_vec(base.sym_sizes()));
  prologue_args.pack<SymInts>(to_vec(base.sym_strides()));
  prologue_args.pack<SymInts>(to_vec(view.sym_sizes()));
  prologue_args.pack<SymInts>(to_vec(view.sym_strides()));
  prologue_args.pack<c10::SymInt>(offset);
  variable_list prologue_out = iface->call_function(
      py_compiler,
      "CopySlices_prologue",
      {grads[0]},
      prologue_args.stack,
      {copy_slices_metadata(grads[0], base.sym_sizes()),
       copy_slices_metadata(grads[0], view.sym_sizes())});
  TORCH_INTERNAL_ASSERT(prologue_out.size() == 2);

  sync_fn_edge_exec_info(*this, *fn);
  // Sanity check that the graph was never modified after the fact (it is
  // read-only!), as apply_impl does.
  TORCH_INTERNAL_ASSERT(num_outputs() == fn->num_outputs());
  for (const auto i : c10::irange(1, this->num_outputs())) {
    TORCH_INTERNAL_ASSERT(
        fn->next_edge(i).function.get() == this->next_edge(i).function.get());
  }
  auto res = fn->apply_with_saved({prologue_out[1]}, saved);

  variable_list grad_inputs(num_outputs());
  for (const auto i : c10::irange(res.size())) {
    if (!task_should_compute_output(i) || !res[i].defined()) {
      continue;
    }
    if (i == 0) {
      PackedArgsBuilder epilogue_args;
      epilogue_args.pack<SymInts>(to_vec(view.sym_sizes()));
      epilogue_args.pack<SymInts>(to_vec(view.sym_strides()));
      epilogue_args.pack<c10::SymInt>(offset);
      grad_inputs[0] = iface->call_function(
          py_compiler,
          "CopySlices_epilogue",
          {prologue_out[0], res[0]},
          epilogue_args.stack,
          {copy_slices_metadata(prologue_out[0], base.sym_sizes())})[0];
    } else {
      grad_inputs[i] = std::move(res[i]);
    }
  }
  saved.after(base);
  saved.after(view);
  return grad_inputs;
}

auto CopySlices::apply(variable_list&& inputs1) -> variable_list {
  return apply_impl(std::move(inputs1), [this](variable_list&& inputs2) {
    return (*fn)(std::move(inputs2));
  });
}

} // namespace torch::autograd
