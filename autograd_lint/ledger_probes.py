"""The probe table of the saved-tensor ledger: which ops ``autograd_lint.ledger``
measures, each with the inputs it is run on (small float64 CPU tensors that
require grad) and the in-place form it has.

A table of data written as code (the inputs are built fresh for every probe,
after ``torch.manual_seed(0)``): ``autograd_lint.ledger`` runs each probe and
reads what its graph saved. Only the generator imports this module (it needs
torch); the linter's check path reads the generated JSON.
"""

from __future__ import annotations

import inspect
import operator
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None  # type: ignore[assignment]
    nn = None  # type: ignore[assignment]
    F = None  # type: ignore[assignment]

Setup = Callable[[], "tuple[dict[str, Any], Callable[[], Any]]"]


class Skip(Exception):
    """A probe that does not yield an entry (not differentiable, bad args)."""


@dataclass(frozen=True)
class Probe:
    key: str
    setup: Setup
    inplace: str | bool
    call: str
    # The op run in place (`inplace=True`) on a copy of its first input that
    # requires grad: whether its output, which is that input, is saved.
    inplace_setup: Setup | None = None


def require_torch() -> None:
    if torch is None:
        raise SystemExit(
            "autograd_lint.ledger needs PyTorch to measure what ops save for backward.\n"
            "Install the pinned version: pip install 'autograd-lint[torch]'  (torch==2.13.0)"
        )


# ---------------------------------------------------------------------------
# Input factories. Each returns a fresh tensor; probes call them after
# torch.manual_seed(0), so every entry is independent of probe order.

DT = None if torch is None else torch.float64


def set_dtype(dtype: Any) -> Any:
    """Make the inputs and modules of every probe of this dtype from now on
    (float64 by default); the dtype it replaces."""
    global DT
    old, DT = DT, dtype
    return old


def U(*shape: int, lo: float = 0.2, hi: float = 0.8, grad: bool = True) -> Callable[[], Any]:
    """Uniform in [lo, hi): inside the domain of log, sqrt, acos, atanh, logit, erfinv..."""

    def make() -> Any:
        t = torch.rand(*shape, dtype=DT) * (hi - lo) + lo
        return t.requires_grad_(grad)

    return make


def N(*shape: int, grad: bool = True) -> Callable[[], Any]:
    return lambda: torch.randn(*shape, dtype=DT).requires_grad_(grad)


def CPLX(*shape: int) -> Callable[[], Any]:
    return lambda: torch.randn(*shape, dtype=torch.complex128).requires_grad_()


def IDX(*shape: int, high: int) -> Callable[[], Any]:
    return lambda: torch.randint(0, high, shape)


def MASK(*shape: int) -> Callable[[], Any]:
    return lambda: torch.rand(*shape) > 0.5


def SQ(n: int = 3, *batch: int) -> Callable[[], Any]:
    """A well-conditioned square matrix."""
    return lambda: (torch.randn(*batch, n, n, dtype=DT) * 0.1 + 2 * torch.eye(n, dtype=DT)).requires_grad_()


def SPD(n: int = 3) -> Callable[[], Any]:
    def make() -> Any:
        a = torch.randn(n, n, dtype=DT)
        return (a @ a.T + n * torch.eye(n, dtype=DT)).requires_grad_()

    return make


def TRIL(n: int = 3) -> Callable[[], Any]:
    return lambda: (torch.randn(n, n, dtype=DT).tril() * 0.1 + 2 * torch.eye(n, dtype=DT)).requires_grad_()


def LIST(*factories: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: [f() for f in factories]


def CONST(value: Any) -> Callable[[], Any]:
    return lambda: value


# ---------------------------------------------------------------------------
# The probe table.

PROBES: dict[str, Probe] = {}


def _add(key: str, setup: Setup, inplace: str | bool, call: str, inplace_setup: Setup | None = None) -> None:
    if key in PROBES:
        raise ValueError(f"duplicate probe {key}")
    PROBES[key] = Probe(key, setup, inplace, call, inplace_setup)


def _fmt_args(names: Iterable[str], args: tuple, kwargs: dict) -> str:
    parts = list(names) + [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _inplace_of(owner: Any, owner_name: str, name: str) -> str | bool:
    return f"{owner_name}.{name}_" if hasattr(owner, name + "_") else False


def aten(
    name: str,
    inputs: dict[str, Callable[[], Any]],
    *args: Any,
    where: str = "both",
    method_args: tuple | None = None,
    overload: str = "",
    **kwargs: Any,
) -> None:
    """Register ``torch.<name>`` and/or ``Tensor.<name>`` (where they exist):
    ``torch.name(*inputs, *args, **kwargs)`` and
    ``inputs[0].name(*inputs[1:], *args, **kwargs)``. Inputs are named as in
    the ATen schema (``self``, ``other``, ``mat2``...). ``overload`` keys a
    second form of the same name whose saved tensors differ
    (``torch.max[dim]``: ``max(x, 1)`` saves its indices, not ``x``)."""
    suffix = f"[{overload}]" if overload else ""
    names = list(inputs)
    margs = args if method_args is None else method_args
    if where in ("both", "torch") and callable(getattr(torch, name, None)):
        fn = getattr(torch, name)

        def setup_fn(fn: Any = fn) -> Any:
            made = {k: f() for k, f in inputs.items()}
            return made, lambda: fn(*made.values(), *args, **kwargs)

        inplace = _inplace_of(torch, "torch", name) or _inplace_of(torch.Tensor, "Tensor", name)
        _add(f"torch.{name}{suffix}", setup_fn, inplace, f"torch.{name}({_fmt_args(names, args, kwargs)})")
    if where in ("both", "Tensor") and callable(getattr(torch.Tensor, name, None)):

        def setup_m() -> Any:
            made = {k: f() for k, f in inputs.items()}
            vals = list(made.values())
            return made, lambda: getattr(vals[0], name)(*vals[1:], *margs, **kwargs)

        _add(
            f"Tensor.{name}{suffix}",
            setup_m,
            _inplace_of(torch.Tensor, "Tensor", name),
            f"{names[0]}.{name}({_fmt_args(names[1:], margs, kwargs)})",
        )


def func(
    qual: str,
    inputs: dict[str, Callable[[], Any]],
    *args: Any,
    inplace: str | bool | None = None,
    **kwargs: Any,
) -> None:
    """Register a function by qualified name (``torch.nn.functional.softmax``,
    ``torch.linalg.det``...), called with the inputs positionally."""
    mod_name, _, name = qual.rpartition(".")
    mod = {
        "torch": torch,
        "torch.nn.functional": F,
        "torch.linalg": torch.linalg,
        "torch.special": torch.special,
        "torch.fft": torch.fft,
    }[mod_name]
    fn = getattr(mod, name, None)
    if not callable(fn):
        return
    if inplace is None:
        inplace = False
        try:
            if "inplace" in inspect.signature(fn).parameters:
                inplace = "inplace=True"
        except (TypeError, ValueError):
            pass
        if not inplace and hasattr(mod, name + "_"):
            inplace = f"{mod_name}.{name}_"

    def setup() -> Any:
        made = {k: f() for k, f in inputs.items()}
        return made, lambda: fn(*made.values(), *args, **kwargs)

    def inplace_setup() -> Any:
        made = _first_non_leaf({k: f() for k, f in inputs.items()})
        return made, lambda: fn(*made.values(), *args, **kwargs, inplace=True)

    _add(qual, setup, inplace, f"{name}({_fmt_args(inputs, args, kwargs)})", inplace_setup if inplace == "inplace=True" else None)


def _first_non_leaf(made: dict[str, Any]) -> dict[str, Any]:
    """``made`` with its first input a copy that requires grad (an op may
    not run in place on a leaf)."""
    first = next(iter(made))
    made[first] = made[first] * 1
    return made


def op(
    name: str,
    fn: Callable[..., Any],
    inputs: dict[str, Callable[[], Any]],
    call: str,
    inplace: str | bool = False,
) -> None:
    """Register a Python operator or property: ``operator.mul``, ``Tensor.T``."""

    def setup() -> Any:
        made = {k: f() for k, f in inputs.items()}
        return made, lambda: fn(*made.values())

    _add(name, setup, inplace, call)


def module(
    cls_name: str,
    ctor: Callable[[], Any],
    inputs: dict[str, Callable[[], Any]],
    call: str,
    train: bool = True,
) -> None:
    """Register ``torch.nn.<cls_name>``: the module is built (of the
    probes' dtype, train mode) and called on the inputs; its parameters and buffers count as
    inputs, named as in ``named_parameters()``/``named_buffers()``."""
    cls = getattr(nn, cls_name, None)
    if cls is None:
        return
    inplace: str | bool = False
    try:
        if "inplace" in inspect.signature(cls.__init__).parameters:
            inplace = "inplace=True"
    except (TypeError, ValueError):
        pass

    def setup() -> Any:
        m = ctor().to(DT).train(train)
        made = {k: f() for k, f in inputs.items()}
        named: dict[str, Any] = dict(made)
        for n, p in m.named_parameters():
            named.setdefault(n, p)
        for n, b in m.named_buffers():
            if b is not None:
                named.setdefault(n, b)
        return named, lambda: m(*made.values())

    def inplace_setup() -> Any:
        m = ctor().to(DT).train(train)
        m.inplace = True
        made = _first_non_leaf({k: f() for k, f in inputs.items()})
        return dict(made), lambda: m(*made.values())

    _add(f"torch.nn.{cls_name}", setup, inplace, call, inplace_setup if inplace == "inplace=True" else None)


def build_table() -> None:
    """Fill ``PROBES`` (once)."""
    if PROBES:
        return
    X = U(3, 4)
    Y = U(3, 4)
    S = {"self": X}
    SO = {"self": X, "other": Y}

    # --- unary elementwise and whole-tensor ops: torch.<n>(x) and x.<n>()
    unary = """abs absolute acos arccos asin arcsin asinh arcsinh atan arctan atanh arctanh
        ceil floor round trunc fix frac cos cosh sin sinh tan tanh exp exp2 expm1 log log10 log1p
        log2 neg negative reciprocal rsqrt sqrt square sigmoid logit relu sign sgn erf erfc erfinv
        digamma lgamma i0 sinc deg2rad rad2deg positive nan_to_num angle conj conj_physical
        resolve_conj resolve_neg clone fliplr flipud ravel trace tril triu diag t flatten
        contiguous detach sum mean prod amax amin max min median nanmedian std var norm nansum
        nanmean std_mean var_mean msort selu celu rrelu hardshrink logdet det inverse pinverse
        matrix_exp slogdet cholesky_inverse svd qr cholesky argmax abs isfinite signbit
        frexp atleast_1d atleast_2d atleast_3d rot90 corrcoef cov aminmax logical_not
        bitwise_not square exp2 mvlgamma_ count_nonzero float double half bfloat16 cpu
        nonzero argwhere unique sinc""".split()
    domains = {
        "acosh": U(3, 4, lo=1.5, hi=2.5),
        "arccosh": U(3, 4, lo=1.5, hi=2.5),
        "logdet": SQ(3),
        "det": SQ(3),
        "inverse": SQ(3),
        "pinverse": SQ(3),
        "matrix_exp": SQ(3),
        "slogdet": SQ(3),
        "cholesky_inverse": TRIL(3),
        "svd": SQ(3),
        "qr": SQ(3),
        "cholesky": SPD(3),
        "trace": SQ(3),
    }
    seen: set[str] = set()
    for n in unary + ["acosh", "arccosh"]:
        if n in seen or n.endswith("_"):
            continue
        seen.add(n)
        aten(n, {"self": domains.get(n, X)})
    aten("mvlgamma", {"self": U(3, 4, lo=2.0, hi=3.0)}, p=2)
    aten("polygamma", {"self": X}, where="Tensor", method_args=(1,))
    _add(
        "torch.polygamma",
        lambda: (lambda m: (m, lambda: torch.polygamma(1, m["self"])))({"self": X()}),
        "Tensor.polygamma_",
        "torch.polygamma(1, self)",
    )

    # --- ops along a dimension
    for n in "softmax log_softmax cumsum cumprod cummax cummin logcumsumexp logsumexp sort argsort".split():
        aten(n, S, 1)
    # Reductions whose `dim` form returns (values, indices) and saves only
    # the indices, where the whole-tensor form saves its input and result.
    for n in "max min median nanmedian".split():
        aten(n, S, 1, overload="dim")
    aten("topk", S, 2)
    aten("kthvalue", S, 2)
    aten("mode", S, 1)
    aten("unbind", S, 0)
    aten("split", S, 2, 1)
    aten("chunk", S, 2, 1)
    aten("tensor_split", S, 2, 1)
    aten("hsplit", S, 2)
    aten("vsplit", S, 3)
    aten("narrow", S, 1, 0, 2)
    aten("select", S, 1, 0)
    aten("squeeze", {"self": U(3, 1, 4)})
    aten("unsqueeze", S, 0)
    aten("transpose", S, 0, 1)
    aten("swapaxes", S, 0, 1)
    aten("swapdims", S, 0, 1)
    aten("permute", S, (1, 0))
    aten("movedim", S, 0, 1)
    aten("moveaxis", S, 0, 1)
    aten("diagonal", S)
    aten("diag_embed", S)
    aten("diagflat", {"self": U(3)})
    aten("as_strided", S, (2, 2), (1, 1))
    aten("unflatten", S, 1, (2, 2))
    aten("reshape", S, (4, 3))
    aten("view", S, 12, where="Tensor")
    aten("expand", S, 2, 3, 4, where="Tensor")
    aten("repeat", S, 2, 1, where="Tensor")
    aten("unfold", S, 1, 2, 1, where="Tensor")
    aten("flip", S, (0,))
    aten("roll", S, 1, 1)
    aten("tile", S, (2, 1))
    aten("repeat_interleave", S, 2)
    aten("broadcast_to", S, (2, 3, 4))
    aten("renorm", S, 2, 0, 1.0)
    aten("clamp", S, 0.3, 0.7)
    aten("clip", S, 0.3, 0.7)
    aten("clamp_min", S, 0.3)
    aten("clamp_max", S, 0.7)
    aten("threshold", S, 0.5, 0.0)
    aten("pow", S, 2.0)
    aten("float_power", S, 2.0)
    aten("quantile", {"self": X, "q": CONST(0.5)})
    aten("nanquantile", {"self": X, "q": CONST(0.5)})
    aten("histc", S)
    aten("cross", {"self": U(3, 3), "other": U(3, 3)}, dim=1)
    aten("cumulative_trapezoid", {"y": X})
    aten("trapezoid", {"y": X})
    aten("trapz", {"y": X})
    aten("diff", S)
    aten("gradient", S, where="torch")
    aten("matrix_power", {"self": SQ(3)}, 3)
    aten("triangular_solve", {"self": U(3, 2), "A": TRIL(3)}, upper=False)
    aten("cholesky_solve", {"self": U(3, 2), "input2": TRIL(3)})
    aten("lu_solve", {"self": U(3, 2), "LU_data": SQ(3), "LU_pivots": CONST(torch.arange(1, 4, dtype=torch.int32))})
    aten("view_as_real", {"self": CPLX(3, 4)})
    aten("view_as_complex", {"self": U(3, 2)})
    aten("real", {"self": CPLX(3, 4)}, where="torch")
    aten("imag", {"self": CPLX(3, 4)}, where="torch")
    aten("polar", {"abs": X, "angle": Y}, where="torch")
    aten("complex", {"real": X, "imag": Y}, where="torch")

    # --- binary elementwise: torch.<n>(x, y) and x.<n>(y)
    binary = """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod
        atan2 arctan2 hypot maximum minimum fmax fmin copysign xlogy logaddexp logaddexp2
        heaviside nextafter igamma igammac dist eq lt ge logical_and bitwise_and""".split()
    for n in binary:
        aten(n, SO)
    aten("ldexp", {"self": X, "other": IDX(3, 4, high=3)})
    aten("lerp", {"self": X, "end": Y, "weight": U(3, 4)})
    aten("addcmul", {"self": X, "tensor1": Y, "tensor2": U(3, 4)}, value=0.5)
    aten("addcdiv", {"self": X, "tensor1": Y, "tensor2": U(3, 4)}, value=0.5)
    aten("where", {"condition": MASK(3, 4), "self": X, "other": Y}, where="torch")
    _add(
        "Tensor.where",
        lambda: (lambda m: (m, lambda: m["self"].where(m["condition"], m["other"])))(
            {"self": X(), "condition": MASK(3, 4)(), "other": Y()}
        ),
        False,
        "self.where(condition, other)",
    )
    aten("masked_fill", {"self": X, "mask": MASK(3, 4)}, 0.0)
    aten("masked_select", {"self": X, "mask": MASK(3, 4)})
    aten("masked_scatter", {"self": X, "mask": MASK(3, 4), "source": U(12)})
    _add(
        "torch.index_select",
        lambda: (lambda m: (m, lambda: torch.index_select(m["self"], 1, m["index"])))(
            {"self": X(), "index": IDX(2, high=4)()}
        ),
        False,
        "torch.index_select(self, 1, index)",
    )
    _add(
        "Tensor.index_select",
        lambda: (lambda m: (m, lambda: m["self"].index_select(1, m["index"])))(
            {"self": X(), "index": IDX(2, high=4)()}
        ),
        False,
        "self.index_select(1, index)",
    )
    dim_index_ops: list[tuple[str, dict[str, Callable[[], Any]], tuple]] = [
        ("gather", {"self": X, "index": IDX(3, 2, high=4)}, ()),
        ("scatter", {"self": X, "index": IDX(3, 2, high=4), "src": U(3, 2)}, ()),
        ("scatter_add", {"self": X, "index": IDX(3, 2, high=4), "src": U(3, 2)}, ()),
        ("scatter_reduce", {"self": X, "index": IDX(3, 2, high=4), "src": U(3, 2)}, ("amax",)),
        ("index_add", {"self": X, "index": IDX(2, high=4), "source": U(3, 2)}, ()),
        ("index_copy", {"self": X, "index": CONST(torch.tensor([0, 2])), "source": U(3, 2)}, ()),
        ("index_reduce", {"self": X, "index": IDX(2, high=4), "source": U(3, 2)}, ("prod",)),
    ]
    for n, ins, extra in dim_index_ops:
        for where_ in ("torch", "Tensor"):
            owner = torch if where_ == "torch" else torch.Tensor
            if not callable(getattr(owner, n, None)):
                continue

            def setup(ins: Any = ins, n: str = n, extra: tuple = extra, where_: str = where_) -> Any:
                made = {k: f() for k, f in ins.items()}
                v = list(made.values())
                if where_ == "torch":
                    return made, lambda: getattr(torch, n)(v[0], 1, *v[1:], *extra)
                return made, lambda: getattr(v[0], n)(1, *v[1:], *extra)

            inpl = _inplace_of(torch.Tensor, "Tensor", n)
            names = list(ins)
            _add(f"{where_}.{n}", setup, inpl, f"{n}({names[0]}, 1, {', '.join(names[1:])})")
    aten("take", {"self": X, "index": IDX(5, high=12)})
    aten("take_along_dim", {"self": X, "indices": IDX(3, 2, high=4)}, 1)
    aten("put", {"self": X, "index": IDX(3, high=12), "source": U(3)})

    # --- linear algebra on torch/Tensor
    aten("mm", {"self": U(3, 4), "mat2": U(4, 5)})
    aten("bmm", {"self": U(2, 3, 4), "mat2": U(2, 4, 5)})
    aten("matmul", {"self": U(3, 4), "other": U(4, 5)})
    aten("mv", {"self": U(3, 4), "vec": U(4)})
    aten("dot", {"self": U(4), "tensor": U(4)})
    aten("vdot", {"self": U(4), "other": U(4)})
    aten("inner", {"self": U(3, 4), "other": U(5, 4)})
    aten("outer", {"self": U(3), "vec2": U(4)})
    aten("ger", {"self": U(3), "vec2": U(4)})
    aten("kron", {"self": U(2, 2), "other": U(2, 3)})
    aten("addmm", {"self": U(3, 5), "mat1": U(3, 4), "mat2": U(4, 5)})
    aten("addmv", {"self": U(3), "mat": U(3, 4), "vec": U(4)})
    aten("addr", {"self": U(3, 4), "vec1": U(3), "vec2": U(4)})
    aten("baddbmm", {"self": U(2, 3, 5), "batch1": U(2, 3, 4), "batch2": U(2, 4, 5)})
    aten("addbmm", {"self": U(3, 5), "batch1": U(2, 3, 4), "batch2": U(2, 4, 5)})
    aten("tensordot", {"a": U(3, 4), "b": U(4, 5)}, dims=1, where="torch")
    aten("chain_matmul", {"m1": U(3, 4), "m2": U(4, 5)}, where="torch")
    aten("cdist", {"x1": U(3, 4), "x2": U(5, 4)}, where="torch")
    aten("cosine_similarity", {"x1": U(3, 4), "x2": U(3, 4)}, where="torch")
    aten("pairwise_distance", {"x1": U(3, 4), "x2": U(3, 4)}, where="torch")
    aten("pdist", {"input": U(3, 4)}, where="torch")
    aten("expand_as", {"self": U(3, 4), "other": U(2, 3, 4, grad=False)}, where="Tensor")
    aten("view_as", {"self": X, "other": U(4, 3, grad=False)}, where="Tensor")
    aten("reshape_as", {"self": X, "other": U(4, 3, grad=False)}, where="Tensor")
    aten("type_as", {"self": X, "other": U(2, 2, grad=False)}, where="Tensor")
    aten("to", S, torch.float32, where="Tensor")
    _add(
        "torch.einsum",
        lambda: (lambda m: (m, lambda: torch.einsum("ij,jk->ik", m["operands"])))({"operands": [U(3, 4)(), U(4, 5)()]}),
        False,
        "torch.einsum('ij,jk->ik', [a, b])",
    )

    # --- sequences of tensors
    two = LIST(U(3, 4), U(3, 4))
    for n in "cat concat concatenate stack hstack vstack dstack column_stack row_stack".split():
        func(f"torch.{n}", {"tensors": two}, inplace=False)
    for n, parts in [("block_diag", LIST(U(2, 2), U(3, 1))), ("cartesian_prod", LIST(U(3), U(2)))]:
        _add(
            f"torch.{n}",
            lambda n=n, parts=parts: (lambda m: (m, lambda: getattr(torch, n)(*m["tensors"])))({"tensors": parts()}),
            False,
            f"torch.{n}(*tensors)",
        )
    _add(
        "torch.meshgrid",
        lambda: (lambda m: (m, lambda: torch.meshgrid(*m["tensors"], indexing="ij")))({"tensors": LIST(U(3), U(2))()}),
        False,
        "torch.meshgrid(*tensors, indexing='ij')",
    )
    _add(
        "torch.broadcast_tensors",
        lambda: (lambda m: (m, lambda: torch.broadcast_tensors(*m["tensors"])))({"tensors": LIST(U(3, 1), U(1, 4))()}),
        False,
        "torch.broadcast_tensors(*tensors)",
    )

    # --- Python operators (names as in the Tensor dunder's ATen op)
    def dunder_inplace(d: str) -> str | bool:
        return f"operator.i{d}" if hasattr(torch.Tensor, f"__i{d}__") else False

    for d, sym in [("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("floordiv", "//"), ("mod", "%")]:
        op(f"operator.{d}", getattr(operator, d), SO, f"self {sym} other", dunder_inplace(d))
    op("operator.matmul", operator.matmul, {"self": U(3, 4), "other": U(4, 5)}, "self @ other", dunder_inplace("matmul"))
    op("operator.pow", lambda s: s**2.0, S, "self ** 2.0", dunder_inplace("pow"))
    op("operator.neg", operator.neg, S, "-self")
    op("operator.pos", operator.pos, S, "+self")
    op("operator.abs", operator.abs, S, "abs(self)")
    op("operator.getitem", lambda s: s[1:, ::2], S, "self[1:, ::2]", "operator.setitem")
    op("Tensor.T", lambda s: s.T, S, "self.T")
    op("Tensor.mT", lambda s: s.mT, S, "self.mT")
    op("Tensor.H", lambda s: s.H, S, "self.H")
    op("Tensor.mH", lambda s: s.mH, S, "self.mH")
    op("Tensor.real", lambda s: s.real, {"self": CPLX(3, 4)}, "self.real")
    op("Tensor.imag", lambda s: s.imag, {"self": CPLX(3, 4)}, "self.imag")

    # --- torch.linalg (inputs named as in the ATen linalg_* schemas)
    A = {"A": SQ(3)}
    for n in """det slogdet inv inv_ex pinv matrix_exp matrix_norm norm cond svd svdvals qr eig
            eigvals lu lu_factor lu_factor_ex matrix_rank""".split():
        func(f"torch.linalg.{n}", A)
    for n in "cholesky cholesky_ex eigh eigvalsh ldl_factor".split():
        func(f"torch.linalg.{n}", {"A": SPD(3)})
    func("torch.linalg.vector_norm", {"x": X})
    func("torch.linalg.matrix_power", A, 3)
    func("torch.linalg.solve", {"A": SQ(3), "B": U(3, 2)})
    func("torch.linalg.solve_ex", {"A": SQ(3), "B": U(3, 2)})
    func("torch.linalg.lstsq", {"A": SQ(3), "B": U(3, 2)})
    func("torch.linalg.solve_triangular", {"A": TRIL(3), "B": U(3, 2)}, upper=False)
    func("torch.linalg.multi_dot", {"tensors": LIST(U(3, 4), U(4, 5), U(5, 2))})
    func("torch.linalg.cross", {"input": U(3, 3), "other": U(3, 3)})
    func("torch.linalg.vecdot", {"x": X, "y": Y})
    func("torch.linalg.diagonal", A)
    func("torch.linalg.householder_product", {"A": U(3, 2), "tau": U(2)})
    func("torch.linalg.tensorinv", {"A": SQ(4)}, ind=1)
    func("torch.linalg.tensorsolve", {"A": SQ(4), "B": U(4)})
    func("torch.linalg.matmul", {"input": U(3, 4), "other": U(4, 5)})
    func("torch.linalg.vander", {"x": U(3)})

    # --- torch.special
    for n in """expit logit erf erfc erfcx erfinv exp2 expm1 gammaln digamma psi i0 i0e i1 i1e log1p
            ndtr ndtri log_ndtr sinc round entr bessel_j0 bessel_j1""".split():
        func(f"torch.special.{n}", S)
    for n in "xlogy xlog1py zeta".split():
        func(f"torch.special.{n}", SO)
    func("torch.special.polygamma", {"n": CONST(1), "self": X}, inplace=False)
    func("torch.special.multigammaln", {"self": U(3, 4, lo=2.0, hi=3.0)}, 2)
    for n in "softmax log_softmax logsumexp".split():
        func(f"torch.special.{n}", S, 1)

    # --- torch.nn.functional (inputs named as in the Python signatures)
    I4 = {"input": U(2, 3, 4, 4)}
    I2 = {"input": U(3, 4)}
    for n in """relu relu6 elu selu celu leaky_relu rrelu glu gelu logsigmoid hardshrink tanhshrink
            softsign softplus softshrink tanh sigmoid hardsigmoid silu mish hardswish hardtanh
            normalize dropout alpha_dropout feature_alpha_dropout dropout1d dropout2d dropout3d
            pixel_shuffle pixel_unshuffle""".split():
        ins = I4 if n in ("dropout2d", "dropout3d", "pixel_unshuffle") else I2
        if n == "pixel_shuffle":
            ins = {"input": U(1, 4, 2, 2)}
        if n == "pixel_unshuffle":
            func(f"torch.nn.functional.{n}", ins, 2)
        elif n == "pixel_shuffle":
            func(f"torch.nn.functional.{n}", ins, 2)
        elif n in ("rrelu", "alpha_dropout", "feature_alpha_dropout"):
            func(f"torch.nn.functional.{n}", ins, training=True)
        else:
            func(f"torch.nn.functional.{n}", ins)
    func("torch.nn.functional.threshold", I2, 0.5, 0.0)
    func("torch.nn.functional.prelu", {"input": U(2, 3, 4), "weight": U(3)})
    for n in "softmax softmin log_softmax".split():
        func(f"torch.nn.functional.{n}", I2, dim=1)
    func("torch.nn.functional.gumbel_softmax", I2)
    func("torch.nn.functional.linear", {"input": U(2, 4), "weight": U(3, 4), "bias": U(3)})
    func("torch.nn.functional.bilinear", {"input1": U(2, 4), "input2": U(2, 5), "weight": U(3, 4, 5), "bias": U(3)})
    func("torch.nn.functional.conv1d", {"input": U(2, 3, 8), "weight": U(4, 3, 3), "bias": U(4)})
    func("torch.nn.functional.conv2d", {"input": U(2, 3, 5, 5), "weight": U(4, 3, 3, 3), "bias": U(4)})
    func("torch.nn.functional.conv3d", {"input": U(1, 2, 4, 4, 4), "weight": U(3, 2, 2, 2, 2), "bias": U(3)})
    func("torch.nn.functional.conv_transpose1d", {"input": U(2, 3, 5), "weight": U(3, 4, 3), "bias": U(4)})
    func("torch.nn.functional.conv_transpose2d", {"input": U(2, 3, 4, 4), "weight": U(3, 4, 3, 3), "bias": U(4)})
    func("torch.nn.functional.conv_transpose3d", {"input": U(1, 2, 3, 3, 3), "weight": U(2, 3, 2, 2, 2), "bias": U(3)})
    func("torch.nn.functional.unfold", I4, 2)
    func("torch.nn.functional.fold", {"input": U(1, 12, 9)}, (4, 4), 2)
    for n, ins, a in [
        ("avg_pool1d", {"input": U(2, 3, 8)}, (2,)),
        ("avg_pool2d", I4, (2,)),
        ("avg_pool3d", {"input": U(1, 2, 4, 4, 4)}, (2,)),
        ("max_pool1d", {"input": U(2, 3, 8)}, (2,)),
        ("max_pool2d", I4, (2,)),
        ("max_pool3d", {"input": U(1, 2, 4, 4, 4)}, (2,)),
        ("max_pool1d_with_indices", {"input": U(2, 3, 8)}, (2,)),
        ("max_pool2d_with_indices", I4, (2,)),
        ("adaptive_avg_pool1d", {"input": U(2, 3, 8)}, (2,)),
        ("adaptive_avg_pool2d", I4, (2,)),
        ("adaptive_avg_pool3d", {"input": U(1, 2, 4, 4, 4)}, (2,)),
        ("adaptive_max_pool1d", {"input": U(2, 3, 8)}, (2,)),
        ("adaptive_max_pool2d", I4, (2,)),
        ("adaptive_max_pool3d", {"input": U(1, 2, 4, 4, 4)}, (2,)),
        ("lp_pool1d", {"input": U(2, 3, 8)}, (2.0, 2)),
        ("lp_pool2d", I4, (2.0, 2)),
        ("fractional_max_pool2d", I4, (2,)),
    ]:
        kw = {"output_ratio": (0.5, 0.5)} if n.startswith("fractional") else {}
        func(f"torch.nn.functional.{n}", ins, *a, **kw)
    func(
        "torch.nn.functional.batch_norm",
        {"input": U(2, 3, 4), "running_mean": CONST(None), "running_var": CONST(None), "weight": U(3), "bias": U(3)},
        training=True,
    )
    func("torch.nn.functional.instance_norm", {"input": U(2, 3, 4), "running_mean": CONST(None), "running_var": CONST(None), "weight": U(3), "bias": U(3)})
    func("torch.nn.functional.layer_norm", {"input": U(2, 3, 4), "normalized_shape": CONST((4,)), "weight": U(4), "bias": U(4)})
    func("torch.nn.functional.group_norm", {"input": U(2, 4, 3), "num_groups": CONST(2), "weight": U(4), "bias": U(4)})
    func("torch.nn.functional.rms_norm", {"input": U(2, 3, 4), "normalized_shape": CONST((4,)), "weight": U(4)})
    func("torch.nn.functional.local_response_norm", I4, 2)
    func("torch.nn.functional.embedding", {"input": IDX(2, 3, high=5), "weight": U(5, 4)})
    func("torch.nn.functional.embedding_bag", {"input": IDX(2, 3, high=5), "weight": U(5, 4)})
    func("torch.nn.functional.pad", I2, (1, 1))
    func("torch.nn.functional.interpolate", I4, scale_factor=2.0, mode="bilinear")
    func("torch.nn.functional.upsample", I4, scale_factor=2.0, mode="nearest")
    func("torch.nn.functional.grid_sample", {"input": U(1, 2, 4, 4), "grid": U(1, 3, 3, 2)}, align_corners=False)
    func("torch.nn.functional.affine_grid", {"theta": U(1, 2, 3)}, (1, 1, 3, 3), align_corners=False)
    func("torch.nn.functional.cosine_similarity", {"x1": X, "x2": Y})
    func("torch.nn.functional.pairwise_distance", {"x1": X, "x2": Y})
    func("torch.nn.functional.pdist", {"input": X})
    func("torch.nn.functional.one_hot", {"tensor": IDX(3, high=4)})
    func(
        "torch.nn.functional.scaled_dot_product_attention",
        {"query": U(1, 2, 3, 4), "key": U(1, 2, 3, 4), "value": U(1, 2, 3, 4)},
    )
    target = {"input": X, "target": U(3, 4, grad=False)}
    for n in """mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy
            binary_cross_entropy_with_logits soft_margin_loss multilabel_soft_margin_loss
            poisson_nll_loss""".split():
        func(f"torch.nn.functional.{n}", target)
    func("torch.nn.functional.kl_div", target, reduction="batchmean")
    func("torch.nn.functional.cross_entropy", {"input": X, "target": IDX(3, high=4)})
    func("torch.nn.functional.nll_loss", {"input": X, "target": IDX(3, high=4)})
    func("torch.nn.functional.multi_margin_loss", {"input": X, "target": IDX(3, high=4)})
    func("torch.nn.functional.multilabel_margin_loss", {"input": X, "target": CONST(torch.tensor([[1, -1, 0, 0]] * 3))})
    func("torch.nn.functional.gaussian_nll_loss", {"input": X, "target": U(3, 4, grad=False), "var": U(3, 4)})
    func("torch.nn.functional.hinge_embedding_loss", {"input": X, "target": CONST(torch.ones(3, 4))})
    func("torch.nn.functional.margin_ranking_loss", {"input1": U(3), "input2": U(3), "target": CONST(torch.ones(3))})
    func("torch.nn.functional.cosine_embedding_loss", {"input1": X, "input2": Y, "target": CONST(torch.ones(3))})
    func("torch.nn.functional.triplet_margin_loss", {"anchor": X, "positive": Y, "negative": U(3, 4)})

    # --- torch.nn modules (train mode; parameters/buffers count as inputs)
    inp = {"input": U(2, 4)}
    inp4 = {"input": U(2, 3, 4, 4)}
    module("Linear", lambda: nn.Linear(4, 3), inp, "Linear(4, 3)(input)")
    module("Bilinear", lambda: nn.Bilinear(4, 5, 3), {"input1": U(2, 4), "input2": U(2, 5)}, "Bilinear(4, 5, 3)(input1, input2)")
    module("Conv1d", lambda: nn.Conv1d(3, 4, 3), {"input": U(2, 3, 8)}, "Conv1d(3, 4, 3)(input)")
    module("Conv2d", lambda: nn.Conv2d(3, 4, 3), inp4, "Conv2d(3, 4, 3)(input)")
    module("Conv3d", lambda: nn.Conv3d(2, 3, 2), {"input": U(1, 2, 4, 4, 4)}, "Conv3d(2, 3, 2)(input)")
    module("ConvTranspose1d", lambda: nn.ConvTranspose1d(3, 4, 3), {"input": U(2, 3, 5)}, "ConvTranspose1d(3, 4, 3)(input)")
    module("ConvTranspose2d", lambda: nn.ConvTranspose2d(3, 4, 3), inp4, "ConvTranspose2d(3, 4, 3)(input)")
    module("ConvTranspose3d", lambda: nn.ConvTranspose3d(2, 3, 2), {"input": U(1, 2, 3, 3, 3)}, "ConvTranspose3d(2, 3, 2)(input)")
    acts: list[tuple[str, Callable[[], Any]]] = [
        ("ReLU", nn.ReLU), ("ReLU6", nn.ReLU6), ("LeakyReLU", nn.LeakyReLU), ("PReLU", nn.PReLU),
        ("RReLU", nn.RReLU), ("ELU", nn.ELU), ("CELU", nn.CELU), ("SELU", nn.SELU), ("GELU", nn.GELU),
        ("SiLU", nn.SiLU), ("Mish", nn.Mish), ("Sigmoid", nn.Sigmoid), ("Tanh", nn.Tanh),
        ("Softplus", nn.Softplus), ("Softsign", nn.Softsign), ("Hardswish", nn.Hardswish),
        ("Hardsigmoid", nn.Hardsigmoid), ("Hardtanh", nn.Hardtanh), ("Hardshrink", nn.Hardshrink),
        ("Softshrink", nn.Softshrink), ("Tanhshrink", nn.Tanhshrink), ("LogSigmoid", nn.LogSigmoid),
        ("Threshold", lambda: nn.Threshold(0.5, 0.0)), ("GLU", nn.GLU),
        ("Softmax", lambda: nn.Softmax(dim=1)), ("Softmin", lambda: nn.Softmin(dim=1)),
        ("LogSoftmax", lambda: nn.LogSoftmax(dim=1)), ("Softmax2d", nn.Softmax2d),
        ("Identity", nn.Identity), ("Flatten", nn.Flatten), ("Dropout", nn.Dropout),
        ("AlphaDropout", nn.AlphaDropout),
    ]
    for name, ctor in acts:
        module(name, ctor, inp4 if name == "Softmax2d" else inp, f"{name}()(input)")
    module("Unflatten", lambda: nn.Unflatten(1, (2, 2)), inp, "Unflatten(1, (2, 2))(input)")
    module("Dropout2d", nn.Dropout2d, inp4, "Dropout2d()(input)")
    module("BatchNorm1d", lambda: nn.BatchNorm1d(4), inp, "BatchNorm1d(4)(input)")
    module("BatchNorm2d", lambda: nn.BatchNorm2d(3), inp4, "BatchNorm2d(3)(input)")
    module("BatchNorm3d", lambda: nn.BatchNorm3d(2), {"input": U(2, 2, 3, 3, 3)}, "BatchNorm3d(2)(input)")
    module("LayerNorm", lambda: nn.LayerNorm(4), inp, "LayerNorm(4)(input)")
    module("GroupNorm", lambda: nn.GroupNorm(1, 3), inp4, "GroupNorm(1, 3)(input)")
    module("InstanceNorm1d", lambda: nn.InstanceNorm1d(3, affine=True), {"input": U(2, 3, 4)}, "InstanceNorm1d(3, affine=True)(input)")
    module("InstanceNorm2d", lambda: nn.InstanceNorm2d(3, affine=True), inp4, "InstanceNorm2d(3, affine=True)(input)")
    module("RMSNorm", lambda: nn.RMSNorm(4), inp, "RMSNorm(4)(input)")
    module("LocalResponseNorm", lambda: nn.LocalResponseNorm(2), inp4, "LocalResponseNorm(2)(input)")
    module("Embedding", lambda: nn.Embedding(5, 4), {"input": IDX(2, 3, high=5)}, "Embedding(5, 4)(input)")
    module("EmbeddingBag", lambda: nn.EmbeddingBag(5, 4), {"input": IDX(2, 3, high=5)}, "EmbeddingBag(5, 4)(input)")
    module("MaxPool1d", lambda: nn.MaxPool1d(2), {"input": U(2, 3, 8)}, "MaxPool1d(2)(input)")
    module("MaxPool2d", lambda: nn.MaxPool2d(2), inp4, "MaxPool2d(2)(input)")
    module("AvgPool1d", lambda: nn.AvgPool1d(2), {"input": U(2, 3, 8)}, "AvgPool1d(2)(input)")
    module("AvgPool2d", lambda: nn.AvgPool2d(2), inp4, "AvgPool2d(2)(input)")
    module("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(2), {"input": U(2, 3, 8)}, "AdaptiveAvgPool1d(2)(input)")
    module("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d(1), inp4, "AdaptiveAvgPool2d(1)(input)")
    module("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d(1), inp4, "AdaptiveMaxPool2d(1)(input)")
    module("Upsample", lambda: nn.Upsample(scale_factor=2.0), inp4, "Upsample(scale_factor=2.0)(input)")
    module("UpsamplingBilinear2d", lambda: nn.UpsamplingBilinear2d(scale_factor=2.0), inp4, "UpsamplingBilinear2d(scale_factor=2.0)(input)")
    module("PixelShuffle", lambda: nn.PixelShuffle(2), {"input": U(1, 4, 2, 2)}, "PixelShuffle(2)(input)")
    module("ZeroPad2d", lambda: nn.ZeroPad2d(1), inp4, "ZeroPad2d(1)(input)")
    module("ReflectionPad2d", lambda: nn.ReflectionPad2d(1), inp4, "ReflectionPad2d(1)(input)")
    module("ReplicationPad2d", lambda: nn.ReplicationPad2d(1), inp4, "ReplicationPad2d(1)(input)")
    module("Fold", lambda: nn.Fold((4, 4), 2), {"input": U(1, 12, 9)}, "Fold((4, 4), 2)(input)")
    module("Unfold", lambda: nn.Unfold(2), inp4, "Unfold(2)(input)")
    module("CosineSimilarity", nn.CosineSimilarity, {"x1": X, "x2": Y}, "CosineSimilarity()(x1, x2)")
    module("PairwiseDistance", nn.PairwiseDistance, {"x1": X, "x2": Y}, "PairwiseDistance()(x1, x2)")
    seq = {"query": U(3, 2, 4), "key": U(3, 2, 4), "value": U(3, 2, 4)}
    module("MultiheadAttention", lambda: nn.MultiheadAttention(4, 2), seq, "MultiheadAttention(4, 2)(query, key, value)")
    module("LSTM", lambda: nn.LSTM(4, 3), {"input": U(5, 2, 4)}, "LSTM(4, 3)(input)")
    module("GRU", lambda: nn.GRU(4, 3), {"input": U(5, 2, 4)}, "GRU(4, 3)(input)")
    module("RNN", lambda: nn.RNN(4, 3), {"input": U(5, 2, 4)}, "RNN(4, 3)(input)")
    module("LSTMCell", lambda: nn.LSTMCell(4, 3), inp, "LSTMCell(4, 3)(input)")
    module("GRUCell", lambda: nn.GRUCell(4, 3), inp, "GRUCell(4, 3)(input)")
    module("RNNCell", lambda: nn.RNNCell(4, 3), inp, "RNNCell(4, 3)(input)")
    module(
        "TransformerEncoderLayer",
        lambda: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0),
        {"src": U(3, 2, 4)},
        "TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0)(src)",
    )
    for name in ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss"]:
        module(name, getattr(nn, name), target, f"{name}()(input, target)")
    module("CrossEntropyLoss", nn.CrossEntropyLoss, {"input": X, "target": IDX(3, high=4)}, "CrossEntropyLoss()(input, target)")
    module("NLLLoss", nn.NLLLoss, {"input": X, "target": IDX(3, high=4)}, "NLLLoss()(input, target)")
