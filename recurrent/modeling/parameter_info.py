"""Caffe2's ``caffe2.python.modeling.parameter_info``: ``ParameterTags`` (``BIAS``, ``WEIGHT``,
``COMPUTED_PARAM``) and ``ParameterInfo``, the same classes as ``recurrent.model_helper``'s."""

from ..model_helper import ParameterInfo, ParameterTags

__all__ = ["ParameterInfo", "ParameterTags"]
