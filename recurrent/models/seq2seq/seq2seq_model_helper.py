"""``Seq2SeqModelHelper``: Caffe2's ``caffe2.python.models.seq2seq.seq2seq_model_helper``.

A ModelHelper whose ``arg_scope`` holds Caffe2's seq2seq defaults
(``use_cudnn``, ``cudnn_exhaustive_search``, ``order='NHWC'``, optionally
``ws_nbytes_limit``; operators here ignore them) and which also keeps
non-trainable parameters (``AddParam(..., trainable=False)``: the learning
rate, the step counter) apart from ``params``.
"""

from ... import scope
from ...model_helper import ModelHelper


def _scope_prefix(namescope):
    """The name-scope prefix to filter by: the current scope when None,
    else ``namescope`` with a trailing separator ('' stays '': every scope)."""
    if namescope is None:
        return scope.CurrentNameScope()
    if namescope and not namescope.endswith(scope._NAMESCOPE_SEPARATOR):
        return namescope + scope._NAMESCOPE_SEPARATOR
    return namescope


class Seq2SeqModelHelper(ModelHelper):
    """``Seq2SeqModelHelper(init_params=True, **kwargs)``: ``kwargs`` go to
    ModelHelper (``name``, ...) except ``use_cudnn`` (default True),
    ``cudnn_exhaustive_search`` (default False) and ``ws_nbytes_limit``,
    which become ``arg_scope`` entries, as in Caffe2."""

    def __init__(self, init_params=True, **kwargs):
        defaults = {
            "use_cudnn": kwargs.pop("use_cudnn", True),
            "cudnn_exhaustive_search": kwargs.pop("cudnn_exhaustive_search", False),
            "order": "NHWC",
        }
        limit = kwargs.pop("ws_nbytes_limit", None)
        if limit:
            defaults["ws_nbytes_limit"] = limit
        super().__init__(init_params=init_params, arg_scope=defaults, **kwargs)
        self.non_trainable_params = []

    def AddParam(self, name, init=None, init_value=None, trainable=True):
        """Adds parameter ``name`` (scoped by the current name scope) and returns it.

        ``init`` is ``('FillOpName', {kwargs})``; ``init_value`` (an int or a
        float) replaces it by ``ConstantFill(shape=[1], value=init_value)``
        (int32 for an int, float32 for a float). With ``init_params`` False
        no fill op is made: the blob becomes an external input of ``net``.
        ``trainable`` parameters go to ``params``, the others to
        ``non_trainable_params``.
        """
        if init_value is not None:
            if init is not None:
                raise ValueError("AddParam('%s'): give init or init_value, not both" % name)
            if isinstance(init_value, str):
                raise ValueError("AddParam('%s'): string values are not supported (blobs are float32 "
                                 "or int32 only)" % name)
            if isinstance(init_value, bool) or not isinstance(init_value, (int, float)):
                raise ValueError("AddParam('%s'): init_value must be an int or a float, got %s"
                                 % (name, type(init_value).__name__))
            init = ("ConstantFill", {"shape": [1], "value": init_value})
        if self.init_params:
            if init is None:
                raise ValueError("AddParam('%s'): init or init_value is required when init_params "
                                 "is True" % name)
            op_name, op_kwargs = init
            param = getattr(self.param_init_net, op_name)([], name, **op_kwargs)
        else:
            param = self.net.AddExternalInput(name)
        (self.params if trainable else self.non_trainable_params).append(param)
        return param

    def GetNonTrainableParams(self, namescope=None):
        """The non-trainable parameters whose name scope is exactly
        ``namescope`` (default: the current one); all of them at the top
        scope."""
        prefix = _scope_prefix(namescope)
        if prefix == "":
            return list(self.non_trainable_params)
        return [p for p in self.non_trainable_params if p.GetNameScope() == prefix]

    def GetAllParams(self, namescope=None):
        """Trainable, computed and non-trainable parameters, in that order."""
        return (self.GetParams(namescope) + self.GetComputedParams(namescope)
                + self.GetNonTrainableParams(namescope))
