"""Caffe2's ``caffe2.python.predictor`` package: ``mobile_exporter`` (an init net and a predict net
from a trained net and its parameters, for ``workspace.Predictor``)."""
