"""Static shape and type inference: Caffe2's ``workspace.InferShapesAndTypes``.

``workspace.InferShapesAndTypes(nets, blob_dimensions=None, nets_proto=False, blob_types=None)``
walks the ops of ``nets`` in order, without running them, and returns ``(shapes, types)``: two
dicts by blob name, the dims (a list of ints) and the TensorProto data type (``core.DataType``:
1 FLOAT, 2 INT32; 0 UNDEFINED where the starting blobs had no type) of every blob whose shape is
known after the nets would have run. It starts from the shapes of the current workspace's tensor
blobs, or from ``blob_dimensions`` (and ``blob_types``) when given.

An op's outputs are inferred by the function registered for its type (``register``) from its
arguments and its inputs' shapes and types, never from their values. Where that is not possible
(an output whose shape depends on the data, as ``BooleanMask``'s; an op with no function; an
input whose shape is unknown), the output is unknown: it is left out of the result, even if the
blob had a shape before (it may change when the op runs). After a Python op made with
``pass_workspace=True`` every blob is unknown: its function may write any of them. What is inferred is what running the
nets gives (tests/test_shape_inference.py checks it op by op against runs, and the test suite
checks every net it runs: tests/shape_check.py, off with RECURRENT_CHECK_SHAPES=0). Caffe2
also gave a gradient op's unknown output ``X_grad`` the shape of ``X``; that guess is not made
here (after an in-place Reshape of ``X`` it is wrong): every op type has its own function, or is
in ``NOT_INFERRED`` with the reason.

Inputs that the op would refuse when run (shapes that do not fit), and an op that creating the
net would refuse (a wrong count of inputs or outputs, an in-place pair the op does not allow),
make the result empty, as Caffe2's errors did, with a ``RuntimeWarning`` naming the op and why.

Writing a function: ``@register("Type", ...)`` on ``f(op, ins)``; ``ins`` is a list of
``Tensor(shape, dtype)`` (a tuple of ints and an int), one per op input, all known (unless
registered with ``partial=True``); ``f`` returns
one ``Tensor`` or None (unknown) per op output, or raises ``ShapeError`` for inputs the op would
refuse. ``args(op)`` gives the op's arguments as a dict, ``arg(op, name)`` the Argument the op reads
(the first of that name).
"""

import collections
import importlib
import os
import pkgutil
import warnings

from . import _C

UNDEFINED, FLOAT, INT32 = 0, 1, 2

Tensor = collections.namedtuple("Tensor", ["shape", "dtype"])

_REGISTRY = {}
_PARTIAL = set()  # op types whose function is called with unknown inputs too
NOT_INFERRED = {}  # op type -> why its outputs cannot be inferred statically
_loaded = False


class ShapeError(ValueError):
    """Raised by a shape function for inputs the op would refuse when it runs."""


def register(*op_types, partial=False):
    """Decorator: ``f(op, ins)`` infers the outputs of ops of these types. With ``partial``,
    ``f`` is called even when some inputs are unknown (None in ``ins``: a blob that holds no
    tensor, as the step workspaces RecurrentNetworkGradient reads, or one not inferred)."""
    def deco(f):
        for t in op_types:
            if t in _REGISTRY or t in NOT_INFERRED:
                raise ValueError("shape inference: op type '%s' has a function already" % t)
            _REGISTRY[t] = f
            if partial:
                _PARTIAL.add(t)
        return f
    return deco


def not_inferred(reason, *op_types):
    """Records that the outputs of ops of these types cannot be inferred, and why (their shapes
    depend on the data, or they hold no tensor)."""
    for t in op_types:
        if t in _REGISTRY or t in NOT_INFERRED:
            raise ValueError("shape inference: op type '%s' is registered already" % t)
        NOT_INFERRED[t] = reason


def registered():
    """The op types that have a shape function (sorted)."""
    _load()
    return sorted(_REGISTRY)


def args(op):
    """The op's arguments as a dict name -> value (the first one of a name wins, as when the op runs)."""
    out = {}
    for a in op.arg:
        out.setdefault(a.name, a.value())
    return out


def arg(op, name):
    """The op's first Argument named ``name`` (the one the op reads), or None."""
    for a in op.arg:
        if a.name == name:
            return a
    return None


def _load():
    global _loaded
    if _loaded:
        return
    _loaded = True
    pkg_dir = os.path.dirname(os.path.abspath(__file__))
    for info in sorted(pkgutil.iter_modules([pkg_dir]), key=lambda m: m.name):
        if info.name.startswith("_shape_"):
            importlib.import_module("." + info.name, __package__)


def creation_error(op):
    """Why creating the op would fail (csrc/core/op.c: a registered type, its counts of inputs and
    outputs, the in-place pairs it allows, no output named twice), or None."""
    try:
        lo, hi, olo, ohi = _C.op_schema(op.type)
    except KeyError:
        return "unknown operator type"
    if op.type == "FC" and any(a.name == "rnn_internal_fused_sum" for a in op.arg):
        hi += 1
    n_in, n_out = len(op.input), len(op.output)
    if n_in < lo or (hi >= 0 and n_in > hi):
        return "%d inputs, the op takes %d to %s" % (n_in, lo, "any" if hi < 0 else hi)
    if n_out < olo or (ohi >= 0 and n_out > ohi):
        return "%d outputs, the op gives %d to %s" % (n_out, olo, "any" if ohi < 0 else ohi)
    if len(set(op.output)) != n_out:
        return "an output is named twice"
    for i, x in enumerate(op.input):
        for o, y in enumerate(op.output):
            if x == y and not _C.op_inplace(op.type, i, o):
                return ("input %d and output %d are the same blob '%s', which the op does not allow"
                        % (i, o, x))
    return None


def _check_out(op, index, out):
    if isinstance(out, Tensor):
        out = [out]
    out = list(out)
    if len(out) != len(op.output):
        raise RuntimeError("shape inference of op #%d (%s) gave %d outputs for %d" % (
            index, op.type, len(out), len(op.output)))
    for k, t in enumerate(out):
        if t is None:
            continue
        if not isinstance(t, Tensor) or any(not isinstance(d, int) or d < 0 for d in t.shape):
            raise RuntimeError("shape inference of op #%d (%s) gave a bad shape %r for output %d" % (
                index, op.type, t, k))
        out[k] = Tensor(tuple(int(d) for d in t.shape), int(t.dtype))
    return out


def infer_op(op, index, desc):
    """The outputs (Tensor or None each) of ``op`` given ``desc`` (blob name -> Tensor)."""
    return infer_outputs(op, index, [desc.get(b) for b in op.input])


def infer_outputs(op, index, ins):
    """The outputs (Tensor or None each) of ``op`` given ``ins`` (a Tensor or None per op input);
    ShapeError for inputs or a count the op would refuse."""
    _load()
    out = [None] * len(op.output)
    why = creation_error(op)
    if why is not None:
        raise ShapeError("the op cannot be created: %s" % why)
    f = _REGISTRY.get(op.type)
    if f is not None and (op.type in _PARTIAL or all(t is not None for t in ins)):
        try:
            out = _check_out(op, index, f(op, ins))
        except ShapeError:
            raise
        except RuntimeError:
            raise
        except Exception as e:
            raise RuntimeError("shape inference of op #%d (%s) on inputs %s failed: %s: %s" % (
                index, op.type, _describe(op, ins), type(e).__name__, e)) from e
    return out


def _describe(op, ins):
    return ", ".join("%s %s" % (b, "unknown" if t is None else list(t.shape)) for b, t in zip(op.input, ins))


def infer(netdefs, desc):
    """Runs the inference over ``netdefs`` (NetDefs) from ``desc`` (name -> Tensor or None).
    Returns the final dict (unknown blobs dropped), or None after a ShapeError (warned)."""
    desc = dict(desc)
    for netdef in netdefs:
        for index, op in enumerate(netdef.op):
            try:
                out = infer_op(op, index, desc)
            except ShapeError as e:
                ins = [desc.get(b) for b in op.input]
                warnings.warn("InferShapesAndTypes: net '%s' op #%d (%s) refuses its inputs %s: %s; "
                              "returning empty results (as Caffe2)"
                              % (netdef.name, index, op.type, _describe(op, ins), e),
                              RuntimeWarning, stacklevel=3)
                return None
            for name, t in zip(op.output, out):
                desc[name] = t
            if op.type in ("Python", "PythonGradient") and args(op).get("pass_workspace"):
                # its function may write any blob of the workspace (net.Python(f, pass_workspace=True))
                desc = dict.fromkeys(desc)
    return {k: v for k, v in desc.items() if v is not None}


# ---------------------------------------------------------------- helpers for shape functions
def same_as_input(k=0):
    """A function giving every output the shape and type of input ``k``."""
    def f(op, ins):
        return [ins[k]] * len(op.output)
    return f


def size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def canonical_axis(axis, ndim, op_type="op"):
    """``axis`` in [-ndim, ndim) made non-negative; ShapeError outside (a 0-d input has no axis)."""
    if not -ndim <= axis < ndim:
        raise ShapeError("%s: axis %d out of range for %d dims" % (op_type, axis, ndim))
    return axis + ndim if axis < 0 else axis


def broadcast(a, b, op_type="op"):
    """NumPy broadcasting of two shapes."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ShapeError("%s: shapes %s and %s do not broadcast" % (op_type, list(a), list(b)))
        out.append(y if x == 1 else x)
    return tuple(out)
