"""Checks static shape inference against every net and op the tests run.

Unless ``RECURRENT_CHECK_SHAPES=0`` is in the environment, conftest.py calls ``install()``: every
``RunNetOnce`` / ``RunOperatorOnce`` (of the named workspaces and of ``Workspace`` objects) first
infers the shapes and types of the blobs its ops write (``workspace.InferShapesAndTypes`` from the
workspace as it is), then runs, and when the run succeeds, fails (AssertionError) where an inferred
shape or type differs from the blob's, where the inference said the inputs would be refused, or
where it raised. Runs that raise are not compared (the inference may then raise or refuse too).
``stats`` counts the outputs inferred and not inferred, by op type.
"""

import collections
import warnings

from recurrent import shape_inference as si
from recurrent import workspace
from recurrent.proto import NetDef

stats = {"inferred": collections.Counter(), "unknown": collections.Counter(), "checked_runs": 0}


def _desc(ws):
    return {name: None if v is None else si.Tensor(tuple(v[0]), v[1]) for name, v in ws.blob_shapes().items()}


def _check(ws, netdef, run):
    try:
        desc = _desc(ws)
    except RuntimeError:  # the workspace is busy (another thread runs a net): the run says so
        return run()
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            inferred = si.infer([netdef], desc)
        except Exception as e:  # a failure only if the run succeeds
            error = e
    refused = [w for w in caught
               if issubclass(w.category, RuntimeWarning) and "InferShapesAndTypes" in str(w.message)]
    result = run()
    if error is not None:
        raise AssertionError("shape inference raised %s: %s, but the run succeeded"
                             % (type(error).__name__, error))
    if refused or inferred is None:
        raise AssertionError("shape inference refused inputs that the run accepted: %s" % (
            "; ".join(str(w.message) for w in refused)))
    actual = ws.blob_shapes()
    last_writer = {}
    for op in netdef.op:
        for o in op.output:
            last_writer[o] = op.type
    for blob, op_type in last_writer.items():
        if blob in inferred:
            stats["inferred"][op_type] += 1
            got = actual.get(blob)
            want = inferred[blob]
            bad_type = want.dtype != si.UNDEFINED and got is not None and got[1] != want.dtype
            if got is None or tuple(got[0]) != want.shape or bad_type:
                raise AssertionError(
                    "shape inference of net '%s': blob '%s' (last written by %s) inferred %s dtype %d, ran %s"
                    % (netdef.name, blob, op_type, list(want.shape), want.dtype,
                       "no tensor" if got is None else "%s dtype %d" % (list(got[0]), got[1])))
        else:
            stats["unknown"][op_type] += 1
    stats["checked_runs"] += 1
    return result


def install():
    run_net_once = workspace._run_net_once
    run_operator_once = workspace._run_operator_once

    def checked_net(ws, net):
        try:
            netdef = workspace._netdef(net)
        except TypeError:
            return run_net_once(ws, net)
        return _check(ws, netdef, lambda: run_net_once(ws, net))

    def checked_op(ws, operator):
        netdef = NetDef()
        netdef.name = "RunOperatorOnce"
        netdef.op.append(operator)
        return _check(ws, netdef, lambda: run_operator_once(ws, operator))

    workspace._run_net_once = checked_net
    workspace._run_operator_once = checked_op
