"""NetDef-like plain data: NetDef, OperatorDef, Argument, DeviceOption, and the plan
messages ExecutionStep and PlanDef.

These mirror the protobuf messages Caffe2 used (same field names), as plain
Python objects. ``to_c()`` turns them into the tuples the C binding reads;
``str()`` gives protobuf text format (see ``text_format``); ``SerializeToString()`` /
``ParseFromString(b)`` the protobuf binary wire format, byte for byte as google.protobuf's
``caffe2_pb2`` (see ``_wire``).
"""

import copy
import numbers

import numpy as np

from . import _wire
from ._wire import DecodeError  # noqa: F401  (a ValueError; google.protobuf's message.DecodeError)


class _Message:
    """What the message classes share: field-wise ``==`` against the same class,
    protobuf's ``HasField`` (set: neither None nor "") and ``CopyFrom`` (a deep copy)."""

    __slots__ = ()

    def HasField(self, field):
        if field == "device_option" and hasattr(type(self), "_device_option"):
            return self._device_option is not None
        return getattr(self, field) not in (None, "")

    def CopyFrom(self, other):
        for k in self.__slots__:
            setattr(self, k, copy.deepcopy(getattr(other, k)))

    # ---- protobuf binary wire format (recurrent/_wire.py)
    def SerializeToString(self, deterministic=None):
        """The message in protobuf's binary wire format (bytes), as google.protobuf writes it
        (always deterministic: fields in field-number order)."""
        return _wire.encode(self)

    SerializePartialToString = SerializeToString  # proto2 without required fields: the same

    def ByteSize(self):
        """The length of ``SerializeToString()``."""
        return len(_wire.encode(self))

    def ParseFromString(self, data):
        """Replaces the message's content with the wire-format ``data`` (bytes-like); returns
        the number of bytes read, as google.protobuf. Malformed bytes raise ``DecodeError`` (a
        ValueError naming the message and the byte offset) and leave the message as it was."""
        fresh = self._wire.cls()
        n = _wire.decode(fresh, data)
        self._take_fields(fresh)
        return n

    def MergeFromString(self, data):
        """Merges the wire-format ``data`` into the message, as protobuf does: scalars read
        replace the message's, repeated fields are appended to, a nested message read is merged
        into the message's own. Returns the number of bytes read; malformed bytes raise
        ``DecodeError`` and leave the message as it was."""
        new = self._wire.cls()
        for f in self._wire.fields:
            v = copy.deepcopy(getattr(self, f.attr))
            setattr(new, f.attr, list(v) if f.repeated else v)
        n = _wire.decode(new, data)
        self._take_fields(new)
        return n

    @classmethod
    def FromString(cls, data):
        """A new message parsed from the wire-format ``data``."""
        msg = cls._wire.cls()
        _wire.decode(msg, data)
        return msg

    def Clear(self):
        """Resets every field to its unset default."""
        self._take_fields(self._wire.cls())

    def _take_fields(self, other):
        for f in self._wire.fields:
            setattr(self, f.attr, getattr(other, f.attr))

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


# ---------------------------------------------------------------- wire tables
# Field numbers and types of caffe2/proto/caffe2.proto (the fields these classes hold).
_S, _B, _I32, _I64, _U32, _BOOL, _F = (_wire.STRING, _wire.BYTES, _wire.INT32, _wire.INT64, _wire.UINT32,
                                       _wire.BOOL, _wire.FLOAT)
_wire.declare(DeviceOption, "caffe2.DeviceOption", [
    (1, "device_type", _I32, False), (2, "device_id", _I32, False), (3, "random_seed", _U32, False)])
_wire.declare(Argument, "caffe2.Argument", [
    (1, "name", _S, False), (2, "f", _F, False), (3, "i", _I64, False), (4, "s", _B, False),
    (5, "floats", _F, True), (6, "ints", _I64, True), (7, "strings", _B, True),
    (8, "n", NetDef, False), (9, "nets", NetDef, True)])
_wire.declare(OperatorDef, "caffe2.OperatorDef", [
    (1, "input", _S, True), (2, "output", _S, True), (3, "name", _S, False), (4, "type", _S, False),
    (5, "arg", Argument, True), (6, "device_option", DeviceOption, False), (7, "engine", _S, False),
    (8, "control_input", _S, True), (9, "is_gradient_op", _BOOL, False), (10, "debug_info", _S, False)],
    attrs={"device_option": "_device_option"})
_wire.declare(NetDef, "caffe2.NetDef", [
    (1, "name", _S, False), (2, "op", OperatorDef, True), (3, "type", _S, False),
    (4, "num_workers", _I32, False), (5, "device_option", DeviceOption, False), (6, "arg", Argument, True),
    (7, "external_input", _S, True), (8, "external_output", _S, True)],
    attrs={"device_option": "_device_option"})
_wire.declare(ExecutionStep, "caffe2.ExecutionStep", [
    (1, "name", _S, False), (2, "substep", ExecutionStep, True), (3, "network", _S, True),
    (4, "num_iter", _I64, False), (5, "criteria_network", _S, False),
    (6, "concurrent_substeps", _BOOL, False), (7, "report_net", _S, False),
    (8, "report_interval", _I32, False), (9, "should_stop_blob", _S, False),
    (10, "only_once", _BOOL, False), (11, "run_every_ms", _I64, False),
    (12, "create_workspace", _BOOL, False), (13, "num_concurrent_instances", _I32, False)],
    unset_bool_is_none=True)
_wire.declare(PlanDef, "caffe2.PlanDef", [
    (1, "name", _S, False), (2, "network", NetDef, True), (3, "execution_step", ExecutionStep, True)])


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
