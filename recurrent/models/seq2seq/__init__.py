"""Caffe2's ``caffe2.python.models.seq2seq`` library modules: ``seq2seq_util``
(vocabulary helpers, the embedding encoder and decoder builders, the output
projection) and ``seq2seq_model_helper`` (``Seq2SeqModelHelper``). CPU only."""
