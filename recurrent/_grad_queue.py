"""Gradient makers of the blob queue ops (csrc/ops/queue.c).

``CreateBlobsQueue``, ``EnqueueBlobs``, ``DequeueBlobs``, ``CloseBlobsQueue``, ``SafeEnqueueBlobs``,
``SafeDequeueBlobs`` and ``WeightedSampleDequeueBlobs`` have no gradient (as in Caffe2: queue_ops.cc
NO_GRADIENT).
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("CreateBlobsQueue", "EnqueueBlobs", "DequeueBlobs", "CloseBlobsQueue",
                                    "SafeEnqueueBlobs", "SafeDequeueBlobs", "WeightedSampleDequeueBlobs")
