"""The exceptions the C core raises.

Caffe2 reported every failure of an op or a net as a ``RuntimeError`` (its C++
``EnforceNotMet``), so ported code catches ``RuntimeError``. This package raises
the exception that says what went wrong (a bad value or shape: ``ValueError``; a
wrong dtype: ``TypeError``; a missing blob or net: ``KeyError``; an index out of
range: ``IndexError``; memory: ``MemoryError``; a file: ``OSError``). Every error
the C core reports (an op, a net, the RecurrentNetwork op and its executor,
Save / Load, the queues) and every error of the workspace (a missing blob, net
or workspace, an array FeedBlob cannot store, a device this build does not have)
is an instance of one of the classes below, each a subclass of that builtin AND
of ``RuntimeError``, so both ``except ValueError`` and Caffe2's
``except RuntimeError`` catch it. Their names are the builtins'
(``type(e).__name__ == "ValueError"``). Errors of building a net in Python and
of the calls' own arguments are the plain builtins. Interrupts stay
``KeyboardInterrupt``.
"""

import builtins

__all__ = ["ValueError", "TypeError", "KeyError", "IndexError", "MemoryError", "OSError"]


def _make(base):
    doc = "%s reported by recurrent's C core; also a RuntimeError, as every op failure was in Caffe2." % (
        base.__name__)
    return type(base.__name__, (base, RuntimeError), {"__module__": __name__, "__doc__": doc})


ValueError = _make(builtins.ValueError)
TypeError = _make(builtins.TypeError)
KeyError = _make(builtins.KeyError)
IndexError = _make(builtins.IndexError)
MemoryError = _make(builtins.MemoryError)
OSError = _make(builtins.OSError)
