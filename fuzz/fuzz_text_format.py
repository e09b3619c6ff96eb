"""Fuzz target: the protobuf text-format parser and printer (recurrent.text_format).

Malformed text must raise ValueError (naming line and column); text that
parses must print back to text that parses to an equal message, and printing
is a fixed point after one round (parse(print(m)) prints as print(m)).

    python fuzz/fuzz_text_format.py [libFuzzer flags] [corpus dir]   (needs atheris)
    python fuzz/fuzz_text_format.py --replay FILE...                 (no atheris needed)
"""

import sys

from common import main

from recurrent import text_format  # noqa: E402
from recurrent.proto import Argument, NetDef, OperatorDef  # noqa: E402

KINDS = [NetDef, OperatorDef, Argument]


def test_one_input(data):
    if not data:
        return
    cls = KINDS[data[0] % len(KINDS)]
    try:
        text = data[1:].decode("utf-8")
    except UnicodeDecodeError:
        text = data[1:].decode("latin-1")
    msg = cls()
    try:
        text_format.Parse(text, msg)
    except ValueError:
        return
    printed = text_format.message_to_text(msg)
    again = cls()
    text_format.Parse(printed, again)
    printed2 = text_format.message_to_text(again)
    assert printed2 == printed, (text, printed, printed2)


if __name__ == "__main__":
    main(test_one_input, sys.argv)
