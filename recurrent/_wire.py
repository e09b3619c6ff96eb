"""Protobuf binary wire format (proto2) for the plain message classes of ``recurrent.proto``.

One table-driven codec: each message class declares its fields once (``declare``: field number,
name, kind, repeated), and ``encode`` / ``decode`` walk those tables. The bytes are those
google.protobuf writes for the same message: fields in field-number order, unset optional fields
left out, repeated scalars unpacked (proto2 without ``[packed=true]``) unless the field is declared
packed, floats as fixed32, doubles as fixed64, int32 / int64 as varints (negatives as 10-byte two's
complement), strings UTF-8, nested messages length-delimited. "Set" means what the text format
prints (``recurrent.text_format``): a field holding None, an empty string field, an empty list, and
a False ``OperatorDef.is_gradient_op`` are unset; a ``bytes`` field (``Argument.s``) holding "" is
set, and so are a DeviceOption's ``device_type`` / ``device_id`` (always ints here, as Caffe2's
``core.DeviceOption`` set them). So bytes from elsewhere that set a field to a default these
objects cannot tell from unset (an explicit empty name, ``is_gradient_op: false``) reserialize
without it, and a DeviceOption whose ``device_id`` was unset reserializes with ``device_id: 0``;
otherwise what google.protobuf wrote reserializes to the same bytes (unknown fields aside: they are
dropped).

Decoding accepts any valid encoding: fields in any order or repeated (the last scalar wins, a
singular message field seen twice is merged, as protobuf does), repeated scalars packed or not,
unknown fields (skipped, groups too: they are not kept). Malformed bytes raise ``DecodeError`` (a
ValueError) naming the message, the path of the field and the byte offset: a truncated varint or
fixed-width value, a length past the end of its message, a varint longer than 10 bytes, field
number 0, wire types 6 / 7, an end-group tag without its start, a known field with a wire type its
type cannot have (protobuf would keep such a field as an unknown one; here it is an error), a
string field that is not UTF-8 (google.protobuf accepts it in proto2 and gives bytes), and messages
nested deeper than ``MAX_DEPTH``. In the net messages a float reads as the decimal the text format
prints for it, the shortest (of 6 digits or more) that is the same float32 (0.1, not
google.protobuf's 0.10000000149011612; the bits are the same); bytes fields (``Argument.s`` /
``strings``) read as str, bytes that are not UTF-8 kept as surrogate escapes (``s.encode("utf-8",
"surrogateescape")`` gives them back).

The tensor messages (``TensorProto`` and the rest) add: ``double`` fields (fixed64), ``raw`` bytes
fields (``bytes`` in the proto, held as Python bytes, not str: ``byte_data``, ``raw_data``,
``string_data``, ``BlobProto.content``), enum fields (int32 on the wire; the names are for the text
format), ``required`` fields (``Segment.begin`` / ``end``: serializing without them raises
``EncodeError``, as google.protobuf; parsing accepts their absence, as google.protobuf's Python
``ParseFromString`` does), and ``[packed = true]`` repeated scalars, written packed (one
length-delimited run, as google.protobuf writes them). Their repeated numeric fields are
``RepeatedNumber`` containers (list-like, NumPy-backed): packed runs are encoded and decoded with
NumPy (``tobytes`` / ``frombuffer``, varints vectorized), never element by element, and decoded
floats keep their float32 value (0.10000000149011612, as google.protobuf gives it). A message field
may name what it reads into (``new``): ``TensorProto.device_detail`` reads into a DeviceOption whose
``device_id`` stays None unless the bytes hold one, so the ``device_detail { device_type: 0 }``
Caffe2 writes reserializes unchanged.
"""

import math
import operator
import struct

import numpy as np

MAX_DEPTH = 100  # levels of messages below the top one, as google.protobuf (upb) allows

# scalar kinds; a field whose kind is a class holds messages of that class
STRING, BYTES, INT32, INT64, UINT32, BOOL = "string", "bytes", "int32", "int64", "uint32", "bool"
FLOAT, DOUBLE, RAW = "float", "double", "raw"
_VARINT, _FIXED64, _LEN, _SGROUP, _EGROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
_WIRE_TYPE = {STRING: _LEN, BYTES: _LEN, RAW: _LEN, INT32: _VARINT, INT64: _VARINT, UINT32: _VARINT,
              BOOL: _VARINT, FLOAT: _FIXED32, DOUBLE: _FIXED64}
_NUMERIC = (INT32, INT64, UINT32, BOOL, FLOAT, DOUBLE)
_RANGES = {INT32: (-2 ** 31, 2 ** 31 - 1), INT64: (-2 ** 63, 2 ** 63 - 1), UINT32: (0, 2 ** 32 - 1)}
_WIRE_NAMES = ("varint", "fixed64", "length-delimited", "start-group", "end-group", "fixed32", "6", "7")
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")
_INF = float("inf")


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the message (a ValueError, where google.protobuf
    raises its ``message.DecodeError``)."""


class EncodeError(ValueError):
    """A message that cannot be serialized because a required field is unset (a ValueError, where
    google.protobuf raises its ``message.EncodeError``)."""


class _Field:
    __slots__ = ("number", "name", "attr", "kind", "repeated", "wire_type", "tag", "message", "packed",
                 "required", "enum", "new", "packed_tag")

    def __init__(self, number, name, kind, repeated, attr, options=None):
        options = dict(options or ())
        self.number, self.name, self.kind, self.repeated = number, name, kind, repeated
        self.attr = attr or name
        self.message = isinstance(kind, type)
        self.wire_type = _LEN if self.message else _WIRE_TYPE[kind]
        self.tag = _varint(number << 3 | self.wire_type)
        self.packed = bool(options.pop("packed", False))
        if self.packed and not (repeated and kind in _NUMERIC):
            raise ValueError("field '%s': only repeated numeric fields can be packed" % name)
        self.packed_tag = _varint(number << 3 | _LEN)
        self.required = bool(options.pop("required", False))
        self.enum = options.pop("enum", None)  # {value: name}, for the text format
        self.new = options.pop("new", kind if self.message else None)  # makes a message read from the wire
        if options:
            raise ValueError("field '%s': unknown options %s" % (name, sorted(options)))


class _Schema:
    """A message class's fields, in field-number order and by number."""

    __slots__ = ("cls", "full_name", "fields", "by_number", "unset_bool_is_none")

    def __init__(self, cls, full_name, fields, unset_bool_is_none):
        self.cls, self.full_name, self.unset_bool_is_none = cls, full_name, unset_bool_is_none
        self.fields = sorted(fields, key=lambda f: f.number)
        self.by_number = {f.number: f for f in self.fields}


def declare(cls, full_name, fields, unset_bool_is_none=False, attrs=None):
    """Gives ``cls`` its wire table: ``fields`` are ``(number, name, kind, repeated)`` or
    ``(number, name, kind, repeated, options)`` with options ``packed`` (a repeated numeric field
    written packed), ``required`` (serializing without it is an EncodeError), ``enum`` ({value:
    name} for the text format) and ``new`` (makes the message a message field reads; default its
    class); ``attrs`` maps a field name to the attribute holding it (``device_option`` ->
    ``_device_option``); ``unset_bool_is_none``: the class's optional bools are None while unset,
    so a False is set."""
    attrs = attrs or {}
    table = [_Field(f[0], f[1], f[2], f[3], attrs.get(f[1]), f[4] if len(f) > 4 else None) for f in fields]
    cls._wire = _Schema(cls, full_name, table, unset_bool_is_none)


def schema_of(msg_or_cls):
    """The wire table of a message (or message class); TypeError for anything else."""
    cls = msg_or_cls if isinstance(msg_or_cls, type) else type(msg_or_cls)
    schema = getattr(cls, "_wire", None)
    if schema is None:
        raise TypeError("%s has no protobuf wire format" % cls.__name__)
    return schema


# ---------------------------------------------------------------- repeated numbers
_DTYPES = {FLOAT: np.dtype(np.float32), DOUBLE: np.dtype(np.float64), INT32: np.dtype(np.int32),
           INT64: np.dtype(np.int64), UINT32: np.dtype(np.uint32), BOOL: np.dtype(np.bool_)}
_WIRE_DTYPES = {FLOAT: np.dtype("<f4"), DOUBLE: np.dtype("<f8")}
_FLOAT32_MAX = float(np.finfo(np.float32).max)


class RepeatedNumber:
    """A repeated numeric field of the tensor messages: a list-like container (``append``,
    ``extend``, ``insert``, ``pop``, ``remove``, ``sort``, ``reverse``, ``clear``, indexing and
    slicing, ``len``, iteration, ``==`` against lists and other containers) holding its values in a
    NumPy array of the field's type (float32, float64, int32, int64, uint32 or bool), as
    google.protobuf's RepeatedScalarContainer does: a value is converted when it is added (a float
    field takes numbers and stores them as float32 / float64, a float beyond float32's range
    becoming infinity; an integer field takes integers, not floats or bools, in its range), so
    ``t.float_data[0]`` reads 0.10000000149011612 after ``append(0.1)``. ``extend`` and
    assignment take lists, tuples, iterables and 1-D NumPy arrays (converted as a whole, not
    element by element); ``numpy.asarray(c)`` gives a copy of the values. Bad values raise
    TypeError / ValueError naming the field and leave the container as it was."""

    __slots__ = ("_kind", "_dtype", "_buf", "_n", "_label")

    def __init__(self, kind, values=(), label=None):
        if kind not in _DTYPES:
            raise ValueError("RepeatedNumber: kind %r is not numeric" % (kind,))
        self._kind, self._dtype = kind, _DTYPES[kind]
        self._label = label or "a repeated %s field" % kind
        self._buf = np.empty(0, self._dtype)
        self._n = 0
        self.extend(values)

    # ---- conversion
    def _coerce(self, values):
        """``values`` as a 1-D array of the field's dtype, checked (see the class)."""
        seq = None
        if isinstance(values, RepeatedNumber):
            arr = values._view()
            if values._kind == self._kind:
                return arr.copy()
        elif isinstance(values, np.ndarray):
            arr = values
        else:
            if isinstance(values, (str, bytes, bytearray)) or not hasattr(values, "__iter__"):
                raise TypeError("%s takes a sequence of numbers, got %s"
                                % (self._label, type(values).__name__))
            seq = values if isinstance(values, (list, tuple)) else list(values)
            if not seq:
                return np.empty(0, self._dtype)
            try:
                arr = np.asarray(seq)
            except (ValueError, TypeError):  # ragged: each value says what is wrong with it
                arr = np.empty(len(seq), object)
        if arr.ndim == 1 and arr.dtype.kind == "O":
            items = seq if seq is not None else arr.tolist()
            return np.array([self._scalar(v) for v in items], self._dtype)
        if seq is not None and self._kind not in (FLOAT, DOUBLE, BOOL) and arr.dtype.kind in "iu" and \
                any(isinstance(v, (bool, np.bool_)) for v in seq):
            raise TypeError("%s holds integers, got a bool" % self._label)
        if arr.ndim != 1:
            raise TypeError("%s takes a flat sequence of numbers, got an array of shape %s"
                            % (self._label, arr.shape))
        if arr.size == 0:
            return np.empty(0, self._dtype)
        k = arr.dtype.kind
        if self._kind in (FLOAT, DOUBLE):
            if k not in "fiub":
                raise TypeError("%s holds numbers, got %s values" % (self._label, arr.dtype))
            with np.errstate(over="ignore"):  # beyond float32: infinity, as protobuf stores it
                return arr.astype(self._dtype)
        if self._kind == BOOL:
            if k not in "iub":
                raise TypeError("%s holds bools, got %s values" % (self._label, arr.dtype))
            return arr.astype(self._dtype)
        if k == "b":
            raise TypeError("%s holds integers, got bool values" % self._label)
        if k not in "iu":
            raise TypeError("%s holds integers, got %s values" % (self._label, arr.dtype))
        lo, hi = _RANGES[self._kind]
        amin, amax = arr.min(), arr.max()
        if amin < lo or amax > hi:
            bad = int(amin) if amin < lo else int(amax)
            raise ValueError("%s: %d is out of the %s range" % (self._label, bad, self._kind))
        return arr.astype(self._dtype)

    def _scalar(self, v):
        """One value, converted and checked (a Python number)."""
        if self._kind in (FLOAT, DOUBLE):
            if isinstance(v, (str, bytes, bytearray)):
                raise TypeError("%s holds numbers, got a %s" % (self._label, type(v).__name__))
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise TypeError("%s holds numbers, got a %s" % (self._label, type(v).__name__)) from None
            if self._kind == FLOAT and abs(v) > _FLOAT32_MAX and v == v:
                try:
                    _FLOAT.pack(v)
                except OverflowError:
                    v = math.copysign(_INF, v)
            return v
        if self._kind == BOOL:
            if isinstance(v, (bool, np.bool_)):
                return bool(v)
            try:
                return bool(operator.index(v))
            except TypeError:
                raise TypeError("%s holds bools, got a %s" % (self._label, type(v).__name__)) from None
        if isinstance(v, (bool, np.bool_)):
            raise TypeError("%s holds integers, got a bool" % self._label)
        try:
            v = operator.index(v)
        except TypeError:
            raise TypeError("%s holds integers, got a %s" % (self._label, type(v).__name__)) from None
        lo, hi = _RANGES[self._kind]
        if not lo <= v <= hi:
            raise ValueError("%s: %d is out of the %s range" % (self._label, v, self._kind))
        return v

    def _view(self):
        return self._buf[:self._n]

    def _reserve(self, n):
        if n > len(self._buf):
            buf = np.empty(max(n, 2 * len(self._buf), 8), self._dtype)
            buf[:self._n] = self._buf[:self._n]
            self._buf = buf

    def _extend_array(self, arr):
        """Appends the array ``arr`` (already of the field's dtype: the decoder's path)."""
        n = self._n + len(arr)
        self._reserve(n)
        self._buf[self._n:n] = arr
        self._n = n

    def _set_array(self, arr):
        self._buf, self._n = arr, len(arr)

    # ---- the list interface
    def append(self, value):
        """Adds one value at the end."""
        v = self._scalar(value)
        self._reserve(self._n + 1)
        self._buf[self._n] = v
        self._n += 1

    def extend(self, values):
        """Adds the values of a sequence, iterable, 1-D array or container at the end."""
        self._extend_array(self._coerce(values))

    def MergeFrom(self, other):
        """protobuf's name for ``extend``."""
        self.extend(other)

    def insert(self, index, value):
        v = self._scalar(value)
        vals = self._view()
        index = operator.index(index)
        index = max(0, min(len(vals), index + len(vals) if index < 0 else index))
        self._set_array(np.concatenate([vals[:index], np.array([v], self._dtype), vals[index:]]))

    def pop(self, index=-1):
        vals = self._view()
        if not len(vals):
            raise IndexError("pop from an empty %s" % self._label)
        v = vals[index].item()
        self._set_array(np.delete(vals, operator.index(index) % max(len(vals), 1)))
        return v

    def remove(self, value):
        hits = np.flatnonzero(self._view() == value)
        if not len(hits):
            raise ValueError("%r is not in %s" % (value, self._label))
        self._set_array(np.delete(self._view(), hits[0]))

    def clear(self):
        self._set_array(np.empty(0, self._dtype))

    def sort(self, key=None, reverse=False):
        if key is None:
            vals = np.sort(self._view(), kind="stable")
            self._set_array(vals[::-1].copy() if reverse else vals)
        else:
            self._set_array(self._coerce(sorted(self.tolist(), key=key, reverse=reverse)))

    def reverse(self):
        self._set_array(self._view()[::-1].copy())

    def index(self, value):
        hits = np.flatnonzero(self._view() == value)
        if not len(hits):
            raise ValueError("%r is not in %s" % (value, self._label))
        return int(hits[0])

    def count(self, value):
        return int(np.count_nonzero(self._view() == value))

    def tolist(self):
        """The values as a list of Python numbers."""
        return self._view().tolist()

    def __len__(self):
        return self._n

    def __iter__(self):
        return iter(self.tolist())

    def __contains__(self, value):
        try:
            return bool(np.any(self._view() == value))
        except (TypeError, ValueError):
            return False

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._view()[index].tolist()
        n = self._n
        i = operator.index(index)
        if not -n <= i < n:
            raise IndexError("%s index %d out of range (%d values)" % (self._label, i, n))
        return self._buf[i % n].item()

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            vals = self._view().tolist()
            vals[index] = self._coerce(value).tolist()
            self._set_array(self._coerce(vals))
            return
        n = self._n
        i = operator.index(index)
        if not -n <= i < n:
            raise IndexError("%s assignment index %d out of range (%d values)" % (self._label, i, n))
        self._buf[i % n] = self._scalar(value)

    def __delitem__(self, index):
        keep = np.ones(self._n, bool)
        keep[index] = False
        self._set_array(self._view()[keep])

    def __eq__(self, other):
        if isinstance(other, RepeatedNumber):
            return self._n == other._n and bool(np.array_equal(self._view(), other._view()))
        if isinstance(other, (list, tuple)):
            return self.tolist() == list(other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __array__(self, dtype=None, copy=None):
        return np.array(self._view(), dtype=dtype)

    def __repr__(self):
        return repr(self.tolist())

    def __copy__(self):
        new = RepeatedNumber(self._kind, label=self._label)
        new._set_array(self._view().copy())
        return new

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        return (RepeatedNumber, (self._kind, self._view().copy(), self._label))


def _pack(field, value, label):
    """The payload of a packed repeated numeric field (its values as one run of bytes)."""
    if not isinstance(value, RepeatedNumber):
        value = RepeatedNumber(field.kind, value, label)
    arr = value._view()
    if field.kind in _WIRE_DTYPES:
        return arr.astype(_WIRE_DTYPES[field.kind], copy=False).tobytes()
    if field.kind == BOOL:
        return arr.astype(np.uint8).tobytes()
    return _varints(arr.astype(np.int64, copy=False).view(np.uint64) if field.kind != UINT32
                    else arr.astype(np.uint64))


def _varints(v):
    """The varints of the uint64 array ``v``, one after another (vectorized)."""
    if not len(v):
        return b""
    if int(v.max()) < 0x80:
        return v.astype(np.uint8).tobytes()
    sizes = np.ones(len(v), np.int64)
    for k in range(1, 10):
        sizes += v >= np.uint64(1 << (7 * k))
    offsets = np.zeros(len(v), np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    out = np.empty(int(offsets[-1] + sizes[-1]), np.uint8)
    for j in range(int(sizes.max())):
        sel = sizes > j
        byte = ((v[sel] >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
        byte |= (sizes[sel] > j + 1).astype(np.uint8) << np.uint8(7)
        out[offsets[sel] + j] = byte
    return out.tobytes()


# ---------------------------------------------------------------- encoding
def _varint(v):
    if v < 0x80:
        return bytes((v,))
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _is_set(schema, field, value):
    if field.repeated:
        return bool(value)
    if value is None:
        return False
    if field.kind == BOOL:
        return bool(value) or schema.unset_bool_is_none
    if field.kind == STRING:
        return value != ""
    return True


def _where(schema, field):
    return "field '%s' of %s" % (field.name, schema.full_name)


def _scalar_bytes(schema, field, value):
    """The encoding of one scalar value (no tag)."""
    kind = field.kind
    if kind in _RANGES:
        try:
            v = operator.index(value)
        except TypeError:
            raise TypeError("%s holds a %s, expected an integer"
                            % (_where(schema, field), type(value).__name__)) from None
        lo, hi = _RANGES[kind]
        if not lo <= v <= hi:
            raise ValueError("%s: %d is out of the %s range" % (_where(schema, field), v, kind))
        return _varint(v + 2 ** 64 if v < 0 else v)
    if kind == BOOL:
        return b"\x01" if value else b"\x00"
    if kind in (FLOAT, DOUBLE):
        try:
            if isinstance(value, (str, bytes)):
                raise TypeError
            v = float(value)
        except (TypeError, ValueError):
            raise TypeError("%s holds a %s, expected a number"
                            % (_where(schema, field), type(value).__name__)) from None
        if kind == DOUBLE:
            return _DOUBLE.pack(v)
        try:
            return _FLOAT.pack(v)
        except OverflowError:  # beyond float32: infinity, as protobuf stores it
            return _FLOAT.pack(v * _INF)
    if kind == RAW:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError("%s holds a %s, expected bytes" % (_where(schema, field), type(value).__name__))
        data = bytes(value)
        return _varint(len(data)) + data
    if isinstance(value, str):
        try:
            data = value.encode("utf-8", "surrogateescape" if kind == BYTES else "strict")
        except UnicodeEncodeError:
            raise ValueError("%s: %r cannot be encoded as UTF-8" % (_where(schema, field), value)) from None
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        if kind == STRING:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("%s: %r is not valid UTF-8" % (_where(schema, field), data)) from None
    else:
        raise TypeError("%s holds a %s, expected a string"
                        % (_where(schema, field), type(value).__name__))
    return _varint(len(data)) + data


class _Missing(Exception):
    """A required field left unset, on its way out with the path of fields to it."""

    def __init__(self, schema, field):
        super().__init__(field.name)
        self.schema, self.path = schema, [field.name]


def encode(msg, depth=0, partial=False):
    """The wire-format bytes of ``msg``; an unset required field raises EncodeError unless
    ``partial`` (google.protobuf's SerializePartialToString)."""
    try:
        return _encode(msg, depth, partial)
    except _Missing as e:
        raise EncodeError("cannot serialize %s: required field %s is not set"
                          % (schema_of(msg).full_name, ".".join(reversed(e.path)))) from None


def _encode(msg, depth, partial):
    schema = schema_of(msg)
    if depth > MAX_DEPTH:
        raise ValueError("cannot serialize %s: messages nested more than %d deep (a net holding itself?)"
                         % (schema.full_name, MAX_DEPTH))
    out = bytearray()
    for field in schema.fields:
        value = getattr(msg, field.attr)
        if not _is_set(schema, field, value):
            if field.required and not partial:
                raise _Missing(schema, field)
            continue
        if field.packed:
            body = _pack(field, value, _where(schema, field))
            out += field.packed_tag
            out += _varint(len(body))
            out += body
            continue
        for index, v in enumerate(value if field.repeated else (value,)):
            if field.message:
                if not isinstance(v, field.kind):
                    raise TypeError("%s holds a %s, expected a %s"
                                    % (_where(schema, field), type(v).__name__, field.kind.__name__))
                try:
                    body = _encode(v, depth + 1, partial)
                except _Missing as e:
                    e.path.append("%s[%d]" % (field.name, index) if field.repeated else field.name)
                    raise
                out += field.tag
                out += _varint(len(body))
                out += body
            else:
                out += field.tag
                out += _scalar_bytes(schema, field, v)
    return bytes(out)


# ---------------------------------------------------------------- decoding
class _Fail(Exception):
    """A decoding failure on its way out: the reason, the byte offset, the message it is in
    and the path of fields from the top message to it."""

    def __init__(self, reason, offset, schema):
        super().__init__(reason)
        self.reason, self.offset, self.schema, self.path = reason, offset, schema, []


def _read_varint(buf, pos, end, schema, what="varint"):
    """(value, new position) of the varint at ``pos`` (64 bits kept, as protobuf)."""
    start = pos
    result = shift = 0
    while True:
        if pos >= end:
            raise _Fail("truncated %s" % what, start, schema)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise _Fail("%s longer than 10 bytes" % what, start, schema)


def _read_length(buf, pos, end, schema, what):
    start = pos
    n, pos = _read_varint(buf, pos, end, schema, "length of " + what)
    if n > end - pos:
        raise _Fail("length %d of %s runs past the end (%d bytes left)" % (n, what, end - pos), start, schema)
    return n, pos


def _skip(buf, pos, end, wire_type, number, schema, depth, tag_pos):
    """The position after an unknown field's value."""
    if wire_type == _VARINT:
        return _read_varint(buf, pos, end, schema)[1]
    if wire_type in (_FIXED64, _FIXED32):
        n = 8 if wire_type == _FIXED64 else 4
        if end - pos < n:
            raise _Fail("truncated %s value of unknown field %d" % (_WIRE_NAMES[wire_type], number),
                        pos, schema)
        return pos + n
    if wire_type == _LEN:
        n, pos = _read_length(buf, pos, end, schema, "unknown field %d" % number)
        return pos + n
    if wire_type == _SGROUP:
        if depth + 1 > MAX_DEPTH:
            raise _Fail("groups nested deeper than %d" % MAX_DEPTH, tag_pos, schema)
        while True:
            if pos >= end:
                raise _Fail("group %d has no end-group tag" % number, tag_pos, schema)
            inner_pos = pos
            tag, pos = _read_varint(buf, pos, end, schema, "tag")
            inner_number, inner_type = tag >> 3, tag & 7
            if inner_type == _EGROUP:
                if inner_number != number:
                    raise _Fail("end-group tag %d closes group %d" % (inner_number, number),
                                inner_pos, schema)
                return pos
            _check_tag(tag, inner_pos, schema)
            pos = _skip(buf, pos, end, inner_type, inner_number, schema, depth + 1, inner_pos)
    raise _Fail("end-group tag of field %d outside a group" % number, tag_pos, schema)


def _check_tag(tag, pos, schema):
    if tag >> 3 == 0:
        raise _Fail("field number 0", pos, schema)
    if tag > 0xFFFFFFFF or tag >> 3 > 0x1FFFFFFF:
        raise _Fail("field number %d out of range" % (tag >> 3), pos, schema)
    if tag & 7 > 5:
        raise _Fail("invalid wire type %d" % (tag & 7), pos, schema)


def _decode_scalar(buf, pos, end, field, schema, exact=False):
    """(value, new position) of one scalar of ``field``'s kind; ``exact``: a float as its float32
    value, not the shortest decimal of it."""
    kind = field.kind
    if kind == FLOAT:
        if end - pos < 4:
            raise _Fail("truncated float of field '%s'" % field.name, pos, schema)
        v = _FLOAT.unpack_from(buf, pos)[0]
        return (v if exact else _shortest(v)), pos + 4
    if kind == DOUBLE:
        if end - pos < 8:
            raise _Fail("truncated double of field '%s'" % field.name, pos, schema)
        return _DOUBLE.unpack_from(buf, pos)[0], pos + 8
    if kind in (STRING, BYTES, RAW):
        n, pos = _read_length(buf, pos, end, schema, "field '%s'" % field.name)
        data = bytes(buf[pos:pos + n])
        if kind == RAW:
            return data, pos + n
        if kind == BYTES:
            return data.decode("utf-8", "surrogateescape"), pos + n
        try:
            return data.decode("utf-8"), pos + n
        except UnicodeDecodeError as e:
            raise _Fail("field '%s' is not valid UTF-8" % field.name, pos + e.start, schema) from None
    v, pos = _read_varint(buf, pos, end, schema, "varint of field '%s'" % field.name)
    if kind == INT64:
        return (v - 2 ** 64 if v >= 2 ** 63 else v), pos
    if kind == INT32:
        v &= 0xFFFFFFFF
        return (v - 2 ** 32 if v >= 2 ** 31 else v), pos
    if kind == UINT32:
        return v & 0xFFFFFFFF, pos
    return v != 0, pos  # BOOL


def _unpack(buf, pos, stop, field, schema):
    """The values of the packed run ``buf[pos:stop]`` of a numeric ``field`` as an array of its
    dtype (vectorized)."""
    kind = field.kind
    if kind in _WIRE_DTYPES:
        size = _WIRE_DTYPES[kind].itemsize
        count, extra = divmod(stop - pos, size)
        if extra:
            raise _Fail("truncated %s of packed field '%s'" % (kind, field.name), pos + count * size, schema)
        return np.frombuffer(buf, _WIRE_DTYPES[kind], count, pos).astype(_DTYPES[kind])
    b = np.frombuffer(buf, np.uint8, stop - pos, pos)
    if not len(b):
        return np.empty(0, _DTYPES[kind])
    last = b < 0x80
    if last.all():
        v = b.astype(np.uint64)
    else:
        ends = np.flatnonzero(last)
        if not len(ends) or ends[-1] != len(b) - 1:
            start = ends[-1] + 1 if len(ends) else 0
            raise _Fail("truncated varint of packed field '%s'" % field.name, pos + int(start), schema)
        starts = np.zeros(len(ends), np.int64)
        starts[1:] = ends[:-1] + 1
        lengths = ends - starts + 1
        if lengths.max() > 10:
            bad = int(starts[np.argmax(lengths > 10)])
            raise _Fail("varint of packed field '%s' longer than 10 bytes" % field.name, pos + bad, schema)
        shift = (np.arange(len(b)) - np.repeat(starts, lengths)) * 7
        v = np.bitwise_or.reduceat((b & 0x7F).astype(np.uint64) << shift.astype(np.uint64), starts)
    if kind == INT64:
        return v.view(np.int64)
    if kind == INT32:
        return v.astype(np.uint32).view(np.int32)
    if kind == UINT32:
        return v.astype(np.uint32)
    return v != 0  # BOOL


def _shortest(v):
    """The float32 ``v`` as the shortest decimal of 6 significant digits or more that reads back
    as it (what the text format prints: 0.1 stays 0.1, where google.protobuf gives
    0.10000000149011612); the float32 bits, and so the serialized bytes, are the same."""
    if v != v or v in (_INF, -_INF):
        return v
    for precision in range(6, 10):
        d = float("%.*g" % (precision, v))
        if _FLOAT.unpack(_FLOAT.pack(d))[0] == v:
            return d
    return v


def decode_into(msg, buf, pos, end, depth):
    """Merges the fields encoded in ``buf[pos:end]`` into ``msg``."""
    schema = schema_of(msg)
    by_number = schema.by_number
    while pos < end:
        tag_pos = pos
        tag, pos = _read_varint(buf, pos, end, schema, "tag")
        _check_tag(tag, tag_pos, schema)
        number, wire_type = tag >> 3, tag & 7
        field = by_number.get(number)
        if field is None:
            pos = _skip(buf, pos, end, wire_type, number, schema, depth, tag_pos)
            continue
        if field.message:
            if wire_type != _LEN:
                raise _wrong_type(field, wire_type, tag_pos, schema)
            n, pos = _read_length(buf, pos, end, schema, "field '%s'" % field.name)
            if depth + 1 > MAX_DEPTH:
                raise _Fail("messages nested more than %d deep" % MAX_DEPTH, tag_pos, schema)
            if field.repeated:
                lst = getattr(msg, field.attr)
                sub, index = field.new(), len(lst)
                lst.append(sub)
            else:
                sub, index = getattr(msg, field.attr), None
                if sub is None:
                    sub = field.new()
                    setattr(msg, field.attr, sub)
            try:
                decode_into(sub, buf, pos, pos + n, depth + 1)
            except _Fail as e:
                e.path.append(field.name if index is None else "%s[%d]" % (field.name, index))
                raise
            pos += n
        elif wire_type == field.wire_type:
            if field.repeated:
                lst = getattr(msg, field.attr)
                array = isinstance(lst, RepeatedNumber)
                value, pos = _decode_scalar(buf, pos, end, field, schema, exact=array)
                if array:
                    lst._extend_array(np.array([value], lst._dtype))
                else:
                    lst.append(value)
            else:
                value, pos = _decode_scalar(buf, pos, end, field, schema)
                setattr(msg, field.attr, value)
        elif wire_type == _LEN and field.repeated and field.kind in _NUMERIC:  # a packed repeated scalar
            n, pos = _read_length(buf, pos, end, schema, "packed field '%s'" % field.name)
            stop = pos + n
            lst = getattr(msg, field.attr)
            if isinstance(lst, RepeatedNumber):
                lst._extend_array(_unpack(buf, pos, stop, field, schema))
                pos = stop
            while pos < stop:
                value, pos = _decode_scalar(buf, pos, stop, field, schema)
                lst.append(value)
        else:
            raise _wrong_type(field, wire_type, tag_pos, schema)
    return msg


def _wrong_type(field, wire_type, pos, schema):
    return _Fail("field '%s' (number %d) has wire type %s, expected %s"
                 % (field.name, field.number, _WIRE_NAMES[wire_type], _WIRE_NAMES[field.wire_type]),
                 pos, schema)


def decode(msg, data):
    """Merges the wire-format ``data`` (bytes-like) into ``msg`` (which the caller makes fresh
    for a parse); raises DecodeError on malformed bytes."""
    if isinstance(data, str):
        raise TypeError("expected bytes, got str (serialized protobuf messages are bytes)")
    if isinstance(data, bytes):
        buf = data
    else:
        try:
            buf = bytes(memoryview(data).cast("B"))
        except TypeError:
            raise TypeError("expected a bytes-like object, got %s" % type(data).__name__) from None
    schema = schema_of(msg)
    try:
        decode_into(msg, buf, 0, len(buf), 0)
    except _Fail as e:
        where = ""
        if e.path:
            where = " in %s (a %s)" % (".".join(reversed(e.path)), e.schema.full_name)
        raise DecodeError("cannot parse %s from %d bytes: %s at byte %d%s"
                          % (schema.full_name, len(buf), e.reason, e.offset, where)) from None
    return len(buf)
