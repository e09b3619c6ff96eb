"""Nets, operators, blob references and gradients, as caffe2.python.core.

Python keeps the graph as plain data (``recurrent.proto``); nothing here calls
into C. ``Net`` builds a NetDef op by op (``net.FC([x, w, b], 'y', axis=2)``),
``CreateOperator`` builds one OperatorDef, and ``GradientRegistry`` turns a list
of forward operators into the operators of the backward pass from gradient
makers registered per operator type. ``Plan`` / ``execution_step`` build plans
(PlanDefs) that ``workspace.RunPlan`` runs.

Gradient makers have Caffe2's Python signature::

    @GradientRegistry.RegisterGradient("Copy")
    def _copy_grad(op, g_output):      # g_output: output-gradient names or None
        return [CreateOperator("Copy", [g_output[0]], [op.input[0] + "_grad"])], \\
            [op.input[0] + "_grad"]   # one entry per op.input, None = no gradient

Every ``recurrent/_grad_*.py`` module is imported at the end of this file, so
the makers of every operator family register themselves.
"""

import collections
import contextlib
import copy
import hashlib
import importlib
import os
import pkgutil
import sys
import threading
import weakref

import numpy as np

from . import scope
from .proto import Argument, DeviceOption as _DeviceOptionProto, NetDef, OperatorDef, device_of, make_argument
from .proto import ExecutionStep as _ExecutionStepProto, PlanDef

# Convenience redirections, as in Caffe2.
NameScope = scope.NameScope
DeviceScope = scope.DeviceScope


class DeviceType:
    """Device types of DeviceOption.device_type (caffe2_pb2 values). Only CPU runs here; an op asking
    for another device type is refused when it runs."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6


class DataType:
    """TensorProto data types (caffe2_pb2 values), for ``dtype`` arguments."""
    UNDEFINED = 0
    FLOAT = 1
    INT32 = 2
    BYTE = 3
    STRING = 4
    BOOL = 5
    UINT8 = 6
    INT8 = 7
    UINT16 = 8
    INT16 = 9
    INT64 = 10
    FLOAT16 = 12
    DOUBLE = 13
    ZERO_COLLISION_HASH = 14  # no op here makes or reads these two (Caffe2's hash tables, rebatching queues)
    REBATCHING_BUFFER = 15


def DeviceOption(device_type, device_id=0, random_seed=None, node_name=None, numa_node_id=None,
                 extra_info=None, cuda_gpu_id=None):
    """Builds a DeviceOption. ``node_name``, ``numa_node_id`` and ``extra_info`` (a list of str) are
    set when given; ``numa_node_id`` only on the CPU (ValueError otherwise, where Caffe2 asserted).
    ``cuda_gpu_id`` is the old Caffe2 name of ``device_id`` and wins when given."""
    if cuda_gpu_id is not None:
        device_id = cuda_gpu_id
    if numa_node_id is not None and device_type != DeviceType.CPU:
        raise ValueError("DeviceOption: numa_node_id %r is for the CPU, the device type is %r"
                         % (numa_node_id, device_type))
    return _DeviceOptionProto(device_type, device_id, random_seed,
                              node_name if node_name is not None else "", numa_node_id,
                              extra_info if extra_info is not None else ())


def IsGPUDeviceType(device_type):
    """True for CUDA and HIP, as Caffe2's (no GPU runs here: ops on either are refused)."""
    return device_type in (DeviceType.CUDA, DeviceType.HIP)


def device_option_equal(opt1, opt2, ignore_node_name=True, ignore_random_seed=True):
    """Whether two device options name the same device (None means CPU, with no node name and no
    random seed); ``node_name`` and ``random_seed`` count only when their ``ignore_`` flag is False.
    ``numa_node_id`` and ``extra_info`` never count, as in Caffe2."""
    if not ignore_node_name and _opt_field(opt1, "node_name", "") != _opt_field(opt2, "node_name", ""):
        return False
    if not ignore_random_seed and _opt_field(opt1, "random_seed", None) != _opt_field(opt2, "random_seed", None):
        return False
    if opt1 is None or opt2 is None:
        d1 = opt1.device_type if opt1 is not None else 0
        d2 = opt2.device_type if opt2 is not None else 0
        return d1 == d2 == 0
    if not opt1.device_type or not opt2.device_type:
        return not opt1.device_type and not opt2.device_type
    return opt1.device_type == opt2.device_type and opt1.device_id == opt2.device_id


def _opt_field(opt, name, unset):
    return getattr(opt, name) if opt is not None else unset


def _op_device(op):
    """The device option ``op`` runs under: its own, or a new CPU DeviceOption where it has none."""
    dev = device_of(op)
    return dev if dev is not None else _DeviceOptionProto()


def InferBlobDevices(net):
    """``{blob name: DeviceOption}`` for every output of the ops of ``net`` (a Net or a NetDef): the
    device option of the op that writes it (the op's own object, as Caffe2's), CPU for an op with
    none; a blob written twice maps to its last writer's. The net's own device option is not
    consulted, as in Caffe2."""
    mapping = {}
    for op in _net_proto(net, "InferBlobDevices").op:
        dev = _op_device(op)
        for b in op.output:
            mapping[b] = dev
    return mapping


def InferOpDeviceAsBlobDevices(op):
    """``(input_devices, output_devices)``: one entry per input and per output of ``op``, each the
    op's device option (a CPU DeviceOption where it has none)."""
    _check_op(op, "InferOpDeviceAsBlobDevices")
    dev = _op_device(op)
    return [dev] * len(op.input), [dev] * len(op.output)


# Caffe2's device inference functions, for the ops registered here that have one:
# (where the inputs are, where the outputs are); None = the op's device.
_CPU_SIDE = {"CopyFromCPUInput": ("cpu", None), "EnsureCPUOutput": (None, "cpu")}


def InferOpBlobDevices(op):
    """``(input_devices, output_devices)`` of ``op``, lists of new DeviceOptions, as Caffe2's
    operator schemas infer them: every blob on the op's device (CPU where it has none), except the
    input of ``CopyFromCPUInput`` and the output of ``EnsureCPUOutput``, always on the CPU. An op
    type without a schema gets the default, as in Caffe2."""
    _check_op(op, "InferOpBlobDevices")
    dev = _op_device(op)
    in_side, out_side = _CPU_SIDE.get(op.type, (None, None))

    def devices(n, side):
        return [_DeviceOptionProto() if side == "cpu" else copy.deepcopy(dev) for _ in range(n)]

    return devices(len(op.input), in_side), devices(len(op.output), out_side)


def InferOpBlobDevicesAsDict(op):
    """``InferOpBlobDevices(op)`` as two dicts, ``{input name: DeviceOption}`` and
    ``{output name: DeviceOption}``."""
    inputs, outputs = InferOpBlobDevices(op)
    return dict(zip(op.input, inputs)), dict(zip(op.output, outputs))


def _check_op(op, what):
    if not isinstance(op, OperatorDef):
        raise TypeError("%s expects an OperatorDef, got %s" % (what, type(op).__name__))


def _net_proto(net, what):
    if isinstance(net, Net):
        return net.Proto()
    if isinstance(net, NetDef):
        return net
    raise TypeError("%s expects a core.Net or a NetDef, got %s" % (what, type(net).__name__))


_op_types = None


def _registered():
    global _op_types
    if _op_types is None:
        from . import _C
        _op_types = frozenset(_C.op_types())
    return _op_types


def IsOperator(op_type):
    """Whether the C runtime has an operator of this type."""
    return op_type in _registered()


def _check_operator(op_type):
    """``Net.X`` and ``BlobReference.X`` for an unregistered X: AttributeError
    now, naming the nearest registered types (as Caffe2), not at run time."""
    if op_type not in _registered():
        import difflib
        near = difflib.get_close_matches(op_type, sorted(_registered()), n=5, cutoff=0.6)
        raise AttributeError("Method %s is not a registered operator. Did you mean: [%s]"
                             % (op_type, ",".join(near)))


def RegisteredOperators():
    from . import _C
    return list(_C.op_types())


def RefreshRegisteredOperators(trigger_lazy=True):
    """Reads the registered operator types from the C runtime again (``IsOperator`` and
    ``net.X`` use that cached set) and returns them as a set (Caffe2's returned None).
    ``trigger_lazy`` is accepted for Caffe2's signature: nothing here registers lazily."""
    global _op_types
    _op_types = None
    return set(_registered())


def IsOperatorWithEngine(op_type, engine):
    """Whether an operator ``op_type`` is registered for ``engine``, as Caffe2 asked its registry
    for the key ``op_type`` (engine "" or "DEFAULT") or ``op_type + "_ENGINE_" + engine``. No
    engine-specific implementation (CUDNN, MKLDNN, ...) exists here, so it is False for every
    other engine."""
    if not isinstance(op_type, str) or not isinstance(engine, str):
        raise TypeError("IsOperatorWithEngine expects (str, str), got (%s, %s)"
                        % (type(op_type).__name__, type(engine).__name__))
    key = op_type if engine in ("", "DEFAULT") else op_type + "_ENGINE_" + engine
    return key in _registered()


_GLOBAL_INIT_ARGS = []


def GlobalInit(args):
    """``workspace.GlobalInit(args)`` (``args[0]`` is the program name; the flags it understands
    are listed there), then records ``args[1:]`` for ``GetGlobalInitArgs``. Arguments that
    ``workspace.GlobalInit`` refuses are not recorded (Caffe2 recorded them before it tried)."""
    from . import workspace
    if isinstance(args, (str, bytes)) or not all(isinstance(a, str) for a in args):
        raise TypeError("GlobalInit expects a list of str (program name first), got %r" % (args,))
    args = list(args)
    workspace.GlobalInit(args)
    _GLOBAL_INIT_ARGS.extend(args[1:])


def GetGlobalInitArgs():
    """A copy of the list of every argument (program names left out) that ``core.GlobalInit``
    has been given in this process."""
    return list(_GLOBAL_INIT_ARGS)


GradientSlice = collections.namedtuple("GradientSlice", ["indices", "values"])
GradientSlice.__doc__ = """A sparse gradient: rows ``values`` (shaped
``indices.shape + blob.shape[1:]``) added to the blob's rows ``indices``;
repeated indices add up. ``Gather``'s gradient is one."""


def _gradient_names(g):
    """A gradient as names: None, a str, or a GradientSlice of two strs."""
    if g is None:
        return None
    if isinstance(g, GradientSlice):
        return GradientSlice(str(g.indices), str(g.values))
    return str(g)


# ---------------------------------------------------------------- blob references
class BlobReference:
    """A name of a blob, optionally remembering the Net that produces it.

    ``str(ref)`` is the name. References hash and compare equal to their name,
    so they work as dict keys next to plain strings. ``ref + 'suffix'`` is a
    new reference. ``ref.Relu([], 'y')`` is ``ref.Net().Relu([ref], 'y')``.
    """

    __slots__ = ("_name", "_from_net", "meta")

    def __init__(self, name, net=None):
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        self._name = str(name)
        self._from_net = net
        self.meta = {}

    def __hash__(self):
        return hash(self._name)

    def __eq__(self, other):
        if isinstance(other, str):
            return self._name == other
        if isinstance(other, bytes):
            return self._name == other.decode("utf-8")
        if isinstance(other, BlobReference):
            return self._name == other._name
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __lt__(self, other):
        return self._name < str(other)

    def __str__(self):
        return self._name

    def __repr__(self):
        return 'BlobReference("%s")' % self._name

    def __add__(self, other):
        if not isinstance(other, str):
            raise TypeError("cannot add %s to BlobReference '%s': only str"
                            % (type(other).__name__, self._name))
        return BlobReference(self._name + other, self._from_net)

    def __radd__(self, other):
        if not isinstance(other, str):
            raise TypeError("cannot add BlobReference '%s' to %s: only str"
                            % (self._name, type(other).__name__))
        return BlobReference(other + self._name, self._from_net)

    def Net(self):
        """The Net this reference came from (None if not known)."""
        return self._from_net

    def GetNameScope(self):
        """The name-scope part of the name ('' or ending with '/')."""
        return self._name[:self._name.rfind(scope._NAMESCOPE_SEPARATOR) + 1]

    def GetUnscopedName(self):
        return self._name[self._name.rfind(scope._NAMESCOPE_SEPARATOR) + 1:]

    def _CreateAndAddToNet(self, op_type, inputs=None, *args, **kwargs):
        if inputs is None:
            inputs = []
        elif isinstance(inputs, (str, bytes, BlobReference)):
            inputs = [inputs]
        else:
            inputs = list(inputs)
        inputs.insert(0, self)
        return getattr(self._from_net, op_type)(inputs, *args, **kwargs)

    def __getattr__(self, op_type):
        if op_type.startswith("_"):
            raise AttributeError(op_type)
        if self._from_net is None:
            raise RuntimeError(
                "BlobReference '%s' has no net: create operator %s from an explicit Net"
                % (self._name, op_type))
        _check_operator(op_type)
        return lambda *args, **kwargs: self._CreateAndAddToNet(op_type, *args, **kwargs)

    def __getstate__(self):
        return (self._name, self.meta)

    def __setstate__(self, state):
        self._name, self.meta = state
        self._from_net = None

    def __copy__(self):
        r = BlobReference(self._name, self._from_net)
        r.meta = dict(self.meta)
        return r

    def __deepcopy__(self, memo):
        return self.__copy__()


def ScopedName(name):
    """``name`` prefixed with the current name scope."""
    if isinstance(name, bytes):
        name = name.decode("utf-8")
    return scope.CurrentNameScope() + str(name)


def ScopedBlobReference(name, *args, **kwargs):
    """A BlobReference whose name is prefixed with the current name scope."""
    return BlobReference(ScopedName(name), *args, **kwargs)


def _RectifyInputOutput(blobs, net=None, what="input/output"):
    """Normalizes a blob or a list of blobs to a list of BlobReferences.

    Strings get the current name scope; BlobReferences are taken as they are.
    """
    if isinstance(blobs, (str, bytes)):
        return [ScopedBlobReference(blobs, net=net)]
    if isinstance(blobs, BlobReference):
        return [blobs]
    if isinstance(blobs, (list, tuple)):
        out = []
        for i, b in enumerate(blobs):
            if isinstance(b, (str, bytes)):
                out.append(ScopedBlobReference(b, net=net))
            elif isinstance(b, BlobReference):
                out.append(b)
            else:
                raise TypeError("%s blob #%d has unsupported type %s: %r"
                                % (what, i, type(b).__name__, b))
        return out
    raise TypeError("%s must be a blob name, a BlobReference or a list of them, got %s: %r"
                    % (what, type(blobs).__name__, blobs))


def CreateOperator(operator_type, inputs, outputs, name="", control_input=None,
                   device_option=None, arg=None, engine=None, debug_info=None, **kwargs):
    """Builds an OperatorDef.

    ``inputs``/``outputs`` are a blob or a list of blobs (str or
    BlobReference; strings get the current name scope). ``device_option``
    defaults to the current DeviceScope. ``arg`` is a list of Arguments added
    as they are; every other keyword becomes an argument through
    ``proto.make_argument`` (keywords whose value is None are skipped).
    ``random_seed`` goes into the device option, as in Caffe2.
    """
    if not isinstance(operator_type, str):
        raise TypeError("operator type must be a str, got %s" % type(operator_type).__name__)
    op = OperatorDef(operator_type)
    op.name = str(name) if name else ""
    op.input = [str(b) for b in _RectifyInputOutput(inputs, what="%s input" % operator_type)]
    op.output = [str(b) for b in _RectifyInputOutput(outputs, what="%s output" % operator_type)]
    if control_input:
        op.control_input = [str(b) for b in _RectifyInputOutput(
            control_input, what="%s control input" % operator_type)]
    if device_option is not None:
        op.device_option = copy.deepcopy(device_option)
    elif scope.CurrentDeviceScope() is not None:
        op.device_option = copy.deepcopy(scope.CurrentDeviceScope())
    if engine is not None:
        op.engine = str(engine)
    if debug_info is not None:
        op.debug_info = str(debug_info)
    if "random_seed" in kwargs:
        seed = kwargs.pop("random_seed")
        if seed is not None:
            op.device_option.random_seed = int(seed)   # sets the field if it was unset
    if arg is not None:
        if isinstance(arg, Argument):
            arg = [arg]
        for a in arg:
            if not isinstance(a, Argument):
                raise TypeError("op %s: 'arg' must hold Arguments, got %s"
                                % (operator_type, type(a).__name__))
            op.arg.append(copy.deepcopy(a))
    for key, value in kwargs.items():
        if value is None:
            continue
        if isinstance(value, BlobReference):
            value = str(value)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, BlobReference) for v in value):
            value = [str(v) if isinstance(v, BlobReference) else v for v in value]
        try:
            op.arg.append(make_argument(key, value))
        except TypeError as e:
            raise TypeError("op %s: %s" % (operator_type, e)) from None
    from . import workspace
    if workspace.IsImmediate() and not getattr(_immediate_off, "depth", 0):
        workspace.RunOperatorImmediate(op)
    return op


_immediate_off = threading.local()  # .depth > 0: this thread is building gradient ops


@contextlib.contextmanager
def _not_immediate():
    """The ops of a backward pass are not run in immediate mode (Caffe2 built most of them in C++,
    not with CreateOperator, and the others read gradients those did not make)."""
    _immediate_off.depth = getattr(_immediate_off, "depth", 0) + 1
    try:
        yield
    finally:
        _immediate_off.depth -= 1


# ---------------------------------------------------------------- gradients
OpSSA = collections.namedtuple("OpSSA", ["op", "in_versions", "out_versions"])
GradGenMeta = collections.namedtuple("GradGenMeta", ["grad_op", "idx", "gradient"])
# Caffe2's record of a sparse gradient's generators; kept for code that names it. The backward pass
# here does not use it: a blob's sparse gradients are made dense before they are summed (IR._MakeSumOps).
SparseGradGenMeta = collections.namedtuple("SparseGradGenMeta", [
    "grad_op_indices", "idx_indices", "grad_op_values", "idx_values", "gradient", "device_option"])


def _python_op_args(f, grad_f, python_func_type, pass_workspace, grad_output_indices, grad_input_indices,
                    build_now=False):
    """The arguments of a Python op calling ``f`` (registered under a token; recurrent/python_op.py). A
    ``(builder, args, kwargs)`` tuple is built for each op instance when it is created (Net.Python), or
    once now (``build_now``: CreatePythonOperator), as Caffe2 did."""
    from . import python_op
    if python_func_type is not None:  # Caffe2's: an object made from f gives both functions
        func = python_func_type(f)
        if not callable(getattr(func, "forward", None)):
            raise TypeError("net.Python: python_func_type(f) must have a method forward(inputs, outputs), "
                            "got %s" % type(func).__name__)
        f, grad_f = func.forward, getattr(func, "backward", None)
    kw = {"token": python_op.register(f, "f", build_now)}
    if pass_workspace:
        kw["pass_workspace"] = 1
    if grad_f is not None:
        kw["grad_token"] = python_op.register(grad_f, "grad_f", build_now)
    for name, v in (("grad_output_indices", grad_output_indices), ("grad_input_indices", grad_input_indices)):
        if v is not None:
            v = [int(i) for i in v]
            if any(i < 0 for i in v) or len(set(v)) != len(v):
                raise ValueError("Python op: %s must be distinct indices >= 0, got %s" % (name, v))
            kw[name] = v
    return kw


def CreatePythonOperator(f, inputs, outputs, grad_f=None, pass_workspace=False, python_func_type=None,
                         *args, **kwargs):
    """Caffe2's: an OperatorDef of a Python op calling ``f`` (as ``net.Python(f)(inputs, outputs)``
    adds); ``grad_output_indices`` / ``grad_input_indices`` may be among ``kwargs``."""
    kw = _python_op_args(f, grad_f, python_func_type, pass_workspace, kwargs.pop("grad_output_indices", None),
                         kwargs.pop("grad_input_indices", None), build_now=True)
    kwargs.update(kw)
    return CreateOperator("Python", inputs, outputs, *args, **kwargs)


def GetIndexFromGradientList(g_list, name):
    """Index of ``name`` in a gradient list (None if absent)."""
    for i, g in enumerate(g_list):
        if isinstance(g, GradientSlice):
            if g.indices == name or g.values == name:
                return i
        elif g is not None and g == name:
            return i
    return None


def _op_label(op, index=None):
    where = "op %s" % op.type if index is None else "op %s #%d" % (op.type, index)
    if op.name:
        where += " (%s)" % op.name
    return where


class IR:
    """Versioned (SSA) view of a list of forward operators, used to build the
    backward pass the way Caffe2 did.

    Every write of a blob makes a new version; a gradient operator may only
    read forward blobs at the version they had when the forward op ran (an
    in-place overwrite that destroys a needed version is an error). When a
    blob version feeds several operators, the gradients they produce are
    summed: the first keeps its name, the others are renamed
    ``_<name>_autosplit_<i>`` and a ``Sum`` op is added.
    """

    def __init__(self, operators):
        self.ssa = []
        self.input_usages = collections.defaultdict(lambda: collections.defaultdict(list))
        self.frontier = collections.defaultdict(int)
        self.gradient_frontier = {}
        self.gradient_generators = collections.defaultdict(lambda: collections.defaultdict(list))
        self.out_version_history = collections.defaultdict(list)
        self.in_version_history = collections.defaultdict(list)
        for op in operators:
            self.Play(op)

    def Play(self, op):
        in_versions = {}
        for s in op.input:
            s = str(s)
            in_versions[s] = self.frontier[s]
            self.input_usages[s][self.frontier[s]].append(len(self.ssa))
            self.in_version_history[s].append((op, self.frontier[s]))
        out_versions = {}
        for s in op.output:
            s = str(s)
            if s in self.frontier:
                self.frontier[s] += 1
            out_versions[s] = self.frontier[s]
            self.out_version_history[s].append((op, self.frontier[s]))
        self.ssa.append(OpSSA(op, in_versions, out_versions))

    def _history(self, name, which):
        hist = self.out_version_history if which == "out" else self.in_version_history
        lines = ["version history of blob '%s' (%s):" % (name, which)]
        for op, v in hist[name]:
            lines.append("  version %d <- %s %s -> %s" % (v, op.type, list(op.input), list(op.output)))
        return "\n".join(lines)

    def CheckGradientOperatorInput(self, grad_op_input, g_output, fwd_op_idx, local_blobs):
        forward_op, in_versions, out_versions = self.ssa[fwd_op_idx]
        label = _op_label(forward_op, fwd_op_idx)
        original_index = GetIndexFromGradientList(g_output, grad_op_input)
        if original_index is not None:
            original_name = str(forward_op.output[original_index])
            if out_versions[original_name] != self.gradient_frontier.get(original_name):
                raise RuntimeError(
                    "%s: gradient '%s' should correspond to version %d of '%s', but the "
                    "gradient available is for version %s (is the blob written twice?)\n%s"
                    % (label, grad_op_input, out_versions[original_name], original_name,
                       self.gradient_frontier.get(original_name),
                       self._history(original_name, "out")))
        elif grad_op_input in out_versions:
            if self.frontier[grad_op_input] != out_versions[grad_op_input]:
                raise RuntimeError(
                    "%s: its gradient needs output '%s' at version %d, but it is overwritten "
                    "later (final version %d)\n%s"
                    % (label, grad_op_input, out_versions[grad_op_input],
                       self.frontier[grad_op_input], self._history(grad_op_input, "out")))
        elif grad_op_input in in_versions:
            if self.frontier[grad_op_input] != in_versions[grad_op_input]:
                raise RuntimeError(
                    "%s: its gradient needs input '%s' at version %d, but it is overwritten "
                    "later (final version %d)\n%s"
                    % (label, grad_op_input, in_versions[grad_op_input],
                       self.frontier[grad_op_input], self._history(grad_op_input, "in")))
        elif grad_op_input not in local_blobs:
            raise RuntimeError(
                "%s: gradient operator input '%s' is neither an input, output or output "
                "gradient of the op nor made by an earlier gradient operator of it"
                % (label, grad_op_input))

    def BuildGradientGenerators(self, fwd_op_idx, gradient_ops, g_output, g_input):
        forward_op, in_versions, out_versions = self.ssa[fwd_op_idx]
        local_blobs = set()
        for grad_op in gradient_ops:
            for s in grad_op.input:
                self.CheckGradientOperatorInput(str(s), g_output, fwd_op_idx, local_blobs)
            local_blobs.update(str(s) for s in grad_op.output)
            for i, output in enumerate(grad_op.output):
                input_index = GetIndexFromGradientList(g_input, output)
                if input_index is not None:
                    input_name = str(forward_op.input[input_index])
                    g = g_input[input_index]
                    if isinstance(g, GradientSlice):
                        continue  # recorded once below; a sum densifies it, never renames it
                    self.gradient_generators[input_name][in_versions[input_name]].append(
                        GradGenMeta(grad_op, i, g))
        # Gradients passed straight through (e.g. Sum: g_input = g_output), and
        # sparse gradients (GradientSlice), wherever their blobs come from.
        for input_index, g in enumerate(g_input):
            if g is None:
                continue
            input_name = str(forward_op.input[input_index])
            if isinstance(g, GradientSlice):
                # The slice names the forward op's indices: they must still hold
                # that version when the gradient is used.
                if g.indices in in_versions:
                    self.CheckGradientOperatorInput(g.indices, g_output, fwd_op_idx, local_blobs)
                self.gradient_generators[input_name][in_versions[input_name]].append(
                    GradGenMeta(None, 0, g))
            elif str(g) not in local_blobs:
                self.gradient_generators[input_name][in_versions[input_name]].append(
                    GradGenMeta(None, 0, g))
        for i, g in enumerate(g_input):
            if g is not None:
                input_name = str(forward_op.input[i])
                self.gradient_frontier[input_name] = in_versions[input_name]

    @staticmethod
    def _GetSumOpOutputName(generators, input_name):
        for g in generators:
            if g.grad_op is not None:
                return str(g.grad_op.output[g.idx])
        return input_name + "_grad"

    def _VerifyGradientGenerators(self, generators, input_name):
        if len(generators) < 2:
            return False
        devices = [device_of(g.grad_op) for g in generators if g.grad_op is not None]
        if len(devices) >= 2 and not all(device_option_equal(d, devices[0]) for d in devices[1:]):
            raise RuntimeError("gradients of blob '%s' are made on different devices; "
                               "cannot sum them automatically" % input_name)
        return True

    def _MakeSumOps(self, input_name, input_version):
        """A Sum of the gradients of one blob version. Sparse gradients
        (GradientSlice) are made dense first (``SparseToDense`` shaped like the
        blob), so the sum is dense; Caffe2 concatenated two slices into one."""
        generators = self.gradient_generators[input_name][input_version]
        out_base_name = self._GetSumOpOutputName(generators, input_name)
        sum_inputs = []
        dense_ops = []
        cnt = 0
        first_grad_op = True
        for g in generators:
            if isinstance(g.gradient, GradientSlice):
                dense = "_%s_sparse_to_dense_%d" % (input_name, len(dense_ops))
                dense_ops.append(CreateOperator(
                    "SparseToDense", [BlobReference(g.gradient.indices),
                                      BlobReference(g.gradient.values), BlobReference(input_name)],
                    [BlobReference(dense)]))
                sum_inputs.append(dense)
            elif g.grad_op is not None:
                if first_grad_op:
                    first_grad_op = False
                    out = str(g.grad_op.output[g.idx])
                else:
                    out = "_%s_autosplit_%d" % (g.grad_op.output[g.idx], cnt)
                    g.grad_op.output[g.idx] = out
                    cnt += 1
                sum_inputs.append(out)
            else:
                if str(g.gradient) == out_base_name:
                    raise RuntimeError(
                        "gradient '%s' of blob '%s' is passed through unchanged by one op and "
                        "also produced by another; cannot sum them in place"
                        % (g.gradient, input_name))
                sum_inputs.append(str(g.gradient))
        if out_base_name in sum_inputs:
            # Sum may run in place only on its first input.
            i = sum_inputs.index(out_base_name)
            sum_inputs[0], sum_inputs[i] = sum_inputs[i], sum_inputs[0]
        sum_op = CreateOperator("Sum", [BlobReference(x) for x in sum_inputs],
                                [BlobReference(out_base_name)])
        for g in generators:
            if g.grad_op is not None:
                if device_of(g.grad_op) is not None:
                    for op in dense_ops + [sum_op]:
                        op.device_option = copy.deepcopy(device_of(g.grad_op))
                break
        return dense_ops + [sum_op], out_base_name

    def DoGradientAccumulation(self, fwd_op_idx):
        forward_op, in_versions, _ = self.ssa[fwd_op_idx]
        sum_ops = []
        grad_map = {}
        # Unique inputs in op order (deterministic, unlike iterating a set).
        for input_name in dict.fromkeys(str(i) for i in forward_op.input):
            version = in_versions[input_name]
            usage = self.input_usages[input_name][version]
            if len(usage) <= 1 or fwd_op_idx != usage[0]:
                continue
            generators = self.gradient_generators[input_name][version]
            if not self._VerifyGradientGenerators(generators, input_name):
                continue
            ops, g = self._MakeSumOps(input_name, version)
            sum_ops.extend(ops)
            grad_map[input_name] = g
        return sum_ops, grad_map

    def _GetInitGradients(self, ys):
        input_to_grad = {}
        gradient_ops = []
        for y, g in ys.items():
            y = str(y)
            autograd_op = None
            if g is None:
                autograd_op = CreateOperator("ConstantFill", [BlobReference(y)],
                                             [BlobReference(y + "_autogen_grad")], value=1.0)
                gradient_ops.append(autograd_op)
                g = autograd_op.output[0]
            input_to_grad[y] = g if isinstance(g, GradientSlice) else str(g)
            if autograd_op is not None:
                self.gradient_generators[y][self.frontier[y]].append(
                    GradGenMeta(autograd_op, 0, str(g)))
        return input_to_grad, gradient_ops

    def _GenerateGradientsForForwardOp(self, forward_op_idx, input_to_grad):
        new_input_to_grad = {}
        gradient_ops = []
        forward_op, _, _ = self.ssa[forward_op_idx]
        g_output = [input_to_grad.get(str(name)) for name in forward_op.output]
        if any(g is not None for g in g_output) or forward_op.type == "ZeroGradient":
            gradient_ops, g_input = GradientRegistry._GetGradientForOpChecked(
                forward_op, g_output, forward_op_idx)
            self.BuildGradientGenerators(forward_op_idx, gradient_ops, g_output, g_input)
            outputs = [str(o) for o in forward_op.output]
            for name, grad in zip(forward_op.input, g_input):
                name = str(name)
                # Keep an existing gradient unless this op also writes the blob.
                if grad is not None or name not in input_to_grad or name in outputs:
                    new_input_to_grad[name] = grad
        return new_input_to_grad, gradient_ops

    def GetBackwardPass(self, ys):
        with _not_immediate():
            return self._GetBackwardPass(ys)

    def _GetBackwardPass(self, ys):
        if isinstance(ys, (list, tuple)):
            ys = {y: None for y in ys}
        elif isinstance(ys, (str, BlobReference)):
            ys = {ys: None}
        elif not isinstance(ys, dict):
            raise TypeError("ys must be a list of blobs or a dict {blob: gradient or None}, got %s"
                            % type(ys).__name__)
        ys = {str(y): _gradient_names(g) for y, g in ys.items()}
        for y in ys:
            self.gradient_frontier[y] = self.frontier[y]
            self.input_usages[y][self.frontier[y]].append(len(self.ssa))
        all_input_to_grad, all_gradient_ops = self._GetInitGradients(ys)
        for forward_op_idx in reversed(range(len(self.ssa))):
            input_to_grad, gradient_ops = self._GenerateGradientsForForwardOp(
                forward_op_idx, all_input_to_grad)
            all_input_to_grad.update(input_to_grad)
            all_gradient_ops += gradient_ops
            sum_ops, grad_map = self.DoGradientAccumulation(forward_op_idx)
            all_input_to_grad.update(grad_map)
            all_gradient_ops += sum_ops
        out = {}
        for key, val in all_input_to_grad.items():
            if isinstance(val, GradientSlice):
                out[BlobReference(key)] = GradientSlice(BlobReference(val.indices),
                                                        BlobReference(val.values))
            elif val is not None:
                out[BlobReference(key)] = BlobReference(val)
        return all_gradient_ops, out


class GradientRegistry:
    """Maps operator types to gradient makers."""

    gradient_registry_ = {}
    _copy_arguments = set()
    _takes_sparse = set()
    _should_not_do = set()

    @classmethod
    def RegisterGradient(cls, op_type, copy_arguments=False):
        """Decorator registering ``maker(op, g_output) -> (grad_ops, g_input)``
        for ``op_type``. With ``copy_arguments=True`` the forward op's
        arguments are appended to every gradient op that lacks an argument of
        that name (what Caffe2's C++ makers did by default)."""

        def wrapper(func):
            cls.gradient_registry_[op_type] = func
            if copy_arguments:
                cls._copy_arguments.add(op_type)
            else:
                cls._copy_arguments.discard(op_type)
            return func

        return wrapper

    @classmethod
    def RegisterNoGradient(cls, *op_types):
        """Registers op types that have no gradient (their inputs get none): a gradient that reaches
        one of their outputs stops there (Caffe2's NO_GRADIENT, e.g. StopGradient)."""
        for t in op_types:
            cls.gradient_registry_[t] = _no_gradient
            cls._copy_arguments.discard(t)
            cls._should_not_do.discard(t)

    @classmethod
    def RegisterShouldNotDoGradient(cls, *op_types):
        """Registers op types that must not be differentiated (Caffe2's SHOULD_NOT_DO_GRADIENT, e.g.
        Accuracy, the comparisons, ArgMax): a gradient reaching one of their outputs is a ValueError
        naming the op, its index and the output, as Caffe2 raised ("One should not call gradient for
        operator ..."). No gradient reaching them, their inputs get none, silently."""
        for t in op_types:
            cls.gradient_registry_[t] = _no_gradient
            cls._copy_arguments.discard(t)
            cls._should_not_do.add(t)

    @classmethod
    def ShouldNotDoGradient(cls, op_type):
        """True for the op types registered with RegisterShouldNotDoGradient."""
        return op_type in cls._should_not_do

    @classmethod
    def TakesSparse(cls, *op_types):
        """Marks op types whose makers take a sparse output gradient
        (GradientSlice) as it is, instead of the dense one the other makers
        get (e.g. Alias, which passes its output gradient through)."""
        cls._takes_sparse.update(op_types)

    @classmethod
    def HasGradient(cls, op_type):
        return op_type in cls.gradient_registry_

    @classmethod
    def GetGradientForOp(cls, op, g_output):
        """Runs the maker registered for ``op.type``.

        Returns ``(grad_ops, g_input)``: a list of OperatorDefs and one
        gradient name (or None) per op input. Raises RuntimeError when no
        maker is registered. Gradient ops are marked ``is_gradient_op`` and
        get the forward op's device option and engine when they have none.
        """
        return cls._GetGradientForOpChecked(op, g_output, None)

    @classmethod
    def _GetGradientForOpChecked(cls, op, g_output, index):
        label = _op_label(op, index)
        maker = cls.gradient_registry_.get(op.type)
        if maker is None:
            raise RuntimeError(
                "%s: no gradient is registered for operator type '%s' (its outputs %s need "
                "gradients)" % (label, op.type, [str(o) for o, g in zip(op.output, g_output)
                                                 if g is not None]))
        g_output = [_gradient_names(g) for g in g_output]
        if op.type in cls._should_not_do:
            reached = [(i, str(o)) for i, (o, g) in enumerate(zip(op.output, g_output)) if g is not None]
            if reached:
                raise ValueError(
                    "%s: the gradient of its output %s reaches it, but %s must not be differentiated "
                    "(Caffe2: SHOULD_NOT_DO_GRADIENT); stop the gradient before it (StopGradient) or "
                    "leave its outputs out of the blobs the gradient is asked for"
                    % (label, ", ".join("%d '%s'" % r for r in reached), op.type))
        # Makers take dense output gradients: a sparse one (GradientSlice, e.g.
        # from a later Gather of this op's output) is made dense first, shaped
        # like the output (Caffe2 refused: "is sparse (expected dense)").
        # The names are final: neither these ops nor the maker's (built with CreateOperator) may get
        # the caller's name scope.
        densify = []
        with scope.NameScope(None, reset=True), _not_immediate():
            for i, g in enumerate(g_output):
                if isinstance(g, GradientSlice) and op.type not in cls._takes_sparse:
                    dense = str(op.output[i]) + "_grad_dense"
                    densify.append(CreateOperator("SparseToDense", [g.indices, g.values, str(op.output[i])],
                                                  [dense]))
                    g_output[i] = dense
            result = maker(op, list(g_output))
        try:
            gradient_ops, g_input = result
        except (TypeError, ValueError):
            raise TypeError("%s: gradient maker must return (grad_ops, g_input), got %r"
                            % (label, result)) from None
        if gradient_ops is None:
            gradient_ops = []
        elif isinstance(gradient_ops, OperatorDef):
            gradient_ops = [gradient_ops]
        else:
            gradient_ops = list(gradient_ops)
        gradient_ops = densify + gradient_ops
        g_input = [_gradient_names(g) for g in g_input]
        if len(g_input) != len(op.input):
            raise ValueError("%s: gradient maker returned %d input gradients for %d inputs"
                             % (label, len(g_input), len(op.input)))
        copy_args = op.type in cls._copy_arguments
        for gop in gradient_ops:
            if not isinstance(gop, OperatorDef):
                raise TypeError("%s: gradient maker returned a %s, not an OperatorDef"
                                % (label, type(gop).__name__))
            gop.is_gradient_op = True
            if device_of(gop) is None and device_of(op) is not None:
                gop.device_option = copy.deepcopy(device_of(op))
            if not gop.engine and op.engine:
                gop.engine = op.engine
            if copy_args:
                have = {a.name for a in gop.arg}
                gop.arg.extend(copy.deepcopy(a) for a in op.arg if a.name not in have)
        return gradient_ops, g_input

    @classmethod
    def GetBackwardPass(cls, operators, ys, ys_generate_gradient=False):
        """Builds the backward pass of ``operators``.

        ``ys`` is a list of blobs whose gradient is seeded with ones (a
        ``ConstantFill`` shaped like the blob, writing ``<y>_autogen_grad``),
        or a dict ``{blob: gradient blob}`` for gradients supplied from outside
        (a None value means "seed with ones").

        Returns ``(gradient_ops, input_to_grad)``; ``input_to_grad`` maps every
        blob that got a gradient (BlobReference) to its gradient blob.
        """
        with scope.NameScope(None, reset=True):
            return IR(list(operators)).GetBackwardPass(ys)


def _no_gradient(op, g_output):
    return [], [None] * len(op.input)


NoGradient = GradientRegistry.RegisterNoGradient


@GradientRegistry.RegisterGradient("Copy")
def _copy_gradient(op, g_output):
    g = g_output[0]
    if g is None:
        return [], [None]
    gi = op.input[0] + "_grad"
    return [CreateOperator("Copy", [g], [gi])], [gi]


GradientRegistry.RegisterNoGradient(
    "ConstantFill", "UniformFill", "GaussianFill", "XavierFill", "GivenTensorFill",
    "GivenTensorIntFill", "UniqueUniformFill", "GivenTensorInt64Fill", "GivenTensorInt16Fill",
    "GivenTensorBoolFill", "GivenTensorDoubleFill", "RangeFill")


# ---------------------------------------------------------------- SSA helpers
def get_ssa(net, blob_versions=None):
    """Versions of every op's inputs and outputs.

    ``net`` is a Net, a NetDef or a list of them. External inputs (and, in a
    net without external inputs, every blob read before it is written) start
    at version 0; each write increments the version. Returns
    ``(ssa, blob_versions)`` where ``ssa`` holds one ``(inputs, outputs)`` per
    op, each a list of ``(name, version)``.
    """
    if blob_versions is None:
        blob_versions = {}
    if isinstance(net, list):
        return [get_ssa(n, blob_versions) for n in net], blob_versions
    proto = net.Proto() if isinstance(net, Net) else net
    if not isinstance(proto, NetDef):
        raise TypeError("get_ssa expects a Net or NetDef, got %s" % type(net).__name__)
    for i in proto.external_input:
        if str(i) not in blob_versions:
            blob_versions[str(i)] = 0
    ssa = []
    for op in proto.op:
        if not proto.external_input:
            for i in op.input:
                if str(i) not in blob_versions:
                    blob_versions[str(i)] = 0
        inputs = [(str(i), blob_versions.get(str(i), 0)) for i in op.input]
        for o in op.output:
            blob_versions[str(o)] = blob_versions.get(str(o), 0) + 1
        outputs = [(str(o), blob_versions[str(o)]) for o in op.output]
        ssa.append((inputs, outputs))
    return ssa, blob_versions


def get_undefined_blobs(ssa):
    """Blobs read at version 0 (used before any op of the net writes them)."""
    undefined = set()
    for inputs, _ in ssa:
        undefined |= {name for name, ver in inputs if ver == 0}
    return undefined


def get_output_producers(ssa):
    """Map from (blob, version) to the index of the op producing it."""
    producers = {}
    for i, (_, outputs) in enumerate(ssa):
        for o in outputs:
            producers[o] = i
    return producers


def get_op_ids_in_path(ssa, blob_versions, inputs, outputs):
    """Sorted indices of the ops needed to compute ``outputs`` from ``inputs``."""
    inputs_set = {(str(i), blob_versions[str(i)]) for i in inputs}
    producers = get_output_producers(ssa)
    queue = [(str(o), blob_versions[str(o)]) for o in outputs]
    used = set()
    while queue:
        o = queue.pop()
        if o not in inputs_set and o in producers:
            op_id = producers[o]
            if op_id not in used:
                used.add(op_id)
                queue.extend(ssa[op_id][0])
    return sorted(used)


# ---------------------------------------------------------------- Net
def recurrent_network_op_remap(op, prefix, blob_remap):
    """Clone helper: renames blobs inside RecurrentNetwork(Gradient) arguments
    (string lists, the timestep name and the step nets)."""

    def remap(s):
        return blob_remap.get(s, s)

    for a in op.arg:
        if a.strings:
            a.strings = [remap(s) for s in a.strings]
        elif a.name == "timestep" and a.s is not None:
            a.s = remap(a.s)
        elif a.name.endswith("step_net") and a.n is not None:
            a.n = _remap_netdef(a.n, blob_remap)


def _remap_netdef(netdef, blob_remap):
    new = copy.deepcopy(netdef)

    def remap(s):
        return blob_remap.get(str(s), str(s))

    for op in new.op:
        op.input = [remap(b) for b in op.input]
        op.output = [remap(b) for b in op.output]
        op.control_input = [remap(b) for b in op.control_input]
        if op.type in DEFAULT_REMAP_FUNCS:
            DEFAULT_REMAP_FUNCS[op.type](op, "", blob_remap)
    new.external_input = [remap(b) for b in new.external_input]
    new.external_output = [remap(b) for b in new.external_output]
    return new


DEFAULT_REMAP_FUNCS = {
    "RecurrentNetwork": recurrent_network_op_remap,
    "RecurrentNetworkGradient": recurrent_network_op_remap,
}


_live_nets = weakref.WeakValueDictionary()  # net name -> the Net that last added an op under that name


def _extract_stacktrace():
    """The Python stack of the caller of ``Net.X(...)`` as ``(file, line, function)`` tuples, innermost
    first, without reading source files (as Caffe2's): skips this function, ``_CreateAndAddToSelf``
    and the lambda calling it."""
    result = []
    frame = sys._getframe(1)
    for _ in range(2):
        frame = frame.f_back or frame
    while frame:
        result.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return result


def output_to_list(op_output):
    """``op_output`` as a list: ``[op_output]`` for one BlobReference, ``list(op_output)`` for a
    list or tuple of them (what ``net.X(...)`` returns for one output or several)."""
    if isinstance(op_output, BlobReference):
        return [op_output]
    if isinstance(op_output, (list, tuple)):
        return list(op_output)
    raise TypeError("output_to_list expects a BlobReference or a list or tuple of them, got %s"
                    % type(op_output).__name__)


def remap_input(op, blob_name_remapping):
    """Renames, in place, the inputs of the OperatorDef ``op`` found in ``blob_name_remapping``
    (``{old name: new name}``); the other inputs stay."""
    _check_op(op, "remap_input")
    remapping = {str(k): str(v) for k, v in blob_name_remapping.items()}
    op.input[:] = [remapping.get(str(b), str(b)) for b in op.input]


class Net:
    """A net under construction: a NetDef plus name bookkeeping.

    ``Net(name)`` makes an empty net, ``Net(netdef)`` a net holding a copy of
    ``netdef`` (``Net(netdef, inplace=True)``: that NetDef object itself). Net
    names are made unique per process as in Caffe2 (a second
    ``Net('n')`` is named ``'n_1'``). Any attribute not defined here is an
    operator type: ``net.FC([x, w, b], 'y', axis=2)`` appends an FC op and
    returns its output BlobReference. Operator types are not checked here;
    the C runtime checks them when the net is created or run.
    """

    _net_names_used = set()
    _net_name_next_idx = {}   # basename -> first suffix not yet tried (keeps this O(1), not O(nets))

    @staticmethod
    def _get_next_net_name(basename):
        name = basename
        next_idx = Net._net_name_next_idx.get(basename, 1)
        while name in Net._net_names_used:
            name = "%s_%d" % (basename, next_idx)
            next_idx += 1
        Net._net_name_next_idx[basename] = next_idx
        Net._net_names_used.add(name)
        return name

    def __init__(self, name_or_proto=None, inplace=False):
        """``name_or_proto``: a name (str), a NetDef or a Net (its NetDef). A NetDef is copied,
        or with ``inplace=True`` adopted: this Net then works on that very object (its ops, its
        lists), and its ``name`` is set to the unique name, as in Caffe2. ``inplace`` is ignored
        for a name, and is a TypeError with a Net (two Nets would share one NetDef)."""
        if inplace and isinstance(name_or_proto, Net):
            raise TypeError("Net(..., inplace=True) adopts a NetDef; got a core.Net (pass "
                            "net.Proto() to share it, or inplace=False to copy it)")
        self._op_outputs = set()
        self._external_input_map = set()
        self._recreate_lookup_tables = False
        self._registered_blob_names = set()
        self._given_names = set()
        self._attr_dict = collections.defaultdict(list)
        if isinstance(name_or_proto, Net):
            name_or_proto = name_or_proto.Proto()
        if isinstance(name_or_proto, NetDef):
            self._net = name_or_proto if inplace else copy.deepcopy(name_or_proto)
            for field in ("op", "external_input", "external_output"):
                current = getattr(self._net, field)
                items = list(current) if field == "op" else [str(b) for b in current]
                if isinstance(current, list):  # an adopted NetDef keeps its list objects
                    current[:] = items
                else:
                    setattr(self._net, field, items)
            self._external_input_map.update(self._net.external_input)
            for op in self._net.op:
                self._op_outputs.update(str(o) for o in op.output)
            prefix = self._net.name + "_blob_"
            indices = []
            for op in self._net.op:
                for s in list(op.input) + list(op.output):
                    if s.startswith(prefix):
                        try:
                            indices.append(int(s[len(prefix):]))
                        except ValueError:
                            pass
            self._next_name_index = max(indices) + 1 if indices else 0
            name = self._net.name
        else:
            if name_or_proto is None:
                name_or_proto = "net"
            if isinstance(name_or_proto, bytes):
                name_or_proto = name_or_proto.decode()
            if not isinstance(name_or_proto, str):
                raise TypeError("Net() takes a name or a NetDef, got %s" % type(name_or_proto).__name__)
            name = name_or_proto
            self._net = NetDef()
            self._next_name_index = 0
        self._net.name = Net._get_next_net_name(name)

    # ---- identity
    def Name(self):
        return self._net.name

    def __str__(self):
        return self.Name()

    def __repr__(self):
        return "Net(%r, %d ops)" % (self._net.name, len(self._net.op))

    def Proto(self):
        """The NetDef, mutable in place (lookup tables are rebuilt lazily)."""
        self._recreate_lookup_tables = True
        return self._net

    def _RecreateLookupTables(self):
        self._op_outputs = {str(o) for op in self._net.op for o in op.output}
        self._external_input_map = {str(b) for b in self._net.external_input}
        self._recreate_lookup_tables = False

    # ---- blobs
    def BlobIsDefined(self, blob):
        """True if ``blob`` is written by an op of this net or is an external input."""
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        name = str(blob)
        return name in self._op_outputs or name in self._external_input_map

    def UsesBlob(self, blob):
        """True if an op of this net reads ``blob`` or it is an external input."""
        name = str(blob)
        if any(name == i for op in self._net.op for i in op.input):
            return True
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        return name in self._external_input_map

    def UsedBlobNames(self):
        names = set()
        for op in self._net.op:
            names |= set(op.input) | set(op.output)
        names |= set(self._net.external_input) | set(self._net.external_output)
        return names

    def GetBlobRef(self, blob_name):
        """A BlobReference to a blob this net defines; KeyError otherwise."""
        blob_name = str(blob_name)
        if not self.BlobIsDefined(blob_name):
            raise KeyError("net '%s' does not define blob '%s'" % (self.Name(), blob_name))
        return BlobReference(blob_name, self)

    def is_external_input(self, blob):
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        return str(blob) in self._external_input_map

    @property
    def external_inputs(self):
        return [BlobReference(b, self) for b in self._net.external_input]

    @property
    def external_outputs(self):
        return [BlobReference(b, self) for b in self._net.external_output]

    def NextName(self, prefix=None, output_id=None):
        """A blob name not used by this net yet.

        With a prefix: ``<net>/<prefix>`` (``:<output_id>`` appended when
        given), then ``<net>/<prefix>_2``, ``_3``... Without: ``<net>_blob_<i>``.
        Unlike Caffe2, a name handed out once is never handed out again, even
        if no op has written it yet.
        """
        if prefix:
            base = self._net.name + "/" + str(prefix)
            suffix = "" if output_id is None else ":" + str(output_id)
            name = base + suffix
            index = 2
            while self.BlobIsDefined(ScopedName(name)) or ScopedName(name) in self._given_names:
                name = "%s_%d%s" % (base, index, suffix)
                index += 1
            self._given_names.add(ScopedName(name))
            return name
        else:
            while True:
                name = "%s_blob_%d" % (self._net.name, self._next_name_index)
                self._next_name_index += 1
                if name not in self._given_names and not self.BlobIsDefined(name):
                    break
        self._given_names.add(name)
        return name

    def NextBlob(self, prefix="unnamed"):
        """A BlobReference named ``prefix`` (or ``prefix_auto_<i>``) that is
        neither defined in this net nor returned before."""
        base = BlobReference(prefix)
        blob = base
        index = 0
        while str(blob) in self._registered_blob_names or self.BlobIsDefined(blob):
            blob = base + "_auto_" + str(index)
            index += 1
        self._registered_blob_names.add(str(blob))
        return blob

    def NextScopedBlob(self, prefix="unnamed"):
        return self.NextBlob(ScopedName(prefix))

    # ---- external inputs / outputs
    def AddExternalInput(self, *inputs):
        """Declares external inputs; returns one BlobReference or a list."""
        if not inputs:
            raise ValueError("AddExternalInput: no blob given")
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        names = [str(b) for b in inputs]
        for b in inputs:
            if not isinstance(b, (str, bytes, BlobReference)):
                raise TypeError("net '%s': external input must be a blob name, got %s"
                                % (self.Name(), type(b).__name__))
        for i, n in enumerate(names):
            if n in self._external_input_map or n in names[:i]:
                raise ValueError("net '%s' already has an external input named '%s'"
                                 % (self.Name(), n))
        refs = []
        for n in names:
            self._net.external_input.append(n)
            self._external_input_map.add(n)
            refs.append(BlobReference(n, self))
        return refs[0] if len(refs) == 1 else refs

    def AddExternalInputs(self, *inputs):
        return self.AddExternalInput(*inputs)

    def AddScopedExternalInputs(self, *inputs):
        """Adds ``ScopedName(b)`` for each name; always returns a list."""
        res = self.AddExternalInput(*[ScopedBlobReference(b) for b in inputs])
        return res if isinstance(res, list) else [res]

    def AddExternalOutput(self, *outputs):
        """Declares blobs this net defines as external outputs."""
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        for o in outputs:
            if not isinstance(o, (str, BlobReference)):
                raise TypeError("net '%s': external output must be a blob, got %s"
                                % (self.Name(), type(o).__name__))
            if not self.BlobIsDefined(o):
                raise ValueError("net '%s': external output '%s' is not defined in the net "
                                 "(no op writes it and it is not an external input)"
                                 % (self.Name(), o))
        for o in outputs:
            self._net.external_output.append(str(o))

    def AddExternalOutputs(self, *outputs):
        self.AddExternalOutput(*outputs)

    def AddScopedExternalOutputs(self, *outputs):
        return self.AddExternalOutput(*[ScopedBlobReference(b) for b in outputs])

    # ---- ops
    def _ExtendOps(self, new_ops):
        new_ops = list(new_ops)
        self._net.op.extend(new_ops)
        if not self._recreate_lookup_tables:
            for op in new_ops:
                self._op_outputs.update(str(o) for o in op.output)

    def extend_ops(self, new_ops):
        return self._ExtendOps(new_ops)

    def insert_op_at_idx(self, op, op_idx):
        """Inserts a copy of the OperatorDef ``op`` so that it becomes op ``op_idx`` (an index past
        the end appends it, as list insertion). The external inputs and outputs stay as they are
        (Caffe2's docstring said it updated them; its code did not)."""
        _check_op(op, "insert_op_at_idx")
        if isinstance(op_idx, bool) or not isinstance(op_idx, (int, np.integer)):
            raise TypeError("insert_op_at_idx: op_idx must be an int, got %s" % type(op_idx).__name__)
        if op_idx < 0:
            raise ValueError("insert_op_at_idx: op_idx must be >= 0, got %d (net '%s')"
                             % (op_idx, self.Name()))
        op_idx = min(int(op_idx), len(self._net.op))
        self.Proto().op.insert(op_idx, copy.deepcopy(op))
        tracebacks = self.__dict__.get("_op_tracebacks")
        if tracebacks:  # where each later op was added moves with it
            self._op_tracebacks = {i + (i >= op_idx): tb for i, tb in tracebacks.items()}

    def reroute_tensor(self, tensor, new_producer, can_modify=None):
        """Puts the OperatorDef ``new_producer`` (which reads ``tensor`` and writes a new blob, its
        output 0) into the net right after the first op that writes any of its inputs (first, where
        they are all external inputs), renames ``tensor`` to that new blob in the external outputs
        and in the inputs of the ops of this net equal to one in ``can_modify``, and returns how many
        of those ops read ``tensor`` (Caffe2 counted every op of ``can_modify`` found in the net).
        Assumes no op of the net writes ``tensor`` in place, as Caffe2's. ValueError where
        ``tensor`` is not an input of ``new_producer`` (Caffe2 meant to assert it but checked each
        input against itself), where the net neither writes nor takes ``tensor`` as an external
        input, or where ``new_producer`` has no output."""
        _check_op(new_producer, "reroute_tensor")
        tensor = str(tensor)
        if tensor not in [str(b) for b in new_producer.input]:
            raise ValueError("reroute_tensor: the new producer (%s) does not read '%s' (its inputs: %s)"
                             % (new_producer.type, tensor, list(new_producer.input)))
        if not new_producer.output:
            raise ValueError("reroute_tensor: the new producer (%s) has no output to replace '%s' with"
                             % (new_producer.type, tensor))
        external = {str(b) for b in self._net.external_input}

        def producer_index(blob):  # -1: an external input; None: not known to this net
            if blob in external:
                return -1
            return next((i for i, op in enumerate(self._net.op) if blob in op.output), None)

        if producer_index(tensor) is None:
            raise ValueError("reroute_tensor: net '%s' neither writes '%s' nor takes it as an external input"
                             % (self.Name(), tensor))
        op_idx = max(i for i in map(producer_index, map(str, new_producer.input)) if i is not None) + 1
        self.insert_op_at_idx(new_producer, op_idx)
        new_tensor = str(new_producer.output[0])
        self._net.external_output[:] = [new_tensor if str(b) == tensor else b
                                        for b in self._net.external_output]
        reroute_cnt = 0
        if can_modify:
            can_modify = list(can_modify)
            for i, op in enumerate(self._net.op):
                if i != op_idx and op in can_modify and tensor in op.input:
                    remap_input(op, {tensor: new_tensor})
                    reroute_cnt += 1
        return reroute_cnt

    def _CreateAndAddToSelf(self, op_type, inputs, outputs=None, **kwargs):
        inputs = _RectifyInputOutput(inputs, what="%s input" % op_type)
        for b in inputs:
            if not self.BlobIsDefined(b):
                if b.Net() is self:
                    raise ValueError("op %s: input '%s' refers to this net '%s' but no op "
                                     "of it writes the blob" % (op_type, b, self.Name()))
                self.AddExternalInput(b)
        if outputs is None:
            outputs = self.NextName(prefix=op_type)
        elif isinstance(outputs, (int, np.integer)) and not isinstance(outputs, bool):
            outputs = [self.NextName(prefix=op_type, output_id=i) for i in range(int(outputs))]
        outputs = _RectifyInputOutput(outputs, net=self, what="%s output" % op_type)
        op = CreateOperator(op_type, inputs, outputs, **kwargs)
        self._ExtendOps([op])
        # where the op was added, for the note on a failure of it (workspace.operator_tracebacks)
        self.__dict__.setdefault("_op_tracebacks", {})[len(self._net.op) - 1] = _extract_stacktrace()
        _live_nets[self.Name()] = self
        if len(op.output) == 0:
            return None
        if len(op.output) == 1:
            return BlobReference(op.output[0], self)
        return tuple(BlobReference(o, self) for o in op.output)

    def __getattr__(self, op_type):
        if op_type.startswith("_"):
            raise AttributeError(op_type)
        _check_operator(op_type)
        return lambda *args, **kwargs: self._CreateAndAddToSelf(op_type, *args, **kwargs)

    def Python(self, f, grad_f=None, python_func_type=None, pass_workspace=False, grad_output_indices=None,
               grad_input_indices=None):
        """Caffe2's Python op: returns ``add(inputs, outputs=None, **kwargs)``, which adds to this net an op
        calling ``f(inputs, outputs)`` (recurrent/python_op.py says what they are) and returns its
        outputs. ``grad_f`` gives it a gradient (``grad_output_indices`` / ``grad_input_indices``: the
        output gradients it reads, the input gradients it writes; default all). With
        ``pass_workspace=True`` the functions are called as ``f(inputs, outputs, workspace)``, the
        workspace running the net (its blobs may be read and written). With ``python_func_type`` (a
        class), ``obj = python_func_type(f)`` gives the functions: ``obj.forward`` and, when it has
        one, ``obj.backward`` (``grad_f`` is then not used), as in Caffe2."""
        kw = _python_op_args(f, grad_f, python_func_type, pass_workspace, grad_output_indices,
                             grad_input_indices)
        # outputs may be left out (one output, named by the net), as with any net.X(inputs)
        return lambda inputs, outputs=None, **kwargs: self._CreateAndAddToSelf("Python", inputs, outputs,
                                                                               **dict(kwargs, **kw))

    def DeduplicateGradientSlices(self, g, aggregator="sum"):
        """The GradientSlice ``g`` with each index once: ``Unique`` of its
        indices (1-D, in order of first occurrence) and its values summed
        (``aggregator='sum'``) or averaged (``'mean'``) per index with
        ``UnsortedSegmentSum`` / ``UnsortedSegmentMean``, as Caffe2 did."""
        if not isinstance(g, GradientSlice):
            raise TypeError("DeduplicateGradientSlices: expected a GradientSlice, got %s" % type(g).__name__)
        ops = {"sum": "UnsortedSegmentSum", "mean": "UnsortedSegmentMean"}
        if not isinstance(aggregator, str) or aggregator.lower() not in ops:
            raise ValueError("DeduplicateGradientSlices: aggregator must be 'sum' or 'mean', got %r"
                             % (aggregator,))
        unique, remapping = self.Unique([g.indices], 2)
        values = self._CreateAndAddToSelf(ops[aggregator.lower()], [g.values, remapping], 1)
        return GradientSlice(indices=unique, values=values)

    def Const(self, array, blob_out=None, dtype=None):
        """A GivenTensorFill (GivenTensorIntFill for int32) holding ``array``."""
        array = np.asarray(array, dtype=dtype)
        if array.dtype.kind in "iub":
            array = array.astype(np.int32)
            fill = self.GivenTensorIntFill
        else:
            array = array.astype(np.float32)
            fill = self.GivenTensorFill
        return fill([], blob_out or 1, shape=list(array.shape), values=array.ravel().tolist())

    def AddGradientOperators(self, ys, skip=0):
        """Appends the backward pass of this net's ops (from op ``skip`` on)
        for ``ys`` (see GradientRegistry.GetBackwardPass); returns the map
        from blob to gradient blob."""
        grad_ops, input_to_grad = GradientRegistry.GetBackwardPass(self._net.op[skip:], ys)
        self._ExtendOps(grad_ops)
        return input_to_grad

    def PopulateProtoWithFileName(self):
        """Names each op that ``net.X(...)`` added ``"<file>:<line>:<function>"``, the place in the
        code that added it (the innermost frame of its recorded stack), as Caffe2's. Ops added
        otherwise (``Proto().op.extend``) keep their names."""
        tracebacks = self.__dict__.get("_op_tracebacks", {})
        for idx, op in enumerate(self._net.op):
            tb = tracebacks.get(idx)
            if tb:
                op.name = ":".join(map(str, tb[0]))

    def AddArgument(self, arg_name, arg_value):
        """Appends the argument ``utils.MakeArgument(arg_name, arg_value)`` to the NetDef's ``arg``."""
        self._net.arg.append(make_argument(arg_name, arg_value))

    def AppendNet(self, net, device_option=None):
        """Appends the ops of ``net`` and merges its external inputs/outputs."""
        if not isinstance(net, Net):
            raise TypeError("AppendNet expects a Net, got %s" % type(net).__name__)
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        for i in net.Proto().external_input:
            if i not in self._net.external_input and i not in self._op_outputs:
                self._net.external_input.append(i)
                self._external_input_map.add(i)
        self._net.external_output.extend(
            o for o in net.Proto().external_output if o not in self._net.external_output)
        ops = [copy.deepcopy(op) for op in net.Proto().op]
        if device_option is not None:
            for op in ops:
                op.device_option = copy.deepcopy(device_option)
        self._ExtendOps(ops)
        return self

    def Clone(self, name, blob_remap=None, op_id_mask=None, remap_funcs=None,
              keep_schema=True, update_external_list=False):
        """A copy of this net named ``name`` (made unique), with blobs renamed
        by ``blob_remap`` and only the ops listed in ``op_id_mask``. Blob names
        inside RecurrentNetwork arguments are renamed too. The copy shares
        nothing with this net. ``update_external_list=True`` recomputes the
        external inputs and outputs from the ops kept (as Caffe2's)."""
        funcs = dict(DEFAULT_REMAP_FUNCS)
        funcs.update(remap_funcs or {})
        blob_remap = {str(k): str(v) for k, v in (blob_remap or {}).items()}
        if op_id_mask is None:
            op_id_mask = range(len(self._net.op))

        def remap(b):
            return blob_remap.get(str(b), str(b))

        new_proto = copy.deepcopy(self._net)
        new_proto.name = name
        new_ops = []
        for i in op_id_mask:
            op = copy.deepcopy(self._net.op[i])
            op.input = [remap(b) for b in op.input]
            op.output = [remap(b) for b in op.output]
            if op.type in funcs:
                funcs[op.type](op, (name + "/") if name else "", blob_remap)
            new_ops.append(op)
        new_proto.op = new_ops
        new_proto.external_input = [remap(b) for b in new_proto.external_input]
        new_proto.external_output = [remap(b) for b in new_proto.external_output]
        if update_external_list:
            # As Caffe2: external inputs are the blobs the kept ops read before any of them writes
            # them; external outputs the blobs they write that no later kept op reads. Listed
            # once each, in op order (Caffe2 could list an input twice and the outputs in set order).
            written, read_after, ext_in = set(), set(), {}
            for op in new_ops:
                for b in op.input:
                    if b in written:
                        read_after.add(b)
                    else:
                        ext_in.setdefault(b, None)
                for b in op.output:
                    written.add(b)
            new_proto.external_input = list(ext_in)
            new_proto.external_output = list(dict.fromkeys(
                b for op in new_ops for b in op.output if b not in read_after))
        new_net = Net(new_proto)
        new_net._attr_dict.update(self._attr_dict)
        return new_net

    def ClonePartial(self, name, inputs, outputs, remap_funcs=None):
        """A copy of the ops of this net needed to compute ``outputs`` from ``inputs``, as Caffe2's.

        ``inputs``: a dict ``{blob of this net: its name in the copy}``, a list of such pairs, or a
        list of blobs (kept as they are). ``outputs``: a blob or a list of blobs this net defines.
        In the copy (a Net named ``name``, made unique), the blobs its ops make are prefixed
        ``name + '/'``; the blobs they read that no kept op writes (parameters) keep their names and
        become external inputs after the given inputs; the external outputs are the outputs, renamed.
        Returns ``(net, [BlobReference of each output in the copy])``. ValueError where an output is
        not defined in this net, or where an op needed for the outputs also leads to one of the
        inputs (the inputs would have to be computed); TypeError for other kinds of arguments
        (Caffe2 asserted)."""
        if isinstance(inputs, dict):
            pairs = list(inputs.items())
        elif isinstance(inputs, (list, tuple)):
            if inputs and all(isinstance(i, tuple) and len(i) == 2 for i in inputs):
                pairs = list(inputs)
            else:
                pairs = [(i, i) for i in inputs]
        else:
            raise TypeError("ClonePartial: inputs must be a dict, a list of (blob, new name) pairs or a "
                            "list of blobs, got %s" % type(inputs).__name__)
        input_names = {}
        for k, v in pairs:
            for b in (k, v):
                if not isinstance(b, (str, BlobReference)):
                    raise TypeError("ClonePartial: inputs must be blob names or BlobReferences, got %s: %r"
                                    % (type(b).__name__, b))
            if input_names.setdefault(str(k), str(v)) != str(v):
                raise ValueError("ClonePartial: input '%s' is given two names, '%s' and '%s'"
                                 % (k, input_names[str(k)], v))
        if isinstance(outputs, (str, BlobReference)):
            outputs = [outputs]
        if not isinstance(outputs, (list, tuple)) or \
                not all(isinstance(o, (str, BlobReference)) for o in outputs):
            raise TypeError("ClonePartial: outputs must be a blob or a list of blobs, got %r" % (outputs,))
        output_names = [str(o) for o in outputs]
        for o in output_names:
            if not self.BlobIsDefined(o):
                raise ValueError("ClonePartial: output '%s' is not defined in net '%s' (no op writes it "
                                 "and it is not an external input)" % (o, self.Name()))
        ssa, blob_versions = get_ssa(self._net, {b: 0 for b in input_names})
        used_op_ids = get_op_ids_in_path(ssa, blob_versions, list(input_names), output_names)
        input_op_ids = get_op_ids_in_path(ssa, blob_versions, [], list(input_names))
        both = sorted(set(used_op_ids) & set(input_op_ids))
        if both:
            raise ValueError("ClonePartial: cannot clone net '%s' partially: %s needed for the outputs %s "
                             "also lead to the inputs %s" % (
                                 self.Name(), ", ".join(_op_label(self._net.op[i], i) for i in both),
                                 output_names, list(input_names)))
        # blobs the kept ops read before any of them writes them, in op order
        undefined = dict.fromkeys(b for i in used_op_ids for b, version in ssa[i][0]
                                  if version == 0 and b not in input_names)
        prefix = name + "/" if name else ""

        def remap(b):
            if b in input_names:
                return input_names[b]
            return b if b in undefined else prefix + b

        blob_mapping = {b: remap(b) for b in blob_versions}
        new_net = self.Clone(name, blob_mapping, used_op_ids, remap_funcs)
        new_outputs = [blob_mapping[o] for o in output_names]
        proto = new_net.Proto()
        proto.external_input = list(dict.fromkeys(list(input_names.values()) + list(undefined)))
        proto.external_output = new_outputs
        return new_net, [new_net.GetBlobRef(o) for o in new_outputs]

    # ---- misc
    def set_rand_seed(self, seed=100, sequence_seed=True, seed_on_op_def=False):
        """Sets ``device_option.random_seed`` of every op (an op without a device option gets a CPU
        one): ``seed + i`` for op ``i`` with ``sequence_seed`` (the default), else with
        ``seed_on_op_def`` a hash of the op's text and ``seed``, modulo 2**32 - 1 (SHA-256 here, so
        the same op and seed give the same value in every process; Caffe2 used Python's ``hash``,
        salted per process), else ``seed`` for all. Both flags true is a ValueError (Caffe2
        asserted), as a seed outside [0, 2**32) (the field is uint32). Nothing is changed on error.

        The ops of this runtime do not read ``random_seed``: the random fills, Dropout and the
        other random ops are seeded by their ``seed`` argument (README), so the seed set here is
        kept in the NetDef (text and binary) but does not change what the ops draw."""
        if sequence_seed and seed_on_op_def:
            raise ValueError("set_rand_seed: sequence_seed and seed_on_op_def cannot both be True")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError("set_rand_seed: seed must be an int, got %s" % type(seed).__name__)
        seed = int(seed)
        seeds = []
        for i, op in enumerate(self._net.op):
            if sequence_seed:
                s = seed + i
            elif seed_on_op_def:
                digest = hashlib.sha256((str(op) + str(seed)).encode("utf-8")).digest()
                s = int.from_bytes(digest[:8], "little") % (2 ** 32 - 1)
            else:
                s = seed
            if not 0 <= s < 2 ** 32:
                raise ValueError("set_rand_seed: %s of net '%s' would get random_seed %d, outside "
                                 "[0, 2**32)" % (_op_label(op, i), self.Name(), s))
            seeds.append(s)
        for op, s in zip(self.Proto().op, seeds):
            op.device_option.random_seed = s

    def add_attribute(self, name, obj):
        self._attr_dict[name].append(obj)

    def get_attributes(self, name):
        return self._attr_dict.get(name, [])

    def RunAllOnGPU(self, gpu_id=0, use_cudnn=False):
        self._net.device_option = DeviceOption(DeviceType.CUDA, gpu_id)


# ---------------------------------------------------------------- plans
def get_net_name(netlike):
    """The name of a Net, a NetDef, or a name."""
    if isinstance(netlike, Net):
        return netlike.Name()
    if isinstance(netlike, NetDef):
        return netlike.name
    return str(netlike)


def _add_net_to_dict(net_dict, net):
    """Adds ``net`` under its name; False if that name is there already (the same Net: fine; a
    different Net of the same name: ValueError, as Caffe2's assertion)."""
    name = get_net_name(net)
    if name in net_dict:
        if net_dict[name] is not None and net is not net_dict[name]:
            raise ValueError("Different nets with same name: " + name)
        return False
    net_dict[name] = net if isinstance(net, Net) else None
    return True


class ExecutionStep:
    """A step of a plan under construction (Caffe2's core.ExecutionStep): an
    ``ExecutionStep`` proto (``Proto()``) plus the Net objects it runs.

    A step runs either nets (by name, each iteration all of them in order) or substeps, never
    both. Once added to a plan or to another step it is copied there, and it can no longer be
    changed (ValueError): the copy would not see the change. Step names are made unique per
    process only when none is given ('step', 'step_1', ...). ``workspace.RunPlan`` runs it."""

    _step_names_used = set()

    @staticmethod
    def _get_next_step_name(basename):
        name = basename
        next_idx = 1
        while name in ExecutionStep._step_names_used:
            name = "%s_%d" % (basename, next_idx)
            next_idx += 1
        ExecutionStep._step_names_used.add(name)
        return name

    def __init__(self, name, nets=None, num_iter=None):
        self._step = _ExecutionStepProto()
        self._step.name = name or ExecutionStep._get_next_step_name("step")
        self._net_dict = collections.OrderedDict()
        self._is_used = False
        self._substeps = []
        if nets is not None:
            if isinstance(nets, Net):
                nets = [nets]
            for net in nets:  # here (unlike AddNet) a net listed twice runs once per iteration
                if not isinstance(net, Net):
                    raise TypeError("ExecutionStep expects core.Nets, got %s" % type(net).__name__)
                if _add_net_to_dict(self._net_dict, net):
                    self._step.network.append(get_net_name(net))
        if num_iter is not None:
            self._step.num_iter = int(num_iter)

    def get_net(self, name):
        return self._net_dict[name]

    def Name(self):
        return self._step.name

    def __str__(self):
        return self._step.name

    def __repr__(self):
        return "ExecutionStep(%r)" % self._step.name

    def _assert_can_mutate(self):
        if self._is_used:
            raise ValueError("Cannot mutate a step that has already been added to a plan/step "
                             "(step '%s')." % self._step.name)

    def _notify_is_used(self):
        self._is_used = True

    def Proto(self):
        return self._step

    def HasNets(self):
        return len(self._step.network) > 0

    def HasSubsteps(self):
        return len(self._step.substep) > 0

    def Nets(self):
        return list(self._net_dict.values())

    def Substeps(self):
        return self._substeps

    def SetIter(self, num_iter):
        self._assert_can_mutate()
        self._step.num_iter = int(num_iter)

    def SetCreateWorkspace(self, create_workspace):
        self._assert_can_mutate()
        self._step.create_workspace = bool(create_workspace)

    def SetNumConcurrentInstances(self, num_concurrent_instances):
        self._assert_can_mutate()
        self._step.num_concurrent_instances = int(num_concurrent_instances)

    def SetOnlyOnce(self, only_once):
        self._assert_can_mutate()
        self._step.only_once = bool(only_once)

    def SetShouldStopBlob(self, should_stop_blob):
        """The step stops as soon as this blob (a 1-element bool tensor; int32 here) is true; it
        is read after every net or substep, never before the first. A str is accepted too
        (Caffe2 wanted a BlobReference)."""
        if not isinstance(should_stop_blob, (BlobReference, str)):
            raise TypeError("expects BlobReference here, got {}".format(type(should_stop_blob)))
        self._assert_can_mutate()
        self._step.should_stop_blob = str(should_stop_blob)

    def RunEveryMillis(self, interval):
        """Caffe2 ran such a substep every ``interval`` ms in a thread beside its siblings;
        this package runs one net at a time per workspace, so RunPlan refuses it on a substep
        (on a top-level step it is ignored, as in Caffe2)."""
        self._step.run_every_ms = int(interval)

    def SetReportNet(self, report_net, report_interval):
        """DEPRECATED in Caffe2 (use RunEveryMillis); refused by RunPlan, as RunEveryMillis."""
        self._assert_can_mutate()
        _add_net_to_dict(self._net_dict, report_net)
        self._step.report_net = get_net_name(report_net)
        self._step.report_interval = int(report_interval)

    def AddSubstep(self, substep):
        """Appends a copy of ``substep`` (an ExecutionStep, or an ExecutionStep proto); an
        ExecutionStep with neither nets nor substeps is skipped, as in Caffe2."""
        self._assert_can_mutate()
        if self.HasNets():
            raise ValueError("Cannot have both network and substeps (step '%s')." % self._step.name)
        if isinstance(substep, ExecutionStep):
            substep._notify_is_used()
            if not substep.HasNets() and not substep.HasSubsteps():
                return self
            for net in substep.Nets():
                _add_net_to_dict(self._net_dict, net)
            self._substeps.append(substep)
            proto = substep.Proto()
        elif isinstance(substep, _ExecutionStepProto):
            proto = substep
        else:
            raise TypeError("AddSubstep expects an ExecutionStep, got %s" % type(substep).__name__)
        self._step.substep.append(copy.deepcopy(proto))
        return self

    def SetConcurrentSubsteps(self, concurrent_substeps):
        """Caffe2 ran the substeps in threads of their own; RunPlan refuses it where there is
        more than one substep (one net at a time per workspace here)."""
        self._assert_can_mutate()
        if self.HasNets():
            raise ValueError("Cannot have both network and substeps (step '%s')." % self._step.name)
        self._step.concurrent_substeps = bool(concurrent_substeps)

    def AddNet(self, net):
        self._assert_can_mutate()
        if self.HasSubsteps():
            raise ValueError("Cannot have both network and substeps (step '%s')." % self._step.name)
        if not isinstance(net, Net):
            raise TypeError("ExecutionStep.AddNet expects a core.Net, got %s" % type(net).__name__)
        _add_net_to_dict(self._net_dict, net)
        self._step.network.append(get_net_name(net))
        return self

    def get_all_attributes(self, name):
        """The attributes ``name`` of every net of this step and its substeps."""
        return [attr for net in self._net_dict.values() if net is not None
                for attr in net.get_attributes(name)]

    @classmethod
    def create_from_proto(cls, step_proto, net_obj_dict, net_proto_dict):
        """An ExecutionStep from its proto, recursively; nets come from ``net_obj_dict`` (name ->
        Net), else are made from ``net_proto_dict`` (name -> NetDef) and added to it."""
        if not isinstance(step_proto, _ExecutionStepProto):
            raise TypeError("create_from_proto expects an ExecutionStep proto, got %s"
                            % type(step_proto).__name__)
        if bool(step_proto.network) == bool(step_proto.substep):
            raise ValueError("step '%s' must have either networks or substeps (it has %d and %d)"
                             % (step_proto.name, len(step_proto.network), len(step_proto.substep)))
        steps_or_nets = []
        if step_proto.substep:
            for substep_proto in step_proto.substep:
                steps_or_nets.append(ExecutionStep.create_from_proto(
                    substep_proto, net_obj_dict, net_proto_dict))
        else:
            for net_name in step_proto.network:
                if net_name not in net_obj_dict:
                    if net_name not in net_proto_dict:
                        raise KeyError("step '%s' uses net '%s', which the plan does not define"
                                       % (step_proto.name, net_name))
                    net_obj_dict[net_name] = Net(net_proto_dict[net_name])
                steps_or_nets.append(net_obj_dict[net_name])

        def opt(field):
            return getattr(step_proto, field) if step_proto.HasField(field) else None

        return execution_step(
            step_proto.name, steps_or_nets,
            num_iter=opt("num_iter"),
            concurrent_substeps=opt("concurrent_substeps"),
            should_stop_blob=BlobReference(step_proto.should_stop_blob) if opt("should_stop_blob") else None,
            only_once=opt("only_once"),
            num_concurrent_instances=opt("num_concurrent_instances"),
            create_workspace=opt("create_workspace"),
            run_every_ms=opt("run_every_ms"))


def add_nets_in_order(step, net_list):
    """Appends to ``net_list`` the names of the nets ``step`` runs, substeps first, each once."""
    proto = step.Proto()
    for substep in step.Substeps():
        add_nets_in_order(substep, net_list)
    for net in proto.network:
        if net not in net_list:
            net_list.append(net)
    if proto.report_net and proto.report_net not in net_list:
        net_list.append(proto.report_net)


class Plan:
    """A plan (Caffe2's core.Plan): a ``PlanDef`` (``Proto()``) holding top-level execution
    steps and a copy of every net they run. The nets are copied when a step is added, so a
    net changed afterwards runs as it was then. ``workspace.RunPlan(plan)`` runs it."""

    def __init__(self, name_or_step):
        self._plan = PlanDef()
        self._net_dict = collections.OrderedDict()
        self._steps = []
        if isinstance(name_or_step, ExecutionStep):
            self._plan.name = name_or_step.Name()
            self.AddStep(name_or_step)
        elif isinstance(name_or_step, str):
            self._plan.name = name_or_step
        else:
            raise ValueError("name_or_step must be a string or ExecutionStep")

    def __str__(self):
        return self._plan.name

    def __repr__(self):
        return "Plan(%r, %d steps)" % (self._plan.name, len(self._plan.execution_step))

    def Proto(self):
        return self._plan

    def AddNets(self, nets):
        """Adds a copy of each Net not in the plan yet (by name)."""
        for net in nets:
            if not isinstance(net, Net):
                raise TypeError("Plan.AddNets expects core.Nets, got %s" % type(net).__name__)
            if _add_net_to_dict(self._net_dict, net):
                self._plan.network.append(copy.deepcopy(net.Proto()))

    def AddNet(self, net):
        """Not in Caffe2's Plan (which has AddNets only): adds one net."""
        self.AddNets([net])

    def Nets(self):
        return list(self._net_dict.values())

    def AddStep(self, step):
        """Appends a copy of ``step`` and of its nets, in the order they first run; a step with
        neither nets nor substeps is skipped, as in Caffe2."""
        if not isinstance(step, ExecutionStep):
            raise TypeError("Plan.AddStep expects an ExecutionStep, got %s" % type(step).__name__)
        step._notify_is_used()
        if not step.HasNets() and not step.HasSubsteps():
            return
        self._plan.execution_step.append(copy.deepcopy(step.Proto()))
        self._steps.append(step)
        net_list = []
        add_nets_in_order(step, net_list)
        self.AddNets([step.get_net(n) for n in net_list])

    def Steps(self):
        return self._steps

    def get_all_attributes(self, name):
        """The attributes ``name`` of every net of this plan."""
        return [attr for net in self._net_dict.values() for attr in net.get_attributes(name)]

    @classmethod
    def create_from_proto(cls, plan_proto):
        """A Plan rebuilt from a PlanDef: its steps, over new Nets made from its NetDefs (which,
        as every Net, take a suffix where their name is in use in this process: '_1', ...)."""
        if not isinstance(plan_proto, PlanDef):
            raise TypeError("create_from_proto expects a PlanDef, got %s" % type(plan_proto).__name__)
        plan = Plan(plan_proto.name)
        net_obj_dict = {}
        net_proto_dict = {}
        for net_proto in plan_proto.network:
            if net_proto.name in net_proto_dict:
                raise ValueError("plan '%s' holds two nets named '%s'" % (plan_proto.name, net_proto.name))
            net_proto_dict[net_proto.name] = net_proto
        for step_proto in plan_proto.execution_step:
            plan.AddStep(ExecutionStep.create_from_proto(step_proto, net_obj_dict, net_proto_dict))
        return plan


def to_execution_step(step_or_nets, default_name=None):
    """``step_or_nets`` itself if it is an ExecutionStep, else a step running it."""
    if isinstance(step_or_nets, ExecutionStep):
        return step_or_nets
    if not default_name and isinstance(step_or_nets, Net):
        default_name = step_or_nets.Name()
    return execution_step(default_name, step_or_nets)


def execution_step(default_name, steps_or_nets, num_iter=None, report_net=None, report_interval=None,
                   concurrent_substeps=None, should_stop_blob=None, only_once=None,
                   num_concurrent_instances=None, create_workspace=False, run_every_ms=None):
    """An ExecutionStep, as Caffe2's helper. ``steps_or_nets``: None, a Net, an ExecutionStep,
    or a list of Nets (run in order each iteration) or of steps (Nets in a mixed list become
    steps of their own). With neither ``num_iter`` nor ``should_stop_blob`` the step runs
    once; with ``should_stop_blob`` (never with ``num_iter``) it runs until the blob is true,
    checked AFTER every net or substep (never before the first), or just once with
    ``only_once=True``."""
    if should_stop_blob is not None and num_iter is not None:
        raise ValueError("Cannot set both should_stop_blob and num_iter.")
    if should_stop_blob is None and num_iter is None:
        num_iter = 1
    step = ExecutionStep(default_name)
    if should_stop_blob is not None:
        step.SetShouldStopBlob(should_stop_blob)
    if num_iter is not None:
        step.SetIter(num_iter)
    if only_once is not None:
        step.SetOnlyOnce(only_once)
    if concurrent_substeps is not None:
        step.SetConcurrentSubsteps(concurrent_substeps)
    if report_net is not None:
        if report_interval is None:
            raise ValueError("report_net needs report_interval")
        step.SetReportNet(report_net, report_interval)
    if num_concurrent_instances is not None:
        step.SetNumConcurrentInstances(num_concurrent_instances)
    if create_workspace:
        step.SetCreateWorkspace(True)
    if run_every_ms:
        step.RunEveryMillis(run_every_ms)
    if isinstance(steps_or_nets, ExecutionStep):
        step.AddSubstep(steps_or_nets)
    elif isinstance(steps_or_nets, Net):
        step.AddNet(steps_or_nets)
    elif isinstance(steps_or_nets, list):
        if all(isinstance(x, Net) for x in steps_or_nets):
            for x in steps_or_nets:
                step.AddNet(x)
        else:
            for x in steps_or_nets:
                step.AddSubstep(to_execution_step(x))
    elif steps_or_nets:
        raise ValueError("steps_or_nets must be a step, a net, or a list of nets or steps.")
    return step


def scoped_execution_step(name, *args, **kwargs):
    """Same as execution_step() except that the step name is scoped."""
    default_name = ScopedName(name) if name else name
    return execution_step(default_name, *args, **kwargs)


# ---------------------------------------------------------------- gradient makers
def _load_gradient_modules():
    """Imports every recurrent/_grad_*.py so their makers register."""
    pkg_dir = os.path.dirname(os.path.abspath(__file__))
    for info in sorted(pkgutil.iter_modules([pkg_dir]), key=lambda m: m.name):
        if info.name.startswith("_grad_"):
            importlib.import_module("." + info.name, __package__)


_load_gradient_modules()


def __getattr__(name):
    # ``core.C``: Caffe2's core imported its C extension as ``C`` (``core.C.registered_dbs()`` ...);
    # here it is ``workspace.C``, looked up late since workspace imports this module.
    if name == "C":
        from . import workspace
        return workspace.C
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
