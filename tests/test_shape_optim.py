"""Shape inference of the optimizer family (recurrent/_shape_optim.py): the ops of csrc/ops/optim*.c,
counter.c, queue.c, db.c, mutex.c, collect.c, rnn_units.c and Adagrad / SparseAdagrad. Each case infers a net
(workspace.InferShapesAndTypes), runs it and compares every output with what the run gave; the ops
whose outputs cannot be inferred leave them out; inputs the ops refuse give ({}, {}) with a
RuntimeWarning, and the run refuses them too.
"""

import warnings

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import shape_inference as si

FLOAT, INT32 = 1, 2
_rng = np.random.RandomState(7)


def f(*shape):
    """float32 in [0.1, 1.1): positive, as the rates, sums and trusts must be."""
    return np.asarray(_rng.rand(*shape) + 0.1, np.float32)


def i(*values, shape=None):
    a = np.array(values, np.int32)
    return a if shape is None else a.reshape(shape)


def op(op_type, inputs, outputs, **kw):
    return core.CreateOperator(op_type, inputs, outputs, **kw)


def _net(ops, name="si_optim"):
    net = core.Net(name)
    net.Proto().op.extend(ops)
    return net


def check(ops, feeds, absent=()):
    """Feeds, infers, runs and compares: every output not in `absent` is inferred with the shape and type
    the run gave; those in `absent` are left out of the result. Returns the inferred shapes."""
    ops = ops if isinstance(ops, list) else [ops]
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    net = _net(ops)
    shapes, types = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    for o in {o for p in ops for o in p.output}:
        if o in absent:
            assert o not in shapes, "%s: inferred %s, expected unknown" % (o, shapes[o])
            continue
        got = workspace.FetchBlob(o)
        assert o in shapes, "%s (%s) not inferred" % (o, list(got.shape))
        assert (shapes[o], types[o]) == (list(got.shape), FLOAT if got.dtype == np.float32 else INT32), o
    return shapes


def refused(ops, feeds, exc=(ValueError, TypeError)):
    """Inference warns and gives ({}, {}); running refuses too."""
    ops = ops if isinstance(ops, list) else [ops]
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    net = _net(ops)
    with pytest.warns(RuntimeWarning, match="InferShapesAndTypes: .* refuses its inputs"):
        assert workspace.InferShapesAndTypes([net]) == ({}, {})
    with pytest.raises(exc):
        workspace.RunNetOnce(net)


# ---------------------------------------------------------------- inferred, against runs
P, IDX, G = (5, 2, 3), i(4, 0, 2, 4, shape=(2, 2)), (2, 2, 2, 3)  # sparse: PARAM, INDICES, GRAD shapes
CASES = [
    ("Iter", op("Iter", ["it"], ["it"]), {"it": i(3)}),
    ("Iter0d", op("Iter", ["it"], ["it"]), {"it": np.array(3, np.int32)}),
    ("LearningRate", op("LearningRate", ["it"], ["lr_o"], base_lr=-0.1, policy="step", stepsize=2, gamma=0.5),
     {"it": np.array([[3]], np.int32)}),
    ("MomentumSGDUpdate", op("MomentumSGDUpdate", ["g", "m", "lr", "p"], ["g2", "m2", "p2"], momentum=0.9),
     {"g": f(3, 4), "m": f(3, 4), "lr": f(1), "p": f(3, 4)}),
    ("MomentumSGD", op("MomentumSGD", ["g", "m", "lr"], ["g", "m"], nesterov=1),
     {"g": f(2, 3, 2), "m": f(2, 3, 2), "lr": f(1, 1)}),
    ("Adam3", op("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"]),
     {"p": f(4, 3), "m1": f(4, 3), "m2": f(4, 3), "g": f(4, 3), "lr": f(1), "it": i(0)}),
    ("Adam4", op("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p2", "m12", "m22", "eg"]),
     {"p": f(7), "m1": f(7), "m2": f(7), "g": f(7), "lr": f(), "it": np.array(2, np.int32)}),
    ("SparseMomentumSGDUpdate", op("SparseMomentumSGDUpdate", ["g", "m", "lr", "p", "idx"], ["g2", "m", "p"]),
     {"g": f(*G), "m": f(*P), "lr": f(1), "p": f(*P), "idx": IDX}),
    ("SparseAdam3",
     op("SparseAdam", ["p", "m1", "m2", "idx", "g", "lr", "it"], ["p", "m1", "m2"], enableRAdam=1),
     {"p": f(6, 2), "m1": f(6, 2), "m2": f(6, 2), "idx": i(1, 5, 1), "g": f(3, 2), "lr": f(1), "it": i(4)}),
    ("SparseAdam4", op("SparseAdam", ["p", "m1", "m2", "idx", "g", "lr", "it"], ["p", "m1", "m2", "g"]),
     {"p": f(*P), "m1": f(*P), "m2": f(*P), "idx": IDX, "g": f(*G), "lr": f(1), "it": i(0)}),
    ("Ftrl", op("Ftrl", ["w", "nz", "g"], ["w2", "nz2"]), {"w": f(3, 4), "nz": f(3, 4, 2), "g": f(3, 4)}),
    ("FtrlAlpha", op("Ftrl", ["w", "nz", "g", "a"], ["w", "nz"]),
     {"w": f(3), "nz": f(3, 2), "g": f(3), "a": f(1, 1)}),
    ("SparseFtrl", op("SparseFtrl", ["w", "nz", "idx", "g", "a"], ["w", "nz"]),
     {"w": f(*P), "nz": f(*P + (2,)), "idx": IDX, "g": f(*G), "a": f(1)}),
    ("RowWiseSparseAdagrad", op("RowWiseSparseAdagrad", ["p", "h", "idx", "g", "lr"], ["p", "h"]),
     {"p": f(*P), "h": f(5), "idx": IDX, "g": f(*G), "lr": f(1)}),
    ("RowWiseSparseAdam",
     op("RowWiseSparseAdam", ["p", "m", "v", "idx", "g", "lr", "it"], ["p", "m", "v", "eg"]),
     {"p": f(*P), "m": f(*P), "v": f(5), "idx": IDX, "g": f(*G), "lr": f(1), "it": i(1)}),
    ("RowWiseCounter",
     op("RowWiseCounter", ["prev", "cnt", "idx", "it"], ["prev", "cnt"], counter_halflife=3),
     {"prev": i(0, 1, 2, 3, 4, 5), "cnt": f(2, 3), "idx": i(5, 0), "it": i(7)}),
    ("SparseNormalize", op("SparseNormalize", ["p", "idx"], ["p"], norm=0.5), {"p": f(*P), "idx": IDX}),
    ("SparseNormalizeGrad", op("SparseNormalize", ["p", "idx", "g"], ["p"], use_max_norm=0),
     {"p": f(4), "idx": i(1, 3), "g": f(2)}),
    ("DecayAdagrad", op("DecayAdagrad", ["p", "m1", "m2", "g", "lr", "it"], ["p2", "m12", "m22"]),
     {"p": f(2, 5), "m1": f(2, 5), "m2": f(2, 5), "g": f(2, 5), "lr": f(1), "it": i(3)}),
    ("GFtrl", op("GFtrl", ["w", "nz", "g", "a"], ["w2", "nz2"]),
     {"w": f(3, 2, 2), "nz": f(3, 2, 2, 2), "g": f(3, 2, 2), "a": f(1)}),
    ("Storm", op("Storm", ["p", "m", "s", "g", "lr"], ["p2", "m2", "s2"]),
     {"p": f(4, 2), "m": f(4, 2), "s": f(1, 1), "g": f(4, 2), "lr": f(1)}),
    ("SparseStorm", op("SparseStorm", ["p", "m", "s", "g", "idx", "lr"], ["p", "m", "s"]),
     {"p": f(*P), "m": f(*P), "s": f(), "g": f(*G), "idx": IDX, "lr": f(1)}),
    ("YellowFin", op("YellowFin", ["p", "m", "lr", "mu", "cw", "ga", "g2", "s", "g", "it"],
                     ["p", "m2", "lr", "mu2", "cw", "ga2", "g22", "s"], curv_win_width=3),
     {"p": f(2, 3), "m": f(2, 3), "lr": f(1), "mu": f(1, 1), "cw": f(3), "ga": f(2, 3), "g2": f(2, 3),
      "s": f(5), "g": f(2, 3), "it": i(4)}),
    ("Lars", op("Lars", ["x", "dx", "wd", "tr", "mx"], ["lr_o"]),
     {"x": f(3, 3), "dx": f(3, 3), "wd": f(1), "tr": f(1, 1), "mx": f() + 1}),
    ("LearningRateAdaption", op("LearningRateAdaption", ["lr", "g", "eg"], ["lr"], normalized_lr_adaption=0),
     {"lr": f(1, 1), "g": f(2, 3), "eg": f(2, 3)}),
    ("RmsProp", op("RmsProp", ["g", "ms", "mom", "lr"], ["go", "ms", "mom2"]),
     {"g": f(6), "ms": f(6), "mom": f(6), "lr": f(1)}),
    ("Adadelta", op("Adadelta", ["p", "h", "d", "g", "lr"], ["p", "h2", "d"]),
     {"p": f(2, 2), "h": f(2, 2), "d": f(2, 2), "g": f(2, 2), "lr": f(1)}),
    ("SparseAdadelta", op("SparseAdadelta", ["p", "h", "d", "idx", "g", "lr"], ["p", "h", "d"]),
     {"p": f(*P), "h": f(*P), "d": f(*P), "idx": IDX, "g": f(*G), "lr": f(1)}),
    ("Wngrad2", op("Wngrad", ["p", "b", "g", "lr"], ["p", "b"]),
     {"p": f(3, 2), "b": f(1), "g": f(3, 2), "lr": f(1)}),
    ("Wngrad3", op("Wngrad", ["p", "b", "g", "lr"], ["p2", "b2", "elr"]),
     {"p": f(3, 2), "b": f(1, 1), "g": f(3, 2), "lr": f(1)}),
    ("Wngrad4", op("Wngrad", ["p", "b", "g", "lr"], ["p", "b", "elr", "upd"]),
     {"p": f(4), "b": f(), "g": f(4), "lr": f(1)}),
    ("SparseWngrad", op("SparseWngrad", ["p", "b", "idx", "g", "lr"], ["p", "b"]),
     {"p": f(*P), "b": f(1), "idx": IDX, "g": f(*G), "lr": f(1)}),
    ("Adagrad2", op("Adagrad", ["p", "h", "g", "lr"], ["p", "h"]), {"p": f(3, 4), "h": f(3, 4), "g": f(3, 4),
                                                                    "lr": f(1)}),
    ("Adagrad4", op("Adagrad", ["p", "h", "g", "lr"], ["p2", "h2", "elr", "upd"], weight_decay=0.1),
     {"p": f(2, 3), "h": f(2, 3), "g": f(2, 3), "lr": f(1)}),
    ("Adagrad3", op("Adagrad", ["p", "h", "g", "lr"], ["p", "h", "elr"]), {"p": f(5), "h": f(5), "g": f(5),
                                                                          "lr": f()}),
    ("SparseAdagrad", op("SparseAdagrad", ["p", "h", "idx", "g", "lr"], ["p", "h"]),
     {"p": f(*P), "h": f(*P), "idx": IDX, "g": f(*G), "lr": f(1)}),
    ("SparseAdagradEmpty", op("SparseAdagrad", ["p", "h", "idx", "g", "lr"], ["p", "h"]),
     {"p": f(4, 2), "h": f(4, 2), "idx": np.zeros((0,), np.int32), "g": np.zeros((0, 2), np.float32),
      "lr": f(1)}),
    ("LSTMUnit", op("LSTMUnit", ["h", "c", "x", "sl", "t"], ["h2", "c2"], forget_bias=1.0),
     {"h": f(1, 3, 4), "c": f(1, 3, 4), "x": f(1, 3, 16), "sl": i(1, 2, 3), "t": i(1)}),
    ("LSTMUnitNoSeq", op("LSTMUnit", ["h", "c", "x", "t"], ["h2", "c2"], sequence_lengths=0),
     {"h": f(1, 2, 3), "c": f(1, 2, 3), "x": f(1, 2, 12), "t": np.array(0, np.int32)}),
    ("LSTMUnitGradient", op("LSTMUnitGradient", ["h", "c", "x", "sl", "t", "h2", "c2", "dh", "dc"],
                            ["dh_prev", "dc_prev", "dx"]),
     {"h": f(1, 3, 2), "c": f(1, 3, 2), "x": f(1, 3, 8), "sl": i(1, 2, 3, shape=(3, 1)), "t": i(1),
      "h2": f(1, 3, 2), "c2": f(1, 3, 2), "dh": f(1, 3, 2), "dc": f(1, 3, 2)}),
    ("GRUUnit", op("GRUUnit", ["h", "x", "sl", "t"], ["h2"], drop_states=1),
     {"h": f(1, 2, 5), "x": f(1, 2, 15), "sl": i(1, 2), "t": i(1)}),
    ("GRUUnitGradient",
     op("GRUUnitGradient", ["h", "x", "t", "h2", "dh"], ["dh_prev", "dx"], sequence_lengths=0),
     {"h": f(1, 2, 3), "x": f(1, 2, 9), "t": i(0), "h2": f(1, 2, 3), "dh": f(1, 2, 3)}),
    # collect.c: the buffer empty (0 rows), filling, full, wrapping, DATA larger than num_to_collect, no rows
    ("LastNWindowCollector", op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=4),
     {"buf": np.zeros(0, np.float32), "nx": np.array(0, np.int32), "d": f(3, 2)}),
    ("LastNWindowCollectorFill", op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=6),
     {"buf": f(2, 2, 3), "nx": np.array(2, np.int32), "d": i(*range(18), shape=(3, 2, 3)).astype(np.float32)}),
    ("LastNWindowCollectorInt", op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=3),
     {"buf": i(1, 2), "nx": np.array(2, np.int32), "d": i(3, 4, 5)}),
    ("LastNWindowCollectorBig", op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=2),
     {"buf": f(1, 4), "nx": np.array(1, np.int32), "d": f(5, 4)}),
    ("LastNWindowCollectorEmpty", op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=2),
     {"buf": np.zeros((0, 7), np.int32), "nx": np.array(9, np.int32), "d": f(0, 3)}),
    ("LastNWindowCollectorFullEmpty", op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=2),
     {"buf": f(2, 3), "nx": np.array(1, np.int32), "d": f(0, 3)}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_inferred_as_run(case):
    check(case[1], case[2])


def test_every_registered_type_has_a_case():
    covered = {c[1].type for c in CASES} | {"Save"}
    si.registered()
    assert covered == {t for t, f in si._REGISTRY.items() if f.__module__ == "recurrent._shape_optim"}


def test_inplace_results_carry_on_in_a_net():
    """A training step: Iter, LearningRate, Adam, SparseAdagrad in one net, inferred before it runs."""
    ops = [op("Iter", ["it"], ["it"]),
           op("LearningRate", ["it"], ["lr"], base_lr=-0.01, policy="fixed"),
           op("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2", "eg"]),
           op("SparseAdagrad", ["e", "eh", "idx", "eg2", "lr"], ["e", "eh"])]
    check(ops, {"it": i(0), "p": f(3), "m1": f(3), "m2": f(3), "g": f(3), "e": f(4, 2), "eh": f(4, 2),
                "idx": i(3, 3, 0), "eg2": f(3, 2)})


def test_iter_without_input_is_not_inferred():
    # it keeps the shape of whatever counter its blob holds, or creates (1,): the function cannot see it
    check(op("Iter", [], ["it"]), {}, absent={"it"})
    check(op("Iter", [], ["it"]), {"it": np.array([[5]], np.int32)}, absent={"it"})


def test_save_writes_no_blob(tmp_path):
    shapes = check(op("Save", ["a", "b"], [], db=str(tmp_path / "x"), db_type="minidb", absolute_path=1),
                   {"a": f(2, 3), "b": i(1, 2)})
    assert shapes["a"] == [2, 3] and shapes["b"] == [2]


# ---------------------------------------------------------------- not inferred
def test_counter_ops_are_not_inferred():
    check([op("CreateCounter", [], ["c"], init_count=2), op("CountUp", ["c"], ["up"]),
           op("CountDown", ["c"], ["down"]), op("CheckCounterDone", ["c"], ["done"]),
           op("RetrieveCount", ["c"], ["n"]), op("ResetCounter", ["c"], ["prev"])], {},
          absent={"c", "up", "down", "done", "n", "prev"})


def test_mutex_ops_are_not_inferred():
    # AtomicIter's counter was known before: it is unknown after (its Mutex input never is a known tensor)
    check([op("CreateMutex", [], ["mx"]), op("AtomicIter", ["mx", "it"], ["it"])], {"it": i(4)},
          absent={"mx", "it"})


def test_queue_ops_are_not_inferred():
    check([op("CreateBlobsQueue", [], ["q"], num_blobs=2, capacity=4),
           op("EnqueueBlobs", ["q", "a", "b"], ["a", "b"]),
           op("SafeEnqueueBlobs", ["q", "a", "b"], ["a", "b", "st"]),
           op("DequeueBlobs", ["q"], ["x", "y"]),
           op("SafeDequeueBlobs", ["q"], ["x2", "y2", "st2"]),
           op("CloseBlobsQueue", ["q"], []),
           op("CreateBlobsQueue", [], ["q2"], num_blobs=1),
           op("EnqueueBlobs", ["q2", "a"], ["a"]),
           op("WeightedSampleDequeueBlobs", ["q2"], ["z", "st3"], weights=[1.0], seed=1)],
          {"a": f(2, 3), "b": i(1, 2)},
          absent={"q", "a", "b", "st", "x", "y", "x2", "y2", "st2", "q2", "z", "st3"})


def test_db_ops_are_not_inferred(tmp_path):
    path = str(tmp_path / "db")
    check(op("Save", ["a"], [], db=path, db_type="minidb", absolute_path=1), {"a": f(3, 2)})
    shapes = check([op("Load", [], ["a"], db=path, db_type="minidb", absolute_path=1),
                    op("CreateDB", [], ["r"], db=path, db_type="minidb"),
                    op("Load", ["r"], ["b"], source_blob_names=["a"])],
                   {"a": f(1)}, absent={"a", "r", "b"})
    assert shapes == {}


# ---------------------------------------------------------------- blob_dimensions / blob_types
def _infer(ops, dims, types=None):
    return workspace.InferShapesAndTypes([_net(ops)], blob_dimensions=dims, blob_types=types)


def test_blob_dimensions_with_and_without_types():
    adam = op("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2", "eg"])
    dims = {"p": [4, 2], "m1": [4, 2], "m2": [4, 2], "g": [4, 2], "lr": [1], "it": []}
    shapes, types = _infer([adam], dims, {"p": FLOAT, "m1": FLOAT, "m2": FLOAT, "g": FLOAT, "lr": FLOAT,
                                          "it": INT32})
    assert shapes["eg"] == [4, 2] and types["eg"] == FLOAT and types["it"] == INT32
    shapes, types = _infer([adam], dims)  # no types: the float outputs are FLOAT all the same
    assert (shapes["p"], types["p"], types["eg"], types["it"]) == ([4, 2], FLOAT, FLOAT, si.UNDEFINED)
    lstm = op("LSTMUnit", ["h", "c", "x", "t"], ["h2", "c2"], sequence_lengths=0)
    shapes, types = _infer([op("Iter", ["t"], ["t"]), lstm], {"h": [1, 5, 2], "c": [1, 5, 2], "x": [1, 5, 8],
                                                              "t": [1]})
    assert (shapes["h2"], shapes["c2"], shapes["t"], types["t"]) == ([1, 5, 2], [1, 5, 2], [1], INT32)


def test_blob_dimensions_refused():
    sparse = op("SparseAdagrad", ["p", "h", "idx", "g", "lr"], ["p", "h"])
    dims = {"p": [5, 3], "h": [5, 3], "idx": [4], "g": [4, 3], "lr": [1]}
    assert _infer([sparse], dims)[0]["p"] == [5, 3]
    with pytest.warns(RuntimeWarning, match=r"SparseAdagrad\) refuses"):
        assert _infer([sparse], dims, {"idx": FLOAT}) == ({}, {})
    with pytest.warns(RuntimeWarning, match=r"must have shape \[4, 3\]"):
        assert _infer([sparse], dict(dims, g=[4, 1])) == ({}, {})


def test_outputs_not_in_place_or_wrong_counts_are_refused():
    # refused when the op is created: the result is empty, with a warning naming the op and why
    dims = {"p": [5, 3], "h": [5, 3], "idx": [4], "g": [4, 3], "lr": [1], "it": [1]}
    # outputs not in place: the op's own check at creation (setup), not the schema's; left unknown
    shapes, _ = _infer([op("SparseAdagrad", ["p", "h", "idx", "g", "lr"], ["p2", "h2"])], dims)
    assert not {"p2", "h2"} & set(shapes)
    for bad, why in [(op("Adagrad", ["p", "h", "h", "lr"], ["q", "q1", "q2", "q3", "q4"]), "5 outputs"),
                     (op("LSTMUnit", ["h", "h", "g", "it"], ["h", "z"]), "same blob 'h'")]:
        with pytest.warns(RuntimeWarning, match=why):
            assert _infer([op("Iter", ["it"], ["it2"]), bad], dims) == ({}, {})


# ---------------------------------------------------------------- refused, one case per kind of check
REFUSED = [
    ("dtype", op("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"]),
     {"p": f(3), "m1": f(3), "m2": f(3), "g": i(1, 2, 3), "lr": f(1), "it": i(0)}),
    ("same_shape", op("MomentumSGDUpdate", ["g", "m", "lr", "p"], ["g", "m", "p"]),
     {"g": f(3, 4), "m": f(4, 3), "lr": f(1), "p": f(3, 4)}),
    ("lr_one_value", op("Adagrad", ["p", "h", "g", "lr"], ["p", "h"]),
     {"p": f(3), "h": f(3), "g": f(3), "lr": f(2)}),
    ("lr_dtype", op("Adagrad", ["p", "h", "g", "lr"], ["p", "h"]),
     {"p": f(3), "h": f(3), "g": f(3), "lr": i(1)}),
    ("counter_dtype", op("LearningRate", ["it"], ["lr"], base_lr=0.1, policy="fixed"), {"it": f(1)}),
    ("counter_size", op("DecayAdagrad", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"]),
     {"p": f(3), "m1": f(3), "m2": f(3), "g": f(3), "lr": f(1), "it": i(1, 2)}),
    ("iter_counter", op("Iter", ["it"], ["it"]), {"it": i(1, 2)}),
    ("indices_dtype", op("SparseAdam", ["p", "m1", "m2", "idx", "g", "lr", "it"], ["p", "m1", "m2"]),
     {"p": f(4, 2), "m1": f(4, 2), "m2": f(4, 2), "idx": f(2), "g": f(2, 2), "lr": f(1), "it": i(0)}),
    ("sparse_grad_shape", op("SparseAdagrad", ["p", "h", "idx", "g", "lr"], ["p", "h"]),
     {"p": f(5, 3), "h": f(5, 3), "idx": i(1, 2), "g": f(2, 2), "lr": f(1)}),
    ("sparse_param_0d", op("SparseWngrad", ["p", "b", "idx", "g", "lr"], ["p", "b"]),
     {"p": f(), "b": f(1), "idx": i(0), "g": f(1), "lr": f(1)}),
    ("normalize_0d", op("SparseNormalize", ["p", "idx"], ["p"]), {"p": f(), "idx": i(0)}),
    ("n_z_shape", op("Ftrl", ["w", "nz", "g"], ["w", "nz"]), {"w": f(3, 4), "nz": f(3, 4), "g": f(3, 4)}),
    ("gftrl_0d", op("GFtrl", ["w", "nz", "g"], ["w", "nz"]), {"w": f(), "nz": f(2), "g": f()}),
    ("rowwise_moment", op("RowWiseSparseAdagrad", ["p", "h", "idx", "g", "lr"], ["p", "h"]),
     {"p": f(5, 3), "h": f(5, 1), "idx": i(1), "g": f(1, 3), "lr": f(1)}),
    ("alpha_one_value", op("SparseFtrl", ["w", "nz", "idx", "g", "a"], ["w", "nz"]),
     {"w": f(3, 2), "nz": f(3, 2, 2), "idx": i(1), "g": f(1, 2), "a": f(2)}),
    ("counter_sizes", op("RowWiseCounter", ["prev", "cnt", "idx", "it"], ["prev", "cnt"]),
     {"prev": i(0, 0, 0), "cnt": f(4), "idx": i(1), "it": i(1)}),
    ("lars_scalar", op("Lars", ["x", "dx", "wd", "tr", "mx"], ["o"]),
     {"x": f(3), "dx": f(3), "wd": f(1), "tr": f(1), "mx": f(0)}),
    ("unit_state", op("LSTMUnit", ["h", "c", "x", "t"], ["h2", "c2"], sequence_lengths=0),
     {"h": f(3, 4), "c": f(3, 4), "x": f(3, 16), "t": i(0)}),
    ("unit_gates", op("GRUUnit", ["h", "x", "sl", "t"], ["h2"]),
     {"h": f(1, 2, 3), "x": f(1, 2, 12), "sl": i(1, 1), "t": i(0)}),
    ("unit_seq_lengths", op("LSTMUnit", ["h", "c", "x", "sl", "t"], ["h2", "c2"]),
     {"h": f(1, 2, 3), "c": f(1, 2, 3), "x": f(1, 2, 12), "sl": i(1, 1, 1), "t": i(0)}),
    ("unit_timestep", op("GRUUnit", ["h", "x", "t"], ["h2"], sequence_lengths=0),
     {"h": f(1, 2, 3), "x": f(1, 2, 9), "t": i(0, 1)}),
    ("unit_grad_like", op("LSTMUnitGradient", ["h", "c", "x", "t", "h2", "c2", "dh", "dc"], ["a", "b", "d"],
                          sequence_lengths=0),
     {"h": f(1, 2, 3), "c": f(1, 2, 3), "x": f(1, 2, 12), "t": i(0), "h2": f(1, 2, 3), "c2": f(1, 2, 3),
      "dh": f(1, 2, 3), "dc": f(2, 3)}),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case):
    refused(case[1], case[2])


# ---------------------------------------------------------------- LastNWindowCollector with a Mutex
def test_last_n_window_collector_with_mutex_and_num_visited():
    """MUTEX is never a known tensor: the function is called with it unknown (partial) and infers the
    rest; NUM_VISITED keeps its shape. A tensor where the Mutex goes, or another unknown input, does not."""
    workspace.RunOperatorOnce(op("CreateMutex", [], ["mx"]))
    collect = op("LastNWindowCollector", ["buf", "nx", "d", "mx", "nv"], ["buf", "nx", "nv"], num_to_collect=3)
    shapes = check(collect, {"buf": np.zeros(0, np.float32), "nx": np.array(0, np.int32), "d": f(2, 5),
                             "nv": np.array([0], np.int32)})
    assert shapes["buf"] == [2, 5] and shapes["nv"] == [1]
    check([collect, collect], {}, absent=())  # runs twice: 2 + 2 rows, 3 kept
    assert workspace.FetchBlob("buf").shape == (3, 5) and workspace.FetchBlob("nv") == [6]
    # a buffer blob holding nothing (Caffe2's test starts so): unknown, though the op takes it as empty
    workspace.ResetWorkspace()
    workspace.CreateBlob("buf")
    check(op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=3),
          {"nx": np.array(0, np.int32), "d": f(2, 5)}, absent={"buf"})
    assert workspace.FetchBlob("buf").shape == (2, 5)


@pytest.mark.parametrize("feeds,kw", [
    ({"buf": f(2, 3), "nx": np.array(2, np.int32), "d": f(1, 4)}, {}),         # row shapes differ
    ({"buf": f(2, 3), "nx": np.array(2, np.int32), "d": i(1, 2, 3, shape=(1, 3))}, {}),  # dtypes differ
    ({"buf": f(5, 3), "nx": np.array(0, np.int32), "d": f(1, 3)}, {}),         # more rows than num_to_collect
    ({"buf": f(0), "nx": np.array([0], np.int32), "d": f(1, 3)}, {}),          # NEXT not ()
    ({"buf": f(0), "nx": np.array(0, np.float32), "d": f(1, 3)}, {}),          # NEXT not int32
    ({"buf": f(0), "nx": np.array(0, np.int32), "d": np.float32(1)}, {}),      # DATA 0-d
])
def test_last_n_window_collector_refused(feeds, kw):
    refused(op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=4, **kw), feeds)


def test_last_n_window_collector_tensor_for_mutex_refused():
    refused(op("LastNWindowCollector", ["buf", "nx", "d", "mx"], ["buf", "nx"], num_to_collect=4),
            {"buf": f(0), "nx": np.array(0, np.int32), "d": f(1, 3), "mx": f(1)})
