"""The usage pattern of Caffe2's LSTM benchmark (caffe2/python/lstm_benchmark.py), in this project's
own words: a generator net fills two blob queues (data, labels) one record per run, in a loop; a model
built with rnn_cell.LSTM takes its input and labels from DequeueBlobs, trains through
AddGradientOperators and carries its last hidden state over into its initial states with Copy; the
model net is created once and run by name with a num_iter count; after exactly as many runs as records
the queues are empty. Every result must be bitwise what the same model gives when the same batches are
fed directly, one RunNet each, with the RNN executor switched on and off by GlobalInit as the
benchmark does. Also: what the benchmark's GPU / cuDNN paths meet here (clear errors, no fake device),
and the GlobalInit flags it passes."""

import numpy as np
import pytest

from recurrent import core, rnn_cell, trace, utils, workspace
from recurrent import recurrent as rnn
from recurrent.model_helper import ModelHelper
from recurrent.proto import caffe2_pb2
from test_executor import assert_bitwise

B, D, H, LAYERS, MAX_T = 2, 3, 4, 2, 5
RUNS = [1, 2, 3]  # RunNet(name, k) chunks: the first is the benchmark's warm-up run


def batches(n):
    """n (x, labels) batches; the first of MAX_T steps, the others 1..MAX_T-1 (as the benchmark's
    random shapes); labels: one per timestep row of the flattened output, in [0, B * H)."""
    rng = np.random.RandomState(2603)
    out = []
    for i in range(n):
        t = MAX_T if i == 0 else rng.randint(1, MAX_T)
        out.append((rng.rand(t, B, D).astype(np.float32), (rng.rand(t) * B * H).astype(np.int32)))
    return out


def build(name, queues=None):
    """The benchmark's model. ``queues``: (data queue, label queue) to dequeue from; None: the
    blobs input_data and label are fed. Returns (model, blobs to compare, gradient map)."""
    model = ModelHelper(name=name)
    seq_lengths, _ = model.net.AddExternalInputs("seq_lengths", "target")
    if queues is not None:
        x = model.net.DequeueBlobs(queues[0], "input_data")
        labels = model.net.DequeueBlobs(queues[1], "label")
    else:
        x, labels = model.net.AddExternalInputs("input_data", "label")
    init = []
    for i in range(LAYERS):
        init.extend(model.net.AddExternalInputs("hidden_init_%d" % i, "cell_init_%d" % i))
    output, last_hidden, _, _ = rnn_cell.LSTM(
        model=model, input_blob=x, seq_lengths=seq_lengths, initial_states=init, dim_in=D,
        dim_out=[H] * LAYERS, scope="lstm1", memory_optimization=False, forward_only=False,
        drop_states=True, return_last_layer_only=True, static_rnn_unroll_size=None)
    # the benchmark's weights were a UniformFill shaped like the labels; ones keep the loss exact
    weights = model.net.ConstantFill(labels, "weights", value=1.0)
    softmax, loss = model.net.SoftmaxWithLoss([model.Flatten(output), labels, weights], ["softmax", "loss"])
    grads = model.AddGradientOperators([loss])
    for b in init:
        model.net.Copy(last_hidden, b)
    for op in model.net.Proto().op:
        if op.type.startswith("RecurrentNetwork"):
            rnn.set_rnn_executor_config(op, num_threads=2, max_cuda_streams=None)
    compare = [str(output), str(softmax), str(loss)] + [str(b) for b in init]
    compare += [str(p) for p in model.GetParams()] + [str(grads[p]) for p in model.GetParams()]
    return model, compare, grads


def feed_common():
    workspace.FeedBlob("seq_lengths", np.full(B, MAX_T, np.int32))
    for i in range(LAYERS):
        for s in ("hidden_init_%d", "cell_init_%d"):
            workspace.FeedBlob(s % i, np.zeros((1, B, H), np.float32))


def snapshot(names):
    return {n: workspace.FetchBlob(n) for n in names}


def run_queued(data, params):
    """The benchmark's flow: queues filled by a generator net, the model run by name in chunks.
    Returns the snapshots after each chunk and what executor_status said."""
    gen_init = core.Net("generate_input_init")
    q = gen_init.CreateBlobsQueue([], "inputqueue", num_blobs=1, capacity=len(data))
    lq = gen_init.CreateBlobsQueue([], "labelqueue", num_blobs=1, capacity=len(data))
    workspace.RunNetOnce(gen_init)
    gen = core.Net("generate_input")
    gen.EnqueueBlobs([q, "scratch"], ["scratch"])
    gen.EnqueueBlobs([lq, "label_scr"], ["label_scr"])
    for x, lab in data:
        workspace.FeedBlob("scratch", x)
        workspace.FeedBlob("label_scr", lab)
        workspace.RunNetOnce(gen.Proto())

    feed_common()
    model, compare, _ = build("LSTM_bench", (q, lq))
    workspace.RunNetOnce(model.param_init_net)
    for k, v in params.items():
        workspace.FeedBlob(k, v)
    workspace.CreateNet(model.net)
    snaps = []
    for k in RUNS:
        workspace.RunNet(model.net.Proto().name, k)
        snaps.append(snapshot(compare))
    status = trace.executor_status(model.net)
    # exactly sum(RUNS) records were queued: the next run finds the data queue empty, and fails
    # before writing anything (the dequeue is the net's first op)
    with pytest.raises(RuntimeError, match="queue 'inputqueue' is empty"):
        workspace.RunNet(model.net.Proto().name)
    assert_bitwise(snaps[-1], snapshot(compare), "after the failed run")
    return snaps, status


def run_direct(data, params):
    """The same model fed the same batches directly, one RunNet per batch."""
    feed_common()
    model, compare, _ = build("LSTM_direct")
    workspace.RunNetOnce(model.param_init_net)
    for k, v in params.items():
        workspace.FeedBlob(k, v)
    workspace.CreateNet(model.net, input_blobs=["input_data", "label"])
    snaps, done = [], 0
    for k in RUNS:
        for x, lab in data[done:done + k]:
            workspace.FeedBlob("input_data", x)
            workspace.FeedBlob("label", lab)
            workspace.RunNet(model.net.Proto().name)
        done += k
        snaps.append(snapshot(compare))
    return snaps


@pytest.fixture
def executor_flag():
    """GlobalInit's executor switch, restored after the test."""
    old = workspace.rnn_executor_enabled()
    yield lambda on: workspace.GlobalInit(["caffe2", "--caffe2_rnn_executor=%d" % on])
    workspace.GlobalInit(["caffe2", "--caffe2_rnn_executor=%d" % old])


def test_queued_lstm_benchmark_matches_feeding_directly(executor_flag):
    data = batches(sum(RUNS))
    # parameters drawn once, fed to every model, so all runs start from the same weights
    model, _, _ = build("init_only")
    workspace.RunNetOnce(model.param_init_net)
    params = {str(p): workspace.FetchBlob(str(p)) for p in model.GetParams()}
    results = {}
    try:
        for on in (1, 0):
            executor_flag(on)
            for how in ("queued", "direct"):
                workspace.SwitchWorkspace("lstm_bench_port_%s_%d" % (how, on), True)
                if how == "queued":
                    results[how, on], status = run_queued(data, params)
                    # on: both RNN ops used the executor; off: none has one
                    assert [s["last_run"] for s in status] == (["executor"] * 2 if on else []), status
                else:
                    results[how, on] = run_direct(data, params)
    finally:
        for how in ("queued", "direct"):
            for on in (1, 0):
                workspace.SwitchWorkspace("lstm_bench_port_%s_%d" % (how, on), True)
                workspace.ResetWorkspace()
        workspace.SwitchWorkspace("default")
    ref = results["direct", 0]
    output = next(iter(ref[-1]))  # build() lists the LSTM's output first
    assert ref[-1][output].shape == (data[-1][0].shape[0], B, H)
    assert np.isfinite(ref[-1]["loss"]).all() and ref[0]["loss"] != ref[-1]["loss"]
    for key, snaps in results.items():
        for i, (r, g) in enumerate(zip(ref, snaps)):
            assert_bitwise(r, g, "%s executor=%d after chunk %d" % (key[0], key[1], i))


def test_the_benchmarks_globalinit_flags_are_accepted(executor_flag):
    """Every flag lstm_benchmark.py passes to GlobalInit, plus the OpenMP thread count a user may
    add: accepted (no OpenMP here, as in a Caffe2 built without it); not an int: refused."""
    assert workspace.GlobalInit(["caffe2", "--caffe2_log_level=0", "--caffe2_print_blob_sizes_at_exit=0",
                                 "--caffe2_rnn_executor=0", "--caffe2_gpu_memory_tracking=1",
                                 "--caffe2_omp_num_threads=2", "--caffe2_mkl_num_threads=1"])
    assert not workspace.rnn_executor_enabled()
    with pytest.raises(ValueError, match="--caffe2_omp_num_threads"):
        workspace.GlobalInit(["caffe2", "--caffe2_omp_num_threads=two"])
    with pytest.raises(ValueError, match="unknown flag --caffe2_omp_threads"):
        workspace.GlobalInit(["caffe2", "--caffe2_omp_threads=2"])


# ---------------------------------------------------------------- the GPU paths: clear errors
CUDA_MSG = r"asks for device CUDA \(device_type 1, device_id 4\), but this build runs on the CPU only"


def test_a_net_built_in_a_gpu_device_scope_is_refused_not_run_on_the_cpu():
    """The benchmark's --gpu path: core.DeviceOption(workspace.GpuDeviceType, 4) in a DeviceScope.
    Every way of running such an op refuses it (Caffe2 without CUDA could not create it either);
    nothing runs, the workspace stays usable."""
    dev = core.DeviceOption(workspace.GpuDeviceType, 4)
    assert dev.device_type == caffe2_pb2.CUDA and not workspace.has_gpu_support
    with core.DeviceScope(dev):
        net = core.Net("gpu_net")
        net.CreateBlobsQueue([], "q", num_blobs=1, capacity=2)
    msg = r"net 'gpu_net' op #0: op CreateBlobsQueue \(outputs \['q'\]\) " + CUDA_MSG
    with pytest.raises(ValueError, match=msg):
        workspace.RunNetOnce(net)
    with pytest.raises(ValueError, match=msg):
        workspace.CreateNet(net)
    with pytest.raises(ValueError, match="RunOperatorOnce: op CreateBlobsQueue .*" + CUDA_MSG):
        workspace.RunOperatorOnce(net.Proto().op[0])
    assert not workspace.HasBlob("q") and "gpu_net" not in workspace.Nets()
    workspace.FeedBlob("x", np.ones(2, np.float32))
    assert workspace.FetchBlob("x").tolist() == [1, 1]


def test_gpu_device_on_the_net_or_in_a_step_net_is_refused_and_cpu_ops_run():
    # a net-wide device applies to the ops that set none (RunAllOnGPU), not to those set to CPU
    net = core.Net("all_on_gpu")
    net.ConstantFill([], "y", shape=[2], value=1.0)
    net.RunAllOnGPU(gpu_id=4)
    with pytest.raises(ValueError, match=r"net 'all_on_gpu' op #0: op ConstantFill .*" + CUDA_MSG):
        workspace.RunNetOnce(net)
    net.Proto().op[0].device_option = core.DeviceOption(caffe2_pb2.CPU)
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("y").tolist() == [1, 1]

    # an LSTM built in a CPU scope runs; one whose step net asks for CUDA is refused, naming the path
    model = ModelHelper(name="lstm_gpu_step")
    with core.DeviceScope(core.DeviceOption(caffe2_pb2.CPU)):
        rnn_cell.LSTM(model, "x", "lens", ["h0", "c0"], D, H, scope="l")
    rnn_op = [op for op in model.net.Proto().op if op.type == "RecurrentNetwork"][0]
    step = [a for a in rnn_op.arg if a.name == "step_net"][0].n
    step.op[-1].device_option = core.DeviceOption(workspace.GpuDeviceType, 4)
    with pytest.raises(ValueError, match=r"net 'lstm_gpu_step' op #\d+, in the net of argument 'step_net', "
                                         r"net '[^']*' op #%d: op .*" % (len(step.op) - 1) + CUDA_MSG):
        workspace.CreateNet(model.net)


def test_cudnn_lstm_and_gpu_memory_stats_say_they_are_not_provided():
    """The benchmark's --implementation cudnn and --gpu memory report: AttributeError (so hasattr is
    False, as for any name a module lacks) saying why."""
    with pytest.raises(AttributeError, match=r"rnn_cell.cudnn_LSTM is not provided: .*CPU only; "
                                             r"rnn_cell.LSTM builds the same layers"):
        rnn_cell.cudnn_LSTM
    with pytest.raises(AttributeError, match=r"utils.GetGPUMemoryUsageStats is not provided: .*CPU only"):
        utils.GetGPUMemoryUsageStats()
    assert not hasattr(rnn_cell, "cudnn_LSTM") and not hasattr(utils, "GetGPUMemoryUsageStats")
    with pytest.raises(AttributeError, match="module 'recurrent.rnn_cell' has no attribute 'nope'"):
        rnn_cell.nope
