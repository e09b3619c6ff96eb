"""Name scopes and device scopes, as caffe2.python.scope.

The current scopes are thread-local. ``NameScope('a')`` nested in
``NameScope('b')`` gives the prefix ``'b/a/'``; ``CurrentNameScope()`` is ``''``
outside any scope and always ends with ``'/'`` inside one.
"""

import contextlib
import threading

_NAMESCOPE_SEPARATOR = "/"

_threadlocal_scope = threading.local()


def CurrentNameScope():
    """The current name-scope prefix: '' or a string ending with '/'."""
    ns = getattr(_threadlocal_scope, "namescope", None)
    if ns is None:
        ns = _threadlocal_scope.namescope = ""
    return ns


def CurrentDeviceScope():
    """The DeviceOption set by the innermost DeviceScope, or None."""
    return getattr(_threadlocal_scope, "devicescope", None)


@contextlib.contextmanager
def NameScope(prefix, reset=False):
    """Context manager that appends ``prefix + '/'`` to the current name scope.

    ``prefix`` may be a str, a BlobReference, None or '' (the last two add
    nothing). With ``reset=True`` the scope becomes just ``prefix + '/'``.
    """
    if prefix is not None and not isinstance(prefix, str):
        if isinstance(prefix, bytes):
            prefix = prefix.decode()
        elif type(prefix).__name__ == "BlobReference":
            prefix = str(prefix)
        else:
            raise TypeError("NameScope takes a string as its argument, got %s"
                            % type(prefix).__name__)
    old_scope = CurrentNameScope()
    prefix = prefix + _NAMESCOPE_SEPARATOR if prefix else ""
    if reset:
        _threadlocal_scope.namescope = prefix
    else:
        _threadlocal_scope.namescope = old_scope + prefix
    try:
        yield
    finally:
        _threadlocal_scope.namescope = old_scope


@contextlib.contextmanager
def DeviceScope(scope, node_name=None):
    """Context manager making a copy of ``scope`` (a DeviceOption) the default device option of
    operators created inside it. ``None`` (or ``0``, which Caffe2 code passes for none) without a
    ``node_name`` clears it: operators inside get no device option (Caffe2 refused that call).

    As in Caffe2: a ``node_name`` given replaces the option's (with no ``scope``, the scope is a
    CPU DeviceOption holding only that node name); otherwise a node name set by the enclosing
    scope is inherited; ``extra_info`` is the option's followed by the enclosing scope's, sorted
    (duplicates kept)."""
    from .proto import DeviceOption
    if scope is not None and not isinstance(scope, DeviceOption) and not (type(scope) is int and scope == 0):
        raise TypeError("DeviceScope takes a DeviceOption as its argument, got %s"
                        % type(scope).__name__)
    if node_name is not None and not isinstance(node_name, str):
        raise TypeError("DeviceScope: node_name must be a str, got %s" % type(node_name).__name__)
    if not isinstance(scope, DeviceOption):
        scope = None
    old_scope = CurrentDeviceScope()
    new_scope = None
    if scope is not None or node_name:
        new_scope = DeviceOption()
        if scope is not None:
            new_scope.CopyFrom(scope)
        if node_name:
            new_scope.node_name = node_name
        if old_scope is not None:
            if old_scope.node_name and not new_scope.node_name:
                new_scope.node_name = old_scope.node_name
            new_scope.extra_info.extend(old_scope.extra_info)
        new_scope.extra_info.sort()
    _threadlocal_scope.devicescope = new_scope
    try:
        yield
    finally:
        _threadlocal_scope.devicescope = old_scope


@contextlib.contextmanager
def EmptyDeviceScope():
    """Context manager under which there is no current device scope (``CurrentDeviceScope()`` is
    None), so operators created inside get no device option and run on the net's device; the
    scope around it is back afterwards. An exception inside propagates (Caffe2's returned from its
    ``finally`` and so swallowed it)."""
    old_scope = CurrentDeviceScope()
    _threadlocal_scope.devicescope = None
    try:
        yield
    finally:
        _threadlocal_scope.devicescope = old_scope
