"""NetDef-like plain data: NetDef, OperatorDef, Argument, DeviceOption, the plan
messages ExecutionStep and PlanDef, and the tensor messages TensorProto (with its Segment),
TensorProtos, TensorShape, TensorShapes, QTensorProto and BlobProto.

These mirror the protobuf messages Caffe2 used (same field names and numbers), as plain
Python objects. ``to_c()`` turns the net messages into the tuples the C binding reads;
``str()`` gives protobuf text format (see ``text_format``; the tensor messages print through
``message_text`` here); ``SerializeToString()`` / ``ParseFromString(b)`` the protobuf binary wire
format, byte for byte as google.protobuf's ``caffe2_pb2`` (see ``_wire``).

Tensors and blobs: ``serialize_tensor_blob(name, array)`` gives the bytes of Caffe2's
``workspace.SerializeBlob`` for a CPU tensor (a minidb record's value as the Save op writes it),
``deserialize_tensor_blob(data, name=None)`` reads such bytes back into a float32 / int32 array;
``recurrent.utils`` has Caffe2's ``NumpyArrayToCaffe2Tensor`` / ``Caffe2TensorToNumpyArray``.
"""

import copy
import math
import numbers

import numpy as np

from . import _wire
# ValueErrors, where google.protobuf raises its message.DecodeError / EncodeError
from ._wire import DecodeError, EncodeError  # noqa: F401


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
        (always deterministic: fields in field-number order). A required field left unset (only
        ``TensorProto.Segment`` and ``QTensorProto`` have them) raises ``EncodeError``."""
        return _wire.encode(self)

    def SerializePartialToString(self, deterministic=None):
        """``SerializeToString`` without the check of required fields."""
        return _wire.encode(self, partial=True)

    def ByteSize(self):
        """The length of ``SerializePartialToString()``."""
        return len(_wire.encode(self, partial=True))

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
            setattr(new, f.attr, list(v) if f.repeated and not isinstance(v, _wire.RepeatedNumber) else v)
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

    def ClearField(self, field):
        """Resets the field named ``field`` to its unset default (ValueError for a name the
        message does not have, as google.protobuf)."""
        f = _field_named(self, field)
        setattr(self, f.attr, getattr(self._wire.cls(), f.attr))

    def _take_fields(self, other):
        for f in self._wire.fields:
            setattr(self, f.attr, getattr(other, f.attr))

    def __eq__(self, other):
        return isinstance(other, type(self)) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)


class DeviceOption(_Message):
    """Mirrors caffe2.proto.DeviceOption (device_type 0 = CPU, 1 = CUDA): ``device_type``,
    ``device_id``, ``random_seed`` (None while unset), ``node_name`` ("" while unset),
    ``numa_node_id`` (None while unset) and ``extra_info`` (a list of str). The runtime reads only
    ``device_type`` and ``random_seed``; the other fields are carried through copies, pickles, the
    text and binary formats, and scopes (``scope.DeviceScope``), as Caffe2's."""

    __slots__ = ("device_type", "device_id", "random_seed", "node_name", "numa_node_id", "extra_info")

    def __init__(self, device_type=0, device_id=0, random_seed=None, node_name="", numa_node_id=None,
                 extra_info=()):
        self.device_type = int(device_type)
        self.device_id = int(device_id)
        self.random_seed = random_seed
        self.node_name = node_name
        self.numa_node_id = numa_node_id
        self.extra_info = list(extra_info)

    def HasField(self, field):
        """Whether the singular field ``field`` is set (ValueError for ``extra_info``, a repeated
        field, or a name the message does not have, as google.protobuf)."""
        f = _field_named(self, field)
        if f.repeated:
            raise ValueError('Protocol message DeviceOption has no singular "%s" field.' % field)
        return _wire._is_set(self._wire, f, getattr(self, f.attr))


def _copy_device_option(d):
    """A new DeviceOption holding the fields of ``d`` (its own ``extra_info`` list)."""
    return DeviceOption(d.device_type, d.device_id, d.random_seed, d.node_name, d.numa_node_id,
                        d.extra_info)


class _UnsetExtraInfo(list):
    """``extra_info`` of an unset device option (empty): adding to it sets the owner's field, as
    ``op.device_option.extra_info.append(s)`` does in protobuf."""

    __slots__ = ("_unset",)

    def _real(self):
        unset = self._unset
        owner = object.__getattribute__(unset, "_owner")
        if owner._device_option is None:
            owner._device_option = _copy_device_option(unset)
        return owner._device_option.extra_info

    def append(self, value):
        self._real().append(value)

    def extend(self, values):
        self._real().extend(values)

    def insert(self, index, value):
        self._real().insert(index, value)

    def __setitem__(self, index, value):
        self._real()[index] = value

    def __iadd__(self, values):
        real = self._real()
        real.extend(values)
        return real

    def __copy__(self):
        return list(self)

    def __deepcopy__(self, memo):
        return list(self)

    def __reduce_ex__(self, protocol):
        return (list, (list(self),))


_DEVICE_OPTION_FIELDS = frozenset(DeviceOption.__slots__)


class _UnsetDeviceOption(DeviceOption):
    """What an op's or net's ``device_option`` reads as while it is unset: a default DeviceOption (as
    protobuf gives), which becomes the owner's field when it is changed, so that Caffe2's
    ``op.device_option.CopyFrom(d)``, ``net.Proto().device_option.device_type = 1`` and
    ``op.device_option.extra_info.append(s)`` work. Until then the field stays unset:
    ``HasField('device_option')`` is False and ``device_of`` gives None."""

    __slots__ = ("_owner",)

    def __init__(self, owner):
        object.__setattr__(self, "_owner", owner)
        for k, v in (("device_type", 0), ("device_id", 0), ("random_seed", None), ("node_name", ""),
                     ("numa_node_id", None)):
            object.__setattr__(self, k, v)
        extra = _UnsetExtraInfo() if owner is not None else []
        if owner is not None:
            extra._unset = self
        object.__setattr__(self, "extra_info", extra)

    def __setattr__(self, name, value):
        owner = self._owner
        if owner is None:
            object.__setattr__(self, name, value)
            return
        if owner._device_option is None:  # the first change sets the owner's field
            owner._device_option = _copy_device_option(self)
        setattr(owner._device_option, name, value)  # this object keeps reading the field

    def __getattribute__(self, name):
        if name in _DEVICE_OPTION_FIELDS:
            owner = object.__getattribute__(self, "_owner")
            if owner is not None and owner._device_option is not None:
                return getattr(owner._device_option, name)
        return object.__getattribute__(self, name)

    def CopyFrom(self, other):
        for k in DeviceOption.__slots__:
            setattr(self, k, copy.deepcopy(getattr(other, k)))

    def Clear(self):
        if self._owner is None or self._owner._device_option is not None:
            DeviceOption.Clear(self)  # an unset field already reads as cleared: it stays unset

    def ClearField(self, field):
        f = _field_named(self, field)
        if self._owner is None or self._owner._device_option is not None:
            setattr(self, f.attr, getattr(DeviceOption(), f.attr))

    def __eq__(self, other):
        return isinstance(other, DeviceOption) and all(
            getattr(self, k) == getattr(other, k) for k in DeviceOption.__slots__)

    __hash__ = None

    def __deepcopy__(self, memo):
        return _copy_device_option(self)

    def __reduce__(self):
        return (DeviceOption, (self.device_type, self.device_id, self.random_seed, self.node_name,
                               self.numa_node_id, list(self.extra_info)))


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
            value = None if value is None else _copy_device_option(value)
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

    def to_c(self, default_device_option=None):
        """The tuple the C binding reads. The device option is the op's, or ``default_device_option``
        (its net's) when it has none, as Caffe2's nets gave their ops. Its ``random_seed`` becomes the
        op's ``seed`` argument when the op has none: the random ops here read ``seed`` (Caffe2's
        seeded their context's generator with ``random_seed``)."""
        opt = self._device_option if self._device_option is not None else default_device_option
        dev = opt.device_type if opt is not None else 0
        args = [_arg_to_c(a, opt) for a in self.arg]
        seed = getattr(opt, "random_seed", None)
        if seed is not None and not any(a.name == "seed" for a in self.arg):
            args.append(("seed", "i", int(seed)))
        return (self.type, self.name or "", [str(b) for b in self.input], [str(b) for b in self.output],
                [str(b) for b in self.control_input], args, int(dev or 0))


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

    def to_c(self, default_device_option=None):
        """The tuple the C binding reads; ops without a device option get the net's (or, for a step
        net held by an op's argument, ``default_device_option``: that op's)."""
        opt = self._device_option if self._device_option is not None else default_device_option
        return (self.name or "", self.type or "", [op.to_c(opt) for op in self.op],
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
    (1, "device_type", _I32, False), (2, "device_id", _I32, False), (3, "random_seed", _U32, False),
    (4, "node_name", _S, False), (5, "numa_node_id", _I32, False), (6, "extra_info", _S, True)])
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


# ---------------------------------------------------------------- tensor messages
# TensorProto, its Segment, TensorProtos, TensorShape(s), QTensorProto and BlobProto, as in
# caffe2/proto/caffe2.proto. Unlike the classes above (kept as they were), their fields behave
# as google.protobuf's: an optional scalar reads its proto default while unset (``data_type`` reads
# FLOAT) and ``HasField`` tells whether it is set; repeated numeric fields are list-like
# ``RepeatedNumber`` containers (NumPy-backed, converting what is added; assigning a list or an
# array replaces the values); a message field is None while unset; constructors take fields as
# keyword arguments (``TensorProto(dims=[2], data_type=TensorProto.FLOAT, float_data=[1, 2])``).
_NO_DEFAULT = object()


def _field_named(msg, name):
    for f in msg._wire.fields:
        if f.name == name:
            return f
    raise ValueError('Protocol message %s has no "%s" field.' % (type(msg).__name__, name))


class _Optional:
    """An optional scalar field held in the slot ``storage`` (None while unset): reads ``default``
    while unset; an enum field takes only the enum's values."""

    def __init__(self, name, storage, default, enum=None):
        self.name, self.storage, self.default, self.enum = name, storage, default, enum

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = getattr(obj, self.storage)
        return self.default if value is None else value

    def __set__(self, obj, value):
        if self.enum is not None and value is not None:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
                    int(value) not in self.enum:
                raise ValueError("%s.%s: %r is not a %s value (%s)" % (
                    type(obj).__name__, self.name, value, self.enum.full_name,
                    ", ".join("%s = %d" % kv for kv in self.enum.items())))
            value = int(value)
        setattr(obj, self.storage, value)

    def __delete__(self, obj):
        setattr(obj, self.storage, None)


class _Repeated:
    """A repeated numeric field held in the slot ``storage`` as a RepeatedNumber; assigning a
    list, tuple, iterable or 1-D array replaces its values (converted and checked)."""

    def __init__(self, name, storage):
        self.name, self.storage = name, storage

    def __get__(self, obj, cls=None):
        return self if obj is None else getattr(obj, self.storage)

    def __set__(self, obj, values):
        old = getattr(obj, self.storage)
        setattr(obj, self.storage, _wire.RepeatedNumber(old._kind, values, old._label))


class EnumType:
    """A protobuf enum as google.protobuf's EnumTypeWrapper gives it
    (``caffe2_pb2.TensorProto.DataType``): the values as attributes (``DataType.FLOAT == 1``),
    ``Name(value)``, ``Value(name)``, ``keys()``, ``values()``, ``items()``, ``in``."""

    def __init__(self, full_name, pairs):
        self.full_name = full_name
        self._by_name = dict(pairs)
        self._by_value = {}
        for k, v in pairs:
            self._by_value.setdefault(v, k)

    def __getattr__(self, name):
        try:
            return self.__dict__["_by_name"][name]
        except KeyError:
            raise AttributeError("enum %s has no value named %r"
                                 % (self.__dict__.get("full_name"), name)) from None

    def Name(self, number):
        """The name of ``number`` (ValueError for a number the enum does not have)."""
        try:
            return self._by_value[number]
        except (KeyError, TypeError):
            raise ValueError("Enum %s has no name defined for value %r" % (self.full_name, number)) from None

    def Value(self, name):
        """The number named ``name`` (ValueError for a name the enum does not have)."""
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            raise ValueError("Enum %s has no value defined for name %r" % (self.full_name, name)) from None

    def keys(self):
        return list(self._by_name)

    def values(self):
        return list(self._by_name.values())

    def items(self):
        return list(self._by_name.items())

    def __contains__(self, value):
        return value in self._by_value

    def __iter__(self):
        return iter(self._by_name)

    def __repr__(self):
        return "<enum %s: %s>" % (self.full_name, ", ".join("%s = %d" % kv for kv in self.items()))


class _TensorMessage(_Message):
    """What the tensor messages share: keyword constructors, protobuf-style field defaults (see
    the section), ``HasField`` by presence, and ``str()`` in protobuf text format."""

    __slots__ = ()

    def __init__(self, **fields):
        for storage, make in type(self)._initial:
            setattr(self, storage, make())
        for name, value in fields.items():
            setattr(self, _field_named(self, name).name, value)

    def HasField(self, field):
        """Whether the singular field ``field`` is set (ValueError for a repeated or unknown one)."""
        f = _field_named(self, field)
        if f.repeated:
            raise ValueError('Protocol message %s has no singular "%s" field.' % (type(self).__name__, field))
        return _wire._is_set(self._wire, f, getattr(self, f.attr))

    def __str__(self):
        return message_text(self)

    __repr__ = __str__


def _define(cls, full_name, fields):
    """Declares the tensor message ``cls``: its wire table, the descriptors of its optional
    scalar and repeated numeric fields, and the initial value of every slot. ``fields`` are
    ``(number, name, kind, repeated, options)``; ``options`` are _wire.declare's plus ``default``
    (what an optional scalar reads while unset) and ``enum`` as an EnumType."""
    table, attrs, initial = [], {}, []
    for number, name, kind, repeated, options in fields:
        options = dict(options)
        default = options.pop("default", _NO_DEFAULT)
        enum = options.get("enum")
        if enum is not None:
            options["enum"] = dict((v, k) for k, v in reversed(enum.items()))
        label = "field '%s' of %s" % (name, full_name)
        if repeated and kind in _wire._NUMERIC:
            storage = "_" + name
            setattr(cls, name, _Repeated(name, storage))
            initial.append((storage, lambda kind=kind, label=label: _wire.RepeatedNumber(kind, (), label)))
        elif repeated:
            storage = name
            initial.append((storage, list))
        elif isinstance(kind, type):
            storage = name
            initial.append((storage, lambda: None))
        elif kind == _wire.STRING:
            storage = name
            initial.append((storage, str))
        else:
            storage = "_" + name
            if default is _NO_DEFAULT:
                default = {_wire.RAW: b"", _wire.BOOL: False, _wire.DOUBLE: 0.0,
                           _wire.FLOAT: 0.0}.get(kind, 0)
            setattr(cls, name, _Optional(name, storage, default, enum))
            initial.append((storage, lambda: None))
        if storage != name:
            attrs[name] = storage
        table.append((number, name, kind, repeated, options))
    if sorted(cls.__slots__) != sorted(s for s, _ in initial):
        raise AssertionError("%s: slots %s do not match its fields %s"
                             % (cls.__name__, cls.__slots__, [s for s, _ in initial]))
    cls._initial = tuple(initial)
    _wire.declare(cls, full_name, table, unset_bool_is_none=True, attrs=attrs)


_DATA_TYPES = (("UNDEFINED", 0), ("FLOAT", 1), ("INT32", 2), ("BYTE", 3), ("STRING", 4), ("BOOL", 5),
               ("UINT8", 6), ("INT8", 7), ("UINT16", 8), ("INT16", 9), ("INT64", 10), ("FLOAT16", 12),
               ("DOUBLE", 13), ("ZERO_COLLISION_HASH", 14), ("REBATCHING_BUFFER", 15))
_SERIALIZATION_FORMATS = (("FMT_PROTOBUF", 0), ("FMT_BFLOAT16", 1))


class TensorProto(_TensorMessage):
    """Mirrors caffe2.proto's TensorProto (a serialized tensor): ``dims``; ``data_type`` (a
    ``TensorProto.DataType``, FLOAT while unset); the data in the field its type uses
    (``float_data``, ``int32_data`` (INT32, and BOOL / UINT8 / INT8 / UINT16 / INT16 / FLOAT16 bits),
    ``byte_data``, ``string_data`` (bytes), ``double_data``, ``int64_data``, ``raw_data``
    (little-endian bytes)); ``name``; ``device_detail`` (a DeviceOption); ``segment`` (a
    ``TensorProto.Segment``: which elements a chunk holds); ``data_format`` (a
    ``TensorProto.SerializationFormat`` number). float_data, int32_data, double_data and
    int64_data are written packed, as ``[packed = true]`` in caffe2.proto.

    The DataType values are class attributes too, as google.protobuf gives them: UNDEFINED 0,
    FLOAT 1, INT32 2, BYTE 3, STRING 4, BOOL 5, UINT8 6, INT8 7, UINT16 8, INT16 9, INT64 10,
    FLOAT16 12, DOUBLE 13, ZERO_COLLISION_HASH 14, REBATCHING_BUFFER 15; and FMT_PROTOBUF 0,
    FMT_BFLOAT16 1. Assigning ``data_type`` a number the enum lacks is a ValueError; one read from
    the wire is kept as it is (and refused by the conversions to NumPy)."""

    __slots__ = ("_dims", "_data_type", "_data_format", "_float_data", "_int32_data", "_byte_data",
                 "string_data", "_double_data", "_int64_data", "_raw_data", "name", "device_detail",
                 "segment")

    DataType = EnumType("caffe2.TensorProto.DataType", _DATA_TYPES)
    SerializationFormat = EnumType("caffe2.TensorProto.SerializationFormat", _SERIALIZATION_FORMATS)

    class Segment(_TensorMessage):
        """Mirrors caffe2.proto's TensorProto.Segment: the chunk holds the elements [begin, end)
        of the flattened tensor. Both fields are required: serializing without them raises
        EncodeError."""

        __slots__ = ("_begin", "_end")


for _k, _v in _DATA_TYPES + _SERIALIZATION_FORMATS:
    setattr(TensorProto, _k, _v)


class TensorProtos(_TensorMessage):
    """Mirrors caffe2.proto's TensorProtos: a list of TensorProto (``protos``)."""

    __slots__ = ("protos",)


class TensorShape(_TensorMessage):
    """Mirrors caffe2.proto's TensorShape: ``dims``, ``data_type`` (FLOAT while unset),
    ``unknown_dims``, ``unknown_shape`` (False while unset), ``name``."""

    __slots__ = ("_dims", "_data_type", "_unknown_dims", "_unknown_shape", "name")


class TensorShapes(_TensorMessage):
    """Mirrors caffe2.proto's TensorShapes: a list of TensorShape (``shapes``)."""

    __slots__ = ("shapes",)


class QTensorProto(_TensorMessage):
    """Mirrors caffe2.proto's QTensorProto (a quantized tensor, as BlobProto.qtensor holds it):
    ``dims``, ``precision``, ``scale``, ``bias``, ``is_signed`` (these four required), ``data``
    (packed), ``name``, ``data_type`` (INT32 while unset), ``scales``, ``biases``, ``axis``,
    ``is_multiparam``. Held and (de)serialized only: nothing here computes with it."""

    __slots__ = ("_dims", "_precision", "_scale", "_bias", "_is_signed", "_data", "name", "_data_type",
                 "_scales", "_biases", "_axis", "_is_multiparam")


class BlobProto(_TensorMessage):
    """Mirrors caffe2.proto's BlobProto (a serialized blob, as Caffe2's SerializeBlob and the
    minidb records hold it): ``name``, ``type`` ("Tensor" for tensors), ``tensor`` (a
    TensorProto), ``content`` (bytes, for other blob types), ``qtensor`` (a QTensorProto),
    ``content_num_chunks``, ``content_chunk_id``. (The ``tensor_torch`` field of some Caffe2
    versions is not kept: it is skipped as an unknown field.)"""

    __slots__ = ("name", "type", "tensor", "_content", "qtensor", "_content_num_chunks", "_content_chunk_id")


def _detail_device_option():
    """The DeviceOption a ``device_detail`` reads into: device_id unset (None), so that the
    ``device_detail { device_type: 0 }`` Caffe2 writes reserializes to the same bytes."""
    d = DeviceOption()
    d.device_id = None
    return d


_EMPTY = {}
_PACKED = {"packed": True}
_define(TensorProto.Segment, "caffe2.TensorProto.Segment", [
    (1, "begin", _I64, False, {"required": True}), (2, "end", _I64, False, {"required": True})])
_define(TensorProto, "caffe2.TensorProto", [
    (1, "dims", _I64, True, _EMPTY),
    (2, "data_type", _I32, False, {"enum": TensorProto.DataType, "default": TensorProto.FLOAT}),
    (3, "float_data", _F, True, _PACKED), (4, "int32_data", _I32, True, _PACKED),
    (5, "byte_data", _wire.RAW, False, _EMPTY), (6, "string_data", _wire.RAW, True, _EMPTY),
    (7, "name", _S, False, _EMPTY), (8, "device_detail", DeviceOption, False, {"new": _detail_device_option}),
    (9, "double_data", _wire.DOUBLE, True, _PACKED), (10, "int64_data", _I64, True, _PACKED),
    (11, "segment", TensorProto.Segment, False, _EMPTY), (13, "raw_data", _wire.RAW, False, _EMPTY),
    (15, "data_format", _U32, False, _EMPTY)])
_define(TensorProtos, "caffe2.TensorProtos", [(1, "protos", TensorProto, True, _EMPTY)])
_define(TensorShape, "caffe2.TensorShape", [
    (1, "dims", _I64, True, _EMPTY),
    (2, "data_type", _I32, False, {"enum": TensorProto.DataType, "default": TensorProto.FLOAT}),
    (3, "unknown_dims", _I32, True, _EMPTY), (4, "unknown_shape", _BOOL, False, _EMPTY),
    (5, "name", _S, False, _EMPTY)])
_define(TensorShapes, "caffe2.TensorShapes", [(1, "shapes", TensorShape, True, _EMPTY)])
_define(QTensorProto, "caffe2.QTensorProto", [
    (1, "dims", _I64, True, _EMPTY), (2, "precision", _I32, False, {"required": True}),
    (3, "scale", _wire.DOUBLE, False, {"required": True}),
    (4, "bias", _wire.DOUBLE, False, {"required": True}),
    (5, "is_signed", _BOOL, False, {"required": True}), (6, "data", _I32, True, _PACKED),
    (7, "name", _S, False, _EMPTY),
    (8, "data_type", _I32, False, {"enum": TensorProto.DataType, "default": TensorProto.INT32}),
    (9, "scales", _wire.DOUBLE, True, _EMPTY), (10, "biases", _wire.DOUBLE, True, _EMPTY),
    (11, "axis", _I32, False, _EMPTY), (12, "is_multiparam", _BOOL, False, _EMPTY)])
_define(BlobProto, "caffe2.BlobProto", [
    (1, "name", _S, False, _EMPTY), (2, "type", _S, False, _EMPTY), (3, "tensor", TensorProto, False, _EMPTY),
    (4, "content", _wire.RAW, False, _EMPTY), (5, "qtensor", QTensorProto, False, _EMPTY),
    (6, "content_num_chunks", _I32, False, _EMPTY), (7, "content_chunk_id", _I32, False, _EMPTY)])


# ---------------------------------------------------------------- text format of the tensor messages
def message_text(msg):
    """Protobuf text format of any message here, driven by its wire table (what
    ``text_format.MessageToString`` gives for the older classes): fields in field-number order,
    floats as the shortest decimal that reads back as the same float32, doubles as Python's
    ``str`` of them (as google.protobuf prints them), strings and bytes C-escaped, enums by name
    (a number the enum lacks as the number)."""
    out = []
    _print_text(msg, 0, out)
    return "".join(out)


def _print_text(msg, indent, out):
    from .text_format import _c_escape, format_float
    schema = _wire.schema_of(msg)
    pad = "  " * indent
    for field in schema.fields:
        value = getattr(msg, field.attr)
        if not _wire._is_set(schema, field, value):
            continue
        for v in (value if field.repeated else (value,)):
            if field.message:
                out.append("%s%s {\n" % (pad, field.name))
                _print_text(v, indent + 1, out)
                out.append("%s}\n" % pad)
                continue
            kind = field.kind
            if kind in (_wire.STRING, _wire.BYTES, _wire.RAW):
                text = '"%s"' % _c_escape(v)
            elif kind == _wire.FLOAT:
                text = format_float(v)
            elif kind == _wire.DOUBLE:
                text = str(float(v))
            elif kind == _wire.BOOL:
                text = "true" if v else "false"
            elif field.enum is not None and v in field.enum:
                text = field.enum[v]
            else:
                text = str(int(v))
            out.append("%s%s: %s\n" % (pad, field.name, text))


# ---------------------------------------------------------------- NumPy arrays <-> TensorProto
# The data type and data field of each NumPy dtype, as Caffe2's TensorSerializer writes them (its
# default flags): FLOAT float_data, DOUBLE double_data, INT32 int32_data, INT64 int64_data, BOOL /
# UINT8 / INT8 / UINT16 / INT16 their values in int32_data, FLOAT16 its bits (as uint16) in
# int32_data, STRING string_data. (kind, itemsize) -> DataType.
_DATA_TYPE_OF = {("f", 4): TensorProto.FLOAT, ("f", 8): TensorProto.DOUBLE, ("f", 2): TensorProto.FLOAT16,
                 ("i", 4): TensorProto.INT32, ("i", 8): TensorProto.INT64, ("i", 2): TensorProto.INT16,
                 ("i", 1): TensorProto.INT8, ("u", 2): TensorProto.UINT16, ("u", 1): TensorProto.UINT8,
                 ("b", 1): TensorProto.BOOL}
# the types whose values int32_data (or, little-endian, byte_data) holds: DataType -> dtype of the values
_SMALL_TYPES = {TensorProto.BOOL: np.dtype(np.bool_), TensorProto.UINT8: np.dtype(np.uint8),
                TensorProto.INT8: np.dtype(np.int8), TensorProto.UINT16: np.dtype("<u2"),
                TensorProto.INT16: np.dtype("<i2"), TensorProto.FLOAT16: np.dtype("<f2")}
# the types held in a repeated field (or raw_data): DataType -> (field, little-endian dtype)
_WIDE_TYPES = {TensorProto.FLOAT: ("float_data", np.dtype("<f4")),
               TensorProto.DOUBLE: ("double_data", np.dtype("<f8")),
               TensorProto.INT32: ("int32_data", np.dtype("<i4")),
               TensorProto.INT64: ("int64_data", np.dtype("<i8"))}
_SUPPORTED_DTYPES = "float16/32/64, int8/16/32/64, uint8/16, bool and strings (bytes or str)"


def _type_name(data_type):
    if data_type in TensorProto.DataType:
        return "%s (%d)" % (TensorProto.DataType.Name(data_type), data_type)
    return "%d (not a TensorProto.DataType)" % data_type


def _array_to_tensor(arr, who):
    """A new TensorProto holding ``arr`` (dims, data_type and the data field, as Caffe2's
    TensorSerializer writes them; see _DATA_TYPE_OF); ``who`` names it in errors: TypeError for
    something not an array and for a dtype Caffe2 has no data type for."""
    if isinstance(arr, np.generic):
        arr = np.asarray(arr)
    if not isinstance(arr, np.ndarray):
        raise TypeError("%s: expected a NumPy array, got %s" % (who, type(arr).__name__))
    dt = arr.dtype
    flat = arr.reshape(-1)
    t = TensorProto(dims=arr.shape)
    data_type = _DATA_TYPE_OF.get((dt.kind, dt.itemsize))
    if data_type is not None:
        t.data_type = data_type
        if data_type in _WIDE_TYPES:
            setattr(t, _WIDE_TYPES[data_type][0], flat)
        elif data_type == TensorProto.FLOAT16:
            t.int32_data = flat.astype(np.float16).view(np.uint16).astype(np.int32)
        else:
            t.int32_data = flat.astype(np.int32)
    elif dt.kind in "SUO":
        values = flat.tolist()
        for i, v in enumerate(values):
            if isinstance(v, str):
                values[i] = v.encode("utf-8")
            elif not isinstance(v, bytes):
                raise TypeError("%s: a string tensor holds only bytes and str, element %d is a %s"
                                % (who, i, type(v).__name__))
        t.data_type = TensorProto.STRING
        t.string_data = values
    else:
        raise TypeError("%s: dtype %s has no Caffe2 data type (%s have)" % (who, dt, _SUPPORTED_DTYPES))
    return t


def _tensor_to_array(t, who):
    """The NumPy array a TensorProto holds, of the dtype its data_type names (FLOAT float32,
    DOUBLE float64, INT32 int32, INT64 int64, BOOL bool, UINT8 / BYTE uint8, INT8 int8, UINT16
    uint16, INT16 int16, FLOAT16 float16, STRING an object array of bytes), read from the field
    Caffe2's deserializer reads (see _DATA_TYPE_OF; BOOL .. FLOAT16 from byte_data when it is
    set, FLOAT / DOUBLE / INT32 / INT64 from raw_data when it is set, as the minidb Load reads
    them; FLOAT with data_format FMT_BFLOAT16 from raw_data). ``who`` names it in errors:
    ValueError for a negative dim, a segment that is not [0, numel), data in two fields, a data
    length that does not match the dims, a value out of its type's range, an unsupported
    data_format; TypeError for a data type with no array (UNDEFINED, ZERO_COLLISION_HASH,
    REBATCHING_BUFFER, numbers outside the enum)."""
    if not isinstance(t, TensorProto):
        raise TypeError("%s: expected a TensorProto, got %s" % (who, type(t).__name__))
    dims = t.dims.tolist()
    for d in dims:
        if d < 0:
            raise ValueError("%s: negative dim %d in dims %s" % (who, d, dims))
    numel = math.prod(dims)
    if t.segment is not None and (t.segment.begin, t.segment.end) != (0, numel):
        raise ValueError("%s: its segment [%d, %d) does not cover the whole tensor ([0, %d) for dims %s): "
                         "a chunk of a larger tensor" % (who, t.segment.begin, t.segment.end, numel, dims))
    data_type, fmt = t.data_type, t.data_format
    if data_type not in _WIDE_TYPES and data_type not in _SMALL_TYPES and \
            data_type not in (TensorProto.BYTE, TensorProto.STRING):
        raise TypeError("%s: data type %s has no NumPy array here (%s have)" % (who, _type_name(data_type),
                                                                              _SUPPORTED_DTYPES))
    if fmt != TensorProto.FMT_PROTOBUF and \
            not (fmt == TensorProto.FMT_BFLOAT16 and data_type == TensorProto.FLOAT):
        raise ValueError("%s: data_format %d is not supported for data type %s (FMT_PROTOBUF (0) is, and "
                         "FMT_BFLOAT16 (1) for FLOAT)" % (who, fmt, _type_name(data_type)))
    has_raw, has_bytes = t.HasField("raw_data"), t.HasField("byte_data")

    def from_bytes(data, field, dtype):
        if len(data) % dtype.itemsize:
            raise ValueError("%s: %s of %d bytes is not a whole number of %d-byte values"
                             % (who, field, len(data), dtype.itemsize))
        return np.frombuffer(data, dtype).astype(dtype.newbyteorder("=")), field

    if data_type in _WIDE_TYPES:
        field, wire_dtype = _WIDE_TYPES[data_type]
        held = getattr(t, field)
        if has_raw and len(held):
            raise ValueError("%s: both %s and raw_data hold data" % (who, field))
        if fmt == TensorProto.FMT_BFLOAT16:
            if len(held):
                raise ValueError("%s: data_format FMT_BFLOAT16 (1) keeps FLOAT data in raw_data, but "
                                 "float_data holds %d values" % (who, len(held)))
            bits, field = from_bytes(t.raw_data, "raw_data (bfloat16)", np.dtype("<u2"))
            values = (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
        elif has_raw:
            values, field = from_bytes(t.raw_data, "raw_data", wire_dtype)
        else:
            values = held._view().copy()
    elif data_type in _SMALL_TYPES:
        dtype = _SMALL_TYPES[data_type]
        held = t.int32_data
        if has_bytes and len(held):
            raise ValueError("%s: both int32_data and byte_data hold data" % who)
        if has_bytes:
            raw = t.byte_data
            if data_type == TensorProto.BOOL:  # one byte a value, any nonzero byte true
                raw = np.frombuffer(raw, np.uint8).astype(bool).tobytes()
            values, field = from_bytes(raw, "byte_data", dtype)
        else:
            field, held = "int32_data", held._view()
            if data_type == TensorProto.BOOL:
                values = held != 0
            else:
                lo, hi = (0, 0xFFFF) if data_type == TensorProto.FLOAT16 else \
                    (np.iinfo(dtype).min, np.iinfo(dtype).max)
                bad = np.flatnonzero((held < lo) | (held > hi))
                if len(bad):
                    raise ValueError("%s: int32_data value %d at element %d is out of the range of %s "
                                     "([%d, %d])" % (who, held[bad[0]], bad[0], _type_name(data_type),
                                                     lo, hi))
                values = held.astype(np.uint16).view(np.float16) if data_type == TensorProto.FLOAT16 \
                    else held.astype(dtype.newbyteorder("="))
    elif data_type == TensorProto.BYTE:
        values, field = from_bytes(t.byte_data, "byte_data", np.dtype(np.uint8))
    else:  # STRING
        field = "string_data"
        values = np.empty(len(t.string_data), object)
        values[:] = [bytes(s) for s in t.string_data]
    if len(values) != numel:
        raise ValueError("%s: %s holds %d values, its dims %s need %d"
                         % (who, field, len(values), dims, numel))
    return values.reshape(dims)


# ---------------------------------------------------------------- blob serialization
def serialize_tensor_blob(name, array):
    """The bytes Caffe2's ``workspace.SerializeBlob(name)`` gives for a CPU tensor blob holding
    ``array``: a BlobProto with ``name``, ``type: "Tensor"`` and the TensorProto Caffe2's
    TensorSerializer writes without chunking: dims, data_type, the data field (float32 in
    float_data, int32 in int32_data, packed; other dtypes as NumpyArrayToCaffe2Tensor puts them),
    name, ``device_detail { device_type: 0 }`` and ``segment { begin: 0 end: <numel> }``, in
    field-number order. These are the bytes of a minidb record the Save op writes for an
    unchunked blob. TypeError for a name that is not a str, something not an array or a dtype
    with no Caffe2 data type; ValueError for an empty name."""
    if not isinstance(name, str):
        raise TypeError("serialize_tensor_blob: the blob name must be a str, got %s" % type(name).__name__)
    if not name:
        raise ValueError("serialize_tensor_blob: the blob name is empty")
    t = _array_to_tensor(array, "serialize_tensor_blob: blob '%s'" % name)
    t.name = name
    t.device_detail = _detail_device_option()
    t.segment = TensorProto.Segment(begin=0, end=math.prod(t.dims.tolist()))
    return BlobProto(name=name, type="Tensor", tensor=t).SerializeToString()


def deserialize_tensor_blob(data, name=None):
    """The NumPy array (float32 or int32) of a serialized tensor blob (a BlobProto, as
    ``serialize_tensor_blob``, Caffe2's ``SerializeBlob`` and a minidb record hold it), read as
    Caffe2's ``DeserializeBlob`` reads it (see ``_tensor_to_array`` for the fields of each data
    type), then converted as ``workspace.FeedBlob`` converts: FLOAT and INT32 as they are, DOUBLE
    and FLOAT16 to float32 (a finite value beyond float32's range is a ValueError), INT64, INT16,
    INT8, UINT16, UINT8, BYTE and BOOL to int32 (a value beyond int32 is a ValueError). A tensor
    of data type UNDEFINED and no elements reads as an empty float32 array of shape (0,), as
    Caffe2's. Errors name the blob (``name`` when given, else the BlobProto's): TypeError for a
    blob whose type is not "Tensor" and for a STRING or other non-numeric tensor; ValueError
    (DecodeError for malformed bytes) for bytes that do not parse, a BlobProto without a tensor,
    a segment without its required begin / end or not covering the whole tensor (a chunk), data
    lengths that do not match the dims, negative dims, an unsupported data_format."""
    blob = BlobProto()
    try:
        blob.ParseFromString(data)
    except DecodeError as e:
        if name is None:
            raise
        raise DecodeError("blob '%s': %s" % (name, e)) from None
    who = "blob '%s'" % (name if name is not None else blob.name)
    if blob.type != "Tensor":
        raise TypeError("%s is of type '%s', not 'Tensor': only tensor blobs deserialize to arrays"
                        % (who, blob.type))
    t = blob.tensor
    if t is None:
        raise ValueError("%s: its BlobProto of type 'Tensor' holds no tensor" % who)
    seg = t.segment
    if seg is not None and not (seg.HasField("begin") and seg.HasField("end")):
        raise ValueError("%s: its segment lacks the required %s (Caffe2 cannot parse such a BlobProto)"
                         % (who, "begin" if not seg.HasField("begin") else "end"))
    if t.data_type == TensorProto.STRING:
        raise TypeError("%s holds a STRING tensor: only numeric tensors can be held here (float32 and int32)"
                        % who)
    dims = t.dims.tolist()
    if t.data_type == TensorProto.UNDEFINED and 0 in dims and min(dims) >= 0:  # Caffe2's empty legacy tensor
        return np.zeros((0,), np.float32)
    arr = _tensor_to_array(t, who)
    if arr.dtype in (np.float32, np.int32):
        return arr
    what = _type_name(t.data_type)
    if arr.dtype.kind == "f":
        with np.errstate(over="ignore"):
            out = arr.astype(np.float32)
        bad = np.flatnonzero(np.isfinite(arr) & ~np.isfinite(out))
        if len(bad):
            raise ValueError("%s: %s value %r at element %d is beyond float32's range"
                             % (who, what, arr.reshape(-1)[bad[0]].item(), bad[0]))
        return out
    flat = arr.reshape(-1)
    bad = np.flatnonzero((flat < -2 ** 31) | (flat > 2 ** 31 - 1)) if arr.dtype.kind != "b" else ()
    if len(bad):
        raise ValueError("%s: %s value %d at element %d does not fit in int32"
                         % (who, what, flat[bad[0]], bad[0]))
    return arr.astype(np.int32)


def _arg_to_c(a, device_option=None):
    k = a.kind()
    v = a.value()
    if k == "n":
        v = v.to_c(device_option)
    elif k == "nets":
        v = [n.to_c(device_option) for n in v]
    elif k in ("floats", "ints", "strings"):
        v = list(v)
    return (a.name, k, v)


class caffe2_pb2:
    """Stands in for ``caffe2.proto.caffe2_pb2``, so ``from caffe2.proto import
    caffe2_pb2`` ports as ``from recurrent.proto import caffe2_pb2``: the
    message classes above (the plans' ExecutionStep and PlanDef, the tensor messages
    TensorProto, TensorProtos, TensorShape, TensorShapes, QTensorProto and BlobProto too) and
    Caffe2's device-type constants (CPU = 0, CUDA = 1, MKLDNN = 2, OPENGL = 3, OPENCL = 4,
    IDEEP = 5, HIP = 6; this package runs on the CPU only, and an op asking for
    another device is refused when it runs)."""

    TensorProto = TensorProto
    TensorProtos = TensorProtos
    TensorShape = TensorShape
    TensorShapes = TensorShapes
    QTensorProto = QTensorProto
    BlobProto = BlobProto
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
