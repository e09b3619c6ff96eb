"""LSTMUnit / GRUUnit (and their gradients) split by rows over a serial step
loop's threads (csrc/ops/rnn_units.c, unit_run).

In a serial step loop the products use the step threads (OpenBLAS's thread
count when the loop starts); a cell of at least 4096 elements (batch x
hidden) is split by rows over the same threads. Rows are independent and
every element gets the same operations in any part, so the results must be
the bits of the unsplit run: the serial loop at 2 and 3 step threads (cells
split in 2 and 3 parts) equals the executor bit for bit, with seq_lengths
that end rows early; at 1 step thread nothing is split. The executor's
workers run their cells whole, or split over the executor's idle threads
when those help (rnn/executor.c "Helping"): the same bits either way."""

import pytest

from recurrent import _C
from test_executor import assert_bitwise, build_stack


@pytest.fixture
def blas_threads(core_flag):
    return lambda n: core_flag("blas_num_threads", n)


def splits():
    return _C.get_flag("unit_splits")


@pytest.mark.parametrize("kind,H,N", [("lstm", 64, 70), ("gru", 64, 67), ("lstm", 48, 100)])
def test_split_cells_give_the_unsplit_bits(kind, H, N, blas_threads, core_flag):
    case = build_stack(kind, layers=2, H=H, N=N, D=6, name="split_%s_%d" % (kind, N))
    blas_threads(1)
    before = splits()
    case.run(5, 3, enable=0)
    assert splits() == before  # one step thread: nothing split
    for threads in (2, 3):
        # OpenBLAS's thread count outside the step loop (the layer-1 input
        # projection) changes its bits, so each count has its own reference
        blas_threads(threads)
        before = splits()
        ref = case.run(5, 3, enable=0)
        # every step's cell forward and backward, both layers (rows whose
        # seq_lengths have ended go through the kernel too)
        assert splits() - before == 5 * 2 * 2, threads
        for workers in (2, 3):
            for help_ in (0, 1):
                core_flag("rnn_executor_help", help_)
                before = splits()
                got = case.run(5, 3, enable=1, threads=workers)
                if not help_:
                    assert splits() == before  # executor workers run their cells whole
                assert_bitwise(ref, got, "serial split in %d against the executor at %d workers, help %d"
                               % (threads, workers, help_))


def test_small_cells_are_not_split(blas_threads):
    """Below 4096 elements a cell runs whole: a helper's hand-off would cost
    more than it saves."""
    case = build_stack("lstm", layers=2, H=63, N=65, D=6, name="split_small")  # 4095 elements
    blas_threads(2)
    before = splits()
    case.run(4, 1, enable=0)
    assert splits() == before
