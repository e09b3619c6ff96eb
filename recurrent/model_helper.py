"""ModelHelper: a net, its parameter-initialisation net and its parameters, as
caffe2.python.model_helper (plus the pieces of caffe2.python.modeling that
parameters need: ParameterTags, ParameterInfo, Initializer,
ExternalInitializer).

A model made with ``param_model=outer`` shares ``outer``'s
``param_init_net``, ``params`` and parameter registry, so a step model (an
RNN cell) creates its parameters in the outer model.
"""

from . import core, scope
from .optimizer_context import optimizer_for_tags
from .parameter_sharing import parameter_sharing_context


class ParameterTags:
    BIAS = "BIAS"
    WEIGHT = "WEIGHT"
    COMPUTED_PARAM = "COMPUTED_PARAM"


class ParameterInfo:
    """What a model knows about one parameter blob."""

    def __init__(self, param_id, param, key=None, shape=None, length=None, grad=None,
                 blob_copy=None):
        if not isinstance(param, core.BlobReference):
            param = core.BlobReference(str(param))
        self.param_id = param_id
        self.name = str(param)
        self.blob = param
        self.key = key
        self.shape = list(shape) if shape is not None else None
        self.size = None
        if self.shape is not None:
            size = 1
            for d in self.shape:
                size *= int(d)
            self.size = size
        self.length = max(1, length if length is not None else 1)
        self.grad = grad
        self.blob_copy = blob_copy
        self.optimizer = None
        self.regularizer = None

    def __str__(self):
        return self.name

    def __repr__(self):
        return "ParameterInfo(%r, shape=%r, grad=%r)" % (self.name, self.shape, self.grad)


class Initializer:
    """Creates a parameter with one fill op in the init net:
    ``Initializer('XavierFill')``, ``Initializer('ConstantFill', value=0.5)``."""

    def __init__(self, operator_name=None, **kwargs):
        self.operator_name = operator_name
        self.operator_kwargs = kwargs

    def update(self, operator_name, kwargs):
        if self.operator_name is not None:
            raise ValueError("Initializer: the operator name is already set to '%s'"
                             % self.operator_name)
        self.operator_name = operator_name
        self.operator_kwargs = kwargs

    def create_param(self, param_name, init_net, shape):
        if self.operator_name is None:
            raise ValueError("Initializer for parameter '%s' has no operator name" % param_name)
        param = getattr(init_net, self.operator_name)(
            [], param_name, shape=list(shape), **self.operator_kwargs)
        return ParameterInfo(param_id=None, param=param, shape=shape)


class ExternalInitializer:
    """For parameters whose value is fed from outside: no init op is made."""

    def create_param(self, param_name, init_net, shape):
        if isinstance(param_name, core.BlobReference):
            param = core.BlobReference(str(param_name), init_net)
        else:
            param = core.ScopedBlobReference(param_name, init_net)
        return ParameterInfo(param_id=None, param=param, shape=shape)


def update_initializer(initializer_class, operator_name_and_kwargs, default_operator_name_and_kwargs):
    """Caffe2's helper: an initializer from a ``(op_name, kwargs)`` tuple (or the default)."""
    if operator_name_and_kwargs is None:
        operator_name_and_kwargs = default_operator_name_and_kwargs
    if initializer_class is None:
        initializer_class = Initializer
    return initializer_class(operator_name_and_kwargs[0], **operator_name_and_kwargs[1])


def _as_initializer(initializer, param_name):
    if initializer is None:
        raise ValueError("create_param('%s'): an initializer is required, e.g. ('XavierFill', {})"
                         % param_name)
    if hasattr(initializer, "create_param"):
        return initializer
    if isinstance(initializer, (tuple, list)) and len(initializer) in (1, 2) \
            and isinstance(initializer[0], str):
        kwargs = initializer[1] if len(initializer) == 2 else {}
        if not isinstance(kwargs, dict):
            raise TypeError("create_param('%s'): initializer kwargs must be a dict, got %s"
                            % (param_name, type(kwargs).__name__))
        return Initializer(initializer[0], **kwargs)
    raise TypeError("create_param('%s'): initializer must be an ('OpName', {kwargs}) tuple or an "
                    "Initializer, got %r" % (param_name, initializer))


# Operators a ModelHelper forwards to its net (model.Relu(...) == model.net.Relu(...)).
_known_working_ops = {
    "Accuracy", "Adam", "Add", "Adagrad", "SparseAdagrad", "AveragedLoss", "Cast", "Checkpoint",
    "ConstantFill", "Copy", "CopyGPUToCPU", "CopyCPUToGPU", "DequeueBlobs", "EnsureCPUOutput",
    "ExpandDims", "Flatten", "FlattenToVec", "LabelCrossEntropy", "LearningRate", "MakeTwoClass",
    "MatMul", "NCCLAllreduce", "NHWC2NCHW", "PackSegments", "Print", "PRelu", "ReduceFrontSum",
    "Scale", "ScatterWeightedSum", "Sigmoid", "SortedSegmentSum", "Snapshot", "Softmax",
    "SoftmaxWithLoss", "SquaredL2Distance", "Squeeze", "StopGradient", "Summarize", "Tanh",
    "Transpose", "UnpackSegments", "WeightedSum", "YellowFin", "Relu", "Sum", "Sub", "Mul",
    "Concat", "Split", "Reshape", "SumElements", "ElementwiseLinear", "FC", "GivenTensorFill",
    "UniformFill", "GaussianFill", "XavierFill", "LSTMUnit", "GRUUnit", "RecurrentNetwork",
}


class ModelHelper:
    """A model: ``net`` (the computation), ``param_init_net`` (creates the
    parameters) and ``params`` (BlobReferences of the parameters).

    ``ModelHelper(name=None, init_params=True, param_model=None,
    arg_scope=None)``; ``name`` defaults to ``'model'``. With
    ``init_params=False`` parameters are registered but not initialised
    (their values are fed from outside). ``arg_scope`` holds default keyword
    arguments for ``brew`` helpers.
    """

    def __init__(self, name=None, init_params=True, allow_not_known_ops=True,
                 skip_sparse_optim=False, param_model=None, arg_scope=None):
        self.name = name or "model"
        self.net = core.Net(self.name)
        if param_model is not None:
            self.param_init_net = param_model.param_init_net
            self.param_to_grad = param_model.param_to_grad
            self.params = param_model.params
            self._parameters_info = param_model._parameters_info
            self._computed_params = param_model._computed_params
        else:
            self.param_init_net = core.Net(self.name + "_init")
            self.param_to_grad = {}
            self.params = []
            self._parameters_info = {}
            self._computed_params = []
        self._param_model = param_model
        self.init_params = init_params
        self.allow_not_known_ops = allow_not_known_ops
        self.skip_sparse_optim = skip_sparse_optim
        self.weights = []
        self.biases = []
        self.grad_map = {}
        self.gradient_ops_added = False
        self._arg_scope = dict(arg_scope or {})
        self._devices = []

    @property
    def arg_scope(self):
        return self._arg_scope

    def Proto(self):
        return self.net.Proto()

    def InitProto(self):
        return self.param_init_net.Proto()

    # ---- parameters
    @staticmethod
    def _normalize_tags(tags):
        if tags is None:
            return set()
        if isinstance(tags, str):
            return {tags}
        return set(tags)

    def create_param(self, param_name, shape, initializer, tags=None):
        """Creates (or returns the existing) parameter ``param_name``.

        A str name gets the current name scope (as ``ParameterSharing`` maps
        it); a BlobReference is used as it is. ``initializer`` is ``('OpName', {kwargs})`` (e.g.
        ``('XavierFill', {})``, ``('ConstantFill', {'value': 0.0})``) or an
        Initializer object; it adds one op ``OpName([], param, shape=shape,
        **kwargs)`` to ``param_init_net`` (none if ``init_params`` is False).
        Asking again for an existing name returns it (the shape must match).
        """
        if isinstance(param_name, core.BlobReference):
            name = str(param_name)
        elif isinstance(param_name, str):
            name = parameter_sharing_context.get_parameter_name(param_name)
        else:
            raise TypeError("create_param: param_name must be a str or BlobReference, got %s"
                            % type(param_name).__name__)
        shape = [int(d) for d in shape]
        if name in self._parameters_info:
            info = self._parameters_info[name]
            if info.shape is not None and info.shape != shape:
                raise ValueError("parameter '%s' already exists with shape %s, asked for %s"
                                 % (name, info.shape, shape))
            return info.blob
        init = _as_initializer(initializer, name)
        if not self.init_params:
            init = ExternalInitializer()
        info = init.create_param(param_name=core.BlobReference(name), init_net=self.param_init_net,
                                 shape=shape)
        # the optimizer of a surrounding optimizer_context.UseOptimizer, if any (Caffe2's)
        info.optimizer = optimizer_for_tags(self._normalize_tags(tags))
        self._parameters_info[name] = info
        self.AddParameter(info.blob, tags)
        return info.blob

    def AddParameter(self, param, tags=None):
        """Registers ``param`` (a BlobReference) as a parameter of the model."""
        if not isinstance(param, core.BlobReference):
            raise TypeError("AddParameter: param must be a BlobReference, got %s"
                            % type(param).__name__)
        tags = self._normalize_tags(tags)
        if ParameterTags.COMPUTED_PARAM in tags:
            self._computed_params.append(param)
        else:
            self.params.append(param)
        if ParameterTags.WEIGHT in tags:
            self.weights.append(param)
        if ParameterTags.BIAS in tags:
            self.biases.append(param)

    def get_param_info(self, param):
        """The ParameterInfo of ``param`` (name or BlobReference), or None."""
        return self._parameters_info.get(str(param))

    def GetParams(self, namescope=None, top_scope=False):
        """Parameters under ``namescope`` (default: the current name scope)."""
        if namescope is None:
            namescope = scope.CurrentNameScope()
        elif namescope and not namescope.endswith(scope._NAMESCOPE_SEPARATOR):
            namescope += scope._NAMESCOPE_SEPARATOR
        if namescope == "":
            return self.params[:]
        return [p for p in self.params if str(p).startswith(namescope)]

    def GetComputedParams(self, namescope=None):
        if namescope is None:
            namescope = scope.CurrentNameScope()
        elif namescope and not namescope.endswith(scope._NAMESCOPE_SEPARATOR):
            namescope += scope._NAMESCOPE_SEPARATOR
        return [p for p in self._computed_params if str(p).startswith(namescope)]

    def GetAllParams(self, namescope=None):
        return self.GetParams(namescope) + self.GetComputedParams(namescope)

    def _Validate(self):
        """The names listed more than once in ``params``, sorted (Caffe2's ``_Validate``)."""
        names = [str(p) for p in self.params]
        return sorted({n for n in names if names.count(n) > 1})

    def Validate(self):
        dups = self._Validate()
        if dups:
            raise ValueError("model '%s' has duplicate parameters: %s" % (self.name, dups))

    # ---- gradients
    def AddGradientOperators(self, *args, **kwargs):
        """Adds the backward pass to ``net`` (see Net.AddGradientOperators);
        fills ``grad_map`` and ``param_to_grad``; returns ``grad_map``."""
        if self.gradient_ops_added:
            raise RuntimeError("AddGradientOperators can be called only once per model ('%s')"
                               % self.name)
        self.Validate()
        self.gradient_ops_added = True
        self.grad_map = self.net.AddGradientOperators(*args, **kwargs)
        self.param_to_grad = self.get_param_to_grad(self.params)
        for param, grad in self.param_to_grad.items():
            info = self.get_param_info(param)
            if info is not None:
                info.grad = grad
            else:
                self._parameters_info[str(param)] = ParameterInfo(
                    param_id=None, param=param, grad=grad)
        return self.grad_map

    def get_param_to_grad(self, params):
        """{param: gradient blob} for the given params that have a gradient."""
        if not self.gradient_ops_added:
            raise RuntimeError("call AddGradientOperators first")
        return {p: self.grad_map[str(p)] for p in params if str(p) in self.grad_map}

    def GetOptimizationParamInfo(self, params=None):
        """The ParameterInfo of each parameter (default: ``GetParams()``) that has
        a gradient (after ``AddGradientOperators``), as in Caffe2."""
        if params is None:
            params = self.GetParams()
        with_grad = self.get_param_to_grad(params) if self.gradient_ops_added else {}
        names = {str(p) for p in with_grad}
        return [self.get_param_info(p) for p in params
                if str(p) in names and self.get_param_info(p) is not None]

    # ---- naming, devices, complete nets
    def get_name(self):
        """The model's name (Caffe2's ``get_name``)."""
        return self.name

    def GetDevices(self):
        """The devices a data-parallel model runs on. Caffe2 filled them only through
        data_parallel_model (GPU) and asserted otherwise; this runtime is CPU only and has no
        data_parallel_model, so unless ``_devices`` was set by hand this raises RuntimeError (Caffe2:
        AssertionError), with Caffe2's hint."""
        if not self._devices:
            raise RuntimeError("model '%s': GetDevices: no devices set (Caffe2: use data_parallel_model "
                               "to run a model on several GPUs; this runtime is CPU only)" % self.name)
        return self._devices

    def GetCompleteNet(self):
        """One net: a copy of ``param_init_net`` named ``<name>_complete_net`` whose ops get
        ``/param_init_net`` appended to their ``debug_info``, then the ops of ``net``; the net
        ``type`` of ``net`` is kept. ``ConstructInitTrainNetfromNet`` splits it again."""
        new_net = self.param_init_net.Clone(self.name + "_complete_net", keep_schema=True)
        for op in new_net.Proto().op:
            op.debug_info = (op.debug_info or "") + "/param_init_net"
        new_net.AppendNet(self.net)
        if self.net.Proto().type:
            new_net.Proto().type = self.net.Proto().type
        return new_net

    def ConstructInitTrainNetfromNet(self, net):
        """Splits a net made by ``GetCompleteNet`` (ops whose ``debug_info`` ends with
        ``/param_init_net`` go to the init net): sets ``param_init_net`` to
        ``<net name>/generated_param_init_net`` and ``net`` to ``<net name>/generated_net``, each
        with its external inputs and outputs recomputed from its ops (Clone's
        ``update_external_list``)."""
        if not isinstance(net, core.Net):
            raise TypeError("ConstructInitTrainNetfromNet: expected a core.Net, got %s" % type(net).__name__)
        param_ids, train_ids = [], []
        for i, op in enumerate(net.Proto().op):
            (param_ids if (op.debug_info or "").endswith("/param_init_net") else train_ids).append(i)
        self.param_init_net = net.Clone(net.Name() + "/generated_param_init_net", keep_schema=True,
                                        op_id_mask=param_ids, update_external_list=True)
        self.net = net.Clone(net.Name() + "/generated_net", keep_schema=True, op_id_mask=train_ids,
                             update_external_list=True)

    def CreateDB(self, blob_out, db, db_type, **kwargs):
        """Caffe2's: a ``CreateDB`` op in ``param_init_net`` writing the reader ``blob_out`` for the
        file ``db`` (``db_type`` 'minidb'); returns the reader's BlobReference."""
        return self.param_init_net.CreateDB([], blob_out, db=db, db_type=db_type, **kwargs)

    # ---- operators through the model
    def __getattr__(self, op_type):
        if op_type.startswith("_"):
            raise AttributeError(op_type)
        if "net" not in self.__dict__:
            raise AttributeError(op_type)
        allow = self.__dict__.get("allow_not_known_ops", True)
        if op_type not in _known_working_ops and not (allow and core.IsOperator(op_type)):
            raise AttributeError("ModelHelper has no attribute or operator '%s' (use model.net.%s "
                                 "to add an arbitrary operator)" % (op_type, op_type))
        return getattr(self.net, op_type)

    def __repr__(self):
        return "ModelHelper(%r, %d params)" % (self.name, len(self.params))


def ExtractPredictorNet(net_proto, input_blobs, output_blobs, device=None, renames=None,
                        disabled_inputs=None):
    """A net for prediction taken from a training net, as Caffe2's ``ExtractPredictorNet``.

    ``net_proto``: the NetDef (``model.net.Proto()``; a Net is accepted too). ``input_blobs`` /
    ``output_blobs``: the predictor's inputs and outputs. Kept are the ops from the first that reads an
    input (StopGradient not counted) to the last that writes an output, each only when every input it
    reads is known: an external input of the training net, a predictor input or an output of an op
    kept before it (so the loss and the gradient ops after the outputs are dropped). A
    ``RecurrentNetwork`` keeps its forward ``step_net``; its ``backward_step_net`` is removed. An op
    with ``is_test=0`` (e.g. a training Dropout) is refused (ValueError, Caffe2: Exception).
    ``device``: a DeviceOption given to every op kept, step-net ops included. ``renames``: {blob:
    new name}, applied to the ops, the step nets (and the blob names inside RecurrentNetwork's
    arguments, which Caffe2 left alone) and the external lists. ``disabled_inputs``: blobs treated as
    unknown, so the ops reading them (and what depends on them) are dropped.

    Returns ``(predict_net, params)``: a ``core.Net`` named ``<net>_predict`` whose external inputs
    are the predictor inputs plus the training net's external inputs the kept ops (or their step nets)
    read, and whose external outputs are the outputs plus the training net's external outputs the
    kept ops write; ``params`` is the sorted list of external inputs that are not predictor inputs
    (what to copy from the trained workspace). No input or no output among the ops is a ValueError
    (Caffe2: Exception). The training net is not changed (Caffe2 cleared ``backward_step_net`` in
    the training net's own ops).
    """
    import copy as _copy
    from .proto import NetDef
    if isinstance(net_proto, core.Net):
        net_proto = net_proto.Proto()
    if not isinstance(net_proto, NetDef):
        raise TypeError("ExtractPredictorNet: net_proto must be a NetDef or Net, got %s"
                        % type(net_proto).__name__)
    if isinstance(input_blobs, (str, core.BlobReference)):
        input_blobs = [input_blobs]
    if isinstance(output_blobs, (str, core.BlobReference)):
        output_blobs = [output_blobs]
    renames = {str(k): str(v) for k, v in (renames or {}).items()}
    orig_ext_in = [str(b) for b in net_proto.external_input]
    orig_ext_out = {str(b) for b in net_proto.external_output}
    inputs = list(dict.fromkeys(str(b) for b in input_blobs))
    outputs = list(dict.fromkeys(str(b) for b in output_blobs))
    known = set(orig_ext_in) | set(inputs)
    if disabled_inputs is not None:
        known -= {str(b) for b in disabled_inputs}
    ops = list(net_proto.op)
    firsts = [j for j, op in enumerate(ops) if op.type != "StopGradient" and set(inputs) & set(op.input)]
    if not firsts:
        raise ValueError("ExtractPredictorNet: net '%s' has no op reading the inputs %s"
                         % (net_proto.name, inputs))
    lasts = [j for j, op in enumerate(ops) if set(outputs) & set(op.output)]
    if not lasts:
        raise ValueError("ExtractPredictorNet: net '%s' has no op writing the outputs %s"
                         % (net_proto.name, outputs))
    ext_in = dict.fromkeys(inputs)
    ext_out = dict.fromkeys(outputs)
    kept = []
    for j in range(min(firsts), max(lasts) + 1):
        op = ops[j]
        if not known.issuperset(op.input):
            continue
        for a in op.arg:
            if a.name == "is_test" and a.i == 0:
                raise ValueError("ExtractPredictorNet: op %s #%d (%s -> %s) has is_test=0: was the predictor "
                                 "taken from a training model instead of a test model?"
                                 % (op.type, j, list(op.input), list(op.output)))
        op = _copy.deepcopy(op)
        if op.type == "RecurrentNetwork":
            op.arg = [a for a in op.arg if a.name != "backward_step_net"]
            for a in op.arg:
                if a.name == "step_net" and a.n is not None:
                    for b in a.n.external_input:
                        if str(b) in orig_ext_in:
                            ext_in.setdefault(str(b), None)
                    if device is not None:
                        for sop in a.n.op:
                            sop.device_option = _copy.deepcopy(device)
        if device is not None:
            op.device_option = _copy.deepcopy(device)
        kept.append(op)
        known.update(str(b) for b in op.output)
        for b in op.input:
            if b in orig_ext_in:
                ext_in.setdefault(b, None)
        for b in op.output:
            if b in orig_ext_out:
                ext_out.setdefault(b, None)
    predict = NetDef(net_proto.name + "_predict")
    predict.op = kept
    predict.external_input = list(ext_in)
    predict.external_output = list(ext_out)
    if renames:
        predict = core._remap_netdef(predict, renames)
    predict_net = core.Net(predict)
    renamed_inputs = {renames.get(b, b) for b in inputs}
    params = sorted(set(predict_net.Proto().external_input) - renamed_inputs)
    return predict_net, params
