"""A few helpers of ``caffe2.python.utils`` that training scripts use.

- ``debug``: a decorator (``@utils.debug`` over ``main``) that, when an
  exception escapes the function in an interactive session (stdin and stderr
  are terminals), prints the traceback and opens ``pdb`` post mortem, then
  exits with status 1; elsewhere (pytest, notebooks, pipes) the exception
  propagates unchanged.
- ``MakeArgument(key, value)``: an operator ``Argument``.
- ``BuildUniqueMutexIter(init_net, net, iter=None, iter_mutex=None, iter_val=0)``:
  the optimizers' shared iteration counter, as Caffe2's: ``init_net`` gets
  ``ConstantFill([], iter, shape=[1], value=iter_val, dtype=INT32)`` and
  ``CreateMutex([], [iter_mutex])``, ``net`` gets ``AtomicIter([iter_mutex, iter], [iter])``
  (``iter`` defaults to ``OPTIMIZER_ITERATION_NAME``, ``iter_mutex`` to
  ``ITERATION_MUTEX_NAME``; the ops on the CPU); returns the counter's BlobReference. When
  ``init_net`` already defines ``iter`` it adds nothing and returns ``init_net.GetBlobRef(iter)``.
  The counter is int32 (Caffe2: INT64), so ``iter_val`` must lie in [0, 2**31 - 1) (ValueError).
- ``raiseIfNotEqual(a, b, msg)``: raises ``ValueError("<msg>. <a> != <b>")`` when ``a != b``
  (Caffe2 raised a bare ``Exception`` with that message; ValueError is one).
- ``OpAlmostEqual(op_a, op_b, ignore_fields=None)``: whether two OperatorDefs are equal once the named
  fields (a str or a list of str) are reset to their defaults in copies of both.
- ``ArgsToDict(args)``: ``{name: value}`` of a list of Arguments (list kinds as lists; an argument
  with no value maps to None; nameless ones are skipped).
- ``EnumClassKeyVals(cls)``: ``{KEY: value}`` of a class's upper-case attributes holding str values;
  two keys with one value is a ValueError (Caffe2: AssertionError).
- ``NHWC2NCHW(a)`` / ``NCHW2NHWC(a)``: NumPy transposes moving the last axis to axis 1 and back
  (at least 2 dims, else ValueError; Caffe2's
  NHWC2NCHW accepted 1 dim and then failed in NumPy).
- ``DebugMode.run(func)``: ``func()`` under ``debug``.
- ``NumpyArrayToCaffe2Tensor(arr, name=None)``: a ``TensorProto`` holding a NumPy array: dims, and
  the data type and field Caffe2 uses for its dtype: float32 FLOAT in float_data, float64 DOUBLE in
  double_data, int32 INT32 in int32_data, int64 INT64 in int64_data, int16 / uint16 / int8 / uint8 /
  bool INT16 / UINT16 / INT8 / UINT8 / BOOL with their values in int32_data, float16 FLOAT16 with its
  bits (as uint16) in int32_data, bytes / str (a ``S``, ``U`` or object array of them) STRING in
  string_data (str as UTF-8); ``name`` set when given. (Caffe2's own function mapped int64 to INT32
  and refused bool, float16, int64 and strings; these follow Caffe2's TensorSerializer.) TypeError
  naming the tensor for something not an array, a name not a str, and other dtypes (complex,
  uint32, uint64, ...).
- ``Caffe2TensorToNumpyArray(tensor)``: the NumPy array a ``TensorProto`` holds, of the dtype its
  data_type names (FLOAT float32, DOUBLE float64, INT32 int32 (Caffe2 gave int64 here), INT64
  int64, INT16 / UINT16 / INT8 / UINT8 / BOOL / FLOAT16 their dtypes, read from int32_data or,
  when set, byte_data (little-endian), BYTE uint8 from byte_data, STRING an object array of
  bytes), shaped by its dims; FLOAT / DOUBLE / INT32 / INT64 read raw_data (little-endian) when
  it is set, as the minidb Load does. Errors name the tensor: ValueError for a negative dim, a
  data length that does not match prod(dims), a segment that is not the whole tensor, data in
  both a field and raw_data / byte_data, a value outside its type's range in int32_data, an
  unsupported data_format; TypeError for data types with no array (UNDEFINED,
  ZERO_COLLISION_HASH, REBATCHING_BUFFER, unknown numbers) and for a non-TensorProto.
- ``OPTIMIZER_ITERATION_NAME`` ('optimizer_iteration'), ``ITERATION_MUTEX_NAME`` ('iteration_mutex'),
  ``OPTIMIZER_ITERATION_LR_NAME`` ('optimizer_iteration_lr') and ``ITERATION_MUTEX_LR_NAME``
  ('iteration_mutex_lr'): the learning rate's own counter (the optimizers'
  ``use_dedicated_lr_iteration_counter``).

- ``TryReadProtoWithClass(cls, s)``: a new ``cls`` (a message class of ``recurrent.proto``: NetDef,
  PlanDef, OperatorDef, TensorProto, ...) read from ``s`` (str or bytes) as protobuf text format
  (``recurrent.text_format.Parse``) or, where that fails, as the binary wire format
  (``ParseFromString``). Bytes that are neither raise ``proto.DecodeError`` (a ValueError) naming
  both failures; so does a str that is not text format (a str is never read as binary; Caffe2
  failed there with a TypeError from protobuf). TypeError for a class with no message format.
- ``GetContentFromProto(obj, function_map)``: ``func(obj)`` for the first ``{class: func}`` entry
  whose class is exactly ``type(obj)``; None when none is.
- ``GetContentFromProtoString(s, function_map)``: ``func(TryReadProtoWithClass(cls, s))`` for the
  first class, in the dict's order, that reads ``s``; ``DecodeError("Cannot find a fit protobuffer
  class.")`` when none does.
- ``ConvertProtoToBinary(proto_class, filename, out_filename)``: writes to ``out_filename`` the binary
  form of the message in ``filename`` (text format, or binary already). Caffe2 opened the output in
  text mode, which fails under Python 3; here it is written as bytes.

Left out: CaffeBlobToNumpyArray (old Caffe's BlobProto, not Caffe2's), ResetBlobs (no ``Free`` op)
and GetGPUMemoryUsageStats (GPU only).
"""

import copy
import functools
import sys
import traceback

from ._missing import not_provided
from .proto import _array_to_tensor, _tensor_to_array
from .proto import make_argument as _make_argument

__all__ = ["debug", "MakeArgument", "BuildUniqueMutexIter", "raiseIfNotEqual", "OpAlmostEqual", "ArgsToDict",
           "EnumClassKeyVals", "NHWC2NCHW", "NCHW2NHWC", "DebugMode", "NumpyArrayToCaffe2Tensor",
           "Caffe2TensorToNumpyArray", "TryReadProtoWithClass", "GetContentFromProto",
           "GetContentFromProtoString", "ConvertProtoToBinary", "OPTIMIZER_ITERATION_NAME",
           "ITERATION_MUTEX_NAME", "OPTIMIZER_ITERATION_LR_NAME", "ITERATION_MUTEX_LR_NAME"]

OPTIMIZER_ITERATION_NAME = "optimizer_iteration"
ITERATION_MUTEX_NAME = "iteration_mutex"
OPTIMIZER_ITERATION_LR_NAME = "optimizer_iteration_lr"  # the optimizers' use_dedicated_lr_iteration_counter
ITERATION_MUTEX_LR_NAME = "iteration_mutex_lr"


def MakeArgument(key, value):
    """An ``Argument`` named ``key`` holding ``value`` (number, str, or a list of them)."""
    return _make_argument(key, value)


def BuildUniqueMutexIter(init_net, net, iter=None, iter_mutex=None, iter_val=0):
    """The mutex-guarded iteration counter ``iter`` (see the module): created at ``iter_val`` with
    the Mutex ``iter_mutex`` by ``init_net``, incremented by ``AtomicIter`` in ``net``; created once,
    its BlobReference returned again by later calls."""
    from . import core
    iter = iter if iter is not None else OPTIMIZER_ITERATION_NAME
    iter_mutex = iter_mutex if iter_mutex is not None else ITERATION_MUTEX_NAME
    if init_net.BlobIsDefined(iter):
        return init_net.GetBlobRef(iter)
    iter_val = int(iter_val)
    if not 0 <= iter_val < 2 ** 31 - 1:
        raise ValueError("iter_val must be in [0, 2**31 - 1) (the counter is int32), got %d" % iter_val)
    # Caffe2 tags the three ops so that device placers leave them on the CPU
    with core.DeviceScope(core.DeviceOption(core.DeviceType.CPU, extra_info=["device_type_override:cpu"])):
        iteration = init_net.ConstantFill([], iter, shape=[1], value=iter_val, dtype=core.DataType.INT32)
        iter_mutex = init_net.CreateMutex([], [iter_mutex])
        net.AtomicIter([iter_mutex, iteration], [iteration])
    return iteration


def _interactive():
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def debug(f):
    """Runs ``f``; an exception in an interactive session opens pdb (see the module)."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except Exception:
            if not _interactive():
                raise
            traceback.print_exc()
            print('Entering the debugger ("bt" prints the stack, "help" the commands).', file=sys.stderr)
            import pdb
            pdb.post_mortem(sys.exc_info()[2])
            sys.exit(1)
    return wrapper


class DebugMode:
    """``DebugMode.run(func)``: runs ``func()``; an exception in an interactive session opens pdb
    (see ``debug``)."""

    @classmethod
    def run(cls, func):
        return debug(func)()


def raiseIfNotEqual(a, b, msg):
    """Raises ``ValueError("<msg>. <a> != <b>")`` when ``a != b``."""
    if a != b:
        raise ValueError("{}. {} != {}".format(msg, a, b))


def OpAlmostEqual(op_a, op_b, ignore_fields=None):
    """Whether OperatorDefs ``op_a`` and ``op_b`` are equal but for the fields in ``ignore_fields``."""
    from .proto import OperatorDef
    ignore_fields = ignore_fields or []
    if not isinstance(ignore_fields, list):
        ignore_fields = [ignore_fields]
    for f in ignore_fields:
        if not isinstance(f, str):
            raise TypeError("OpAlmostEqual: each ignored field must be a str, got %r" % (ignore_fields,))
        if f not in OperatorDef.__slots__:
            raise ValueError("OpAlmostEqual: OperatorDef has no field '%s' (fields: %s)"
                             % (f, list(OperatorDef.__slots__)))
    for op in (op_a, op_b):
        if not isinstance(op, OperatorDef):
            raise TypeError("OpAlmostEqual: expected OperatorDefs, got %s" % type(op).__name__)

    def clean(op):
        op = copy.deepcopy(op)
        fresh = OperatorDef()
        for f in ignore_fields:
            setattr(op, f, getattr(fresh, f))
        return op

    return clean(op_a) == clean(op_b)


def ArgsToDict(args):
    """``{name: value}`` of the Arguments ``args`` (see the module)."""
    out = {}
    for a in args:
        if not a.name:
            continue
        value = None
        for k in ("f", "i", "s", "n"):
            if getattr(a, k) is not None:
                value = getattr(a, k)
                break
        else:
            for k in ("floats", "ints", "strings", "nets"):
                if getattr(a, k):
                    value = list(getattr(a, k))
                    break
        out[a.name] = value
    return out


def EnumClassKeyVals(cls):
    """``{KEY: value}`` of the upper-case str attributes of class ``cls``."""
    if not isinstance(cls, type):
        raise TypeError("EnumClassKeyVals: expected a class, got %s" % type(cls).__name__)
    enum = {}
    for k in dir(cls):
        if k == k.upper():
            v = getattr(cls, k)
            if isinstance(v, str):
                dup = [key for key in enum if enum[key] == v]
                if dup:
                    raise ValueError("EnumClassKeyVals(%s): keys %s and %s share the value %r"
                                     % (cls.__name__, dup[0], k, v))
                enum[k] = v
    return enum


def NHWC2NCHW(tensor):
    """``tensor`` with its last axis moved to axis 1 (a NumPy view)."""
    if tensor.ndim < 2:
        raise ValueError("NHWC2NCHW: needs at least 2 dims, got shape %s" % (tensor.shape,))
    return tensor.transpose((0, tensor.ndim - 1) + tuple(range(1, tensor.ndim - 1)))


def NCHW2NHWC(tensor):
    """``tensor`` with axis 1 moved to the end (a NumPy view)."""
    if tensor.ndim < 2:
        raise ValueError("NCHW2NHWC: needs at least 2 dims, got shape %s" % (tensor.shape,))
    return tensor.transpose((0,) + tuple(range(2, tensor.ndim)) + (1,))


def NumpyArrayToCaffe2Tensor(arr, name=None):
    """A new ``TensorProto`` holding the NumPy array ``arr`` (dims, data_type, the data field for
    its dtype; see the module), named ``name`` when given."""
    if name is not None and not isinstance(name, str):
        raise TypeError("NumpyArrayToCaffe2Tensor: the tensor name must be a str, got %s"
                        % type(name).__name__)
    tensor = _array_to_tensor(arr, "NumpyArrayToCaffe2Tensor: tensor '%s'" % name if name
                              else "NumpyArrayToCaffe2Tensor: the array")
    if name:
        tensor.name = name
    return tensor


def Caffe2TensorToNumpyArray(tensor):
    """The NumPy array the ``TensorProto`` ``tensor`` holds, shaped by its dims, of the dtype its
    data_type names (see the module)."""
    name = getattr(tensor, "name", "")
    return _tensor_to_array(tensor, "Caffe2TensorToNumpyArray: tensor '%s'" % name if name
                            else "Caffe2TensorToNumpyArray: the (unnamed) tensor")


def TryReadProtoWithClass(cls, s):
    """A new ``cls`` message read from ``s``: protobuf text format first, then the binary wire
    format (see the module); DecodeError where it is neither."""
    from . import text_format
    from .proto import DecodeError
    if not isinstance(s, (str, bytes, bytearray, memoryview)):
        raise TypeError("TryReadProtoWithClass: expected str or bytes, got %s" % type(s).__name__)
    obj = cls()
    if not hasattr(obj, "ParseFromString"):
        raise TypeError("TryReadProtoWithClass: %s is not a message class" % getattr(cls, "__name__", cls))
    try:
        return text_format.Parse(s if isinstance(s, str) else bytes(s), obj)
    except TypeError:  # a message with no text format here: binary only
        text_error = "%s has no text format" % cls.__name__
    except ValueError as e:
        text_error = str(e)
    if isinstance(s, str):
        raise DecodeError("TryReadProtoWithClass: not a %s in text format (%s); a str is not read "
                          "as binary (pass bytes)" % (cls.__name__, text_error))
    try:
        obj.ParseFromString(bytes(s))
    except DecodeError as e:
        raise DecodeError("TryReadProtoWithClass: not a %s in text format (%s) nor in binary (%s)"
                          % (cls.__name__, text_error, e)) from None
    return obj


def GetContentFromProto(obj, function_map):
    """``func(obj)`` for the first ``{class: func}`` entry of ``function_map`` whose class is
    ``type(obj)``; None when there is none."""
    for cls, func in function_map.items():
        if type(obj) is cls:
            return func(obj)
    return None


def GetContentFromProtoString(s, function_map):
    """``func(message)`` for the first ``{class: func}`` entry whose class reads ``s`` (text or
    binary, as TryReadProtoWithClass); DecodeError when no class does."""
    from .proto import DecodeError
    for cls, func in function_map.items():
        try:
            obj = TryReadProtoWithClass(cls, s)
        except DecodeError:
            continue
        return func(obj)
    raise DecodeError("Cannot find a fit protobuffer class.")


def ConvertProtoToBinary(proto_class, filename, out_filename):
    """Reads the ``proto_class`` message in the file ``filename`` (text format, or binary) and
    writes its binary wire format to ``out_filename``."""
    with open(filename, "rb") as f:
        proto = TryReadProtoWithClass(proto_class, f.read())
    data = proto.SerializeToString()
    with open(out_filename, "wb") as f:
        f.write(data)


# Caffe2 names that cannot be provided here: asking for one says why instead of a bare AttributeError
_NOT_PROVIDED = {
    "GetGPUMemoryUsageStats": "it reports GPU memory, and this build runs on the CPU only "
                              "(workspace.has_gpu_support is False)",
}


__getattr__ = not_provided(__name__, "utils", _NOT_PROVIDED)
