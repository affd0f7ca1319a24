#include <torch/csrc/dynamo/compiled_autograd.h>

// See [Note: Functional autograd in compiled autograd] in compiled_autograd.h.
// This file is part of libtorch_cpu: it must not depend on Python.

namespace torch::dynamo::autograd {

namespace {
std::unique_ptr<PyCompilerInterface>& py_compiler_interface() {
  static std::unique_ptr<PyCompilerInterface> impl;
  return impl;
}
} // namespace

const PyCompilerInterface* getPyCompilerInterface() {
  return py_compiler_interface().get();
}

void setPyCompilerInterface(std::unique_ptr<PyCompilerInterface> impl) {
  TORCH_INTERNAL_ASSERT(impl != nullptr);
  py_compiler_interface() = std::move(impl);
}

void resetPyCompilerInterface() {
  py_compiler_interface().reset();
}

variable_list proxy_functional_call(
    SwapSavedVariables& saved,
    const Node& node,
    const std::string& fn_name,
    functional_apply_t fn,
    const std::vector<at::TypePtr>& schema,
    const variable_list& grads,
    ivalue_list&& packed,
    const std::vector<bool>& outputs_maybe_defined) {
  const PyCompilerInterface* iface = getPyCompilerInterface();
  TORCH_INTERNAL_ASSERT(
      iface != nullptr,
      "compiled autograd: no PyCompilerInterface installed (is torch._C initialized?)");
  TORCH_INTERNAL_ASSERT(
      packed.size() == schema.size(),
      fn_name,
      ": packed ",
      packed.size(),
      " arguments but the schema has ",
      schema.size());
  const auto num_outputs = node.num_outputs();
  TORCH_INTERNAL_ASSERT(outputs_maybe_defined.size() == num_outputs);

  // Output metadata of the dummy outputs.  The capture loop has already
  // swapped the next edges' InputMetadata sizes for their symbolic versions
  // (SwapSavedVariables::before(edge_list)), so these carry no concrete
  // dynamic sizes.
  std::vector<std::optional<InputMetadata>> output_metadata(num_outputs);
  for (const auto i : c10::irange(num_outputs)) {
    if (!outputs_maybe_defined[i] || !node.task_should_compute_output(i)) {
      continue;
    }
    const Edge& edge = node.next_edge(i);
    output_metadata[i].emplace(edge.function->input_metadata(edge.input_nr));
  }

  PyObject* py_compiler = saved.get_py_compiler();
  iface->bind_function(py_compiler, fn_name, fn, schema);
  return iface->call_function(
      py_compiler, fn_name, grads, packed, output_metadata);
}

} // namespace torch::dynamo::autograd
