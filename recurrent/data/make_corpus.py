"""Regenerates stdlib_docs.txt, the demo's bundled training text: docstrings of
the Python standard library, read from the source files with ``ast`` (nothing
is imported, so no module runs). ASCII only, one entry per documented module,
class or function:

    textwrap.dedent
    Remove any common leading whitespace from every line in `text`.
    ...

Run with the Python whose standard library you want (the shipped file was
made with CPython 3.11.7):  python recurrent/data/make_corpus.py
"""

import ast
import os
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "stdlib_docs.txt")
LIMIT = 300_000      # bytes of text in all
PER_MODULE = 5_000   # bytes per module, so many modules contribute
MIN_DOC = 60         # skip one-liners shorter than this


def _docstrings(tree, modname):
    """(qualified name, docstring) for the module and its public classes and
    functions, in source order."""
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        yield modname, doc
    stack = [(node, modname) for node in tree.body]
    while stack:
        node, prefix = stack.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name.startswith("_"):
                continue
            name = prefix + "." + node.name
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield name, doc
            if isinstance(node, ast.ClassDef):
                stack[0:0] = [(child, name) for child in node.body]


def build(stdlib=None, limit=LIMIT):
    stdlib = stdlib or sysconfig.get_paths()["stdlib"]
    files = sorted(f for f in os.listdir(stdlib) if f.endswith(".py") and not f.startswith("_")
                   and f not in ("this.py", "antigravity.py"))
    parts, total = [], 0
    for fname in files:
        modname = fname[:-3]
        try:
            with open(os.path.join(stdlib, fname), encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        used = 0
        for name, doc in _docstrings(tree, modname):
            if len(doc) < MIN_DOC or not doc.isascii() or "\t" in doc:
                continue
            entry = "%s\n%s\n\n" % (name, doc.strip())
            if used + len(entry) > PER_MODULE:
                break
            if total + len(entry) > limit:
                return "".join(parts)
            parts.append(entry)
            used += len(entry)
            total += len(entry)
    return "".join(parts)


if __name__ == "__main__":
    text = build(sys.argv[1] if len(sys.argv) > 1 else None)
    with open(OUT, "w", encoding="ascii", newline="\n") as f:
        f.write(text)
    print("wrote %s: %d characters, %d distinct" % (OUT, len(text), len(set(text))))
