"""Training of sequence-to-sequence models: Caffe2's
``caffe2.python.models.seq2seq.train`` (CPU only).

``Seq2SeqModelCaffe2(model_params, source_vocab_size, target_vocab_size,
num_gpus=0, num_cpus=1)`` builds two nets over one set of parameters: the
training net (the model's loss, its gradients, then the norm-clipped SGD
update: every gradient scaled by ``max_gradient_norm / max(global norm,
max_gradient_norm)``, dense parameters by ``WeightedSum``, the embedding
rows a batch used by ``ScatterWeightedSum``; the dense and the sparse
gradients are clipped separately, as in Caffe2) and a forward-only net (the
loss alone). ``model_params`` holds Caffe2's keys: ``attention``,
``encoder_type`` (``encoder_layer_configs``, ``use_bidirectional_encoder``),
``decoder_layer_configs``, ``encoder_embedding_size``,
``decoder_embedding_size``, ``decoder_softmax_size``, ``batch_size``,
``optimizer_params`` (``learning_rate``) and ``max_gradient_norm``.

``step(batch, forward_only)`` takes a list of (source ids, target ids) pairs,
lays them out with ``prepare_batch``, runs one net and returns the summed
loss of the batch's target tokens (``total_loss_scalar``).
``save(prefix, step)`` writes every parameter (the learning rate,
``global_step`` and ``start_time`` too) to the minidb file ``<prefix>-<step>``
and the text file ``checkpoint`` beside it, as Caffe2 did.

Differences from Caffe2 (each where Caffe2 failed or had no counterpart):

- CPU only: ``num_gpus`` must be 0 (ValueError otherwise) and defaults to 0
  (Caffe2's default, 1, needed a GPU). ``num_cpus`` goes to ``GlobalInit`` as
  ``--caffe2_mkl_num_threads`` as in Caffe2 (no effect here).
- The forward-only net is built with ``forward_only=True`` (Caffe2 built it
  as a training net: no dropout is applied in evaluation here, and its
  recurrent ops keep no state for a backward pass). Without dropout its loss
  is the training net's, bit for bit.
- ``global_step`` is an int32 blob (Caffe2 fed back an int64 one).
- A clipped update with no parameter of its kind adds no op (Caffe2 built a
  ``Sum`` of nothing, which failed).
- ``load_from_checkpoint(path)`` is ours (Caffe2's train.py could save but
  not resume).
- ``prepare_batch([])`` raises ValueError (Caffe2: ``max()`` of an empty
  sequence).
- ``main``'s ``--use-bidirectional-encoder`` halves the first encoder
  layer's units only, to an int; Caffe2 multiplied one dict into every layer
  (``[dict(...)] * n``), so ``/= 2`` halved them all, to a float. An odd
  ``--encoder-cell-num-units`` is a usage error (Caffe2: AssertionError).
- The module adds no logging handler at import; ``main`` logs to stderr.
- ``run_seq2seq_model`` returns the (training loss, eval loss) of each epoch
  (Caffe2's returned None).
"""

import argparse
import collections
import logging
import math
import os
import random
import sys
import time

import numpy as np

from ... import core, workspace
from ...proto import caffe2_pb2
from . import seq2seq_util
from .seq2seq_model_helper import Seq2SeqModelHelper

logger = logging.getLogger(__name__)

Batch = collections.namedtuple('Batch', [
    'encoder_inputs',
    'encoder_lengths',
    'decoder_inputs',
    'decoder_lengths',
    'targets',
    'target_weights',
])


def prepare_batch(batch):
    """The time-major arrays of a list of (source ids, target ids) pairs, as a
    ``Batch``: ``encoder_inputs`` int32 [S, N] (each source reversed, then
    PAD), ``encoder_lengths`` int32 [N], ``decoder_inputs`` int32 [T + 1, N]
    (GO, the target, then PAD), ``decoder_lengths`` int32 [N] (target length
    + 1), ``targets`` int32 [T + 1, N] (the target, EOS, then PAD) and
    ``target_weights`` float32 [T + 1, N] (1 where the target is not PAD; all
    0 for a pair whose source and target are both empty). S and T are the
    longest source and target."""
    batch = list(batch)
    if not batch:
        raise ValueError("prepare_batch: the batch is empty (need at least one (source, target) pair)")
    max_source = max(len(source) for source, _ in batch)
    max_target = max(len(target) for _, target in batch)
    columns = {name: [] for name in Batch._fields}
    for source, target in batch:
        source, target = list(source), list(target)
        columns['encoder_inputs'].append(source[::-1] + [seq2seq_util.PAD_ID] * (max_source - len(source)))
        columns['encoder_lengths'].append(len(source))
        pads = [seq2seq_util.PAD_ID] * (max_target - len(target))
        columns['decoder_inputs'].append([seq2seq_util.GO_ID] + target + pads)
        columns['decoder_lengths'].append(len(target) + 1)
        targets = target + [seq2seq_util.EOS_ID] + pads
        columns['targets'].append(targets)
        if not source and not target:
            columns['target_weights'].append([0.0] * len(targets))
        else:
            columns['target_weights'].append([float(t != seq2seq_util.PAD_ID) for t in targets])
    arrays = {}
    for name, rows in columns.items():
        array = np.array(rows, dtype=np.float32 if name == 'target_weights' else np.int32)
        arrays[name] = array if array.ndim == 1 else np.ascontiguousarray(array.T)
    return Batch(**arrays)


def _checkpoint_file(path):
    """The minidb file of ``path``: ``path`` itself, or, for a directory, the
    file its ``checkpoint`` text file (``save``'s) names."""
    if not os.path.isdir(path):
        return path
    config = os.path.join(path, 'checkpoint')
    with open(config) as f:
        for line in f:
            key, _, value = line.partition(':')
            if key.strip() == 'model_checkpoint_path':
                return value.strip().strip('"')
    raise ValueError("load_from_checkpoint: '%s' names no model_checkpoint_path" % config)


class Seq2SeqModelCaffe2(object):
    """Caffe2's train.py model (see the module doc). Use it as Caffe2's:
    ``with Seq2SeqModelCaffe2(...) as m: m.initialize_from_scratch(); m.step(batch, False)``
    (leaving the ``with`` resets the current workspace)."""

    def __init__(self, model_params, source_vocab_size, target_vocab_size, num_gpus=0, num_cpus=1):
        seq2seq_util._cpu_only('Seq2SeqModelCaffe2', num_gpus)
        self.model_params = model_params
        self.encoder_type = 'rnn'
        self.encoder_params = model_params['encoder_type']
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.num_gpus = num_gpus
        self.num_cpus = num_cpus
        self.batch_size = model_params['batch_size']
        workspace.GlobalInit([
            'caffe2',
            '--caffe2_log_level=0',
            '--v=0',
            '--caffe2_handle_executor_threads_exceptions=1',
            '--caffe2_mkl_num_threads=' + str(self.num_cpus),
        ])

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        workspace.ResetWorkspace()

    # ------------------------------------------------------------ building
    def _build_shared(self, model):
        learning_rate = float(self.model_params['optimizer_params']['learning_rate'])
        with core.DeviceScope(core.DeviceOption(caffe2_pb2.CPU)):
            self.learning_rate = model.AddParam(name='learning_rate', init_value=learning_rate,
                                                trainable=False)
            self.global_step = model.AddParam(name='global_step', init_value=0, trainable=False)
            self.start_time = model.AddParam(name='start_time', init_value=time.time(), trainable=False)

    def _build_embeddings(self, model):
        # uniform in [-sqrt(3), sqrt(3)]: unit variance, as Caffe2's train.py
        bound = math.sqrt(3)
        p = self.model_params
        with core.DeviceScope(core.DeviceOption(caffe2_pb2.CPU)):
            tables = []
            for name, rows, width in (
                    ('encoder_embeddings', self.source_vocab_size, p['encoder_embedding_size']),
                    ('decoder_embeddings', self.target_vocab_size, p['decoder_embedding_size'])):
                table = model.param_init_net.UniformFill([], name, shape=[rows, width], min=-bound, max=bound)
                model.params.append(table)
                tables.append(table)
        self.encoder_embeddings, self.decoder_embeddings = tables

    def model_build_fun(self, model, forward_only=False, loss_scale=None):
        """Adds the model and its loss to ``model``; returns
        ``[total_loss_scalar_weighted]`` (the summed loss / batch_size).
        ``loss_scale`` is accepted and unused, as in Caffe2."""
        names = ['encoder_inputs', 'encoder_lengths', 'decoder_inputs', 'decoder_lengths', 'targets',
                 'target_weights']
        (encoder_inputs, encoder_lengths, decoder_inputs, decoder_lengths, targets,
         target_weights) = [model.net.AddExternalInput(workspace.GetNameScope() + n) for n in names]
        attention_type = self.model_params['attention']
        decoder_layer_configs = self.model_params['decoder_layer_configs']
        (encoder_outputs, weighted_encoder_outputs, final_hidden, final_cell,
         encoder_units_per_layer) = seq2seq_util.build_embedding_encoder(
            model=model, encoder_params=self.encoder_params, num_decoder_layers=len(decoder_layer_configs),
            inputs=encoder_inputs, input_lengths=encoder_lengths, vocab_size=self.source_vocab_size,
            embeddings=self.encoder_embeddings, embedding_size=self.model_params['encoder_embedding_size'],
            use_attention=(attention_type != 'none'), num_gpus=self.num_gpus, forward_only=forward_only)
        decoder_outputs, decoder_output_size = seq2seq_util.build_embedding_decoder(
            model, decoder_layer_configs=decoder_layer_configs, inputs=decoder_inputs,
            input_lengths=decoder_lengths, encoder_lengths=encoder_lengths, encoder_outputs=encoder_outputs,
            weighted_encoder_outputs=weighted_encoder_outputs, final_encoder_hidden_states=final_hidden,
            final_encoder_cell_states=final_cell, encoder_units_per_layer=encoder_units_per_layer,
            vocab_size=self.target_vocab_size, embeddings=self.decoder_embeddings,
            embedding_size=self.model_params['decoder_embedding_size'], attention_type=attention_type,
            forward_only=forward_only, num_gpus=self.num_gpus)
        output_logits = seq2seq_util.output_projection(
            model=model, decoder_outputs=decoder_outputs, decoder_output_size=decoder_output_size,
            target_vocab_size=self.target_vocab_size,
            decoder_softmax_size=self.model_params['decoder_softmax_size'])
        targets, _ = model.net.Reshape([targets], ['targets', 'targets_old_shape'], shape=[-1])
        target_weights, _ = model.net.Reshape(
            [target_weights], ['target_weights', 'target_weights_old_shape'], shape=[-1])
        # the mean loss per target token, times the number of target tokens
        _, loss_per_word = model.net.SoftmaxWithLoss([output_logits, targets, target_weights],
                                                     ['OutputProbs_INVALID', 'loss_per_word'], only_loss=True)
        num_words = model.net.SumElements([target_weights], 'num_words')
        total_loss_scalar = model.net.Mul([loss_per_word, num_words], 'total_loss_scalar')
        return [model.net.Scale([total_loss_scalar], 'total_loss_scalar_weighted',
                                scale=1.0 / self.batch_size)]

    def forward_model_build_fun(self, model, loss_scale=None):
        return self.model_build_fun(model=model, forward_only=True, loss_scale=loss_scale)

    def _calc_norm_ratio(self, model, params, scope, ONE):
        """max_gradient_norm / max(global norm of the gradients of ``params``,
        max_gradient_norm): a [1] blob (1 while the norm is within bounds)."""
        with core.NameScope(scope):
            squared_sums = []
            for i, param in enumerate(params):
                grad = model.param_to_grad[param]
                if isinstance(grad, core.GradientSlice):
                    grad = grad.values
                squared = model.net.Sqr([grad], 'grad_{}_squared'.format(i))
                squared_sums.append(model.net.SumElements(squared, 'grad_{}_squared_sum'.format(i)))
            full_sum = model.net.Sum(squared_sums, 'grad_squared_full_sum')
            global_norm = model.net.Pow(full_sum, 'global_norm', exponent=0.5)
            clip_norm = model.param_init_net.ConstantFill(
                [], 'clip_norm', shape=[], value=float(self.model_params['max_gradient_norm']))
            max_norm = model.net.Max([global_norm, clip_norm], 'max_norm')
            return model.net.Div([clip_norm, max_norm], 'norm_ratio')

    def _apply_norm_ratio(self, norm_ratio, model, params, learning_rate, scope, ONE):
        """param += (-learning_rate * norm_ratio) * grad for each of ``params``
        (only the rows a GradientSlice names, for sliced gradients)."""
        negative_lr = model.net.Negative([learning_rate], 'negative_learning_rate')
        with core.NameScope(scope):
            update_coeff = model.net.Mul([negative_lr, norm_ratio], 'update_coeff', broadcast=1)
        for param in params:
            grad = model.param_to_grad[param]
            if isinstance(grad, core.GradientSlice):
                model.net.ScatterWeightedSum([param, ONE, grad.indices, grad.values, update_coeff], param)
            else:
                model.net.WeightedSum([param, ONE, grad, update_coeff], param)

    def _clipped_update(self, model, scope, sliced):
        params = [p for p in model.GetParams(top_scope=True)
                  if p in model.param_to_grad
                  and isinstance(model.param_to_grad[p], core.GradientSlice) == sliced]
        if not params:
            return
        logger.info('%s trainable variables: %s', 'Sparse' if sliced else 'Dense',
                    ', '.join(str(p) for p in params))
        ONE = model.param_init_net.ConstantFill([], 'ONE', shape=[1], value=1.0)
        norm_ratio = self._calc_norm_ratio(model, params, scope, ONE)
        self._apply_norm_ratio(norm_ratio, model, params, self.learning_rate, scope, ONE)

    def norm_clipped_grad_update(self, model, scope):
        """The clipped update of the parameters with dense gradients."""
        self._clipped_update(model, scope, sliced=False)

    def norm_clipped_sparse_grad_update(self, model, scope):
        """The clipped update of the parameters with sliced (GradientSlice)
        gradients: the embeddings."""
        self._clipped_update(model, scope, sliced=True)

    def _build_model(self, init_params):
        model = Seq2SeqModelHelper(init_params=init_params)
        self._build_shared(model)
        self._build_embeddings(model)
        forward_model = Seq2SeqModelHelper(init_params=init_params)
        self._build_shared(forward_model)
        self._build_embeddings(forward_model)
        model.AddGradientOperators(self.model_build_fun(model))
        self.norm_clipped_grad_update(model, scope='norm_clipped_grad_update')
        self.forward_model_build_fun(forward_model)
        self.norm_clipped_sparse_grad_update(model, scope='norm_clipped_sparse_grad_update')
        self.model = model
        self.forward_net = forward_model.net

    def _create_nets(self):
        for net in (self.model.net, self.forward_net):
            workspace.CreateNet(net, input_blobs=[str(b) for b in net.external_inputs])

    def _init_model(self):
        workspace.RunNetOnce(self.model.param_init_net)
        self._create_nets()

    def initialize_from_scratch(self):
        """Builds the nets, initializes the parameters at random and creates
        the nets in the current workspace."""
        logger.info('Initializing Seq2SeqModelCaffe2 from scratch: Start')
        self._build_model(init_params=True)
        self._init_model()
        logger.info('Initializing Seq2SeqModelCaffe2 from scratch: Finish')

    def load_from_checkpoint(self, checkpoint_path):
        """Ours (Caffe2's train.py has none): builds the nets as
        ``initialize_from_scratch`` does, then loads every parameter (the
        learning rate and ``global_step`` too) from ``checkpoint_path``, a
        file ``save`` wrote or the directory holding its ``checkpoint`` file.
        A parameter missing from the file, or of another shape than this
        model's (other ``model_params`` or vocabulary sizes), raises; the
        workspace keeps the blobs it had before the load then."""
        path = _checkpoint_file(checkpoint_path)
        self._build_model(init_params=True)
        workspace.RunNetOnce(self.model.param_init_net)
        params = [str(p) for p in self.model.GetAllParams()]
        before = {p: workspace.FetchBlob(p) for p in params}
        workspace.RunOperatorOnce(core.CreateOperator(
            'Load', [], params, absolute_path=True, db=path, db_type='minidb'))
        for p in params:
            got = workspace.FetchBlob(p)
            if got.shape != before[p].shape or got.dtype != before[p].dtype:
                for name, value in before.items():
                    workspace.FeedBlob(name, value)
                raise ValueError(
                    "load_from_checkpoint: '%s' in '%s' is %s %s, but this model's is %s %s (other "
                    "model_params or vocabulary sizes?)" % (p, path, got.dtype, list(got.shape),
                                                           before[p].dtype, list(before[p].shape)))
        self._create_nets()
        logger.info('Loaded Seq2SeqModelCaffe2 from %s (step %d)', path, self.get_current_step())

    # ------------------------------------------------------------ running
    def total_loss_scalar(self):
        """The summed loss of the last batch's target tokens."""
        return workspace.FetchBlob('total_loss_scalar')

    def get_current_step(self):
        return int(workspace.FetchBlob(self.global_step)[0])

    def inc_current_step(self):
        workspace.FeedBlob(self.global_step, np.array([self.get_current_step() + 1], dtype=np.int32))

    def step(self, batch, forward_only):
        """Runs one batch (a list of (source ids, target ids) pairs): the
        forward-only net, or the training net (then ``global_step`` + 1).
        Returns ``total_loss_scalar()``."""
        for name, value in zip(Batch._fields, prepare_batch(batch)):
            workspace.FeedBlob(name, value)
        if forward_only:
            workspace.RunNet(self.forward_net)
        else:
            workspace.RunNet(self.model.net)
            self.inc_current_step()
        return self.total_loss_scalar()

    def save(self, checkpoint_path_prefix, current_step):
        """Saves every parameter to the minidb file
        ``<checkpoint_path_prefix>-<current_step>`` and names it in the file
        ``checkpoint`` of the prefix's directory; returns the file's path."""
        checkpoint_path = '{0}-{1}'.format(checkpoint_path_prefix, current_step)
        workspace.RunOperatorOnce(core.CreateOperator(
            'Save', self.model.GetAllParams(), [], absolute_path=True, db=checkpoint_path,
            db_type='minidb'))
        config = os.path.join(os.path.dirname(checkpoint_path_prefix), 'checkpoint')
        with open(config, 'w') as f:
            f.write('model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n'
                    % (checkpoint_path, checkpoint_path))
        logger.info('Saved checkpoint file to %s', checkpoint_path)
        return checkpoint_path


def gen_batches(source_corpus, target_corpus, source_vocab, target_vocab, batch_size, max_length):
    """The batches of the parallel text files ``source_corpus`` and
    ``target_corpus`` (line i of one translates line i of the other), as
    Caffe2's: pairs with an empty side, or (``max_length`` not None) a side
    longer than ``max_length`` tokens, are dropped; the rest are sorted by
    (source length, target length), cut into batches of ``batch_size``, the
    last one filled up with copies of its last pair, and the batches are
    shuffled (``random.shuffle``)."""
    if batch_size < 1:
        raise ValueError("gen_batches: batch_size must be at least 1, got %r" % (batch_size,))
    pairs = []
    with open(source_corpus) as source, open(target_corpus) as target:
        for source_line, target_line in zip(source, target):
            source_ids = seq2seq_util.get_numberized_sentence(source_line, source_vocab)
            target_ids = seq2seq_util.get_numberized_sentence(target_line, target_vocab)
            if not source_ids or not target_ids:
                continue
            if max_length is not None and (len(source_ids) > max_length or len(target_ids) > max_length):
                continue
            pairs.append((source_ids, target_ids))
    pairs.sort(key=lambda pair: (len(pair[0]), len(pair[1])))
    batches = [pairs[i:i + batch_size] for i in range(0, len(pairs), batch_size)]
    if batches:
        last = batches[-1]
        last.extend([last[-1]] * (batch_size - len(last)))
    random.shuffle(batches)
    return batches


def run_seq2seq_model(args, model_params=None):
    """Caffe2's training loop: vocabularies from ``args.source_corpus`` /
    ``args.target_corpus`` (``args.unk_threshold``), training and eval
    batches, ``args.epochs`` epochs of training then evaluation, a checkpoint
    ``<args.checkpoint>-<epoch>`` after each epoch when ``args.checkpoint`` is
    set. Returns [(training loss, eval loss)] per epoch (ours)."""
    source_vocab = seq2seq_util.gen_vocab(args.source_corpus, args.unk_threshold)
    target_vocab = seq2seq_util.gen_vocab(args.target_corpus, args.unk_threshold)
    logger.info('Source vocab size %d', len(source_vocab))
    logger.info('Target vocab size %d', len(target_vocab))
    batch_size = model_params['batch_size']
    batches = gen_batches(args.source_corpus, args.target_corpus, source_vocab, target_vocab, batch_size,
                          args.max_length)
    logger.info('Number of training batches %d', len(batches))
    batches_eval = gen_batches(args.source_corpus_eval, args.target_corpus_eval, source_vocab, target_vocab,
                               batch_size, args.max_length)
    logger.info('Number of eval batches %d', len(batches_eval))
    history = []
    with Seq2SeqModelCaffe2(model_params=model_params, source_vocab_size=len(source_vocab),
                            target_vocab_size=len(target_vocab), num_gpus=args.num_gpus,
                            num_cpus=20) as model_obj:
        model_obj.initialize_from_scratch()
        for epoch in range(args.epochs):
            logger.info('Epoch %d', epoch)
            train_loss = sum(float(model_obj.step(batch=b, forward_only=False)) for b in batches)
            logger.info('\ttraining loss %s', train_loss)
            eval_loss = sum(float(model_obj.step(batch=b, forward_only=True)) for b in batches_eval)
            logger.info('\teval loss %s', eval_loss)
            if args.checkpoint is not None:
                model_obj.save(args.checkpoint, epoch)
            history.append((train_loss, eval_loss))
    return history


def add_model_arguments(parser):
    """The model flags train.py and translate.py share (Caffe2's)."""
    parser.add_argument('--source-corpus', type=str, default=None, required=True,
                        help='Path to source corpus in a text file format. Each line in the file should '
                        'contain a single sentence')
    parser.add_argument('--target-corpus', type=str, default=None, required=True,
                        help='Path to target corpus in a text file format')
    parser.add_argument('--unk-threshold', type=int, default=50,
                        help='Threshold frequency under which token becomes labeled unknown token')
    parser.add_argument('--use-bidirectional-encoder', action='store_true',
                        help='Set flag to use bidirectional recurrent network for first layer of encoder')
    parser.add_argument('--use-attention', action='store_true',
                        help='Set flag to use seq2seq with attention model')
    parser.add_argument('--encoder-cell-num-units', type=int, default=512,
                        help='Number of cell units per encoder layer')
    parser.add_argument('--encoder-num-layers', type=int, default=2, help='Number encoder layers')
    parser.add_argument('--decoder-cell-num-units', type=int, default=512,
                        help='Number of cell units in the decoder layer')
    parser.add_argument('--decoder-num-layers', type=int, default=2, help='Number decoder layers')
    parser.add_argument('--encoder-embedding-size', type=int, default=256,
                        help='Size of embedding in the encoder layer')
    parser.add_argument('--decoder-embedding-size', type=int, default=512,
                        help='Size of embedding in the decoder layer')
    parser.add_argument('--decoder-softmax-size', type=int, default=None,
                        help='Size of softmax layer in the decoder')


def model_params_from_args(parser, args):
    """``model_params``' model keys from the flags of ``add_model_arguments``.
    With ``--use-bidirectional-encoder`` the first encoder layer gets half
    the units per direction (Caffe2 halved every layer: see the module doc)."""
    encoder_layer_configs = [dict(num_units=args.encoder_cell_num_units)
                             for _ in range(args.encoder_num_layers)]
    if args.use_bidirectional_encoder:
        if args.encoder_cell_num_units % 2:
            parser.error('--use-bidirectional-encoder needs an even --encoder-cell-num-units, got %d'
                         % args.encoder_cell_num_units)
        if encoder_layer_configs:
            encoder_layer_configs[0]['num_units'] //= 2
    return dict(
        attention='regular' if args.use_attention else 'none',
        decoder_layer_configs=[dict(num_units=args.decoder_cell_num_units)
                               for _ in range(args.decoder_num_layers)],
        encoder_type=dict(encoder_layer_configs=encoder_layer_configs,
                          use_bidirectional_encoder=args.use_bidirectional_encoder),
        encoder_embedding_size=args.encoder_embedding_size,
        decoder_embedding_size=args.decoder_embedding_size,
        decoder_softmax_size=args.decoder_softmax_size,
    )


def _log_to_stderr():
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler(sys.stderr))
    logger.setLevel(logging.INFO)


def main(argv=None):
    """``python -m recurrent.models.seq2seq.train --source-corpus ... --target-corpus ...
    --source-corpus-eval ... --target-corpus-eval ...`` (Caffe2's flags;
    ``argv`` defaults to ``sys.argv[1:]``). Returns run_seq2seq_model's
    history."""
    random.seed(31415)
    parser = argparse.ArgumentParser(description='recurrent (Caffe2): Seq2Seq Training')
    add_model_arguments(parser)
    parser.add_argument('--max-length', type=int, default=None,
                        help='Maximal lengths of train and eval sentences')
    parser.add_argument('--batch-size', type=int, default=32, help='Training batch size')
    parser.add_argument('--epochs', type=int, default=10, help='Number of iterations over training data')
    parser.add_argument('--learning-rate', type=float, default=0.5, help='Learning rate')
    parser.add_argument('--max-gradient-norm', type=float, default=1.0,
                        help='Max global norm of gradients at the end of each backward pass. We do '
                        'clipping to match the number.')
    parser.add_argument('--num-gpus', type=int, default=0,
                        help='Number of GPUs for data parallel model (must be 0: CPU only)')
    parser.add_argument('--source-corpus-eval', type=str, default=None, required=True,
                        help='Path to source corpus for evaluation in a text file format')
    parser.add_argument('--target-corpus-eval', type=str, default=None, required=True,
                        help='Path to target corpus for evaluation in a text file format')
    parser.add_argument('--checkpoint', type=str, default=None, help='Path to checkpoint')
    args = parser.parse_args(argv)
    if args.num_gpus != 0:
        parser.error('--num-gpus must be 0: this build is CPU-only')
    if args.batch_size < 1:
        parser.error('--batch-size must be at least 1')
    model_params = model_params_from_args(parser, args)
    model_params.update(batch_size=args.batch_size,
                        optimizer_params=dict(learning_rate=args.learning_rate),
                        max_gradient_norm=args.max_gradient_norm)
    _log_to_stderr()
    return run_seq2seq_model(args, model_params=model_params)


if __name__ == '__main__':
    main()
