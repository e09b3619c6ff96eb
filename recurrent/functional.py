"""Caffe2's ``caffe2.python.functional``: one op on NumPy arrays, without building a net.

``Functional.<OpType>(*inputs, **args)`` creates the op with inputs ``input_0, input_1, ...`` and
outputs ``output_0, output_1, ...``, feeds the arrays into a workspace of its own
(``workspace.Workspace()``, so the current workspace is left alone), runs the op once and returns its
outputs as a named tuple that also takes the output names as keys::

    from recurrent.functional import Functional
    y = Functional.Relu(np.array([-1.0, 2.0], np.float32))
    y[0], y.output_0, y["output_0"]                     # array([0., 2.], dtype=float32), three times

The number of outputs is ``num_output`` when given, else the op's maximum (its fixed count for most
ops); an op whose outputs are unbounded (``Split``) needs ``num_output``. As in Caffe2, counts the op
does not accept are a ValueError before anything runs, and every other argument goes to the op
(``device_option`` too: a GPU one is refused, as everywhere here). Unlike Caffe2's, an op type that
is not registered is an AttributeError when it is looked up (``Functional.NoSuchOp``), and an output
the op leaves unwritten comes back as ``workspace.FetchBlob`` describes it (bytes).
"""

import collections

from . import _C, core, workspace

__all__ = ["Functional", "namedtupledict"]


def namedtupledict(typename, field_names, *args, **kwargs):
    """A namedtuple type whose instances are also indexed by field name (``t["output_0"]``)."""
    index = {n: i for i, n in enumerate(field_names)}
    kwargs.setdefault("rename", True)
    base = collections.namedtuple(typename, field_names, *args, **kwargs)

    def getitem(self, key):
        return tuple.__getitem__(self, index[key] if isinstance(key, str) else key)

    return type(typename, (base,), {"__getitem__": getitem, "__slots__": ()})


def _names(prefix, n):
    return [prefix + str(i) for i in range(n)]


def _range(lo, hi):
    return "any number (at least %d)" % lo if hi < 0 else str(lo) if lo == hi else "%d to %d" % (lo, hi)


class _Functional:
    def __getattr__(self, op_type):
        if op_type.startswith("__") or op_type not in _C.op_types():
            raise AttributeError("Functional: '%s' is not a registered operator" % op_type)

        def op_func(*inputs, **args):
            min_in, max_in, min_out, max_out = _C.op_schema(op_type)
            n_in = len(inputs)
            if n_in < min_in or (max_in >= 0 and n_in > max_in):
                raise ValueError("Functional %s: %d inputs, the op takes %s" % (op_type, n_in, _range(min_in, max_in)))
            if "num_output" in args:
                n_out = int(args.pop("num_output"))
                if n_out < min_out or (max_out >= 0 and n_out > max_out):
                    raise ValueError("Functional %s: num_output=%d, the op gives %s outputs" % (
                        op_type, n_out, _range(min_out, max_out)))
            elif max_out < 0:
                raise ValueError("Functional %s: the op gives any number of outputs (at least %d): pass "
                                 "num_output" % (op_type, min_out))
            else:
                n_out = max_out
            in_names, out_names = _names("input_", n_in), _names("output_", n_out)
            op = core.CreateOperator(op_type, in_names, out_names, **args)
            ws = workspace.Workspace()
            for name, value in zip(in_names, inputs):
                ws.feed_blob(name, value, op.device_option if op.HasField("device_option") else None)
            ws.run(op)
            return namedtupledict("output", out_names)(*(ws.fetch_blob(n) for n in out_names))

        op_func.__name__ = op_type
        return op_func


Functional = _Functional()
