"""Model libraries ported from ``caffe2.python.models`` (``recurrent.models.seq2seq``)."""
