#pragma once
#include <ATen/TensorGeometry.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/util/flat_hash_map.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/input_metadata.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable_info.h>
#include <torch/csrc/utils/python_stub.h>
#include <torch/csrc/utils/torch_dispatch_mode.h>
#include <algorithm>
#include <typeindex>
#include <vector>

// see [Note: Compiled Autograd]

namespace torch::dynamo::autograd {
using namespace torch::autograd;

struct SizeInput {
  // Note: int value is still needed when dynamic to pass as an arg
  enum DynType : uint8_t { STATIC = 0, DYNAMIC = 1 };
  SizeInput(DynType dt, int64_t v) : dyn_type(dt), value(v) {}
  DynType dyn_type;
  int64_t value;
};

struct CacheKeyBuffer {
  CacheKeyBuffer(const uint8_t* key, uint16_t len) : data(new uint8_t[len]) {
    std::memcpy(data.get(), key, len);
  }
  const uint8_t* get() const {
    return data.get();
  }

 private:
  // NOLINTNEXTLINE(*c-array*)
  std::unique_ptr<uint8_t[]> data;
};

struct CacheKey {
  // Key to find the next node in the shadow graph.  We use C++ RTTI for the
  // type of the node (ntype), then a key generated with a visitor pattern.
  CacheKey(const std::type_index& ntype, const uint8_t* key, uint16_t len)
      : node_type(ntype), key_size(len), key(key) {}

  bool operator<(const CacheKey& other) const {
    if (node_type != other.node_type) {
      return node_type < other.node_type;
    }
    if (key_size != other.key_size) {
      return key_size < other.key_size;
    }
    return std::memcmp(key, other.key, key_size) < 0;
  }

  bool operator==(const CacheKey& other) const {
    return node_type == other.node_type && key_size == other.key_size &&
        std::memcmp(key, other.key, key_size) == 0;
  }

  size_t hash() const {
    // don't bother hashing the key data, common case 1 cache entry per node
    return std::hash<std::type_index>()(node_type) ^ key_size;
  }

  std::type_index node_type;
  uint16_t key_size;
  const uint8_t* key;
};

struct NodeCall {
  NodeCall(uint32_t id_, std::shared_ptr<Node> node_)
      : id(id_), node(std::move(node_)) {}

  void mark_output(int input_nr, int output_idx) {
    graph_output.emplace_back(input_nr, output_idx);
  }

  uint32_t id;
  std::shared_ptr<Node> node;
  std::vector<std::pair<int, int>> tensor_pre_hooks;
  std::vector<int> pre_hooks;
  std::vector<int> post_hooks;
  std::vector<int> post_acc_grad_hooks;
  std::vector<std::pair<int, int>> graph_output;
  bool needed = true;
  // (index in AutogradCompilerCall::retains_grad_hooks, input_nr) of each of
  // the node's retains_grad hooks, by input_nr
  std::vector<std::pair<int, int>> retains_grad_hooks;
  // The node's index in AutogradCompilerCall::eager_nodes if it runs eagerly
  // (its compiled_args raised before collecting anything), else -1
  int eager_index = -1;
  // Whether the captured graph unpacks this node's hooked saved variables
  // (see SavedUnpacks), and their indices there
  bool unpacks_saved_in_graph = false;
  std::vector<size_t> saved_unpacks;
  // Whether the node is generated from derivatives.yaml, so that its grads
  // have its inputs' sizes, broadcasting aside (see
  // CompiledNodeArgs::grads_sized_by_formula)
  bool grads_sized_by_formula = false;
};

struct NodeCalls : public std::unordered_map<Node*, NodeCall> {
  NodeCall& lookup(const std::shared_ptr<Node>& function) {
    auto it = find(function.get());
    if (it == end()) {
      it = emplace(function.get(), NodeCall(_next_id++, function)).first;
      nodes.emplace_back(function.get());
    }
    return it->second;
  }

  const NodeCall& lookup(uint32_t id) const {
    TORCH_INTERNAL_ASSERT(id < nodes.size());
    auto it = find(nodes[id]);
    TORCH_INTERNAL_ASSERT(it != end());
    return it->second;
  }

  void clear() {
    _next_id = 0;
    std::unordered_map<Node*, NodeCall>::clear();
    nodes.clear();
  }

 private:
  uint32_t _next_id = 0;
  std::vector<Node*> nodes;
};

struct TensorArg {
  // Represents a de-duplicated tensor that will be passed into the graph
  TensorArg(uint32_t i = 0) : id(i) {}
  uint32_t index() const {
    TORCH_INTERNAL_ASSERT(defined());
    return id - 1;
  }
  bool defined() const {
    return id != 0;
  }
  uint32_t id;
  at::Tensor proxy_tensor;
};

struct TensorArgs {
  // Manages a collection of TensorArgs and mappings from Tensors/SavedVariables
  // to them.  This also allows us to unpack SavedVariable exactly once and
  // store the unpacked Tensor.
  TensorArgs(const std::optional<size_t>& active_node_call_idx)
      : active_node_call_idx(active_node_call_idx) {}

  TensorArg& lookup(const at::Tensor& tensor, bool create = false) {
    if (!tensor.defined()) {
      return _undefined;
    }
    auto impl = tensor.unsafeGetTensorImpl();
    auto it = _args.find(impl);
    if (it == _args.end()) {
      TORCH_INTERNAL_ASSERT(create && inputs.size() == _next_id - 1);
      it = _args.emplace(impl, TensorArg(_next_id++)).first;
      inputs.emplace_back(tensor);
      if (active_node_call_idx.has_value()) {
        input_origins.emplace_back(active_node_call_idx.value());
      }
    }
    return it->second;
  }

  TensorArg& lookup(const SavedVariable& sv) {
    auto it = _saved_variables.find(&sv);
    TORCH_INTERNAL_ASSERT(it != _saved_variables.end());
    return *it->second;
  }

  TensorArg& add(const at::Tensor& tensor) {
    return lookup(tensor, true);
  }

  TensorArg& add(const SavedVariable& sv, const std::shared_ptr<Node>& node) {
    // TODO(jansel): Here we unpack the SavedVariable exactly once.  This might
    // fire SavedTensor hooks.  In the future we should try to put saved tensor
    // hooks into the graph.
    at::Tensor tensor = sv.unpack(node);
    TensorArg& arg = add(tensor);
    _saved_variables.emplace(&sv, &arg);
    return arg;
  }

  // the concrete tensors that will get passed into the graph as inputs
  std::vector<at::Tensor> inputs;
  // NodeCall id of each input, only when verbose logging is enabled
  std::vector<uint32_t> input_origins;

 private:
  // NOLINTNEXTLINE(cppcoreguidelines-avoid-const-or-ref-data-members)
  const std::optional<size_t>& active_node_call_idx;
  std::unordered_map<const c10::TensorImpl*, TensorArg> _args;
  // Every TensorArg from this is actually owned by _args (or _undefined) and
  // that's why we have an un-owned pointer here.
  std::unordered_map<const SavedVariable*, TensorArg*> _saved_variables;
  TensorArg _undefined;
  uint32_t _next_id = 1; // id=0 used by _undefined
};

struct LiftedIValueArg {
  LiftedIValueArg() = delete;
  LiftedIValueArg(const at::IValue* ptr)
      : actual_ptr(ptr), proxy(at::IValue::uninitialized()) {}

  const at::IValue* actual_ptr; // lifetime handled by autograd node
  at::IValue proxy;
};

struct LiftedIValueArgs {
  LiftedIValueArgs(const std::optional<size_t>& active_node_call_idx)
      : active_node_call_idx(active_node_call_idx) {}

  at::IValue& next_proxy(const at::IValue* actual_ptr) {
    TORCH_INTERNAL_ASSERT(next < args.size());
    auto& iv_arg = args.at(next++);
    TORCH_INTERNAL_ASSERT(iv_arg.actual_ptr == actual_ptr);
    return iv_arg.proxy;
  }

  void add(const at::IValue* iv) {
    args.emplace_back(iv);
    if (active_node_call_idx.has_value()) {
      args_origins.emplace_back(active_node_call_idx.value());
    }
  }

  std::vector<LiftedIValueArg> args;
  size_t next = 0;
  // NodeCall id of each arg, only when verbose logging is enabled
  std::vector<uint32_t> args_origins;

 private:
  // NOLINTNEXTLINE(cppcoreguidelines-avoid-const-or-ref-data-members)
  const std::optional<size_t>& active_node_call_idx;
};

// [compiled autograd] Saved variables unpacked by the graph.  A saved
// variable with saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks,
// checkpointing, offloading) is not unpacked at collection: that would run
// every unpack hook of the backward before its graph, and so recompute every
// checkpointed region (or reload every offloaded Tensor) at once.  The graph
// unpacks it instead, by index (ops.unpack_saved), where the node that reads
// it runs, as the engine would: the unpack hook is called on the packed value
// once per backward, at that point.  The first backward's capture unpacks
// each one for real (its dummy takes the value's dtype, device and rank), and
// that graph run takes the value it unpacked.  Only nodes whose capture
// records one opaque call and reads nothing of a saved value are eligible
// (NodeCall::unpacks_saved_in_graph); the others unpack at collection.
struct SavedUnpack {
  SavedUnpack(
      std::shared_ptr<Node> node_,
      const SavedVariable* sv_,
      bool is_output_)
      : node(std::move(node_)), sv(sv_), is_output(is_output_) {}
  at::Tensor unpack() {
    if (unpacked_at_capture.defined()) {
      return std::move(unpacked_at_capture);
    }
    return sv->unpack(is_output ? node : nullptr);
  }
  // the owner, which keeps sv alive until the graph ran
  std::shared_ptr<Node> node;
  const SavedVariable* sv;
  bool is_output;
  at::Tensor unpacked_at_capture;
  at::Tensor proxy_tensor;
};

struct SavedUnpacks {
  size_t add(
      const std::shared_ptr<Node>& node,
      const SavedVariable& sv,
      bool is_output) {
    auto [it, inserted] = index.emplace(&sv, entries.size());
    if (inserted) {
      entries.emplace_back(node, &sv, is_output);
      pending[node.get()]++;
    }
    return it->second;
  }
  // Unpacks the index-th one; once a node's last one is unpacked, releases
  // the node's saved variables if release_variables (the backward does not
  // retain its graph), as the engine does after running the node: what they
  // keep alive (a checkpointed region's inputs) goes then, not at the end.
  at::Tensor unpack(size_t idx) {
    SavedUnpack& entry = entries.at(idx);
    at::Tensor value = entry.unpack();
    auto it = pending.find(entry.node.get());
    if (it != pending.end() && --it->second == 0) {
      pending.erase(it);
      if (release_variables) {
        entry.node->release_variables();
      }
    }
    return value;
  }
  SavedUnpack* find(const SavedVariable& sv) {
    auto it = index.find(&sv);
    return it == index.end() ? nullptr : &entries[it->second];
  }
  std::vector<SavedUnpack> entries;
  std::unordered_map<const SavedVariable*, size_t> index;
  // per node, how many of its entries the graph has yet to unpack
  std::unordered_map<const Node*, size_t> pending;
  bool release_variables = false;
};

struct AutogradCompilerCall {
  AutogradCompilerCall(SizeInput::DynType default_dyn_type)
      : active_node_call_idx(std::nullopt),
        tensor_args(active_node_call_idx),
        lifted_ivalue_args(active_node_call_idx),
        default_dyn_type(default_dyn_type) {}
  void add_size_input(const c10::SymInt& s) {
    all_size_inputs.emplace_back(
        default_dyn_type, s.guard_int(__FILE__, __LINE__));
    if (active_node_call_idx.has_value()) {
      size_input_origins.emplace_back(active_node_call_idx.value());
    }
  }

  size_t emplace_hook(c10::SafePyObject&& fn) {
    hooks.emplace_back(std::move(fn));
    return hooks.size() - 1;
  }

  void set_active_node_call_idx(size_t node_call_idx) {
    active_node_call_idx = node_call_idx;
  }

  std::optional<size_t> active_node_call_idx;
  TensorArgs tensor_args;
  std::vector<SizeInput> all_size_inputs;
  LiftedIValueArgs lifted_ivalue_args;
  std::vector<int64_t> dyn_size_inputs;
  std::vector<c10::SafePyObject> hooks;
  NodeCalls node_calls;
  SizeInput::DynType default_dyn_type;
  // NodeCall id of each size, only when verbose logging is enabled
  std::vector<uint32_t> size_input_origins;
  // The retains_grad hooks (Tensor::retain_grad on a non-leaf) of this
  // backward's nodes, with the input_nr each one reads.  The hooks are C++
  // closures over the retained Tensor: the captured graph calls them back by
  // index (call_retains_grad_hook) while this backward runs.
  std::vector<std::pair<FunctionPreHook*, size_t>> retains_grad_hooks;
  // The nodes of this backward that cannot describe themselves to compiled
  // autograd (see NodeCall::eager_index): the captured graph runs each one
  // by index (ops.eager_node) while this backward runs.
  std::vector<std::shared_ptr<Node>> eager_nodes;
  // The hooked saved variables the captured graph unpacks by index
  // (ops.unpack_saved) while this backward runs.
  SavedUnpacks saved_unpacks;
};

class CompiledNodeArgs {
  // CompiledNodeArgs builds a representation of the constant values found
  // across all the nodes in the compiled graph, via 'collect' overloads. The
  // collected constants are specialized on by concatenation into a cache key.
  // Tensor, symint arguments (which are lifted to become graph inputs rather
  // than specialized on) are forwarded to the compiler and not included in the
  // key.
 public:
  void collect(const TensorArg& t) {
    collect_size(t.id);
    if (t.defined()) {
      const at::Tensor& tensor = _compiler.tensor_args.inputs[t.index()];
      // including these in the cache key means dynamo-level tensor guards can
      // be skipped
      collect(tensor.device());
      collect(tensor.dtype());
      collect(tensor.requires_grad());
    }
  }

  void collect(const at::Tensor& t) {
    collect(_compiler.tensor_args.add(t));
  }
  void collect(const SavedVariable& sv, bool is_output) {
    if (_node_call.unpacks_saved_in_graph) {
      const bool in_graph = sv.has_hooks();
      collect(in_graph);
      if (in_graph) {
        const size_t idx =
            _compiler.saved_unpacks.add(_node_call.node, sv, is_output);
        _node_call.saved_unpacks.emplace_back(idx);
        collect_size(idx);
        return;
      }
    }
    collect(
        _compiler.tensor_args.add(sv, is_output ? _node_call.node : nullptr));
  }
  void collect(const c10::SymInt& t) {
    _compiler.add_size_input(t);
  }
  void collect(const std::vector<SavedVariable>& t, bool is_output) {
    collect_size(t.size());
    for (const SavedVariable& i : t) {
      collect(i, is_output);
    }
  }
  template <typename T>
  void collect(const std::vector<T>& t) {
    collect_size(t.size());
    for (const T& i : t) {
      collect(i);
    }
  }
  void collect(const c10::ArrayRef<SavedVariable>& t, bool is_output) {
    collect_size(t.size());
    for (const SavedVariable& i : t) {
      collect(i, is_output);
    }
  }
  template <typename T>
  void collect(const c10::ArrayRef<T>& t) {
    collect_size(t.size());
    for (const T& i : t) {
      collect(i);
    }
  }
  template <typename T>
  void collect(const c10::OptionalArray<T>& t) {
    collect(t.list);
  }
  template <typename T>
  void collect(const std::optional<T>& t) {
    if (cond(t.has_value())) {
      collect(*t);
    }
  }
  template <typename A, typename B>
  void collect(const std::pair<A, B>& t) {
    collect(t.first);
    collect(t.second);
  }
  template <typename V>
  void collect(const ska::flat_hash_map<std::string, V>& m) {
    collect_size(m.size());

    std::vector<std::string> keys;
    keys.reserve(m.size());
    std::transform(
        m.begin(), m.end(), std::back_inserter(keys), [](const auto& entry) {
          return entry.first;
        });
    std::sort(keys.begin(), keys.end());
    for (const auto& k : keys) {
      collect(k);
      collect(m.at(k));
    }
  }
  void collect(const at::IValue& iv, bool nested = false) {
    // used by AutogradContext::saved_data from CppNode
    if (iv.isList()) {
      c10::List<at::IValue> list = iv.toList();
      collect_size(list.size());
      for (auto&& value : list) {
        collect(value, true);
      }
    } else if (iv.isTuple()) {
      // as a list: a Tensor in it is a graph input, which
      // SwapSavedVariables::before(at::IValue&) swaps, not a hash of its
      // TensorImpl
      const auto& elements = iv.toTupleRef().elements();
      collect_size(elements.size());
      for (const auto& value : elements) {
        collect(value, true);
      }
    } else if (iv.isGenericDict()) {
      c10::Dict<at::IValue, at::IValue> ordered_dict = iv.toGenericDict();
      collect_size(ordered_dict.size());
      // NOLINTNEXTLINE(modernize-loop-convert)
      for (auto it = ordered_dict.begin(); it != ordered_dict.end(); it++) {
        // nested: an int key is hashed, not lifted (before() visits no key)
        collect(it->key(), true);
        collect(it->value(), true);
      }
    } else if (iv.isTensor()) {
      collect(iv.toTensor());
    } else if (
        !nested &&
        (iv.isInt() || iv.isSymInt() || iv.isDouble() || iv.isSymFloat())) {
      // can't lift ivalues nested in collections
      _compiler.lifted_ivalue_args.add(&iv);
    } else {
      try {
        collect(static_cast<uint64_t>(at::IValue::hash(iv)));
      } catch (const std::runtime_error& e) {
        std::string msg =
            "Compiled autograd can not trace unhashable IValues, error: " +
            std::string(e.what());
        TORCH_CHECK_NOT_IMPLEMENTED(false, msg);
      }
    }
  }
  void collect(const c10::Scalar& t) {
    auto type = t.type();
    specialize_on_bytes(type);
    if (type == c10::ScalarType::Double) {
      collect(t.toDouble());
    } else if (type == c10::ScalarType::Long) {
      collect(t.toLong());
    } else if (type == c10::ScalarType::Bool) {
      collect(t.toBool());
    } else if (type == c10::ScalarType::ComplexDouble) {
      auto c = t.toComplexDouble();
      collect(c.real());
      collect(c.imag());
    } else {
      TORCH_INTERNAL_ASSERT(false);
    }
  }
  void collect(const c10::TensorOptions& t) {
    collect(t.device());
    collect(t.dtype());
    collect(t.layout());
    collect(t.requires_grad());
    collect(t.pinned_memory());
    collect(t.memory_format_opt());
  }
  void collect(const at::TensorGeometry& t) {
    collect(t.sym_sizes());
    collect(t.sym_strides());
    collect(t.sym_storage_offset());
  }
  void collect(const torch::autograd::TypeAndSize& t) {
    collect(t.sym_sizes);
    collect(t.options);
  }
  void collect(const c10::Device& t) {
    collect(t.type());
    collect(t.index());
  }
  void collect(const std::string& t) {
    collect_size(t.size());
    for (char c : t) {
      collect(c);
    }
  }
  void collect(const caffe2::TypeMeta& t) {
    specialize_on_bytes(t.id());
  }
  void collect(const std::shared_ptr<Node>& t) {
    // Note: this is only capturing the ID of the node not everything
    // contained inside it.  This is used for tracking connections between
    // nodes and the actual details of the node itself must be handled by
    // a seperate call to `node->compiled_args()`.
    if (cond((bool)t)) {
      collect(_compiler.node_calls.lookup(t));
    }
  }
  void collect(const NodeCall& t) {
    collect_size(t.id);
    collect(t.graph_output);
    collect_hooks_from(t.node.get());
  }
  void collect(const Edge& t) {
    if (cond(t.is_valid())) {
      collect_size(_compiler.node_calls.lookup(t.function).id);
      collect_size(t.input_nr);
      collect(t.function->input_metadata(t.input_nr)); // for validate_outputs
    }
  }
  void collect(const InputMetadata& t) {
    TORCH_CHECK(!t.is_nested_tensor(), "NestedTensor not implemented");
    collect(t.options());
    collect(t.is_tensor_subclass());
    collect(t.shape_as_dim_vector());
  }
  void collect(const VariableInfo& t) {
    collect(t.layout);
    collect(t.device);
    collect(t.scalar_type);
    collect(t.size);
    collect(t.requires_grad);
    collect(t.is_empty);
  }
  bool cond(bool cond) {
    collect(cond);
    return cond;
  }

#define COLLECT_AS_BYTES(T) \
  void collect(T t) {       \
    specialize_on_bytes(t); \
  }
  COLLECT_AS_BYTES(c10::ScalarType)
  COLLECT_AS_BYTES(c10::DeviceType)
  COLLECT_AS_BYTES(c10::Layout)
  COLLECT_AS_BYTES(c10::MemoryFormat)
  COLLECT_AS_BYTES(int8_t)
  COLLECT_AS_BYTES(int16_t)
  COLLECT_AS_BYTES(int32_t)
  COLLECT_AS_BYTES(int64_t)
  COLLECT_AS_BYTES(uint8_t)
  COLLECT_AS_BYTES(uint16_t)
  COLLECT_AS_BYTES(uint32_t)
  COLLECT_AS_BYTES(uint64_t)
  COLLECT_AS_BYTES(bool)
  COLLECT_AS_BYTES(float)
  COLLECT_AS_BYTES(double)
#undef COLLECT_AS_BYTES

  void collect_hooks_from(Node* fn) {
    for (auto& i : fn->tensor_pre_hooks()) {
      i->compiled_args(*this);
    }
    // after the tensor pre-hooks, as the engine runs them; by input_nr, so
    // that the key does not depend on the map's order
    std::vector<size_t> retained;
    retained.reserve(fn->retains_grad_hooks().size());
    for (const auto& entry : fn->retains_grad_hooks()) {
      retained.emplace_back(entry.first);
    }
    std::sort(retained.begin(), retained.end());
    for (const size_t input_nr : retained) {
      const size_t id = _compiler.retains_grad_hooks.size();
      _compiler.retains_grad_hooks.emplace_back(
          fn->retains_grad_hooks().at(input_nr).get(), input_nr);
      _node_call.retains_grad_hooks.emplace_back(
          static_cast<int>(id), static_cast<int>(input_nr));
      collect_size(id);
      collect_size(input_nr);
    }
    for (auto& i : fn->pre_hooks()) {
      i->compiled_args(*this);
    }
    for (auto& i : fn->post_hooks()) {
      i->compiled_args(*this);
    }
    collect_size(_node_call.tensor_pre_hooks.size());
    collect_size(_node_call.retains_grad_hooks.size());
    collect_size(_node_call.pre_hooks.size());
    collect_size(_node_call.post_hooks.size());
    for (const auto& h : _node_call.tensor_pre_hooks) {
      collect_size(static_cast<size_t>(h.second));
    }
  }

  // Called by a generated node's compiled_args: each grad its formula
  // returns has the sizes of the input it is for, or the broadcast sizes if
  // that input was broadcast, so ops.validate_outputs needs no graph input
  // for a size that is not 1 (see proxy_validate_outputs).  A custom
  // Function's backward (PyNode, CppNode) and the hand-written nodes do not
  // call it: their grads keep the full check.
  void grads_sized_by_formula() {
    _node_call.grads_sized_by_formula = true;
  }

  CacheKey key() const {
    Node* node = _node_call.node.get();
    return CacheKey(
        typeid(*node), _specialization_key, _specialization_key_size);
  }

  size_t add_backward(c10::SafePyObject&& obj) {
    return _compiler.emplace_hook(std::move(obj));
  }

  size_t add_backward_state(c10::SafePyObject&& obj) {
    return _compiler.emplace_hook(std::move(obj));
  }

  void add_tensor_pre_hook(c10::SafePyObject&& obj, int index) {
    auto fn_id = _compiler.emplace_hook(std::move(obj));
    collect_size(fn_id);
    _node_call.tensor_pre_hooks.emplace_back(fn_id, index);
  }

  void add_pre_hook(c10::SafePyObject&& obj) {
    auto fn_id = _compiler.emplace_hook(std::move(obj));
    collect_size(fn_id);
    _node_call.pre_hooks.emplace_back(fn_id);
  }

  void add_post_hook(c10::SafePyObject&& obj) {
    auto fn_id = _compiler.emplace_hook(std::move(obj));
    collect_size(fn_id);
    _node_call.post_hooks.emplace_back(fn_id);
  }

  void add_post_acc_grad_hook(c10::SafePyObject&& obj) {
    auto fn_id = _compiler.emplace_hook(std::move(obj));
    collect_size(fn_id);
    _node_call.post_acc_grad_hooks.emplace_back(fn_id);
  }

  // Need to template the size_t to silence internal 32-bit build errors due to
  // a mix of -Werror, -Wtautological-type-limit-compare and
  // -Wunknown-pragmas
  template <typename T>
  std::enable_if_t<std::is_unsigned_v<T>, void> collect_size(T s) {
    // we expect sizes to be small, so try to cram them into a single byte
    constexpr uint8_t encode_as_u64 = std::numeric_limits<uint8_t>::max();
    constexpr uint8_t encode_as_u32 = encode_as_u64 - 1;
    constexpr uint8_t encode_as_u16 = encode_as_u64 - 2;
    if (C10_UNLIKELY(s >= encode_as_u16)) {
      // first write a byte indicating the path we followed, then the data
      if (s <= std::numeric_limits<uint16_t>::max()) {
        // 3 bytes
        specialize_on_bytes(encode_as_u16);
        specialize_on_bytes(static_cast<uint16_t>(s));
      } else if (s <= std::numeric_limits<uint32_t>::max()) {
        // 5 bytes
        specialize_on_bytes(encode_as_u32);
        specialize_on_bytes(static_cast<uint32_t>(s));
      } else {
        // 9 bytes
        specialize_on_bytes(encode_as_u64);
        specialize_on_bytes(s);
      }
    } else {
      // happy case, 1 byte
      specialize_on_bytes(static_cast<uint8_t>(s));
    }
  }

  SizeInput::DynType set_default_dyn_type(SizeInput::DynType default_dyn_type) {
    return std::exchange(_compiler.default_dyn_type, default_dyn_type);
  }

  CompiledNodeArgs(AutogradCompilerCall& compiler, NodeCall& node_call)
      : _compiler(compiler),
        _node_call(node_call),
        _specialization_key(
            // NOLINTNEXTLINE(cppcoreguidelines-no-malloc)
            (uint8_t*)std::malloc(_specialization_key_storage)) {}
  CompiledNodeArgs(const CompiledNodeArgs&) = delete;
  CompiledNodeArgs(CompiledNodeArgs&&) = delete;
  CompiledNodeArgs& operator=(const CompiledNodeArgs&) = delete;
  CompiledNodeArgs& operator=(CompiledNodeArgs&&) = delete;
  ~CompiledNodeArgs() {
    // NOLINTNEXTLINE(cppcoreguidelines-no-malloc)
    std::free(_specialization_key);
  }

 private:
  template <typename T>
  void specialize_on_bytes(const T& t) {
    while (C10_UNLIKELY(
        _specialization_key_size + sizeof(T) > _specialization_key_storage)) {
      _specialization_key_storage *= 2;
      // NOLINTNEXTLINE(cppcoreguidelines-no-malloc)
      _specialization_key = (uint8_t*)std::realloc(
          _specialization_key, _specialization_key_storage);
    }
    std::memcpy(_specialization_key + _specialization_key_size, &t, sizeof(T));
    _specialization_key_size += sizeof(T);
  }

  AutogradCompilerCall& _compiler;
  NodeCall& _node_call;
  size_t _specialization_key_size{0};
  size_t _specialization_key_storage{1024};
  uint8_t* _specialization_key;
};

struct TraceState {
  TraceState(std::vector<std::optional<c10::SymInt>>&& ss, size_t num_outputs)
      : sym_sizes(std::move(ss)), outputs(num_outputs) {}

  void debug_asserts() {
    TORCH_INTERNAL_ASSERT(sym_sizes_index == sym_sizes.size());
  }
  std::optional<c10::SymInt> next_sym_size() {
    TORCH_INTERNAL_ASSERT(sym_sizes_index < sym_sizes.size());
    return sym_sizes[sym_sizes_index++];
  }

  size_t sym_sizes_index{0};
  std::vector<std::optional<c10::SymInt>> sym_sizes;
  variable_list outputs;
};

class SwapSavedVariables {
  // SwapSavedVariables is used during the tracing/compilation phase after a
  // cache-miss. It swaps any 'lifted' inputs (tensors, symints) to proxy nodes,
  // allows tracing to happen, then swaps them back afterwards.
 public:
  void before(at::Tensor& t) {
    TensorArg& arg = compiler.tensor_args.lookup(t);
    stashed_tensors.save(&t, std::move(t));
    if (arg.defined()) {
      TORCH_INTERNAL_ASSERT(arg.proxy_tensor.defined());
      t = arg.proxy_tensor;
    }
  }
  void after(at::Tensor& t) {
    stashed_tensors.restore(&t);
  }

  void before(SavedVariable& t) {
    if (const SavedUnpack* unpack = compiler.saved_unpacks.find(t)) {
      // the proxy of its ops.unpack_saved call (see SavedUnpacks)
      TORCH_INTERNAL_ASSERT(unpack->proxy_tensor.defined());
      stashed_variables.save(&t, std::move(t));
      bool prior = at::SavedTensorDefaultHooks::set_tracing(true);
      t = SavedVariable(unpack->proxy_tensor, false);
      at::SavedTensorDefaultHooks::set_tracing(prior);
      return;
    }
    TensorArg& arg = compiler.tensor_args.lookup(t);
    stashed_variables.save(&t, std::move(t));
    if (arg.defined()) {
      bool prior = at::SavedTensorDefaultHooks::set_tracing(true);
      TORCH_INTERNAL_ASSERT(arg.proxy_tensor.defined());
      t = SavedVariable(arg.proxy_tensor, false);
      at::SavedTensorDefaultHooks::set_tracing(prior);
    }
  }
  void after(SavedVariable& t) {
    stashed_variables.restore(&t);
  }

  void before(c10::SymInt& t) {
    stashed_symints.save(&t, c10::SymInt(t));
    auto opt_value = state.next_sym_size();
    if (opt_value.has_value()) {
      t = *opt_value; // dynamic shape
    }
  }
  void after(c10::SymInt& t) {
    stashed_symints.restore(&t);
  }

  // A copy of iv (a list, tuple or dict, nested to any depth) in which each
  // Tensor that CompiledNodeArgs::collect(const at::IValue&) made a graph
  // input is its proxy; iv itself where it holds none.  A copy, because a
  // c10::List or c10::Dict is shared by reference: after() restores the
  // IValue that holds the original.  Nested numbers stay the constants that
  // collect() keyed.
  static at::IValue with_proxies(
      const at::IValue& iv,
      TensorArgs& tensor_args,
      bool& swapped) {
    bool any = false;
    if (iv.isTensor()) {
      const TensorArg& arg = tensor_args.lookup(iv.toTensor());
      if (!arg.defined()) {
        return iv;
      }
      TORCH_INTERNAL_ASSERT(arg.proxy_tensor.defined());
      swapped = true;
      return arg.proxy_tensor;
    } else if (iv.isList()) {
      const c10::List<at::IValue> list = iv.toList();
      c10::impl::GenericList out(list.elementType());
      out.reserve(list.size());
      for (const at::IValue& value : list) {
        out.push_back(with_proxies(value, tensor_args, any));
      }
      if (any) {
        swapped = true;
        return out;
      }
    } else if (iv.isTuple()) {
      std::vector<at::IValue> out;
      for (const at::IValue& value : iv.toTupleRef().elements()) {
        out.push_back(with_proxies(value, tensor_args, any));
      }
      if (any) {
        swapped = true;
        return c10::ivalue::Tuple::create(std::move(out));
      }
    } else if (iv.isGenericDict()) {
      const c10::Dict<at::IValue, at::IValue> dict = iv.toGenericDict();
      c10::impl::GenericDict out(dict.keyType(), dict.valueType());
      out.reserve(dict.size());
      for (const auto& entry : dict) {
        out.insert(entry.key(), with_proxies(entry.value(), tensor_args, any));
      }
      if (any) {
        swapped = true;
        return out;
      }
    }
    return iv;
  }

  void before(at::IValue& iv) {
    if (iv.isTensor()) {
      before(iv.toTensor());
    } else {
      stashed_ivalues.save(&iv, at::IValue(iv));
      if (iv.isInt() || iv.isSymInt() || iv.isDouble() || iv.isSymFloat()) {
        iv = compiler.lifted_ivalue_args.next_proxy(&iv);
      } else if (iv.isList() || iv.isTuple() || iv.isGenericDict()) {
        // Tensors nested in a C++ Function's saved_data (a list of them, say)
        bool swapped = false;
        at::IValue with_proxy = with_proxies(iv, compiler.tensor_args, swapped);
        if (swapped) {
          iv = std::move(with_proxy);
        }
      }
    }
  }

  void after(at::IValue& t) {
    if (t.isTensor()) {
      after(t.toTensor());
    } else {
      stashed_ivalues.restore(&t);
    }
  }

  void before(Edge& t) {
    if (t.is_valid()) {
      // need for symints used by validate_outputs
      before(t.function->mutable_input_metadata(t.input_nr));
    }
  }
  void after(Edge& t) {
    if (t.is_valid()) {
      after(t.function->mutable_input_metadata(t.input_nr));
    }
  }
  void before(InputMetadata& t) {
    before(t.mutable_shape_as_dim_vector());
  }
  void after(InputMetadata& t) {
    after(t.mutable_shape_as_dim_vector());
  }
  void before(at::TensorGeometry& t) {
    before(t.mutable_sizes());
    before(t.mutable_strides());
    before(t.mutable_storage_offset());
    t.recompute();
  }
  void after(at::TensorGeometry& t) {
    after(t.mutable_sizes());
    after(t.mutable_strides());
    after(t.mutable_storage_offset());
    t.recompute();
  }
  void before(torch::autograd::TypeAndSize& t) {
    before(t.sym_sizes);
    before(t.options);
  }
  void after(torch::autograd::TypeAndSize& t) {
    after(t.sym_sizes);
    after(t.options);
  }
  void before(VariableInfo& t) {
    before(t.size);
  }
  void after(VariableInfo& t) {
    after(t.size);
  }

  template <typename T>
  void before(std::vector<T>& t) {
    for (T& i : t) {
      before(i);
    }
  }
  template <typename T>
  void after(std::vector<T>& t) {
    for (T& i : t) {
      after(i);
    }
  }
  template <typename T, unsigned N>
  void before(c10::SmallVector<T, N>& t) {
    for (T& i : t) {
      before(i);
    }
  }
  template <typename T, unsigned N>
  void after(c10::SmallVector<T, N>& t) {
    for (T& i : t) {
      after(i);
    }
  }

  template <typename T>
  void before(c10::OptionalArray<T>& t) {
    before(t.list);
  }
  template <typename T>
  void after(c10::OptionalArray<T>& t) {
    after(t.list);
  }

  template <typename T>
  void before(std::optional<T>& t) {
    if (t.has_value()) {
      before(*t);
    }
  }
  template <typename T>
  void after(std::optional<T>& t) {
    if (t.has_value()) {
      after(*t);
    }
  }

  template <typename V>
  void before(ska::flat_hash_map<std::string, V>& m) {
    std::vector<std::string> keys;
    keys.reserve(m.size());
    std::transform(
        m.begin(), m.end(), std::back_inserter(keys), [](const auto& entry) {
          return entry.first;
        });
    std::sort(keys.begin(), keys.end());
    for (auto& k : keys) {
      before(m.at(k));
    }
  }

  template <typename V>
  void after(ska::flat_hash_map<std::string, V>& m) {
    for (auto& [_, v] : m) {
      after(v);
    }
  }

#define NO_OP_VISIT(T)     \
  void before(const T&) {} \
  void after(const T&) {}
  NO_OP_VISIT(caffe2::TypeMeta)
  NO_OP_VISIT(c10::Device)
  NO_OP_VISIT(c10::DeviceType)
  NO_OP_VISIT(c10::Layout)
  NO_OP_VISIT(c10::MemoryFormat)
  NO_OP_VISIT(c10::ScalarType)
  NO_OP_VISIT(c10::Scalar)
  NO_OP_VISIT(c10::TensorOptions)
  NO_OP_VISIT(std::string)
  NO_OP_VISIT(int64_t)
  NO_OP_VISIT(bool)
  NO_OP_VISIT(double)
#undef NO_OP_VISIT

  SwapSavedVariables(
      AutogradCompilerCall& c,
      TraceState& s,
      PyObject* p,
      const NodeCall& n)
      : compiler(c), state(s), py_compiler(p), curr_node_call(n) {}

  PyObject* get_py_compiler() {
    return py_compiler;
  }

  const NodeCall& get_curr_node_call() {
    return curr_node_call;
  }

  void debug_asserts() {
    stashed_variables.debug_assert();
    stashed_tensors.debug_assert();
    stashed_symints.debug_assert();
  }

 private:
  template <typename T>
  struct Stashed {
    Stashed(T&& v) : prior_value(std::move(v)) {}
    T prior_value;
    // Note: we need count here to support duplicate calls to before()
    // which happen when we have multiple autograd::Edge objects pointing
    // to the same autograd::Node
    int count = 1;
  };

  template <typename T>
  struct StashedVars : public std::unordered_map<const T*, Stashed<T>> {
    void save(const T* key, T&& value) {
      auto [it, inserted] = this->try_emplace(key, std::move(value));
      if (!inserted) {
        // keep the value from the prior save()
        it->second.count++;
      }
    }
    void restore(T* var) {
      auto it = this->find(var);
      TORCH_INTERNAL_ASSERT(it != this->end(), "missing before())");
      if (--it->second.count == 0) {
        // restore the value on the last restore()
        *var = std::move(it->second.prior_value);
        this->erase(it);
      }
    }
    void debug_assert() {
      TORCH_INTERNAL_ASSERT(this->empty(), "missing call to after()");
    }
  };

  // NOLINTNEXTLINE(cppcoreguidelines-avoid-const-or-ref-data-members)
  AutogradCompilerCall& compiler;
  // NOLINTNEXTLINE(cppcoreguidelines-avoid-const-or-ref-data-members)
  TraceState& state;
  // This is a borrowed reference, we do not increment ownership, or lower it,
  // it's lifecycle is entirely longer than this objects.
  PyObject* py_compiler;
  // NOLINTNEXTLINE(cppcoreguidelines-avoid-const-or-ref-data-members)
  const NodeCall& curr_node_call;

  // These mappings are used to save the prior values when we overwrite things
  // in before(). In after(), we use these to cleanup after ourselves.
  StashedVars<SavedVariable> stashed_variables;
  StashedVars<at::Tensor> stashed_tensors;
  StashedVars<c10::SymInt> stashed_symints;
  StashedVars<at::IValue> stashed_ivalues;
};

// [Note: Functional autograd in compiled autograd]
//
// During the initial capture, compiled autograd (CA) does not trace through
// the C++ backward formula of a generated autograd node anymore: tracing
// fake tensors through the formula would bake their metadata (sizes,
// strides, dtype branches) into the CA graph.  Instead, X::apply_with_saved
// packs what the stateless X_apply_functional needs into IValues and asks
// Python to record ONE opaque call `ops.X(grads, *packed)` in the graph.
// Dynamo/AOTAutograd trace that call later with real metadata by running the
// same C++ functional on FakeTensors.
//
// Everything below is additive: new entities only, no change to the layout
// or vtable of any class that code outside compiled autograd uses.

using ivalue_list = std::vector<c10::IValue>;

// The ONE uniform signature every functional entry point has.  Generated
// nodes hand Python a pointer to a file-local X_apply_functional_ivalue
// (no exported per-node symbol).
using functional_apply_t =
    variable_list (*)(const variable_list& grads, const ivalue_list& packed);

// libtorch_cpu cannot call into Python.  libtorch_python implements this
// interface (python_compiled_autograd.cpp) and installs it at module init.
struct TORCH_API PyCompilerInterface {
  PyCompilerInterface() = default;
  PyCompilerInterface(const PyCompilerInterface&) = delete;
  PyCompilerInterface& operator=(const PyCompilerInterface&) = delete;
  PyCompilerInterface(PyCompilerInterface&&) = delete;
  PyCompilerInterface& operator=(PyCompilerInterface&&) = delete;
  virtual ~PyCompilerInterface() = default;

  // Makes `fn` callable from Python as
  // torch._dynamo.compiled_autograd.ops.<fn_name>. `schema` gives the type of
  // every packed argument (Python -> IValue conversion at call time, IValue ->
  // Python conversion at capture time). Idempotent: only the first call for a
  // name binds.  A `traceable` op goes into the graph Dynamo traces
  // (AOTAutograd runs it on FakeTensors); a non-traceable one (a C++ autograd
  // Function not marked is_traceable) makes Dynamo graph-break and runs
  // eagerly, on real tensors.
  virtual void bind_function(
      PyObject* py_compiler,
      const std::string& fn_name,
      functional_apply_t fn,
      const std::vector<at::TypePtr>& schema,
      bool traceable) const = 0;

  // Records `ops.<fn_name>(grads, *packed)` in the CA graph and returns
  // dummy (fake) outputs: output i is undefined when output_metadata[i] is
  // nullopt, else an empty tensor with that metadata.
  virtual variable_list call_function(
      PyObject* py_compiler,
      const std::string& fn_name,
      const variable_list& grads,
      const ivalue_list& packed,
      const std::vector<std::optional<InputMetadata>>& output_metadata)
      const = 0;

  // Records `inductor.accumulate_grad_(variable, grad)` in the CA graph
  // without running it.  Running it on the capture's fakes dispatches the op
  // through a Tensor subclass parameter (a DTensor) with a grad dummy that
  // is a plain tensor (the subclass only exists at runtime), which no
  // subclass can handle.  Dynamo traces the recorded call later, on the
  // real types.
  virtual void accumulate_grad(
      PyObject* py_compiler,
      const at::Tensor& variable,
      const at::Tensor& grad) const = 0;
};

TORCH_API const PyCompilerInterface* getPyCompilerInterface();
TORCH_API void setPyCompilerInterface(
    std::unique_ptr<PyCompilerInterface> impl);
TORCH_API void resetPyCompilerInterface();

// Used by generated X::apply_with_saved: binds `fn` (lazily, first capture of
// the node type) and proxies one call.  Output metadata of the dummy outputs
// comes from the next edges' InputMetadata (already swapped to symbolic sizes
// by the capture loop); output i is undefined if `outputs_maybe_defined[i]`
// is false or the node would not compute it.
TORCH_API variable_list proxy_functional_call(
    SwapSavedVariables& saved,
    const Node& node,
    const std::string& fn_name,
    functional_apply_t fn,
    const std::vector<at::TypePtr>& schema,
    const variable_list& grads,
    ivalue_list&& packed,
    const std::vector<bool>& outputs_maybe_defined,
    bool traceable = true);

// A readable op name, unique per functional: `base` with every character
// that cannot appear in a Python identifier replaced, and a numeric suffix if
// a different functional already uses it (two C++ autograd Functions of the
// same name in two extensions).  The same fn always gets the same name.
TORCH_API std::string functional_op_name(
    const std::string& base,
    functional_apply_t fn);

// Next edges for a node rebuilt by a functional (CppNode<T>): edge i is
// valid iff needs_input_grad[i], so that task_should_compute_output(i), and
// AutogradContext::needs_input_grad(i) through it, answer as they did for the
// original node.  The edges point at a node that never runs.
TORCH_API edge_list
needs_input_grad_edges(const std::vector<bool>& needs_input_grad);

// ---------------------------------------------------------------------------
// IValuePacker<T>: how a value saved by an autograd node travels through
// the CA graph.  pack() turns it into an IValue at capture time, unpack()
// turns the IValue back into T when the functional runs, packed_type() is
// the schema entry Python uses to convert the argument.  No primary
// definition: packing an unhandled type is a compile error (and the codegen
// refuses it first, see PACKABLE_TYPES in gen_autograd_functions.py).
template <typename T, typename Enable = void>
struct IValuePacker;

#define TRIVIAL_IVALUE_PACKER(T, TO, TYPE)  \
  template <>                               \
  struct IValuePacker<T> {                  \
    static c10::IValue pack(const T& t) {   \
      return c10::IValue(t);                \
    }                                       \
    static T unpack(const c10::IValue& t) { \
      return t.TO();                        \
    }                                       \
    static at::TypePtr packed_type() {      \
      return TYPE;                          \
    }                                       \
  };
// Undefined tensors are packed as undefined (None in Python).
TRIVIAL_IVALUE_PACKER(at::Tensor, toTensor, at::TensorType::get())
TRIVIAL_IVALUE_PACKER(c10::SymInt, toSymInt, at::SymIntType::get())
TRIVIAL_IVALUE_PACKER(int64_t, toInt, at::IntType::get())
TRIVIAL_IVALUE_PACKER(bool, toBool, at::BoolType::get())
TRIVIAL_IVALUE_PACKER(double, toDouble, at::FloatType::get())
TRIVIAL_IVALUE_PACKER(at::Scalar, toScalar, at::NumberType::get())
TRIVIAL_IVALUE_PACKER(at::ScalarType, toScalarType, at::ScalarTypeType::get())
TRIVIAL_IVALUE_PACKER(at::Layout, toLayout, at::LayoutType::get())
TRIVIAL_IVALUE_PACKER(
    at::MemoryFormat,
    toMemoryFormat,
    at::MemoryFormatType::get())
TRIVIAL_IVALUE_PACKER(c10::Device, toDevice, at::DeviceObjType::get())
TRIVIAL_IVALUE_PACKER(std::string, toStringRef, at::StringType::get())
TRIVIAL_IVALUE_PACKER(std::vector<int64_t>, toIntVector, at::ListType::ofInts())
TRIVIAL_IVALUE_PACKER(
    std::vector<c10::SymInt>,
    toSymIntVector,
    at::ListType::ofSymInts())
TRIVIAL_IVALUE_PACKER(
    std::vector<at::Tensor>,
    toTensorVector,
    at::ListType::ofTensors())
#undef TRIVIAL_IVALUE_PACKER

template <>
struct IValuePacker<size_t> {
  static c10::IValue pack(const size_t& t) {
    return c10::IValue(static_cast<int64_t>(t));
  }
  static size_t unpack(const c10::IValue& t) {
    return static_cast<size_t>(t.toInt());
  }
  static at::TypePtr packed_type() {
    return at::IntType::get();
  }
};

template <>
struct IValuePacker<c10::List<std::optional<at::Tensor>>> {
  static c10::IValue pack(const c10::List<std::optional<at::Tensor>>& t) {
    return c10::IValue(t);
  }
  static c10::List<std::optional<at::Tensor>> unpack(const c10::IValue& t) {
    return t.to<c10::List<std::optional<at::Tensor>>>();
  }
  static at::TypePtr packed_type() {
    return at::ListType::ofOptionalTensors();
  }
};

template <size_t N>
struct IValuePacker<std::array<bool, N>> {
  static c10::IValue pack(const std::array<bool, N>& t) {
    return c10::IValue(std::vector<bool>(t.begin(), t.end()));
  }
  static std::array<bool, N> unpack(const c10::IValue& t) {
    auto list = t.toBoolList();
    TORCH_INTERNAL_ASSERT(list.size() == N);
    std::array<bool, N> result{};
    for (size_t i = 0; i < N; i++) {
      result[i] = list.get(i);
    }
    return result;
  }
  static at::TypePtr packed_type() {
    return at::ListType::ofBools();
  }
};

template <typename T>
struct IValuePacker<std::optional<T>> {
  static c10::IValue pack(const std::optional<T>& t) {
    return t.has_value() ? IValuePacker<T>::pack(*t) : c10::IValue();
  }
  static std::optional<T> unpack(const c10::IValue& t) {
    if (t.isNone()) {
      return std::nullopt;
    }
    return IValuePacker<T>::unpack(t);
  }
  static at::TypePtr packed_type() {
    return at::OptionalType::create(IValuePacker<T>::packed_type());
  }
};

template <typename T>
struct IValuePacker<c10::OptionalArray<T>> {
  static c10::IValue pack(const c10::OptionalArray<T>& t) {
    return IValuePacker<std::optional<std::vector<T>>>::pack(t.list);
  }
  static c10::OptionalArray<T> unpack(const c10::IValue& t) {
    c10::OptionalArray<T> result;
    result.list = IValuePacker<std::optional<std::vector<T>>>::unpack(t);
    return result;
  }
  static at::TypePtr packed_type() {
    return IValuePacker<std::optional<std::vector<T>>>::packed_type();
  }
};

// Lists of anything else (Scalar, ScalarType, nested lists) go through a
// GenericList whose element type is the element's packed type.
template <typename T>
struct IValuePacker<
    std::vector<T>,
    std::enable_if_t<
        !std::is_same_v<T, int64_t> && !std::is_same_v<T, c10::SymInt> &&
        !std::is_same_v<T, at::Tensor> && !std::is_same_v<T, bool>>> {
  static c10::IValue pack(const std::vector<T>& t) {
    c10::impl::GenericList list(IValuePacker<T>::packed_type());
    list.reserve(t.size());
    for (const T& v : t) {
      list.push_back(IValuePacker<T>::pack(v));
    }
    return c10::IValue(list);
  }
  static std::vector<T> unpack(const c10::IValue& t) {
    std::vector<T> result;
    const auto& list = t.toListRef();
    result.reserve(list.size());
    for (const c10::IValue& v : list) {
      result.emplace_back(IValuePacker<T>::unpack(v));
    }
    return result;
  }
  static at::TypePtr packed_type() {
    return at::ListType::create(IValuePacker<T>::packed_type());
  }
};

// TensorOptions -> (dtype?, layout?, device?, requires_grad?, pinned_memory?,
// memory_format?); exact round trip, unset fields stay unset.
template <>
struct IValuePacker<at::TensorOptions> {
  static c10::IValue pack(const at::TensorOptions& t) {
    std::optional<at::ScalarType> dtype;
    if (t.dtype_opt().has_value()) {
      dtype = c10::typeMetaToScalarType(*t.dtype_opt());
    }
    return c10::ivalue::Tuple::create(
        IValuePacker<std::optional<at::ScalarType>>::pack(dtype),
        IValuePacker<std::optional<at::Layout>>::pack(t.layout_opt()),
        IValuePacker<std::optional<c10::Device>>::pack(t.device_opt()),
        IValuePacker<std::optional<bool>>::pack(t.requires_grad_opt()),
        IValuePacker<std::optional<bool>>::pack(t.pinned_memory_opt()),
        IValuePacker<std::optional<at::MemoryFormat>>::pack(
            t.memory_format_opt()));
  }
  static at::TensorOptions unpack(const c10::IValue& t) {
    const auto& e = t.toTupleRef().elements();
    TORCH_INTERNAL_ASSERT(e.size() == 6);
    return at::TensorOptions()
        .dtype(IValuePacker<std::optional<at::ScalarType>>::unpack(e[0]))
        .layout(IValuePacker<std::optional<at::Layout>>::unpack(e[1]))
        .device(IValuePacker<std::optional<c10::Device>>::unpack(e[2]))
        .requires_grad(IValuePacker<std::optional<bool>>::unpack(e[3]))
        .pinned_memory(IValuePacker<std::optional<bool>>::unpack(e[4]))
        .memory_format(
            IValuePacker<std::optional<at::MemoryFormat>>::unpack(e[5]));
  }
  static at::TypePtr packed_type() {
    return at::TupleType::create({
        IValuePacker<std::optional<at::ScalarType>>::packed_type(),
        IValuePacker<std::optional<at::Layout>>::packed_type(),
        IValuePacker<std::optional<c10::Device>>::packed_type(),
        IValuePacker<std::optional<bool>>::packed_type(),
        IValuePacker<std::optional<bool>>::packed_type(),
        IValuePacker<std::optional<at::MemoryFormat>>::packed_type(),
    });
  }
};

// TypeAndSize -> (sym_sizes, options)
template <>
struct IValuePacker<TypeAndSize> {
  static c10::IValue pack(const TypeAndSize& t) {
    return c10::ivalue::Tuple::create(
        IValuePacker<std::vector<c10::SymInt>>::pack(t.sym_sizes),
        IValuePacker<at::TensorOptions>::pack(t.options));
  }
  static TypeAndSize unpack(const c10::IValue& t) {
    const auto& e = t.toTupleRef().elements();
    TORCH_INTERNAL_ASSERT(e.size() == 2);
    TypeAndSize result;
    result.sym_sizes = IValuePacker<std::vector<c10::SymInt>>::unpack(e[0]);
    result.options = IValuePacker<at::TensorOptions>::unpack(e[1]);
    return result;
  }
  static at::TypePtr packed_type() {
    return at::TupleType::create({
        IValuePacker<std::vector<c10::SymInt>>::packed_type(),
        IValuePacker<at::TensorOptions>::packed_type(),
    });
  }
};

// TensorGeometry -> (sizes, strides, storage_offset)
template <>
struct IValuePacker<at::TensorGeometry> {
  static c10::IValue pack(const at::TensorGeometry& t) {
    return c10::ivalue::Tuple::create(
        IValuePacker<std::vector<c10::SymInt>>::pack(t.sym_sizes().vec()),
        IValuePacker<std::vector<c10::SymInt>>::pack(t.sym_strides().vec()),
        IValuePacker<c10::SymInt>::pack(t.sym_storage_offset()));
  }
  static at::TensorGeometry unpack(const c10::IValue& t) {
    const auto& e = t.toTupleRef().elements();
    TORCH_INTERNAL_ASSERT(e.size() == 3);
    at::TensorGeometry result;
    result.mutable_sizes() =
        IValuePacker<std::vector<c10::SymInt>>::unpack(e[0]);
    result.mutable_strides() =
        IValuePacker<std::vector<c10::SymInt>>::unpack(e[1]);
    result.mutable_storage_offset() = IValuePacker<c10::SymInt>::unpack(e[2]);
    result.recompute();
    return result;
  }
  static at::TypePtr packed_type() {
    return at::TupleType::create({
        IValuePacker<std::vector<c10::SymInt>>::packed_type(),
        IValuePacker<std::vector<c10::SymInt>>::packed_type(),
        IValuePacker<c10::SymInt>::packed_type(),
    });
  }
};

template <>
struct IValuePacker<std::vector<bool>> {
  static c10::IValue pack(const std::vector<bool>& t) {
    return c10::IValue(t);
  }
  static std::vector<bool> unpack(const c10::IValue& t) {
    const auto list = t.toBoolList();
    return std::vector<bool>(list.begin(), list.end());
  }
  static at::TypePtr packed_type() {
    return at::ListType::ofBools();
  }
};

// AutogradContext::saved_data -> Dict[str, Any], keys sorted.  Tensors and
// top-level SymInts/SymFloats (the capture lifts ints and floats) become
// graph values; the rest are constants.
template <>
struct IValuePacker<ska::flat_hash_map<std::string, at::IValue>> {
  static c10::IValue pack(
      const ska::flat_hash_map<std::string, at::IValue>& t) {
    std::vector<std::string> keys;
    keys.reserve(t.size());
    for (const auto& [k, _] : t) {
      keys.push_back(k);
    }
    std::sort(keys.begin(), keys.end());
    c10::impl::GenericDict dict(at::StringType::get(), at::AnyType::get());
    dict.reserve(keys.size());
    for (const auto& k : keys) {
      dict.insert(k, t.at(k));
    }
    return c10::IValue(dict);
  }
  static ska::flat_hash_map<std::string, at::IValue> unpack(
      const c10::IValue& t) {
    ska::flat_hash_map<std::string, at::IValue> result;
    for (const auto& entry : t.toGenericDict()) {
      result.emplace(entry.key().toStringRef(), entry.value());
    }
    return result;
  }
  static at::TypePtr packed_type() {
    return at::DictType::create(at::StringType::get(), at::AnyType::get());
  }
};

// VariableInfo -> (layout, device, dtype, sizes, requires_grad, is_empty)
template <>
struct IValuePacker<VariableInfo> {
  static c10::IValue pack(const VariableInfo& t) {
    TORCH_CHECK_NOT_IMPLEMENTED(
        !t.the_var.has_value(),
        "compiled autograd: a C++ autograd Function whose output is a nested "
        "tensor (VariableInfo::the_var) is not supported");
    return c10::ivalue::Tuple::create(
        IValuePacker<at::Layout>::pack(t.layout),
        IValuePacker<c10::Device>::pack(t.device),
        IValuePacker<at::ScalarType>::pack(t.scalar_type),
        IValuePacker<std::vector<c10::SymInt>>::pack(t.size),
        IValuePacker<bool>::pack(t.requires_grad),
        IValuePacker<bool>::pack(t.is_empty));
  }
  static VariableInfo unpack(const c10::IValue& t) {
    const auto& e = t.toTupleRef().elements();
    TORCH_INTERNAL_ASSERT(e.size() == 6);
    VariableInfo result;
    result.layout = IValuePacker<at::Layout>::unpack(e[0]);
    result.device = IValuePacker<c10::Device>::unpack(e[1]);
    result.scalar_type = IValuePacker<at::ScalarType>::unpack(e[2]);
    result.size = IValuePacker<std::vector<c10::SymInt>>::unpack(e[3]);
    result.requires_grad = IValuePacker<bool>::unpack(e[4]);
    result.is_empty = IValuePacker<bool>::unpack(e[5]);
    return result;
  }
  static at::TypePtr packed_type() {
    return at::TupleType::create({
        IValuePacker<at::Layout>::packed_type(),
        IValuePacker<c10::Device>::packed_type(),
        IValuePacker<at::ScalarType>::packed_type(),
        IValuePacker<std::vector<c10::SymInt>>::packed_type(),
        IValuePacker<bool>::packed_type(),
        IValuePacker<bool>::packed_type(),
    });
  }
};

// Reads packed arguments back in order, in a generated
// X_apply_functional_ivalue.
struct PackedArgs {
  explicit PackedArgs(const ivalue_list& stack) : stack_(stack) {}
  template <typename T>
  T unpack() {
    TORCH_INTERNAL_ASSERT(idx_ < stack_.size(), "too few packed arguments");
    return IValuePacker<T>::unpack(stack_[idx_++]);
  }
  void done() const {
    TORCH_INTERNAL_ASSERT(idx_ == stack_.size(), "too many packed arguments");
  }

 private:
  const ivalue_list& stack_;
  size_t idx_ = 0;
};

// Accumulates packed arguments and their schema, in a generated
// X::apply_with_saved.
struct PackedArgsBuilder {
  template <typename T>
  void pack(const T& t) {
    stack.emplace_back(IValuePacker<T>::pack(t));
  }
  ivalue_list stack;
};

} // namespace torch::dynamo::autograd

template <>
struct std::hash<torch::dynamo::autograd::CacheKey> {
  size_t operator()(const torch::dynamo::autograd::CacheKey& k) const {
    return k.hash();
  }
};
