"""The bytes of Caffe2 minidb files, written by hand (no protobuf needed): used by
fuzz_minidb.py and by tests/test_fuzz_regressions.py to build inputs for Load.

A minidb file is a sequence of records: key length and value length (two native
uint32), the key, the value. A blob's value is a serialized BlobProto; a tensor's
BlobProto has type "Tensor" and its TensorProto in field 3.
"""

import struct


def varint(v):
    """Protobuf base-128 varint of a non-negative int."""
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def record(key, value):
    """One minidb record (key and value are bytes)."""
    return struct.pack("=II", len(key), len(value)) + key + value


def tensor_blob(tensor, name=b""):
    """A BlobProto of type "Tensor" holding the serialized TensorProto `tensor`
    (with its name field when `name` is given)."""
    head = b"\x0a" + varint(len(name)) + name if name else b""
    return head + b"\x12\x06Tensor\x1a" + varint(len(tensor)) + tensor
