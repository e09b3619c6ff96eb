"""Protobuf binary wire format (proto2) for the plain message classes of ``recurrent.proto``.

One table-driven codec: each message class declares its fields once (``declare``: field number,
name, kind, repeated), and ``encode`` / ``decode`` walk those tables. The bytes are those
google.protobuf writes for the same message: fields in field-number order, unset optional fields
left out, repeated scalars unpacked (proto2 without ``[packed=true]``), floats as fixed32, int32 /
int64 as varints (negatives as 10-byte two's complement), strings UTF-8, nested messages
length-delimited. "Set" means what the text format prints (``recurrent.text_format``): a field
holding None, an empty string field, an empty list, and a False ``OperatorDef.is_gradient_op``
are unset; a ``bytes`` field (``Argument.s``) holding "" is set, and so are a DeviceOption's
``device_type`` / ``device_id`` (always ints here, as Caffe2's ``core.DeviceOption`` set them).
So bytes from elsewhere that set a field to a default these objects cannot tell from unset (an
explicit empty name, ``is_gradient_op: false``) reserialize without it, and a DeviceOption whose
``device_id`` was unset reserializes with ``device_id: 0``; otherwise what google.protobuf wrote
reserializes to the same bytes (unknown fields aside: they are dropped).

Decoding accepts any valid encoding: fields in any order or repeated (the last scalar wins, a
singular message field seen twice is merged, as protobuf does), repeated scalars packed or not,
unknown fields (skipped, groups too: they are not kept). Malformed bytes raise ``DecodeError``
(a ValueError) naming the message, the path of the field and the byte offset: a truncated varint
or fixed-width value, a length past the end of its message, a varint longer than 10 bytes, field
number 0, wire types 6 / 7, an end-group tag without its start, a known field with a wire type
its type cannot have (protobuf would keep such a field as an unknown one; here it is an error),
a string field that is not UTF-8 (google.protobuf accepts it in proto2 and gives bytes), and
messages nested deeper than ``MAX_DEPTH``. A float reads as the decimal the text format prints
for it, the shortest (of 6 digits or more) that is the same float32 (0.1, not google.protobuf's
0.10000000149011612; the bits are the same); bytes fields (``Argument.s`` / ``strings``) read
as str, bytes that are not UTF-8 kept as surrogate escapes (``s.encode("utf-8",
"surrogateescape")`` gives them back).
"""

import operator
import struct

MAX_DEPTH = 100  # levels of messages below the top one, as google.protobuf (upb) allows

# scalar kinds; a field whose kind is a class holds messages of that class
STRING, BYTES, INT32, INT64, UINT32, BOOL = "string", "bytes", "int32", "int64", "uint32", "bool"
FLOAT = "float"
_VARINT, _FIXED64, _LEN, _SGROUP, _EGROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
_WIRE_TYPE = {STRING: _LEN, BYTES: _LEN, INT32: _VARINT, INT64: _VARINT, UINT32: _VARINT, BOOL: _VARINT,
              FLOAT: _FIXED32}
_RANGES = {INT32: (-2 ** 31, 2 ** 31 - 1), INT64: (-2 ** 63, 2 ** 63 - 1), UINT32: (0, 2 ** 32 - 1)}
_WIRE_NAMES = ("varint", "fixed64", "length-delimited", "start-group", "end-group", "fixed32", "6", "7")
_FLOAT = struct.Struct("<f")
_INF = float("inf")


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the message (a ValueError, where google.protobuf
    raises its ``message.DecodeError``)."""


class _Field:
    __slots__ = ("number", "name", "attr", "kind", "repeated", "wire_type", "tag", "message")

    def __init__(self, number, name, kind, repeated, attr):
        self.number, self.name, self.kind, self.repeated = number, name, kind, repeated
        self.attr = attr or name
        self.message = isinstance(kind, type)
        self.wire_type = _LEN if self.message else _WIRE_TYPE[kind]
        self.tag = _varint(number << 3 | self.wire_type)


class _Schema:
    """A message class's fields, in field-number order and by number."""

    __slots__ = ("cls", "full_name", "fields", "by_number", "unset_bool_is_none")

    def __init__(self, cls, full_name, fields, unset_bool_is_none):
        self.cls, self.full_name, self.unset_bool_is_none = cls, full_name, unset_bool_is_none
        self.fields = sorted(fields, key=lambda f: f.number)
        self.by_number = {f.number: f for f in self.fields}


def declare(cls, full_name, fields, unset_bool_is_none=False, attrs=None):
    """Gives ``cls`` its wire table: ``fields`` are ``(number, name, kind, repeated)``; ``attrs``
    maps a field name to the attribute holding it (``device_option`` -> ``_device_option``);
    ``unset_bool_is_none``: the class's optional bools are None while unset, so a False is set."""
    attrs = attrs or {}
    cls._wire = _Schema(cls, full_name, [_Field(n, name, kind, rep, attrs.get(name))
                                         for n, name, kind, rep in fields], unset_bool_is_none)


def schema_of(msg_or_cls):
    """The wire table of a message (or message class); TypeError for anything else."""
    cls = msg_or_cls if isinstance(msg_or_cls, type) else type(msg_or_cls)
    schema = getattr(cls, "_wire", None)
    if schema is None:
        raise TypeError("%s has no protobuf wire format" % cls.__name__)
    return schema


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
    if kind == FLOAT:
        try:
            if isinstance(value, (str, bytes)):
                raise TypeError
            v = float(value)
        except (TypeError, ValueError):
            raise TypeError("%s holds a %s, expected a number"
                            % (_where(schema, field), type(value).__name__)) from None
        try:
            return _FLOAT.pack(v)
        except OverflowError:  # beyond float32: infinity, as protobuf stores it
            return _FLOAT.pack(v * _INF)
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


def encode(msg, depth=0):
    """The wire-format bytes of ``msg``."""
    schema = schema_of(msg)
    if depth > MAX_DEPTH:
        raise ValueError("cannot serialize %s: messages nested more than %d deep (a net holding itself?)"
                         % (schema.full_name, MAX_DEPTH))
    out = bytearray()
    for field in schema.fields:
        value = getattr(msg, field.attr)
        if not _is_set(schema, field, value):
            continue
        for v in (value if field.repeated else (value,)):
            if field.message:
                if not isinstance(v, field.kind):
                    raise TypeError("%s holds a %s, expected a %s"
                                    % (_where(schema, field), type(v).__name__, field.kind.__name__))
                body = encode(v, depth + 1)
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


def _decode_scalar(buf, pos, end, field, schema):
    """(value, new position) of one scalar of ``field``'s kind."""
    kind = field.kind
    if kind == FLOAT:
        if end - pos < 4:
            raise _Fail("truncated float of field '%s'" % field.name, pos, schema)
        return _shortest(_FLOAT.unpack_from(buf, pos)[0]), pos + 4
    if kind in (STRING, BYTES):
        n, pos = _read_length(buf, pos, end, schema, "field '%s'" % field.name)
        data = bytes(buf[pos:pos + n])
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
                sub, index = field.kind(), len(lst)
                lst.append(sub)
            else:
                sub, index = getattr(msg, field.attr), None
                if sub is None:
                    sub = field.kind()
                    setattr(msg, field.attr, sub)
            try:
                decode_into(sub, buf, pos, pos + n, depth + 1)
            except _Fail as e:
                e.path.append(field.name if index is None else "%s[%d]" % (field.name, index))
                raise
            pos += n
        elif wire_type == field.wire_type:
            value, pos = _decode_scalar(buf, pos, end, field, schema)
            if field.repeated:
                getattr(msg, field.attr).append(value)
            else:
                setattr(msg, field.attr, value)
        elif wire_type == _LEN and field.repeated:  # a packed repeated scalar
            n, pos = _read_length(buf, pos, end, schema, "packed field '%s'" % field.name)
            stop = pos + n
            lst = getattr(msg, field.attr)
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
