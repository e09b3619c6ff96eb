"""Caffe2's ``caffe2.python.modeling.parameter_sharing``: the same objects as
``recurrent.parameter_sharing`` (one context, whichever module is imported)."""

from ..parameter_sharing import *  # noqa: F401,F403
from ..parameter_sharing import ParameterSharing, parameter_sharing_context  # noqa: F401
