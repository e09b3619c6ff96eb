"""GRUCell and GRU, as caffe2.python.gru_cell (they live in rnn_cell)."""

from .rnn_cell import GRU, GRUCell

__all__ = ["GRUCell", "GRU"]
