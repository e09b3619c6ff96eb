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
    """hypothesis.given, run first on one example drawn with seed 0, then as usual.

    A ``@settings(...)`` applied above it (as Caffe2's tests do, e.g. ``max_examples=50``) is
    honoured: the usual draws run with those settings, and the fixed example with them and
    ``max_examples=1`` (so a suppressed health check stays suppressed there too).
    """
    def wrapper(f):
        def test(self, *args, **kwargs):
            outer = test.__dict__.get("_hypothesis_internal_use_settings")
            fixed_settings = hypothesis.settings(outer, max_examples=1) if outer is not None \
                else hypothesis.settings(max_examples=1)
            fixed = hypothesis.seed(0)(fixed_settings(hypothesis.given(*given_args, **given_kwargs)(f)))
            drawn = hypothesis.given(*given_args, **given_kwargs)(f)
            if outer is not None:
                drawn = outer(drawn)
            fixed(self, *args, **kwargs)
            drawn(self, *args, **kwargs)
        test.__name__ = f.__name__
        test.__qualname__ = f.__qualname__
        test.__doc__ = f.__doc__
        # hypothesis's pytest plugin refuses @settings on a function it does not see as a
        # hypothesis test ("Using @settings on a test without @given is completely pointless")
        test.is_hypothesis_test = True
        return test
    return wrapper


class SerializedTestCase(hu.HypothesisTestCase):
    """HypothesisTestCase; Caffe2's stored-output comparison is not done (module doc)."""
