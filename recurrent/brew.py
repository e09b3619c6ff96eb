"""brew: helper functions that add layers (ops plus their parameters) to a
ModelHelper, as caffe2.python.brew.

``brew.fc(model, 'x', 'y', dim_in, dim_out)`` creates ``y_w`` (dim_out x
dim_in, XavierFill) and ``y_b`` (dim_out, ConstantFill 0) in
``model.param_init_net`` under the current name scope and adds
``FC([x, y_w, y_b], y)`` to ``model.net``. Every helper takes the model first.
Default keyword arguments come from ``model.arg_scope`` and from
``brew.arg_scope(helpers, **kwargs)`` contexts (explicit ones win).
"""

import contextlib
import functools
import inspect
import threading
import warnings

from .model_helper import (ExternalInitializer, Initializer, ModelHelper, ParameterTags,
                           update_initializer)

_registry = {}
_scope = threading.local()


def _current_arg_scope():
    s = getattr(_scope, "stack", None)
    return s[-1] if s else {}


@contextlib.contextmanager
def arg_scope(helpers, **kwargs):
    """Within the block, the given helpers (functions or names) get ``kwargs``
    as default keyword arguments. Nested scopes merge."""
    if not isinstance(helpers, (list, tuple)):
        helpers = [helpers]
    new = {k: dict(v) for k, v in _current_arg_scope().items()}
    for h in helpers:
        name = h if isinstance(h, str) else getattr(h, "__name__", None)
        if name not in _registry:
            raise ValueError("brew.arg_scope: '%s' is not a brew helper" % (name,))
        new.setdefault(name, {}).update(kwargs)
    stack = getattr(_scope, "stack", None)
    if stack is None:
        stack = _scope.stack = []
    stack.append(new)
    try:
        yield
    finally:
        stack.pop()


def _helper(func):
    """Registers ``func`` as a brew helper and applies the argument scopes."""
    name = func.__name__
    params = inspect.signature(func).parameters
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if args and isinstance(args[0], ModelHelper):
            model = args[0]
        elif "model" in kwargs:
            model = kwargs["model"]
        else:
            raise TypeError("brew.%s: the first argument must be the ModelHelper" % name)
        defaults = dict(model.arg_scope)
        defaults.update(_current_arg_scope().get(name, {}))
        if not takes_kwargs:
            defaults = {k: v for k, v in defaults.items() if k in params}
        defaults.update(kwargs)
        return func(*args, **defaults)

    _registry[name] = wrapper
    return wrapper


def Register(helper):
    """Registers a user helper; it becomes ``brew.<name>``. A name already registered (a helper of
    this module or one registered before) is an AttributeError, as in Caffe2: the new helper would
    silently replace it."""
    if helper.__name__ in _registry:
        raise AttributeError("brew.Register: helper '%s' already exists. Please change your helper name."
                             % helper.__name__)
    wrapped = _helper(helper)
    globals()[helper.__name__] = wrapped
    return wrapped


def has_helper(helper_or_name):
    name = helper_or_name if isinstance(helper_or_name, str) else helper_or_name.__name__
    return name in _registry


def _op_spec(init, param):
    """``init`` as an ('OpName', {kwargs}) tuple, or None if it is not one. Caffe2's
    ``update_initializer`` read the first two elements of a longer tuple and ignored the rest (its own
    crf_test passes ('UniformFill', {'min': -1.0}, {'max': 1.0})): taken the same way, with a warning
    naming what is ignored."""
    if not (isinstance(init, (tuple, list)) and len(init) >= 2 and isinstance(init[0], str)
            and isinstance(init[1], dict)):
        return None
    if len(init) > 2:
        warnings.warn("brew: the %s initializer %r has %d elements; as in Caffe2, only ('%s', %r) is used "
                      "and %r is ignored" % (param, init, len(init), init[0], init[1], tuple(init[2:])),
                      stacklevel=4)
    return (init[0], init[1])


def _initializer(init, default, param):
    if init is None:
        init = default
    if hasattr(init, "create_param"):
        return init
    spec = _op_spec(init, param)
    if spec is not None:
        return update_initializer(None, spec, default)
    raise TypeError("brew: %s initializer must be an ('OpName', {kwargs}) tuple or an "
                    "Initializer, got %r" % (param, init))


def _initializer_of(initializer, init, default, param):
    """brew.fc's ``WeightInitializer`` / ``BiasInitializer``: a class (Caffe2's use, e.g.
    ``Initializer``) is made with ``init`` (or ``default``) as ``update_initializer`` does; an
    initializer object is used as it is; None means ``init``."""
    if initializer is None:
        return _initializer(init, default, param)
    if isinstance(initializer, type):
        spec = None if init is None else _op_spec(init, param)
        if init is not None and spec is None:
            raise TypeError("brew: with an initializer class, the %s initializer must be an "
                            "('OpName', {kwargs}) tuple, got %r" % (param, init))
        return update_initializer(initializer, spec, default)
    if not hasattr(initializer, "create_param"):
        raise TypeError("brew: %s initializer must be an Initializer class or object, got %r"
                        % (param, initializer))
    return initializer


@_helper
def fc(model, blob_in, blob_out, dim_in, dim_out, weight_init=None, bias_init=None, axis=1,
       WeightInitializer=None, BiasInitializer=None, **kwargs):
    """Fully connected layer ``y = x W^T + b`` with parameters ``<blob_out>_w``
    (dim_out x dim_in) and ``<blob_out>_b`` (dim_out)."""
    w_init = _initializer_of(WeightInitializer, weight_init, ("XavierFill", {}), "weight")
    b_init = _initializer_of(BiasInitializer, bias_init, ("ConstantFill", {}), "bias")
    if not model.init_params:
        w_init = b_init = ExternalInitializer()
    blob_out = blob_out or model.net.NextName()
    bias_tags = [ParameterTags.BIAS]
    if "freeze_bias" in kwargs:
        kwargs.pop("freeze_bias")
        bias_tags.append(ParameterTags.COMPUTED_PARAM)
    weight = model.create_param(param_name=str(blob_out) + "_w", shape=[dim_out, dim_in],
                                initializer=w_init, tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=str(blob_out) + "_b", shape=[dim_out],
                              initializer=b_init, tags=bias_tags)
    if axis != 1:
        kwargs["axis"] = axis
    return model.net.FC([blob_in, weight, bias], blob_out, **kwargs)


@_helper
def layer_norm(model, blob_in, blob_out, dim_in, axis=1, epsilon=1e-4, initial_scale=1.0, initial_bias=0.0):
    """Layer normalization (https://arxiv.org/abs/1607.06450) with a learned
    scale and bias, as Caffe2's helper: ``LayerNorm(blob_in) -> (blob_out,
    <blob_out>_mean, <blob_out>_stdev)`` over the dims from ``axis`` on, then
    ``<blob_out>_scaled = blob_out * <blob_out>_scale`` and ``<blob_out>_biased
    = <blob_out>_scaled + <blob_out>_bias`` (Mul / Add with broadcast=1).

    ``dim_in``: the shape of the scale and bias, an int (the normalized dims
    are one dim of that size) or a list (the dims from ``axis`` on). The
    parameters ``<blob_out>_scale`` (ConstantFill ``initial_scale``, tagged
    WEIGHT) and ``<blob_out>_bias`` (ConstantFill ``initial_bias``, BIAS) are
    created with ``model.create_param``: under the current name scope, in the
    param model of a step model. A negative ``axis`` counts from the end;
    the broadcast then aligns the parameters with the last dims (Caffe2 passed
    the negative axis on to Mul / Add, which refused it unless it was -1).
    Returns ``(<blob_out>_biased, <blob_out>_mean, <blob_out>_stdev)``.
    """
    shape = [dim_in] if isinstance(dim_in, int) else list(dim_in)
    # outputs: a str gets the name scope, a BlobReference is used as it is (blob_out + str keeps its kind);
    # parameter names are str, scoped by create_param (as brew.fc's)
    normalized, mean, stdev = model.net.LayerNorm(
        [blob_in], [blob_out, blob_out + "_mean", blob_out + "_stdev"], axis=axis, epsilon=epsilon)
    scale = model.create_param(param_name=str(blob_out) + "_scale", shape=shape,
                               initializer=("ConstantFill", {"value": float(initial_scale)}),
                               tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=str(blob_out) + "_bias", shape=shape,
                              initializer=("ConstantFill", {"value": float(initial_bias)}),
                              tags=ParameterTags.BIAS)
    bcast_axis = axis if axis >= 0 else -1
    scaled = model.net.Mul([normalized, scale], blob_out + "_scaled", broadcast=1, axis=bcast_axis)
    biased = model.net.Add([scaled, bias], blob_out + "_biased", broadcast=1, axis=bcast_axis)
    return biased, mean, stdev


def _norm_param(model, name, dim_in, init, default, tags):
    init = _initializer_of(init, None, default, name)
    if not model.init_params:
        init = ExternalInitializer()
    return model.create_param(param_name=name, shape=[dim_in], initializer=init, tags=tags)


def _scale_bias(model, name, dim_in, init_scale, init_bias, ScaleInitializer, BiasInitializer):
    """The (dim_in,) parameters <name>_s (ConstantFill init_scale, WEIGHT) and <name>_b (init_bias, BIAS)."""
    scale = _norm_param(model, name + "_s", dim_in, ScaleInitializer,
                        ("ConstantFill", {"value": float(init_scale)}), ParameterTags.WEIGHT)
    bias = _norm_param(model, name + "_b", dim_in, BiasInitializer,
                       ("ConstantFill", {"value": float(init_bias)}), ParameterTags.BIAS)
    return scale, bias


@_helper
def spatial_bn(model, blob_in, blob_out, dim_in, init_scale=1., init_bias=0., ScaleInitializer=None,
               BiasInitializer=None, RunningMeanInitializer=None, RunningVarianceInitializer=None,
               order="NCHW", **kwargs):
    """Batch normalization per channel, as Caffe2's helper: parameters ``<blob_out>_s`` (``init_scale``,
    WEIGHT), ``<blob_out>_b`` (``init_bias``, BIAS) and the running statistics ``<blob_out>_rm`` (0) and
    ``<blob_out>_riv`` (1; the running variance, named as Caffe2 did), COMPUTED_PARAM. With ``is_test``
    true ``SpatialBN(...) -> blob_out`` (returned as the op's outputs), else ``-> (blob_out, _rm, _riv,
    <blob_out>_sm, <blob_out>_siv)``, the running statistics updated in place; returns ``blob_out``."""
    blob_out = blob_out or model.net.NextName()
    name = str(blob_out)
    scale, bias = _scale_bias(model, name, dim_in, init_scale, init_bias, ScaleInitializer, BiasInitializer)
    rm = _norm_param(model, name + "_rm", dim_in, RunningMeanInitializer, ("ConstantFill", {"value": 0.0}),
                     ParameterTags.COMPUTED_PARAM)
    riv = _norm_param(model, name + "_riv", dim_in, RunningVarianceInitializer,
                      ("ConstantFill", {"value": 1.0}), ParameterTags.COMPUTED_PARAM)
    if kwargs.get("is_test"):
        return model.net.SpatialBN([blob_in, scale, bias, rm, riv], [blob_out], order=order, **kwargs)
    outs = [blob_out, rm, riv, blob_out + "_sm", blob_out + "_siv"]
    return model.net.SpatialBN([blob_in, scale, bias, rm, riv], outs, order=order, **kwargs)[0]


@_helper
def spatial_gn(model, blob_in, blob_out, dim_in, init_scale=1., init_bias=0., ScaleInitializer=None,
               BiasInitializer=None, **kwargs):
    """Group normalization, as Caffe2's helper: parameters ``<blob_out>_s`` (``init_scale``, WEIGHT) and
    ``<blob_out>_b`` (``init_bias``, BIAS); ``GroupNorm -> (blob_out, <blob_out>_mean, <blob_out>_std)``
    (the third output is the inverse standard deviation, named as Caffe2 did); returns ``blob_out``.
    ``group`` (default 32), ``epsilon`` and ``order`` are passed on."""
    blob_out = blob_out or model.net.NextName()
    name = str(blob_out)
    scale, bias = _scale_bias(model, name, dim_in, init_scale, init_bias, ScaleInitializer, BiasInitializer)
    outs = [blob_out, blob_out + "_mean", blob_out + "_std"]
    return model.net.GroupNorm([blob_in, scale, bias], outs, **kwargs)[0]


@_helper
def instance_norm(model, blob_in, blob_out, dim_in, order="NCHW", **kwargs):
    """Instance normalization, as Caffe2's helper: parameters ``<blob_out>_s`` (1, WEIGHT) and
    ``<blob_out>_b`` (0, BIAS); with ``is_test`` true ``InstanceNorm -> blob_out`` (returned as the op's
    outputs), else ``-> (blob_out, <blob_out>_sm, <blob_out>_siv)``, returning ``blob_out``."""
    blob_out = blob_out or model.net.NextName()
    name = str(blob_out)
    scale, bias = _scale_bias(model, name, dim_in, 1.0, 0.0, None, None)
    if kwargs.get("is_test"):
        return model.net.InstanceNorm([blob_in, scale, bias], [blob_out], order=order, **kwargs)
    outs = [blob_out, blob_out + "_sm", blob_out + "_siv"]
    return model.net.InstanceNorm([blob_in, scale, bias], outs, order=order, **kwargs)[0]


def _conv_base(model, is_nd, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None, bias_init=None,
               WeightInitializer=None, BiasInitializer=None, group=1, transform_inputs=None, use_cudnn=False,
               order="NCHW", cudnn_exhaustive_search=False, ws_nbytes_limit=None, float16_compute=False,
               **kwargs):
    """Caffe2's _ConvBase: parameters ``<blob_out>_w`` (dim_out, dim_in / group, kernel...) in NCHW or
    (dim_out, kernel..., dim_in / group) in NHWC (XavierFill, WEIGHT) and ``<blob_out>_b`` (dim_out,
    ConstantFill, BIAS; none with ``no_bias``), then ``Conv``."""
    if is_nd:
        kernels = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
    elif isinstance(kernel, list):
        assert len(kernel) == 2, "Conv support only a 2D kernel."
        kernels = kernel
    else:
        kernels = [kernel] * 2
    engine = kwargs.get("engine")
    if engine is not None and use_cudnn and engine != "CUDNN":
        raise ValueError('When use_cudnn=True, the only engine you can specify is "CUDNN"')
    if engine is not None and not use_cudnn and engine == "CUDNN":
        raise ValueError('When use_cudnn=False, the only engine you can specify is ""')
    if use_cudnn:
        # as Caffe2 (the engine and its arguments are accepted and ignored by the CPU op)
        kwargs["engine"] = "CUDNN"
        kwargs["exhaustive_search"] = cudnn_exhaustive_search
        if ws_nbytes_limit:
            kwargs["ws_nbytes_limit"] = ws_nbytes_limit
    use_bias = not kwargs.pop("no_bias", False)
    blob_out = blob_out or model.net.NextName()
    cin = int(dim_in / group)
    weight_shape = [dim_out] + ([cin] + kernels if order == "NCHW" else kernels + [cin])
    w_init = _initializer_of(WeightInitializer, weight_init, ("XavierFill", {}), "weight")
    b_init = _initializer_of(BiasInitializer, bias_init, ("ConstantFill", {}), "bias")
    if not model.init_params:
        w_init = b_init = ExternalInitializer()
    weight = model.create_param(param_name=str(blob_out) + "_w", shape=weight_shape, initializer=w_init,
                                tags=ParameterTags.WEIGHT)
    inputs = [blob_in, weight]
    if use_bias:
        inputs.append(model.create_param(param_name=str(blob_out) + "_b", shape=[dim_out], initializer=b_init,
                                         tags=ParameterTags.BIAS))
    if transform_inputs is not None:
        transform_inputs(model, blob_out, inputs)
    if float16_compute:
        kwargs["float16_compute"] = True
    if group != 1:
        kwargs["group"] = group
    if is_nd:
        return model.net.Conv(inputs, blob_out, kernels=kernels, order=order, **kwargs)
    if isinstance(kernel, list):
        return model.net.Conv(inputs, blob_out, kernel_h=kernel[0], kernel_w=kernel[1], order=order, **kwargs)
    return model.net.Conv(inputs, blob_out, kernel=kernel, order=order, **kwargs)


@_helper
def conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None, bias_init=None,
         WeightInitializer=None, BiasInitializer=None, group=1, transform_inputs=None, **kwargs):
    """2-D convolution, as Caffe2's helper: ``Conv([blob_in, <blob_out>_w, <blob_out>_b], blob_out,
    kernel=kernel, order=order, ...)`` (a list ``[h, w]`` kernel: ``kernel_h``, ``kernel_w``);
    ``no_bias=True`` leaves the bias out; ``use_cudnn``, ``cudnn_exhaustive_search``, ``ws_nbytes_limit`` and
    ``float16_compute`` become the op's engine and arguments as in Caffe2 (accepted and ignored: the op runs
    on the CPU in float32); an ``engine`` other than "CUDNN" with ``use_cudnn``, or "CUDNN" without it, is a
    ValueError, as in Caffe2."""
    return _conv_base(model, False, blob_in, blob_out, dim_in, dim_out, kernel, weight_init, bias_init,
                      WeightInitializer, BiasInitializer, group, transform_inputs, **kwargs)


@_helper
def conv_nd(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None, bias_init=None,
            WeightInitializer=None, BiasInitializer=None, group=1, transform_inputs=None, order="NCHW",
            **kwargs):
    """N-dimensional convolution (``kernel`` a list, one size per spatial dim; ``kernels=`` on the op), NCHW
    only as in Caffe2."""
    assert order == "NCHW", "ConvNd only supported for NCHW storage."
    return _conv_base(model, True, blob_in, blob_out, dim_in, dim_out, kernel, weight_init, bias_init,
                      WeightInitializer, BiasInitializer, group, transform_inputs, order=order, **kwargs)


@_helper
def group_conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None, bias_init=None, group=1,
               **kwargs):
    """``conv`` with a ``group`` argument (Caffe2 kept the name for compatibility)."""
    return conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=weight_init,
                bias_init=bias_init,
                group=group, **kwargs)


@_helper
def conv_transpose(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None, bias_init=None,
                   use_cudnn=False, order="NCHW", cudnn_exhaustive_search=False, ws_nbytes_limit=None,
                   **kwargs):
    """Transposed convolution, as Caffe2's helper: parameters ``<blob_out>_w`` (dim_in, dim_out, kernel,
    kernel) in NCHW or (dim_in, kernel, kernel, dim_out) in NHWC (``weight_init``, default XavierFill,
    WEIGHT) and ``<blob_out>_b`` (dim_out, ``bias_init``, default ConstantFill, BIAS; always made, as in
    Caffe2), then ``ConvTranspose([blob_in, w, b], blob_out, kernel=kernel, order=order, ...)``;
    ``use_cudnn`` sets the engine and its arguments, which are accepted and ignored."""
    blob_out = blob_out or model.net.NextName()
    name = str(blob_out)
    weight_shape = [dim_in, dim_out, kernel, kernel] if order == "NCHW" else [dim_in, kernel, kernel, dim_out]
    w_init = _initializer(weight_init, ("XavierFill", {}), "weight")
    b_init = _initializer(bias_init, ("ConstantFill", {}), "bias")
    if not model.init_params:
        w_init = b_init = ExternalInitializer()
    weight = model.create_param(param_name=name + "_w", shape=weight_shape, initializer=w_init,
                                tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=name + "_b", shape=[dim_out], initializer=b_init,
                              tags=ParameterTags.BIAS)
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
        kwargs["exhaustive_search"] = cudnn_exhaustive_search
        if ws_nbytes_limit:
            kwargs["ws_nbytes_limit"] = ws_nbytes_limit
    return model.net.ConvTranspose([blob_in, weight, bias], blob_out, kernel=kernel, order=order, **kwargs)


@_helper
def max_pool(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    """Max pooling, as Caffe2's helper: ``MaxPool(blob_in, blob_out, order=order, **kwargs)`` (``kernel``,
    ``stride``, ``pad``, ``legacy_pad``, ``global_pooling``, ... as the op's arguments); ``use_cudnn``
    sets ``engine='CUDNN'``, which is accepted and ignored."""
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
    return model.net.MaxPool(blob_in, blob_out, order=order, **kwargs)


@_helper
def average_pool(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    """Average pooling, as Caffe2's helper: ``AveragePool(blob_in, blob_out, order=order, **kwargs)``
    (``count_include_pad`` too); ``use_cudnn`` as in :func:`max_pool`."""
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
    return model.net.AveragePool(blob_in, blob_out, order=order, **kwargs)


@_helper
def lrn(model, blob_in, blob_out, order="NCHW", use_cudnn=False, **kwargs):
    """Local response normalization across channels, as Caffe2's helper: ``LRN(blob_in) ->
    (blob_out, _<blob_out>_scale)`` (``size``, ``alpha``, ``beta``, ``bias`` passed on), returning
    ``blob_out``. ``use_cudnn`` has no effect (the CPU op always runs; Caffe2 used cuDNN on a GPU only)."""
    return model.net.LRN(blob_in, [blob_out, "_" + str(blob_out) + "_scale"], order=order, **kwargs)[0]


@_helper
def sum(model, blob_in, blob_out, **kwargs):
    """Element-wise sum of the blobs in ``blob_in``."""
    return model.net.Sum(blob_in, blob_out, **kwargs)


@_helper
def sub(model, blob_in, blob_out, **kwargs):
    return model.net.Sub(blob_in, blob_out, **kwargs)


@_helper
def mat_mul(model, blob_in, blob_out, **kwargs):
    return model.net.MatMul(blob_in, blob_out, **kwargs)


@_helper
def batch_mat_mul(model, blob_in, blob_out, enable_tensor_core=False, **kwargs):
    """BatchMatMul of the two blobs in ``blob_in`` (``trans_a``, ``trans_b``)."""
    return model.net.BatchMatMul(blob_in, blob_out, **kwargs)


@_helper
def relu(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    return model.net.Relu(blob_in, blob_out, **kwargs)


@_helper
def sigmoid(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    return model.net.Sigmoid(blob_in, blob_out, **kwargs)


@_helper
def tanh(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    return model.net.Tanh(blob_in, blob_out, **kwargs)


@_helper
def softmax(model, blob_in, blob_out=None, use_cudnn=False, **kwargs):
    if blob_out is not None:
        return model.net.Softmax(blob_in, blob_out, **kwargs)
    return model.net.Softmax(blob_in, **kwargs)


@_helper
def concat(model, blobs_in, blob_out, **kwargs):
    """Concat along ``axis`` (default 1); returns the concatenated blob only
    (the split-info output is ``_<blob_out>_concat_dims``)."""
    if kwargs.get("order") and kwargs.get("axis") is not None:
        kwargs.pop("order")
    return model.net.Concat(blobs_in, [blob_out, "_" + str(blob_out) + "_concat_dims"], **kwargs)[0]


@_helper
def transpose(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    return model.net.Transpose(blob_in, blob_out, **kwargs)


@_helper
def dropout(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    """Dropout of ``blob_in`` into ``blob_out``, its mask in ``_<blob_out>_mask``
    (int32 0/1); returns ``blob_out``. ``is_test`` is required (Caffe2's rule);
    ``ratio`` defaults to 0.5, ``seed`` to a fresh one per op."""
    if "is_test" not in kwargs:
        raise ValueError("brew.dropout: argument 'is_test' is required")
    return model.net.Dropout(blob_in, [blob_out, "_" + str(blob_out) + "_mask"], **kwargs)[0]


@_helper
def elementwise_linear(model, blob_in, blob_out, dim, weight_init=None, bias_init=None, **kwargs):
    """``ElementwiseLinear([blob_in, <blob_out>_w, <blob_out>_b], blob_out)``: ``y = x * w + b`` per
    column, with parameters ``<blob_out>_w`` (dim, ConstantFill 1, WEIGHT) and ``<blob_out>_b``
    (dim, ConstantFill 0, BIAS), as Caffe2's helper. ``weight_init`` / ``bias_init``: ('OpName',
    {kwargs}). ``axis`` (default 1) goes to the op."""
    w_init = _initializer(weight_init, ("ConstantFill", {"value": 1.0}), "weight")
    b_init = _initializer(bias_init, ("ConstantFill", {"value": 0.0}), "bias")
    blob_out = blob_out or model.net.NextName()
    weight = model.create_param(param_name=str(blob_out) + "_w", shape=[dim], initializer=w_init,
                                tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=str(blob_out) + "_b", shape=[dim], initializer=b_init,
                              tags=ParameterTags.BIAS)
    return model.net.ElementwiseLinear([blob_in, weight, bias], blob_out, **kwargs)


@_helper
def prelu(model, blob_in, blob_out, num_channels=1, slope_init=None, **kwargs):
    """``PRelu([blob_in, <blob_out>_slope], blob_out)`` with the parameter ``<blob_out>_slope``
    (``[num_channels]``, ConstantFill 0.25 unless ``slope_init`` = ('OpName', {kwargs})), as Caffe2's
    helper. ``order`` (NCHW / NHWC) goes to the op; Caffe2's helper dropped every keyword, so an NHWC
    model's PRelu took the channels from dim 1."""
    s_init = _initializer(slope_init, ("ConstantFill", {"value": 0.25}), "slope")
    slope = model.create_param(param_name=str(blob_out) + "_slope", shape=[num_channels], initializer=s_init)
    order = {"order": kwargs["order"]} if "order" in kwargs else {}
    return model.net.PRelu([blob_in, slope], [blob_out], **order)


@_helper
def reduce_sum(model, blob_in, blob_out, **kwargs):
    """``ReduceSum`` (``axes``, ``keepdims``)."""
    return model.net.ReduceSum(blob_in, blob_out, **kwargs)


@_helper
def arg_min(model, blob_in, blob_out, **kwargs):
    """``ArgMin`` (``axis``, ``keepdims``); int32 indices."""
    return model.net.ArgMin(blob_in, blob_out, **kwargs)


@_helper
def arg_max(model, blob_in, blob_out, **kwargs):
    """``ArgMax`` (``axis``, ``keepdims``); int32 indices. Not a Caffe2 brew helper (added for
    symmetry with arg_min)."""
    return model.net.ArgMax(blob_in, blob_out, **kwargs)


@_helper
def depth_concat(model, blobs_in, blob_out, **kwargs):
    """The old name of ``concat`` (Caffe2 printed a deprecation line; here it is silent)."""
    return concat(model, blobs_in, blob_out, **kwargs)


@_helper
def iter(model, blob_out, **kwargs):
    """An iteration counter: ``ConstantFill([], blob_out, shape=[1], value=0, dtype=INT32)`` in
    ``param_init_net`` (Caffe2: INT64; int32 is this runtime's integer dtype) and
    ``Iter(blob_out, blob_out)`` in ``net``; returns the Iter output. A ``device_option`` keyword
    is dropped (CPU only), as Caffe2's."""
    from .core import DataType
    kwargs.pop("device_option", None)
    model.param_init_net.ConstantFill([], blob_out, shape=[1], value=0, dtype=DataType.INT32, **kwargs)
    return model.net.Iter(blob_out, blob_out, **kwargs)


@_helper
def accuracy(model, blob_in, blob_out, **kwargs):
    """``Accuracy([prediction, label], blob_out)``, with ``top_k`` when given. Caffe2's helper dropped
    every keyword on the CPU path, ``top_k`` included (so its top_k > 1 only worked on a GPU device);
    here ``top_k`` reaches the op. Returns the output (Caffe2: None)."""
    kwargs.pop("device_option", None)
    if "top_k" in kwargs:
        return model.net.Accuracy(blob_in, blob_out, top_k=kwargs["top_k"])
    return model.net.Accuracy(blob_in, blob_out)


@_helper
def add_weight_decay(model, weight_decay):
    """L2 regularization as Caffe2's helper: for each weight (``model.weights`` whose name scope is
    the current one; all of them at the top) ``grad = grad + weight_decay * param``, one
    ``WeightedSum([grad, ONE, param, wd], grad)`` in ``model.net``, with ``wd`` and ``ONE`` (shape
    [1]) made in ``param_init_net``. Call it after ``AddGradientOperators`` and before the
    optimizer. Nothing is added when ``weight_decay <= 0``. A weight without a gradient is a
    ValueError (Caffe2: a KeyError), and so is a sparse gradient (GradientSlice; Caffe2 failed in
    WeightedSum)."""
    from .core import GradientSlice
    from .scope import CurrentNameScope
    if weight_decay <= 0.0:
        return
    ns = CurrentNameScope()
    # Caffe2's _get_weights: the weights whose own name scope is the current one (not nested ones)
    weights = [w for w in model.weights if not ns or str(w).rpartition("/")[0] + "/" == ns]
    for w in weights:
        g = model.param_to_grad.get(w, model.param_to_grad.get(str(w)))
        if g is None:
            raise ValueError("brew.add_weight_decay: weight '%s' has no gradient (call "
                             "AddGradientOperators first)" % w)
        if isinstance(g, GradientSlice):
            raise ValueError("brew.add_weight_decay: weight '%s' has a sparse gradient (GradientSlice)" % w)
    wd = model.param_init_net.ConstantFill([], "wd", shape=[1], value=float(weight_decay))
    one = model.param_init_net.ConstantFill([], "ONE", shape=[1], value=1.0)
    for w in weights:
        g = model.param_to_grad.get(w, model.param_to_grad.get(str(w)))
        model.net.WeightedSum([g, one, w, wd], g)


__all__ = ["fc", "conv", "conv_nd", "group_conv", "conv_transpose", "max_pool", "average_pool", "lrn",
           "layer_norm", "spatial_bn", "spatial_gn", "instance_norm", "sum", "sub", "mat_mul", "relu",
           "sigmoid", "tanh", "softmax", "concat", "transpose", "dropout", "batch_mat_mul",
           "elementwise_linear", "prelu", "reduce_sum", "arg_min", "arg_max", "depth_concat", "iter",
           "accuracy", "add_weight_decay", "arg_scope", "Register", "has_helper", "Initializer"]
