"""Fuzz target: Load's reader of Caffe2 minidb files (csrc/ops/db.c).

The first byte picks what the rest becomes: the whole file; the value of one
record keyed 'w#%0'; or the TensorProto of such a record (wrapped in a
BlobProto of type "Tensor"), so that short inputs reach the tensor parser.
The file is loaded with load_all=1 and by name (allow_incomplete=1). Anything
but ValueError, TypeError, KeyError or MemoryError is a finding (OSError too:
the file always exists); so is a loaded blob that does not save and load back
bit for bit, or a workspace that no longer runs a small valid net.

    python fuzz/fuzz_minidb.py [libFuzzer flags] [corpus dir]   (needs atheris)
    python fuzz/fuzz_minidb.py --replay FILE...                 (no atheris needed)
"""

import os
import sys
import tempfile

from common import check_usable, expected, main
from minidb_bytes import record, tensor_blob

import numpy as np  # noqa: E402

from recurrent import core, workspace  # noqa: E402

ERRORS = (ValueError, TypeError, KeyError, MemoryError)
_DIR = tempfile.mkdtemp(prefix="fuzz_minidb")
PATH = os.path.join(_DIR, "in.minidb")
BACK = os.path.join(_DIR, "back.minidb")


def file_bytes(data):
    mode, rest = data[0] % 3, data[1:]
    if mode == 0:
        return rest
    if mode == 2:
        rest = tensor_blob(rest)
    return record(b"w#%0", rest)


def run(op):
    try:
        workspace.RunOperatorOnce(op)
        return True
    except ERRORS as e:
        expected(e)
        assert "op Load #0" in str(e), str(e)
        return False


def test_one_input(data):
    if not data:
        return
    with open(PATH, "wb") as f:
        f.write(file_bytes(data))
    workspace.ResetWorkspace()
    if run(core.CreateOperator("Load", [], [], db=PATH, db_type="minidb", load_all=1)):
        names = workspace.Blobs()
        got = {n: workspace.FetchBlob(n) for n in names}
        for a in got.values():
            assert a.dtype in (np.float32, np.int32), a.dtype
        if names:
            workspace.RunOperatorOnce(core.CreateOperator("Save", names, [], db=BACK, db_type="minidb"))
            workspace.ResetWorkspace()
            workspace.RunOperatorOnce(core.CreateOperator("Load", [], names, db=BACK, db_type="minidb"))
            for n, a in got.items():
                b = workspace.FetchBlob(n)
                assert b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == a.tobytes(), n
    workspace.ResetWorkspace()
    run(core.CreateOperator("Load", [], ["w"], db=PATH, db_type="minidb", allow_incomplete=1))
    check_usable(workspace, core)


if __name__ == "__main__":
    main(test_one_input, sys.argv)
