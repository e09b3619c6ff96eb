"""``CNNModelHelper``, Caffe2's older model class (``caffe2.python.cnn``).

Caffe2 kept it as a thin layer over ``ModelHelper`` and ``brew`` (it logged a
deprecation warning; here it is silent): ``CNNModelHelper(order="NCHW",
name=None, use_cudnn=True, cudnn_exhaustive_search=False, ws_nbytes_limit=None,
init_params=True, skip_sparse_optim=False, param_model=None)`` is a
``ModelHelper`` whose ``arg_scope`` holds ``order``, ``use_cudnn`` and
``cudnn_exhaustive_search`` (and ``ws_nbytes_limit`` when given), with the
capitalised methods of the old API calling the ``brew`` helpers:
``FC``, ``Dropout``, ``Softmax``, ``Relu``, ``PRelu``, ``Concat``, ``DepthConcat``, ``Sum``,
``Transpose``, ``Iter``, ``Accuracy``, ``AddWeightDecay``, ``SpatialBN``, ``SpatialGN``,
``InstanceNorm``, ``LRN``, ``MaxPool``, ``AveragePool`` (the model's ``order``), and the initializer
properties ``XavierInit``, ``MSRAInit``, ``ZeroInit`` and ``ConstantInit(value)``.
Every op a ``ModelHelper`` forwards (``model.SquaredL2Distance(...)``,
``model.ReduceFrontSum(...)``, ...) works as on a ``ModelHelper``.

``Conv``, ``ConvNd``, ``GroupConv`` and ``ConvTranspose`` call ``brew.conv`` / ``conv_nd`` /
``group_conv`` / ``conv_transpose`` with the model's ``order``, ``use_cudnn``,
``cudnn_exhaustive_search`` and ``ws_nbytes_limit`` (as Caffe2's).
``PadImage(blob_in, blob_out, **kwargs)`` adds a ``PadImage`` op with the arguments as given (as
Caffe2's: the model's ``order`` is not passed on, so an NHWC model gives ``order="NHWC"`` itself);
it returns the output (Caffe2's returned None).
The methods for the other convolutional ops (``GroupConv_Deprecated``,
``MaxPoolWithIndex``, ``ImageInput``, ``VideoInput``) and the pruned / packed /
decomposed FC variants (``PackedFC``, ``FC_Prune``, ``FC_Decomp``, ``FC_Sparse``) raise
AttributeError saying so: their ops are not provided
(README "Coming from Caffe2"). ``use_cudnn`` is kept (and passed on, as
Caffe2 did) but has no effect: this package runs on the CPU.
"""

from . import brew
from .model_helper import ModelHelper

__all__ = ["CNNModelHelper"]

_NOT_PROVIDED = {
    "ImageInput": "image_input", "VideoInput": "video_input",
    "GroupConv_Deprecated": "group_conv_deprecated",
    "PackedFC": "packed_fc", "FC_Prune": "fc_prune", "FC_Decomp": "fc_decomp", "FC_Sparse": "fc_sparse",
    "MaxPoolWithIndex": "max_pool_with_index",
}


class CNNModelHelper(ModelHelper):
    """A ModelHelper with Caffe2's CNNModelHelper methods (see the module docstring)."""

    def __init__(self, order="NCHW", name=None, use_cudnn=True, cudnn_exhaustive_search=False,
                 ws_nbytes_limit=None, init_params=True, skip_sparse_optim=False, param_model=None):
        if order not in ("NCHW", "NHWC"):
            raise ValueError("Cannot understand the CNN storage order %s." % (order,))
        cnn_arg_scope = {"order": order, "use_cudnn": use_cudnn,
                         "cudnn_exhaustive_search": cudnn_exhaustive_search}
        if ws_nbytes_limit:
            cnn_arg_scope["ws_nbytes_limit"] = ws_nbytes_limit
        super().__init__(skip_sparse_optim=skip_sparse_optim, name="CNN" if name is None else name,
                         init_params=init_params, param_model=param_model, arg_scope=cnn_arg_scope)
        self.order = order
        self.use_cudnn = use_cudnn
        self.cudnn_exhaustive_search = cudnn_exhaustive_search
        self.ws_nbytes_limit = ws_nbytes_limit

    def __getattr__(self, name):
        if name in _NOT_PROVIDED:
            raise AttributeError("CNNModelHelper.%s is not provided: it needs the brew helper '%s', "
                                 "whose ops (Caffe2's CNN / image ops) this package does not have"
                                 % (name, _NOT_PROVIDED[name]))
        return super().__getattr__(name)

    def FC(self, *args, **kwargs):
        return brew.fc(self, *args, **kwargs)

    def PadImage(self, blob_in, blob_out, **kwargs):
        return self.net.PadImage(blob_in, blob_out, **kwargs)

    def Conv(self, *args, **kwargs):
        return brew.conv(self, *args, use_cudnn=self.use_cudnn, order=self.order,
                         cudnn_exhaustive_search=self.cudnn_exhaustive_search,
                         ws_nbytes_limit=self.ws_nbytes_limit, **kwargs)

    def ConvNd(self, *args, **kwargs):
        return brew.conv_nd(self, *args, use_cudnn=self.use_cudnn, order=self.order,
                            cudnn_exhaustive_search=self.cudnn_exhaustive_search,
                            ws_nbytes_limit=self.ws_nbytes_limit, **kwargs)

    def GroupConv(self, *args, **kwargs):
        return brew.group_conv(self, *args, use_cudnn=self.use_cudnn, order=self.order,
                               cudnn_exhaustive_search=self.cudnn_exhaustive_search,
                               ws_nbytes_limit=self.ws_nbytes_limit, **kwargs)

    def ConvTranspose(self, *args, **kwargs):
        return brew.conv_transpose(self, *args, use_cudnn=self.use_cudnn, order=self.order,
                                   cudnn_exhaustive_search=self.cudnn_exhaustive_search,
                                   ws_nbytes_limit=self.ws_nbytes_limit, **kwargs)

    def SpatialBN(self, *args, **kwargs):
        return brew.spatial_bn(self, *args, **kwargs)

    def SpatialGN(self, *args, **kwargs):
        return brew.spatial_gn(self, *args, **kwargs)

    def InstanceNorm(self, *args, **kwargs):
        return brew.instance_norm(self, *args, **kwargs)

    def MaxPool(self, *args, **kwargs):
        return brew.max_pool(self, *args, use_cudnn=self.use_cudnn, order=self.order, **kwargs)

    def AveragePool(self, *args, **kwargs):
        return brew.average_pool(self, *args, use_cudnn=self.use_cudnn, order=self.order, **kwargs)

    def LRN(self, *args, **kwargs):
        return brew.lrn(self, *args, **kwargs)

    def Dropout(self, *args, **kwargs):
        return brew.dropout(self, *args, use_cudnn=self.use_cudnn, **kwargs)

    def Softmax(self, *args, **kwargs):
        return brew.softmax(self, *args, use_cudnn=self.use_cudnn, **kwargs)

    def PRelu(self, *args, **kwargs):
        return brew.prelu(self, *args, **kwargs)  # order comes from the arg scope

    def Relu(self, *args, **kwargs):
        return brew.relu(self, *args, order=self.order, use_cudnn=self.use_cudnn, **kwargs)

    def Concat(self, *args, **kwargs):
        return brew.concat(self, *args, **kwargs)

    def DepthConcat(self, *args, **kwargs):
        """The old name of ``Concat``."""
        return self.Concat(*args, **kwargs)

    def Sum(self, *args, **kwargs):
        return brew.sum(self, *args, **kwargs)

    def Transpose(self, *args, **kwargs):
        return brew.transpose(self, *args, use_cudnn=self.use_cudnn, **kwargs)

    def Iter(self, *args, **kwargs):
        return brew.iter(self, *args, **kwargs)

    def Accuracy(self, *args, **kwargs):
        return brew.accuracy(self, *args, **kwargs)

    def AddWeightDecay(self, weight_decay):
        return brew.add_weight_decay(self, weight_decay)

    @property
    def XavierInit(self):
        return ("XavierFill", {})

    def ConstantInit(self, value):
        return ("ConstantFill", dict(value=value))

    @property
    def MSRAInit(self):
        return ("MSRAFill", {})

    @property
    def ZeroInit(self):
        return ("ConstantFill", {})
