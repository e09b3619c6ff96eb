"""caffe2.python.serialized_test.serialized_test_util, without the stored outputs.

Caffe2's ``SerializedTestCase`` additionally compared one fixed example of each
``serial.given`` test with golden outputs saved in Caffe2's repository (zip files
of the op, its inputs and outputs, made with ``--generate-serialized``). Those
files describe Caffe2's build, not this package, so here no outputs are stored
or compared: ``SerializedTestCase`` is ``hypothesis_test_util.HypothesisTestCase``
and ``given`` runs the test once on a fixed example (seed 0, as Caffe2's did
for the stored one) and then on hypothesis's usual draws.
"""

import hypothesis

from .. import hypothesis_test_util as hu


def given(*given_args, **given_kwargs):
    """hypothesis.given, run first on one example drawn with seed 0, then as usual."""
    def wrapper(f):
        drawn = hypothesis.given(*given_args, **given_kwargs)(f)
        fixed = hypothesis.seed(0)(hypothesis.settings(max_examples=1)(
            hypothesis.given(*given_args, **given_kwargs)(f)))

        def test(self, *args, **kwargs):
            fixed(self, *args, **kwargs)
            drawn(self, *args, **kwargs)
        test.__name__ = f.__name__
        test.__qualname__ = f.__qualname__
        test.__doc__ = f.__doc__
        return test
    return wrapper


class SerializedTestCase(hu.HypothesisTestCase):
    """HypothesisTestCase; Caffe2's stored-output comparison is not done (module doc)."""
