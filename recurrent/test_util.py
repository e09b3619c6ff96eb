"""Helpers for unit tests of nets and ops, as caffe2.python.test_util.

``TestCase`` is a ``unittest.TestCase`` whose every test starts and ends with
an empty current workspace. The other helpers make random blobs and count ops.
None of this needs packages beyond NumPy (``hypothesis_test_util`` is the
property-based layer on top, and needs ``hypothesis``).
"""

import functools
import os
import pathlib
import shutil
import tempfile
import unittest

import numpy as np

from . import workspace


def rand_array(*dims):
    """A float32 array of shape ``dims`` with values uniform in [-0.5, 0.5);
    with no ``dims`` a 0-d array (not a Python float)."""
    return np.asarray(np.random.rand(*dims) - 0.5).astype(np.float32)


def randBlob(name, type, *dims, **kwargs):
    """Feeds blob ``name`` with ``rand(*dims)`` (uniform in [0, 1)) cast to
    ``type``, plus ``offset`` (keyword, default 0.0). Blobs hold float32 or
    int32 only: see FeedBlob for how other dtypes are converted."""
    offset = kwargs.pop("offset", 0.0)
    if kwargs:
        raise TypeError("randBlob: unexpected keyword arguments %s" % sorted(kwargs))
    workspace.FeedBlob(name, np.random.rand(*dims).astype(type) + offset)


def randBlobFloat32(name, *dims, **kwargs):
    """randBlob with type float32."""
    randBlob(name, np.float32, *dims, **kwargs)


def randBlobsFloat32(names, *dims, **kwargs):
    """randBlobFloat32 for each name of ``names`` (each its own draw)."""
    for name in names:
        randBlobFloat32(name, *dims, **kwargs)


def numOps(net):
    """The number of ops of a Net (or of a NetDef)."""
    proto = net.Proto() if hasattr(net, "Proto") else net
    return len(proto.op)


def str_compare(a, b, encoding="utf8"):
    """Whether ``a`` and ``b`` are the same text, bytes decoded with ``encoding``."""
    if isinstance(a, bytes):
        a = a.decode(encoding)
    if isinstance(b, bytes):
        b = b.decode(encoding)
    return a == b


def is_flaky_test_mode():
    """Whether tests marked ``caffe2_flaky`` run (environment ``CAFFE2_RUN_FLAKY_TESTS=1``)."""
    return os.getenv("CAFFE2_RUN_FLAKY_TESTS", "0") == "1"


def caffe2_flaky(test_method):
    """Marks a test method as flaky: it is skipped unless ``CAFFE2_RUN_FLAKY_TESTS=1``."""
    @functools.wraps(test_method)
    def wrapper(self, *args, **kwargs):
        if not is_flaky_test_mode():
            raise unittest.SkipTest("flaky test: set CAFFE2_RUN_FLAKY_TESTS=1 to run it")
        return test_method(self, *args, **kwargs)
    return wrapper


class TestCase(unittest.TestCase):
    """unittest.TestCase that empties the current workspace before and after each test.

    ``self.ws`` is a fresh, separate workspace object (``workspace.C.Workspace()``)
    for tests that want one of their own. Caffe2's setUpClass also set global
    flags (log level, allocator fill); this package has no such flags, so
    nothing is set here.
    """

    def setUp(self):
        self.ws = workspace.C.Workspace()
        workspace.ResetWorkspace()

    def tearDown(self):
        workspace.ResetWorkspace()

    def make_tempdir(self):
        """A new temporary directory (a pathlib.Path), removed when the test ends."""
        path = tempfile.mkdtemp(prefix="recurrent_test_")
        self.addCleanup(shutil.rmtree, path, True)
        return pathlib.Path(path)
