"""Parameter initializers (Caffe2's ``caffe2.python.modeling.initializers``).

``Initializer(op_name, **kwargs)`` creates a parameter with one fill op in the
init net; ``ExternalInitializer()`` creates none (the value is fed from
outside); ``update_initializer(cls, ('OpName', {kwargs}), default)`` makes an
initializer of class ``cls`` (``Initializer`` when None) from the tuple, or from
``default`` when the tuple is None. ``brew.fc`` takes such a class as
``WeightInitializer`` / ``BiasInitializer``, as Caffe2's did.

Not provided: ``PseudoFP16Initializer`` and ``ReversePseudoFP16Initializer``
(float16 parameters with a float32 master copy): blobs here are float32 and
int32 only. The names exist, so modules that import them load; making one
raises NotImplementedError saying why. ``pFP16Initializer`` is the older Caffe2 name of
``PseudoFP16Initializer`` (its ``initializers_test.py`` imports it).
"""

from ..model_helper import ExternalInitializer, Initializer, update_initializer

__all__ = ["Initializer", "ExternalInitializer", "update_initializer", "PseudoFP16Initializer",
           "ReversePseudoFP16Initializer", "pFP16Initializer"]


class _Float16NotProvided:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "%s is not provided: it makes float16 parameters, and blobs here are float32 and int32 "
            "only (use Initializer)" % type(self).__name__)


class PseudoFP16Initializer(_Float16NotProvided):
    """Caffe2's float16 parameter with a float32 master copy: not provided."""


class ReversePseudoFP16Initializer(_Float16NotProvided):
    """Caffe2's float32 parameter with a float16 copy: not provided."""


pFP16Initializer = PseudoFP16Initializer
