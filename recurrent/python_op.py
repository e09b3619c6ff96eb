"""The Python op: Caffe2's ``net.Python(f, grad_f=None)(inputs, outputs)``.

``net.Python(f)`` registers ``f`` under a token (this process only) and returns a function that adds
a ``Python`` op calling it: ``f(inputs, outputs)``, where ``inputs`` are the op's input tensors and
``outputs`` its outputs, objects with Caffe2's TensorCPU methods:

- ``t.data``: the tensor as a NumPy array. An input's is a copy of the blob, taken when the op runs
  (writing to it changes nothing in the workspace). An output's exists once ``t.reshape(shape)``
  (float32 zeros, or of the dtype given to ``t.init``) or ``t.feed(array)`` made it; what ``f``
  writes into it is the output.
- ``t.shape``, ``t.reshape(shape)``, ``t.init(shape, data_type)``, ``t.feed(array)`` (float
  arrays are stored as float32, bool and integer ones as int32, as FeedBlob does), ``t.fetch()``.

An output ``f`` does not set (reshape, init or feed) is left as it was, as in Caffe2 (a new blob
then holds no tensor). With ``grad_f``, the op has a
gradient: a ``PythonGradient`` op calling ``grad_f(inputs, outputs)`` with ``inputs`` = the forward
inputs, the forward outputs and the gradients of the outputs listed in ``grad_output_indices``
(default all) and ``outputs`` = the gradients of the inputs listed in ``grad_input_indices``
(default all), as Caffe2's.

The function runs in the thread that runs the net, with the GIL; the runtime releases the GIL for
the rest of the run. An exception it raises fails the op (the net's error names the op and the
exception's type and message; the exception itself is the error's ``__cause__``).

The workspace running the net is lent to the function while it runs: it may read that workspace's
blobs (``workspace.FetchBlob`` / ``HasBlob`` / ``Blobs`` when it is the current workspace), and when
made with ``net.Python(f, pass_workspace=True)`` also write them; ``f`` then gets a third argument,
that workspace as Caffe2's ``C.Workspace`` object (``workspace.blobs[name].fetch()``, ``feed_blob``,
``create_blob``, ...), and later ops of the net see what it wrote (net-creation checks and shape
inference stop at such an op: it may change any blob). A write without ``pass_workspace``, and
creating, running or deleting nets, running operators or plans in that workspace, or resetting it,
raise RuntimeError there (the net is still running); another thread's call into it stays
"workspace is busy".

``f`` and ``grad_f`` may be ``(builder, args, kwargs)`` tuples: ``builder(*args, **kwargs)`` gives the
function of each op instance, called when the op is created (``_build``, from csrc/ops/pyfunc.c's
hook) and dropped when it is freed (``_release``); ``CreatePythonOperator`` builds once, when called.

``net.Python(f, python_func_type=C)`` calls ``C(f)`` once and uses its ``forward`` and ``backward``
methods as ``f`` and ``grad_f``, as Caffe2's.

Not provided: Python ops inside RecurrentNetwork step nets
(the RNN executor runs step ops on threads that never touch Python: refused when the net is
created), and a net with Python ops loaded in another process (its tokens name functions of this
one).
"""

import itertools
import threading

import numpy as np

_FUNCS = {}
_counter = itertools.count()
_tls = threading.local()


class _KeyError(KeyError):
    """KeyError whose message is not quoted (str(KeyError) is its repr)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _own(e):
    """Marks an error of the runtime itself (not raised by the user's function): the op reports its
    message as it is (csrc/python/module.c)."""
    e._recurrent_own = True
    return e


class _Builder:
    """A ``(builder, args, kwargs)`` tuple registered under a token: ``builder(*args, **kwargs)`` gives
    the function of each op instance, called when the op is created."""

    def __init__(self, func, args, kwargs, what):
        self.func, self.args, self.kwargs, self.what = func, tuple(args), dict(kwargs), what

    def build(self):
        f = self.func(*self.args, **self.kwargs)
        if not callable(f):
            raise _own(TypeError("net.Python: the builder %s of %s returned %s, not a function"
                                 % (getattr(self.func, "__name__", self.func), self.what, type(f).__name__)))
        return f


def _builder(t, what):
    if len(t) != 3 or not callable(t[0]) or not isinstance(t[1], (list, tuple)) or not isinstance(t[2], dict):
        raise TypeError("net.Python: %s as a tuple must be (builder, args, kwargs): a callable, a list or tuple "
                        "and a dict, got %r" % (what, t))
    return _Builder(t[0], t[1], t[2], what)


def register(f, what="f", build_now=False):
    """Registers callable ``f``, or a ``(builder, args, kwargs)`` tuple (built for each op instance, or
    once now with ``build_now``); returns its token."""
    if isinstance(f, tuple):
        f = _builder(f, what)
        if build_now:
            f = f.build()
    elif not callable(f):
        raise TypeError("net.Python: %s must be callable or a (builder, args, kwargs) tuple, got %s"
                        % (what, type(f).__name__))
    name = f.func if isinstance(f, _Builder) else f
    token = "python_op_%d_%s" % (next(_counter), getattr(name, "__name__", type(name).__name__))
    _FUNCS[token] = f
    return token


_INSTANCES = {}  # instance id -> the function built for one op instance
_instance_ids = itertools.count(1)


def _build(token):
    """Called by the runtime when a Python / PythonGradient op is created: the id of the function built
    for it when ``token`` names a builder, else 0."""
    b = _FUNCS.get(token)
    if not isinstance(b, _Builder):
        return 0
    i = next(_instance_ids)
    _INSTANCES[i] = b.build()
    return i


def _release(instance):
    """Called by the runtime when the op holding ``instance`` is freed."""
    _INSTANCES.pop(instance, None)


def _as_stored(arr, what):
    """``arr`` as the runtime stores it (float32 or int32, C order), as FeedBlob converts."""
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        a = a.astype(np.float32, copy=False)
    elif a.dtype.kind in "biu":
        if a.dtype != np.int32 and a.size and (a.min() < -2 ** 31 or a.max() > 2 ** 31 - 1):
            raise ValueError("%s: integer values do not fit in int32" % what)
        a = a.astype(np.int32, copy=False)
    else:
        raise TypeError("%s: dtype %s cannot be stored (float32 and int32 are; other float types become "
                        "float32, bool and integer types int32)" % (what, a.dtype))
    if a.ndim > 8:
        raise ValueError("%s: %d dims, at most 8" % (what, a.ndim))
    return np.ascontiguousarray(a)


_DTYPES = {1: np.float32, 2: np.int32, 5: np.int32, 10: np.int32, 13: np.float32}  # core.DataType codes


class TensorCPU:
    """An input or output of a Python op (Caffe2's TensorCPU as the function sees it)."""

    def __init__(self, name, array=None):
        self.name = name
        self._array = array

    @property
    def data(self):
        if self._array is None:
            raise RuntimeError("output '%s' has no data yet: call reshape(shape) or feed(array) first"
                               % self.name)
        return self._array

    @property
    def shape(self):
        return () if self._array is None else self._array.shape

    @property
    def _dtype(self):
        return None if self._array is None else self._array.dtype

    def reshape(self, shape):
        """Gives the tensor ``shape``: its data is kept if it has as many elements (as Caffe2's),
        zeros otherwise (float32, or the tensor's dtype)."""
        shape = tuple(int(d) for d in (shape if isinstance(shape, (list, tuple, np.ndarray)) else [shape]))
        if any(d < 0 for d in shape):
            raise ValueError("reshape of '%s': negative dimension in %s" % (self.name, list(shape)))
        dtype = np.float32 if self._array is None else self._array.dtype
        if self._array is not None and self._array.size == int(np.prod(shape, dtype=np.int64)):
            self._array = self._array.reshape(shape)
        else:
            self._array = np.zeros(shape, dtype)
        return self

    def init(self, shape, data_type):
        """Zeros of ``shape`` and TensorProto ``data_type`` (float types -> float32, int/bool -> int32)."""
        if data_type not in _DTYPES:
            raise TypeError("init of '%s': data type %r cannot be stored (FLOAT, INT32, BOOL, INT64, DOUBLE "
                            "can)" % (self.name, data_type))
        self._array = np.zeros(tuple(int(d) for d in shape), _DTYPES[data_type])
        return self

    def feed(self, arr):
        """The tensor becomes a copy of ``arr`` (converted as FeedBlob converts)."""
        self._array = np.array(_as_stored(arr, "feed of '%s'" % self.name))
        return True

    def fetch(self):
        return np.array(self.data)

    def __repr__(self):
        return "<TensorCPU '%s' %s>" % (self.name, "empty" if self._array is None else
                                        "%s %s" % (list(self._array.shape), self._array.dtype))


def _run(token, inputs, names, ws=None, pass_workspace=False, instance=0):
    """Called by the runtime (csrc/python/module.c) for a Python / PythonGradient op: ``inputs`` are
    copies of the input tensors, ``names`` the output blobs, ``ws`` the binding workspace running the
    net (passed to the function with ``pass_workspace``), ``instance`` the id of the function built for
    this op (0: the token's own); returns the output arrays (None for an output the function did not
    set: left as it is)."""
    _tls.error = None
    f = _INSTANCES.get(instance) if instance else _FUNCS.get(token)
    if f is None or isinstance(f, _Builder):
        raise _own(_KeyError("no Python function is registered under token '%s' in this process (a net with "
                             "Python ops cannot run in another process than the one that built it)" % token))
    args = [[TensorCPU("input %d" % i, a) for i, a in enumerate(inputs)], [TensorCPU(n) for n in names]]
    outs = args[1]
    if pass_workspace:
        if ws is None:
            raise _own(RuntimeError("pass_workspace: the op does not run in a workspace this thread is running"))
        from .workspace import Workspace
        args.append(Workspace._of(ws))
    try:
        f(*args)
    except BaseException as e:
        _tls.error = e
        raise
    results = []
    for k, o in enumerate(outs):
        if o._array is None:  # not set: the blob is left as it is (Caffe2's)
            results.append(None)
            continue
        try:
            results.append(_as_stored(o._array, "output %d '%s'" % (k, o.name)))
        except (TypeError, ValueError) as e:
            raise _own(e)
    return results


def take_error():
    """The exception the last Python function of this thread raised (once), or None."""
    e = getattr(_tls, "error", None)
    _tls.error = None
    return e
