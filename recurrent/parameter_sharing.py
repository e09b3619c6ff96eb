"""Parameter sharing between name scopes (Caffe2's
``caffe2.python.modeling.parameter_sharing``).

Inside ``with ParameterSharing({'a': 'b'}):`` a parameter that
``ModelHelper.create_param`` would name ``<scope>a/.../w`` is named
``<scope>b/.../w`` instead, so models built under different scopes share one
blob (``<scope>`` is the name scope current when the context was entered).
Overrides nest; where several prefixes of a scope are overridden the longest
wins, and the result is resolved again (``{'a': 'b', 'b': 'c'}`` sends ``a``
to ``c``). ``''`` as the target sends the scope to the enclosing one (this is
how ``rnn_cell.UnrolledCell`` gives every unrolled step the same weights).
Blob names other than parameters are not affected.
"""

import contextlib
import threading

from . import scope

_SEP = scope._NAMESCOPE_SEPARATOR


class ParameterSharingContext:
    """The overrides in force, per thread (as the name scopes are)."""

    def __init__(self):
        self._local = threading.local()

    @property
    def _contexts(self):
        if not hasattr(self._local, "contexts"):
            self._local.contexts = []
        return self._local.contexts

    def _overrides(self):
        merged = {}
        for c in self._contexts:
            merged.update(c)
        return merged

    def _resolve(self, candidate, overrides, depth=0):
        """The scope ``candidate`` (ending with '/', or '') maps to."""
        if depth > 100:
            raise ValueError("ParameterSharing: the overrides %r form a cycle" % (overrides,))
        parts = candidate.split(_SEP)[:-1] if candidate else []
        best, best_len = None, 0
        prefix = ""
        for i, part in enumerate(parts):
            prefix += part + _SEP
            if prefix in overrides:
                best, best_len = overrides[prefix], i + 1
        if best is None:
            return candidate
        rest = "".join(p + _SEP for p in parts[best_len:])
        return self._resolve(best, overrides, depth + 1) + rest

    def get_parameter_name(self, name):
        """The full name of parameter ``name`` created in the current scope."""
        current = scope.CurrentNameScope()
        overrides = self._overrides()
        return (self._resolve(current, overrides) if overrides else current) + name

    def add_scope_overrides(self, shared_scopes):
        self._contexts.append(dict(shared_scopes))

    def pop(self):
        if not self._contexts:
            raise RuntimeError("ParameterSharingContext.pop: no overrides in force")
        self._contexts.pop()


parameter_sharing_context = ParameterSharingContext()


def _normalize(namescope):
    return namescope + _SEP if namescope and not namescope.endswith(_SEP) else namescope


@contextlib.contextmanager
def ParameterSharing(shared_scopes):
    """Parameters created under scope ``k`` (relative to the current name
    scope) are those of scope ``v``, for every ``k: v`` of ``shared_scopes``."""
    if not isinstance(shared_scopes, dict):
        raise TypeError("ParameterSharing takes a dict {scope: shared scope}, got %s"
                        % type(shared_scopes).__name__)
    current = scope.CurrentNameScope()
    overrides = {}
    for k, v in shared_scopes.items():
        if v.startswith(k):
            raise ValueError("Illegal override for parameter sharing: %r is a prefix of %r" % (k, v))
        overrides[_normalize(current + k)] = _normalize(current + v)
    parameter_sharing_context.add_scope_overrides(overrides)
    try:
        yield
    finally:
        parameter_sharing_context.pop()


__all__ = ["ParameterSharing", "ParameterSharingContext", "parameter_sharing_context"]
