"""Caffe2's ``caffe2.python.predictor.mobile_exporter``: ``Export(workspace, net, params)`` gives the
``(init_net, predict_net)`` pair that ``workspace.Predictor`` (or ``RunNetOnce(init_net)`` and
``CreateNet(predict_net)``) runs.

- ``init_net`` holds one ``GivenTensorFill`` (float32 blobs) or ``GivenTensorIntFill`` (int32 blobs)
  per parameter, with the values the parameter has in ``workspace`` now, and a ``GivenTensorFill``
  of shape ``[1, 1]`` (value 0) per input of the net that is not a parameter, so that every input
  exists (the caller feeds the real ones).
- ``predict_net`` is a copy of ``net`` whose external inputs are those inputs first, then the
  parameters and the net's other external inputs, and whose external outputs are the blobs the net
  writes and never reads.

As Caffe2's. A parameter that holds no tensor is a TypeError naming it (Caffe2 failed inside
NumPy); this build stores only float32 and int32 blobs, so Caffe2's int64, uint8 and string fills
are never needed.
"""

import numpy as np

from .. import core, utils
from ..proto import NetDef

_FILL_OF = {np.dtype(np.float32): "GivenTensorFill", np.dtype(np.int32): "GivenTensorIntFill"}


def add_tensor(net, name, blob):
    """Appends to ``net`` (a NetDef) the op that fills blob ``name`` with the array ``blob``:
    ``GivenTensorFill`` for float32, ``GivenTensorIntFill`` for int32 (other dtypes: TypeError)."""
    blob = np.asarray(blob)
    fill = _FILL_OF.get(blob.dtype)
    if fill is None:
        raise TypeError("add_tensor: blob '%s' has dtype %s; float32 and int32 are stored here"
                        % (name, blob.dtype))
    op = core.CreateOperator(fill, [], [name], arg=[
        utils.MakeArgument("shape", list(blob.shape)),
        utils.MakeArgument("values", blob.ravel().tolist()),
    ])
    net.op.extend([op])


def Export(workspace, net, params):
    """Returns ``(init_net, predict_net)`` (NetDefs) for ``net`` (a core.Net or NetDef) with the
    parameters ``params`` (blob names or BlobReferences) read from ``workspace`` (the module)."""
    proto = net if isinstance(net, NetDef) else net.Proto()
    predict_net = NetDef()
    predict_net.CopyFrom(proto)
    init_net = NetDef()
    params = [str(p) for p in params]
    ssa, blob_versions = core.get_ssa(proto)
    inputs = []
    for versioned_inputs, _ in ssa:
        inputs += [name for name, _ in versioned_inputs]
    input_blobs = [name for name, version in blob_versions.items() if version == 0 and name not in params]
    output_blobs = [name for name, version in blob_versions.items() if version != 0 and name not in inputs]
    for name in params:
        blob = workspace.FetchBlob(name)
        if not isinstance(blob, np.ndarray):
            raise TypeError("Export: parameter '%s' holds no tensor (%s)" % (name, blob.decode()))
        add_tensor(init_net, name, blob)
    for name in input_blobs:
        init_net.op.extend([core.CreateOperator("GivenTensorFill", [], [name], arg=[
            utils.MakeArgument("shape", [1, 1]),
            utils.MakeArgument("values", [0.0]),
        ])])
    new_external_inputs = list(input_blobs)
    for external_input in proto.external_input:
        if str(external_input) not in new_external_inputs:
            new_external_inputs.append(str(external_input))
    predict_net.external_input = new_external_inputs
    predict_net.external_output = list(output_blobs)
    return init_net, predict_net
