"""NetDef-like plain data: NetDef, OperatorDef, Argument, DeviceOption, and the plan
messages ExecutionStep and PlanDef.

These mirror the protobuf messages Caffe2 used (same field names), as plain
Python objects. ``to_c()`` turns them into the tuples the C binding reads;
``str()`` gives protobuf text format (see ``text_format``).
"""

import numbers

import numpy as np


class _Message:
    """What the message classes share: field-wise ``==`` against the same class,
    protobuf's ``HasField`` (set: neither None nor "") and ``CopyFrom`` (a deep copy)."""

    __slots__ = ()

    def HasField(self, field):
        if field == "device_option" and hasattr(type(self), "_device_option"):
            return self._device_option is not None
        return getattr(self, field) not in (None, "")

    def CopyFrom(self, other):
        import copy
        for k in self.__slots__:
            setattr(self, k, copy.deepcopy(getattr(other, k)))

    def __eq__(self, other):
        return isinstance(other, type(self)) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)


class DeviceOption(_Message):
    """Mirrors caffe2.proto.DeviceOption (device_type 0 = CPU, 1 = CUDA)."""

    __slots__ = ("device_type", "device_id", "random_seed")

    def __init__(self, device_type=0, device_id=0, random_seed=None):
        self.device_type = int(device_type)
        self.device_id = int(device_id)
        self.random_seed = random_seed


class _UnsetDeviceOption(DeviceOption):
    """What an op's or net's ``device_option`` reads as while it is unset: a default DeviceOption (as
    protobuf gives), which becomes the owner's field when it is changed, so that Caffe2's
    ``op.device_option.CopyFrom(d)`` and ``net.Proto().device_option.device_type = 1`` work. Until then
    the field stays unset: ``HasField('device_option')`` is False and ``device_of`` gives None."""

    __slots__ = ("_owner",)

    def __init__(self, owner):
        object.__setattr__(self, "_owner", owner)
        for k, v in (("device_type", 0), ("device_id", 0), ("random_seed", None)):
            object.__setattr__(self, k, v)

    def __setattr__(self, name, value):
        owner = self._owner
        if owner is None:
            object.__setattr__(self, name, value)
            return
        if owner._device_option is None:  # the first change sets the owner's field
            owner._device_option = DeviceOption(self.device_type, self.device_id, self.random_seed)
        setattr(owner._device_option, name, value)  # this object keeps reading the field

    def __getattribute__(self, name):
        if name in ("device_type", "device_id", "random_seed"):
            owner = object.__getattribute__(self, "_owner")
            if owner is not None and owner._device_option is not None:
                return getattr(owner._device_option, name)
        return object.__getattribute__(self, name)

    def CopyFrom(self, other):
        for k in DeviceOption.__slots__:
            setattr(self, k, getattr(other, k))

    def __eq__(self, other):
        return isinstance(other, DeviceOption) and all(
            getattr(self, k) == getattr(other, k) for k in DeviceOption.__slots__)

    __hash__ = None

    def __deepcopy__(self, memo):
        return DeviceOption(self.device_type, self.device_id, self.random_seed)

    def __reduce__(self):
        return (DeviceOption, (self.device_type, self.device_id, self.random_seed))


def device_of(msg):
    """An OperatorDef's or NetDef's device option as set, or None when unset (protobuf's
    ``msg.device_option if msg.HasField('device_option') else None``)."""
    return msg._device_option


def _device_option_field():
    def get(self):
        d = self._device_option
        return d if d is not None else _UnsetDeviceOption(self)

    def set_(self, value):
        if isinstance(value, _UnsetDeviceOption):
            value = device_of(value._owner) if value._owner is not None else None
            value = None if value is None else DeviceOption(value.device_type, value.device_id, value.random_seed)
        self._device_option = value

    return property(get, set_, doc="protobuf-style: reads as a default DeviceOption while unset")



class Argument(_Message):
    """One named operator argument; exactly one of f, i, s, n (scalars) or
    floats, ints, strings, nets (lists) carries the value."""

    __slots__ = ("name", "f", "i", "s", "n", "floats", "ints", "strings", "nets")

    def __init__(self, name=""):
        self.name = name
        self.f = None
        self.i = None
        self.s = None
        self.n = None
        self.floats = []
        self.ints = []
        self.strings = []
        self.nets = []

    def HasField(self, field):
        return getattr(self, field) is not None

    def kind(self):
        for k in ("f", "i", "s", "n"):
            if getattr(self, k) is not None:
                return k
        for k in ("floats", "ints", "strings", "nets"):
            if getattr(self, k):
                return k
        return "ints"

    def value(self):
        k = self.kind()
        return getattr(self, k)

    def __repr__(self):
        return "Argument(%s=%r)" % (self.name, self.value())


def make_argument(name, value):
    """Caffe2's utils.MakeArgument: picks the field from the Python type."""
    a = Argument(name)
    if isinstance(value, np.ndarray):
        value = value.ravel().tolist()
    if isinstance(value, (bool, np.bool_)):
        a.i = int(value)
    elif isinstance(value, numbers.Integral):
        a.i = int(value)
    elif isinstance(value, numbers.Real):
        a.f = float(value)
    elif isinstance(value, bytes):
        a.s = value.decode()
    elif isinstance(value, str):
        a.s = value
    elif isinstance(value, NetDef):
        a.n = value
    elif hasattr(value, "Proto") and callable(value.Proto):
        a.n = value.Proto()
    elif isinstance(value, (list, tuple)):
        vals = list(value)
        if all(isinstance(v, (bool, np.bool_, numbers.Integral)) for v in vals):
            a.ints = [int(v) for v in vals]
        elif all(isinstance(v, numbers.Real) for v in vals):
            a.floats = [float(v) for v in vals]
        elif all(isinstance(v, (str, bytes)) for v in vals):
            a.strings = [v.decode() if isinstance(v, bytes) else v for v in vals]
        elif all(isinstance(v, NetDef) for v in vals):
            a.nets = vals
        else:
            raise TypeError("argument '%s': a list must hold only ints, floats, strings or NetDefs, got %r"
                            % (name, vals))
    else:
        raise TypeError("argument '%s': unsupported value type %s" % (name, type(value).__name__))
    return a


class OperatorDef(_Message):
    """Mirrors caffe2.proto.OperatorDef."""

    __slots__ = ("type", "name", "input", "output", "arg", "control_input", "_device_option", "engine",
                 "is_gradient_op", "debug_info")
    device_option = _device_option_field()

    def __init__(self, type="", inputs=(), outputs=(), name=""):
        self.type = type
        self.name = name
        self.input = [str(i) for i in inputs]
        self.output = [str(o) for o in outputs]
        self.arg = []
        self.control_input = []
        self.device_option = None
        self.engine = ""
        self.is_gradient_op = False
        self.debug_info = ""

    def __str__(self):
        from . import text_format
        return text_format.op_to_text(self)

    __repr__ = __str__

    def to_c(self):
        dev = self._device_option.device_type if self._device_option is not None else 0
        return (self.type, self.name or "", [str(b) for b in self.input], [str(b) for b in self.output],
                [str(b) for b in self.control_input], [_arg_to_c(a) for a in self.arg], int(dev))


class NetDef(_Message):
    """Mirrors caffe2.proto.NetDef."""

    __slots__ = ("name", "type", "op", "external_input", "external_output", "_device_option", "num_workers", "arg")
    device_option = _device_option_field()

    def __init__(self, name=""):
        self.name = name
        self.type = ""
        self.op = []
        self.external_input = []
        self.external_output = []
        self.device_option = None
        self.num_workers = None
        self.arg = []

    def __str__(self):
        from . import text_format
        return text_format.net_to_text(self)

    __repr__ = __str__

    def to_c(self):
        return (self.name or "", self.type or "", [op.to_c() for op in self.op],
                [str(b) for b in self.external_input], [str(b) for b in self.external_output])


class ExecutionStep(_Message):
    """Mirrors caffe2.proto.ExecutionStep: either ``substep`` (ExecutionSteps) or ``network``
    (net names, defined in the plan's ``network``), never both. Optional scalars are None while
    unset (protobuf's has-bit: ``HasField('only_once')`` is True for an ``only_once`` set to
    False, and the plan executor reads it so). ``recurrent.workspace.RunPlan`` runs it."""

    __slots__ = ("name", "substep", "network", "num_iter", "criteria_network", "concurrent_substeps",
                 "report_net", "report_interval", "should_stop_blob", "only_once", "run_every_ms",
                 "create_workspace", "num_concurrent_instances")

    def __init__(self, name=""):
        self.name = name
        self.substep = []
        self.network = []
        self.num_iter = None
        self.criteria_network = ""
        self.concurrent_substeps = None
        self.report_net = ""
        self.report_interval = None
        self.should_stop_blob = ""
        self.only_once = None
        self.run_every_ms = None
        self.create_workspace = None
        self.num_concurrent_instances = None

    def __str__(self):
        from . import text_format
        return text_format.message_to_text(self)

    __repr__ = __str__


class PlanDef(_Message):
    """Mirrors caffe2.proto.PlanDef: the NetDefs the steps name (copies, taken when a step was
    added to a ``core.Plan``) and the top-level execution steps, run in order."""

    __slots__ = ("name", "network", "execution_step")

    def __init__(self, name=""):
        self.name = name
        self.network = []
        self.execution_step = []

    def __str__(self):
        from . import text_format
        return text_format.message_to_text(self)

    __repr__ = __str__


def _arg_to_c(a):
    k = a.kind()
    v = a.value()
    if k == "n":
        v = v.to_c()
    elif k == "nets":
        v = [n.to_c() for n in v]
    elif k in ("floats", "ints", "strings"):
        v = list(v)
    return (a.name, k, v)


class caffe2_pb2:
    """Stands in for ``caffe2.proto.caffe2_pb2``, so ``from caffe2.proto import
    caffe2_pb2`` ports as ``from recurrent.proto import caffe2_pb2``: the
    message classes above (the plans' ExecutionStep and PlanDef too) and Caffe2's
    device-type constants (CPU = 0, CUDA = 1, MKLDNN = 2, OPENGL = 3, OPENCL = 4,
    IDEEP = 5, HIP = 6; this package runs on the CPU only, and an op asking for
    another device is refused when it runs)."""

    NetDef = NetDef
    OperatorDef = OperatorDef
    ExecutionStep = ExecutionStep
    PlanDef = PlanDef
    Argument = Argument
    DeviceOption = DeviceOption
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
