"""The README's Python examples run as written (each in a fresh
interpreter, against the package the tests import) and print what the README
says they print."""

import os
import re
import subprocess
import sys

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def blocks():
    if not os.path.exists(README):
        return []
    with open(README, encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@pytest.mark.skipif(not os.path.exists(README), reason="README.md not beside tests/")
def test_readme_has_examples():
    assert len(blocks()) >= 2


@pytest.mark.parametrize("index", range(len(blocks())))
def test_readme_example_runs(index, tmp_path):
    import recurrent
    code = blocks()[index]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__))) + os.pathsep + \
        env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, "README example %d failed:\n%s\n%s" % (index, code, p.stderr)
    # a "print(...)   # expected" comment in the example: that is what it prints
    for call, want in re.findall(r"^(print\(.*\))\s+#\s*(.+)$", code, re.M):
        assert want.strip() in p.stdout, (call, want, p.stdout)


def _anchor(title):
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces -> -."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


@pytest.mark.skipif(not os.path.exists(README), reason="README.md not beside tests/")
def test_readme_contents_lists_every_section():
    """The Contents list links every ## / ### section (but itself and 'Two commands'), in order, by
    the anchor GitHub gives it: a section added or renamed shows up here."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    heads, in_code = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"^###? ", line):
            heads.append(line.split(" ", 1)[1])
    want = ["[%s](#%s)" % (h, _anchor(h)) for h in heads if h not in ("Contents", "Two commands")]
    toc = text.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    got = [line.strip()[2:] for line in toc.split("\n") if line.strip().startswith("- ")]
    assert got == want
