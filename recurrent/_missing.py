"""Module-level ``__getattr__`` for Caffe2 names a module deliberately does not provide.

``not_provided(module, label, reasons)`` returns a ``__getattr__`` (PEP 562) for ``module`` that
raises ``AttributeError("<label>.<name> is not provided: <reason>")`` for a name in ``reasons`` and
Python's usual message for any other missing name, so ported code fails at the name with the reason.
"""


def not_provided(module, label, reasons):
    def __getattr__(name):
        if name in reasons:
            raise AttributeError("%s.%s is not provided: %s" % (label, name, reasons[name]))
        raise AttributeError("module %r has no attribute %r" % (module, name))
    return __getattr__
