"""Workspaces: named blobs and nets, as caffe2.python.workspace.

Workspaces are kept by name; one is current. Every call goes to the C runtime
(``recurrent._C``) with the GIL released while nets run.

The current workspace is per thread, unlike Caffe2's process-wide one: the
main thread's current workspace is the process default, a thread that never
called SwitchWorkspace uses the main thread's current workspace (as in
Caffe2), and SwitchWorkspace in any other thread changes that thread's current
workspace only. So "one workspace per thread" (a net runs in one thread at a
time per workspace) is safe: another thread's SwitchWorkspace can never
redirect this thread's FeedBlob or RunNet.
"""

import collections.abc
import contextlib
import threading

import numpy as np

from . import _C, errors, python_op, scope
from .proto import NetDef, OperatorDef, PlanDef, TensorProto, device_of

# Caffe2's device flags: this package runs on the CPU only
has_gpu_support = False
has_cuda_support = False
has_hip_support = False
GpuDeviceType = 1  # caffe2_pb2.CUDA
is_asan = _C.is_asan  # whether this build of recurrent._C has AddressSanitizer


def NumGpuDevices():
    """0: this package has no GPU support."""
    return 0


NumCudaDevices = NumGpuDevices


# What Caffe2 built without a GPU answered (workspace.py: its lambdas for "not has_gpu_support")
def GetCUDAVersion():
    """0: no CUDA."""
    return 0


def GetCuDNNVersion():
    """0: no cuDNN."""
    return 0


def GetDeviceProperties(device_id):
    """None: no GPU."""
    return None


def GetGpuPeerAccessPattern():
    """An empty array: no GPU."""
    return np.array([])


def GetGPUMemoryInfo():
    """None: no GPU."""
    return None


def RegisteredOperators():
    """The registered operator types, sorted (Caffe2's ``workspace.RegisteredOperators``)."""
    return sorted(_C.op_types())

_workspaces = {}
_current = "default"  # the main thread's current workspace, and every thread's until it switches
_lock = threading.Lock()
_thread = threading.local()  # .current: a non-main thread's own choice (SwitchWorkspace there)


def _current_name():
    if _main_thread():
        return _current
    return getattr(_thread, "current", None) or _current


def _ws():
    with _lock:
        name = _current_name()
        ws = _workspaces.get(name)
        if ws is None:
            ws = _workspaces[name] = _C.Workspace()
        return ws


def _main_thread():
    return threading.current_thread() is threading.main_thread()


def _name(blob):
    if isinstance(blob, bytes):
        return blob.decode()
    if not isinstance(blob, str) and not hasattr(blob, "_name_for_c"):
        if type(blob).__name__ == "BlobReference":
            return str(blob)
        raise TypeError("blob name must be a str or BlobReference, got %s" % type(blob).__name__)
    return str(blob)


_SERIALIZED = (bytes, bytearray, memoryview)


def _netdef(net):
    """A NetDef from a NetDef, a core.Net, or a serialized NetDef (bytes, as Caffe2's
    ``StringifyProto`` passed to its C functions)."""
    if isinstance(net, NetDef):
        return net
    if hasattr(net, "Proto") and callable(net.Proto):
        return net.Proto()
    if isinstance(net, _SERIALIZED):
        return NetDef.FromString(net)
    raise TypeError("expected a core.Net or NetDef, got %s (a serialized NetDef is bytes)"
                    % type(net).__name__)


def StringifyProto(obj):
    """Caffe2's: a message (or an object with ``Proto()``, as a core.Net or core.Plan) in
    protobuf's binary wire format; bytes (or a str) are returned as they are. Anything else
    raises ValueError."""
    if isinstance(obj, (str, bytes)):
        return obj
    if hasattr(obj, "SerializeToString"):
        return obj.SerializeToString()
    if hasattr(obj, "Proto") and callable(obj.Proto):
        return obj.Proto().SerializeToString()
    raise ValueError("Unexpected argument to StringifyProto of type " + type(obj).__name__)


def _net_name(net):
    if isinstance(net, (str, bytes)):
        return _name(net)
    return _netdef(net).name


def StringifyBlobName(name):
    """A blob name as str: a str as it is, a BlobReference as ``str(ref)``; anything else is a
    TypeError (Caffe2: an AssertionError)."""
    if isinstance(name, str):
        return name
    if type(name).__name__ != "BlobReference":
        raise TypeError("Expected a string or BlobReference, got %s" % type(name).__name__)
    return str(name)


def StringifyNetName(name):
    """A net name as str: a str as it is, a core.Net as its name; anything else is a TypeError
    (Caffe2: an AssertionError)."""
    if isinstance(name, str):
        return name
    if type(name).__name__ != "Net":
        raise TypeError("Expected a string or Net, got %s" % type(name).__name__)
    return str(name)


def GetNetName(net):
    """The name of ``net``: a str, a core.Net or a NetDef; anything else is a TypeError (Caffe2: an
    Exception "Not a Net object")."""
    if isinstance(net, str):
        return net
    if type(net).__name__ == "Net":
        return net.Name()
    if isinstance(net, NetDef):
        return net.name
    raise TypeError("Not a Net object: %r" % (net,))


# ---------------------------------------------------------------- blobs
def FeedBlob(name, arr, device_option=None):
    """Copies ``arr`` into blob ``name`` of the current workspace.

    float32 and int32 arrays are stored as they are. Other floating types are
    converted to float32 (rounded to nearest; a finite value beyond float32's range,
    which would become inf, raises ValueError); bool and other integer types to int32
    (values that do not fit raise ValueError). Other dtypes raise TypeError. Returns True.
    """
    _feed(_ws(), name, arr, device_option)
    return True


def _feed(ws, name, arr, device_option):
    if device_option is not None and getattr(device_option, "device_type", 0) not in (0,):
        raise errors.ValueError("FeedBlob '%s': only CPU blobs are supported in this build" % _name(name))
    if isinstance(arr, TensorProto):  # as Caffe2's: its array (utils.Caffe2TensorToNumpyArray)
        from .utils import Caffe2TensorToNumpyArray
        arr = Caffe2TensorToNumpyArray(arr)
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)  # a list of floats is float64: converted (and range-checked) as any
    ws.feed_blob(_name(name), arr)


def FetchBlob(name):
    """Returns a copy of blob ``name`` as a NumPy array the caller owns. A blob that holds no
    tensor (a queue, a Mutex, step workspaces, or a blob created but never written) gives bytes
    describing it, as Caffe2's: ``b"<name>, a C++ native class of type <type>."``; a missing
    blob is a KeyError."""
    return _ws().fetch_blob(_name(name))


def FetchBlobs(names):
    return [FetchBlob(n) for n in names]


def CreateBlob(name):
    """Creates blob ``name`` in the current workspace holding no tensor (Caffe2's empty blob),
    unless it exists (then it is left as it is). Ops that read it are checked when they run;
    ``FetchBlob`` of it gives ``b"<name>, a C++ native class of type nullptr (uninitialized)."``.
    Returns True."""
    _ws().create_blob(_name(name))
    return True


def HasBlob(name):
    return _ws().has_blob(_name(name))


def ResetBlob(name):
    """Makes blob ``name`` hold no tensor, as ``CreateBlob`` made it (Caffe2's ResetBlob); the
    blob stays. KeyError for a missing blob; a blob holding an object (a queue, a Mutex, step
    workspaces) is a TypeError: nets that use it keep pointers to it (ResetWorkspace frees it).
    Returns True."""
    _ws().reset_blob(_name(name))
    return True


def SerializeBlob(name):
    """Blob ``name`` as the bytes of a Caffe2 ``BlobProto`` (name, type "Tensor", and the
    ``TensorProto`` Caffe2's serializer writes), byte for byte as Caffe2's ``SerializeBlob``
    and as a ``Save`` record of the blob. KeyError for a missing blob; a blob holding no tensor
    (an object, or created and never written) is a TypeError (Caffe2: no serializer for it)."""
    from .proto import serialize_tensor_blob
    name = _name(name)
    a = FetchBlob(name)
    if not isinstance(a, np.ndarray):
        raise errors.TypeError("SerializeBlob: blob '%s' holds no tensor (%s)" % (name, a.decode()))
    return serialize_tensor_blob(name, a)


def DeserializeBlob(name, serialized):
    """Stores in blob ``name`` (created if missing) the tensor of the serialized ``BlobProto``
    ``serialized`` (bytes; what ``SerializeBlob`` or Caffe2's gave; the name inside is not used),
    as Caffe2's. Its data type converts as ``FeedBlob`` converts arrays (float types to float32,
    integer types to int32, range-checked). Malformed bytes, a chunk that is not the whole tensor
    or data that does not fit the dims are a ValueError; a blob that is not a tensor (a string,
    another type) is a TypeError. Returns True."""
    from .proto import deserialize_tensor_blob
    name = _name(name)
    if not isinstance(serialized, _SERIALIZED):
        raise TypeError("DeserializeBlob '%s': serialized must be bytes, got %s" % (name, type(serialized).__name__))
    FeedBlob(name, deserialize_tensor_blob(bytes(serialized), name))
    return True


def GetBlobSizeBytes(name):
    """The bytes of blob ``name``'s tensor (elements x 4); 0 for a blob holding no tensor (an
    object, or created and never written), as Caffe2's ``BlobStat``. KeyError for a missing blob."""
    name = _name(name)
    ws = _ws()
    if not ws.has_blob(name):
        raise errors.KeyError("GetBlobSizeBytes: blob '%s' does not exist in workspace '%s'"
                              % (name, CurrentWorkspace()))
    desc = ws.blob_shapes().get(name)
    if desc is None:
        return 0
    return int(np.prod(desc[0], dtype=np.int64)) * 4


def IsNUMAEnabled():
    """False: this package binds no memory to NUMA nodes (Caffe2's without
    ``--caffe2_cpu_numa_enabled``)."""
    return False


def GetNumNUMANodes():
    """-1, as Caffe2's when NUMA is not enabled."""
    return -1


def GetBlobNUMANode(name):
    """-1 (NUMA is not enabled), as Caffe2's, for a blob holding a tensor with data; KeyError for
    a missing blob, TypeError for a blob holding no tensor, ValueError for an empty tensor (Caffe2
    refused those too)."""
    name = _name(name)
    ws = _ws()
    if not ws.has_blob(name):
        raise errors.KeyError("GetBlobNUMANode: blob '%s' does not exist in workspace '%s'"
                              % (name, CurrentWorkspace()))
    desc = ws.blob_shapes().get(name)
    if desc is None:
        raise errors.TypeError("GetBlobNUMANode: blob '%s' holds no tensor" % name)
    if int(np.prod(desc[0], dtype=np.int64)) == 0:
        raise errors.ValueError("GetBlobNUMANode: blob '%s' is an empty tensor %s: it has no data"
                                % (name, tuple(desc[0])))
    return -1


def FetchTorch(name):
    """Blob ``name`` as a ``torch.Tensor`` (a copy, as ``FetchBlob``: Caffe2's shared the
    memory). Needs PyTorch. A blob holding no tensor is a TypeError ("Blob has to be a tensor")."""
    import torch
    a = FetchBlob(name)
    if not isinstance(a, np.ndarray):
        raise errors.TypeError("FetchTorch: Blob has to be a tensor; '%s' is %s" % (_name(name), a.decode()))
    return torch.from_numpy(a)


def Blobs():
    """Names of the blobs in the current workspace."""
    return _ws().blobs()


class _BlobDict:
    """``workspace.blobs``: the current workspace's blobs as a mapping, as in
    Caffe2. ``blobs[name]`` fetches (a copy; KeyError if there is no such
    blob), ``blobs[name] = array`` feeds, ``name in blobs``, ``len``,
    iteration and ``keys()`` list the names. Always the calling thread's
    current workspace at the time of the call."""

    def __getitem__(self, name):
        if not HasBlob(name):
            raise errors.KeyError("blob '%s' does not exist in workspace '%s'"
                                  % (_name(name), CurrentWorkspace()))
        return FetchBlob(name)

    def __setitem__(self, name, value):
        FeedBlob(name, value)

    def __contains__(self, name):
        return HasBlob(name)

    def __len__(self):
        return len(Blobs())

    def __iter__(self):
        return iter(Blobs())

    def keys(self):
        return Blobs()


blobs = _BlobDict()


# ---------------------------------------------------------------- ops and nets
_DEVICE_NAMES = {1: "CUDA", 6: "HIP"}  # caffe2_pb2.DeviceTypeProto values


def _device_type(opt):
    return int(getattr(opt, "device_type", 0) or 0) if opt is not None else 0


def _refuse_non_cpu(where, op, default):
    """Raises ValueError if ``op`` (or, where it sets no device_option, ``default``: its net's)
    asks for a device other than the CPU, looking into the nets held by its arguments (step nets)
    too. Caffe2 failed there as well when it had no implementation for the device ("Cannot create
    operator ... on the device"); running such an op on the CPU would fake the device."""
    opt = device_of(op) if device_of(op) is not None else default
    dt = _device_type(opt)
    if dt != 0:
        raise errors.ValueError(
            "%s: op %s (outputs %s) asks for device %s (device_type %d, device_id %d), but this build "
            "runs on the CPU only (no CUDA / GPU support): build it without a GPU DeviceScope or RunAllOnGPU"
            % (where, op.type, [str(b) for b in op.output], _DEVICE_NAMES.get(dt, "type %d" % dt), dt,
               int(getattr(opt, "device_id", 0) or 0)))
    for a in op.arg:
        nets = [a.n] if a.n is not None else list(a.nets)
        for n in nets:
            _refuse_non_cpu_net(n, opt, "%s, in the net of argument '%s'" % (where, a.name))


def _refuse_non_cpu_net(net, default=None, where=None):
    if device_of(net) is not None:
        default = device_of(net)
    where = (where + ", " if where else "") + "net '%s'" % (net.name or "")
    for i, op in enumerate(net.op):
        _refuse_non_cpu("%s op #%d" % (where, i), op, default)


def RunOperatorOnce(operator):
    """Runs ``operator`` (an OperatorDef, or a serialized one: bytes) once in the current
    workspace."""
    if isinstance(operator, _SERIALIZED):
        operator = OperatorDef.FromString(operator)
    if not isinstance(operator, OperatorDef):
        raise TypeError("RunOperatorOnce expects an OperatorDef, got %s (a serialized OperatorDef is bytes)"
                        % type(operator).__name__)
    _run_operator_once(_ws(), operator)
    return True


def _chained(call, *args):
    """``call(*args)``; an error raised because a Python op's function raised gets that exception as
    its ``__cause__`` (recurrent/python_op.py), or is that exception when it is a KeyboardInterrupt
    or SystemExit."""
    try:
        return call(*args)
    except BaseException as e:
        cause = python_op.take_error()
        if isinstance(cause, (KeyboardInterrupt, SystemExit)):
            raise cause from None  # the function's own KeyboardInterrupt / SystemExit, in this thread
        if cause is not None and cause is not e and e.__cause__ is None:
            raise e from cause
        raise


class _OperatorTracebacks(collections.abc.Mapping):
    """``operator_tracebacks[net name][op position]``: where ``net.X(...)`` added each op of a live
    ``core.Net`` (a list of ``(file, line, function)``, innermost first), as Caffe2's. Read-only;
    a net's entry goes with the Net object."""

    def __getitem__(self, net_name):
        from . import core
        net = core._live_nets.get(net_name)
        if net is None:
            raise KeyError(net_name)
        return net.__dict__.get("_op_tracebacks", {})

    def __iter__(self):
        from . import core
        return iter(list(core._live_nets.keys()))

    def __len__(self):
        from . import core
        return len(core._live_nets)


operator_tracebacks = _OperatorTracebacks()


_TRACEBACK_FRAMES = 10  # the innermost frames a note shows (the outer ones are the program's driver)


def _traceback_lines(net_name, op_id):
    tb = operator_tracebacks.get(net_name, {}).get(op_id) if op_id >= 0 else None
    if not tb:
        return None
    lines = ["Original python traceback for operator `%d` in network `%s` (most recent call last):"
             % (op_id, net_name)]
    if len(tb) > _TRACEBACK_FRAMES:
        lines.append("  ... %d outer frames" % (len(tb) - _TRACEBACK_FRAMES))
    return lines + ['  File "%s", line %d, in %s' % t for t in reversed(tb[:_TRACEBACK_FRAMES])]


def _in_net(net_name, call, *args):
    """``_chained(call, *args)`` for a call that creates or runs net ``net_name``; an error of one of its
    ops gets a note (Python 3.11+) with the Python stack that added the op to its ``core.Net`` (Caffe2
    logged it as warnings). The op is the error's ``op_position`` (set by the C call that raised it),
    not the workspace's ``last_failed_op()``, which another thread's call may have changed since."""
    try:
        return _chained(call, *args)
    except Exception as e:
        lines = _traceback_lines(net_name, getattr(e, "op_position", -1))
        if lines and hasattr(e, "add_note"):
            e.add_note("\n".join(lines))
        raise


def CallWithExceptionIntercept(func, op_id_fetcher, net_name, *args, **kwargs):
    """Caffe2's: ``func(*args, **kwargs)``; when it raises, logs (warning level, logger
    ``recurrent.workspace``) the Python stack that added op ``op_id_fetcher()`` to net ``net_name``,
    then re-raises."""
    try:
        return func(*args, **kwargs)
    except Exception:
        lines = _traceback_lines(net_name, op_id_fetcher())
        if lines:
            import logging
            log = logging.getLogger(__name__)
            for line in lines:
                log.warning(line)
        raise


def _run_operator_once(ws, operator):
    _refuse_non_cpu("RunOperatorOnce", operator, None)
    _chained(ws.run_operator_once, operator.to_c())


def RunOperatorsOnce(operators):
    for op in operators:
        RunOperatorOnce(op)
    return True


def RunNetOnce(net):
    """Runs ``net`` (a core.Net, a NetDef, or a serialized NetDef: bytes) once in the current
    workspace, without keeping it."""
    _run_net_once(_ws(), _netdef(net))
    return True


def _run_net_once(ws, net):
    nd = _netdef(net)
    _refuse_non_cpu_net(nd)
    _in_net(nd.name, ws.run_net_once, nd.to_c(), _main_thread())


def CreateNet(net, overwrite=False, input_blobs=None):
    """Instantiates ``net`` (a core.Net, a NetDef, or a serialized NetDef: bytes, as Caffe2's
    took) in the current workspace. Raises RuntimeError if a
    net of the same name exists, unless ``overwrite``. ``input_blobs`` that do
    not exist are created first holding no tensor, as in Caffe2 (so the
    net-creation check leaves the ops that read them to the run)."""
    _create_net(_ws(), net, overwrite, input_blobs)
    return True


def _create_net(ws, net, overwrite, input_blobs):
    nd = _netdef(net)
    _refuse_non_cpu_net(nd)
    for b in input_blobs or ():
        ws.create_blob(_name(b))
    _in_net(nd.name, ws.create_net, nd.to_c(), bool(overwrite))
    return nd.name


def RunNet(name, num_iter=1, allow_fail=False):
    """Runs a net created with CreateNet (by name or Net) ``num_iter`` times."""
    num_iter = int(num_iter)
    if num_iter < 0:
        raise errors.ValueError("RunNet: num_iter must be >= 0, got %d" % num_iter)
    try:
        ws = _ws()
        _in_net(_net_name(name), ws.run_net, _net_name(name), num_iter, _main_thread())
    except (RuntimeError, ValueError, TypeError, IndexError, KeyError, MemoryError):
        if allow_fail:
            return False
        raise
    return True


def Nets():
    return _ws().nets()


def DeleteNet(name):
    _ws().delete_net(_net_name(name))


def RunOperatorMultiple(operator, num_runs):
    """Creates ``operator`` (an OperatorDef, or a serialized one: bytes) once in the current
    workspace and runs it ``num_runs`` times, as Caffe2's (its state carries over between the runs:
    an ``Iter`` counts them all). Returns True; a failing run raises."""
    if isinstance(operator, _SERIALIZED):
        operator = OperatorDef.FromString(operator)
    if not isinstance(operator, OperatorDef):
        raise TypeError("RunOperatorMultiple expects an OperatorDef, got %s (a serialized OperatorDef is bytes)"
                        % type(operator).__name__)
    _refuse_non_cpu("RunOperatorMultiple", operator, None)
    _chained(_ws().run_operator_multiple, operator.to_c(), int(num_runs))
    return True


def BenchmarkNet(name, warmup_runs, main_runs, run_individual):
    """Caffe2's: times the net ``name`` (created with CreateNet; a Net is taken too). Runs it
    ``warmup_runs`` (>= 0) times, then ``main_runs`` (>= 1) timed times, then, with
    ``run_individual``, ``main_runs`` more times timing each op on its own. Returns a list of
    floats: the mean milliseconds per run of the whole net, then the mean milliseconds of each op
    in net order (0.0 without ``run_individual``). The runs are real runs: their outputs stay
    (Caffe2 also logged a table at INFO level; nothing is printed here)."""
    ws = _ws()
    return _in_net(_net_name(name), ws.benchmark_net, _net_name(name), int(warmup_runs), int(main_runs),
                    bool(run_individual), _main_thread())


def BenchmarkNetOnce(name):
    """Caffe2's: runs the net ``name`` once; returns the milliseconds it took."""
    return BenchmarkNet(name, 0, 1, False)[0]


# ---------------------------------------------------------------- plans
def RunPlan(plan_or_step):
    """Runs a plan (``core.Plan``, a ``PlanDef``, a serialized PlanDef: bytes, as Caffe2's
    ``RunPlan(plan.Proto().SerializeToString())``, or a ``core.ExecutionStep``, which becomes a
    plan of its own) in the current workspace, as Caffe2's plan executor; returns True.

    Each top-level step, when it starts, creates the nets it and its substeps use, from the
    plan's NetDefs: a net of the same name that existed before the plan is replaced once,
    a net an earlier step of the plan created is kept (its state too). Steps run in order;
    a step runs its nets (or substeps) in order, ``num_iter`` times (1 when unset), or, with
    ``should_stop_blob``, until that blob (a 1-element bool tensor, int32 here) is true. The
    blob must exist when the step starts (an output of one of its nets counts: creating the
    net creates it) and is read after every net or substep, never before the first; a blob
    still holding no tensor reads as false; ``only_once`` runs such a step once at most.

    Refused (ValueError naming the step): a step with both nets and substeps, num_iter with
    should_stop_blob, only_once (even False) without should_stop_blob (as Caffe2), and what needs threads
    beside the running net, since a workspace runs one net at a time here: concurrent_substeps
    over more than one substep, num_concurrent_instances > 1, run_every_ms on a substep,
    report_net, create_workspace. A missing should_stop_blob is a KeyError, one that is not a
    1-element integer tensor a TypeError / ValueError. A net's failure raises its own exception
    (type kept), its message prefixed with the plan, step, iteration and net; what ran stays."""
    _run_plan(_ws(), plan_or_step)
    return True


def RunPlanInBackground(plan_or_step):
    """Caffe2's ``RunPlanInBackground``: starts ``plan_or_step`` (as ``RunPlan`` takes it) in a thread
    of its own, in the current workspace, and returns a ``BackgroundPlan`` at once.

    While the plan runs, its thread has the workspace's nets: creating, running or deleting a net,
    running an operator or a plan, or resetting the workspace from another thread raises
    RuntimeError ("workspace is busy"). Blob calls (``FeedBlob``, ``FetchBlob``, ``Blobs``,
    ``HasBlob``, ...) from other threads wait for the net running, then run between two of the
    plan's nets: a fetch sees what the last net left, and a fed ``should_stop_blob`` stops the
    plan at its next check (Caffe2 read and wrote blobs under a running net). A second plan in the
    same workspace is refused until the first ends, as is a call while another thread runs a net
    in it, or from a Python op's function of the net running in it (RuntimeError). The plan's
    errors do not raise here: ``is_succeeded()`` is then False and ``exception()`` gives the
    error. A plan still running when the interpreter exits stops at its next op."""
    import copy
    plan = copy.deepcopy(_plan_def(plan_or_step))  # the caller may go on editing its plan meanwhile
    ws = _ws()
    ws._bg_check()  # as RunPlan: refused while another thread's net, or this Python op's net, runs
    return BackgroundPlan(ws, _current_name(), plan)


class BackgroundPlan:
    """A plan running in a thread of its own (``RunPlanInBackground``): ``is_done()``,
    ``is_succeeded()`` (Caffe2's), ``wait(timeout=None)`` and ``exception()``."""

    def __init__(self, ws, ws_name, plan):
        self._done = threading.Event()
        self._exc = None
        self._started = threading.Event()
        self._start_error = None
        self._name = plan.name
        t = threading.Thread(target=self._run, args=(ws, ws_name, plan), daemon=True,
                             name="RunPlanInBackground '%s'" % plan.name)
        t.start()
        self._started.wait()
        if self._start_error is not None:
            t.join()
            raise self._start_error

    def _run(self, ws, ws_name, plan):
        try:
            _thread.current = ws_name  # Python ops of the plan that call workspace.* see its workspace
            try:
                ws._bg_begin()
            except BaseException as e:
                self._start_error = e
                return
            self._started.set()
            try:
                _run_plan(ws, plan)
            except BaseException as e:  # kept for exception(); is_succeeded() is False
                self._exc = e
            finally:
                ws._bg_end()
        finally:
            self._started.set()
            self._done.set()

    def is_done(self):
        """True once the plan has ended (succeeded or failed)."""
        return self._done.is_set()

    def is_succeeded(self):
        """True if the plan ran to its end, False if it raised; RuntimeError while it runs (as
        Caffe2's)."""
        if not self._done.is_set():
            raise RuntimeError("BackgroundPlan '%s': is_succeeded() before the plan ended (is_done() is "
                               "False; wait() for it)" % self._name)
        return self._exc is None

    def wait(self, timeout=None):
        """Waits until the plan ends, or ``timeout`` seconds; returns ``is_done()``."""
        return self._done.wait(timeout)

    def exception(self):
        """The exception the plan raised; None while it runs or when it succeeded."""
        return self._exc if self._done.is_set() else None

    def __repr__(self):
        state = ("running" if not self._done.is_set() else "succeeded" if self._exc is None else
                 "failed: %s: %s" % (type(self._exc).__name__, self._exc))
        return "<BackgroundPlan '%s' %s>" % (self._name, state)


class _Step:
    """A step ready to run: its nets created, its substeps compiled."""

    __slots__ = ("proto", "where", "nets", "substeps", "stop_blob", "iterations")


def _plan_def(plan_or_step):
    from . import core
    if isinstance(plan_or_step, core.ExecutionStep):
        plan_or_step = core.Plan(plan_or_step)
    if isinstance(plan_or_step, core.Plan):
        return plan_or_step.Proto()
    if isinstance(plan_or_step, PlanDef):
        return plan_or_step
    if isinstance(plan_or_step, _SERIALIZED):
        return PlanDef.FromString(plan_or_step)
    raise TypeError("RunPlan expects a core.Plan, a core.ExecutionStep, a PlanDef or a serialized PlanDef "
                    "(bytes), got %s" % type(plan_or_step).__name__)


def _run_plan(ws, plan_or_step):
    plan = _plan_def(plan_or_step)
    where = "RunPlan '%s'" % plan.name
    net_defs = {}  # name -> [NetDef, replace: existed before the plan and not replaced yet]
    existing = set(ws.nets())
    for nd in plan.network:
        if nd.name in net_defs:
            raise errors.ValueError("%s: the plan holds two nets named '%s'" % (where, nd.name))
        net_defs[nd.name] = [nd, nd.name in existing]
    for step in plan.execution_step:
        _execute_step(ws, _compile_step(ws, step, net_defs, where, []))


def _compile_step(ws, step, net_defs, plan_where, path):
    """Checks ``step``, creates its nets and compiles its substeps (as Caffe2 does when the
    top-level step starts)."""
    path = path + [step.name]
    where = "%s, step %s" % (plan_where, " > ".join("'%s'" % p for p in path))
    c = _Step()
    c.proto, c.where = step, where
    if step.substep and step.network:
        raise errors.ValueError("%s: an ExecutionStep should either have substeps or networks, not both"
                                % where)
    many = len(step.substep) > 1
    if step.concurrent_substeps and many:
        raise errors.ValueError(
            "%s: concurrent_substeps is not provided: Caffe2 ran the %d substeps in threads of their "
            "own, and a workspace runs one net at a time here (run them in order, or in workspaces "
            "of their own from threads of yours)" % (where, len(step.substep)))
    if step.num_concurrent_instances is not None and step.num_concurrent_instances > 1 and step.substep:
        raise errors.ValueError("%s: num_concurrent_instances=%d is not provided: a workspace runs one "
                                "net at a time here" % (where, step.num_concurrent_instances))
    if step.create_workspace:
        raise errors.ValueError("%s: create_workspace is not provided (a child workspace per run of "
                                "the step)" % where)
    if step.report_net:
        raise errors.ValueError("%s: report_net is not provided: Caffe2 ran it in a thread beside the "
                                "step, and a workspace runs one net at a time here" % where)
    if step.criteria_network:
        raise errors.ValueError("%s: criteria_network (deprecated in Caffe2) is not provided; use "
                                "should_stop_blob" % where)
    c.substeps = []
    for sub in step.substep:
        if sub.run_every_ms is not None:
            raise errors.ValueError(
                "%s: substep '%s' has run_every_ms, which is not provided: Caffe2 ran it every %d ms in "
                "a thread beside its siblings, and a workspace runs one net at a time here"
                % (where, sub.name, sub.run_every_ms))
        c.substeps.append(_compile_step(ws, sub, net_defs, plan_where, path))
    c.nets = [_create_plan_net(ws, name, net_defs, where) for name in step.network]
    has_stop = bool(step.should_stop_blob)
    if has_stop and step.num_iter is not None:
        raise errors.ValueError("%s: must not specify num_iter if should_stop_blob is set" % where)
    if not has_stop and step.only_once is not None:
        raise errors.ValueError("%s: only_once is only supported with should_stop_blob" % where)
    c.stop_blob = step.should_stop_blob if has_stop else None
    if has_stop and not ws.has_blob(c.stop_blob):
        raise errors.KeyError("%s: should_stop_blob '%s' does not exist (when the step starts, it must "
                              "be in the workspace or an output of a net of the step)" % (where, c.stop_blob))
    if has_stop:
        c.iterations = 1 if step.only_once else None
        if not c.nets and not c.substeps and c.iterations is None:
            raise errors.ValueError("%s: a step with should_stop_blob and nothing to run would never stop"
                                    % where)
    elif not c.nets and not c.substeps:
        c.iterations = 0  # nothing to run, however many times (Caffe2 looped doing nothing)
    else:
        c.iterations = int(step.num_iter) if step.num_iter is not None else 1
    return c


def _create_plan_net(ws, name, net_defs, where):
    entry = net_defs.get(name)
    if entry is None:
        raise errors.KeyError("%s uses undefined net '%s' (not in the plan)" % (where, name))
    if entry[1] or name not in ws.nets():
        try:
            _refuse_non_cpu_net(entry[0])
            ws.create_net(entry[0].to_c(), True)
        except Exception as e:
            _prefix_message(e, "%s, creating net '%s': " % (where, name))
            raise
        entry[1] = False
    return name


def _should_stop(ws, c):
    """Caffe2's check: false while the blob holds no tensor; else it must be one bool."""
    if c.stop_blob is None:
        return False
    if not ws.has_blob(c.stop_blob):
        raise errors.KeyError("%s: should_stop_blob '%s' no longer exists" % (c.where, c.stop_blob))
    v = ws.fetch_blob(c.stop_blob)
    if not isinstance(v, np.ndarray):
        if isinstance(v, bytes) and v.endswith(b"(uninitialized)."):
            return False
        raise errors.TypeError("%s: should_stop_blob '%s' must be a 1-element bool tensor, but it holds "
                               "no tensor (%s)" % (c.where, c.stop_blob, v.decode(errors="replace")))
    if v.dtype.kind not in "biu":
        raise errors.TypeError("%s: should_stop_blob '%s' must be a 1-element bool tensor (stored as "
                               "int32 here), got %s" % (c.where, c.stop_blob, v.dtype))
    if v.size != 1:
        raise errors.ValueError("%s: should_stop_blob '%s' must be a 1-element bool tensor, got shape %s"
                                % (c.where, c.stop_blob, list(v.shape)))
    return bool(v.reshape(-1)[0])


def _execute_step(ws, c):
    """Runs a compiled step; True if its should_stop_blob stopped it."""
    it = 0
    while c.iterations is None or it < c.iterations:
        for sub in c.substeps:
            _execute_step(ws, sub)
            if _should_stop(ws, c):
                return True
        for name in c.nets:
            try:
                _chained(ws.run_net, name, 1, _main_thread())
            except Exception as e:
                _prefix_message(e, "%s, iteration %d, net '%s': " % (c.where, it, name))
                raise
            if _should_stop(ws, c):
                return True
        it += 1
    return False


def _prefix_message(e, prefix):
    """Puts ``prefix`` before the message of ``e``, keeping its type (and so what catches it)."""
    if e.args and isinstance(e.args[0], str):
        e.args = (prefix + e.args[0],) + tuple(e.args[1:])
    elif hasattr(e, "add_note"):
        e.add_note(prefix.rstrip(": "))


# ---------------------------------------------------------------- workspaces
def ResetWorkspace(root_folder=None):
    """Removes every blob and net of the current workspace. With ``root_folder`` (a path), that
    folder becomes the workspace's root folder, created if missing (as Caffe2's): where ``Save``,
    ``Load`` (with ``absolute_path`` 0, their default) and ``Print`` (``to_file=1``) put files named
    by relative paths. Without it the root folder stays (``"."``, the current directory, until one
    is set). A root folder holding a NUL or without UTF-8 is the binding's ValueError, and one that
    cannot be made os.makedirs's OSError; the workspace is unchanged then. Returns True."""
    ws = _ws()
    if root_folder is not None:
        import os
        root_folder = os.fspath(root_folder)
        if isinstance(root_folder, bytes):
            root_folder = os.fsdecode(root_folder)
        if not root_folder:
            raise ValueError("ResetWorkspace: root_folder must not be empty ('.': the current directory)")
        # set first: the binding refuses a path it cannot keep (a NUL, no UTF-8) before anything
        # changes; a folder that cannot be made puts the old root back
        old = ws.root_folder()
        ws.set_root_folder(root_folder)
        try:
            os.makedirs(root_folder, exist_ok=True)
            ws.reset()
        except BaseException:
            ws.set_root_folder(old)
            raise
    else:
        ws.reset()
    return True


def RootFolder():
    """The current workspace's root folder (``"."`` unless ``ResetWorkspace(root_folder)`` set
    one), as Caffe2's."""
    return _ws().root_folder()


def SwitchWorkspace(name, create_if_missing=False):
    """Makes workspace ``name`` current for the calling thread (in the main
    thread: also for every thread that never switched; see the module doc)."""
    global _current
    with _lock:
        if name not in _workspaces:
            if not create_if_missing:
                raise errors.KeyError("workspace '%s' does not exist (pass create_if_missing=True)" % name)
            _workspaces[name] = _C.Workspace()
        if _main_thread():
            _current = name
        else:
            _thread.current = name


def CurrentWorkspace():
    """The calling thread's current workspace (see SwitchWorkspace)."""
    with _lock:
        return _current_name()


def Workspaces():
    with _lock:
        return list(_workspaces)


# ---------------------------------------------------------------- global flags
_KNOWN_FLAGS = {
    "caffe2_rnn_executor": "rnn_executor",
    "caffe2_rnn_executor_num_threads": "rnn_executor_num_threads",
    "caffe2_rnn_executor_min_op_us": "rnn_executor_min_op_ns",
    "caffe2_rnn_executor_spin_us": "rnn_executor_spin_ns",
    "caffe2_rnn_executor_help": "rnn_executor_help",
    "caffe2_log_level": None,
    "caffe2_print_blob_sizes_at_exit": None,
    "caffe2_gpu_memory_tracking": None,
    # passed by Caffe2's seq2seq train.py; accepted, no effect
    "v": None,
    "caffe2_handle_executor_threads_exceptions": None,
    "caffe2_mkl_num_threads": None,
    # an int in Caffe2 (OpenMP threads; no effect in a build without OpenMP, as this one is)
    "caffe2_omp_num_threads": None,
}


# flags given in microseconds and kept in nanoseconds: their largest value (as shown in messages);
# the environment variables behind them are checked against the same ranges at import
_US_FLAG_MAX = {"rnn_executor_min_op_ns": "1e6", "rnn_executor_spin_ns": "100000"}


# ---------------------------------------------------------------- immediate mode
# Caffe2's debugging mode: between StartImmediate() and StopImmediate(), every op made with
# core.CreateOperator (so every net.X(...) call) also runs at once in a workspace of its own.
_immediate_mode = False
_immediate_workspace_name = "_CAFFE2_IMMEDIATE"
_immediate_root_folder = ""  # its root folder: a temporary directory, removed by StopImmediate


def IsImmediate():
    """Whether immediate mode is on (StartImmediate)."""
    return _immediate_mode


@contextlib.contextmanager
def WorkspaceGuard(workspace_name):
    """Makes workspace ``workspace_name`` current (creating it if missing) for the ``with`` block,
    then switches back (also when the block raises)."""
    current = CurrentWorkspace()
    SwitchWorkspace(workspace_name, True)
    try:
        yield
    finally:
        SwitchWorkspace(current)


def StartImmediate(i_know=False):
    """Starts immediate mode (Caffe2's): from now on every op made with ``core.CreateOperator``
    (every ``net.X(...)``, and the ops helpers such as ``brew`` add) also runs at once, when it
    is made, in the workspace ``"_CAFFE2_IMMEDIATE"``, which starts empty, its root folder a new
    temporary directory (so a ``Save`` there writes nothing outside it); a failing op raises
    there and then. ``FeedImmediate`` / ``FetchImmediate`` / ``ImmediateBlobs`` reach that
    workspace. Gradient ops (``AddGradientOperators``) are not run (Caffe2 built them in C++).
    It is for debugging: slow, and the ops must be runnable in the order they are made. A
    RuntimeWarning says so unless ``i_know``; calling it again starts afresh."""
    global _immediate_mode, _immediate_root_folder
    if IsImmediate():
        StopImmediate()
    import tempfile
    with WorkspaceGuard(_immediate_workspace_name):
        _immediate_root_folder = tempfile.mkdtemp(prefix="recurrent_immediate_")
        ResetWorkspace(_immediate_root_folder)
    _immediate_mode = True
    if not i_know:
        import warnings
        warnings.warn("immediate mode: every op made from now on also runs at once in workspace '%s' (for "
                      "debugging; slow; the ops must be runnable in the order they are made). "
                      "StopImmediate() ends it; StartImmediate(i_know=True) starts it without this warning."
                      % _immediate_workspace_name, RuntimeWarning, stacklevel=2)


def StopImmediate():
    """Ends immediate mode, frees the blobs and nets of its workspace and removes its temporary root
    folder (no-op when it is off)."""
    global _immediate_mode, _immediate_root_folder
    if not IsImmediate():
        return
    import shutil
    with WorkspaceGuard(_immediate_workspace_name):
        ResetWorkspace(".")
    shutil.rmtree(_immediate_root_folder, ignore_errors=True)
    _immediate_root_folder = ""
    _immediate_mode = False


def ImmediateBlobs():
    """The blobs of the immediate-mode workspace."""
    with WorkspaceGuard(_immediate_workspace_name):
        return Blobs()


def RunOperatorImmediate(op):
    """Runs ``op`` once in the immediate-mode workspace."""
    with WorkspaceGuard(_immediate_workspace_name):
        RunOperatorOnce(op)


def FetchImmediate(*args, **kwargs):
    """``FetchBlob`` in the immediate-mode workspace."""
    with WorkspaceGuard(_immediate_workspace_name):
        return FetchBlob(*args, **kwargs)


def FeedImmediate(*args, **kwargs):
    """``FeedBlob`` in the immediate-mode workspace."""
    with WorkspaceGuard(_immediate_workspace_name):
        return FeedBlob(*args, **kwargs)


def _parse_bool(flag, v):
    if v.lower() in ("1", "true", "yes", "on"):
        return 1
    if v.lower() in ("0", "false", "no", "off"):
        return 0
    raise ValueError("GlobalInit: flag --%s expects 0/1/true/false, got %r" % (flag, v))


def GetNameScope():
    """The current name scope ('' or ending with '/'), as Caffe2's workspace.GetNameScope."""
    return scope.CurrentNameScope()


def GlobalInit(args):
    """Caffe2-style process flags. ``args[0]`` is the program name.

    Understood: --caffe2_rnn_executor=0|1, --caffe2_rnn_executor_num_threads=N,
    --caffe2_rnn_executor_min_op_us=X (ours: below this mean time per step op,
    measured on the first runs, an executor-enabled op runs serially; 0: always
    the executor; default 4, or RECURRENT_RNN_EXECUTOR_MIN_OP_US),
    --caffe2_rnn_executor_spin_us=X (ours: how long a thread of a parallel run
    that ran out of work polls for more before it sleeps, in [0, 100000];
    default 100, or RECURRENT_RNN_EXECUTOR_SPIN_US; 0: sleep at once),
    --caffe2_rnn_executor_help=0|1 (ours: executor threads with nothing to run
    help split the products of the others; default 1, or
    RECURRENT_RNN_EXECUTOR_HELP; the same bits either way),
    --caffe2_log_level=N (accepted, no effect), --caffe2_print_blob_sizes_at_exit,
    --caffe2_gpu_memory_tracking, --v=N, --caffe2_handle_executor_threads_exceptions,
    --caffe2_mkl_num_threads=N, --caffe2_omp_num_threads=N (accepted, no effect: no MKL or
    OpenMP here). Unknown flags raise ValueError.
    """
    for a in list(args)[1:]:
        if not a.startswith("--"):
            raise ValueError("GlobalInit: unexpected argument %r" % a)
        key, eq, val = a[2:].partition("=")
        if key not in _KNOWN_FLAGS:
            raise ValueError("GlobalInit: unknown flag --%s" % key)
        target = _KNOWN_FLAGS[key]
        if key in ("caffe2_rnn_executor", "caffe2_rnn_executor_help"):
            _C.set_flag(target, _parse_bool(key, val) if eq else 1)
        elif key == "caffe2_rnn_executor_num_threads":
            try:
                n = int(val)
            except ValueError:
                raise ValueError("GlobalInit: --%s expects an int, got %r" % (key, val)) from None
            _C.set_flag(target, n)
        elif target in _US_FLAG_MAX:
            hi = _US_FLAG_MAX[target]
            try:
                us = float(val)
            except ValueError:
                raise ValueError("GlobalInit: --%s expects a number of microseconds, got %r"
                                 % (key, val)) from None
            if not 0 <= us <= float(hi):
                raise ValueError("GlobalInit: --%s must be in [0, %s], got %r" % (key, hi, val))
            _C.set_flag(target, int(round(us * 1000)))
        else:
            if eq:
                try:
                    int(val)
                except ValueError:
                    _parse_bool(key, val)
    return True


def rnn_executor_enabled():
    """Whether the global RNN-executor switch is on (GlobalInit / RECURRENT_RNN_EXECUTOR)."""
    return bool(_C.get_flag("rnn_executor"))



# ---------------------------------------------------------------- static shape inference
def InferShapesAndTypes(nets, blob_dimensions=None, nets_proto=False, blob_types=None):
    """Infers, without running them, the shapes and types of the blobs after ``nets`` (core.Nets,
    or NetDefs) would run, as Caffe2's. Returns ``(shapes, types)``: dicts by blob name of the
    dims (list of ints) and TensorProto data type (``core.DataType``) of every blob whose shape is
    known. Starts from the current workspace's tensor blobs, or from ``blob_dimensions`` (name ->
    dims) and ``blob_types`` (name -> data type; UNDEFINED where missing) when given. An output the
    inference cannot know (its shape depends on the data, its op has no shape function, an input
    is unknown) is left out. Inputs an op would refuse give ``({}, {})`` with a RuntimeWarning, as
    Caffe2's. A net may also be a serialized NetDef (bytes; Caffe2's ``nets_proto=True``). See
    recurrent/shape_inference.py."""
    from . import shape_inference as si
    if isinstance(nets, (NetDef,) + _SERIALIZED) or hasattr(nets, "Proto"):
        raise TypeError("InferShapesAndTypes expects a list of nets, got one %s" % type(nets).__name__)
    netdefs = [_netdef(n) for n in nets]
    if blob_dimensions is None:
        if blob_types is not None:
            raise ValueError("InferShapesAndTypes: blob_types needs blob_dimensions")
        desc = {name: None if v is None else si.Tensor(tuple(v[0]), v[1])
                for name, v in _ws().blob_shapes().items()}
    else:
        types = dict(blob_types or {})
        desc = {}
        for name, dims in dict(blob_dimensions).items():
            dims = tuple(int(d) for d in dims)
            if any(d < 0 for d in dims):
                raise ValueError("InferShapesAndTypes: blob '%s' has a negative dimension in %s"
                                 % (_name(name), list(dims)))
            desc[_name(name)] = si.Tensor(dims, int(types.get(name, si.UNDEFINED)))
    out = si.infer(netdefs, desc)
    if out is None:
        return {}, {}
    return ({k: list(v.shape) for k, v in out.items()}, {k: v.dtype for k, v in out.items()})


# ---------------------------------------------------------------- static cost inference
def GetOperatorCost(operator, blobs):
    """Caffe2's ``GetOperatorCost``: ``(flops, bytes_written, bytes_read)`` (a tuple of ints) of
    ``operator`` (an OperatorDef, or a serialized one: bytes) on the tensors ``blobs`` (one blob
    name per op input, in order; usually ``op.input``) of the current workspace, from their shapes
    alone, by the formula Caffe2's schema of that op type registered (recurrent/cost_inference.py
    lists the types). Nothing runs. Raises KeyError for an unregistered op type or a missing blob,
    TypeError for a blob holding no tensor, ValueError for a count of blobs other than the op's
    inputs or inputs the op would refuse, RuntimeError for an op type without a cost function."""
    from . import cost_inference as ci
    from . import shape_inference as si
    if isinstance(operator, _SERIALIZED):
        operator = OperatorDef.FromString(operator)
    if not isinstance(operator, OperatorDef):
        raise TypeError("GetOperatorCost expects an OperatorDef, got %s (a serialized OperatorDef is bytes)"
                        % type(operator).__name__)
    if isinstance(blobs, (str,) + _SERIALIZED) or not isinstance(blobs, collections.abc.Iterable):
        raise TypeError("GetOperatorCost: blobs must be a list of blob names, got %s" % type(blobs).__name__)
    names = [_name(b) for b in blobs]
    op_type = operator.type
    try:
        _C.op_schema(op_type)
    except KeyError:
        raise errors.KeyError("GetOperatorCost: operator type '%s' is not registered" % op_type) from None
    ci.require(op_type)
    if len(names) != len(operator.input):
        raise errors.ValueError("GetOperatorCost: op %s has %d inputs %s but %d blobs were given %s"
                                % (op_type, len(operator.input), list(operator.input), len(names), names))
    ws = _ws()
    shapes = ws.blob_shapes()
    ins = []
    for name in names:
        if name not in shapes:
            raise errors.KeyError("GetOperatorCost: blob '%s' does not exist in workspace '%s'"
                                  % (name, CurrentWorkspace()))
        if shapes[name] is None:
            raise errors.TypeError("GetOperatorCost: blob '%s' holds no tensor" % name)
        ins.append(si.Tensor(tuple(shapes[name][0]), shapes[name][1]))
    try:
        outs = si.infer_outputs(operator, 0, ins)
        return ci.cost(operator, ins, outs)
    except si.ShapeError as e:
        raise errors.ValueError("GetOperatorCost: op %s refuses its inputs %s: %s" % (
            op_type, ", ".join("%s %s" % (n, list(t.shape)) for n, t in zip(names, ins)), e)) from None


# ---------------------------------------------------------------- random network inputs
_FILL_TYPES = {"float": np.float32, "int32_t": np.int32, "int": np.int32}
# the other types Caffe2's fill_with_type (caffe2/predictor/emulator/data_filler.cc) accepted
_FILL_TYPES_NOT_STORED = ("double", "uint8_t", "unsigned char", "uint16_t", "int8_t", "int16_t",
                          "int64_t", "long", "bool")


def _fill_list(value, what):
    if isinstance(value, (str,) + _SERIALIZED) or not isinstance(value, collections.abc.Sequence):
        raise errors.TypeError("FillRandomNetworkInputs: %s must be a list, got %s"
                               % (what, type(value).__name__))
    return list(value)


def _fill_dims(value, what):
    dims = _fill_list(value, what)
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise errors.TypeError("FillRandomNetworkInputs: %s must be a list of ints, got %r"
                                   % (what, value))
        if d < 0:
            raise errors.ValueError("FillRandomNetworkInputs: %s has a negative dimension: %s"
                                    % (what, [int(x) for x in dims]))
    return tuple(int(d) for d in dims)


def _fill_type(value, what, blob):
    if not isinstance(value, str):
        raise errors.TypeError("FillRandomNetworkInputs: %s must be a type name (str), got %s"
                               % (what, type(value).__name__))
    if value in _FILL_TYPES:
        return _FILL_TYPES[value]
    if value in _FILL_TYPES_NOT_STORED:
        raise errors.TypeError("FillRandomNetworkInputs: blob '%s' (%s): type '%s' cannot be stored "
                               "here: blobs are float32 ('float') or int32 ('int32_t' or 'int')"
                               % (blob, what, value))
    raise errors.ValueError("FillRandomNetworkInputs: blob '%s' (%s): filler does not support type %s"
                            % (blob, what, value))


def _walk_shapes(netdef, known):
    """The shapes (a tuple or None each) of every op's inputs when it would run, from ``known``
    (name -> shape_inference.Tensor of the blobs no op writes); outputs the static inference
    cannot give are None."""
    from . import shape_inference as si
    desc = dict(known)
    per_op = []
    for index, op in enumerate(netdef.op):
        ins = [desc.get(b) for b in op.input]
        per_op.append([None if t is None else tuple(t.shape) for t in ins])
        try:
            outs = si.infer_outputs(op, index, ins)
        except si.ShapeError:
            outs = [None] * len(op.output)
        for name, t in zip(op.output, outs):
            desc[name] = t
    return per_op


def FillRandomNetworkInputs(net, input_dims, input_types, *, seed=None):
    """Caffe2's ``FillRandomNetworkInputs`` (its TestDataRandomFiller): creates in the current
    workspace every blob an op of ``net`` (a core.Net, a NetDef or a serialized one) reads and no
    op of the net writes, filled with random data by the input fillers of the op reading it
    (recurrent/input_fillers.py: uniform in [0, 1] unless the op's schema had sparse fillers).

    ``input_dims`` and ``input_types`` have one entry per op with such inputs, in net order; each
    entry has one dims list and one type name ("float"; "int32_t" or "int") per such input of that
    op, in input order. A blob read by several ops takes the last one's. Everything is checked
    before any blob is written, so a failing call leaves the workspace as it was. Errors (each
    also a RuntimeError, as all of Caffe2's were): a count that does not match, a net without such
    inputs, an op type without fillers, shapes its fillers cannot fill, a negative dim or an
    unknown type name are ValueErrors; a wrong nesting, or a type Caffe2 took that a blob cannot
    hold here ("double", "int64_t", "bool", ...), TypeErrors. ``seed`` (not Caffe2's) makes the
    data reproducible; without it each call draws fresh data. Returns None."""
    from . import input_fillers
    from . import shape_inference as si
    netdef = _netdef(net)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise errors.ValueError("FillRandomNetworkInputs: seed must be a non-negative int, got %r" % (seed,))
    dims_all = _fill_list(input_dims, "input_dims")
    types_all = _fill_list(input_types, "input_types")
    written = {b for op in netdef.op for b in op.output}
    required = [(i, op) for i, op in enumerate(netdef.op) if any(b not in written for b in op.input)]

    def describe(pairs):
        return ", ".join("#%d %s (%s)" % (i, op.type, ", ".join(b for b in op.input if b not in written))
                         for i, op in pairs)

    for what, entries in (("input_dims", dims_all), ("input_types", types_all)):
        if len(entries) != len(required):
            raise errors.ValueError(
                "FillRandomNetworkInputs: %s has %d entries but net '%s' has %d ops with inputs that no op "
                "of the net writes, one entry each: %s" % (what, len(entries), netdef.name, len(required),
                                                           describe(required) or "none"))
    plan = {}  # blob -> (dims, dtype, op index, op type, input index); the last op reading it wins
    for k, (i, op) in enumerate(required):
        names = [b for b in op.input if b not in written]
        op_dims = _fill_list(dims_all[k], "input_dims[%d]" % k)
        op_types = _fill_list(types_all[k], "input_types[%d]" % k)
        for what, entries in (("input_dims", op_dims), ("input_types", op_types)):
            if len(entries) != len(names):
                raise errors.ValueError(
                    "FillRandomNetworkInputs: op #%d %s has %d (required) inputs %s but %s[%d] has %d entries"
                    % (i, op.type, len(names), names, what, k, len(entries)))
        r = 0
        for j, b in enumerate(op.input):
            if b in written:
                continue
            where = "op #%d %s input %d" % (i, op.type, j)
            dims = _fill_dims(op_dims[r], "input_dims[%d][%d] (%s '%s')" % (k, r, where, b))
            dtype = _fill_type(op_types[r], "input_types[%d][%d], %s" % (k, r, where), b)
            plan[b] = (dims, dtype, i, op.type, j)
            r += 1
    if not required:
        raise errors.ValueError("FillRandomNetworkInputs: Empty input for run net: no op of net '%s' reads "
                                "a blob that no op of the net writes" % netdef.name)
    registered = set(_C.op_types())
    for i, op in required:
        if op.type not in registered:
            raise errors.ValueError("FillRandomNetworkInputs: op #%d %s: %s does not have input fillers "
                                    "(not a registered operator type)" % (i, op.type, op.type))
    known = {b: si.Tensor(d, si.FLOAT if t == np.float32 else si.INT32)
             for b, (d, t, _, _, _) in plan.items()}
    shapes_at = _walk_shapes(netdef, known)
    chosen = {}  # blob -> Filler, from the op that plan[blob] names
    for i, op in required:
        try:
            fl = input_fillers.fillers(op.type, shapes_at[i], list(op.input))
            for j, b in enumerate(op.input):
                if b in plan and plan[b][2] == i and plan[b][4] == j:
                    fl[j].check(plan[b][0])
                    chosen[b] = fl[j]
        except input_fillers.FillerError as e:
            raise errors.ValueError("FillRandomNetworkInputs: op #%d %s: %s" % (i, op.type, e)) from None
    ws = _ws()
    shapes = ws.blob_shapes()
    for b in plan:
        if b in shapes and shapes[b] is None:
            desc = ws.fetch_blob(b)
            if isinstance(desc, bytes) and not desc.endswith(b"nullptr (uninitialized)."):
                raise errors.TypeError("FillRandomNetworkInputs: blob '%s' holds an object (%s), not a "
                                       "tensor; it is left as it is" % (b, desc.decode(errors="replace")))
    rng = np.random.default_rng(seed)
    arrays = {b: chosen[b].draw(rng, d, t) for b, (d, t, _, _, _) in plan.items()}
    for b, a in arrays.items():
        ws.feed_blob(b, a)


# ---------------------------------------------------------------- Caffe2's workspace objects
class Blob:
    """A blob of a ``Workspace`` object (Caffe2's ``C.Blob``): ``feed(array)``, ``fetch()``,
    ``is_tensor()``. It names the blob; it holds no data of its own."""

    def __init__(self, ws, name):
        self._ws, self._name = ws, name

    def feed(self, arg, device_option=None):
        _feed(self._ws, self._name, arg, device_option)
        return True

    def fetch(self):
        return self._ws.fetch_blob(self._name)

    def is_tensor(self):
        return self._ws.has_blob(self._name) and isinstance(self.fetch(), np.ndarray)

    def serialize(self, name):
        """The blob's tensor as the bytes of a Caffe2 ``BlobProto`` named ``name`` (Caffe2's
        ``Blob.serialize``; ``SerializeBlob``'s bytes). A blob holding no tensor is a TypeError."""
        from .proto import serialize_tensor_blob
        a = self.fetch()
        if not isinstance(a, np.ndarray):
            raise errors.TypeError("Blob.serialize: blob '%s' holds no tensor (%s)" % (self._name, a.decode()))
        return serialize_tensor_blob(_name(name), a)

    def deserialize(self, serialized):
        """Stores the tensor of the serialized ``BlobProto`` ``serialized`` (bytes) in this blob
        (Caffe2's ``Blob.deserialize``; as ``DeserializeBlob``, the name inside is not used)."""
        from .proto import deserialize_tensor_blob
        if not isinstance(serialized, _SERIALIZED):
            raise TypeError("Blob.deserialize '%s': serialized must be bytes, got %s"
                            % (self._name, type(serialized).__name__))
        _feed(self._ws, self._name, deserialize_tensor_blob(bytes(serialized), self._name), None)
        return True

    def __repr__(self):
        return "<Blob '%s'>" % self._name


class NetHandle:
    """A net created in a ``Workspace`` object (Caffe2's ``C.Net``): ``run()`` runs it once."""

    def __init__(self, ws, name):
        self._ws, self.name = ws, name

    def run(self):
        _in_net(self.name, self._ws.run_net, self.name, 1, _main_thread())
        return True

    def __repr__(self):
        return "<Net '%s'>" % self.name


class _ClassProperty:
    """A read-only property of a class (Caffe2's ``C.Workspace.current`` is one)."""

    def __init__(self, fget):
        self._fget = fget

    def __get__(self, obj, owner):
        return self._fget(owner)


class Workspace:
    """A workspace object of its own, not one of the named workspaces of ``SwitchWorkspace``
    (Caffe2's ``workspace.C.Workspace()``, as ``test_util.TestCase.ws``): ``create_blob(name)``
    gives a ``Blob`` (``.feed(array)``, ``.fetch()``), ``blobs`` / ``nets`` are dicts of the
    blobs and nets by name, ``feed_blob`` / ``fetch_blob`` / ``has_blob``, ``create_net(net,
    overwrite=False)`` (a serialized NetDef too, as Caffe2's) gives a net handle with ``run()``,
    and ``run(obj)`` runs a ``core.Net`` / ``NetDef`` once (as ``RunNetOnce``), an ``OperatorDef``
    (as ``RunOperatorOnce``) or a ``core.Plan`` / ``core.ExecutionStep`` / ``PlanDef`` (as
    ``RunPlan``); as in Caffe2, ``run`` takes no serialized bytes."""

    def __init__(self):
        self._c = _C.Workspace()

    # ``Workspace.current``: the current named workspace (``SwitchWorkspace``'s) as a Workspace
    # object, as Caffe2's; its blobs and nets are that workspace's.
    current = _ClassProperty(lambda cls: cls._of(_ws()))

    @classmethod
    def _of(cls, c_ws):
        """The object over an existing binding workspace (the one a Python op's function gets with
        ``pass_workspace=True``)."""
        self = cls.__new__(cls)
        self._c = c_ws
        return self

    def create_blob(self, name):
        self._c.create_blob(_name(name))
        return Blob(self._c, _name(name))

    @property
    def blobs(self):
        return {b: Blob(self._c, b) for b in self._c.blobs()}

    @property
    def nets(self):
        return {n: NetHandle(self._c, n) for n in self._c.nets()}

    def has_blob(self, name):
        return self._c.has_blob(_name(name))

    def feed_blob(self, name, arr, device_option=None):
        _feed(self._c, name, arr, device_option)
        return True

    def fetch_blob(self, name):
        return self._c.fetch_blob(_name(name))

    def create_net(self, net, overwrite=False, input_blobs=None):
        return NetHandle(self._c, _create_net(self._c, net, overwrite, input_blobs))

    def run(self, obj):
        from . import core
        if isinstance(obj, OperatorDef):
            _run_operator_once(self._c, obj)
        elif isinstance(obj, (PlanDef, core.Plan, core.ExecutionStep)):
            _run_plan(self._c, obj)
        elif isinstance(obj, NetDef) or hasattr(obj, "Proto"):
            _run_net_once(self._c, obj)
        else:
            raise TypeError("Workspace.run expects a core.Net, NetDef, OperatorDef, core.Plan, "
                            "core.ExecutionStep or PlanDef, got %s" % type(obj).__name__)
        return True

    def reset(self):
        """Removes every blob and net (not in Caffe2's object API; ResetWorkspace's)."""
        self._c.reset()
        return True


class Predictor:
    """Caffe2's ``workspace.Predictor(init_net, predict_net)`` (each a NetDef, a core.Net or a
    serialized NetDef: bytes): a net for inference with a workspace of its own.

    ``init_net`` runs once, now, in that workspace (its errors raise here); every external input
    of ``predict_net`` it did not make is created holding no tensor. ``run(inputs)`` feeds the
    NumPy arrays ``inputs`` to ``predict_net``'s first external inputs in order (a list; at most as
    many as it has), or by name (a dict; each name must be a blob of the predictor's workspace),
    runs the net and returns a list of copies of its external outputs, in order. The workspace
    keeps what a run leaves (an input not fed again keeps its last value), as Caffe2's.

    Differences from Caffe2: the net is created at the first ``run``, once its inputs are fed, so
    the shape checks of net creation see the real inputs (``mobile_exporter``'s init nets fill each
    input with a [1, 1] placeholder); errors of ``predict_net``'s ops show then. The workspace has
    no parent: the blobs of the current workspace are not seen (Caffe2's predictor could read them,
    and a list input named after one overwrote it). Outputs are copies (Caffe2's shared memory)."""

    def __init__(self, init_net, predict_net):
        import copy
        init = _netdef(init_net)
        self._net = copy.deepcopy(_netdef(predict_net))
        if not self._net.name:
            self._net.name = "predict_net"
        _refuse_non_cpu_net(self._net)
        self._ws = _C.Workspace()
        _run_net_once(self._ws, init)
        for name in self._net.external_input:
            self._ws.create_blob(str(name))
        self._created = False

    def run(self, inputs):
        ws, net = self._ws, self._net
        if isinstance(inputs, dict):
            items = list(inputs.items())
            for name, _ in items:
                if not ws.has_blob(_name(name)):
                    raise errors.KeyError("Predictor.run: input '%s' is not a blob of the predictor "
                                          "(its external inputs: %s)" % (_name(name), list(net.external_input)))
        else:
            items = list(inputs)
            if len(items) > len(net.external_input):
                raise errors.ValueError("Predictor.run: %d inputs for a net with %d external inputs %s"
                                        % (len(items), len(net.external_input), list(net.external_input)))
            items = list(zip(net.external_input, items))
        for name, arr in items:
            if not isinstance(arr, np.ndarray):
                raise TypeError("Predictor.run: input '%s' must be a NumPy array, got %s"
                                % (_name(name), type(arr).__name__))
        for name, arr in items:
            _feed(ws, name, arr, None)
        if not self._created:
            _create_net(ws, net, True, None)
            self._created = True
        _in_net(net.name, ws.run_net, net.name, 1, _main_thread())
        out = []
        for name in net.external_output:
            a = ws.fetch_blob(str(name))
            if not isinstance(a, np.ndarray):
                raise errors.TypeError("Predictor.run: output '%s' holds no tensor" % name)
            out.append(a)
        return out


class _CModule:
    """``workspace.C``: the C binding, except that ``C.Workspace`` is the ``Workspace`` class
    above (Caffe2's object API over a binding workspace)."""

    Workspace = Workspace
    Blob = Blob
    Net = NetHandle
    # What Caffe2's module answered when built without MKL-DNN or a GPU (its tests read them in
    # skipIf decorators).
    has_mkldnn = False
    has_gpu_support = has_gpu_support
    has_cuda_support = has_cuda_support
    has_hip_support = has_hip_support

    @staticmethod
    def registered_dbs():
        """The DB types Save / Load / CreateDB accept, as Caffe2's registry keys (its tests skip on
        ``"LevelDB" not in core.C.registered_dbs()``): minidb only (Caffe2 also listed "MiniDB")."""
        return ["minidb"]

    def __getattr__(self, name):
        return getattr(_C, name)


C = _CModule()
