"""A few helpers of ``caffe2.python.utils`` that training scripts use.

- ``debug``: a decorator (``@utils.debug`` over ``main``) that, when an
  exception escapes the function in an interactive session (stdin and stderr
  are terminals), prints the traceback and opens ``pdb`` post mortem, then
  exits with status 1; elsewhere (pytest, notebooks, pipes) the exception
  propagates unchanged.
- ``MakeArgument(key, value)``: an operator ``Argument``.
- ``BuildUniqueMutexIter(init_net, net, iter=None, iter_mutex=None, iter_val=0)``:
  the optimizers' shared iteration counter (``optimizer_iteration``), int32,
  incremented by an ``Iter`` op (Caffe2 used a mutex and ``AtomicIter``; one
  net runs at a time per workspace here, so ``iter_mutex`` is ignored).
"""

import functools
import sys
import traceback

from .proto import make_argument as _make_argument

__all__ = ["debug", "MakeArgument", "BuildUniqueMutexIter"]


def MakeArgument(key, value):
    """An ``Argument`` named ``key`` holding ``value`` (number, str, or a list of them)."""
    return _make_argument(key, value)


def BuildUniqueMutexIter(init_net, net, iter=None, iter_mutex=None, iter_val=0):
    from .optimizer import OPTIMIZER_ITERATION_NAME, build_iteration
    return build_iteration(init_net, net, iter_val=iter_val, name=iter or OPTIMIZER_ITERATION_NAME)


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
