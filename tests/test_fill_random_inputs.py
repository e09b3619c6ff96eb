"""workspace.FillRandomNetworkInputs: Caffe2's TestDataRandomFiller and the op schemas' input fillers
(caffe2/predictor/emulator/data_filler.cc, caffe2/core/operator_schema.cc; recurrent/input_fillers.py
names the source of each op type's rule)."""

import re

import numpy as np
import pytest

from recurrent import core, errors, input_fillers, workspace


def _snapshot():
    out = {}
    for b in workspace.Blobs():
        v = workspace.FetchBlob(b)
        out[b] = v.copy() if isinstance(v, np.ndarray) else v
    return out


def _same(a, b):
    assert sorted(a) == sorted(b)
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


# ---------------------------------------------------------------- Caffe2's test, ported
def test_filler():
    """caffe2/python/filler_test.py TestFiller.test_filler."""
    net = core.Net("test_filler")
    net.Concat(["X0", "X1", "X2"], ["concat_out", "split_info"])
    assert not workspace.HasBlob("X0")
    input_dim = (30, 20)
    workspace.FillRandomNetworkInputs(net, [[input_dim, input_dim, input_dim]], [["float", "float", "float"]])
    assert workspace.HasBlob("X0")
    assert workspace.FetchBlob("X0").shape == input_dim
    for b in ("X1", "X2"):
        assert workspace.FetchBlob(b).shape == input_dim
    with pytest.raises(RuntimeError):
        # the filler raises when the number of input dims / types does not match
        workspace.FillRandomNetworkInputs(net, [[input_dim]], [["float"]])


def test_count_mismatch_names_the_op_and_counts():
    net = core.Net("n")
    net.Concat(["X0", "X1", "X2"], ["c", "s"])
    with pytest.raises(errors.ValueError, match=r"op #0 Concat has 3 \(required\) inputs "
                                                r"\['X0', 'X1', 'X2'\] but input_dims\[0\] has 1 entries"):
        workspace.FillRandomNetworkInputs(net, [[(2, 3)]], [["float"]])
    with pytest.raises(errors.ValueError, match=r"op #0 Concat has 3 \(required\) inputs .* "
                                                r"but input_types\[0\] has 2 entries"):
        workspace.FillRandomNetworkInputs(net, [[(2, 3)] * 3], [["float"] * 2])
    with pytest.raises(errors.ValueError, match=r"input_dims has 2 entries but net '%s' has 1 ops with "
                                                r"inputs that no op of the net writes, one entry each: "
                                                r"#0 Concat \(X0, X1, X2\)" % re.escape(net.Name())):
        workspace.FillRandomNetworkInputs(net, [[(2, 3)] * 3, []], [["float"] * 3])
    with pytest.raises(errors.ValueError, match=r"input_types has 0 entries"):
        workspace.FillRandomNetworkInputs(net, [[(2, 3)] * 3], [])
    assert workspace.Blobs() == []


# ---------------------------------------------------------------- which blobs are filled
def test_intermediate_blobs_are_skipped():
    """Blobs some op of the net writes are not filled, and an op whose inputs are all written by
    ops has no entry (Sigmoid here)."""
    net = core.Net("two")
    net.FC(["x", "w", "b"], "y")
    net.Sigmoid("y", "s")
    workspace.FillRandomNetworkInputs(net, [[(4, 3), (5, 3), (5,)]], [["float"] * 3])
    assert sorted(workspace.Blobs()) == ["b", "w", "x"]
    assert workspace.FetchBlob("w").shape == (5, 3)
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("s").shape == (4, 5)


def test_op_with_intermediate_and_required_inputs():
    """Only the inputs no op writes count: Add(y, z) has one entry, for z."""
    net = core.Net("mix")
    net.Relu("x", "y")
    net.Add(["y", "z"], "out")
    workspace.FillRandomNetworkInputs(net, [[(2, 3)], [(2, 3)]], [["float"], ["float"]])
    assert sorted(workspace.Blobs()) == ["x", "z"]
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob("out"),
                               np.maximum(workspace.FetchBlob("x"), 0) + workspace.FetchBlob("z"))


def test_blob_read_by_two_ops_takes_the_last_ones_entry():
    """As Caffe2's map of inputs: the last op reading a blob gives its dims and type."""
    net = core.Net("twice")
    net.Relu("x", "a")
    net.Copy("x", "b")
    workspace.FillRandomNetworkInputs(net, [[(2, 3)], [(4,)]], [["float"], ["int"]])
    x = workspace.FetchBlob("x")
    assert x.shape == (4,) and x.dtype == np.int32


def test_fills_the_current_workspace_and_accepts_netdefs():
    net = core.Net("n")
    net.Relu("x", "y")
    workspace.SwitchWorkspace("fill_other", True)
    try:
        workspace.FillRandomNetworkInputs(net.Proto(), [[(3,)]], [["float"]])
        assert workspace.HasBlob("x")
        workspace.ResetWorkspace()
        workspace.FillRandomNetworkInputs(net.Proto().SerializeToString(), [[(3,)]], [["float"]])
        assert workspace.FetchBlob("x").shape == (3,)
    finally:
        workspace.SwitchWorkspace("default")
    assert not workspace.HasBlob("x")


def test_existing_tensor_is_replaced():
    workspace.FeedBlob("x", np.full((7,), 5.0, np.float32))
    net = core.Net("n")
    net.Relu("x", "y")
    workspace.FillRandomNetworkInputs(net, [[(2, 2)]], [["float"]])
    x = workspace.FetchBlob("x")
    assert x.shape == (2, 2) and x.max() <= 1.0


# ---------------------------------------------------------------- the dense filler
def test_dense_filler_ranges():
    """SupplyDenseFillers: min 0, max 1; float: uniform_real_distribution(0, 1) (so [0, 1)),
    int: uniform_int_distribution(0, 1) (both ends: 0 and 1)."""
    net = core.Net("n")
    net.Concat(["f", "g"], ["c", "s"])
    net.Copy("i", "j")
    workspace.FillRandomNetworkInputs(net, [[(100, 50), (0, 50)], [(5000,)]],
                                      [["float", "float"], ["int32_t"]])
    f = workspace.FetchBlob("f")
    assert f.dtype == np.float32 and f.shape == (100, 50)
    assert f.min() >= 0.0 and f.max() < 1.0 and f.std() > 0.2
    assert workspace.FetchBlob("g").shape == (0, 50)
    i = workspace.FetchBlob("i")
    assert i.dtype == np.int32 and set(np.unique(i)) == {0, 1}


def test_zero_dim_shape_is_a_scalar():
    net = core.Net("n")
    net.Relu("x", "y")
    workspace.FillRandomNetworkInputs(net, [[()]], [["float"]])
    assert workspace.FetchBlob("x").shape == ()


def test_seed_repeats_the_data_and_no_seed_draws_fresh():
    net = core.Net("n")
    net.Relu("x", "y")
    workspace.FillRandomNetworkInputs(net, [[(50,)]], [["float"]], seed=7)
    a = workspace.FetchBlob("x")
    workspace.FillRandomNetworkInputs(net, [[(50,)]], [["float"]], seed=7)
    np.testing.assert_array_equal(a, workspace.FetchBlob("x"))
    workspace.FillRandomNetworkInputs(net, [[(50,)]], [["float"]])
    b = workspace.FetchBlob("x")
    workspace.FillRandomNetworkInputs(net, [[(50,)]], [["float"]])
    assert not np.array_equal(b, workspace.FetchBlob("x"))
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        workspace.FillRandomNetworkInputs(net, [[(50,)]], [["float"]], seed=-1)


# ---------------------------------------------------------------- the sparse fillers
def _check_value_key_length(values, keys, lengths):
    v, k, ln = workspace.FetchBlob(values), workspace.FetchBlob(keys), workspace.FetchBlob(lengths)
    rows = v.shape[0]
    assert k.dtype == np.int32 and ln.dtype == np.int32
    assert ln.min() >= 0 and ln.sum() == k.shape[0]
    assert k.min() >= 0 and k.max() <= rows - 1
    assert v.min() >= 0 and v.max() <= 2 * rows  # Caffe2's bound for the values
    return v, k, ln


@pytest.mark.parametrize("op_type", ["SparseLengthsSum", "SparseLengthsMean"])
def test_sparse_lengths_fillers_give_inputs_the_op_accepts(op_type):
    """ValueKeyLengthInputFillers(DATA, INDICES, LENGTHS) (caffe2/operators/lengths_reducer_ops.cc)."""
    assert input_fillers.rule(op_type) == "value_key_length"
    net = core.Net("n")
    getattr(net, op_type)(["data", "idx", "len"], "out")
    for seed in range(5):
        workspace.FillRandomNetworkInputs(net, [[(10, 4), (40,), (7,)]], [["float", "int", "int"]], seed=seed)
        v, k, ln = _check_value_key_length("data", "idx", "len")
        workspace.RunNetOnce(net)
        out = workspace.FetchBlob("out")
        segs = np.split(k, np.cumsum(ln)[:-1])
        ref = np.stack([v[s].sum(0) if op_type == "SparseLengthsSum" or len(s) == 0 else v[s].mean(0)
                        for s in segs])
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


def test_sparse_lengths_weighted_sum_fillers():
    """WeightedValueKeyLengthInputFillers(DATA 0, INDICES 2, LENGTHS 3, WEIGHT 1): weights in [0, n]."""
    assert input_fillers.rule("SparseLengthsWeightedSum") == "weighted_value_key_length"
    net = core.Net("n")
    net.SparseLengthsWeightedSum(["data", "w", "idx", "len"], "out")
    workspace.FillRandomNetworkInputs(net, [[(6, 3), (20,), (20,), (4,)]],
                                      [["float", "float", "int", "int"]], seed=3)
    _check_value_key_length("data", "idx", "len")
    w = workspace.FetchBlob("w")
    assert w.min() >= 0 and w.max() <= 20 and w.max() > 1
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("out").shape == (4, 3)


def test_batch_one_hot_fillers():
    """BatchOneHot: ValueKeyLengthInputFillers(X, VALS, LENS) with inputs (X, LENS, VALS)
    (caffe2/operators/one_hot_ops.cc, one_hot_ops.h): lengths (input 1) sum to the values' count."""
    net = core.Net("n")
    net.BatchOneHot(["x", "lens", "vals"], "out")
    for seed in range(5):  # several draws: one could meet the checks by chance with the roles swapped
        workspace.FillRandomNetworkInputs(net, [[(5, 3), (3,), (8,)]], [["int", "int", "int"]], seed=seed)
        _check_value_key_length("x", "vals", "lens")
        workspace.RunNetOnce(net)
        assert workspace.FetchBlob("out").shape == (5, 8)


def test_more_lengths_than_keys_and_no_keys():
    """Lengths start from 0 (Caffe2's earlier filler.h), so there may be more lengths than keys;
    no keys give lengths of 0."""
    net = core.Net("n")
    net.SparseLengthsSum(["data", "idx", "len"], "out")
    workspace.FillRandomNetworkInputs(net, [[(3, 2), (2,), (9,)]], [["float", "int", "int"]])
    _check_value_key_length("data", "idx", "len")
    workspace.RunNetOnce(net)
    workspace.FillRandomNetworkInputs(net, [[(0, 2), (0,), (4,)]], [["float", "int", "int"]])
    assert workspace.FetchBlob("len").tolist() == [0, 0, 0, 0]
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("out"), np.zeros((4, 2), np.float32))


def test_sparse_filler_reads_the_shape_of_an_intermediate_input():
    """The data written by an earlier op: its rows come from static shape inference (Caffe2 handed
    the schema only the non-intermediate shapes, indexed as if they were all the inputs)."""
    net = core.Net("n")
    net.Copy("src", "data")
    net.SparseLengthsSum(["data", "idx", "len"], "out")
    workspace.FillRandomNetworkInputs(net, [[(3, 2)], [(30,), (5,)]], [["float"], ["int", "int"]])
    assert not workspace.HasBlob("data")
    k = workspace.FetchBlob("idx")
    assert k.max() <= 2 and workspace.FetchBlob("len").sum() == 30
    workspace.RunNetOnce(net)


def test_every_rule_names_a_registered_op():
    assert set(input_fillers.registered()) <= set(workspace.RegisteredOperators())
    assert input_fillers.rule("LengthsMax") == "dense"
    assert input_fillers.rule("LengthsSum") == "disallow"


# ---------------------------------------------------------------- errors, and the workspace unchanged
def _net(op_type, ins, outs=("out",), **args):
    net = core.Net("bad")
    net.Proto().op.append(core.CreateOperator(op_type, list(ins), list(outs), **args))
    return net


CONCAT = _net("Concat", ["a", "b"], ["c", "s"])
SLS = _net("SparseLengthsSum", ["data", "idx", "len"])

ERRORS = [
    ("unsupported-double", CONCAT, [[(2,), (2,)]], [["float", "double"]], errors.TypeError,
     r"blob 'b' \(input_types\[0\]\[1\], op #0 Concat input 1\): type 'double' cannot be stored here: "
     r"blobs are float32 \('float'\) or int32 \('int32_t' or 'int'\)"),
    ("unsupported-int64", CONCAT, [[(2,), (2,)]], [["int64_t", "float"]], errors.TypeError,
     r"blob 'a' .*type 'int64_t' cannot be stored here"),
    ("unsupported-bool", CONCAT, [[(2,), (2,)]], [["bool", "float"]], errors.TypeError, r"type 'bool'"),
    ("unknown-type", CONCAT, [[(2,), (2,)]], [["float", "half"]], errors.ValueError,
     r"blob 'b' \(input_types\[0\]\[1\], op #0 Concat input 1\): filler does not support type half"),
    ("type-not-str", CONCAT, [[(2,), (2,)]], [["float", np.float32]], errors.TypeError,
     r"input_types\[0\]\[1\], op #0 Concat input 1 must be a type name \(str\), got type"),
    ("negative-dim", CONCAT, [[(2, -1), (2,)]], [["float", "float"]], errors.ValueError,
     r"input_dims\[0\]\[0\] \(op #0 Concat input 0 'a'\) has a negative dimension: \[2, -1\]"),
    ("dim-not-int", CONCAT, [[(2, 1.5), (2,)]], [["float", "float"]], errors.TypeError,
     r"input_dims\[0\]\[0\] .* must be a list of ints, got \(2, 1.5\)"),
    ("dims-not-nested", CONCAT, [(2, 3), (2, 3)], [["float", "float"]], errors.ValueError,
     r"input_dims has 2 entries but net 'bad\w*' has 1 ops"),
    ("dims-one-level-short", CONCAT, [[2, 3]], [["float", "float"]], errors.TypeError,
     r"input_dims\[0\]\[0\] \(op #0 Concat input 0 'a'\) must be a list, got int"),
    ("dims-a-str", CONCAT, "23", [["float", "float"]], errors.TypeError,
     r"input_dims must be a list, got str"),
    ("types-a-str", CONCAT, [[(2,), (2,)]], ["float"], errors.TypeError,
     r"input_types\[0\] must be a list, got str"),
    ("disallowed-op", _net("LengthsSum", ["d", "l"]), [[(4, 2), (2,)]], [["float", "int"]], errors.ValueError,
     r"op #0 LengthsSum: LengthsSum does not have input fillers"),
    ("unregistered-op", _net("NoSuchOp", ["a"]), [[(2,)]], [["float"]], errors.ValueError,
     r"op #0 NoSuchOp: NoSuchOp does not have input fillers \(not a registered operator type\)"),
    ("empty-input", _net("ConstantFill", [], ["c"], shape=[2]), [], [], errors.ValueError,
     r"Empty input for run net: no op of net 'bad\w*' reads a blob that no op of the net writes"),
    ("lengths-2d", SLS, [[(4, 2), (6,), (3, 1)]], [["float", "int", "int"]], errors.ValueError,
     r"op #0 SparseLengthsSum: the lengths, input 2 'len', must be 1-D for the filler, got dims \[3, 1\]"),
    ("keys-2d", SLS, [[(4, 2), (6, 1), (3,)]], [["float", "int", "int"]], errors.ValueError,
     r"the keys, input 1 'idx', must be 1-D for the filler, got dims \[6, 1\]"),
    ("values-0d", SLS, [[(), (6,), (3,)]], [["float", "int", "int"]], errors.ValueError,
     r"the values, input 0 'data', must have a first dim for the filler, got a 0-d shape"),
    ("keys-without-rows", SLS, [[(0, 2), (6,), (3,)]], [["float", "int", "int"]], errors.ValueError,
     r"op #0 SparseLengthsSum: the keys 'idx' index the 0 rows of 'data', an empty range"),
    ("no-lengths-for-keys", SLS, [[(4, 2), (6,), (0,)]], [["float", "int", "int"]], errors.ValueError,
     r"op #0 SparseLengthsSum: the lengths 'len' must add up to 6 \(the keys 'idx'\), "
     r"but it has no elements"),
]


@pytest.mark.parametrize("net, dims, types, exc, match", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_leave_the_workspace_unchanged(net, dims, types, exc, match):
    workspace.FeedBlob("a", np.arange(3, dtype=np.float32))  # a blob the call would replace
    workspace.FeedBlob("keep", np.ones((2, 2), np.int32))
    workspace.CreateBlob("data")
    before = _snapshot()
    with pytest.raises(exc, match=match) as info:
        workspace.FillRandomNetworkInputs(net, dims, types)
    assert isinstance(info.value, RuntimeError)  # as every error of Caffe2's filler
    _same(before, _snapshot())


def test_net_of_another_kind_is_a_type_error():
    with pytest.raises(TypeError, match="expected a core.Net or NetDef, got list"):
        workspace.FillRandomNetworkInputs([], [], [])


def test_blob_holding_an_object_is_refused_before_anything_is_written():
    workspace.RunOperatorOnce(core.CreateOperator("CreateMutex", [], ["m"]))
    net = core.Net("n")
    net.Concat(["x", "m"], ["c", "s"])
    with pytest.raises(errors.TypeError, match=r"blob 'm' holds an object \(m, a C\+\+ native class of type "
                                               r"Mutex\.\), not a tensor"):
        workspace.FillRandomNetworkInputs(net, [[(2,), (2,)]], [["float", "float"]])
    assert not workspace.HasBlob("x")
