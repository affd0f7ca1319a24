#include <torch/csrc/dynamo/python_compiled_autograd.h>

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>
#include <torch/csrc/dynamo/compiled_autograd.h>
#include <torch/csrc/jit/frontend/script_type_parser.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/python_headers.h>
#include <torch/csrc/utils/python_symnode.h>
#include <torch/csrc/utils/pythoncapi_compat.h>
#include <torch/csrc/utils/tensor_memoryformats.h>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

/*
[Note: Compiled Autograd]

Compiled autograd replaces the standard autograd engine by converting
the autograd graph to an FX graph that can be torch.compiled. It caches
this conversion using a shadow graph. We compare the new graph to the
shadow graph by walking the two graphs simultaneously and computing a
CacheKey for each original node to find the next edge in the shadow graph.
Two different graphs might have a shared common prefix in the shadow
graph, but then diverge at the first difference. Tensors, SavedVariables,
and SymInt found stored on the nodes in the autograd graph are lifted to
become inputs to the graph. All other properties (ints, floats, types,
etc.) are specialized using the CacheKey and will result in landing on
a different cache node in the shadow graph if some property differs.

To interact with the (hundreds) of different autograd::Node types,
we use a visitor pattern that walks each Node structure recursively.

- The first pass, compiled_args/collect, extracts all the inputs to the
graph and builds a CacheKey for us to specialize on.  On a cache hit,
we stop here and this is the only pass.

- On a cache miss, a second pass kicks in to extract the FX graph using
apply_with_saved, which uses another visitor pattern.  The before()
visitor swaps out all the Tensors, SavedVariables, and SymInt for
fake/symbolic versions to allow tracing.  We then run the standard apply()
method, and after() restores things to how we found them.

When we see tensor hooks, we record them directly in the output graph
without tracing into them.  We do this to avoid executing unsafe code
at trace time.

Notes:
  - We require hooks to not change shapes of tensors.
  - We require non-hook autograd nodes to be tracable.
*/

namespace torch::dynamo::autograd {
using c10::SymInt;

static PyObject* wrap_int_list(const std::vector<int64_t>& inputs) {
  PyObject* pyinput = PyTuple_New(static_cast<Py_ssize_t>(inputs.size()));
  for (const auto i : c10::irange(inputs.size())) {
    PyTuple_SET_ITEM(pyinput, i, PyLong_FromSsize_t(inputs[i]));
  }
  return pyinput;
}

static PyObject* convert_hook_list(std::vector<c10::SafePyObject>& inputs) {
  // inplace, consumes the input hooks
  PyObject* pyinput = PyTuple_New(static_cast<Py_ssize_t>(inputs.size()));
  for (const auto i : c10::irange(inputs.size())) {
    PyTuple_SET_ITEM(pyinput, i, inputs[i].release());
  }
  return pyinput;
}

// see https://github.com/pytorch/pytorch/pull/34845
static void throw_python_error() {
  python_error err;
  err.persist();
  // NOLINTNEXTLINE(misc-throw-by-value-catch-by-reference)
  throw err;
}

static PyObject* check(PyObject* pyresult) {
  if (C10_UNLIKELY(pyresult == nullptr)) {
    throw_python_error();
  }
  return pyresult;
}

static void check(bool result) {
  if (C10_UNLIKELY(!result))
    check(nullptr);
}

// snapshot of python verbose logging toggle
static PyObject* python_verbose_logger = nullptr;

struct PythonLogger {
  PythonLogger() = delete;
  explicit PythonLogger(PyObject* logger) : logger_(logger) {
    TORCH_INTERNAL_ASSERT(logger_ != nullptr);
  }

  enum Level : unsigned int {
    DEBUG = 0,
    INFO = 1,
    WARNING = 2,
    ERROR = 3,
    CRITICAL = 4,
    COUNT // Keep this as the last enum
  };

  // must be called while GIL is held
  void log(Level level, std::string_view msg) const {
    THPObjectPtr pymethod(PyUnicode_FromString(levelNames_[level].data()));
    TORCH_INTERNAL_ASSERT(pymethod != nullptr);
    THPObjectPtr pyfunc(PyObject_GetAttr(logger_, pymethod.get()));
    if (pyfunc == nullptr) {
      throw_python_error();
    }
    PyObject* result = PyObject_CallFunction(pyfunc.get(), "s", msg.data());
    if (result == nullptr) {
      throw_python_error();
    }
  }

 private:
  static constexpr std::array<std::string_view, COUNT> levelNames_ = {
      "debug", // Level::DEBUG
      "info", // Level::INFO
      "warning", // Level::WARNING
      "error", // Level::ERROR
      "critical" // Level::CRITICAL
  };

  // Note: logger_ must stay valid for the lifetime of this object
  PyObject* logger_;
};

struct VerboseLogger : public PythonLogger {
  static std::optional<VerboseLogger> maybe_create() {
    if (python_verbose_logger == nullptr) {
      return std::nullopt;
    }
    return VerboseLogger(python_verbose_logger);
  }

  VerboseLogger(PyObject* vlogger) : PythonLogger(vlogger) {}

  void log_node_check(
      const Node& fn,
      size_t size_inputs_num,
      std::unordered_set<CacheKey> cached_keys,
      const CacheKey& key,
      size_t node_idx) {
    std::string node_name =
        fn.name() + " (NodeCall " + std::to_string(node_idx) + ")";

    if (size_inputs_num > 0) {
      cumulative_sizes_per_node[size_inputs_num] = node_name;
    }

    if (!logged_node_miss && cached_keys.find(key) == cached_keys.end()) {
      _log_node_miss(typeid(fn), cached_keys, key, node_name);
      logged_node_miss = true;
    }
  }

  void _log_node_miss(
      const std::type_info& node_type,
      std::unordered_set<CacheKey> cached_keys,
      const CacheKey& key,
      const std::string& node_name) const {
    std::ostringstream oss;
    oss << "Cache miss due to new autograd node: " << node_name
        << " with key size " << std::to_string(key.key_size)
        << ", previous key sizes=[";

    for (auto it = cached_keys.begin(); it != cached_keys.end(); it++) {
      if (it->node_type != node_type) {
        continue;
      }
      oss << it->key_size;
      if (std::next(it) != cached_keys.end()) {
        oss << ",";
      }
    }
    oss << "]";
    log(PythonLogger::DEBUG, oss.str());
  }

  void log_dynamic_shapes_check(size_t size_idx) const {
    if (cumulative_sizes_per_node.empty()) {
      return;
    }

    auto it = cumulative_sizes_per_node.lower_bound(size_idx);
    TORCH_CHECK(it != cumulative_sizes_per_node.end());
    size_t start_idx =
        it == cumulative_sizes_per_node.begin() ? 0 : std::prev(it)->first;
    log(PythonLogger::DEBUG,
        "Cache miss due to changed shapes: marking size idx " +
            std::to_string(size_idx - start_idx) + " of " + it->second +
            " as dynamic");
  }

  // track which size index belongs to which node
  std::map<size_t, std::string> cumulative_sizes_per_node;
  // only log cache miss due to node key once
  bool logged_node_miss = false;
};

struct CacheNode {
  // A node in the shadow graph, we follow next edges until we reach the end of
  // the graph
  static CacheNode* root() {
    static CacheNode _root;
    return &_root;
  }

  CacheNode* lookup(const CacheKey& key, bool create = true) {
    auto it = next.find(key);
    if (it == next.end()) {
      if (!create)
        return nullptr;
      // caller's key is in temporary memory, must copy it
      CacheKeyBuffer buffer(key.key, key.key_size);
      CacheKey key_with_storage(key.node_type, buffer.get(), key.key_size);
      it = next.emplace(key_with_storage, std::make_unique<CacheNode>()).first;
      key_storage.emplace_back(std::move(buffer));
    }
    return it->second.get();
  }

  void clear() {
    next.clear();
    key_storage.clear();
    expected_sizes.clear();
    guarded_sizes.clear();
    size_guard = nullptr;
    runtime_wrapper = nullptr;
    compiled_fn = nullptr;
  }

  bool is_empty() const {
    return next.empty() && !compiled_fn;
  }

  CacheNode() : runtime_wrapper(nullptr), compiled_fn(nullptr) {}
  ~CacheNode() {
    if (!Py_IsInitialized()) {
      // leak on shutdown
      runtime_wrapper.release();
      compiled_fn.release();
      size_guard.release();
    }
  }
  CacheNode(CacheNode&&) = delete;
  CacheNode(const CacheNode&) = delete;
  CacheNode& operator=(const CacheNode&) = delete;
  CacheNode& operator=(CacheNode&&) = delete;

  bool check_dynamic_sizes(
      AutogradCompilerCall& call,
      const std::optional<VerboseLogger>& vlogger) {
    /*
    We start off by assuming everything is static, then we mark things
    as dynamic when we see them change.  This function:
      1) Checks for a cache hit
      2) Updates expected_sizes to track what is dynamic
      3) Populates call.dyn_size_inputs by filtering call.all_size_inputs
    */
    bool cache_hit = compiled_fn.get() != nullptr;
    auto len = call.all_size_inputs.size();
    const SizeInput* data = call.all_size_inputs.data();
    if (expected_sizes.empty()) {
      expected_sizes.reserve(len);
      for (const auto i : c10::irange(len)) {
        expected_sizes.emplace_back(data[i]);
      }
    }

    TORCH_INTERNAL_ASSERT(expected_sizes.size() == call.all_size_inputs.size());
    if (!call.size_input_origins.empty()) {
      TORCH_INTERNAL_ASSERT(
          call.all_size_inputs.size() == call.size_input_origins.size());
    }
    std::vector<uint32_t> dynamic_size_input_origins;
    dynamic_size_input_origins.reserve(len);
    for (const auto i : c10::irange(len)) {
      auto& expected = expected_sizes[i];
      bool was_dynamic = expected.dyn_type == SizeInput::DYNAMIC;
      bool changed_value = expected.value != data[i].value;
      // a size the capture read as a value: the graph holds for that value
      // only (see set_guarded_sizes)
      bool guarded = i < guarded_sizes.size() && guarded_sizes[i];
      if (changed_value) {
        if (!was_dynamic || guarded) {
          cache_hit = false;
          if (vlogger.has_value()) {
            vlogger->log_dynamic_shapes_check(i);
          }
        }
        expected = SizeInput(SizeInput::DYNAMIC, data[i].value);
      }

      if (changed_value || was_dynamic) {
        if (call.dyn_size_inputs.empty()) {
          call.dyn_size_inputs.reserve(len);
        }
        call.dyn_size_inputs.emplace_back(data[i].value);
        if (!call.size_input_origins.empty()) {
          dynamic_size_input_origins.emplace_back(call.size_input_origins[i]);
        }
      }
    }
    call.size_input_origins = std::move(dynamic_size_input_origins);

    if (cache_hit && size_guard) {
      THPObjectPtr sizes(
          PyTuple_New(static_cast<Py_ssize_t>(call.dyn_size_inputs.size())));
      for (const auto k : c10::irange(call.dyn_size_inputs.size())) {
        PyTuple_SET_ITEM(
            sizes.get(),
            static_cast<Py_ssize_t>(k),
            PyLong_FromSsize_t(call.dyn_size_inputs[k]));
      }
      THPObjectPtr holds(
          check(PyObject_CallOneArg(size_guard.get(), sizes.get())));
      int truth = PyObject_IsTrue(holds.get());
      if (truth < 0) {
        throw python_error();
      }
      cache_hit = truth == 1;
    }

    if (!cache_hit) {
      // we missed cache because static size inputs didn't match; force
      // recompilation with the varying size input as dynamic
      runtime_wrapper = nullptr;
      compiled_fn = nullptr;
      guarded_sizes.clear();
      size_guard = nullptr;
    }
    return cache_hit;
  }

  // After a capture: the guards it evaluated on its dynamic sizes hold on
  // every hit, or it recaptures.  The Python compiler records them:
  // size_guard, a predicate over the dynamic sizes; guarded_sizes, the
  // positions (among the dynamic size inputs) of sizes that a guard read
  // together with another symbol, compared by value.  The other dynamic
  // sizes match any value.
  void set_guarded_sizes(PyObject* py_compiler) {
    guarded_sizes.assign(expected_sizes.size(), false);
    size_guard = nullptr;
    if (PyObject_HasAttrString(py_compiler, "size_guard")) {
      THPObjectPtr guard(
          check(PyObject_GetAttrString(py_compiler, "size_guard")));
      if (guard.get() != Py_None) {
        size_guard = std::move(guard);
      }
    }
    if (!PyObject_HasAttrString(py_compiler, "guarded_sizes")) {
      return; // a compiler that does not record reads
    }
    THPObjectPtr positions(
        check(PyObject_GetAttrString(py_compiler, "guarded_sizes")));
    TORCH_INTERNAL_ASSERT(PyList_Check(positions.get()));
    std::vector<size_t> dynamic_index;
    for (const auto i : c10::irange(expected_sizes.size())) {
      if (expected_sizes[i].dyn_type == SizeInput::DYNAMIC) {
        dynamic_index.emplace_back(i);
      }
    }
    for (const auto k : c10::irange(PyList_GET_SIZE(positions.get()))) {
      auto pos = PyLong_AsSsize_t(PyList_GET_ITEM(positions.get(), k));
      TORCH_INTERNAL_ASSERT(
          pos >= 0 && static_cast<size_t>(pos) < dynamic_index.size());
      guarded_sizes[dynamic_index[pos]] = true;
    }
  }

  PyObject* wrap_dynamic_inputs() const {
    size_t dynamic_count = 0;
    size_t idx = 0;
    for (const auto& i : expected_sizes) {
      if (i.dyn_type == SizeInput::DYNAMIC) {
        ++dynamic_count;
      }
    }
    PyObject* pyinput = PyTuple_New(static_cast<Py_ssize_t>(dynamic_count));
    for (const auto& i : expected_sizes) {
      if (i.dyn_type == SizeInput::DYNAMIC) {
        PyTuple_SET_ITEM(pyinput, idx++, PyLong_FromSsize_t(i.value));
      }
    }
    TORCH_INTERNAL_ASSERT(idx == dynamic_count);
    return pyinput;
  }

  std::vector<std::optional<SymInt>> unwrap_dynamic_inputs(
      PyObject* pyresult) const {
    TORCH_INTERNAL_ASSERT(PyList_CheckExact(pyresult));
    size_t idx = 0;
    size_t result_len = PyList_GET_SIZE(pyresult);
    std::vector<std::optional<SymInt>> result;
    result.reserve(expected_sizes.size());
    for (const auto& i : expected_sizes) {
      if (i.dyn_type == SizeInput::DYNAMIC) {
        TORCH_INTERNAL_ASSERT(idx < result_len);
        result.emplace_back(
            py::cast<c10::SymInt>(PyList_GET_ITEM(pyresult, idx++)));
      } else {
        result.emplace_back();
      }
    }
    TORCH_INTERNAL_ASSERT(
        idx == result_len && result.size() == expected_sizes.size());
    return result;
  }

  std::unordered_map<CacheKey, std::unique_ptr<CacheNode>> next;
  std::vector<CacheKeyBuffer> key_storage;
  std::vector<SizeInput> expected_sizes;
  std::vector<bool> guarded_sizes;

  THPObjectPtr runtime_wrapper;
  THPObjectPtr compiled_fn;
  // the capture's guards on its dynamic sizes, a callable taking them as a
  // tuple (see set_guarded_sizes); null when it made none
  THPObjectPtr size_guard;
};

struct InputBuffers : public std::unordered_map<Node*, InputBuffer> {
  InputBuffer& lookup(Node* function) {
    auto it = emplace(function, InputBuffer(function->num_inputs())).first;
    return it->second;
  }
};

// ---------------------------------------------------------------------------
// Functional autograd: see [Note: Functional autograd in compiled autograd]
// (compiled_autograd.h).  libtorch_python side of PyCompilerInterface.

// A value of type Any (saved_data of a C++ autograd Function) travels
// through the graph as a pair (its static type as a TorchScript annotation,
// its Python value): a Python value alone cannot say which IValue it was
// (an empty list or dict has no element type to infer, None in a list of
// optionals neither), and T::backward reads it back with typed accessors
// (toIntVector, toTensorVector, ...) that check the exact type.  The type is
// taken without reading Tensor metadata (a dummy's sizes are unbacked), and
// top-level SymInts/SymFloats, which the capture lifts from ints and floats,
// are typed as the int/float they stand for.
static at::TypePtr static_type_of(const c10::IValue& iv) {
  if (iv.isTensor()) {
    return at::TensorType::get();
  }
  if (iv.isSymInt()) {
    return at::IntType::get();
  }
  if (iv.isSymFloat()) {
    return at::FloatType::get();
  }
  if (iv.isSymBool()) {
    return at::BoolType::get();
  }
  if (iv.isList()) {
    return at::ListType::create(c10::unshapedType(iv.toList().elementType()));
  }
  if (iv.isGenericDict()) {
    const auto dict = iv.toGenericDict();
    return at::DictType::create(
        c10::unshapedType(dict.keyType()), c10::unshapedType(dict.valueType()));
  }
  if (iv.isTuple()) {
    std::vector<at::TypePtr> elems;
    for (const c10::IValue& e : iv.toTupleRef().elements()) {
      elems.push_back(static_type_of(e));
    }
    return at::TupleType::create(std::move(elems));
  }
  return c10::unshapedType(iv.type());
}

static std::string any_type_str(const c10::IValue& iv) {
  return static_type_of(iv)->annotation_str();
}

static const at::TypePtr& parse_any_type(const std::string& str) {
  // called with the GIL held (from an op's arguments)
  static std::unordered_map<std::string, at::TypePtr> parsed;
  auto it = parsed.find(str);
  if (it == parsed.end()) {
    it = parsed.emplace(str, torch::jit::ScriptTypeParser().parseType(str))
             .first;
  }
  return it->second;
}

// Capture time: a packed IValue -> the Python value that goes into the FX
// graph (ScalarType/Layout/MemoryFormat become torch.dtype/layout/
// memory_format constants, SymInts stay symbolic so they get proxied).
static py::object packed_to_py(const c10::IValue& iv, const at::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::OptionalType:
      if (iv.isNone()) {
        return py::none();
      }
      return packed_to_py(
          iv, type->expectRef<c10::OptionalType>().getElementType());
    case c10::TypeKind::ListType: {
      const auto& elem = type->expectRef<c10::ListType>().getElementType();
      py::list result;
      for (const c10::IValue& v : iv.toListRef()) {
        result.append(packed_to_py(v, elem));
      }
      return std::move(result);
    }
    case c10::TypeKind::TupleType: {
      const auto& elems = type->expectRef<c10::TupleType>().elements();
      const auto& values = iv.toTupleRef().elements();
      TORCH_INTERNAL_ASSERT(elems.size() == values.size());
      py::tuple result(values.size());
      for (const auto i : c10::irange(values.size())) {
        result[i] = packed_to_py(values[i], elems[i]);
      }
      return std::move(result);
    }
    case c10::TypeKind::DictType: {
      const auto& value_type = type->expectRef<c10::DictType>().getValueType();
      const bool typed = value_type->kind() == c10::TypeKind::AnyType;
      py::dict result;
      for (const auto& entry : iv.toGenericDict()) {
        py::object value = packed_to_py(entry.value(), value_type);
        result[torch::jit::toPyObject(entry.key())] = typed
            ? py::make_tuple(any_type_str(entry.value()), std::move(value))
            : std::move(value);
      }
      return std::move(result);
    }
    case c10::TypeKind::ScalarTypeType:
      return py::reinterpret_borrow<py::object>(
          reinterpret_cast<PyObject*>(torch::getTHPDtype(iv.toScalarType())));
    case c10::TypeKind::LayoutType:
      return py::reinterpret_borrow<py::object>(
          reinterpret_cast<PyObject*>(torch::getTHPLayout(iv.toLayout())));
    case c10::TypeKind::MemoryFormatType:
      return py::reinterpret_borrow<py::object>(
          torch::utils::getTHPMemoryFormat(iv.toMemoryFormat()));
    case c10::TypeKind::TensorType:
      // undefined -> None
      return py::reinterpret_steal<py::object>(THPVariable_Wrap(iv.toTensor()));
    default:
      return torch::jit::toPyObject(iv);
  }
}

// An argument of an op back to its packed IValue, when the op runs (eagerly
// or on FakeTensors).  Any (values of a C++ autograd Function's saved_data)
// is rebuilt with the type it was packed with, except that SymInts and
// SymFloats, which the capture makes of lifted ints and floats, stay
// symbolic.
static c10::IValue py_to_packed(py::handle obj, const at::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::DictType: {
      // values of type Any come as (type, value) pairs (packed_to_py)
      const auto& dict_type = type->expectRef<c10::DictType>();
      if (dict_type.getValueType()->kind() != c10::TypeKind::AnyType) {
        break;
      }
      c10::impl::GenericDict dict(
          dict_type.getKeyType(), dict_type.getValueType());
      for (const auto& item : py::cast<py::dict>(obj)) {
        const auto pair = py::cast<py::tuple>(item.second);
        TORCH_INTERNAL_ASSERT(pair.size() == 2);
        py::handle value = pair[1];
        c10::IValue packed;
        if (torch::is_symint(value)) {
          packed = c10::IValue(py::cast<c10::SymInt>(value));
        } else if (torch::is_symfloat(value)) {
          packed = c10::IValue(py::cast<c10::SymFloat>(value));
        } else {
          packed = torch::jit::toIValue(
              value, parse_any_type(py::cast<std::string>(pair[0])));
        }
        dict.insert(
            torch::jit::toIValue(item.first, dict_type.getKeyType()),
            std::move(packed));
      }
      return c10::IValue(dict);
    }
    default:
      break;
  }
  return torch::jit::toIValue(obj, type);
}

// (layout, device, dtype, sizes, is_tensor_subclass): what a dummy output or
// ops.validate_outputs needs to know about one InputMetadata.
static at::TypePtr input_metadata_type() {
  static const at::TypePtr type = at::TupleType::create({
      at::LayoutType::get(),
      at::DeviceObjType::get(),
      at::ScalarTypeType::get(),
      at::ListType::ofSymInts(),
      at::BoolType::get(),
  });
  return type;
}

// A size of ops.validate_outputs' metadata that stands for the grad's own
// size at that dim (counted from the last, as broadcasting aligns them).
// See proxy_validate_outputs.  Sizes are never negative.
constexpr int64_t kGradSized = -1;

static c10::IValue pack_input_metadata(const InputMetadata& m) {
  TORCH_CHECK(!m.is_nested_tensor(), "NestedTensor not implemented");
  return c10::ivalue::Tuple::create(
      c10::IValue(m.layout()),
      c10::IValue(m.device()),
      c10::IValue(c10::typeMetaToScalarType(m.dtype())),
      c10::IValue(m.shape_as_dim_vector().vec()),
      c10::IValue(m.is_tensor_subclass()));
}

// grad: the grad this metadata validates, whose sizes fill in the
// kGradSized ones (undefined: there are none, see pack_input_metadata).
static InputMetadata unpack_input_metadata(
    const c10::IValue& iv,
    const at::Tensor& grad = at::Tensor()) {
  const auto& e = iv.toTupleRef().elements();
  TORCH_INTERNAL_ASSERT(e.size() == 5);
  auto options = at::TensorOptions()
                     .layout(e[0].toLayout())
                     .device(e[1].toDevice())
                     .dtype(e[2].toScalarType());
  auto sizes = e[3].toSymIntVector();
  // an undefined grad is not validated: its metadata is not read
  const int64_t offset =
      grad.defined() ? grad.dim() - static_cast<int64_t>(sizes.size()) : 0;
  for (const auto d : c10::irange(grad.defined() ? sizes.size() : 0)) {
    const auto& size = sizes[d];
    if (size.is_symbolic() || size.as_int_unchecked() != kGradSized) {
      continue;
    }
    TORCH_CHECK(
        offset >= 0,
        "[Compiled Autograd] a grad of ",
        grad.dim(),
        " dims for an input of ",
        sizes.size());
    sizes[d] = grad.sym_size(static_cast<int64_t>(d) + offset);
  }
  return InputMetadata(
      options,
      MetadataShape(SymIntSmallVec(sizes.begin(), sizes.end())),
      e[4].toBool(),
      /*is_nested=*/false);
}

static py::object output_metadata_to_py(
    const std::vector<std::optional<InputMetadata>>& output_metadata) {
  py::list result;
  for (const auto& m : output_metadata) {
    if (m.has_value()) {
      result.append(
          packed_to_py(pack_input_metadata(*m), input_metadata_type()));
    } else {
      result.append(py::none());
    }
  }
  return std::move(result);
}

// Opaque calls proxied so far (call_function, and note_proxied_call from
// the Python side): tells the capture loop whether a node's outputs are
// dummies of a proxied call (validate_outputs is then proxied too) or were
// traced inline, like a compiled region's copied AOT backward (validated at
// capture, as before).  A count, not a property of the node: whether a node
// proxies is decided inside its apply_with_saved (a PyNode's Python side, a
// CppNode compiled against stock or patched headers, a region's AOT copy),
// and a flag on Node or NodeCall would change the layout of classes the
// released libtorch and extensions built against it share.  The capture is
// single-threaded (compiled autograd refuses multithreaded backward), so
// the count before and after one apply_with_saved is that node's own.
static uint64_t proxied_call_count = 0;

struct PyCompilerInterfaceImpl : public PyCompilerInterface {
  // fn_name -> schema of its packed arguments; names bound into
  // torch._dynamo.compiled_autograd.ops (process-global, like `ops`).
  static std::unordered_map<std::string, std::vector<at::TypePtr>>& bound() {
    static std::unordered_map<std::string, std::vector<at::TypePtr>> map;
    return map;
  }

  void bind_function(
      PyObject* py_compiler,
      const std::string& fn_name,
      functional_apply_t fn,
      const std::vector<at::TypePtr>& schema,
      bool traceable) const override {
    if (bound().count(fn_name)) {
      return;
    }
    // What ops.<fn_name> runs: eagerly at runtime, on FakeTensors when
    // Dynamo/AOTAutograd trace the compiled autograd graph.
    py::cpp_function wrapped(
        [fn, schema](const py::list& pygrads, const py::args& pyargs) {
          variable_list grads;
          grads.reserve(pygrads.size());
          for (const py::handle& g : pygrads) {
            grads.emplace_back(
                g.is_none() ? at::Tensor() : py::cast<at::Tensor>(g));
          }
          TORCH_CHECK(
              pyargs.size() == schema.size(),
              "expected ",
              schema.size(),
              " packed arguments, got ",
              pyargs.size());
          ivalue_list packed;
          packed.reserve(schema.size());
          for (const auto i : c10::irange(schema.size())) {
            packed.emplace_back(py_to_packed(pyargs[i], schema[i]));
          }
          variable_list outputs;
          {
            pybind11::gil_scoped_release no_gil;
            outputs = fn(grads, packed);
          }
          return py::reinterpret_steal<py::object>(
              THPVariable_WrapList(outputs));
        });
    check(PyObject_CallMethod(
        py_compiler,
        "bind_function",
        "sOO",
        fn_name.c_str(),
        wrapped.ptr(),
        traceable ? Py_True : Py_False));
    bound().emplace(fn_name, schema);
  }

  variable_list call_function(
      PyObject* py_compiler,
      const std::string& fn_name,
      const variable_list& grads,
      const ivalue_list& packed,
      const std::vector<std::optional<InputMetadata>>& output_metadata)
      const override {
    return proxy_call(py_compiler, fn_name, grads, packed, output_metadata);
  }

  // grad_sized: packed[0] is ops.validate_outputs' metadata of a generated
  // node's grads, which grad_sized_metadata rewrites in place first (see
  // proxy_validate_outputs)
  static variable_list proxy_call(
      PyObject* py_compiler,
      const std::string& fn_name,
      const variable_list& grads,
      const ivalue_list& packed,
      const std::vector<std::optional<InputMetadata>>& output_metadata,
      bool grad_sized = false) {
    const auto& schema = bound().at(fn_name);
    TORCH_INTERNAL_ASSERT(schema.size() == packed.size());
    ++proxied_call_count;
    py::list pyargs;
    for (const auto i : c10::irange(packed.size())) {
      pyargs.append(packed_to_py(packed[i], schema[i]));
    }
    py::object pygrads =
        py::reinterpret_steal<py::object>(THPVariable_WrapList(grads));
    py::object pymeta = output_metadata_to_py(output_metadata);
    if (grad_sized) {
      THPObjectPtr ignored(check(PyObject_CallMethod(
          py_compiler,
          "grad_sized_metadata",
          "OO",
          pygrads.ptr(),
          py::object(pyargs[0]).ptr())));
    }
    THPObjectPtr pyresult(check(PyObject_CallMethod(
        py_compiler,
        "proxy_call_function",
        "sOOO",
        fn_name.c_str(),
        pygrads.ptr(),
        pyargs.ptr(),
        pymeta.ptr())));
    return THPVariable_UnpackList(pyresult.get());
  }

  void accumulate_grad(
      PyObject* py_compiler,
      const at::Tensor& variable,
      const at::Tensor& grad) const override {
    py::object pyvariable =
        py::reinterpret_steal<py::object>(THPVariable_Wrap(variable));
    py::object pygrad =
        py::reinterpret_steal<py::object>(THPVariable_Wrap(grad));
    THPObjectPtr pyresult(check(PyObject_CallMethod(
        py_compiler, "accumulate_grad", "OO", pyvariable.ptr(), pygrad.ptr())));
  }
};

// ops.validate_outputs: engine.cpp's functional validate_outputs (casts,
// sum_to / expand checks, device moves) as an opaque graph op, so the capture
// does not run it on fake tensors.  packed: [List[Optional[metadata]], str].
static variable_list validate_outputs_functional(
    const variable_list& grads,
    const ivalue_list& packed) {
  TORCH_INTERNAL_ASSERT(packed.size() == 2);
  const auto& packed_metadata = packed[0].toListRef();
  TORCH_INTERNAL_ASSERT(packed_metadata.size() == grads.size());
  std::vector<std::optional<InputMetadata>> metadata;
  for (const auto i : c10::irange(grads.size())) {
    const c10::IValue& m = packed_metadata[i];
    if (m.isNone()) {
      metadata.emplace_back();
    } else {
      metadata.emplace_back(unpack_input_metadata(m, grads[i]));
    }
  }
  const std::string& node_name = packed[1].toStringRef();
  variable_list outputs(grads);
  validate_outputs(metadata, outputs, [&](const std::string& msg) {
    std::ostringstream ss;
    ss << "[Compiled Autograd: " << node_name << "] " << msg;
    return ss.str();
  });
  return outputs;
}

static variable_list proxy_validate_outputs(
    PyObject* py_compiler,
    const NodeCall& call,
    const variable_list& outputs) {
  const Node& node = *call.node;
  const edge_list& edges = node.next_edges();
  TORCH_CHECK(
      outputs.size() == edges.size(),
      "[Compiled Autograd Tracing: ",
      node.name(),
      "] invalid number of gradients - expected ",
      edges.size(),
      ", but got ",
      outputs.size());
  // A generated node's formula (derivatives.yaml, a view's included)
  // computes each grad with its input's sizes, except where the input was
  // broadcast: that grad has the broadcast sizes and validate_outputs sums
  // it to the input's, at the dims where the input's size is 1 (or that it
  // lacks).  So of a size that is not 1 the op only needs to know that
  // (guarded at cache lookup, see grad_sized_metadata): given as
  // kGradSized, it is no graph input, and Dynamo makes no symbol for it to
  // find equal to the grad's own, a guard and a replacement each.  The node
  // says it is generated (CompiledNodeArgs::grads_sized_by_formula); a
  // custom Function's backward (PyNode, CppNode) or a hand-written or eager
  // node can return any sizes, and keeps the full check.
  const bool grad_sized = call.grads_sized_by_formula;
  bool any_defined = false;
  c10::impl::GenericList metadata(
      at::OptionalType::create(input_metadata_type()));
  // output i of the op: undefined stays undefined; validated against the
  // edge's metadata, or passed through when the edge is invalid.
  std::vector<std::optional<InputMetadata>> result_metadata(outputs.size());
  for (const auto i : c10::irange(outputs.size())) {
    const Edge& edge = edges[i];
    if (edge.is_valid()) {
      const InputMetadata& m = edge.function->input_metadata(edge.input_nr);
      metadata.push_back(pack_input_metadata(m));
      if (outputs[i].defined()) {
        result_metadata[i].emplace(m);
      }
    } else {
      metadata.push_back(c10::IValue());
      if (outputs[i].defined()) {
        result_metadata[i].emplace(outputs[i]);
      }
    }
    any_defined |= outputs[i].defined();
  }
  if (!any_defined) {
    return outputs; // nothing to validate
  }
  static const std::vector<at::TypePtr> schema = {
      at::ListType::create(at::OptionalType::create(input_metadata_type())),
      at::StringType::get(),
  };
  const PyCompilerInterface* iface = getPyCompilerInterface();
  iface->bind_function(
      py_compiler,
      "validate_outputs",
      &validate_outputs_functional,
      schema,
      /*traceable=*/true);
  return PyCompilerInterfaceImpl::proxy_call(
      py_compiler,
      "validate_outputs",
      outputs,
      {c10::IValue(metadata), c10::IValue(node.name())},
      result_metadata,
      grad_sized);
}

// The stream ops.accumulate_grads adds on: the current stream of the grad's
// device, where the compiled graph runs every other op.  InputBuffer::add
// given it as both producer and consumer stream adds there with no sync
// (nothing else is in flight for this grad); given no streams, it would add
// on the device's default stream, unordered with the graph's stream when
// backward runs under a side stream.  No stream for CPU (and other devices
// InputBuffer::add does not sync).
static std::optional<c10::Stream> accumulate_grads_stream(
    const at::Tensor& grad) {
  if (!grad.defined()) {
    return std::nullopt;
  }
  const auto device = grad.device();
  if (!device.is_cuda() && !device.is_privateuseone()) {
    return std::nullopt;
  }
  return c10::impl::VirtualGuardImpl{device.type()}.getStream(device);
}

// ops.accumulate_grads: what InputBuffer::add does with a second grad for an
// input that already has one (the engine's accumulate: out of place, dense +
// sparse in either order).  The capture records it as an opaque op instead
// of running InputBuffer::add on fake tensors, which would read (and bake
// in) their sizes, strides and devices.  grads: [the buffered grad, the new
// one]; nothing packed.
static variable_list accumulate_grads_functional(
    const variable_list& grads,
    const ivalue_list& packed) {
  TORCH_INTERNAL_ASSERT(grads.size() == 2 && packed.empty());
  InputBuffer buffer(1);
  for (const auto& grad : grads) {
    const auto stream = accumulate_grads_stream(grad);
    buffer.add(0, at::Tensor(grad), stream, stream);
  }
  return {std::move(buffer.buffer[0])};
}

static at::Tensor proxy_accumulate_grads(
    PyObject* py_compiler,
    const at::Tensor& buffered,
    const at::Tensor& grad) {
  const PyCompilerInterface* iface = getPyCompilerInterface();
  iface->bind_function(
      py_compiler,
      "accumulate_grads",
      &accumulate_grads_functional,
      {},
      /*traceable=*/true);
  // the sum is shaped like the buffered grad (both were validated against
  // the same input's metadata)
  return iface->call_function(
      py_compiler,
      "accumulate_grads",
      {buffered, grad},
      {},
      {InputMetadata(buffered)})[0];
}

static PyObject* the_autograd_compiler = nullptr;
static int default_dyn_type_int = 0;
static PyObject* set_autograd_compiler(PyObject* dummy, PyObject* args);

static PyObject* clear_cache(PyObject* dummy, PyObject* args) {
  HANDLE_TH_ERRORS;
  CacheNode::root()->clear();
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS;
}

// A proxied call recorded on the Python side (compiled_autograd.py:
// proxy_call_backward, a Python autograd.Function's call_backward) counts as
// any other: its outputs are dummies too.
static PyObject* note_proxied_call(PyObject* dummy, PyObject* args) {
  ++proxied_call_count;
  Py_RETURN_NONE;
}

// The id of the graph task whose backward compiled autograd runs on this
// thread, or -1.  The engine hands a graph task to compiled autograd without
// making it its current one (that happens in the engine's own worker loop),
// so torch._C._current_graph_task_id() is -1 while compiled autograd unpacks
// saved variables; saved-tensor hooks that key their state by backward
// (checkpointing recomputes once per graph task) read this one then.
static thread_local int compiled_autograd_graph_task_id = -1;
// The graph task itself, for hooks that ask whether the backward runs a node
// (register_multi_grad_hook counts the grads it waits for).  The engine ran
// compute_dependencies and init_to_execute on it before handing it over, so
// its nodes_in_graph_ and exec_info_ are the ones eager autograd consults.
static thread_local GraphTask* compiled_autograd_graph_task = nullptr;

struct GraphTaskIdGuard {
  explicit GraphTaskIdGuard(GraphTask& task)
      : prior_id_(compiled_autograd_graph_task_id),
        prior_task_(compiled_autograd_graph_task) {
    compiled_autograd_graph_task_id = task.id_;
    compiled_autograd_graph_task = &task;
  }
  GraphTaskIdGuard(const GraphTaskIdGuard&) = delete;
  GraphTaskIdGuard& operator=(const GraphTaskIdGuard&) = delete;
  ~GraphTaskIdGuard() {
    compiled_autograd_graph_task_id = prior_id_;
    compiled_autograd_graph_task = prior_task_;
  }

 private:
  int prior_id_;
  GraphTask* prior_task_;
};

static PyObject* current_graph_task_id(PyObject* dummy, PyObject* args) {
  return PyLong_FromLong(compiled_autograd_graph_task_id);
}

// torch._C._will_engine_execute_node, asked of the graph task compiled
// autograd runs: whether this backward runs the node `arg` (a grad_fn).
static PyObject* will_execute_node(PyObject* dummy, PyObject* arg) {
  HANDLE_TH_ERRORS;
  const bool is_python_node = THPFunction_Check(arg);
  TORCH_CHECK(
      is_python_node || THPCppFunction_Check(arg),
      "will_execute_node expects a grad_fn, but got ",
      Py_TYPE(arg)->tp_name);
  TORCH_CHECK(
      compiled_autograd_graph_task != nullptr,
      "will_execute_node should only be called during a backward that compiled autograd runs");
  std::shared_ptr<Node> node = is_python_node
      ? ((THPFunction*)arg)->cdata.lock()
      : ((THPCppFunction*)arg)->cdata;
  const GraphTask& task = *compiled_autograd_graph_task;
  bool runs = task.nodes_in_graph_.count(node.get()) > 0;
  if (runs && !task.exec_info_.empty()) {
    auto it = task.exec_info_.find(node.get());
    runs = it != task.exec_info_.end() && it->second.should_execute();
    TORCH_CHECK(
        !(runs && node->topological_nr() == 0 && it->second.captures_),
        "A leaf node was passed to will_execute_node but we are currently "
        "running autograd.grad(). This is currently not supported.");
  }
  return PyBool_FromLong(runs);
  END_HANDLE_TH_ERRORS;
}

// The retains_grad hooks of the backward that compiled autograd runs on this
// thread (AutogradCompilerCall::retains_grad_hooks), while its graph runs.
static thread_local const std::vector<std::pair<FunctionPreHook*, size_t>>*
    current_retains_grad_hooks = nullptr;

struct RetainsGradHooksGuard {
  explicit RetainsGradHooksGuard(
      const std::vector<std::pair<FunctionPreHook*, size_t>>* hooks)
      : prior_(current_retains_grad_hooks) {
    current_retains_grad_hooks = hooks;
  }
  RetainsGradHooksGuard(const RetainsGradHooksGuard&) = delete;
  RetainsGradHooksGuard& operator=(const RetainsGradHooksGuard&) = delete;
  ~RetainsGradHooksGuard() {
    current_retains_grad_hooks = prior_;
  }

 private:
  const std::vector<std::pair<FunctionPreHook*, size_t>>* prior_;
};

// call_retains_grad_hook(id, grad): runs the id-th retains_grad hook of the
// running backward on its grad, as the engine does after a node's tensor
// pre-hooks (the hook sets or accumulates the retained Tensor's .grad).
// The captured graph calls it; Dynamo runs it eagerly (a graph break).
static PyObject* call_retains_grad_hook(PyObject* dummy, PyObject* args) {
  HANDLE_TH_ERRORS;
  Py_ssize_t id = 0;
  PyObject* grad = nullptr;
  if (!PyArg_ParseTuple(args, "nO", &id, &grad)) {
    throw_python_error();
  }
  TORCH_CHECK(
      current_retains_grad_hooks != nullptr,
      "call_retains_grad_hook should only be called by the graph of a backward that compiled autograd runs");
  TORCH_CHECK(
      id >= 0 && static_cast<size_t>(id) < current_retains_grad_hooks->size(),
      "call_retains_grad_hook: no retains_grad hook ",
      id);
  TORCH_CHECK(
      THPVariable_Check(grad), "call_retains_grad_hook expects a Tensor");
  const auto& [hook, input_nr] = (*current_retains_grad_hooks)[id];
  variable_list values(input_nr + 1);
  values[input_nr] = THPVariable_Unpack(grad);
  (*hook)(values);
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS;
}

// The hooked saved variables of the backward whose graph runs on this thread
// (see SavedUnpacks in compiled_autograd.h), for ops.unpack_saved.  Their
// nodes keep their saved variables until the graph unpacked the last one,
// and release them then (SavedUnpacks::unpack).  A node the graph did not
// unpack to the end (it raised) releases them once the graph returns.
static thread_local SavedUnpacks* current_saved_unpacks = nullptr;

struct SavedUnpacksGuard {
  explicit SavedUnpacksGuard(SavedUnpacks* unpacks)
      : prior_(current_saved_unpacks), unpacks_(unpacks) {
    current_saved_unpacks = unpacks;
  }
  SavedUnpacksGuard(const SavedUnpacksGuard&) = delete;
  SavedUnpacksGuard& operator=(const SavedUnpacksGuard&) = delete;
  ~SavedUnpacksGuard() {
    current_saved_unpacks = prior_;
    if (!unpacks_->release_variables) {
      return;
    }
    for (auto& entry : unpacks_->entries) {
      if (unpacks_->pending.erase(entry.node.get()) != 0) {
        entry.node->release_variables();
      }
    }
  }

 private:
  SavedUnpacks* prior_;
  SavedUnpacks* unpacks_;
};

// What ops.unpack_saved runs: unpacks the index-th hooked saved variable of
// the running backward (its unpack hook runs now), as a list of one Tensor.
static PyObject* unpack_saved(PyObject* dummy, PyObject* arg) {
  HANDLE_TH_ERRORS;
  const Py_ssize_t index = PyLong_AsSsize_t(arg);
  if (index == -1 && PyErr_Occurred()) {
    return nullptr;
  }
  TORCH_CHECK(
      current_saved_unpacks != nullptr && index >= 0 &&
          static_cast<size_t>(index) < current_saved_unpacks->entries.size(),
      "ops.unpack_saved should only be called by the graph of a backward that compiled autograd runs");
  at::Tensor value = current_saved_unpacks->unpack(index);
  return THPVariable_WrapList({std::move(value)});
  END_HANDLE_TH_ERRORS;
}

// Whether the capture of fn unpacks its hooked saved variables in the graph
// (see SavedUnpacks): a generated node or a Python autograd Function records
// one opaque call and reads nothing of a saved value at capture.  The AOT
// backward of a compiled region is copied into the graph instead, and a C++
// autograd Function may run its backward at capture.
static bool unpack_saved_in_graph_enabled = true;

static PyObject* set_unpack_saved_in_graph(PyObject* dummy, PyObject* arg) {
  HANDLE_TH_ERRORS;
  TORCH_CHECK(PyBool_Check(arg), "set_unpack_saved_in_graph expects a bool");
  const bool prior = unpack_saved_in_graph_enabled;
  unpack_saved_in_graph_enabled = arg == Py_True;
  return PyBool_FromLong(prior);
  END_HANDLE_TH_ERRORS;
}

static bool unpacks_saved_in_graph(const Node& fn) {
  if (!unpack_saved_in_graph_enabled) {
    return false;
  }
  if (dynamic_cast<const TraceableFunction*>(&fn) != nullptr) {
    return true;
  }
  return dynamic_cast<const PyNode*>(&fn) != nullptr &&
      fn.name() != "CompiledFunctionBackward";
}

// [compiled autograd] Nodes that run eagerly.  Two errors from compiled_args
// say that a node cannot describe itself to compiled autograd: the default
// Node::compiled_args's, for a Node subclass without one, and the one the
// CppNode<T>::compiled_args of headers without functional autograd raises
// for a C++ autograd Function not marked is_traceable (a prebuilt
// torchvision's roi_align: the extension inlined that code, so nothing here
// can change it).  Both are std::runtime_errors with a fixed text.  Instead
// of failing the backward on them, the capture records one opaque call,
// ops.eager_node(grads, index), and the graph runs the live node itself (its
// apply(), as the engine would) by index; Dynamo graph-breaks on it.  Any
// other error still fails the backward (an Error node raises its message at
// collection on purpose), and so does one of these two raised after
// collecting anything: what was collected would be part of the graph.  The
// node's saved variables are released after the graph ran, not before.
static thread_local const std::vector<std::shared_ptr<Node>>*
    current_eager_nodes = nullptr;

struct EagerNodesGuard {
  EagerNodesGuard(
      const std::vector<std::shared_ptr<Node>>* nodes,
      bool release_variables)
      : prior_(current_eager_nodes),
        nodes_(nodes),
        release_variables_(release_variables) {
    current_eager_nodes = nodes;
  }
  EagerNodesGuard(const EagerNodesGuard&) = delete;
  EagerNodesGuard& operator=(const EagerNodesGuard&) = delete;
  ~EagerNodesGuard() {
    current_eager_nodes = prior_;
    if (release_variables_) {
      for (const auto& node : *nodes_) {
        node->release_variables();
      }
    }
  }

 private:
  const std::vector<std::shared_ptr<Node>>* prior_;
  const std::vector<std::shared_ptr<Node>>* nodes_;
  bool release_variables_;
};

// What ops.eager_node runs: the index-th eager node of the running backward.
static variable_list apply_eager_node(
    const variable_list& grads,
    const ivalue_list& packed) {
  TORCH_INTERNAL_ASSERT(packed.size() == 1);
  const int64_t index = packed[0].toInt();
  TORCH_CHECK(
      current_eager_nodes != nullptr && index >= 0 &&
          static_cast<size_t>(index) < current_eager_nodes->size(),
      "ops.eager_node should only be called by the graph of a backward that compiled autograd runs");
  Node& node = *(*current_eager_nodes)[index];
  return node(variable_list(grads));
}

static bool says_it_cannot_describe_itself(const std::runtime_error& e) {
  const std::string_view what = e.what();
  for (const std::string_view prefix :
       {"compiled_args not implemented: ",
        "Attempting to trace a potentially unsafe C++ autograd function: "}) {
    if (what.substr(0, prefix.size()) == prefix) {
      return true;
    }
  }
  return false;
}

// Collects fn's compiled_args; if it says it cannot before collecting
// anything, marks the node to run eagerly instead (see above).
static void collect_node_or_run_it_eagerly(
    const std::shared_ptr<Node>& fn,
    CompiledNodeArgs& node_args,
    NodeCall& call,
    AutogradCompilerCall& compiler_call) {
  const auto collected = [&]() {
    return std::make_tuple(
        node_args.key().key_size,
        compiler_call.tensor_args.inputs.size(),
        compiler_call.all_size_inputs.size(),
        compiler_call.lifted_ivalue_args.args.size(),
        compiler_call.hooks.size(),
        compiler_call.saved_unpacks.entries.size());
  };
  call.unpacks_saved_in_graph = unpacks_saved_in_graph(*fn);
  node_args.collect(call.unpacks_saved_in_graph);
  const auto before = collected();
  try {
    fn->compiled_args(node_args);
    return;
  } catch (const std::runtime_error& e) {
    if (!says_it_cannot_describe_itself(e) || collected() != before) {
      throw;
    }
  }
  call.eager_index = static_cast<int>(compiler_call.eager_nodes.size());
  call.grads_sized_by_formula = false; // it runs whole: the full check
  compiler_call.eager_nodes.emplace_back(fn);
  node_args.collect(fn->name());
  node_args.collect(static_cast<int64_t>(call.eager_index));
}

static variable_list proxy_eager_node(
    SwapSavedVariables& saved,
    const NodeCall& call,
    const variable_list& inputs) {
  static const std::vector<at::TypePtr> schema = {at::IntType::get()};
  ivalue_list packed{c10::IValue(static_cast<int64_t>(call.eager_index))};
  return proxy_functional_call(
      saved,
      *call.node,
      functional_op_name("eager_node", &apply_eager_node),
      &apply_eager_node,
      schema,
      inputs,
      std::move(packed),
      std::vector<bool>(call.node->num_outputs(), true),
      /*traceable=*/false);
}

static PyObject* is_cache_empty(PyObject* dummy, PyObject* args) {
  HANDLE_TH_ERRORS;
  if (CacheNode::root()->is_empty()) {
    Py_RETURN_TRUE;
  }
  Py_RETURN_FALSE;
  END_HANDLE_TH_ERRORS;
}

static PyObject* set_verbose_logger(PyObject* dummy, PyObject* args) {
  HANDLE_TH_ERRORS;
  PyObject* logger = nullptr;
  if (!PyArg_ParseTuple(args, "O", &logger)) {
    throw_python_error();
  }

  if (logger == Py_None) {
    python_verbose_logger = nullptr;
  } else {
    python_verbose_logger = logger;
  }
  Py_RETURN_TRUE;
  END_HANDLE_TH_ERRORS;
}

// NOLINTNEXTLINE(*array*)
static PyMethodDef _methods[] = {
    {"set_autograd_compiler", set_autograd_compiler, METH_VARARGS, nullptr},
    {"clear_cache", clear_cache, METH_NOARGS, nullptr},
    {"is_cache_empty", is_cache_empty, METH_NOARGS, nullptr},
    {"note_proxied_call", note_proxied_call, METH_NOARGS, nullptr},
    {"current_graph_task_id", current_graph_task_id, METH_NOARGS, nullptr},
    {"will_execute_node", will_execute_node, METH_O, nullptr},
    {"call_retains_grad_hook", call_retains_grad_hook, METH_VARARGS, nullptr},
    {"unpack_saved", unpack_saved, METH_O, nullptr},
    {"set_unpack_saved_in_graph", set_unpack_saved_in_graph, METH_O, nullptr},
    {"set_verbose_logger", set_verbose_logger, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef _module = {
    PyModuleDef_HEAD_INIT,
    "torch._C._dynamo.autograd_compiler",
    "Hooks for compiling autograd",
    -1,
    _methods};

PyObject* wrap_lifted_ivalue_args(
    const std::vector<LiftedIValueArg>& lifted_ivalue_args) {
  PyObject* pyivalueargs =
      PyList_New(static_cast<Py_ssize_t>(lifted_ivalue_args.size()));
  size_t idx = 0;
  for (const auto& arg : lifted_ivalue_args) {
    if (arg.actual_ptr->isInt() || arg.actual_ptr->isSymInt()) {
      PyList_SET_ITEM(
          pyivalueargs, idx++, PyLong_FromSsize_t(arg.actual_ptr->toInt()));
    } else if (arg.actual_ptr->isDouble() || arg.actual_ptr->isSymFloat()) {
      PyList_SET_ITEM(
          pyivalueargs, idx++, PyFloat_FromDouble(arg.actual_ptr->toDouble()));
    } else {
      TORCH_INTERNAL_ASSERT(false, "Unexpected lifted ivalue type");
    }
  }
  return pyivalueargs;
}

PyObject* wrap_node_origins(
    const AutogradCompilerCall& compiler,
    size_t dynamic_sizes) {
  TORCH_INTERNAL_ASSERT(
      compiler.tensor_args.input_origins.empty() ||
      (compiler.tensor_args.input_origins.size() ==
       compiler.tensor_args.inputs.size()));
  TORCH_INTERNAL_ASSERT(
      compiler.size_input_origins.empty() ||
      (compiler.size_input_origins.size() == dynamic_sizes));
  TORCH_INTERNAL_ASSERT(
      compiler.lifted_ivalue_args.args_origins.empty() ||
      (compiler.lifted_ivalue_args.args_origins.size() ==
       compiler.lifted_ivalue_args.args.size()));
  PyObject* pyallorigins = PyList_New(3);
  size_t next = 0;
  for (const std::vector<uint32_t>& vec :
       {compiler.tensor_args.input_origins,
        compiler.size_input_origins,
        compiler.lifted_ivalue_args.args_origins}) {
    PyObject* pyorigins = PyList_New(static_cast<Py_ssize_t>(vec.size()));
    for (const auto i : c10::irange(vec.size())) {
      uint32_t node_id = vec[i];
      PyObject* pyorigin = PyTuple_Pack(
          2,
          THPUtils_packUInt32(node_id),
          PyUnicode_FromString(
              compiler.node_calls.lookup(node_id).node->name().c_str()));
      PyList_SET_ITEM(pyorigins, i, pyorigin);
    }
    PyList_SET_ITEM(pyallorigins, next++, pyorigins);
  }
  return pyallorigins;
}

void set_ivalue_proxies(
    PyObject* fake_ivalue_args,
    std::vector<LiftedIValueArg>& lifted_ivalue_args) {
  TORCH_INTERNAL_ASSERT(PyList_Check(fake_ivalue_args));
  TORCH_INTERNAL_ASSERT(
      static_cast<size_t>(PyList_Size(fake_ivalue_args)) ==
      lifted_ivalue_args.size());

  for (const auto& i : c10::irange(lifted_ivalue_args.size())) {
    auto& arg = lifted_ivalue_args[i];
    if (arg.actual_ptr->isInt() || arg.actual_ptr->isSymInt()) {
      arg.proxy = at::IValue(
          py::cast<c10::SymInt>(PyList_GET_ITEM(fake_ivalue_args, i)));
      TORCH_INTERNAL_ASSERT(arg.proxy.isSymInt());
    } else if (arg.actual_ptr->isDouble() || arg.actual_ptr->isSymFloat()) {
      arg.proxy = at::IValue(
          py::cast<c10::SymFloat>(PyList_GET_ITEM(fake_ivalue_args, i)));
    } else {
      TORCH_INTERNAL_ASSERT(false, "Unexpected lifted ivalue type");
    }
  }
}

static TraceState call_begin_capture(
    PyObject* self,
    CacheNode& cache,
    AutogradCompilerCall& compiler_call,
    size_t num_outputs) {
  static PyObject* method_name = PyUnicode_InternFromString("begin_capture");
  THPObjectPtr pyinput(THPVariable_WrapList(compiler_call.tensor_args.inputs));
  THPObjectPtr pysizeinput(cache.wrap_dynamic_inputs());
  THPObjectPtr pyivalueargsinput(
      wrap_lifted_ivalue_args(compiler_call.lifted_ivalue_args.args));
  THPObjectPtr pynodeorigins(
      wrap_node_origins(compiler_call, PyTuple_GET_SIZE(pysizeinput.get())));
  THPObjectPtr pyresult(check(PyObject_CallMethodObjArgs(
      self,
      method_name,
      pyinput.get(),
      pysizeinput.get(),
      pyivalueargsinput.get(),
      pynodeorigins.get(),
      nullptr)));

  PyObject *fake_inputs{nullptr}, *fake_sizes{nullptr},
      *fake_ivalue_args{nullptr};
  check(PyArg_ParseTuple(
      pyresult.get(), "OOO", &fake_inputs, &fake_sizes, &fake_ivalue_args));

  variable_list proxy_inputs = THPVariable_UnpackList(fake_inputs);
  TORCH_INTERNAL_ASSERT(
      proxy_inputs.size() == compiler_call.tensor_args.inputs.size());
  for (const auto i : c10::irange(proxy_inputs.size())) {
    TensorArg& arg =
        compiler_call.tensor_args.lookup(compiler_call.tensor_args.inputs[i]);
    arg.proxy_tensor = proxy_inputs[i];
  }

  set_ivalue_proxies(fake_ivalue_args, compiler_call.lifted_ivalue_args.args);
  return TraceState(cache.unwrap_dynamic_inputs(fake_sizes), num_outputs);
}

static PyObject* call_end_capture(PyObject* self, const variable_list& inputs) {
  static PyObject* method_name = PyUnicode_InternFromString("end_capture");
  THPObjectPtr pyinput(THPVariable_WrapList(inputs));
  return check(
      PyObject_CallMethodObjArgs(self, method_name, pyinput.get(), nullptr));
}

struct ClosingTHPObjectPtr : public THPObjectPtr {
  ClosingTHPObjectPtr(PyObject* o) : THPObjectPtr(o) {}
  ClosingTHPObjectPtr(ClosingTHPObjectPtr&& other) = default;
  ClosingTHPObjectPtr(const ClosingTHPObjectPtr&) = delete;
  ClosingTHPObjectPtr& operator=(const ClosingTHPObjectPtr&) = delete;
  ClosingTHPObjectPtr& operator=(ClosingTHPObjectPtr&&) = default;
  ~ClosingTHPObjectPtr() {
    // Close the compiler also while an error is on its way out of the
    // capture (a Python error is then still set): close() exits the
    // contexts begin_capture entered, among them preserve_node_meta, whose
    // globals would otherwise outlive the capture and mislabel every FX
    // node traced after it.  The pending error is kept as it was.
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    static PyObject* method_name = PyUnicode_InternFromString("close");
    PyObject* result = PyObject_CallMethodObjArgs(get(), method_name, nullptr);
    if (result == nullptr) {
      PyErr_WriteUnraisable(get());
      PyErr_Clear();
    }
    Py_XDECREF(result);
    PyErr_Restore(type, value, traceback);
  }
};

// [compiled autograd] Root grads.  The capture validates the GraphRoot's
// outputs (the grads given to backward() or grad()) against the shapes their
// consumers expect, as the engine does.  At capture both sides are symbolic:
// a root grad's dims are those of a graph input, the expected shape is size
// inputs.  Comparing them there would guard the size inputs on the input's
// dims, and every new batch size would recapture.  Engine::execute has
// already validated the real root grads against the same metadata (a grad
// that only expands to its output's shape is summed there), so the shapes
// agree; that is checked again here on the real Tensors and is part of the
// cache key.  When it holds, the capture validates the root grads against
// metadata holding the grad's own (symbolic) shape: the dtype casts and
// device checks stay, no size is read.  Otherwise (a nested root grad) the
// capture validates them as before.
static bool root_grads_have_expected_shapes(const Node& graph_root) {
  const auto* root = dynamic_cast<const GraphRoot*>(&graph_root);
  if (root == nullptr || root->outputs.size() != root->num_outputs()) {
    return false;
  }
  for (const auto i : c10::irange(root->outputs.size())) {
    const Edge& edge = root->next_edge(i);
    const at::Tensor& grad = root->outputs[i];
    if (!edge.is_valid() || !grad.defined()) {
      continue;
    }
    const InputMetadata& expected =
        edge.function->input_metadata(edge.input_nr);
    if (grad.is_nested() || expected.is_nested_tensor() ||
        !expected.is_same_shape(grad)) {
      return false;
    }
  }
  return true;
}

static std::vector<std::optional<InputMetadata>> root_metadata_with_grad_shapes(
    const Node& root,
    const variable_list& grads) {
  std::vector<std::optional<InputMetadata>> metadata;
  metadata.reserve(root.num_outputs());
  for (const auto i : c10::irange(root.num_outputs())) {
    const Edge& edge = root.next_edge(i);
    if (!edge.is_valid()) {
      metadata.emplace_back();
      continue;
    }
    const InputMetadata& expected =
        edge.function->input_metadata(edge.input_nr);
    if (i >= grads.size() || !grads[i].defined()) {
      metadata.emplace_back(expected);
      continue;
    }
    const auto sizes = grads[i].sym_sizes();
    metadata.emplace_back(InputMetadata(
        expected.options(),
        MetadataShape(SymIntSmallVec(sizes.begin(), sizes.end())),
        expected.is_tensor_subclass(),
        /*is_nested=*/false));
  }
  return metadata;
}

static SizeInput::DynType get_default_dyn_type() {
  TORCH_INTERNAL_ASSERT(default_dyn_type_int >= 0 && default_dyn_type_int < 2);
  return default_dyn_type_int == 0 ? SizeInput::STATIC : SizeInput::DYNAMIC;
}

// Only call this function while holding GIL
CacheNode* _compiled_autograd_impl(
    const std::shared_ptr<Node>& graph_root,
    GraphTask& graph_task,
    bool accumulate_grad,
    const edge_list& output_edges,
    THPObjectPtr* graph_arg_inputs,
    THPObjectPtr* graph_arg_sizes,
    THPObjectPtr* graph_arg_ivalue_args,
    THPObjectPtr* graph_arg_hooks,
    std::vector<std::pair<FunctionPreHook*, size_t>>* retains_grad_hooks,
    std::vector<std::shared_ptr<Node>>* eager_nodes,
    SavedUnpacks* saved_unpacks) {
  std::unordered_map<Node*, int>& dependencies = graph_task.dependencies_;
  std::vector<std::shared_ptr<Node>> worklist{graph_root};
  AutogradCompilerCall compiler_call(get_default_dyn_type());

  for (const auto i : c10::irange(output_edges.size())) {
    compiler_call.node_calls
        .lookup(output_edges[i].function)
        // NOLINTNEXTLINE(*-narrowing-conversions)
        .mark_output(output_edges[i].input_nr, i);
  }
  const bool check_exec_info = !graph_task.exec_info_.empty();
  CacheNode* cache = CacheNode::root();
  std::vector<NodeCall*> calls;
  calls.reserve(
      check_exec_info ? graph_task.exec_info_.size() : dependencies.size() + 1);

  const bool root_shapes_checked = root_grads_have_expected_shapes(*graph_root);
  int i = 0;
  std::optional<VerboseLogger> vlogger = VerboseLogger::maybe_create();
  while (!worklist.empty()) {
    std::shared_ptr<Node> fn = std::move(worklist.back());
    worklist.pop_back();
    NodeCall& call = compiler_call.node_calls.lookup(fn);
    calls.emplace_back(&call);

    { // update cache and gather args into `compiler_call`
      CompiledNodeArgs node_args(compiler_call, call);
      if (vlogger.has_value()) {
        compiler_call.set_active_node_call_idx(i);
      }
      node_args.collect(call);
      // How many grads the node takes is structure: with sizes dynamic from
      // the first capture, no size input pins it any more (an unbind of 4
      // rows and one of 5 collect the same bytes otherwise)
      node_args.collect_size(call.node->num_inputs());
      if (node_args.cond(call.needed)) {
        // next edges first: the capture swaps their InputMetadata sizes
        // before apply_with_saved (generated nodes shape their dummy outputs
        // from them), and sizes are consumed in collection order
        node_args.collect(call.node->next_edges());
        collect_node_or_run_it_eagerly(fn, node_args, call, compiler_call);
        if (fn == graph_root) {
          node_args.collect(root_shapes_checked);
        }
      }
      CacheKey key = node_args.key();
      if (vlogger.has_value()) {
        std::unordered_set<CacheKey> cached_keys;
        for (const auto& [k, _] : cache->next) {
          cached_keys.emplace(k);
        }
        vlogger->log_node_check(
            *fn,
            compiler_call.all_size_inputs.size(),
            std::move(cached_keys),
            key,
            i);
      }
      cache = cache->lookup(key);
    }

    for (const auto& edge : fn->next_edges()) {
      if (!edge.is_valid()) {
        continue;
      }
      if (check_exec_info) {
        auto it = graph_task.exec_info_.find(edge.function.get());
        if (it == graph_task.exec_info_.end() || !it->second.should_execute()) {
          continue;
        }
        if (!it->second.needed_) {
          compiler_call.node_calls.lookup(edge.function).needed = false;
        }
      }
      auto it = dependencies.find(edge.function.get());
      TORCH_INTERNAL_ASSERT(it != dependencies.end());
      if (--it->second == 0) {
        dependencies.erase(it);
        worklist.emplace_back(edge.function);
      }
    }
    i++;
  }

  // TODO(jansel): some dynamic sizes seem to be ints not symints
  if (!cache->check_dynamic_sizes(compiler_call, vlogger)) {
    // cache miss, need to capture FX graph.  The hooked saved variables are
    // unpacked for real first, before the capture's modes are on (an unpack
    // hook may compute: checkpointing recomputes there); this graph run
    // takes those values
    for (auto& unpack : compiler_call.saved_unpacks.entries) {
      unpack.unpacked_at_capture = unpack.unpack();
    }
    ClosingTHPObjectPtr py_compiler(
        check(PyObject_CallNoArgs((the_autograd_compiler))));

    TraceState state = call_begin_capture(
        py_compiler, *cache, compiler_call, output_edges.size());
    InputBuffers input_buffers;

    for (size_t i = 0; i < calls.size(); i++) {
      NodeCall& call = *calls[i];

      std::string _node_name = call.node->name();
      THPObjectPtr node_name(PyUnicode_FromString(_node_name.data()));
      TORCH_INTERNAL_ASSERT(node_name != nullptr);
      THPObjectPtr set_node_origin(
          PyObject_GetAttrString(py_compiler.get(), "set_node_origin"));
      PyObject* pyobj = Py_None;
      if (auto pynode = std::dynamic_pointer_cast<PyNode>(call.node)) {
        pyobj = pynode->obj;
      }
      check(PyObject_CallFunction(
          set_node_origin, "OIO", node_name.get(), i, pyobj, nullptr));

      // TODO(jansel): consider adding some of this stuff:
      // guard(local_graph_task); NodeGuard ndguard(task.fn_); const auto
      // opt_parent_stream = (*func).stream(c10::DeviceType::CUDA);
      // c10::OptionalStreamGuard parent_stream_guard{opt_parent_stream};
      // CheckpointValidGuard cpvguard(graph_task);
      // at::getStepCallbacksUnlessEmpty(at::RecordScope::BACKWARD_FUNCTION);
      // if (C10_UNLIKELY(step_callbacks.has_value())) { ... }

      variable_list inputs =
          std::move(input_buffers.lookup(call.node.get()).buffer);
      input_buffers.erase(call.node.get());

      if (!call.tensor_pre_hooks.empty()) {
        THPObjectPtr pyinputs(THPVariable_WrapList(inputs));
        for (const auto& hook : call.tensor_pre_hooks) {
          pyinputs = check(PyObject_CallMethod(
              py_compiler,
              "tensor_pre_hook",
              "Oii",
              pyinputs.get(),
              hook.first,
              hook.second));
        }
        inputs = THPVariable_UnpackList(pyinputs);
      }
      for (const auto& hook : call.retains_grad_hooks) {
        // records the call; the grad goes on unchanged
        if (inputs[hook.second].defined()) {
          THPObjectPtr pygrad(THPVariable_Wrap(inputs[hook.second]));
          THPObjectPtr recorded(check(PyObject_CallMethod(
              py_compiler,
              "retains_grad_hook",
              "iO",
              hook.first,
              pygrad.get())));
        }
      }
      for (const auto& graph_output : call.graph_output) {
        int input_nr = graph_output.first;
        int output_index = graph_output.second;
        TORCH_INTERNAL_ASSERT(
            output_index < static_cast<int>(state.outputs.size()));
        TORCH_INTERNAL_ASSERT(!state.outputs[output_index].defined());
        state.outputs[output_index] = inputs[input_nr];
      }
      if (!call.needed) {
        continue;
      }
      if (!call.pre_hooks.empty()) {
        THPObjectPtr pyinputs(THPVariable_WrapList(inputs));
        for (const auto hook : call.pre_hooks) {
          pyinputs = check(PyObject_CallMethod(
              py_compiler.get(), "pre_hook", "Oi", pyinputs.get(), hook));
        }
        inputs = THPVariable_UnpackList(pyinputs);
      }

      for (const size_t idx : call.saved_unpacks) {
        SavedUnpack& unpack = compiler_call.saved_unpacks.entries[idx];
        if (unpack.proxy_tensor.defined()) {
          continue;
        }
        THPObjectPtr value(THPVariable_Wrap(unpack.unpacked_at_capture));
        THPObjectPtr proxy(check(PyObject_CallMethod(
            py_compiler.get(),
            "unpack_saved",
            "nO",
            static_cast<Py_ssize_t>(idx),
            value.get())));
        unpack.proxy_tensor = THPVariable_Unpack(proxy.get());
      }

      SwapSavedVariables saved(compiler_call, state, py_compiler.get(), call);
      saved.before(call.node->next_edges());
      const uint64_t calls_before = proxied_call_count;
      variable_list outputs = call.eager_index >= 0
          ? proxy_eager_node(saved, call, inputs)
          : call.node->apply_with_saved(inputs, saved);
      if (proxied_call_count != calls_before) {
        // dummy outputs: validating them here would bake in their metadata
        outputs = proxy_validate_outputs(py_compiler.get(), call, outputs);
      } else if (call.node == graph_root && root_shapes_checked) {
        // see "Root grads" above
        validate_outputs(
            root_metadata_with_grad_shapes(*call.node, outputs),
            outputs,
            [&](const std::string& msg) {
              std::ostringstream ss;
              ss << "[Compiled Autograd Tracing: " << call.node->name() << "] "
                 << msg;
              return ss.str();
            });
      } else {
        // traced inline (the copied AOT backward of a compiled region, ...):
        // validate the traced outputs at capture, as before, so that no op
        // separates them from their consumers (accumulate-grad reordering
        // relies on that)
        validate_outputs(
            call.node->next_edges(), outputs, [&](const std::string& msg) {
              std::ostringstream ss;
              ss << "[Compiled Autograd Tracing: " << call.node->name() << "] "
                 << msg;
              return ss.str();
            });
      }
      saved.after(call.node->next_edges());
      saved.debug_asserts();

      if (!call.post_hooks.empty()) {
        THPObjectPtr pyinputs(THPVariable_WrapList(inputs));
        THPObjectPtr pyoutputs(THPVariable_WrapList(outputs));
        for (const auto hook : call.post_hooks) {
          pyoutputs = check(PyObject_CallMethod(
              py_compiler.get(),
              "post_hook",
              "OOi",
              pyoutputs.get(),
              pyinputs.get(),
              hook));
        }
        outputs = THPVariable_UnpackList(pyoutputs);
      }
      for (const auto i : c10::irange(outputs.size())) {
        auto& output = outputs[i];
        const auto& next = call.node->next_edge(i);
        if (next.is_valid() && output.defined()) {
          // the first grad for an input is stored as is; the next ones are
          // summed by an opaque op, not by InputBuffer::add on fakes
          at::Tensor& slot =
              input_buffers.lookup(next.function.get()).buffer[next.input_nr];
          if (!slot.defined()) {
            slot = std::move(output);
          } else {
            slot = proxy_accumulate_grads(py_compiler.get(), slot, output);
          }
        }
      }
    }

    PyObject* res = check(call_end_capture(py_compiler, state.outputs));
    TORCH_CHECK(PyTuple_Check(res), "Expected end_capture to return tuple");
    TORCH_CHECK(
        PyTuple_Size(res) == 2,
        "Expected end_capture to return tuple of size 2");
    cache->runtime_wrapper = Py_NewRef(PyTuple_GetItem(res, 0));
    TORCH_CHECK(
        PyCallable_Check(cache->runtime_wrapper),
        "Expected end_capture to return runtime_wrapper");
    cache->compiled_fn = Py_NewRef(PyTuple_GetItem(res, 1));
    TORCH_CHECK(
        PyCallable_Check(cache->compiled_fn),
        "Expected end_capture to return compiled_fn");
    cache->set_guarded_sizes(py_compiler.get());
    state.debug_asserts();
  } // End cache miss region

  // TODO(jansel): clear grads we will overwrite below
  if (!graph_task.keep_graph_) {
    for (auto& call : calls) {
      // the others after the graph ran
      if (call->eager_index < 0 && call->saved_unpacks.empty()) {
        call->node->release_variables();
      }
    }
  }

  *graph_arg_inputs = THPVariable_WrapList(compiler_call.tensor_args.inputs);
  *graph_arg_sizes = wrap_int_list(compiler_call.dyn_size_inputs);
  *graph_arg_ivalue_args =
      wrap_lifted_ivalue_args(compiler_call.lifted_ivalue_args.args);
  *graph_arg_hooks = convert_hook_list(compiler_call.hooks);
  *retains_grad_hooks = std::move(compiler_call.retains_grad_hooks);
  *eager_nodes = std::move(compiler_call.eager_nodes);
  for (auto& unpack : compiler_call.saved_unpacks.entries) {
    unpack.proxy_tensor = at::Tensor(); // the capture's, not needed any more
  }
  *saved_unpacks = std::move(compiler_call.saved_unpacks);
  return cache;
}

// NOLINTNEXTLINE(cppcoreguidelines-special-member-functions)
struct LockGuardWithErrorLogs {
  LockGuardWithErrorLogs(std::mutex& mtx) : mtx_(mtx) {
    // Note: the standard allows try_lock to fail spuriously during races for
    // performance reasons, but it shouldn't happen here since we:
    // 1. disable multithreaded autograd
    // 2. plenty of latency between backward calls
    TORCH_INTERNAL_ASSERT(
        mtx_.try_lock(),
        "Trying to run compiled autograd within another compiled autograd call (e.g. reentrant checkpointing), this is not supported yet.");
  }

  ~LockGuardWithErrorLogs() {
    mtx_.unlock();
  }

  std::mutex& mtx_;
};

variable_list compiled_autograd(
    const std::shared_ptr<Node>& graph_root,
    GraphTask& graph_task,
    bool accumulate_grad,
    const edge_list& output_edges) {
  TORCH_CHECK(
      c10::impl::TorchDispatchModeTLS::stack_len() == 0,
      "TorchDispatchMode not yet implemented for compiled autograd")
  static std::mutex mtx;
  LockGuardWithErrorLogs lock_guard(mtx);
  pybind11::gil_scoped_acquire gil;
  at::ThreadLocalStateGuard tls_guard(graph_task.thread_locals_);
  GraphTaskIdGuard graph_task_id_guard(graph_task);

  THPObjectPtr inputs;
  THPObjectPtr sizes;
  THPObjectPtr ivalue_args;
  THPObjectPtr hooks;
  std::vector<std::pair<FunctionPreHook*, size_t>> retains_grad_hooks;
  std::vector<std::shared_ptr<Node>> eager_nodes;
  SavedUnpacks saved_unpacks;
  CacheNode* cache = _compiled_autograd_impl(
      graph_root,
      graph_task,
      accumulate_grad,
      output_edges,
      &inputs,
      &sizes,
      &ivalue_args,
      &hooks,
      &retains_grad_hooks,
      &eager_nodes,
      &saved_unpacks);
  RetainsGradHooksGuard retains_grad_hooks_guard(&retains_grad_hooks);
  EagerNodesGuard eager_nodes_guard(&eager_nodes, !graph_task.keep_graph_);
  saved_unpacks.release_variables = !graph_task.keep_graph_;
  SavedUnpacksGuard saved_unpacks_guard(&saved_unpacks);

  THPObjectPtr pyresult(check(PyObject_CallFunctionObjArgs(
      cache->runtime_wrapper.get(),
      cache->compiled_fn.get(),
      inputs.get(),
      sizes.get(),
      ivalue_args.get(),
      hooks.get(),
      NULL)));
  variable_list outputs = THPVariable_UnpackList(pyresult);
  TORCH_INTERNAL_ASSERT(outputs.size() == output_edges.size());
  return outputs;
}

static PyObject* set_autograd_compiler(PyObject* dummy, PyObject* args) {
  HANDLE_TH_ERRORS;
  PyObject* obj = nullptr;
  int b = 0;
  if (!PyArg_ParseTuple(args, "Op", &obj, &b)) {
    return nullptr;
  }

  TORCH_INTERNAL_ASSERT(b >= 0 && b < 2);
  PyObject* prior_compiler = the_autograd_compiler;
  PyObject* prior_dynamic = default_dyn_type_int == 0 ? Py_False : Py_True;
  default_dyn_type_int = b;
  if (obj == Py_None) { // disable
    the_autograd_compiler = nullptr; // decref not needed due to `prior`
    Engine::set_compiled_autograd(nullptr);
  } else { // enable
    Py_INCREF(obj);
    the_autograd_compiler = obj;
    Engine::set_compiled_autograd(&compiled_autograd);
  }

  if (prior_compiler == nullptr) {
    prior_compiler = Py_None;
  }
  PyObject* prior = PyTuple_New(2);
  PyTuple_SET_ITEM(prior, 0, prior_compiler);
  PyTuple_SET_ITEM(prior, 1, prior_dynamic);
  return prior;
  END_HANDLE_TH_ERRORS;
}

PyObject* torch_c_dynamo_compiled_autograd_init() {
  PyObject* mod = PyModule_Create(&_module);
  if (mod == nullptr) {
    return nullptr;
  }

#ifdef Py_GIL_DISABLED
  PyUnstable_Module_SetGIL(mod, Py_MOD_GIL_NOT_USED);
#endif
  setPyCompilerInterface(std::make_unique<PyCompilerInterfaceImpl>());
  return mod;
}

} // namespace torch::dynamo::autograd
