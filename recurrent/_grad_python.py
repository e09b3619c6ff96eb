"""Gradient maker of the Python op (recurrent/python_op.py), as Caffe2's GetPythonGradient: a
``PythonGradient`` op calling ``grad_f`` with the forward inputs, the forward outputs and the
gradients of the outputs in ``grad_output_indices`` (default all) as inputs, and the gradients of
the inputs in ``grad_input_indices`` (default all) as outputs. A Python op made without ``grad_f``
has no gradient: reaching it in a backward pass is a ValueError (Caffe2 failed too)."""

from .core import CreateOperator, GradientRegistry


def _first_args(op):
    out = {}
    for a in op.arg:
        out.setdefault(a.name, a.value())
    return out


def _indices(v, n, what, op):
    v = list(range(n)) if v is None else [int(i) for i in (v if isinstance(v, (list, tuple)) else [v])]
    bad = [i for i in v if not 0 <= i < n]
    if bad:
        raise ValueError("Python op (outputs %s): %s %s out of range for %d"
                         % (list(op.output), what, bad, n))
    return v


@GradientRegistry.RegisterGradient("Python")
def _python_grad(op, g_output):
    a = _first_args(op)
    grad_token = a.get("grad_token")
    if not grad_token:
        raise ValueError("Python op (outputs %s) has no gradient: it was made without grad_f "
                         "(net.Python(f, grad_f=...)); its inputs %s would need one"
                         % (list(op.output), list(op.input)))
    goi = _indices(a.get("grad_output_indices"), len(op.output), "grad_output_indices", op)
    gii = _indices(a.get("grad_input_indices"), len(op.input), "grad_input_indices", op)
    g_out = []
    for i in goi:
        if g_output[i] is None:
            raise ValueError("Python op (outputs %s): output %d '%s' is in grad_output_indices but gets no "
                             "gradient" % (list(op.output), i, op.output[i]))
        g_out.append(str(g_output[i]))
    names = [str(op.input[i]) + "_grad" for i in gii]
    if len(set(names)) != len(names):
        raise ValueError("Python op (outputs %s): one blob is several of its inputs %s; "
                         "grad_input_indices must name it once" % (list(op.output), list(op.input)))
    ins = [str(x) for x in op.input] + [str(x) for x in op.output] + g_out
    extra = {"pass_workspace": a["pass_workspace"]} if a.get("pass_workspace") else {}
    gop = CreateOperator("PythonGradient", ins, names, token=grad_token, **extra)
    g_input = [None] * len(op.input)
    for i, n in zip(gii, names):
        g_input[i] = n
    return [gop], g_input
