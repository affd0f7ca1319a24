# mypy: allow-untyped-defs
import contextlib
import functools
import operator
import sys
import threading
import traceback
import types
import weakref
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    TYPE_CHECKING,
    Union,
)

import torch
from torch._dynamo.code_context import code_context
from torch._dynamo.external_utils import (
    call_backward,
    call_hook,
    FakeCompiledAutogradEngine,
)
from torch._dynamo.source import GetItemSource, LocalSource
from torch._dynamo.utils import counters, lazy_format_graph_code, set_locals_to_steal
from torch._logging import getArtifactLogger, trace_structured
from torch._prims_common import clone_preserve_strides, make_contiguous_strides_for
from torch._subclasses import FakeTensorMode
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
from torch.fx import GraphModule
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.experimental._backward_state import BackwardState
from torch.fx.experimental.proxy_tensor import (
    decompose,
    disable_autocast_cache,
    disable_proxy_modes_tracing,
    fetch_object_proxy,
    fetch_sym_proxy,
    ProxyTorchDispatchMode,
    py_sym_types,
    PythonKeyTracer,
    set_proxy_slot,
    thunkify,
    track_tensor_tree,
)
from torch.fx.experimental.sym_node import SymNode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv
from torch.fx.passes.split_module import split_module
from torch.fx.traceback import preserve_node_meta, set_stack_trace
from torch.utils._ordered_set import OrderedSet
from torch.utils._python_dispatch import is_traceable_wrapper_subclass
from torch.utils._traceback import CapturedTraceback


if TYPE_CHECKING:
    from torch.fx.proxy import Proxy


# argument values a recorded call keeps as constants (see record_call)
_constant_arg_types = (
    int,
    float,
    bool,
    str,
    type(None),
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
)

compiled_autograd_log = getArtifactLogger(__name__, "compiled_autograd")
verbose_log = getArtifactLogger(__name__, "compiled_autograd_verbose")


class Op:
    """One functional autograd entry point: ``ops.<name>(grads, *packed)``.

    Wraps the C++ function a node bound (uniform signature: a list of
    gradients plus the node's packed saved values, returning a list of
    Optional[Tensor]).  A traceable op is registered with ``allow_in_graph``:
    Dynamo puts the call as-is into the graph it traces from the compiled
    autograd graph, and AOTAutograd traces through it by running the C++
    functional on FakeTensors; at runtime it runs on real tensors.  A
    non-traceable op (a C++ autograd Function not marked ``is_traceable``)
    is ``torch._dynamo.disable``d: Dynamo graph-breaks on it and it always
    runs eagerly.
    """

    def __init__(self, name: str, fn: Any, traceable: bool = True) -> None:
        self.fn = fn if traceable else torch._dynamo.disable(fn)
        self.traceable = traceable
        # a C++ autograd Function's op runs the user's T::backward, not a
        # torch formula (its name is the one CppNode<T> binds); an op Dynamo
        # does not trace (ops.eager_node runs a live node) runs code the
        # capture cannot see
        self.runs_user_code = name.startswith("CppNode_") or not traceable
        self.__name__ = name
        self.__qualname__ = name
        self.__module__ = "torch._dynamo.compiled_autograd.ops"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.__module__}.{self.__name__}"


# Node metadata of an AOT backward graph that its copy in the capture keeps.
_AOT_PROVENANCE_KEYS = (
    "stack_trace",
    "seq_nr",
    "original_aten",
    "nn_module_stack",
    "source_fn_stack",
    "fwd_nn_module_stack",
    "fwd_source_fn_stack",
    "custom",
)


class OpNamespace:
    """``torch._dynamo.compiled_autograd.ops``: the functional autograd ops,
    bound lazily (the first time a node type is captured)."""

    def __init__(self) -> None:
        self._ops: Dict[str, Op] = {}

    def add(self, name: str, fn: Any, traceable: bool = True) -> str:
        if name in self._ops:
            return name
        assert name.isidentifier() and not name.startswith("_"), name
        op = Op(name, fn, traceable)
        if traceable:
            torch._dynamo.allow_in_graph(op)
        self._ops[name] = op
        setattr(self, name, op)
        return name

    def get(self, name: str) -> Op:
        return self._ops[name]

    def __contains__(self, name: str) -> bool:
        return name in self._ops


ops = OpNamespace()


_below_python_key = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.Python)


def _accumulate_grad_python_key(variable, new_grad):
    """``inductor.accumulate_grad_`` at the Python dispatch key.

    A capture records AccumulateGrad as this op on the parameter.  Where the
    graph runs eagerly (a compiler that returns the graph as it is, or Dynamo
    running a region it cannot trace, such as one with a Tensor subclass
    that has no ``__tensor_flatten__``), the op meets the parameter itself.
    The Python fallback would hand it to the subclass's ``__torch_dispatch__``,
    which unwraps both Tensors and accumulates into the inner Tensors'
    ``.grad``: the parameter's own grad stayed None.  The AccumulateGrad node
    never dispatches itself to a subclass, only the ops it runs (detach,
    clone, add_).  Neither does this kernel: it runs the op's own kernel,
    below the Python key, or takes the first grad itself (_takes_first_grad).
    An active TorchDispatchMode sees the call first, as with the fallback.
    (Dynamo, when it traces the op, swaps in ``polyfills.accumulate_grad``,
    which sets ``.grad`` on the parameter.)
    """
    op = torch.ops.inductor.accumulate_grad_.default
    if torch._C._len_torch_dispatch_stack() > 0:
        types = tuple(
            {type(t) for t in (variable, new_grad) if type(t) is not torch.Tensor}
        )
        with torch.utils._python_dispatch._pop_mode_temporarily() as mode:
            return mode.__torch_dispatch__(op, types, (variable, new_grad), {})
    with torch._C.DisableTorchFunctionSubclass():  # as C++ reads them
        if _takes_first_grad(variable, new_grad):
            variable.grad = new_grad.detach()
            return None
    keys = (
        torch._C._dispatch_keys(variable) | torch._C._dispatch_keys(new_grad)
    ) & _below_python_key
    return op.redispatch(keys, variable, new_grad)


def _takes_first_grad(variable, new_grad) -> bool:
    """Whether AccumulateGrad takes ``new_grad`` as ``variable``'s first grad
    as it is (a detached alias, no copy): no grad yet, grad mode off, nothing
    else holds ``new_grad``, and it has the strides of ``variable``, a dense
    strided Tensor.  The op's own kernel decides the same (accumulateGrad,
    expecting 2 owners: the caller's Python object and the dispatcher's
    stack), but reached from this kernel it sees a third, the redispatch's
    stack, and copies (new_empty_strided, copy_) where eager's AccumulateGrad
    detaches.  Where this says no, that kernel decides; the grads it would
    also take (strides that differ only in size-1 dims, mkldnn) it copies."""
    from torch._prims_common import is_non_overlapping_and_dense

    return (
        variable.grad is None
        and not torch.is_grad_enabled()
        and variable.layout is torch.strided
        and new_grad.layout is torch.strided
        and not (variable.is_nested or new_grad.is_nested)
        and new_grad._use_count() <= 2
        and new_grad.stride() == variable.stride()
        and 0 not in new_grad.stride()
        and is_non_overlapping_and_dense(variable)
    )


_accumulate_grad_lib = torch.library.Library("inductor", "IMPL")  # noqa: TOR901
_accumulate_grad_lib.impl("accumulate_grad_", _accumulate_grad_python_key, "Python")


def aot_backward_prologue_op(forward_cls: Any) -> Op:
    """The op running the backward prologue of one compiled region
    (AOTAutograd's ``CompiledFunction``): ``op(grads, saved_tensors)``
    returns the backward graph's arguments after its symints.

    One op per region, cached on the class; graphs reference it directly
    (it is not in ``ops``, whose names are per node type).  It holds the
    class weakly, and Dynamo forgets it when it dies, so it keeps no
    compiled region alive."""
    owner = weakref.ref(forward_cls)

    def prologue(grads, saved_tensors):
        return owner()._backward_prologue_functional(  # type: ignore[union-attr]
            [], saved_tensors, *grads
        )

    return _region_op(forward_cls, "Prologue", prologue)


def aot_backward_epilogue_op(forward_cls: Any) -> Op:
    """The op running the backward epilogue of one compiled region whose
    grads are Tensor subclasses: ``op(outs)`` drops the token / RNG outputs
    and wraps the backward graph's outputs into the subclasses
    (``creation_fn`` of its subclass metadata).  Like the prologue op, one
    per region, held weakly."""
    owner = weakref.ref(forward_cls)

    def epilogue(outs):
        return owner()._backward_epilogue_functional(outs)  # type: ignore[union-attr]

    return _region_op(forward_cls, "Epilogue", epilogue)


def _region_op(forward_cls: Any, kind: str, fn: Any) -> Op:
    attr = f"_compiled_autograd_{kind.lower()}_op"
    op = forward_cls.__dict__.get(attr)
    if op is not None:
        return op
    op = Op(f"AOTBackward{kind}{forward_cls._aot_id}", fn)
    op.__module__ = __name__
    torch._dynamo.allow_in_graph(op)
    weakref.finalize(op, torch._dynamo.trace_rules._allowed_callable_ids.remove, id(op))
    setattr(forward_cls, attr, op)
    return op


def snapshot_verbose_logging_enabled():
    return torch._logging._internal.log_state.is_artifact_enabled(
        "compiled_autograd_verbose"
    )


def snapshot_cudagraph_enabled():
    return torch._inductor.config.triton.cudagraphs


class CompiledAutogradStrictError(RuntimeError):
    """A read of a dummy's metadata during a strict capture."""


class CompiledAutogradSubclassSizeError(RuntimeError):
    """A Tensor subclass built at capture read a size of a grad as a value."""


@contextlib.contextmanager
def _building_subclass_grads(names: str):
    # At capture a subclass grad is built from dummies, whose sizes have no
    # value: a constructor that reads one as a Python int (or asserts on it)
    # cannot run there; say which subclass, rather than a data-dependent
    # guard deep in its __init__.
    try:
        yield
    except torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode as err:
        raise CompiledAutogradSubclassSizeError(
            f"compiled autograd: building a {names} grad at capture read one of its "
            f"sizes as a value ({str(err).strip().splitlines()[0]}); at capture grads "
            "have no sizes yet. Keep the subclass's sizes symbolic in __init__ / "
            "__tensor_unflatten__, or run its forward eagerly."
        ) from err


class CompiledAutogradDummySizeError(RuntimeError):
    """A size of a dummy reached the captured graph: code traced inline at
    capture read the size of a grad, which at capture has no real size."""


class CompiledAutogradDummyGuardError(
    CompiledAutogradDummySizeError,
    torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode,
):
    """Code traced inline at capture read the size of a grad as a value (a
    guard on a dummy's size).  Still a data-dependent guard for the code that
    handles those (see _building_subclass_grads): made as one,
    ``(cond, message)``."""


def _in_tracer_bookkeeping() -> bool:
    # make_fx recording a value on its node (proxy_tensor.set_meta: the
    # snapshot in meta["val"], which re-wraps a subclass, and the best-effort
    # meta["tensor_meta"] with its contiguity queries) is not a read by the
    # capture: that metadata is dropped after the capture
    # (drop_capture_metadata)
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_extract_tensor_metadata" or (
            code.co_name == "set_meta" and code.co_filename.endswith("proxy_tensor.py")
        ):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def maybe_clone(x):
    if x is not None:
        return clone_preserve_strides(x)
    return x


def call_retains_grad_hook(hook_id: int, grad: torch.Tensor) -> None:
    """Runs the ``hook_id``-th retains_grad hook of the running backward on
    ``grad``: ``Tensor.retain_grad()`` on a non-leaf sets or accumulates that
    Tensor's ``.grad``.  The hook is a C++ closure over the Tensor, so the
    call runs eagerly: Dynamo does not trace this module (a graph break)."""
    torch._C._dynamo.compiled_autograd.call_retains_grad_hook(hook_id, grad)


_graph_placeholders = ["inputs", "sizes", "scalars", "hooks"]
_impure_targets = OrderedSet(
    [
        call_hook,
        call_retains_grad_hook,
        call_backward,
        FakeCompiledAutogradEngine._exec_final_callbacks_stub,
        torch.ops.inductor.accumulate_grad_.default,
    ]
)


class _SizeGuard:
    """The guards a capture evaluated on its size inputs, as one predicate
    over the dynamic sizes (CacheNode::check_dynamic_sizes calls it on a
    hit: False recaptures): sympy predicates over the sizes' symbols, and
    comparisons of a size with a constant, ``(idx, c, equal)`` for
    ``sizes[idx] == c`` (equal) or ``!=`` (see _LazySizeNode).  Answers are
    memoized per sizes tuple."""

    def __init__(
        self,
        predicates: List[Any],
        size_symbols: Dict[Any, int],
        compares: List[Tuple[int, int, bool]],
    ) -> None:
        self.predicates = predicates
        self.size_symbols = size_symbols
        self.compares = compares
        self.answers: Dict[Tuple[int, ...], bool] = {}

    def __call__(self, sizes: Tuple[int, ...]) -> bool:
        answer = self.answers.get(sizes)
        if answer is None:
            answer = all((sizes[i] == c) is eq for i, c, eq in self.compares)
            if answer and self.predicates:
                import sympy

                values = {
                    sym: sympy.Integer(sizes[idx])
                    for sym, idx in self.size_symbols.items()
                }
                answer = all(bool(p.xreplace(values)) for p in self.predicates)
            if len(self.answers) > 1024:
                self.answers.clear()
            self.answers[sizes] = answer
        return answer

    def __repr__(self) -> str:
        compares = [
            f"sizes[{i}] {'==' if eq else '!='} {c}" for i, c, eq in self.compares
        ]
        return f"_SizeGuard({' & '.join(compares + list(map(str, self.predicates)))})"


class _LazySizeNode(SymNode):
    """The node of a size input's SymInt in a dynamic capture, before its
    symbol exists.  Most size inputs only travel into the graph as arguments
    of proxied calls (AutogradCompilerInstance._node_arg records them as
    ``sizes[i]``), and making a ShapeEnv symbol for each of them is most of
    what a dynamic capture costs over a static one.  The first other use
    (arithmetic, a guard, a hint: any attribute a SymNode keeps) makes the
    symbol (``owner._make_size_node(self)``, which also registers it as a
    size input) and this node becomes that SymNode.  What C++ asks of any
    SymInt it is handed (is it an int, a constant, a nested int) is
    answered without,
    and printing one (a graph dump) shows its input, ``sizes[i]``:
    ``item``, that input's node in the graph (a SymNode has an
    ``fx_node`` of its own).

    Comparing it with a constant (``==``, ``!=``: validate_outputs checks
    a grad's size against the next node's, broadcasting asks ``== 1``)
    makes no symbol either: the answer is the collected value's, and
    ``owner.size_compares`` keeps it as a guard on the size (a recapture
    when it no longer holds), as a guard on its symbol would be kept.
    Found equal, the size is that constant from then on, as the symbol
    would have been specialized: a size compared with a static graph's
    constant (a Tensor from a forward compiled with static shapes) costs
    no symbol and no ShapeEnv guard."""

    def __init__(self, owner, idx: int, val: int, item: torch.fx.Node) -> None:
        # no SymNode.__init__: owner (the AutogradCompilerInstance) makes the
        # symbol (_make_size_node) and keeps comparisons (size_compares)
        self.__dict__.update(
            _lazy_owner=owner,
            _lazy_idx=idx,
            _lazy_val=val,
            _lazy_item=item,
            shape_env=owner.shape_env,
        )

    @property
    def _lazy_name(self) -> str:
        return f"sizes[{self._lazy_item.args[1]}]"

    @property
    def lazy(self) -> bool:
        return "_lazy_owner" in self.__dict__

    def __getattr__(self, name: str) -> Any:
        owner = self.__dict__.pop("_lazy_owner", None) if name[:2] != "__" else None
        if owner is None:
            raise AttributeError(name)
        self.__dict__.update(owner._make_size_node(self).__dict__)
        return getattr(self, name)

    def maybe_as_int(self):
        return None if self.lazy else super().maybe_as_int()

    def compare_to_constant(self, c: int) -> bool:
        """Whether this lazy size equals ``c``, kept as a guard on the size
        (``owner.size_compares``); found equal, it is ``c`` from then on
        (the symbol would have been replaced)."""
        equal = self._lazy_val == c
        self._lazy_owner.size_compares.append((self._lazy_idx, c, equal))
        if equal:
            del self.__dict__["_lazy_owner"]
            self.__dict__.update(SymNode.wrap_int(self, c).__dict__)
        return equal

    def _constant_compare(self, other, equal_is: bool):
        # the answer to ``self == other`` (equal_is=True) or ``self != other``
        # as a constant SymBool node, if other is a constant; else None
        c = other.maybe_as_int() if type(other) is SymNode else None
        if c is None or not self.lazy:
            return None
        equal = self.compare_to_constant(c)
        return SymNode.wrap_bool(self, equal is equal_is)  # shape_env is set

    def eq(self, other):
        answer = self._constant_compare(other, True)
        return super().eq(other) if answer is None else answer

    def ne(self, other):
        answer = self._constant_compare(other, False)
        return super().ne(other) if answer is None else answer

    def is_int(self) -> bool:
        return True

    def is_float(self) -> bool:
        return False

    def is_bool(self) -> bool:
        return False

    def is_nested_int(self) -> bool:
        return False if self.lazy else super().is_nested_int()

    def str(self):  # noqa: A003
        return self._lazy_name if self.lazy else super().str()

    def __repr__(self):
        return self._lazy_name if self.lazy else super().__repr__()


def _automatic_dynamic_state(graph: GraphModule) -> Dict[str, Any]:
    """Dynamo's automatic-dynamic state (pgo) for ``graph``'s forward code:
    what Dynamo has seen of each of its inputs, by source name."""
    from torch._dynamo.pgo import CodeId, get_code_state

    return get_code_state()[CodeId.make(type(graph).forward.__code__)].automatic_dynamic


def _generate_code(
    graph: GraphModule, compiled_fn, duck_sized_sizes: bool = True
) -> None:
    """Generates the code of a dynamic capture's graph (a _LazyGraphModule:
    see end_capture) if it has none yet, and sets up again what torch.compile
    would have set up had the graph had its code when the compiler wrapped
    it: the graph for Dynamo's node metadata, and the OptimizedModule's
    forward.  Something may have generated the code already (a compiler or a
    log reading ``graph.code``), before or after the compiler wrapped it: the
    setup is made again anyway, once per capture.  With
    ``duck_sized_sizes``, the code context also names the graph's size
    inputs, which Dynamo then duck sizes (see duck_sizes_size_input)."""
    from torch._dynamo.eval_frame import OptimizedModule

    if not isinstance(graph, _LazyGraphModule):
        return
    graph.real_recompile()
    context = code_context.get_context(type(graph).forward.__code__)
    context["orig_graphmodule"] = weakref.ref(graph)
    if duck_sized_sizes:
        context[SIZE_INPUTS_ARG] = _graph_placeholders[1]
    if isinstance(compiled_fn, OptimizedModule) and compiled_fn._orig_mod is graph:
        compiled_fn._initialize()


@contextlib.contextmanager
def _static_shapes(inputs: List[Any]):
    """Marks each plain input Tensor, and the base of each view among them,
    static in every dim (``torch._dynamo.mark_static``'s mark) for the time
    of the block: a Dynamo compile made in it makes no symbol for their
    sizes, whatever its ``dynamic``.  The marks are taken off after; a
    Tensor the user marked keeps its own."""
    marked = []
    for x in inputs:
        for t in (x, x._base if isinstance(x, torch.Tensor) else None):
            if type(t) in (torch.Tensor, torch.nn.Parameter) and not hasattr(
                t, "_dynamo_static_indices"
            ):
                t._dynamo_static_indices = set(range(t.dim()))
                marked.append(t)
    try:
        yield
    finally:
        for t in marked:
            del t._dynamo_static_indices


class _FirstSizesFirst:
    """A dynamic capture's compiled graph (see
    AutogradCompilerInstance.specialize_first_compile): ``specialized`` for
    the sizes of the capture, ``generic`` for any others.  With
    ``static_first_call``, the first call (the specialized graph's compile)
    sees its input Tensors' shapes static."""

    def __init__(
        self,
        specialized,
        generic,
        sizes: Tuple[int, ...],
        seed,
        static_first_call: bool = False,
    ) -> None:
        self.specialized = specialized
        self.generic = generic
        self.sizes = sizes
        self.seed = seed
        self.static_first_call = static_first_call

    def __call__(self, inputs, sizes, scalars, hooks):
        if tuple(sizes) == self.sizes:  # C++ passes a tuple: no copy
            # the specialized graph reads no size: Dynamo need not see them
            if self.static_first_call:
                self.static_first_call = False
                with _static_shapes(inputs):
                    return self.specialized(inputs, (), scalars, hooks)
            return self.specialized(inputs, (), scalars, hooks)
        if self.seed is not None:
            _generate_code(self.generic._orig_mod, self.generic)
            self.seed()
            self.seed = None
        return self.generic(inputs, sizes, scalars, hooks)


class _CompiledPiece(torch.nn.Module):
    # a compiled piece of a graph split at its unpacks (compile_split_at_unpacks)
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


class AutogradCompilerInstance:
    def __init__(self, compiler_fn, dynamic: bool = False) -> None:
        self.compiler_fn = compiler_fn
        # the collected sizes are symbolic from the first capture (see
        # config.compiled_autograd_dynamic_first_capture)
        self.dynamic = dynamic
        self.stack = contextlib.ExitStack()
        self.close = self.stack.close
        self.shape_env = ShapeEnv()
        self.fake_tensor_mode = FakeTensorMode(
            allow_fallback_kernels=True,
            allow_non_fake_inputs=True,
            shape_env=self.shape_env,
        )
        self.fx_tracer = PythonKeyTracer()
        self.proxy_mode = ProxyTorchDispatchMode(self.fx_tracer, "symbolic")
        self.hooks_proxy: Optional[Proxy] = None
        # the symbols of the dummies' sizes (see _dummy), and where the
        # capture is (set_node_origin), for strict-mode errors
        self.poisoned_symbols: Set[Any] = set()
        self.making_dummy = False
        # whether the graph unpacks saved variables (see unpack_saved)
        self.unpacks_saved = False
        self.strict_dummies = False
        self.size_pool: List[torch.SymInt] = []
        self.dummy_metas: Dict[Any, torch.Tensor] = {}
        self.node_origin: Optional[str] = None
        # how many times each compiled region's backward was copied so far
        self.aot_region_calls: Dict[int, int] = {}
        # [compiled autograd] Guarded sizes.  The symbol of each size input
        # (its position in `sizes`), and the positions of those that the
        # capture read as a value (a guard on it, silent under
        # _suppress_guards): the graph is only valid for the value it had,
        # so the C++ cache compares it (CacheNode::guarded_sizes) and a new
        # value recaptures.  The proxied calls of functional autograd read
        # none; a C++ node traced inline may.
        self.size_symbols: Dict[Any, int] = {}
        self.num_sizes = 0
        self.guarded_sizes: List[int] = []
        self.size_guard: Optional[_SizeGuard] = None
        # a lazy size input's comparisons with constants, (idx, c, equal):
        # guards on sizes[idx] == c (or !=) made without a symbol (see
        # _LazySizeNode), checked by size_guard with the predicates
        self.size_compares: List[Tuple[int, int, bool]] = []
        # rank of each graph input, None for a Parameter (static for Dynamo)
        self.input_ranks: List[Optional[int]] = []
        # a dynamic capture's sizes, scalars and input shapes as collected:
        # the first compile specializes them (see specialize_first_compile)
        self.first_sizes: Tuple[int, ...] = ()
        self.first_frame: List[Tuple[str, int, Any]] = []

    def wrap_fake(self, x, source):
        assert isinstance(x, torch.Tensor)
        return self.fake_tensor_mode.from_tensor(x, source=source)

    @staticmethod
    def source(name, idx) -> GetItemSource:
        return GetItemSource(LocalSource(name), idx)

    def begin_capture(
        self,
        inputs: List[torch.Tensor],
        sizes: List[int],
        scalars: List[Union[int, float]],
        origins: List[List[Tuple[int, str]]],
    ):
        counters["compiled_autograd"]["captures"] += 1
        self.fx_tracer.root = torch.nn.Module()
        self.fx_tracer.graph = torch.fx.Graph(tracer_cls=PythonKeyTracer)
        self.fx_tracer.tensor_attrs = {}
        args_proxy, sizes_proxy, scalars_proxy, self.hooks_proxy = (
            self.fx_tracer.create_proxy("placeholder", name, (), {})
            for name in _graph_placeholders
        )

        self.stack.enter_context(preserve_node_meta())
        inputs_origins, sizes_origins, scalars_origins = origins
        self.input_ranks = [
            None if isinstance(x, torch.nn.Parameter) else x.dim() for x in inputs
        ]
        if self.dynamic:
            self.first_sizes = tuple(sizes)
            self.first_frame = self.frame_state_entries(inputs, sizes, scalars)
        # tensor inputs to fake tensors
        inputs = [
            self.wrap_fake(x, self.source("inputs", idx))
            for idx, x in enumerate(inputs)
        ]
        self.bind_tensors_to_proxies(inputs, args_proxy, inputs_origins)

        # size inputs to symints (their symbols made on first use, see
        # _LazySizeNode)
        self.num_sizes = len(sizes)
        sizes = self.bind_size_inputs(sizes, sizes_proxy, sizes_origins)

        for idx, val in enumerate(scalars):
            source = self.source("scalars", idx)
            if isinstance(val, int):
                scalars[idx] = self.shape_env.create_unspecified_symint_and_symbol(
                    val,
                    source,
                    DimDynamic.DYNAMIC,
                )
            elif isinstance(val, float):
                scalars[idx] = self.shape_env.create_symfloatnode(
                    self.shape_env.create_unspecified_symbol(
                        val,
                        source=source,
                        dynamic_dim=DimDynamic.DYNAMIC,
                    ),
                    hint=val,
                    source=source,
                )
            else:
                raise AssertionError("Unexpected scalar type: ", type(val))
        self.bind_tensors_to_proxies(scalars, scalars_proxy, scalars_origins)

        # TODO(jansel): are all these modes needed?
        self.stack.enter_context(decompose({}))
        self.stack.enter_context(self.fake_tensor_mode)
        self.stack.enter_context(self.proxy_mode)
        self.stack.enter_context(disable_autocast_cache())
        # Needed to make sure we don't accidentally specialize any symbols
        assert self.fake_tensor_mode.shape_env is not None
        env = self.fake_tensor_mode.shape_env
        self.stack.enter_context(
            torch.fx.experimental.symbolic_shapes._suppress_guards(env)
        )
        if torch._dynamo.config.compiled_autograd_strict_dummies:
            self.strict_dummies = True
            self.install_strict_checks()
        self.install_dummy_guard_errors()
        if sizes:
            self.install_size_read_checks(set())
        return inputs, sizes, scalars

    def install_size_read_checks(self, guarded: Set[int]):
        # Every guard goes through evaluate_expr (guard_int, guard_bool,
        # guard_size_oblivious, expect_true).  One on size inputs alone
        # (s0 >= 0, Eq(s1, 4)) is kept as a predicate, checked by the cache
        # on every lookup (size_guard); one that also involves another
        # symbol (an input Tensor's dim) cannot be checked from the sizes,
        # so its sizes are compared by value (guarded_sizes).  See "Guarded
        # sizes" in __init__.
        import sympy

        env = self.shape_env
        evaluate_expr = env.evaluate_expr
        predicates: List[Any] = []

        def recording_evaluate_expr(orig_expr, *args, **kwargs):
            result = evaluate_expr(orig_expr, *args, **kwargs)
            symbols = getattr(orig_expr, "free_symbols", set())
            mine = [sym for sym in symbols if sym in self.size_symbols]
            if not mine:
                return result
            if len(mine) < len(symbols):
                guarded.update(self.size_symbols[sym] for sym in mine)
            elif isinstance(result, (bool, sympy.logic.boolalg.BooleanAtom)):
                predicates.append(orig_expr if result else sympy.Not(orig_expr))
            else:
                predicates.append(sympy.Eq(orig_expr, result))
            return result

        env.evaluate_expr = recording_evaluate_expr  # type: ignore[method-assign]

        def done():
            self.guarded_sizes = sorted(guarded)
            if predicates or self.size_compares:
                self.size_guard = _SizeGuard(
                    predicates, self.size_symbols, self.size_compares
                )

        self.stack.callback(done)

    def mark_graph_inputs_dynamic(self, graph: GraphModule, num_sizes: int):
        # With config.compiled_autograd_dynamic_graph_inputs, a dynamic
        # capture's graph is compiled with its size inputs and the dims of
        # its input Tensors (Parameters excepted) dynamic from the first
        # compile, as if Dynamo's automatic dynamic had already seen them
        # change, so that a new batch size reuses the compiled graph too.
        # A size that the compiled graph uses as a constant (a hook, a
        # custom Function's backward) is still specialized and guarded by
        # Dynamo, and a new value recompiles.  Nothing is set on the Tensors
        # themselves (they are the user's).
        from torch._dynamo.pgo import auto_dynamic, auto_unset, FrameStateSizeEntry

        if not torch._dynamo.config.automatic_dynamic_shapes:
            return
        state = _automatic_dynamic_state(graph)
        for idx in range(num_sizes):
            state[self.source("sizes", idx).name()] = FrameStateSizeEntry(
                scalar=auto_dynamic, size=auto_dynamic, stride=auto_dynamic
            )
        for idx, rank in enumerate(self.input_ranks):
            if rank:
                state[self.source("inputs", idx).name()] = FrameStateSizeEntry(
                    scalar=auto_dynamic, size=auto_dynamic, stride=auto_unset
                )

    def frame_state_entries(self, inputs, sizes, scalars) -> List[Tuple[str, int, Any]]:
        """What Dynamo's automatic dynamic records of a call of the graph with
        these (real) inputs: each size and int scalar, and the shape of each
        non-Parameter strided input Tensor, by its source (graph input and
        index: its name is only made if it is needed, see
        specialize_first_compile)."""
        entries: List[Tuple[str, int, Any]] = [
            ("sizes", idx, val) for idx, val in enumerate(sizes)
        ]
        entries.extend(
            ("scalars", idx, val) for idx, val in enumerate(scalars) if type(val) is int
        )
        for idx, x in enumerate(inputs):
            if (
                isinstance(x, torch.nn.Parameter)
                or x.layout != torch.strided
                or x.is_nested
            ):
                continue
            entries.append(("inputs", idx, (x.size(), x.stride())))
        return entries

    def specialize_first_compile(self, graph: GraphModule, compiled_fn):
        """[compiled autograd] The first compile of a dynamic capture's graph.

        Dynamo compiles a graph static first (automatic dynamic), and a
        dynamic capture's graph reads each of its sizes from ``sizes``: Dynamo
        then wraps and guards every one of them (hundreds for a transformer)
        where a static capture had them as constants.  So when the compiler is
        ``torch.compile`` with automatic dynamic, the first compile gets the
        graph's forward with the sizes of the capture as constants
        (forward_with_sizes_as_constants), and is only called with exactly
        those sizes (one tuple compare per call).  The first call with other
        sizes generates the capture's own graph's code (end_capture leaves it
        lazy) and compiles it with the same Dynamo context, after telling
        Dynamo's automatic dynamic what the first call saw, so that what
        changed compiles dynamic at once: the counts are those of Dynamo
        recompiling one graph (two compiles, the second dynamic), and the
        capture is not repeated.  A ``dynamic=False`` compile (upstream's
        benchmark harness, ``maybe_enable_compiled_autograd``) and a
        ``dynamic=True`` one take the same path, less the seeding: the first
        compiles every size static, and its first compile too would otherwise
        guard each size (``sizes[i] == v``); the second would otherwise trace
        the ops on a symbol per size at the first backward, where 2.7's first
        compile has the sizes as constants.  A ``dynamic=True`` first compile
        also takes its input Tensors' shapes static (_static_shapes), as 2.7's
        ends up with them: its static capture's graph ties each dim to a
        constant size, where a dynamic capture's graph leaves some untied (a
        saved view's base, whose dims the graph knows only as their product;
        a grad validated knowing only which sizes are 1), and Dynamo traced
        the first compile on those symbols.  Any other compiler (a plain
        function, a compiler of its own) gets the graph as is, its code
        generated once the compiler returns.
        """
        from torch._dynamo.eval_frame import DisableContext, OptimizedModule

        config = torch._dynamo.config
        if not (
            self.first_sizes
            and isinstance(compiled_fn, OptimizedModule)
            and compiled_fn._orig_mod is graph
            and not isinstance(compiled_fn.dynamo_ctx, DisableContext)
        ):
            return compiled_fn
        dynamic = getattr(compiled_fn.dynamo_ctx, "_dynamic", True)
        if not (
            dynamic is False
            or dynamic is True
            or (
                dynamic is None
                and config.automatic_dynamic_shapes
                and config.assume_static_by_default
            )
        ):
            return compiled_fn
        specialized = self.forward_with_sizes_as_constants(graph, self.first_sizes)
        if specialized is None:
            return compiled_fn
        first_frame = self.first_frame

        def seed():
            from torch._dynamo.pgo import FrameStateSizeEntry

            if dynamic is not None:  # static or dynamic throughout: nothing to tell
                return
            state = _automatic_dynamic_state(graph)
            for kind, idx, val in first_frame:
                entry = (
                    FrameStateSizeEntry.make_scalar(val)
                    if isinstance(val, int)
                    else FrameStateSizeEntry.make_tensor(tuple(val[0]), tuple(val[1]))
                )
                state[AutogradCompilerInstance.source(kind, idx).name()] |= entry

        return _FirstSizesFirst(
            compiled_fn.dynamo_ctx(specialized),
            compiled_fn,
            self.first_sizes,
            seed,
            static_first_call=dynamic is True,
        )

    @staticmethod
    def forward_with_sizes_as_constants(
        graph: GraphModule, sizes: Tuple[int, ...]
    ) -> Optional[Callable[..., Any]]:
        """``graph.forward``, bound to ``graph``, in which each ``sizes[i]``
        is the int ``sizes[i]``, as a static capture would have it; None if
        the graph uses ``sizes`` otherwise.

        Its code is generated from ``graph``'s own nodes, without the
        ``sizes[i]`` items and with each of their users' arguments holding
        the int for the time of the codegen: no copy of the graph, no second
        GraphModule (those cost about as much again as the codegen), and
        nothing for Dynamo to trace but what a static capture's graph has."""
        from torch.fx.graph import _Namespace
        from torch.fx.graph_module import _forward_from_src

        fx_graph = graph.graph
        (placeholder,) = fx_graph.find_nodes(op="placeholder", target="sizes")
        constants: Dict[torch.fx.Node, int] = {}
        for item in placeholder.users:
            if not (
                item.op == "call_function"
                and item.target is operator.getitem
                and isinstance(item.args[1], int)
            ):
                return None
            constants[item] = sizes[item.args[1]]
        users = {user for item in constants for user in item.users}
        nodes = [node for node in fx_graph.nodes if node not in constants]
        namespace = _Namespace()

        def as_constant(arg):
            return constants.get(arg, arg)

        def node_repr(node: torch.fx.Node) -> str:
            return namespace.create_name(node.name, node)

        # For the time of the codegen, each user of a size holds the int in
        # its args and kwargs (set through Node's own setters, which file the
        # users of each input), and each node is named in the codegen's
        # namespace, as Graph.python_code names them; all is put back after,
        # users in graph order, so each size's users keep their order.
        saved = [(node, node.args, node.kwargs) for node in nodes if node in users]
        repr_fns = [(node, node._repr_fn) for node in nodes]
        try:
            for node, args, kwargs in saved:
                node.args = torch.fx.node.map_arg(args, as_constant)
                node.kwargs = torch.fx.node.map_arg(kwargs, as_constant)
            for node in nodes:
                node._repr_fn = node_repr
            code = fx_graph._codegen._gen_python_code(nodes, "self", namespace)
        finally:
            for node, args, kwargs in saved:
                node.args = args
                node.kwargs = kwargs
            for node, fn in repr_fns:
                node._repr_fn = fn
        co_fields = getattr(fx_graph, "_co_fields", {})
        forward = _forward_from_src(code.src, code.globals, co_fields)
        return types.MethodType(forward, graph)

    # [functional autograd] Dummies.  The fakes handed from one proxied call to
    # the next are not computed, so their metadata means nothing; with
    # compiled_autograd_poison_dummies their sizes are unbacked size-like
    # symbols that no input binds, so that a guard on one raises instead of
    # baking a size into the capture.  dtype, device, layout and rank stay
    # real.  They are cheap: the dummies of one rank and dtype share their
    # sizes (one pool of symbols per capture) and one meta tensor, wrapped
    # anew for each value without a dispatch.  In strict mode every dummy has
    # sizes of its own, so that comparing two dummies is a read too.
    def _dummy(self, layout, device, dtype, sizes):
        """A dummy fake (call with no proxy mode) shaped like ``sizes``."""
        if torch._dynamo.config.compiled_autograd_poison_dummies and (
            layout == torch.strided
        ):
            if self.strict_dummies:
                symbols = [self._fresh_size() for _ in sizes]
            else:
                while len(self.size_pool) < len(sizes):
                    self.size_pool.append(self._fresh_size())
                symbols = self.size_pool[: len(sizes)]
            return self._fake_of_sizes(symbols, dtype, device)
        return torch.empty(size=sizes, dtype=dtype, layout=layout, device=device)

    def _fresh_size(self):
        with self.making_dummy_ctx(), self.shape_env.ignore_fresh_unbacked_symbols():
            size = self.shape_env.create_unbacked_symint()
            torch.fx.experimental.symbolic_shapes._constrain_range_for_size(size)
        self.poisoned_symbols.add(size.node.expr)
        return size

    def _fake_of_sizes(self, sizes, dtype, device):
        """A new contiguous fake of ``sizes`` (symbolic): the meta tensor of
        these sizes and dtype is built once per capture, then wrapped."""
        key = (
            tuple(s.node.expr if isinstance(s, torch.SymInt) else s for s in sizes),
            dtype,
        )
        with self.making_dummy_ctx(), unset_fake_temporarily():
            meta = self.dummy_metas.get(key)
            if meta is None:
                meta = self.dummy_metas[key] = torch.empty(
                    sizes, dtype=dtype, device="meta"
                )
            return FakeTensor(self.fake_tensor_mode, meta, torch.device(device))

    @contextlib.contextmanager
    def making_dummy_ctx(self):
        # building a dummy reads its own sizes: not a read by a proxied call
        before, self.making_dummy = self.making_dummy, True
        try:
            yield
        finally:
            self.making_dummy = before

    def is_dummy(self, x) -> bool:
        return isinstance(x, torch.Tensor) and any(
            isinstance(s, torch.SymInt) and s.node.expr in self.poisoned_symbols
            for s in x.shape
        )

    def _dummy_like(self, x):
        # what a hook returns: a new dummy like a dummy, a clone of the rest
        if self.is_dummy(x):
            return self._dummy(x.layout, x.device, x.dtype, [None] * x.dim())
        if is_traceable_wrapper_subclass(x):
            # clone_preserve_strides is an as_strided, which a subclass need
            # not support (DTensor has no sharding rule for it); its own
            # clone keeps its type, inner tensors and strides
            return x.clone()
        return maybe_clone(x)

    def _dummy_like_aot(self, v, memo: Dict[Any, Any]):
        """A dummy for a value of an AOT backward graph (``node.meta["val"]``,
        from AOT's shape env): its dtype, device, layout and rank are kept,
        and its sizes are renamed (``memo``): a number stays that number; a
        symbol that is one of the AOT graph's SymInt inputs is the value the
        capture binds to it (_aot_symint_memo); every other distinct size (a
        symbol or an expression) becomes one fresh unbacked symbol.  So
        values AOT knew to be the same size still are (a subclass's inner
        tensors, see aot_backward_epilogue_op) without telling the capture
        more than the AOT graph does.  NotImplemented where there is no
        dummy for it."""
        if isinstance(v, torch.Tensor):
            if v.layout != torch.strided or type(v) is not torch._subclasses.FakeTensor:
                return NotImplemented
            sizes = [self._renamed_size(s, memo) for s in v.shape]
            return self._fake_of_sizes(sizes, v.dtype, v.device)
        if isinstance(v, torch.SymInt):
            return self._renamed_size(v, memo)
        if isinstance(v, (list, tuple)):
            items = [self._dummy_like_aot(x, memo) for x in v]
            if any(x is NotImplemented for x in items):
                return NotImplemented
            return type(v)(items)
        if isinstance(v, (torch.SymFloat, torch.SymBool)):
            return NotImplemented
        return v

    def _with_outer_metadata(self, out, metadata):
        """A fake like ``out`` with the (real) metadata of a forward input: a
        plain tensor, or the same subclass around the same inner values."""
        layout, device, dtype, size = metadata
        if not is_traceable_wrapper_subclass(out):
            return torch.empty(size=size, dtype=dtype, layout=layout, device=device)
        attrs, ctx = out.__tensor_flatten__()
        with self.making_dummy_ctx():
            return type(out).__tensor_unflatten__(
                {a: getattr(out, a) for a in attrs},
                ctx,
                size,
                make_contiguous_strides_for(size),
            )

    @staticmethod
    def _aot_symint_memo(bw_module: GraphModule, symints: List[Any]) -> Dict[Any, Any]:
        """The renaming (see _dummy_like_aot) of each symbol of the AOT graph
        that is one of its SymInt inputs: the value the capture binds to that
        input (a collected size), so that a size of a dummy that AOT knew to
        be that input is that size.  A subclass's constructor then finds its
        inner sizes equal to its outer ones, which the epilogue computes from
        those inputs; and a read of such a size is a guard on a collected
        size, which the capture records (size_guard) like any other."""
        import sympy

        memo: Dict[Any, Any] = {}
        nodes = bw_module.graph.find_nodes(op="placeholder")[: len(symints)]
        for node, value in zip(nodes, symints):
            aot = node.meta.get("val")
            if isinstance(aot, torch.SymInt) and isinstance(
                aot.node.expr, sympy.Symbol
            ):
                memo.setdefault(aot.node.expr, value)
        return memo

    def _renamed_size(self, s, memo: Dict[Any, Any]):
        if not isinstance(s, torch.SymInt) or s.node.expr.is_number:
            # a size the AOT graph has as a number is one every run of that
            # graph has (its region was compiled for it): not a dummy's
            return int(s)
        key = s.node.expr
        if key not in memo:
            with self.shape_env.ignore_fresh_unbacked_symbols():
                memo[key] = self.shape_env.create_unbacked_symint()
            self.poisoned_symbols.add(memo[key].node.expr)
        return memo[key]

    # [functional autograd] Strict capture (compiled_autograd_strict_dummies).
    def install_strict_checks(self):
        env = self.shape_env
        evaluate_expr = env.evaluate_expr
        defer_runtime_assert = env.defer_runtime_assert

        def checked_evaluate_expr(orig_expr, *args, **kwargs):
            self.check_no_dummy_metadata("a guard on", orig_expr)
            return evaluate_expr(orig_expr, *args, **kwargs)

        def checked_defer_runtime_assert(orig_expr, *args, **kwargs):
            self.check_no_dummy_metadata("a runtime assert on", orig_expr)
            return defer_runtime_assert(orig_expr, *args, **kwargs)

        env.evaluate_expr = checked_evaluate_expr  # type: ignore[method-assign]
        env.defer_runtime_assert = checked_defer_runtime_assert  # type: ignore[method-assign]

    def install_dummy_guard_errors(self):
        # A guard on a dummy's size fails, as any guard on an unbacked symbol
        # does (the dummies' sizes are unbacked, see _dummy): only code
        # traced inline on dummies makes one, a C++ node whose
        # apply_with_saved is not functional reading a grad's size as a
        # value.  The error says which node and what to do, rather than a
        # data-dependent guard from deep in the node's C++.
        env = self.shape_env
        make_error = env._make_data_dependent_error

        def dummy_guard_error(expr, unhinted_expr, **kwargs):
            err = make_error(expr, unhinted_expr, **kwargs)
            symbols = getattr(unhinted_expr, "free_symbols", set())
            if self.making_dummy or not symbols & self.poisoned_symbols:
                return err
            return CompiledAutogradDummyGuardError(
                err.cond,
                f"compiled autograd: {self.node_origin or 'a node'} read a size of a "
                f"grad as a value ({str(err).strip().splitlines()[0]}) while traced "
                "inline at capture, where grads have no real sizes. A C++ autograd "
                "Function is captured as one opaque call when its extension is built "
                "against the installed torch's headers: rebuild it; a custom C++ Node "
                "cannot read its grads' sizes at capture: run that backward without "
                "compiled autograd",
            )

        env._make_data_dependent_error = dummy_guard_error  # type: ignore[method-assign]

    def check_no_dummy_metadata(self, what, expr, origin=None):
        if self.making_dummy:
            return
        symbols = getattr(expr, "free_symbols", set()) & self.poisoned_symbols
        if symbols and not _in_tracer_bookkeeping():
            raise CompiledAutogradStrictError(
                f"compiled autograd strict capture: {origin or self.node_origin or 'the capture'} "
                f"used the metadata of a dummy ({what} {expr}, dummy sizes "
                f"{sorted(map(str, symbols))}); a proxied call must not read the sizes "
                f"of its inputs at capture\nPython stack:\n"
                f"{''.join(traceback.format_stack())}\nC++ stack:\n"
                f"{torch._C._get_cpp_backtrace(0, 64)}"
            )

    def check_no_sym_reads_of_dummies(self):
        # A size/stride of a dummy that reached the graph (a sym_size node
        # with users) is a read that did not guard: still a read.  Checked in
        # every mode, not only in strict mode: the dummies of one rank share
        # their size symbols (_dummy), and FX binds a symbol to the first
        # proxy that carried it (bind_dummies), so outside strict mode such a
        # node would read the size of another tensor, a wrong graph.  Only
        # code traced inline on dummies makes one: a C++ node whose
        # apply_with_saved is not functional (an extension compiled against
        # torch headers without functional compiled autograd, a custom Node).
        sym_ops = (
            torch.ops.aten.sym_size.int,
            torch.ops.aten.sym_stride.int,
            torch.ops.aten.sym_numel.default,
            torch.ops.aten.sym_storage_offset.default,
        )
        for node in self.fx_tracer.graph.nodes:
            if node.meta.get("compiled_autograd_aot_copy"):
                continue  # a node of an AOT backward graph, copied as is
            if node.op == "call_function" and node.target in sym_ops:
                src = node.args[0]
                if isinstance(src, torch.fx.Node) and self.is_dummy(
                    src.meta.get("val")
                ):
                    origin = (
                        (node.meta.get("stack_trace") or "").strip().splitlines()
                        or [None]
                    )[-1]
                    expr = node.meta["val"].node.expr
                    if self.strict_dummies:
                        self.check_no_dummy_metadata(
                            f"{node.target}, used by {[u.name for u in node.users]}",
                            expr,
                            origin=origin,
                        )
                    elif getattr(expr, "free_symbols", set()) & self.poisoned_symbols:
                        raise CompiledAutogradDummySizeError(
                            f"compiled autograd: {(origin or 'a node').strip()} read a size of a grad "
                            f"({node.target}) while traced inline at capture, where grads have no real "
                            "sizes; a C++ autograd node must be captured as one opaque call: rebuild the "
                            "C++ extension that defines it against the installed torch's headers"
                        )

    def drop_capture_metadata(self):
        # The capture's fakes of computed nodes are dummies (or derived from
        # them): no pass after the capture may read them.  Graph inputs keep
        # theirs (they are the real inputs' fakes).
        for node in self.fx_tracer.graph.nodes:
            if node.op == "placeholder" or self.is_placeholder(node):
                continue
            for key in ("val", "tensor_meta", "example_value", "unbacked_bindings"):
                node.meta.pop(key, None)

    def proxy_call_backward(
        self,
        inputs,
        output_metadatas,
        saved_tensors,
        backward_idx: int,
        ctx: Optional[torch.autograd.function.BackwardCFunction] = None,
        backward_state_idx: Optional[int] = None,
        zeros_metadatas: Optional[Sequence[Any]] = None,
    ):
        """Records the backward of a Python autograd.Function (a PyNode)
        without running it: one ``call_backward`` call, or, for the backward
        of a compiled region, see proxy_call_aot_backward.  Where
        ``zeros_metadatas[i]`` is (layout, device, dtype, size), grad i is
        undefined and the backward gets zeros of that metadata, as the
        engine materializes them (see record_zeros)."""
        assert self.hooks_proxy is not None
        forward_cls = getattr(ctx, "_forward_cls", None)
        if hasattr(forward_cls, "_backward_prologue_functional"):
            return self.proxy_call_aot_backward(
                inputs,
                ctx,
                saved_tensors,
                backward_state_idx,
                output_metadatas,
                zeros_metadatas,
            )
        inputs = self.record_zeros(inputs, zeros_metadatas)
        assert backward_state_idx is None, "only compiled regions have a BackwardState"
        backward_c_function = self.hooks_proxy[backward_idx]  # type: ignore[index]
        proxies = self.record_call(
            call_backward, (backward_c_function, saved_tensors, *inputs)
        )
        # its outputs are dummies: the capture loop validates them with an op
        torch._C._dynamo.compiled_autograd.note_proxied_call()

        with disable_proxy_modes_tracing():
            # create fake Tensors
            grad_ins: List[Optional[torch.Tensor]] = []
            for output_metadata in output_metadatas:
                if output_metadata is None:
                    grad_ins.append(None)
                    continue

                layout, device, dtype, size = output_metadata
                grad_ins.append(self._dummy(layout, device, dtype, size))
            self.bind_dummies(grad_ins, proxies)
        return tuple(grad_ins)

    def record_zeros(self, grads, zeros_metadatas, traced: bool = False):
        """``grads`` with the zeros the engine materializes for an undefined
        grad (PyNode::to_py_args) where ``zeros_metadatas[i]`` is (layout,
        device, dtype, size): each is one ``aten.zeros`` node of the
        capture's sizes.  Its value is a dummy, since what reads it is an
        opaque call (call_backward, an AOT backward's prologue) whose outputs
        are dummies too; ``traced`` runs ``zeros`` on the fakes instead, for
        a consumer that is traced.  So a capture makes no fake of symbolic
        sizes, and no analysis of its strides, for a zero grad."""
        if zeros_metadatas is None or all(m is None for m in zeros_metadatas):
            return grads
        grads = list(grads)
        for i, metadata in enumerate(zeros_metadatas):
            if metadata is None:
                continue
            layout, device, dtype, size = metadata
            if traced:
                grads[i] = torch.ops.aten.zeros.default(
                    size, dtype=dtype, layout=layout, device=device
                )
                continue
            node = self.fx_tracer.create_node(
                "call_function",
                torch.ops.aten.zeros.default,
                (self._node_arg(list(size)),),
                {"dtype": dtype, "layout": layout, "device": device},
                name="zeros",  # as a traced aten.zeros is named
            )
            with disable_proxy_modes_tracing():
                grads[i] = self._dummy(layout, device, dtype, size)
                self.bind_dummies([grads[i]], [self.fx_tracer.proxy(node)])
        return grads

    def proxy_call_aot_backward(
        self,
        grads,
        ctx,
        saved_tensors,
        backward_state_idx,
        output_metadatas=None,
        zeros_metadatas=None,
    ):
        """The backward of a compiled region (AOTAutograd's CompiledFunction),
        recorded without running it:
        (a) its prologue (picking and coercing the tangents) is one opaque call;
        (b) the nodes of its backward graph are copied into this graph, named
            aot<id>_<name> as there, so the passes that run after the capture
            (the accumulate-grad and hook reordering) see them;
        (c) its epilogue (dropping token / RNG outputs, wrapping subclasses)
            is traced through.
        Nothing of it runs at capture: the prologue's outputs and the copied
        nodes get dummies (of the dtype, device and rank of the AOT graph's
        values), and the grads it returns the forward inputs' metadata."""
        forward_cls = ctx._forward_cls
        if forward_cls._lazy_backward_info is None:
            raise RuntimeError(
                """This compiled backward function was saved by AOTAutogradCache, which does not support
            compiled autograd. Please turn off AOTAutogradCache using `TORCHINDUCTOR_AUTOGRAD_CACHE=0`."""
            )
        bw_module = forward_cls._lazy_backward_info.bw_module
        grads, saved_tensors = list(grads), list(saved_tensors)

        # (a) the prologue: its fake outputs come from running it on the fakes.
        # Nodes are named as in the AOT backward graph, prefixed by its id.
        # The same region twice in one capture (a compiled module called
        # twice) gets aot<id>_<k>_<name> from its second call on, rather than
        # FX's deduplicated aot<id>_<name>_1, which another node of the AOT
        # graph could be called.
        calls = self.aot_region_calls.get(forward_cls._aot_id, 0)
        self.aot_region_calls[forward_cls._aot_id] = calls + 1
        prefix = f"aot{forward_cls._aot_id}_" + (f"{calls}_" if calls else "")
        prologue = aot_backward_prologue_op(forward_cls)
        symints = ctx._get_compiled_autograd_symints()
        placeholders = bw_module.graph.find_nodes(op="placeholder")[len(symints) :]
        if backward_state_idx is not None:
            placeholders = placeholders[:-1]  # the BackwardState, bound below
        with disable_proxy_modes_tracing():
            memo = self._aot_symint_memo(bw_module, symints)
            args = [self._dummy_like_aot(n.meta.get("val"), memo) for n in placeholders]
        # no dummy for some input: the prologue runs on the fakes, zeros too
        run_prologue = any(a is NotImplemented or a is None for a in args)
        grads = self.record_zeros(grads, zeros_metadatas, traced=run_prologue)
        proxy = self.fx_tracer.create_proxy(
            kind="call_function",
            target=prologue,
            args=(self.to_proxy(grads), self.to_proxy(saved_tensors)),
            kwargs={},
            name=f"{prefix}backward_prologue",
        )
        with disable_proxy_modes_tracing():
            if run_prologue:
                args = list(prologue(grads, saved_tensors))
            inputs = grads + saved_tensors
            for i, (x, node) in enumerate(zip(args, placeholders)):
                if isinstance(x, torch.Tensor):
                    if any(x is y for y in inputs):
                        # a new object: the input keeps its own proxy
                        args[i] = x = torch.ops.aten.alias.default(x)
                    item = self.fx_tracer.create_proxy(
                        "call_function",
                        operator.getitem,
                        (proxy, i),
                        {},
                        name=f"{prefix}{node.name}",
                    )
                    track_tensor_tree(x, item, constant=None, tracer=self.fx_tracer)

        # (b) the backward graph, node by node
        values = [*symints, *args]
        if backward_state_idx is not None:
            values.append(self.bind_backward_state(backward_state_idx))
        outputs = self.copy_graph_nodes(bw_module, values, prefix, memo)

        # (c) the epilogue: traced, unless it wraps grads into Tensor
        # subclasses; then it is one opaque op, since a subclass built at
        # capture would be a Python object no graph node produces
        if forward_cls.maybe_subclass_metadata is None:
            outs = list(forward_cls._backward_epilogue_functional(outputs))
        else:
            epilogue = aot_backward_epilogue_op(forward_cls)
            proxy = self.record_call(
                epilogue, (list(outputs),), name=f"{prefix}backward_epilogue"
            )
            with disable_proxy_modes_tracing():
                # built from the dummies, whose renamed sizes keep the
                # equalities a subclass's constructor checks
                grad_types = {
                    m.original_subclass_type.__name__
                    for m in forward_cls.maybe_subclass_metadata.grad_input_metas or ()
                    if getattr(m, "original_subclass_type", None) is not None
                }
                with self.making_dummy_ctx(), _building_subclass_grads(
                    " / ".join(sorted(grad_types)) or "Tensor subclass"
                ):
                    outs = list(forward_cls._backward_epilogue_functional(outputs))
                for i, out in enumerate(outs):
                    if isinstance(out, torch.Tensor):
                        track_tensor_tree(
                            out, proxy[i], constant=None, tracer=self.fx_tracer
                        )
        # the grads are shaped like the forward inputs (AOTAutograd made them
        # so): their fakes say so, rather than the dummies' sizes, so that the
        # capture's validate_outputs reads no dummy
        if output_metadatas is not None:
            with disable_proxy_modes_tracing():
                for i, (out, m) in enumerate(zip(outs, output_metadatas)):
                    if self.is_dummy(out) and m is not None:
                        with _building_subclass_grads(type(out).__name__):
                            outs[i] = self._with_outer_metadata(out, m)
                        track_tensor_tree(
                            outs[i],
                            self.to_proxy(out),
                            constant=None,
                            tracer=self.fx_tracer,
                        )
        return tuple(outs)

    def copy_graph_nodes(
        self,
        gm: torch.fx.GraphModule,
        values: List[Any],
        prefix: str = "",
        memo: Optional[Dict[Any, Any]] = None,
    ):
        """Copies the nodes of ``gm`` into the graph being captured, its
        placeholders bound to ``values`` (fakes, SymInts, a BackwardState,
        None), and returns the fake values of its outputs, bound to their
        copies.  AOT's own node metadata (its fakes, from another shape env)
        is not copied: the new nodes carry the capture's.  Each copy is
        named ``prefix`` + the node's name.

        Only the outputs need fake values: they are what the rest of the
        capture sees.  An output's value is a dummy like the value AOT
        recorded for it (_dummy_like_aot); where there is none, it is its
        target run on the values of its inputs, with no proxy mode, which
        then need values the same way.  So a graph with AOT's values costs
        one dummy per output, not a fake run of every node."""
        memo = {} if memo is None else memo
        placeholders = gm.graph.find_nodes(op="placeholder")
        assert len(placeholders) == len(values), (len(placeholders), len(values))
        val: Dict[torch.fx.Node, Any] = dict(zip(placeholders, values))
        copy: Dict[torch.fx.Node, Any] = {
            node: self._node_arg(v)
            if not isinstance(v, BackwardState)
            else v.proxy.node
            for node, v in val.items()
        }
        output = gm.graph.find_nodes(op="output")
        if not output:
            raise AssertionError("graph has no output node")

        # which nodes need a value: the outputs, and the inputs of every
        # needed node that has no dummy (walked back from the outputs)
        needed = set(output[0].all_input_nodes)
        poison = torch._dynamo.config.compiled_autograd_poison_dummies
        with disable_proxy_modes_tracing():
            for node in reversed(gm.graph.nodes):
                if node not in needed or node in val or node.op != "call_function":
                    continue
                if poison and "val" in node.meta:
                    dummy = self._dummy_like_aot(node.meta["val"], memo)
                    if dummy is not NotImplemented:
                        val[node] = dummy
                        continue
                needed.update(node.all_input_nodes)

        for node in gm.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            if node.op == "get_attr":
                attr = operator.attrgetter(node.target)(gm)
                qualname = self.fx_tracer.get_fresh_qualname(
                    f"_aot_{node.target.replace('.', '_')}_"
                )
                setattr(self.fx_tracer.root, qualname, attr)
                copy[node] = self.fx_tracer.create_node(
                    "get_attr", qualname, (), {}, name=f"{prefix}{node.name}"
                )
                val[node] = attr
                continue
            if node.op != "call_function":
                raise RuntimeError(
                    f"compiled autograd cannot copy the {node.op} node {node.name} of "
                    f"an AOT backward graph: only call_function and get_attr are supported"
                )
            new = self.fx_tracer.create_node(
                "call_function",
                node.target,
                torch.fx.node.map_arg(node.args, copy.__getitem__),
                torch.fx.node.map_arg(node.kwargs, copy.__getitem__),
                name=f"{prefix}{node.name}",
            )
            new.meta["compiled_autograd_aot_copy"] = True
            # where it comes from (TORCH_LOGS, the profiler and tlparse read
            # these); never its fakes, which belong to another ShapeEnv
            for key in _AOT_PROVENANCE_KEYS:
                if key in node.meta:
                    new.meta[key] = node.meta[key]
            copy[node] = new
            if node not in needed or node in val:
                continue
            fake_args = torch.fx.node.map_arg(node.args, val.__getitem__)
            fake_kwargs = torch.fx.node.map_arg(node.kwargs, val.__getitem__)
            with disable_proxy_modes_tracing():
                if getattr(node.target, "__module__", None) == (
                    "torch._dynamo._trace_wrapped_higher_order_op"
                ):
                    # a hook called through trace_wrapped (BackwardState);
                    # it returns a new grad with the old one's metadata
                    grad = fake_args[0] if fake_args[0] is not None else fake_args[1]
                    val[node] = torch.utils._pytree.tree_map_only(
                        torch.Tensor, torch.empty_like, grad
                    )
                else:
                    val[node] = node.target(*fake_args, **fake_kwargs)

        # bind the outputs' values to their copies
        for node in output[0].all_input_nodes:  # each node once
            if node.op != "call_function":
                continue  # an input or a constant: not a value the copy made
            out = val[node]
            if isinstance(out, (torch.Tensor, *py_sym_types)):
                proxy = self.fx_tracer.proxy(copy[node])
                track_tensor_tree(out, proxy, constant=None, tracer=self.fx_tracer)
            else:
                copy[node].meta["val"] = out
        return torch.fx.node.map_arg(output[0].args[0], val.__getitem__)

    def grad_sized_metadata(self, grads, metadata) -> None:
        """[compiled autograd] Rewrites ops.validate_outputs' metadata of a
        generated node's grads before its proxy_call_function (see
        proxy_validate_outputs): each symbolic size of a defined grad's
        metadata that is not 1 becomes -1 (the grad's own size there),
        guarded ``!= 1`` (a size with no symbol yet makes none, see
        _LazySizeNode).  A size that is 1 stays, read by the graph, so that
        a capture at size 1 serves other sizes too."""
        for grad, m in zip(grads, metadata):
            if grad is None or m is None:
                continue
            sizes = m[3]
            for d, size in enumerate(sizes):
                if type(size) is not torch.SymInt:
                    continue
                node = size.node
                if isinstance(node, _LazySizeNode) and node.lazy:
                    # its value is known: 1 stays (no guard), else guarded
                    if node._lazy_val == 1:
                        continue
                    node.compare_to_constant(1)  # False: recorded != 1
                elif node.hint is None or node.hint == 1:
                    continue
                else:
                    torch._check(size != 1)
                sizes[d] = -1

    def bind_function(self, fn_name, fn, traceable=True):
        """Called from C++ the first time a node type is captured."""
        return ops.add(fn_name, fn, traceable)

    def _dummy_output(self, metadata):
        # Dummy (fake) output of a proxied call, shaped from the next edge's
        # InputMetadata: (layout, device, dtype, sizes, is_tensor_subclass).
        if metadata is None:
            return None
        layout, device, dtype, size, _ = metadata
        return self._dummy(layout, device, dtype, size)

    def proxy_call_function(self, fn_name, grads, packed_args, output_metadata):
        """Records ``ops.<fn_name>(grads, *packed_args)``; returns dummy outputs."""
        proxy_out = self.record_call(ops.get(fn_name), (grads, *packed_args))
        with disable_proxy_modes_tracing():
            outputs = [self._dummy_output(m) for m in output_metadata]
            self.bind_dummies(outputs, proxy_out)
        return outputs

    # [functional autograd] Recording a proxied call is most of what a capture
    # does, so it is kept cheap: the node is created from its arguments in
    # one walk (_node_arg), not by FX's generic create_arg, which dispatches
    # every int of a long size or metadata list through several layers; and
    # its dummy outputs are bound without set_meta's snapshot and
    # tensor_meta (drop_capture_metadata removes both after the capture).
    def record_call(self, target, args, name=None):
        """A call_function node ``target(*args)``: tensors in ``args`` become
        their proxies, symbolic values their nodes, the rest constants."""
        node = self.fx_tracer.create_node(
            "call_function", target, self._node_arg(tuple(args)), {}, name=name
        )
        return self.fx_tracer.proxy(node)

    def _node_arg(self, x):
        # x as a graph argument: tensors become their proxies' nodes, symbolic
        # values their nodes, the rest constants (containers walked)
        if isinstance(x, torch.Tensor):
            return self.to_proxy(x).node
        if type(x) in _constant_arg_types:
            return x
        if type(x) in (list, tuple):
            items = [self._node_arg(y) for y in x]
            return items if type(x) is list else tuple(items)
        if type(x) is dict:
            return {k: self._node_arg(v) for k, v in x.items()}
        if isinstance(x, py_sym_types):
            if isinstance(x.node, _LazySizeNode) and x.node.lazy:
                return x.node._lazy_item  # sizes[i]
            x = fetch_sym_proxy(self.fx_tracer)(x)  # a proxy, or a constant
        if isinstance(x, torch.fx.Proxy):
            return x.node
        return self.fx_tracer.create_arg(x)  # anything else FX can record

    def bind_dummies(self, dummies, proxy):
        """Binds ``dummies[i]`` (or None) to ``proxy[i]``."""
        tracer = self.fx_tracer
        for i, d in enumerate(dummies):
            item = proxy[i]
            if d is None:
                continue
            if (
                self.strict_dummies
                or not self.is_dummy(d)
                or not self._sizes_tracked(d)
            ):
                track_tensor_tree(d, item, constant=None, tracer=tracer)
            else:
                # its sizes are shared with an earlier dummy (_dummy), whose
                # binding tracked them: only the tensor is new
                set_proxy_slot(
                    d,
                    tracer,
                    torch.fx.experimental.proxy_tensor._ProxyTensor(item, None),
                )
                item.node.meta["val"] = d

    def _sizes_tracked(self, x) -> bool:
        # sizes and strides (numel is a new product at each call: a sym op
        # on tracked sizes is traced anyway)
        tracked = self.fx_tracer.symnode_tracker
        return all(
            s in tracked for s in (*x.shape, *x.stride()) if isinstance(s, torch.SymInt)
        )

    def proxy_call_hook(self, hook, *args, **kwargs):
        return self.fx_tracer.create_proxy(
            "call_function",
            call_hook,
            (
                hook,
                *[self.to_proxy(x) for x in args],
            ),
            kwargs,
        )

    def tensor_pre_hook(self, inputs, hook_id, i: int):
        assert self.hooks_proxy is not None
        hook = self.hooks_proxy[hook_id]  # type: ignore[index]
        proxy = self.proxy_call_hook(
            hook,
            inputs[i],
            hook_type="tensor_pre_hook",
        )
        with disable_proxy_modes_tracing():
            inputs[i] = self._dummy_like(inputs[i])
            self.bind_tensors_to_proxies([inputs[i]], [proxy])
        return inputs

    def retains_grad_hook(self, hook_id: int, grad):
        """Called from C++ after a node's tensor pre-hooks, for each
        ``retain_grad()`` on one of its grads: records the hook's call on the
        grad, which goes on unchanged."""
        self.fx_tracer.create_proxy(
            "call_function",
            call_retains_grad_hook,
            (hook_id, self.to_proxy(grad)),
            {},
        )

    def pre_hook(self, inputs, hook_id):
        assert self.hooks_proxy is not None
        hook = self.hooks_proxy[hook_id]  # type: ignore[index]
        proxies = self.proxy_call_hook(
            hook,
            inputs,
            hook_type="pre_hook",
        )
        with disable_proxy_modes_tracing():
            inputs = [self._dummy_like(x) for x in inputs]
            self.bind_tensors_to_proxies(inputs, proxies)
        return inputs

    def post_hook(self, outputs, inputs, hook_id):
        assert self.hooks_proxy is not None
        hook = self.hooks_proxy[hook_id]  # type: ignore[index]
        proxies = self.proxy_call_hook(
            hook,
            outputs,
            inputs,
            hook_type="post_hook",
        )
        with disable_proxy_modes_tracing():
            outputs = [self._dummy_like(x) for x in outputs]
            self.bind_tensors_to_proxies(outputs, proxies)
        return outputs

    def unpack_saved(self, index: int, value: torch.Tensor):
        """Called from C++ for a saved variable with saved-tensor hooks:
        records ``ops.unpack_saved(index)``, which unpacks it (runs its unpack
        hook) where the graph reaches it, and returns a dummy like ``value``,
        the value the capture unpacked (see SavedUnpacks in
        compiled_autograd.h)."""
        # Dynamo graph-breaks on the op: the unpack hook runs eagerly there
        op = ops.get(
            ops.add(
                "unpack_saved",
                torch._C._dynamo.compiled_autograd.unpack_saved,
                traceable=False,
            )
        )
        self.unpacks_saved = True
        proxy_out = self.record_call(op, (index,))
        with disable_proxy_modes_tracing():
            dummy = self._dummy(
                value.layout, value.device, value.dtype, [None] * value.dim()
            )
            self.bind_dummies([dummy], proxy_out)
        return dummy

    def accumulate_grad(self, variable, grad):
        """Called from C++ by AccumulateGrad: records
        ``inductor.accumulate_grad_(variable, grad)`` without running it.  The
        capture's grad is a dummy of the plain Tensor type, also where it is a
        Tensor subclass at runtime (a DTensor's grad from an opaque node), so a
        subclass parameter could not run it; Dynamo traces the call on the real
        types."""
        op = torch.ops.inductor.accumulate_grad_.default
        self.record_call(
            op,
            (variable, grad),
            name=self.fx_tracer.graph._target_to_str(op.overloadpacket.__name__),
        )

    def post_acc_grad_hook(self, input, hook_id):
        assert isinstance(input, torch.Tensor)
        assert self.hooks_proxy is not None
        hook = self.hooks_proxy[hook_id]  # type: ignore[index]
        proxy = self.proxy_call_hook(
            hook,
            input,
            hook_type="post_acc_grad_hook",
        )
        with disable_proxy_modes_tracing():
            input = [self._dummy_like(input)]
            self.bind_tensors_to_proxies(input, [proxy])
        return input

    # Note: [Compiled autograd and cudagraphs]
    # Eager autograd backward implements scalars as 0-dim tensors, see DivBackward0::other_.
    # When compiled autograd traces those nodes, it lifts the scalar tensors, resulting in a graph
    # with some cpu 0-dim tensor inputs. To prevent the entire graph from skipping cudagraph, we move the
    # scalars tensors to cuda. This works because ATen/prims ops will accept cuda 0-dim tensors too.
    def move_graph_nodes_to_cuda(self, graph) -> List[int]:
        to_move: Dict[int, torch.fx.Node] = {}
        has_cuda_inputs = False
        nodes = list(graph.nodes)
        assert nodes[0].target == "inputs"
        inputs = nodes[0]
        inputs_users = list(inputs.users.keys())
        # input access nodes should immediately follow placeholder nodes
        first_getitem_idx = len(_graph_placeholders)
        assert nodes[first_getitem_idx] == inputs_users[0]
        last_getitem_idx = first_getitem_idx + len(inputs_users) - 1
        assert nodes[last_getitem_idx] == inputs_users[-1]
        for i, node in enumerate(inputs_users):
            if not has_cuda_inputs and node.meta["val"].device.type == "cuda":
                has_cuda_inputs = True
                continue

            is_cpu = node.meta["val"].device.type == "cpu"
            is_scalar = len(node.meta["val"].size()) == 0
            if is_cpu and is_scalar:
                node_users = list(node.users.keys())
                if all(
                    (
                        isinstance(user.target, torch._ops.OpOverload)
                        and user.target.namespace in ("prims", "aten")
                    )
                    # a saved CPU scalar now feeds the node's functional op,
                    # which runs the same aten formula on it; not a C++
                    # Function's op: its backward is user code that may rely
                    # on the device it saved
                    or (isinstance(user.target, Op) and not user.target.runs_user_code)
                    for user in node_users
                ):
                    # all users are prims/aten, can move safely
                    to_move[i] = node

        # only move cpu scalars to cuda if there were cuda activations in this graph,
        # this is to handle the case where cudagraphs is enabled on a cpu-only graph
        if has_cuda_inputs:
            for node in to_move.values():
                node.meta["val"] = node.meta["val"].cuda()

            # return runtime indices we need to move to cuda
            return list(to_move.keys())

        return []

    def is_sym_node(self, node):
        return (
            isinstance(node, torch.fx.Node)
            and node.op == "call_function"
            and node.target
            in [torch.ops.aten.sym_size.int, torch.ops.aten.sym_numel.default]
        )

    def dce(self):
        # Most of these removed nodes would have been removed during Dynamo and AOTDispatch
        # Remove some of these nodes earlier to improve compilation speed

        # Dynamo guards will error instead of creating aliasing guards unless we unpack them in the graph
        unpack_nodes: OrderedSet[torch.fx.Node] = OrderedSet()
        for i, node in enumerate(self.fx_tracer.graph.find_nodes(op="placeholder")):
            unpack_nodes.update(node.users.keys())
        assert i == len(_graph_placeholders) - 1

        def is_impure(node):
            return (
                node in unpack_nodes
                or node.op == "placeholder"
                or node.op == "output"
                or (node.op == "call_function" and node.target in _impure_targets)
                # code the capture cannot see runs as in eager, whether or not
                # its grads go anywhere
                or (
                    node.op == "call_function"
                    and isinstance(node.target, Op)
                    and not node.target.traceable
                )
            )

        self.fx_tracer.graph.eliminate_dead_code(is_impure)

    def end_capture(self, outputs):
        self.fx_tracer.create_proxy(
            "call_function",
            FakeCompiledAutogradEngine._exec_final_callbacks_stub,
            (),
            {},
        )
        self.stack.close()
        self.fx_tracer.create_node(
            "output",
            "output",
            (self.fx_tracer.create_arg(self.to_proxy(outputs)),),
            {},
        )
        self.reorder_tensor_pre_hook_nodes()
        self.reorder_pre_hook_nodes_to_schedule_asap()
        self.reorder_accumulate_grad_nodes()
        self.reorder_pre_hook_nodes_to_mimic_eager()
        self.reorder_post_acc_grad_hook_nodes()
        self.reorder_post_hook_nodes()
        # TODO(yf225): work around: remove dead codes like `sym_size` and `sym_numel` which are not used downstream. e.g.
        # ```
        # sym_numel_default = torch.ops.aten.sym_numel.default(sum_109);  sum_109 = None
        # eq_115 = 16 == sym_numel_default;  sym_numel_default = eq_115 = None
        # sym_size_int_39 = torch.ops.aten.sym_size.int(getitem_112, 1);  getitem_112 = None
        # eq_116 = 16 == sym_size_int_39;  eq_116 = None
        # eq_117 = 16 == sym_size_int_39;  sym_size_int_39 = eq_117 = None
        # ```
        # Proper fix is Richard's Python compiled autograd effort which will avoid calling make_fx and
        # should prevent these ops from going into the CA graph.
        self.dce()
        self.check_no_sym_reads_of_dummies()
        runtime_inputs_to_move: List[int] = []
        if snapshot_cudagraph_enabled():
            runtime_inputs_to_move = self.move_graph_nodes_to_cuda(self.fx_tracer.graph)
        self.drop_capture_metadata()

        # a dynamic capture's graph generates its code when first needed
        # (_generate_code): with torch.compile the first backward runs the
        # forward specialize_first_compile generates, and the graph's own
        # code is only needed at the first new size
        graph_module_cls = _LazyGraphModule if self.dynamic else GraphModule
        graph = graph_module_cls(
            self.fx_tracer.root, self.fx_tracer.graph, "CompiledAutograd"
        )
        set_locals_to_steal(graph, ["inputs"])
        if self.dynamic and torch._dynamo.config.compiled_autograd_dynamic_graph_inputs:
            _LazyGraphModule.force_recompile(graph)
            self.mark_graph_inputs_dynamic(graph, self.num_sizes)
        lazy_graph_code = lazy_format_graph_code(
            "Compiled autograd graph",
            graph,
            include_device=True,
            include_stride=True,
            colored=True,
        )
        compiled_autograd_log.info("%s", lazy_graph_code)
        verbose_log.debug("%s", lazy_graph_code)
        trace_structured(
            "compiled_autograd_graph",
            payload_fn=lambda: graph.print_readable(print_output=False),
        )

        def runtime_wrapper(compiled_fn, inputs, sizes, scalars, hooks):
            global in_compiled_autograd_region
            in_region_of_thread = _thread_state.in_region
            try:
                in_compiled_autograd_region = True
                _thread_state.in_region = True
                for i in runtime_inputs_to_move:
                    inputs[i] = inputs[i].pin_memory().cuda(non_blocking=True)

                with _disable():
                    return compiled_fn(inputs, sizes, scalars, hooks)
            finally:
                in_compiled_autograd_region = False
                _thread_state.in_region = in_region_of_thread

        if self.unpacks_saved:
            return runtime_wrapper, self.compile_split_at_unpacks(graph)
        compiled_fn = self.compiler_fn(graph)
        if (
            self.dynamic
            and not torch._dynamo.config.compiled_autograd_dynamic_graph_inputs
        ):
            compiled_fn = self.specialize_first_compile(graph, compiled_fn)
        if not isinstance(compiled_fn, _FirstSizesFirst):
            # not with config.compiled_autograd_dynamic_graph_inputs, whose
            # first compile makes every size a symbol of its own (see
            # mark_graph_inputs_dynamic)
            _generate_code(
                graph,
                compiled_fn,
                duck_sized_sizes=not torch._dynamo.config.compiled_autograd_dynamic_graph_inputs,
            )
        return runtime_wrapper, compiled_fn

    def compile_split_at_unpacks(self, graph: GraphModule):
        """A graph that unpacks saved variables (ops.unpack_saved) is split
        there: each piece between two unpacks is compiled on its own, and a
        plain GraphModule runs the pieces and the unpacks in order, dropping
        each value after its last use.  Compiled whole, Dynamo would
        graph-break at each unpack, and each frame it leaves keeps its
        values alive until the backward ends: the unpacked (recomputed,
        reloaded) Tensors of every node at once, which unpacking in the graph
        is there to avoid."""
        unpack_op = ops.get("unpack_saved")
        parts: Dict[torch.fx.Node, int] = {}
        part, in_unpacks = 0, False
        for node in graph.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            src = node.args[0] if node.target is operator.getitem else node
            is_unpack = (
                isinstance(src, torch.fx.Node)
                and src.op == "call_function"
                and src.target is unpack_op
            )
            if is_unpack != in_unpacks:
                part, in_unpacks = part + 1, is_unpack
            parts[node] = part
        eager_parts = {f"submod_{p}" for n, p in parts.items() if n.target is unpack_op}
        split = split_module(graph, None, parts.__getitem__, keep_original_order=True)
        for name, submod in list(split.named_children()):
            if name not in eager_parts:
                setattr(split, name, _CompiledPiece(self.compiler_fn(submod)))
        self.steal_inputs(split)
        return split

    @staticmethod
    def steal_inputs(split: GraphModule):
        """The whole graph steals its inputs (set_locals_to_steal): Dynamo
        clears the caller's list once it has read it, so that each Tensor
        is freed after its last use.  The split graph is not a Dynamo frame,
        so it clears the list itself, after the last piece that reads it;
        the pieces' outputs then hold the only references."""
        (inputs,) = split.graph.find_nodes(op="placeholder", target="inputs")
        last_reader = None
        for node in split.graph.nodes:
            if node in inputs.users:
                last_reader = node
        if last_reader is None:
            return
        with split.graph.inserting_after(last_reader):
            split.graph.call_method("clear", (inputs,))
        split.recompile()

    @staticmethod
    def get_all_nodes(args):
        # filter out non-Node args, like None
        nodes = [n for n in args if type(n) is torch.fx.Node]
        return nodes

    @staticmethod
    def is_placeholder(node):
        if node.op == "placeholder" or (
            node.op == "call_function"
            and node.target == operator.getitem
            and node.args[0].op == "placeholder"
        ):
            return True
        return False

    def reorder_accumulate_grad_nodes(self):
        """
        Usage of AOTAutograd causes all the accumulate_grad_ nodes to get pushed to the end of
        the graph.  This differs from eager mode, which schedules them as soon as possible. This
        pass attempts to reorder the graph to mimic eager behavior.
        """
        for node in self.fx_tracer.graph.find_nodes(
            op="call_function", target=torch.ops.inductor.accumulate_grad_.default
        ):
            param_node, grad_node = node.args[0], node.args[1]
            getitem_node = None
            if grad_node.target == operator.getitem:
                getitem_node = grad_node
                grad_node = getitem_node.args[0]

            arg = max([param_node, grad_node])  # last arg
            if arg is not node.prev and not self.is_placeholder(arg):
                arg.append(node)
                if getitem_node is not None:
                    arg.append(getitem_node)

    def reorder_tensor_pre_hook_nodes(self):
        """
        Usage of AOTAutograd causes all the tensor_pre_hook nodes to get pushed
        to the end of the graph. This differs from eager mode, which schedules
        them as soon as possible. This pass attempts to reorder the graph to
        mimic eager behavior.
        """
        for node in self.fx_tracer.graph.find_nodes(
            op="call_function", target=call_hook
        ):
            if node.kwargs.get("hook_type", None) != "tensor_pre_hook":
                continue

            getitem_node = node.args[0]
            input_node = node.args[1]  # tensor_pre_hook handle only one grad tensor

            if input_node is not node.prev and not self.is_placeholder(input_node):
                input_node.append(getitem_node)
                getitem_node.append(node)

    def reorder_pre_hook_nodes_to_schedule_asap(self):
        """
        In this function, we schedule the pre hooks as soon as possible. This
        does not match eager behavior (schedule pre hook right before its
        registered node), but it can make acc grad be scheduled properly when
        the pre hooks are registered to them. After reordering acc grad node, we
        will reorder the pre hooks again to mimic eager behavior.
        """
        for node in self.fx_tracer.graph.find_nodes(
            op="call_function", target=call_hook
        ):
            if node.kwargs.get("hook_type", None) != "pre_hook":
                continue

            getitem_node = node.args[0]
            # pre_hook handle a tuple of grad tensors
            input_nodes = self.get_all_nodes(node.args[1])

            to_remove = []
            to_append = []
            hook_block = [node]  # contain the hook and hook args getitem
            for n in input_nodes:
                if n.op == "call_function" and n.target == operator.getitem:
                    to_append.append(n.args[0])
                    to_remove.append(n)
                    hook_block.append(n)
            for a, b in zip(to_remove, to_append):
                input_nodes.remove(a)
                input_nodes.append(b)

            arg = max(input_nodes)  # last input
            if arg is not node.prev and not self.is_placeholder(arg):
                arg.append(getitem_node)
                for n in hook_block:
                    getitem_node.append(n)

    def reorder_pre_hook_nodes_to_mimic_eager(self):
        """
        Usage of AOTAutograd causes all the pre_hook nodes to get pushed to the
        end of the graph. This differs from eager mode, which schedules them
        right before their registered node execution. This pass attempts to
        reorder the graph to mimic eager behavior.
        """
        pre_hooks = []
        for node in self.fx_tracer.graph.find_nodes(
            op="call_function", target=call_hook
        ):
            if node.kwargs.get("hook_type", None) != "pre_hook":
                continue
            pre_hooks.append(node)

        for node in reversed(pre_hooks):
            hook_getitem_node = node.args[0]

            users = list(node.users.keys())
            if len(users) == 0:
                continue

            # users are all getitem ops and they are used by same registered node
            assert all(
                user.op == "call_function" and user.target == operator.getitem
                for user in users
            )
            registered_node = next(iter(users[0].users.keys()))

            if registered_node is not node.next:
                registered_node.prepend(hook_getitem_node)
                registered_node.prepend(node)
                for getitem in users:
                    registered_node.prepend(getitem)

    def reorder_post_acc_grad_hook_nodes(self):
        """
        Usage of AOTAutograd causes all the post_acc_grad_hook nodes to get
        pushed to the end of the graph. This differs from eager mode, which
        schedules them as soon as possible. This pass attempts to reorder the
        graph to mimic eager behavior.
        """
        post_acc_grad_hooks = []
        for node in self.fx_tracer.graph.find_nodes(
            op="call_function", target=call_hook
        ):
            if node.kwargs.get("hook_type", None) != "post_acc_grad_hook":
                continue
            post_acc_grad_hooks.append(node)

        # nodes in post_acc_grad_hooks are in topo order. For hooks registered
        # to same node, we should keep their relative order
        for node in reversed(post_acc_grad_hooks):
            getitem_node = node.args[0]
            param_node = node.args[1]  # post_acc_grad_hook handle one param

            # find the corresponding acc_grad node
            acc_grad_node = None
            for n in list(param_node.users.keys()):
                if (
                    n.op == "call_function"
                    and n.target == torch.ops.inductor.accumulate_grad_.default
                ):
                    acc_grad_node = n
                    break

            assert (
                acc_grad_node is not None
            ), "post_acc_grad_hook must have corresponding acc grad node"

            # append post_acc_grad_hook after acc_grad node
            acc_grad_node.append(getitem_node)
            getitem_node.append(node)

    def reorder_post_hook_nodes(self):
        """
        Usage of AOTAutograd causes all the post_hook nodes to get pushed to the
        end of the graph. This differs from eager mode, which schedules them as
        soon as possible. This pass attempts to reorder the graph to mimic eager
        behavior.
        """
        post_hooks = []
        for node in self.fx_tracer.graph.find_nodes(
            op="call_function", target=call_hook
        ):
            if node.kwargs.get("hook_type", None) != "post_hook":
                continue
            post_hooks.append(node)

        for node in reversed(post_hooks):
            getitem_node = node.args[0]
            output_nodes = node.args[1]
            input_nodes = node.args[2]

            if len(output_nodes) > 0:
                continue

            input_nodes_and_users = []
            input_nodes_and_users.extend(list(input_nodes))
            for input_node in input_nodes:
                input_nodes_and_users.extend(
                    user
                    for user in list(input_node.users.keys())
                    if not (
                        user.op == "call_function"
                        and user.target == call_hook
                        and node.kwargs.get("hook_type", None) == "post_hook"
                    )
                )

            arg = max(input_nodes_and_users)  # last input users
            if (
                arg.op == "call_function"
                and arg.target == torch.ops.inductor.accumulate_grad_.default
            ):
                param_node = arg.args[0]
                post_acc_grad_hook_node = None
                for n in list(param_node.users.keys()):
                    if (
                        n.op == "call_function"
                        and n.target == call_hook
                        and n.kwargs.get("hook_type", None) == "post_acc_grad_hook"
                    ):
                        post_acc_grad_hook_node = n

                if post_acc_grad_hook_node is not None:
                    post_acc_grad_hook_node.append(getitem_node)
                    getitem_node.append(node)
                    continue

            if arg is not node.prev and not self.is_placeholder(arg):
                arg.append(getitem_node)
                getitem_node.append(node)

    def to_proxy(self, t):
        if t is None:
            return None
        if isinstance(t, list):
            return [self.to_proxy(x) for x in t]
        if isinstance(t, tuple):
            return tuple(self.to_proxy(x) for x in t)
        # can it be torch.SymInt as the code used to imply?
        assert isinstance(t, torch.Tensor)
        proxy_tensor = fetch_object_proxy(self.fx_tracer, t)
        assert isinstance(proxy_tensor, torch.fx.experimental.proxy_tensor._ProxyTensor)
        return proxy_tensor.proxy

    def bind_tensors_to_proxies(
        self, tensors, proxies, origins: Optional[List[Tuple[int, str]]] = None
    ):
        if isinstance(proxies, torch.fx.Proxy):
            proxies = self.item_proxies(proxies, len(tensors), origins)

        assert len(tensors) == len(proxies)
        track_tensor_tree(tensors, proxies, constant=None, tracer=self.fx_tracer)

    def item_proxies(self, proxy, n: int, origins) -> List[Any]:
        """``proxy[0]`` .. ``proxy[n - 1]``, each made under its node origin
        when the capture has origins (verbose logging)."""
        if not origins:
            return [proxy[i] for i in range(n)]
        assert len(origins) == n
        items = []
        for i in range(n):
            nodecall_index, node_name = origins[i]
            self.set_node_origin(node_name, nodecall_index, None)
            items.append(proxy[i])
        return items

    def bind_size_inputs(self, sizes, sizes_proxy, origins) -> List[Any]:
        """A SymInt for each size input, bound to ``sizes[i]``, lazy
        (_LazySizeNode): its symbol is made only when something other than a
        proxied call's argument uses it.  Each ``sizes[i]`` node is made
        as ``sizes_proxy[i]`` would make it, without the Proxy: most are
        never used as one (hundreds for a transformer block)."""
        tracer = self.fx_tracer
        values: List[Any] = []
        for idx, val in enumerate(sizes):
            if origins:
                nodecall_index, node_name = origins[idx]
                self.set_node_origin(node_name, nodecall_index, None)
            item = tracer.create_node(
                "call_function", operator.getitem, (sizes_proxy.node, idx), {}
            )
            sym = torch.SymInt(_LazySizeNode(self, idx, val, item))
            item.meta["val"] = sym
            values.append(sym)
        return values

    def _make_size_node(self, lazy: "_LazySizeNode"):
        # the symbol of size input lazy._lazy_idx (unspecified: never a
        # constant, not even for 0 or 1), made on the first use of ``lazy``,
        # and bound to its node as set_proxy_slot binds a SymInt of a plain
        # symbol
        idx = lazy._lazy_idx
        node = self.shape_env.create_unspecified_symint_and_symbol(
            lazy._lazy_val, self.source("sizes", idx), DimDynamic.DYNAMIC
        ).node
        self.size_symbols[node._expr] = idx
        tracer = self.fx_tracer
        binding = thunkify(tracer, tracer.proxy, lazy._lazy_item)
        tracer.symnode_tracker.sym_node_dict[lazy] = binding
        tracer.sympy_expr_tracker[node._expr] = binding
        return node

    def bind_backward_state(self, index: int):
        assert self.hooks_proxy is not None
        proxy = self.hooks_proxy[index]  # type: ignore[index]
        bw_state = BackwardState()
        track_tensor_tree(bw_state, proxy, constant=None, tracer=self.fx_tracer)
        return bw_state

    def set_node_origin(
        self,
        node_name: str,
        nodecall_index: int,
        pyobj: Optional[torch.autograd.Function],
    ):
        maybe_aot_id = ""
        if pyobj is not None:
            forward_cls = pyobj._forward_cls  # type: ignore[attr-defined]
            if hasattr(forward_cls, "_aot_id"):
                # backward was created by AOT Dispatcher
                maybe_aot_id = forward_cls._aot_id

        new_code = f"{node_name}{maybe_aot_id} (NodeCall {nodecall_index})"
        self.node_origin = new_code
        raw_stack_trace = CapturedTraceback.extract().format()[-1]
        new_stack_trace = raw_stack_trace.replace(
            "raw_stack_trace = CapturedTraceback.extract().format()[-1]", new_code
        )
        set_stack_trace(new_stack_trace)


# state of the autograd engine dispatch, kept in sync by enable/disable context managers
compiled_autograd_enabled = False

# global flag to check if compiled autograd is enabled but Dynamo stance is "force_eager"
compiled_autograd_enabled_force_eager = False

# global flag to check if we are processing graphs produced from a compiled autograd graph
in_compiled_autograd_region = False

# [compiled autograd] the key, in Dynamo's code context of a dynamic capture's
# graph (its forward's code), of the name of the argument that holds its size
# inputs (see _generate_code, duck_sizes_size_input)
SIZE_INPUTS_ARG = "compiled_autograd_size_inputs_arg"


def duck_sizes_size_input(code: types.CodeType, source) -> bool:
    """Whether Dynamo, compiling the frame of ``code``, duck sizes the int
    ``source`` that it makes a symbol.  True for an item of the size-inputs
    argument that the graph of a dynamic capture names in its code context:
    one that changed since the graph's first compile (automatic dynamic), or
    any in a compile that makes every input dynamic
    (``torch.compile(dynamic=True)``, which duck sizes the graph's Tensor
    inputs too, as it does any graph's).  One batch-dependent size is a size
    input once per node that saved it (a view's sizes, a saved tensor's), and
    ops on fakes found each symbol equal to the others, a guard and a
    replacement each: duck sizing gives the inputs of one value one symbol,
    guarded equal (a tie by chance recompiles when it breaks).  At an
    automatic dynamic recompile model dims are constants, so no size ties to
    one."""
    if not code_context.has_context(code):
        return False
    arg = code_context.get_context(code).get(SIZE_INPUTS_ARG)
    return (
        arg is not None
        and isinstance(source, GetItemSource)
        and isinstance(source.base, LocalSource)
        and source.base.local_name == arg
    )


class _ThreadState(threading.local):
    in_region = False  # this thread runs a compiled autograd graph


_thread_state = _ThreadState()


def in_compiled_autograd_region_of_this_thread() -> bool:
    """Whether this thread runs a compiled autograd graph.

    ``in_compiled_autograd_region`` says whether any thread does.  A hook
    that runs in a backward and must tell compiled autograd's backward from
    the autograd engine's (DDP's Python reducer) asks this: another thread's
    eager backward may run while a graph runs.  Dynamo does not trace it: a
    hook that Dynamo traces is being traced into a compiled autograd graph,
    which it can tell by ``torch.compiler.is_compiling()``."""
    return _thread_state.in_region


@contextlib.contextmanager
def _enable(compiler_fn, dynamic: Optional[bool] = None):
    # None: config.compiled_autograd_dynamic_first_capture
    if dynamic is None:
        from torch._dynamo import config as dynamo_config

        dynamic = dynamo_config.compiled_autograd_dynamic_first_capture
    assert type(dynamic) is bool

    from torch._dynamo import eval_frame

    if eval_frame._stance.stance == "force_eager":
        # If user explicitly sets Dynamo stance to "force_eager", we want Compiled Autograd
        # to fall back to eager as well.
        global compiled_autograd_enabled_force_eager
        compiled_autograd_enabled_force_eager = True
        try:
            yield
        finally:
            compiled_autograd_enabled_force_eager = False
    else:
        # we need to import this, because user might not have imported it if they directly use this context manager
        # we need to lazily import it, because of circular dependencies
        import torch._inductor.cudagraph_trees

        (
            prior_compiler,
            prior_dynamic,
        ) = torch._C._dynamo.compiled_autograd.set_autograd_compiler(
            functools.partial(AutogradCompilerInstance, compiler_fn, dynamic=dynamic),
            dynamic,
        )
        from torch._dynamo import config as dynamo_config

        prior_unpack = torch._C._dynamo.compiled_autograd.set_unpack_saved_in_graph(
            dynamo_config.compiled_autograd_unpack_saved_in_graph
        )
        if snapshot_verbose_logging_enabled():
            torch._C._dynamo.compiled_autograd.set_verbose_logger(verbose_log)
        global compiled_autograd_enabled
        compiled_autograd_enabled = True
        try:
            with torch.autograd.set_multithreading_enabled(False):
                yield
        finally:
            if not prior_compiler:
                compiled_autograd_enabled = False
            torch._C._dynamo.compiled_autograd.set_autograd_compiler(
                prior_compiler, prior_dynamic
            )
            torch._C._dynamo.compiled_autograd.set_unpack_saved_in_graph(prior_unpack)


@contextlib.contextmanager
def _disable():
    (
        prior_compiler,
        prior_dynamic,
    ) = torch._C._dynamo.compiled_autograd.set_autograd_compiler(None, False)
    global compiled_autograd_enabled
    compiled_autograd_enabled = False
    try:
        yield
    finally:
        if prior_compiler:
            compiled_autograd_enabled = True
        torch._C._dynamo.compiled_autograd.set_autograd_compiler(
            prior_compiler, prior_dynamic
        )


# return to starting state of a new process
def reset() -> None:
    global compiled_autograd_enabled
    compiled_autograd_enabled = False
    assert not in_compiled_autograd_region
    torch._C._dynamo.compiled_autograd.set_autograd_compiler(None, False)
    torch._C._dynamo.compiled_autograd.set_verbose_logger(None)
    # a fresh state: no cached capture is reused, the counters start at 0
    torch._C._dynamo.compiled_autograd.clear_cache()
    counters["compiled_autograd"].clear()
