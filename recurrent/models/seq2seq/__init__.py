"""Caffe2's ``caffe2.python.models.seq2seq`` modules: ``seq2seq_util``
(vocabulary helpers, the embedding encoder and decoder builders, the output
projection), ``seq2seq_model_helper`` (``Seq2SeqModelHelper``), ``train``
(``Seq2SeqModelCaffe2``, ``prepare_batch``, ``gen_batches``, the training
command line), ``beam_search`` and ``translate`` (the ensemble beam-search
decoder and its command line). CPU only."""
