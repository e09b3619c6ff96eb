"""Protobuf text format for NetDef / OperatorDef / Argument / DeviceOption, and the plan
messages ExecutionStep / PlanDef.

``str(netdef)`` gives exactly what ``str()`` of Caffe2's protobuf message gave
(Python protobuf's ``text_format.MessageToString``): fields in field-number
order, two-space indentation, strings C-escaped with non-ASCII bytes in octal,
floats printed as the shortest decimal that round-trips through float32.

``Parse(text, message)`` / ``Merge(text, message)`` read text format back into
a ``proto`` object (``parse_net(text)``, ``parse_op(text)`` are shortcuts).
Malformed text raises ValueError naming the line and column.
"""

import math
import struct

from . import _wire
from . import proto as _proto
from .proto import Argument, DeviceOption, ExecutionStep, NetDef, OperatorDef, PlanDef

# ---------------------------------------------------------------- schema
# field name -> (kind, repeated); kinds: "string", "bytes", "int", "float",
# "bool", or a message class. Listed in field-number order (the print order).
_SCHEMAS = {
    DeviceOption: [
        ("device_type", "int", False),
        ("device_id", "int", False),
        ("random_seed", "int", False),
        ("node_name", "string", False),
        ("numa_node_id", "int", False),
        ("extra_info", "string", True),
    ],
    Argument: [
        ("name", "string", False),
        ("f", "float", False),
        ("i", "int", False),
        ("s", "bytes", False),
        ("floats", "float", True),
        ("ints", "int", True),
        ("strings", "bytes", True),
        ("n", NetDef, False),
        ("nets", NetDef, True),
    ],
    OperatorDef: [
        ("input", "string", True),
        ("output", "string", True),
        ("name", "string", False),
        ("type", "string", False),
        ("arg", Argument, True),
        ("device_option", DeviceOption, False),
        ("engine", "string", False),
        ("control_input", "string", True),
        ("is_gradient_op", "bool", False),
        ("debug_info", "string", False),
    ],
    NetDef: [
        ("name", "string", False),
        ("op", OperatorDef, True),
        ("type", "string", False),
        ("num_workers", "int", False),
        ("device_option", DeviceOption, False),
        ("arg", Argument, True),
        ("external_input", "string", True),
        ("external_output", "string", True),
    ],
    ExecutionStep: [
        ("name", "string", False),
        ("substep", ExecutionStep, True),
        ("network", "string", True),
        ("num_iter", "int", False),
        ("criteria_network", "string", False),
        ("concurrent_substeps", "bool", False),
        ("report_net", "string", False),
        ("report_interval", "int", False),
        ("should_stop_blob", "string", False),
        ("only_once", "bool", False),
        ("run_every_ms", "int", False),
        ("create_workspace", "bool", False),
        ("num_concurrent_instances", "int", False),
    ],
    PlanDef: [
        ("name", "string", False),
        ("network", NetDef, True),
        ("execution_step", ExecutionStep, True),
    ],
}
_FIELDS = {cls: {name: (kind, rep) for name, kind, rep in fields} for cls, fields in _SCHEMAS.items()}
_MESSAGE_NAMES = {DeviceOption: "caffe2.DeviceOption", Argument: "caffe2.Argument",
                  OperatorDef: "caffe2.OperatorDef", NetDef: "caffe2.NetDef",
                  ExecutionStep: "caffe2.ExecutionStep", PlanDef: "caffe2.PlanDef"}
# messages whose optional bools are None while unset (a False that was set prints, as protobuf's
# has-bit makes it); elsewhere (OperatorDef.is_gradient_op) False is the unset default
_NONE_UNSET_BOOLS = (ExecutionStep,)


# ---------------------------------------------------------------- printing
def _c_escape(value):
    """protobuf's CEscape (as_utf8=False): \\n \\r \\t \\" \\' \\\\ and octal
    for bytes outside printable ASCII."""
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    out = []
    for b in value:
        if b == 0x0A:
            out.append("\\n")
        elif b == 0x0D:
            out.append("\\r")
        elif b == 0x09:
            out.append("\\t")
        elif b == 0x22:
            out.append('\\"')
        elif b == 0x27:
            out.append("\\'")
        elif b == 0x5C:
            out.append("\\\\")
        elif b < 0x20 or b >= 0x7F:
            out.append("\\%03o" % b)
        else:
            out.append(chr(b))
    return "".join(out)


def _to_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def format_float(value):
    """A float field as Python protobuf prints it: the shortest decimal (at
    least 6 significant digits) that reads back as the same float32."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    try:
        original = _to_float32(value)
    except OverflowError:
        original = math.copysign(math.inf, value)
    if math.isinf(original):
        return "inf" if original > 0 else "-inf"
    precision = 6
    rounded = float("{0:.{1}g}".format(original, precision))
    while _to_float32(rounded) != original:
        precision += 1
        rounded = float("{0:.{1}g}".format(original, precision))
    return str(rounded)


def _format_scalar(kind, value):
    if kind in ("string", "bytes"):
        return '"%s"' % _c_escape(value)
    if kind == "float":
        return format_float(value)
    if kind == "bool":
        return "true" if value else "false"
    return str(int(value))


def _is_set(msg, name, kind, repeated):
    if name == "device_option" and not repeated:
        return msg.HasField(name)
    value = getattr(msg, name, None)
    if repeated:
        return bool(value)
    if value is None:
        return False
    if kind == "bool":
        return bool(value) or isinstance(msg, _NONE_UNSET_BOOLS)
    if kind == "string" and value == "":
        # Unset optional strings are "" in these plain objects; an Argument's
        # name and an op's type are printed even when empty only if set.
        return False
    return True


def _print_message(msg, indent, out):
    pad = "  " * indent
    for name, kind, repeated in _SCHEMAS[type(msg)]:
        if not _is_set(msg, name, kind, repeated):
            continue
        values = getattr(msg, name) if repeated else [getattr(msg, name)]
        for v in values:
            if isinstance(kind, type):
                if type(v) is not kind:
                    raise TypeError("field '%s' of %s holds a %s, expected %s"
                                    % (name, type(msg).__name__, type(v).__name__, kind.__name__))
                out.append("%s%s {\n" % (pad, name))
                _print_message(v, indent + 1, out)
                out.append("%s}\n" % pad)
            else:
                out.append("%s%s: %s\n" % (pad, name, _format_scalar(kind, v)))


def message_to_text(msg):
    """Text format of a NetDef, OperatorDef, Argument, DeviceOption, ExecutionStep, PlanDef, or one
    of the tensor messages (TensorProto, TensorProtos, TensorShape(s), QTensorProto, BlobProto)."""
    if isinstance(msg, _proto._TensorMessage):
        return _proto.message_text(msg)
    if type(msg) not in _SCHEMAS:
        raise TypeError("cannot print a %s as protobuf text" % type(msg).__name__)
    out = []
    _print_message(msg, 0, out)
    return "".join(out)


def net_to_text(net):
    return message_to_text(net)


def op_to_text(op):
    return message_to_text(op)


MessageToString = message_to_text


# ---------------------------------------------------------------- parsing
class _Tokenizer:
    """Splits protobuf text format into tokens, tracking line and column."""

    _PUNCT = set("{}<>:[],;")

    def __init__(self, text):
        self.text = text
        self.pos = 0
        self.line = 1
        self.col = 1
        self.tokens = []
        self._tokenize()
        self.i = 0

    def _error(self, msg, line=None, col=None):
        return ValueError("protobuf text format, line %d column %d: %s"
                          % (line or self.line, col or self.col, msg))

    def _advance(self, n):
        for ch in self.text[self.pos:self.pos + n]:
            if ch == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
        self.pos += n

    def _tokenize(self):
        text = self.text
        n = len(text)
        while self.pos < n:
            ch = text[self.pos]
            if ch in " \t\r\n\f\v":
                self._advance(1)
                continue
            if ch == "#":
                end = text.find("\n", self.pos)
                self._advance((n if end < 0 else end) - self.pos)
                continue
            line, col = self.line, self.col
            if ch in self._PUNCT:
                self.tokens.append(("punct", ch, line, col))
                self._advance(1)
            elif ch in "\"'":
                value, length = self._read_string(ch)
                self.tokens.append(("string", value, line, col))
                self._advance(length)
            else:
                start = self.pos
                while self.pos < n and (text[self.pos].isalnum() or text[self.pos] in "_.+-"):
                    self._advance(1)
                if self.pos == start:
                    raise self._error("unexpected character %r" % ch)
                self.tokens.append(("word", text[start:self.pos], line, col))

    def _read_string(self, quote):
        text = self.text
        i = self.pos + 1
        out = bytearray()
        n = len(text)
        while True:
            if i >= n or text[i] == "\n":
                raise self._error("unterminated string")
            c = text[i]
            if c == quote:
                return bytes(out), i + 1 - self.pos
            if c != "\\":
                out += c.encode("utf-8", "surrogateescape")
                i += 1
                continue
            if i + 1 >= n:
                raise self._error("unterminated string")
            e = text[i + 1]
            simple = {"n": 10, "r": 13, "t": 9, "a": 7, "b": 8, "f": 12, "v": 11,
                      "\\": 92, "'": 39, '"': 34, "?": 63}
            if e in simple:
                out.append(simple[e])
                i += 2
            elif e in "01234567":
                j = i + 1
                while j < n and j < i + 4 and text[j] in "01234567":
                    j += 1
                v = int(text[i + 1:j], 8)
                if v > 255:
                    raise self._error("octal escape out of range in string")
                out.append(v)
                i = j
            elif e in "xX":
                j = i + 2
                while j < n and j < i + 4 and text[j] in "0123456789abcdefABCDEF":
                    j += 1
                if j == i + 2:
                    raise self._error("invalid \\x escape in string")
                out.append(int(text[i + 2:j], 16))
                i = j
            else:
                raise self._error("invalid escape '\\%s' in string" % e)

    # ---- token access
    def at_end(self):
        return self.i >= len(self.tokens)

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def where(self):
        t = self.peek()
        if t is None:
            return self.line, self.col
        return t[2], t[3]

    def error(self, msg):
        line, col = self.where()
        return self._error(msg, line, col)

    def next(self, what):
        t = self.peek()
        if t is None:
            raise self.error("unexpected end of text, expected %s" % what)
        self.i += 1
        return t

    def try_punct(self, ch):
        t = self.peek()
        if t is not None and t[0] == "punct" and t[1] == ch:
            self.i += 1
            return True
        return False

    def expect_punct(self, ch):
        if not self.try_punct(ch):
            t = self.peek()
            raise self.error("expected '%s', got %s" % (ch, "end of text" if t is None else repr(t[1])))


def _parse_int(tok, value):
    kind, text, line, col = value
    if kind == "word":
        sign = -1 if text.startswith("-") else 1
        body = text[1:] if text[:1] in "+-" else text
        try:
            if body[:2].lower() == "0x":
                return sign * int(body[2:], 16)
            if len(body) > 1 and body.startswith("0"):
                return sign * int(body[1:], 8)
            return sign * int(body, 10)
        except ValueError:
            pass
    raise tok._error("expected an integer, got %r" % (text,), line, col)


def _parse_float(tok, value):
    kind, text, _, _ = value
    if kind != "word":
        raise tok._error("expected a number, got %r" % (text,), value[2], value[3])
    t = text.lower()
    sign = -1.0 if t.startswith("-") else 1.0
    body = t.lstrip("+-")
    if body in ("inf", "infinity", "inff", "infinityf"):
        return sign * math.inf
    if body in ("nan", "nanf"):
        return math.nan
    if body.endswith("f") and not body.startswith("0x"):
        body = body[:-1]
    try:
        if body.startswith("0x"):
            return sign * float(int(body, 16))
        return sign * float(body)
    except ValueError:
        raise tok._error("expected a number, got %r" % text, value[2], value[3]) from None


def _parse_bool(tok, value):
    kind, text, _, _ = value
    if kind == "word" and text in ("true", "True", "t", "1"):
        return True
    if kind == "word" and text in ("false", "False", "f", "0"):
        return False
    raise tok._error("expected true or false, got %r" % (text,), value[2], value[3])


def _parse_string(tok, first, kind):
    if first[0] != "string":
        raise tok._error("expected a quoted string, got %r" % (first[1],), first[2], first[3])
    data = first[1]
    # Adjacent string literals are concatenated.
    while True:
        t = tok.peek()
        if t is None or t[0] != "string":
            break
        tok.i += 1
        data += t[1]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if kind == "string":
            raise tok._error("string is not valid UTF-8", first[2], first[3]) from None
        return data.decode("utf-8", "surrogateescape")


def _parse_scalar(tok, kind):
    first = tok.next("a value")
    if kind == "raw":
        if first[0] != "string":
            raise tok._error("expected a quoted string, got %r" % (first[1],), first[2], first[3])
        data = first[1]
        while tok.peek() is not None and tok.peek()[0] == "string":
            data += tok.next("a value")[1]
        return data
    if isinstance(kind, dict):  # an enum: a value name, or its number
        if first[0] == "word" and first[1] in kind:
            return kind[first[1]]
        return _parse_int(tok, first)
    if kind in ("string", "bytes"):
        return _parse_string(tok, first, kind)
    if kind == "int":
        return _parse_int(tok, first)
    if kind == "float":
        return _parse_float(tok, first)
    if kind == "bool":
        return _parse_bool(tok, first)
    raise AssertionError(kind)


_TEXT_KINDS = {_wire.STRING: "string", _wire.BYTES: "bytes", _wire.RAW: "raw", _wire.INT32: "int",
               _wire.INT64: "int", _wire.UINT32: "int", _wire.FLOAT: "float", _wire.DOUBLE: "float",
               _wire.BOOL: "bool"}


def _known(cls):
    """Whether text format can parse into ``cls``; registers a tensor message's fields (from its wire
    table: enums by value name or number) on first use."""
    if cls in _FIELDS:
        return True
    if not (isinstance(cls, type) and issubclass(cls, _proto._TensorMessage)):
        return False
    schema = _wire.schema_of(cls)
    fields = {}
    for f in schema.fields:
        if f.message:
            _known(f.kind)
            kind = f.kind
        elif f.enum is not None:
            kind = {name: number for number, name in f.enum.items()}
        else:
            kind = _TEXT_KINDS[f.kind]
        fields[f.name] = (kind, f.repeated)
    _FIELDS[cls] = fields
    _MESSAGE_NAMES[cls] = schema.full_name
    return True


def _parse_message_body(tok, msg, closing):
    cls = type(msg)
    fields = _FIELDS[cls]
    seen_singular = set()
    while True:
        if closing is None:
            if tok.at_end():
                return
        elif tok.try_punct(closing):
            return
        t = tok.next("a field name" if closing is None else "a field name or '%s'" % closing)
        if t[0] != "word" or not (t[1][0].isalpha() or t[1][0] == "_"):
            raise tok._error("expected a field name, got %r" % (t[1],), t[2], t[3])
        name = t[1]
        if name not in fields:
            raise tok._error("message %s has no field named '%s'" % (_MESSAGE_NAMES[cls], name),
                             t[2], t[3])
        kind, repeated = fields[name]
        if not repeated:
            if name in seen_singular:
                raise tok._error("non-repeated field '%s' of %s is set twice"
                                 % (name, _MESSAGE_NAMES[cls]), t[2], t[3])
            seen_singular.add(name)
        if isinstance(kind, type):
            _known(kind)
            tok.try_punct(":")
            values = []
            if repeated and tok.try_punct("["):
                if not tok.try_punct("]"):
                    while True:
                        values.append(_parse_submessage(tok, kind))
                        if tok.try_punct("]"):
                            break
                        tok.expect_punct(",")
            else:
                values.append(_parse_submessage(tok, kind))
        else:
            tok.expect_punct(":")
            values = []
            if repeated and tok.try_punct("["):
                if not tok.try_punct("]"):
                    while True:
                        values.append(_parse_scalar(tok, kind))
                        if tok.try_punct("]"):
                            break
                        tok.expect_punct(",")
            else:
                values.append(_parse_scalar(tok, kind))
        if repeated:
            getattr(msg, name).extend(values)
        else:
            setattr(msg, name, values[0])
        if not tok.try_punct(","):
            tok.try_punct(";")


def _parse_submessage(tok, cls):
    if tok.try_punct("{"):
        closing = "}"
    elif tok.try_punct("<"):
        closing = ">"
    else:
        raise tok.error("expected '{' to open a %s" % _MESSAGE_NAMES[cls])
    msg = cls()
    _parse_message_body(tok, msg, closing)
    return msg


def Merge(text, message):
    """Parses ``text`` into ``message`` (fields are added/overwritten);
    returns ``message``. Raises ValueError with line and column on bad text."""
    if not _known(type(message)):
        raise TypeError("cannot parse protobuf text into a %s" % type(message).__name__)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    tok = _Tokenizer(text)
    _parse_message_body(tok, message, None)
    return message


def Parse(text, message):
    """Like Merge, but ``message`` is cleared first (as protobuf's Parse)."""
    if not _known(type(message)):
        raise TypeError("cannot parse protobuf text into a %s" % type(message).__name__)
    fresh = type(message)()
    Merge(text, fresh)
    for name in type(message).__slots__:
        setattr(message, name, getattr(fresh, name))
    return message


def parse_net(text):
    """A NetDef from protobuf text format."""
    return Parse(text, NetDef())


def parse_plan(text):
    """A PlanDef from protobuf text format."""
    return Parse(text, PlanDef())


def parse_op(text):
    """An OperatorDef from protobuf text format."""
    return Parse(text, OperatorDef())
