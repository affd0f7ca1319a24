#include <torch/csrc/dynamo/compiled_autograd.h>

#include <cctype>
#include <mutex>
#include <unordered_map>

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
    const std::vector<bool>& outputs_maybe_defined,
    bool traceable) {
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
  iface->bind_function(py_compiler, fn_name, fn, schema, traceable);
  return iface->call_function(
      py_compiler, fn_name, grads, packed, output_metadata);
}

std::string functional_op_name(const std::string& base, functional_apply_t fn) {
  static std::mutex mutex;
  static std::unordered_map<functional_apply_t, std::string> names;
  static std::unordered_map<std::string, size_t> taken;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = names.find(fn);
  if (it != names.end()) {
    return it->second;
  }
  std::string name;
  bool underscore = false;
  for (char c : base) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name += c;
      underscore = false;
    } else if (!underscore && !name.empty()) {
      name += '_';
      underscore = true;
    }
  }
  while (!name.empty() && name.back() == '_') {
    name.pop_back();
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    name = "fn_" + name;
  }
  const size_t n = taken[name]++;
  if (n > 0) {
    name += "_" + std::to_string(n);
  }
  names.emplace(fn, name);
  return name;
}

namespace {
// Target of the valid edges of a node rebuilt by a functional; only the
// edges' validity is read, the node itself never runs.
struct NeedsInputGradMarker : public Node {
  variable_list apply(variable_list&& /*inputs*/) override {
    TORCH_INTERNAL_ASSERT(
        false, "compiled autograd: NeedsInputGradMarker must never run");
  }
};
} // namespace

edge_list needs_input_grad_edges(const std::vector<bool>& needs_input_grad) {
  static const std::shared_ptr<Node> marker =
      std::make_shared<NeedsInputGradMarker>();
  edge_list edges;
  edges.reserve(needs_input_grad.size());
  for (bool needed : needs_input_grad) {
    edges.emplace_back(needed ? marker : nullptr, 0);
  }
  return edges;
}

} // namespace torch::dynamo::autograd
