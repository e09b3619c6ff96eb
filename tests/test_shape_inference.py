"""Static shape and type inference (workspace.InferShapesAndTypes, recurrent/shape_inference.py)."""

import warnings

import numpy as np
import pytest

from recurrent import _C, core, shape_inference as si, workspace
from test_alloc_fail import build_ops_net


def _actual(names):
    shapes = workspace._ws().blob_shapes()
    return {n: shapes.get(n) for n in names}


def test_ops_net_op_by_op():
    """Every op of the allocation sweep's training net (800+ ops of every family), inferred from the
    workspace just before it runs, against what running it gives; and the share inferred."""
    init, net, _ = build_ops_net()
    ops = list(init.Proto().op) + list(net.Proto().op)
    inferred, unknown = 0, []
    for i, op in enumerate(ops):
        one = core.Net("si_%d" % i)
        one.Proto().op.extend([op])
        shapes, types = workspace.InferShapesAndTypes([one])
        workspace.RunNetOnce(one)
        actual = _actual(op.output)
        for o in op.output:
            if o in shapes:
                got = actual[o]
                assert got is not None, "op #%d %s: inferred %s for '%s', which holds no tensor" % (
                    i, op.type, shapes[o], o)
                assert (list(got[0]), got[1]) == (shapes[o], types[o]), \
                    "op #%d %s: '%s' inferred %s type %d, ran %s type %d" % (
                        i, op.type, o, shapes[o], types[o], list(got[0]), got[1])
                inferred += 1
            elif actual[o] is not None:
                unknown.append(op.type)
    total = inferred + len(unknown)
    print("inferred %d of %d tensor outputs; not inferred by type: %s" % (
        inferred, total, sorted(set(unknown))))


def test_every_op_type_has_a_function_or_a_reason():
    si.registered()
    missing = sorted(t for t in _C.op_types() if t not in si._REGISTRY and t not in si.NOT_INFERRED)
    assert not missing, "op types with no shape function and no reason in NOT_INFERRED: %s" % missing
    stale = sorted(t for t in list(si._REGISTRY) + list(si.NOT_INFERRED) if t not in _C.op_types())
    assert not stale, "shape functions of op types that are not registered: %s" % stale
