"""Optimizers, as Caffe2's ``caffe2.python.optimizer`` built them.

``build_sgd(model, base_learning_rate, ...)``, ``build_adagrad`` and
``build_adam`` add the update of every parameter that has a gradient (after
``model.AddGradientOperators``) to ``model.net``, and the optimizer's state
(moments, the iteration counter and its Mutex, the constant ONE) to ``model.param_init_net``,
with Caffe2's operators (``AtomicIter``, ``LearningRate``, ``WeightedSum``,
``MomentumSGDUpdate``, ``Adagrad``, ``Adam``) and Caffe2's blob names, so a
training script ports by changing its imports:

    from recurrent.optimizer import build_sgd
    model.AddGradientOperators([loss])
    build_sgd(model, base_learning_rate=0.1, policy="step", stepsize=1, gamma=0.9999)

How one training iteration updates the parameters (as in Caffe2):
- the shared counter ``optimizer_iteration`` (int32 here, int64 in Caffe2;
  created at ``iter_val``, default 0, by ``param_init_net``, beside the Mutex
  ``iteration_mutex``: ``utils.BuildUniqueMutexIter``, Caffe2's ops) is
  incremented first, by an ``AtomicIter`` op at the head of the optimizer's
  ops, so the first iteration's learning rate is computed at iteration 1 (and
  Adam's first bias correction uses t = 2), exactly as in Caffe2;
- ``LearningRate`` computes ``-base_learning_rate * policy(iteration)`` (negative:
  descent) once per optimizer, into ``<Class>_<n>_lr_cpu``;
- SGD: ``WeightedSum([param, ONE, grad, lr], param)``, i.e. param - rate * grad;
  with ``momentum > 0``, ``MomentumSGDUpdate`` (Nesterov by default, as in
  Caffe2) with a ``<param>_momentum`` buffer;
- Adagrad: ``Adagrad`` with ``<param>_squared_sum`` (``epsilon`` 1e-4,
  ``decay`` 1);
- Adam: ``Adam`` with ``<param>_first_moment`` / ``<param>_second_moment``
  (``beta1`` 0.9, ``beta2`` 0.999, ``epsilon`` 1e-4: the optimizer's defaults,
  not the op's); ``enableRAdam=True`` (Caffe2's) makes the sparse updates
  rectified Adam (``SparseAdam(..., enableRAdam=1)``); dense gradients keep
  plain Adam, as in Caffe2.
- a sparse gradient (``core.GradientSlice``, e.g. of an embedding read with
  ``Gather``) updates only its rows, one occurrence at a time, in order:
  ``ScatterWeightedSum([param, ONE, indices, values, lr], param)`` for SGD,
  ``SparseMomentumSGDUpdate`` with momentum, ``SparseAdagrad``, ``SparseAdam``
  (Caffe2's ops); ``sparse_dedup_aggregator='sum'`` (or ``'mean'``) first
  merges repeated indices (``Net.DeduplicateGradientSlices``).

The policies are those of the ``LearningRate`` op: fixed, step (stepsize,
gamma), exp (gamma), inv (gamma, power), poly (max_iter, power), multistep
(stepsizes, gamma), linearWarmup (start_multiplier, num_iter), constantWarmup
(multiplier, num_iter), alter, hill, slope, gate, cyclical, cosine,
constantThenLinearWarmup, pieceWarmup, composite, compositeCyclical and
compositeCosine (see the README); their
arguments go through ``**kwargs``.

``build_ftrl`` / ``FtrlOptimizer`` (alpha 0.01, beta 1e-4, lambda1 0, lambda2
0) add ``Ftrl`` (``SparseFtrl`` for a sparse gradient) with ``<param>_ftrl_nz``
(param.shape + (2,): n and z), as Caffe2's; the rate is ``alpha`` itself (no
``LearningRate`` op, no policy). ``rowWise=True`` for Adagrad and Adam keeps
one second moment per row, ``<param>_avg_squared_sum`` /
``<param>_avg_second_moment`` of shape (rows,), made by ``Shape``, ``Slice``
and ``ConstantFill(input_as_shape=1)`` in ``param_init_net`` (Caffe2's
fallback when shape inference is unavailable), and updates with
``RowWiseSparseAdagrad`` / ``RowWiseSparseAdam``: sparse gradients only (a
dense gradient with rowWise is a ValueError when the optimizer is built;
Caffe2 asserted for Adam and failed at run time for Adagrad). Adagrad's
``decay`` must be 1 with rowWise (the op has none; Caffe2 asserted it for
every sparse Adagrad).

A base learning rate of 0 adds no update for the parameter (as in Caffe2); a
negative or non-finite one is a ValueError (Caffe2 asserted for SGD and
skipped the parameter for Adagrad and Adam).

``max_gradient_norm=c`` multiplies every rate by min(1, c / g), g the global
norm of all the parameters' gradients of this iteration (``SumSqrElements``,
``Sum``, ``Pow``, ``Max``, ``Div`` under the name scope
``norm_clipped_grad_update``), as Caffe2 did: for SGD that clips the gradient to
norm c; for Adagrad and Adam it scales the step instead. ``allow_lr_injection=True``
multiplies every rate by the blob ``lr_injection`` too (1.0 at first;
``set_lr_injection`` / ``get_lr_injection``). ``add_weight_decay`` adds
``weight_decay * param`` to the gradients of the model's weights.
A sparse gradient (a GradientSlice, e.g. an embedding's) updates only its rows
(``ScatterWeightedSum``, ``SparseMomentumSGDUpdate``, ``SparseAdagrad``,
``SparseAdam``, ``SparseAdadelta``, ``SparseWngrad``; see above).

``build_rms_prop``, ``build_adadelta`` and ``build_wngrad`` (Caffe2's
signatures and defaults) add:
- RmsProp (``alpha`` 0.01, ``decay`` 0.9, ``momentum`` 0, ``epsilon`` 1e-5):
  ``RmsProp([grad, <param>_mean_squares, <param>_momentum, ONE],
  [<param>_grad_o, ...])`` then ``WeightedSum([param, ONE, <param>_grad_o, lr],
  param)``. Caffe2 applied the step with ``MomentumSGDUpdate``, which also
  overwrote ``<param>_momentum`` with ``lr * grad_o``, so with ``momentum > 0``
  the next step's momentum term was scaled by the learning rate; here the
  momentum buffer keeps what ``RmsProp`` computed (with ``momentum`` 0, the
  default, the parameters are the same as Caffe2's). Dense gradients only: a
  GradientSlice is a ValueError, as Caffe2 asserted; so is ``alpha`` 0;
- Adadelta (``alpha`` 0.01, ``epsilon`` 1e-4, ``decay`` 0.95): ``Adadelta`` /
  ``SparseAdadelta`` with ``<param>_squared_moment`` and
  ``<param>_squared_moment_update``;
- Wngrad (``alpha`` 1.0, ``epsilon`` 1e-9, ``moment_init`` 100): ``Wngrad`` /
  ``SparseWngrad`` with the one-element ``<param>_moment`` (initialised to
  ``moment_init``); ``output_effective_lr`` (``_and_update``) add the outputs
  ``<param>_effective_lr`` (and ``<param>_update``) to the dense op.
``SparseFtrl``, ``RowWiseSparseAdagrad`` and ``RowWiseSparseAdam``: see above.
``build_decay_adagrad``, ``build_gftrl``, ``build_storm`` and ``lars=`` for
SGD, Adagrad, Storm and Wngrad: see the README ("DecayAdagrad, GFtrl, Storm and LARS").
``use_lr_adaption=True`` for Adam (Caffe2's): each Adam op also writes
``<param>_effective_grad`` and ``LearningRateAdaption`` then adapts the shared
rate blob in place (README: "Adam's learning-rate adaption").
``build_yellowfin`` / ``YellowFinOptimizer``: the ``YellowFin`` op with Caffe2's state blobs.
Not provided: the fp16 / multi-precision SGD optimizers; their names
(``build_multi_precision_sgd``, ``FP16SgdOptimizer``, ...) exist so
that modules importing them load, and calling them raises NotImplementedError saying why.
``optimizer_context.UseOptimizer`` picks a parameter's own optimizer where it is made.
"""

import collections
import copy
import logging
import re

import numpy as np

from . import core, scope, utils, workspace
from .model_helper import ParameterInfo
from .proto import device_of

__all__ = [
    "Optimizer", "SgdOptimizer", "AdagradOptimizer", "AdamOptimizer", "WeightDecayBuilder",
    "RmsPropOptimizer", "AdadeltaOptimizer", "WngradOptimizer", "FtrlOptimizer",
    "AuxOptimizerParams", "build_sgd", "build_adagrad", "build_adam", "add_weight_decay",
    "build_rms_prop", "build_adadelta", "build_wngrad", "build_ftrl",
    "DecayAdagradOptimizer", "GFtrlOptimizer", "StormOptimizer", "build_decay_adagrad", "build_gftrl",
    "build_storm",
    "get_lr_injection", "set_lr_injection", "OPTIMIZER_ITERATION_NAME", "get_param_device",
    "MultiPrecisionSgdOptimizer", "FP16SgdOptimizer", "YellowFinOptimizer", "build_multi_precision_sgd",
    "build_fp16_sgd", "build_yellowfin",
]

OPTIMIZER_ITERATION_NAME = "optimizer_iteration"
_LEARNING_RATE_INJECTION = "lr_injection"

AuxOptimizerParams = collections.namedtuple("AuxOptimizerParams", ["local", "shared"])
_instance_count = collections.defaultdict(int)
# Caffe2's name for the per-class instance counter (the ``<Class>_<n>_`` of the blob names)
_optimizer_instance_count = _instance_count


_logger = logging.getLogger(__name__)


def _refuse_option(optimizer, option, given, needs):
    if given:
        raise NotImplementedError("%s: %s is not provided: it needs %s, which this package does not have"
                                  % (optimizer, option, needs))


def reset_optimizer_instance_count():
    """Restarts the per-class instance numbers of ``make_unique_blob_name`` (Caffe2's)."""
    _instance_count.clear()


# The arguments the LearningRate op reads (csrc/ops/optim.c), which an optimizer's extra keyword
# arguments are for, and build_lr's own. Anything else is a TypeError when the optimizer is made:
# Caffe2 passed it to LearningRate, which ignored it (so a misspelt or unsupported option did nothing).
_LR_ARGS = frozenset("""
    gamma stepsize stepsizes power max_iter num_iter start_multiplier end_multiplier multiplier multiplier_1
    multiplier_2 num_iter_1 num_iter_2 active_first active_period inactive_period m1 n1 m2 n2 m3 max_lr decay
    min_lr period t_mult lr_shrink start_warmup_multiplier constant_warmup_num_iter linear_warmup_num_iter
    cyclical_max_lr cyclical_step_size cyclical_decay cosine_max_lr cosine_min_lr cosine_period cosine_t_mult
    cosine_lr_shrink""".split())
_BUILD_LR_ARGS = frozenset(["learning_rate_blob", "iter_val", "sub_policy_num_iters"])


def _is_lr_arg(key):
    if key in _LR_ARGS or key in _BUILD_LR_ARGS:
        return True
    m = re.match(r"sub_policy_\d+_(.+)$", key)
    return bool(m) and (m.group(1) in _LR_ARGS or m.group(1) in ("policy", "lr_scale"))


def _device():
    dev = scope.CurrentDeviceScope()
    return dev if dev is not None else core.DeviceOption(core.DeviceType.CPU)


def build_iteration(init_net, net, iter_val=0, name=OPTIMIZER_ITERATION_NAME):
    """The shared iteration counter ``name``: ``utils.BuildUniqueMutexIter(init_net, net,
    iter=name, iter_val=iter_val)`` (created at ``iter_val`` with the Mutex ``iteration_mutex`` by
    ``init_net``, incremented once per run of ``net`` by ``AtomicIter``; created once, returned
    again by later calls)."""
    return utils.BuildUniqueMutexIter(init_net, net, iter=name, iter_val=iter_val)


class Optimizer:
    """Adds the update of one parameter: ``optimizer(net, param_init_net,
    param_info)`` or ``optimizer(net, param_init_net, param, grad)``."""

    def __init__(self):
        self._aux_params = AuxOptimizerParams(local=[], shared=[])
        self._instance_num = _instance_count[type(self).__name__]
        _instance_count[type(self).__name__] += 1
        self._lr_multiplier = None
        self._use_dedicated_lr_iteration_counter = False

    @property
    def init_kwargs(self):
        """The extra keyword arguments, for the LearningRate op (its policy's arguments)."""
        return self.__dict__.get("_init_kwargs", {})

    @init_kwargs.setter
    def init_kwargs(self, kwargs):
        bad = sorted(k for k in kwargs if not _is_lr_arg(k))
        if bad:
            raise TypeError("%s got unexpected keyword argument%s %s: extra keywords are the LearningRate op's "
                            "policy arguments (gamma, stepsize, max_iter, ...; README, \"Training with Caffe2's "
                            "optimizers\"), and that op has no such argument (Caffe2 passed them on and they did "
                            "nothing)" % (type(self).__name__, "s" if len(bad) > 1 else "",
                                          ", ".join(repr(k) for k in bad)))
        self._init_kwargs = dict(kwargs)

    @property
    def attributes(self):
        """A copy of the optimizer's settings (its ``__dict__`` without the instance number), as Caffe2's."""
        attr = copy.deepcopy(self.__dict__)
        attr.pop("_instance_num", None)
        return attr

    @property
    def use_dedicated_lr_iteration_counter(self):
        """When true, ``build_lr`` counts iterations for the learning rate in a counter of its own
        (``utils.OPTIMIZER_ITERATION_LR_NAME``, with the Mutex ``ITERATION_MUTEX_LR_NAME``), as Caffe2's."""
        return self._use_dedicated_lr_iteration_counter

    @use_dedicated_lr_iteration_counter.setter
    def use_dedicated_lr_iteration_counter(self, val):
        self._use_dedicated_lr_iteration_counter = bool(val)

    def get_cpu_blob_name(self, base_str, node_name=""):
        return "%s_%d_%s%s_cpu" % (type(self).__name__, self._instance_num, base_str, node_name)

    def get_gpu_blob_name(self, base_str, gpu_id, node_name=""):
        return "%s_%d_%s%s_gpu%d" % (type(self).__name__, self._instance_num, base_str, node_name, gpu_id)

    def __call__(self, net, param_init_net, param, grad=None):
        if grad is None:
            if not isinstance(param, ParameterInfo):
                raise TypeError("%s: without grad, param must be a ParameterInfo, got %s"
                                % (type(self).__name__, type(param).__name__))
            if param.grad is None:
                raise ValueError("%s: parameter '%s' has no gradient (call AddGradientOperators first)"
                                 % (type(self).__name__, param.name))
            info = param
        else:
            info = ParameterInfo(param_id=None, param=core.BlobReference(str(param)), grad=grad)
        self._run(net, param_init_net, info)

    def _run(self, net, param_init_net, param_info):
        raise NotImplementedError("%s does not define _run" % type(self).__name__)

    def make_unique_blob_name(self, base_str):
        """``<Class>_<instance>_<base>_cpu``: unique per optimizer instance (Caffe2's names)."""
        dev = _device()
        if dev.device_type == core.DeviceType.CUDA:
            return self.get_gpu_blob_name(base_str, dev.device_id)
        return self.get_cpu_blob_name(base_str)

    def _zero_state(self, param_init_net, param, suffix):
        """A per-parameter state buffer ``<param><suffix>``: zeros shaped like
        ``param``, filled in param_init_net, listed among the local auxiliary
        parameters."""
        buf = param_init_net.ConstantFill([param], str(param) + suffix, value=0.0)
        self._aux_params.local.append(buf)
        return buf

    def build_lr(self, net, param_init_net, base_learning_rate, learning_rate_blob=None, policy="fixed",
                 iter_val=0, local_lr_multiplier=None, rescale=False, **kwargs):
        """The learning-rate blob ``-base_learning_rate * policy(iteration)``
        (created once per optimizer) and the iteration counter; with
        ``local_lr_multiplier`` (a blob of one value, e.g. LARS's), the rate
        times it, in a blob of the parameter's own. With a global multiplier
        (``add_lr_multiplier``) the scaled rate is computed once per optimizer,
        or again for this parameter with ``rescale=True`` (as Caffe2 always
        did: Adam's ``use_lr_adaption`` overwrites the scaled rate)."""
        name = learning_rate_blob or self.make_unique_blob_name("lr")
        if self._use_dedicated_lr_iteration_counter:
            iteration = utils.BuildUniqueMutexIter(param_init_net, net, iter=utils.OPTIMIZER_ITERATION_LR_NAME,
                                                   iter_mutex=utils.ITERATION_MUTEX_LR_NAME, iter_val=iter_val)
        else:
            iteration = utils.BuildUniqueMutexIter(param_init_net, net, iter_val=iter_val)
        if net.BlobIsDefined(name):
            lr = net.GetBlobRef(name)
        else:
            lr = net.LearningRate([iteration], name, base_lr=-float(base_learning_rate), policy=policy,
                                  **kwargs)
        if self._lr_multiplier is not None:
            scaled = self.make_unique_blob_name("scaled_lr")
            if net.BlobIsDefined(scaled) and not rescale:
                lr = net.GetBlobRef(scaled)
            else:
                lr = net.Mul([lr, self._lr_multiplier], scaled, broadcast=1)
        if local_lr_multiplier is not None:
            lr = net.Mul([lr, local_lr_multiplier], str(local_lr_multiplier) + "_local_scaled_lr",
                         broadcast=1)
        return lr, iteration

    def build_non_lr_iter(self, net, param_init_net, iter_val=0):
        """With ``use_dedicated_lr_iteration_counter``: the usual iteration counter, for what is not
        the learning rate (Caffe2's; its placement-hint LearningRate op is added too). ValueError
        otherwise, as Caffe2 asserted."""
        if not self._use_dedicated_lr_iteration_counter:
            raise ValueError("build_non_lr_iter is for optimizers with use_dedicated_lr_iteration_counter set")
        iteration = utils.BuildUniqueMutexIter(param_init_net, net, iter_val=iter_val)
        hint = self.make_unique_blob_name("iter_placement_hint")
        if not net.BlobIsDefined(hint):
            net.LearningRate([iteration], hint, base_lr=1.0, policy="fixed")
        return iteration

    def add_lr_multiplier(self, lr_multiplier):
        """Every later rate is multiplied by the blob ``lr_multiplier`` (one float32)."""
        self._lr_multiplier = lr_multiplier

    def get_auxiliary_parameters(self):
        """``AuxOptimizerParams(local, shared)``: the state blobs per parameter
        (moments) and those shared by all (the counter, ONE)."""
        return self._aux_params

    def _rowwise_state(self, param_init_net, param, suffix, dtype=None):
        """A per-row state buffer ``<param><suffix>``: zeros of shape (rows,)
        (``Shape``, ``Slice``, ``ConstantFill(input_as_shape=1)``, as Caffe2's
        fallback; the row count is computed once per parameter), float32 or
        ``dtype``, listed among the local auxiliary parameters."""
        num_rows = str(param) + "_shape_numrows"
        if param_init_net.BlobIsDefined(num_rows):
            num_rows = param_init_net.GetBlobRef(num_rows)
        else:
            shape = param_init_net.Shape(param, str(param) + "_shape")
            num_rows = param_init_net.Slice([shape], str(shape) + "_numrows", starts=[0], ends=[1])
        buf = param_init_net.ConstantFill(num_rows, str(param) + suffix, input_as_shape=1, value=0.0,
                                          dtype=dtype)
        self._aux_params.local.append(buf)
        return buf

    @staticmethod
    def _require_sparse(optimizer, param, grad):
        if not isinstance(grad, core.GradientSlice):
            raise ValueError("%s: rowWise=True works on sparse gradients (GradientSlice) only; "
                             "parameter '%s' has a dense gradient (as in Caffe2, rowWise is not supported "
                             "for dense updates)" % (optimizer, param))

    def _one(self, param_init_net):
        dev = _device()
        name = "ONE_%d_%d" % (dev.device_type, dev.device_id)
        if param_init_net.BlobIsDefined(name):
            return param_init_net.GetBlobRef(name)
        return param_init_net.ConstantFill([], name, shape=[1], value=1.0)

    def _sparse(self, net, grad):
        """The GradientSlice ``grad`` (None for a dense gradient), deduplicated
        when ``sparse_dedup_aggregator`` is 'sum' or 'mean'. The sparse ops
        apply its rows one occurrence at a time, in order (as Caffe2's)."""
        if not isinstance(grad, core.GradientSlice):
            return None
        aggregator = getattr(self, "sparse_dedup_aggregator", None)
        return self.dedup(net, aggregator, grad)

    @staticmethod
    def dedup(net, sparse_dedup_aggregator, grad):
        """``grad`` (a GradientSlice) with each index once (Caffe2's)."""
        if not isinstance(grad, core.GradientSlice):
            raise TypeError("dedup works on sparse gradients (GradientSlice), got %r" % (grad,))
        if sparse_dedup_aggregator:
            return net.DeduplicateGradientSlices(grad, aggregator=sparse_dedup_aggregator)
        return grad

    def create_lars_inputs(self, param_init_net, weight_decay, trust, lr_max):
        """The blobs ``weight_decay``, ``trust`` and ``lr_max`` (one value each), as Caffe2's."""
        def fill(name, value):
            if param_init_net.BlobIsDefined(name):
                return param_init_net.GetBlobRef(name)
            return param_init_net.ConstantFill([], name, shape=[1], value=float(value))
        return fill("weight_decay", weight_decay), fill("trust", trust), fill("lr_max", lr_max)

    def _lars(self, net, param_init_net, param, grad, lars):
        """LARS's rate multiplier for a dense gradient (``Lars`` with offset
        ``lars``, weight decay 0, trust 1, lr_max the largest float32, lr_min 0,
        as Caffe2's optimizers); None when ``lars`` is None or the gradient is
        sparse (Caffe2 ignored lars for sparse gradients)."""
        if lars is None or isinstance(grad, core.GradientSlice):
            return None
        wd, trust, lr_max = self.create_lars_inputs(param_init_net, 0.0, 1.0, np.finfo(np.float32).max)
        return net.Lars([param, grad, wd, trust, lr_max], self.make_unique_blob_name(str(param) + "_lars"),
                        offset=lars, lr_min=0.0)

    @staticmethod
    def _check_lars(optimizer, lars):
        if lars is None:
            return None
        lars = float(lars)
        if not (np.isfinite(lars) and lars >= 0):
            raise ValueError("%s: lars (the LARS offset) must be a finite number >= 0, got %r"
                             % (optimizer, lars))
        return lars

    @staticmethod
    def _check_positive(what, value):
        value = float(value)
        if not np.isfinite(value) or value < 0:
            raise ValueError("%s must be a finite number >= 0, got %r" % (what, value))
        return value


class _AlphaRateOptimizer(Optimizer):
    """An optimizer whose base learning rate is ``self.alpha``."""

    def scale_learning_rate(self, scale):
        self.alpha *= scale


class SgdOptimizer(Optimizer):
    """Plain SGD (``WeightedSum``), or SGD with momentum (``MomentumSGDUpdate``,
    Nesterov unless ``nesterov=0``)."""

    def __init__(self, base_learning_rate=0.01, policy="fixed", momentum=0.0, nesterov=1,
                 sparse_dedup_aggregator=None, lars=None, **kwargs):
        super().__init__()
        self.lars = self._check_lars("SgdOptimizer", lars)
        self.base_learning_rate = self._check_positive("base_learning_rate", base_learning_rate)
        self.policy = policy
        self.momentum = self._check_positive("momentum", momentum)
        self.nesterov = int(nesterov)
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.base_learning_rate == 0:
            return
        # WeightedSum adds rate * grad: a negative rate; MomentumSGDUpdate subtracts: a positive one
        sign = -1.0 if self.momentum > 0 else 1.0
        lars = self._lars(net, param_init_net, param, grad, self.lars)
        lr, _ = self.build_lr(net, param_init_net, self.base_learning_rate * sign, policy=self.policy,
                              local_lr_multiplier=lars, **self.init_kwargs)
        one = self._one(param_init_net)
        if one not in self._aux_params.shared:
            self._aux_params.shared.append(one)
        sparse = self._sparse(net, grad)
        if self.momentum > 0:
            mom = self._zero_state(param_init_net, param, "_momentum")
            if sparse is not None:
                net.SparseMomentumSGDUpdate([sparse.values, mom, lr, param, sparse.indices],
                                            [sparse.values, mom, param], momentum=self.momentum,
                                            nesterov=self.nesterov)
            else:
                net.MomentumSGDUpdate([grad, mom, lr, param], [grad, mom, param], momentum=self.momentum,
                                      nesterov=self.nesterov)
        elif sparse is not None:
            net.ScatterWeightedSum([param, one, sparse.indices, sparse.values, lr], param)
        else:
            net.WeightedSum([param, one, grad, lr], param)

    def scale_learning_rate(self, scale):
        self.base_learning_rate *= scale


class AdagradOptimizer(_AlphaRateOptimizer):
    """Adagrad (the ``Adagrad`` op) with a ``<param>_squared_sum`` buffer; Caffe2's later options:

    - ``weight_decay`` (>= 0): the ops add ``weight_decay * param`` to the gradient, for every
      parameter that is not 1-D (Caffe2 skipped those: biases), so its shape must be known to
      ``InferShapesAndTypes([param_init_net])``;
    - ``output_effective_lr`` / ``output_effective_lr_and_update`` (dense gradients): the op's
      outputs ``<param>_effective_lr`` (and ``<param>_update``);
    - ``counter_halflife`` > 0 (sparse gradients): ``RowWiseCounter`` keeps a decayed count of each
      row's updates in ``<param>_update_counter`` / ``<param>_prev_update_iter``, and with
      ``rowWise=True`` the weight decay of a row is scaled by ``counter_halflife / count``;
    - ``use_dedicated_lr_iteration_counter``: see ``Optimizer``.

    Not provided (NotImplementedError): ``pruning_options`` (the Masked*Adagrad ops),
    ``swa_options`` (SWA), ``ema_options`` asking for an EMA (the EMA op) and ``weight_scale``
    (WeightScale)."""

    def __init__(self, alpha=0.01, epsilon=1e-4, decay=1, weight_decay=0.0, policy="fixed",
                 sparse_dedup_aggregator=None, rowWise=False, engine="", lars=None, output_effective_lr=False,
                 output_effective_lr_and_update=False, pruning_options=None, swa_options=None, ema_options=None,
                 weight_scale=None, counter_halflife=-1, use_dedicated_lr_iteration_counter=False, **kwargs):
        super().__init__()
        self.lars = self._check_lars("AdagradOptimizer", lars)
        self.alpha = self._check_positive("alpha (the base learning rate)", alpha)
        self.epsilon = float(epsilon)
        self.decay = float(decay)
        self.weight_decay = self._check_positive("AdagradOptimizer: weight_decay", weight_decay)
        self.rowWise = bool(rowWise)
        if self.rowWise and self.decay != 1.0:
            raise ValueError("AdagradOptimizer: rowWise=True needs decay=1 (RowWiseSparseAdagrad has no "
                             "decay), got %r" % self.decay)
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.engine = engine
        self.output_effective_lr = bool(output_effective_lr)
        self.output_effective_lr_and_update = bool(output_effective_lr_and_update)
        self.counter_halflife = int(counter_halflife)
        self.use_dedicated_lr_iteration_counter = use_dedicated_lr_iteration_counter
        self.param2ema_teacher_param = {}
        _refuse_option("AdagradOptimizer", "pruning_options", bool(pruning_options),
                       "the MaskedAdagrad / MaskedSparseAdagrad / MaskedRowWiseSparseAdagrad ops")
        _refuse_option("AdagradOptimizer", "swa_options", bool(swa_options), "the SWA op")
        _refuse_option("AdagradOptimizer", "ema_options", bool(ema_options) and (
            ema_options.get("ema_alpha") is not None or ema_options.get("ema_teacher_alpha") is not None),
            "the EMA op")
        _refuse_option("AdagradOptimizer", "weight_scale", bool(weight_scale), "the WeightScale op")
        self.init_kwargs = kwargs

    def set_mapping_for_param2ema_teacher_param(self, param_mapping):
        """Caffe2's map from parameters to their EMA teachers (used with ``ema_options``, which are
        not provided here)."""
        self.param2ema_teacher_param = dict(param_mapping)

    def _param_weight_decay(self, param_init_net, param):
        """``weight_decay``, or 0 for a 1-D parameter (Caffe2 skipped those)."""
        if self.weight_decay == 0:
            return 0.0
        shapes, _ = workspace.InferShapesAndTypes([param_init_net])
        if str(param) not in shapes:
            raise ValueError("AdagradOptimizer: weight_decay needs the shape of parameter '%s' (1-D parameters get "
                             "none, as in Caffe2), but InferShapesAndTypes of param_init_net does not know it"
                             % param)
        if len(shapes[str(param)]) == 1:
            _logger.info("AdagradOptimizer: no weight decay on 1-D parameter %s %s", param, shapes[str(param)])
            return 0.0
        return self.weight_decay

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.alpha == 0:
            return
        sparse_grad = isinstance(grad, core.GradientSlice)
        if self.rowWise:
            self._require_sparse("AdagradOptimizer", param, grad)
        if self.lars is not None and not sparse_grad and self.weight_decay != 0:
            raise ValueError("AdagradOptimizer: weight_decay with lars is not implemented (as in Caffe2)")
        lars = self._lars(net, param_init_net, param, grad, self.lars)
        lr, iteration = self.build_lr(net, param_init_net, self.alpha, policy=self.policy, local_lr_multiplier=lars,
                                      **self.init_kwargs)
        if self._use_dedicated_lr_iteration_counter:
            iteration = self.build_non_lr_iter(net, param_init_net)
        if self.counter_halflife > 0:
            self._aux_params.shared.append(iteration)
        if self.rowWise:
            sq = self._rowwise_state(param_init_net, param, "_avg_squared_sum")
        else:
            sq = self._zero_state(param_init_net, param, "_squared_sum")
        if self.counter_halflife > 0:
            update_counter = self._rowwise_state(param_init_net, param, "_update_counter")
            prev_update_iter = self._rowwise_state(param_init_net, param, "_prev_update_iter",
                                                   dtype=core.DataType.INT32)
        wd = self._param_weight_decay(param_init_net, param)
        decay_args = {"weight_decay": wd} if wd > 0 else {}
        sparse = self._sparse(net, grad)
        if sparse is not None:
            inputs = [param, sq, sparse.indices, sparse.values, lr]
            if self.rowWise:
                if self.counter_halflife > 0:
                    inputs.append(update_counter)
                    if wd > 0:
                        decay_args["counter_halflife"] = self.counter_halflife
                net.RowWiseSparseAdagrad(inputs, [param, sq], epsilon=self.epsilon, **decay_args)
            else:
                net.SparseAdagrad(inputs, [param, sq], epsilon=self.epsilon, decay=self.decay, **decay_args)
            if self.counter_halflife > 0:
                net.RowWiseCounter([prev_update_iter, update_counter, sparse.indices, iteration],
                                   [prev_update_iter, update_counter], counter_halflife=self.counter_halflife)
            return
        outputs = [param, sq]
        if self.output_effective_lr_and_update:
            outputs += [str(param) + "_effective_lr", str(param) + "_update"]
        elif self.output_effective_lr:
            outputs.append(str(param) + "_effective_lr")
        net.Adagrad([param, sq, grad, lr], outputs, epsilon=self.epsilon, decay=self.decay, **decay_args)


class AdamOptimizer(_AlphaRateOptimizer):
    """Adam (the ``Adam`` op) with ``<param>_first_moment`` and
    ``<param>_second_moment`` buffers; the counter is the shared iteration.
    ``use_lr_adaption``: the op also outputs ``<param>_effective_grad`` and
    ``LearningRateAdaption([lr, grad, <param>_effective_grad], [lr], lr_alpha,
    normalized_lr_adaption)`` follows it, as Caffe2 wired them."""

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, epsilon=1e-4, policy="fixed",
                 use_lr_adaption=False, lr_alpha=0.01, normalized_lr_adaption=True,
                 sparse_dedup_aggregator=None, rowWise=False, engine="", enableRAdam=False, use_smart_decay=False,
                 **kwargs):
        super().__init__()
        _refuse_option("AdamOptimizer", "use_smart_decay", bool(use_smart_decay), "the SmartDecaySparseAdam op")
        self.enableRAdam = bool(enableRAdam)
        if self.enableRAdam and rowWise:
            raise ValueError("AdamOptimizer: enableRAdam works with SparseAdam only, not with rowWise=True "
                             "(RowWiseSparseAdam has no RAdam; Caffe2 asserted the same)")
        self.use_lr_adaption = bool(use_lr_adaption)
        self.lr_alpha = float(lr_alpha)
        if not np.isfinite(self.lr_alpha):
            raise ValueError("AdamOptimizer: lr_alpha must be finite, got %r" % self.lr_alpha)
        self.normalized_lr_adaption = bool(normalized_lr_adaption)
        self.alpha = self._check_positive("alpha (the base learning rate)", alpha)
        self.beta1 = float(beta1)
        self.beta2 = float(beta2)
        self.epsilon = float(epsilon)
        self.rowWise = bool(rowWise)
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.alpha == 0:
            return
        if self.rowWise:
            self._require_sparse("AdamOptimizer", param, grad)
        lr, iteration = self.build_lr(net, param_init_net, self.alpha, policy=self.policy,
                                      rescale=self.use_lr_adaption, **self.init_kwargs)
        m1 = self._zero_state(param_init_net, param, "_first_moment")
        if self.rowWise:
            m2 = self._rowwise_state(param_init_net, param, "_avg_second_moment")
        else:
            m2 = self._zero_state(param_init_net, param, "_second_moment")
        if iteration not in self._aux_params.shared:
            self._aux_params.shared.append(iteration)
        outputs = [param, m1, m2]
        if self.use_lr_adaption:
            effective_grad = str(param) + "_effective_grad"
            outputs.append(effective_grad)
        sparse = self._sparse(net, grad)
        args = dict(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon)
        if self.rowWise:
            net.RowWiseSparseAdam([param, m1, m2, sparse.indices, sparse.values, lr, iteration], outputs,
                                  **args)
        elif sparse is not None:
            if self.enableRAdam:
                args["enableRAdam"] = 1
            net.SparseAdam([param, m1, m2, sparse.indices, sparse.values, lr, iteration], outputs, **args)
        else:
            net.Adam([param, m1, m2, grad, lr, iteration], outputs, **args)
        if self.use_lr_adaption:
            # the rate blob itself is adapted (Caffe2's wiring): later parameters of this iteration see it
            used = sparse.values if sparse is not None else grad
            net.LearningRateAdaption([lr, used, effective_grad], [lr], lr_alpha=self.lr_alpha,
                                     normalized_lr_adaption=int(self.normalized_lr_adaption))


class RmsPropOptimizer(_AlphaRateOptimizer):
    """RMSProp (the ``RmsProp`` op, then ``WeightedSum``) with ``<param>_mean_squares``
    and ``<param>_momentum`` buffers; dense gradients only (as in Caffe2)."""

    def __init__(self, alpha=0.01, decay=0.9, momentum=0.0, epsilon=1e-5, policy="fixed", engine="",
                 **kwargs):
        super().__init__()
        self.alpha = self._check_positive("alpha (the base learning rate)", alpha)
        if self.alpha == 0:
            raise ValueError("RmsPropOptimizer: alpha (the base learning rate) must be > 0 "
                             "(Caffe2 asserted it), got 0.0")
        self.decay = float(decay)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.policy = policy
        self.engine = engine
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if isinstance(grad, core.GradientSlice):
            raise ValueError("RmsPropOptimizer doesn't support sparse gradients (as in Caffe2): "
                             "parameter '%s' has a GradientSlice; use Adagrad, Adam, Adadelta or Wngrad "
                             "for it"
                             % param_info.name)
        one = self._one(param_init_net)
        lr, _ = self.build_lr(net, param_init_net, self.alpha, policy=self.policy, **self.init_kwargs)
        grad_o = param_init_net.ConstantFill([param], str(param) + "_grad_o", value=0.0)
        ms = self._zero_state(param_init_net, param, "_mean_squares")
        mom = self._zero_state(param_init_net, param, "_momentum")
        # RmsProp's step at rate 1 into grad_o, then param + lr * grad_o (lr negative: descent)
        net.RmsProp([grad, ms, mom, one], [grad_o, ms, mom], decay=self.decay, momentum=self.momentum,
                    epsilon=self.epsilon)
        net.WeightedSum([param, one, grad_o, lr], param)


class AdadeltaOptimizer(_AlphaRateOptimizer):
    """Adadelta (the ``Adadelta`` op) with ``<param>_squared_moment`` and
    ``<param>_squared_moment_update`` buffers."""

    def __init__(self, alpha=0.01, epsilon=1e-4, decay=0.95, policy="fixed", sparse_dedup_aggregator=None,
                 engine="", **kwargs):
        super().__init__()
        self.alpha = self._check_positive("alpha (the base learning rate)", alpha)
        self.epsilon = float(epsilon)
        self.decay = float(decay)
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.engine = engine
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.alpha == 0:
            return
        lr, _ = self.build_lr(net, param_init_net, self.alpha, policy=self.policy, **self.init_kwargs)
        moment = self._zero_state(param_init_net, param, "_squared_moment")
        moment_update = self._zero_state(param_init_net, param, "_squared_moment_update")
        sparse = self._sparse(net, grad)
        if sparse is not None:
            net.SparseAdadelta([param, moment, moment_update, sparse.indices, sparse.values, lr],
                               [param, moment, moment_update], epsilon=self.epsilon, decay=self.decay)
        else:
            net.Adadelta([param, moment, moment_update, grad, lr], [param, moment, moment_update],
                         epsilon=self.epsilon, decay=self.decay)


class WngradOptimizer(_AlphaRateOptimizer):
    """WNGrad (the ``Wngrad`` op) with a one-element ``<param>_moment`` (seq_b),
    initialised to ``moment_init``; ``lars`` as SgdOptimizer's."""

    def __init__(self, alpha=1.0, epsilon=1e-9, policy="fixed", sparse_dedup_aggregator=None, engine="",
                 moment_init=100.0, lars=None, output_effective_lr=False,
                 output_effective_lr_and_update=False, **kwargs):
        super().__init__()
        self.lars = self._check_lars("WngradOptimizer", lars)
        self.alpha = self._check_positive("alpha (the base learning rate)", alpha)
        self.epsilon = float(epsilon)
        self.moment_init = float(moment_init)
        if not (np.isfinite(self.moment_init) and self.moment_init + self.epsilon > 0):
            raise ValueError("WngradOptimizer: moment_init must be finite with moment_init + epsilon > 0, "
                             "got %r (epsilon %r)" % (self.moment_init, self.epsilon))
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.engine = engine
        self.output_effective_lr = output_effective_lr
        self.output_effective_lr_and_update = output_effective_lr_and_update
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.alpha == 0:
            return
        lars = self._lars(net, param_init_net, param, grad, self.lars)
        lr, _ = self.build_lr(net, param_init_net, self.alpha, policy=self.policy, local_lr_multiplier=lars,
                              **self.init_kwargs)
        moment = param_init_net.ConstantFill([], str(param) + "_moment", shape=[1], value=self.moment_init)
        self._aux_params.local.append(moment)
        sparse = self._sparse(net, grad)
        if sparse is not None:
            net.SparseWngrad([param, moment, sparse.indices, sparse.values, lr], [param, moment],
                             epsilon=self.epsilon)
            return
        outputs = [param, moment]
        if self.output_effective_lr_and_update:
            outputs += [str(param) + "_effective_lr", str(param) + "_update"]
        elif self.output_effective_lr:
            outputs.append(str(param) + "_effective_lr")
        net.Wngrad([param, moment, grad, lr], outputs, epsilon=self.epsilon)


class FtrlOptimizer(_AlphaRateOptimizer):
    """FTRL-proximal (the ``Ftrl`` op; ``SparseFtrl`` for a sparse gradient)
    with a ``<param>_ftrl_nz`` buffer of shape param.shape + (2,) (n and z).
    The rate is ``alpha``, passed to the op as an argument (no schedule)."""

    def __init__(self, alpha=0.01, beta=1e-4, lambda1=0, lambda2=0, sparse_dedup_aggregator=None, engine=""):
        super().__init__()
        self.alpha = self._check_positive("alpha", alpha)
        self.beta = self._check_positive("beta", beta)
        self.lambda1 = self._check_positive("lambda1", lambda1)
        self.lambda2 = self._check_positive("lambda2", lambda2)
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.engine = engine

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.alpha == 0:
            return
        nz = param_init_net.ConstantFill([param], str(param) + "_ftrl_nz", extra_shape=[2], value=0.0)
        self._aux_params.local.append(nz)
        args = dict(alpha=self.alpha, beta=self.beta, lambda1=self.lambda1, lambda2=self.lambda2)
        sparse = self._sparse(net, grad)
        if sparse is not None:
            net.SparseFtrl([param, nz, sparse.indices, sparse.values], [param, nz], **args)
        else:
            net.Ftrl([param, nz, grad], [param, nz], **args)


class DecayAdagradOptimizer(_AlphaRateOptimizer):
    """Adagrad with a decayed first moment (the ``DecayAdagrad`` op) with
    ``<param>_first_mo1ment`` (Caffe2's spelling, kept so checkpoints load) and
    ``<param>_second_moment``; a sparse gradient uses ``SparseAdagrad`` with
    ``<param>_squared_sum``, as Caffe2's."""

    def __init__(self, alpha=0.01, beta1=0.0, beta2=0.999, epsilon=0.1, weight_decay=0.0, ema_options=None,
                 bias_correction_first=True, policy="fixed", engine="", **kwargs):
        super().__init__()
        if ema_options and ("ema_alpha" in ema_options or "ema_teacher_alpha" in ema_options):
            raise NotImplementedError("DecayAdagradOptimizer: ema_options (ema_alpha / ema_teacher_alpha) is "
                                      "not supported: Caffe2's EMA op was never published (caffe2/fb), so "
                                      "its semantics cannot be reproduced")
        self.alpha = self._check_positive("alpha (the base learning rate)", alpha)
        self.beta1 = float(beta1)
        self.beta2 = float(beta2)
        self.epsilon = float(epsilon)
        self.weight_decay = float(weight_decay)
        self.bias_correction_first = bool(bias_correction_first)
        self.policy = policy
        self.engine = engine
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.alpha == 0:
            return
        lr, iteration = self.build_lr(net, param_init_net, self.alpha, policy=self.policy,
                                      **self.init_kwargs)
        if isinstance(grad, core.GradientSlice):
            sq = self._zero_state(param_init_net, param, "_squared_sum")
            net.SparseAdagrad([param, sq, grad.indices, grad.values, lr], [param, sq], epsilon=self.epsilon)
            return
        m1 = self._zero_state(param_init_net, param, "_first_mo1ment")
        m2 = self._zero_state(param_init_net, param, "_second_moment")
        if iteration not in self._aux_params.shared:
            self._aux_params.shared.append(iteration)
        net.DecayAdagrad([param, m1, m2, grad, lr, iteration], [param, m1, m2], beta1=self.beta1,
                         beta2=self.beta2, epsilon=self.epsilon, weight_decay=self.weight_decay,
                         bias_correction_first=int(self.bias_correction_first))


class GFtrlOptimizer(_AlphaRateOptimizer):
    """Group-lasso FTRL (the ``GFtrl`` op) with ``<param>_gftrl_nz`` (param.shape
    + (2,)); one group per column of the parameter seen as (shape[0], -1). The
    rate is ``alpha`` (no schedule). Dense gradients only (a GradientSlice is a
    ValueError when the optimizer is built; Caffe2 failed at run time)."""

    def __init__(self, alpha=0.01, beta=1e-4, lambda1=0, lambda2=0, sparse_dedup_aggregator=None, engine=""):
        super().__init__()
        self.alpha = self._check_positive("alpha", alpha)
        self.beta = self._check_positive("beta", beta)
        self.lambda1 = self._check_positive("lambda1", lambda1)
        self.lambda2 = self._check_positive("lambda2", lambda2)
        if self.beta == 0 and self.lambda2 == 0:
            raise ValueError("GFtrlOptimizer: beta and lambda2 must not both be 0")
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.engine = engine

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.alpha == 0:
            return
        if isinstance(grad, core.GradientSlice):
            raise ValueError("GFtrlOptimizer: parameter '%s' has a sparse gradient (GradientSlice); "
                             "GFtrl needs a dense one" % param)
        nz = param_init_net.ConstantFill([param], str(param) + "_gftrl_nz", extra_shape=[2], value=0.0)
        self._aux_params.local.append(nz)
        net.GFtrl([param, nz, grad], [param, nz], alpha=self.alpha, beta=self.beta, lambda1=self.lambda1,
                  lambda2=self.lambda2)


class StormOptimizer(Optimizer):
    """STORM (the ``Storm`` op; ``SparseStorm`` for a sparse gradient) with
    ``<param>_moment`` and the one-element ``<param>_grad_sq_sum`` (initialised
    to ``grad_sq_init``); ``lars`` as SgdOptimizer's."""

    def __init__(self, lr=0.1, momentum=10.0, beta=0.1, grad_sq_init=0.01, policy="fixed",
                 sparse_dedup_aggregator=None, lars=None, **kwargs):
        super().__init__()
        self.lr = self._check_positive("lr (the base learning rate)", lr)
        self.momentum = self._check_positive("momentum", momentum)
        self.beta = self._check_positive("beta", beta)
        self.grad_sq_init = self._check_positive("grad_sq_init", grad_sq_init)
        if self.beta + self.grad_sq_init <= 0:
            raise ValueError("StormOptimizer: beta and grad_sq_init must not both be 0")
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.lars = self._check_lars("StormOptimizer", lars)
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.lr == 0:
            return
        lars = self._lars(net, param_init_net, param, grad, self.lars)
        lr, _ = self.build_lr(net, param_init_net, self.lr, policy=self.policy, local_lr_multiplier=lars,
                              **self.init_kwargs)
        moment = self._zero_state(param_init_net, param, "_moment")
        gsq = param_init_net.ConstantFill([], str(param) + "_grad_sq_sum", shape=[1], value=self.grad_sq_init)
        self._aux_params.local.append(gsq)
        args = dict(momentum=self.momentum, beta=self.beta)
        sparse = self._sparse(net, grad)
        if sparse is not None:
            net.SparseStorm([param, moment, gsq, sparse.values, sparse.indices, lr], [param, moment, gsq],
                            **args)
        else:
            net.Storm([param, moment, gsq, grad, lr], [param, moment, gsq], **args)

    def scale_learning_rate(self, scale):
        self.lr *= scale


class WeightDecayBuilder(Optimizer):
    """Adds ``weight_decay * param`` to the gradient (L2 regularisation)."""

    def __init__(self, weight_decay):
        super().__init__()
        self.weight_decay = self._check_positive("weight_decay", weight_decay)

    def _run(self, net, param_init_net, param_info):
        if isinstance(param_info.grad, core.GradientSlice):
            raise ValueError("WeightDecayBuilder: parameter '%s' has a sparse gradient (GradientSlice); "
                             "weight decay needs a dense one (as in Caffe2)" % param_info.name)
        dev = _device()
        one = self._one(param_init_net)
        name = "wd_%d_%d" % (dev.device_type, dev.device_id)
        wd = (param_init_net.GetBlobRef(name) if param_init_net.BlobIsDefined(name)
              else param_init_net.ConstantFill([], name, shape=[1], value=self.weight_decay))
        net.WeightedSum([param_info.grad, one, param_info.blob, wd], param_info.grad)


def _infer_blob_devices(net):
    """{blob name: DeviceOption} for every output of ``net``'s ops: the op's
    ``device_option``, else the net's, else the CPU (Caffe2's
    ``core.InferBlobDevices``)."""
    proto = net.Proto()
    default = device_of(proto) if device_of(proto) is not None \
        else core.DeviceOption(core.DeviceType.CPU)
    mapping = {}
    for op in proto.op:
        dev = device_of(op) if device_of(op) is not None else default
        for name in op.output:
            mapping[name] = dev
    return mapping


def _get_param_to_device(model):
    """{blob name: DeviceOption} of the blobs that ``model.param_init_net`` and
    ``model.net`` write (the init net's win), as Caffe2's."""
    param_to_device = _infer_blob_devices(model.net)
    param_to_device.update(_infer_blob_devices(model.param_init_net))
    return param_to_device


def get_param_device(param_name, grad, param_to_device=None, default_device=None):
    """The device of ``param_name``: its entry of ``param_to_device`` (see
    ``_get_param_to_device``), else that of its gradient (a GradientSlice's
    values, then indices), else ``default_device``; ValueError when none is
    known (Caffe2 asserted). Here it is always the CPU unless a device scope
    said otherwise, and such nets are refused when created."""
    device = default_device
    param_to_device = param_to_device or {}
    if str(param_name) in param_to_device:
        device = param_to_device[str(param_name)]
    elif isinstance(grad, core.GradientSlice):
        if str(grad.values) in param_to_device:
            device = param_to_device[str(grad.values)]
        elif str(grad.indices) in param_to_device:
            device = param_to_device[str(grad.indices)]
    elif grad is not None and str(grad) in param_to_device:
        device = param_to_device[str(grad)]
    if device is None:
        raise ValueError("Cannot infer device for %s: no op creates it" % param_name)
    return device


def _calc_norm_ratio(model, params, name_scope, max_gradient_norm):
    """min(1, max_gradient_norm / global norm of the gradients of ``params``), as a
    0-d blob computed by ``model.net`` on every run (Caffe2's ops and names)."""
    with core.NameScope(name_scope):
        # A sparse gradient counts its slice's rows as they are (a repeated
        # index once per occurrence), as in Caffe2.
        sums = [model.net.SumSqrElements(p.grad.values if isinstance(p.grad, core.GradientSlice) else p.grad,
                                         "grad_%d_squared_sum" % i) for i, p in enumerate(params)]
        full = model.net.Sum(sums, "grad_squared_full_sum")
        norm = model.net.Pow(full, "global_norm", exponent=0.5)
        clip = model.param_init_net.ConstantFill([], "clip_norm", shape=[], value=max_gradient_norm)
        largest = model.net.Max([norm, clip], "max_norm")
        return model.net.Div([clip, largest], "norm_ratio")


def _build(model, optimizer, weights_only=False, max_gradient_norm=None, allow_lr_injection=False,
           use_param_info_optim=True):
    model.Validate()
    if not model.gradient_ops_added:
        raise RuntimeError("model '%s' has no gradient operators: call model.AddGradientOperators([loss]) "
                           "before building an optimizer" % model.name)
    weights = {str(w) for w in model.weights}
    params = [p for p in model.GetOptimizationParamInfo() if not weights_only or str(p.blob) in weights]
    lr_multiplier = None
    if max_gradient_norm is not None:
        max_gradient_norm = float(max_gradient_norm)
        if not (np.isfinite(max_gradient_norm) and max_gradient_norm > 0):
            raise ValueError("max_gradient_norm must be a finite number > 0, got %r" % max_gradient_norm)
        if params:
            lr_multiplier = _calc_norm_ratio(model, params, "norm_clipped_grad_update", max_gradient_norm)
    if allow_lr_injection:
        if model.param_init_net.BlobIsDefined(_LEARNING_RATE_INJECTION):
            inj = model.param_init_net.GetBlobRef(_LEARNING_RATE_INJECTION)
        else:
            inj = model.param_init_net.ConstantFill([], _LEARNING_RATE_INJECTION, shape=[1], value=1.0)
        lr_multiplier = inj if lr_multiplier is None else model.net.Mul(
            [inj, lr_multiplier], "lr_multiplier", broadcast=1)
    if lr_multiplier is not None:
        optimizer.add_lr_multiplier(lr_multiplier)
    for info in params:
        if info.optimizer is not None and use_param_info_optim:  # UseOptimizer's choice
            info.optimizer(model.net, model.param_init_net, info)
        else:
            optimizer(model.net, model.param_init_net, info)
    return optimizer


def build_sgd(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False, **kwargs):
    """SGD for every parameter of ``model`` that has a gradient; ``kwargs`` go
    to ``SgdOptimizer`` (``policy``, ``momentum``, ``nesterov``, the policy's
    arguments). Returns the optimizer."""
    return _build(model, SgdOptimizer(base_learning_rate, **kwargs), max_gradient_norm=max_gradient_norm,
                  allow_lr_injection=allow_lr_injection)


def build_adagrad(model, base_learning_rate, parameters=None, max_gradient_norm=None,
                  allow_lr_injection=False, **kwargs):
    """Adagrad for every parameter of ``model`` that has a gradient."""
    return _build(model, AdagradOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_adam(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False, **kwargs):
    """Adam for every parameter of ``model`` that has a gradient."""
    return _build(model, AdamOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_rms_prop(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False, **kwargs):
    """RMSProp for every parameter of ``model`` that has a (dense) gradient."""
    return _build(model, RmsPropOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_adadelta(model, base_learning_rate, parameters=None, max_gradient_norm=None,
                   allow_lr_injection=False, **kwargs):
    """Adadelta for every parameter of ``model`` that has a gradient."""
    return _build(model, AdadeltaOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_wngrad(model, base_learning_rate, parameters=None, max_gradient_norm=None,
                 allow_lr_injection=False, **kwargs):
    """WNGrad for every parameter of ``model`` that has a gradient."""
    return _build(model, WngradOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)
def build_ftrl(model, engine="SIMD", **kwargs):
    """FTRL for every parameter of ``model`` that has a gradient; ``kwargs`` go
    to ``FtrlOptimizer`` (alpha, beta, lambda1, lambda2,
    sparse_dedup_aggregator). ``engine`` is accepted for Caffe2's signature and
    ignored (we have one implementation; Caffe2 asserted that its SIMD engine
    was built)."""
    return _build(model, FtrlOptimizer(engine=engine, **kwargs))


def build_decay_adagrad(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
                        **kwargs):
    """DecayAdagrad for every parameter of ``model`` that has a gradient."""
    return _build(model, DecayAdagradOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_gftrl(model, engine="", **kwargs):
    """Group-lasso FTRL for every parameter of ``model`` that has a (dense)
    gradient; ``engine`` is accepted and ignored (as build_ftrl's)."""
    return _build(model, GFtrlOptimizer(engine=engine, **kwargs))


def build_storm(model, base_learning_rate, parameters=None, max_gradient_norm=None, allow_lr_injection=False,
                **kwargs):
    """STORM for every parameter of ``model`` that has a gradient."""
    return _build(model, StormOptimizer(lr=base_learning_rate, **kwargs), max_gradient_norm=max_gradient_norm,
                  allow_lr_injection=allow_lr_injection)


def add_weight_decay(model, weight_decay):
    """Adds ``weight_decay * w`` to the gradient of every weight (``model.weights``:
    the ``brew`` helpers' weights, not biases); call it before ``build_*``."""
    _build(model, WeightDecayBuilder(weight_decay=weight_decay), weights_only=True,
           use_param_info_optim=False)


class _NotProvidedOptimizer(Optimizer):
    """An optimizer of Caffe2's that this package does not have: the name
    exists (so modules importing it load), making one raises
    NotImplementedError saying why."""

    _why = ""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("%s is not provided: %s" % (type(self).__name__, self._why))


_FP16_WHY = ("it keeps float16 parameters (with float32 copies), and blobs here are float32 and int32 "
             "only (use SgdOptimizer / build_sgd)")


class MultiPrecisionSgdOptimizer(_NotProvidedOptimizer):
    _why = _FP16_WHY


class FP16SgdOptimizer(_NotProvidedOptimizer):
    _why = _FP16_WHY


class YellowFinOptimizer(Optimizer):
    """YellowFin (https://arxiv.org/abs/1706.03471; the ``YellowFin`` op): momentum SGD whose learning
    rate and momentum, one pair per parameter, are tuned from moving averages of the gradient's
    statistics. State per parameter, as Caffe2's: ``<param>_moment``, ``_g_avg``, ``_g2_avg`` (zeros
    like the parameter), ``_curv_win`` (``curv_win_width`` zeros), ``_lr_avg`` (``alpha``),
    ``_mu_avg`` (``mu``), ``_scalars_memory`` (5 zeros); the shared iteration counter. Dense
    gradients only (a GradientSlice is a ValueError, as Caffe2 asserted). ``policy`` is accepted and
    unused, as in Caffe2 (the rate is YellowFin's own)."""

    def __init__(self, alpha=0.1, mu=0.0, beta=0.999, curv_win_width=20, zero_debias=True, epsilon=0.1 ** 6,
                 policy="fixed", sparse_dedup_aggregator=None, **kwargs):
        super().__init__()
        self.alpha = float(alpha)
        if not (np.isfinite(self.alpha) and self.alpha > 0):  # Caffe2 asserted alpha > 0
            raise ValueError("YellowFinOptimizer: alpha must be a finite number > 0, got %r" % (alpha,))
        self.mu = self._check_positive("YellowFinOptimizer: mu", mu)
        self.beta = float(beta)
        if not 0 <= self.beta < 1:
            raise ValueError("YellowFinOptimizer: beta must be in [0, 1), got %r" % (beta,))
        self.curv_win_width = int(curv_win_width)
        if self.curv_win_width < 1:
            raise ValueError("YellowFinOptimizer: curv_win_width must be >= 1, got %r" % (curv_win_width,))
        self.zero_debias = bool(zero_debias)
        self.epsilon = float(epsilon)
        if not (np.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError("YellowFinOptimizer: epsilon must be a finite number > 0, got %r" % (epsilon,))
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if isinstance(grad, core.GradientSlice):
            raise ValueError("YellowFinOptimizer: parameter '%s' has a sparse gradient (GradientSlice); "
                             "YellowFin needs a dense one (as in Caffe2)" % param_info.name)
        moment = self._zero_state(param_init_net, param, "_moment")
        curv_win = param_init_net.ConstantFill([], str(param) + "_curv_win", shape=[self.curv_win_width],
                                               value=0.0)
        g_avg = self._zero_state(param_init_net, param, "_g_avg")
        g2_avg = self._zero_state(param_init_net, param, "_g2_avg")
        lr_avg = param_init_net.ConstantFill([], str(param) + "_lr_avg", shape=[1], value=self.alpha)
        mu_avg = param_init_net.ConstantFill([], str(param) + "_mu_avg", shape=[1], value=self.mu)
        scalars = param_init_net.ConstantFill([], str(param) + "_scalars_memory", shape=[5], value=0.0)
        iteration = utils.BuildUniqueMutexIter(param_init_net, net, iter_val=0)
        self._aux_params.shared.append(iteration)
        self._aux_params.local.extend([lr_avg, mu_avg, curv_win, scalars])
        state = [param, moment, lr_avg, mu_avg, curv_win, g_avg, g2_avg, scalars]
        net.YellowFin(state + [grad, iteration], state, beta=self.beta, epsilon=self.epsilon,
                      curv_win_width=self.curv_win_width, zero_debias=int(self.zero_debias))

    def scale_learning_rate(self, scale):
        self.alpha *= scale


def build_multi_precision_sgd(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
                              **kwargs):
    """Not provided (float16 parameters): raises NotImplementedError."""
    MultiPrecisionSgdOptimizer(base_learning_rate, **kwargs)


def build_fp16_sgd(model, base_learning_rate, **kwargs):
    """Not provided (float16 parameters): raises NotImplementedError."""
    FP16SgdOptimizer(base_learning_rate, **kwargs)


def build_yellowfin(model, base_learning_rate=0.1, **kwargs):
    """YellowFin for every parameter of ``model`` that has a gradient (``base_learning_rate``: the
    initial rate, ``alpha``)."""
    return _build(model, YellowFinOptimizer(alpha=base_learning_rate, **kwargs))


def get_lr_injection():
    """The current learning-rate multiplier (``allow_lr_injection=True``)."""
    return workspace.FetchBlob(_LEARNING_RATE_INJECTION)


def set_lr_injection(lr_injection_value):
    """Sets the multiplier of every learning rate (``allow_lr_injection=True``)."""
    workspace.FeedBlob(_LEARNING_RATE_INJECTION, np.array([float(lr_injection_value)], dtype=np.float32))
