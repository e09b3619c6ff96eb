"""Viterbi decoding for ``crf.CRFWithLoss``, as Caffe2's ``caffe2.python.crf_predict``."""

import numpy as np

from .crf import CRFWithLoss


def crf_update_predictions(model, crf_with_loss, classes):
    """``apply_crf`` with the layer's transitions, adding to ``model``'s nets."""
    return apply_crf(model.param_init_net, model.net, crf_with_loss.transitions, classes,
                     crf_with_loss.num_classes)


def apply_crf(init_net, net, transitions, predictions, num_classes):
    """Adds to ``net`` the ops that return ``predictions`` (T, num_classes) with, at each step, the
    scores of the Viterbi path's tag and of the step's best tag swapped (``SwapBestPath``), so that each
    row's argmax reads the best path under ``transitions`` ((num_classes + 2) squared, begin and end tags
    included). The path is decoded (``ViterbiPath``) on the predictions padded as the CRF loss pads them,
    and the padding is taken off again."""
    padded = CRFWithLoss.pad_predictions(predictions, init_net, net, num_classes)
    path = net.ViterbiPath([padded, transitions])
    swapped = net.SwapBestPath([padded, path])
    rows = net.RemovePadding([swapped], padding_width=1, end_padding_width=1)  # the begin / end rows
    starts = net.GivenTensorIntFill([], shape=[2], values=np.array([0, 0], np.int32))
    ends = net.GivenTensorIntFill([], shape=[2], values=np.array([-1, -3], np.int32))  # the tag columns
    return net.Slice([rows, starts, ends])
