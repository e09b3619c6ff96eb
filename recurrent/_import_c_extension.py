"""Caffe2's ``caffe2.python._import_c_extension``: the C binding as a module (tests import it as
``C``). Here it is ``workspace.C``: ``C.Workspace`` is Caffe2's workspace object API and every other
name is the binding's (recurrent._C). There are no cuDNN names (``cudnn_convolution_fwd_algo_count``
...): this package runs on the CPU, so reading one raises AttributeError, as in Caffe2's CPU build."""

from .workspace import C as _c


def __getattr__(name):
    return getattr(_c, name)
