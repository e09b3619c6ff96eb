"""Gradient makers of the blob queue ops (csrc/ops/queue.c).

``CreateBlobsQueue``, ``EnqueueBlobs``, ``DequeueBlobs``, ``CloseBlobsQueue``, ``SafeEnqueueBlobs``,
``SafeDequeueBlobs`` and ``WeightedSampleDequeueBlobs`` have no gradient (as in Caffe2: queue_ops.cc
NO_GRADIENT), nor have the rebatching queue ops (rebatching_queue_ops.cc NO_GRADIENT).
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("CreateBlobsQueue", "EnqueueBlobs", "DequeueBlobs", "CloseBlobsQueue",
                                    "SafeEnqueueBlobs", "SafeDequeueBlobs", "WeightedSampleDequeueBlobs")
GradientRegistry.RegisterNoGradient("CreateRebatchingQueue", "EnqueueRebatchingQueue", "DequeueRebatchingQueue",
                                    "CloseRebatchingQueue")

# csrc/ops/counter.c: the atomic counters (Caffe2: SHOULD_NOT_DO_GRADIENT).
GradientRegistry.RegisterNoGradient("CreateCounter", "ResetCounter", "CountDown", "CheckCounterDone", "CountUp",
                                    "RetrieveCount")
