"""examples/recurrent_intro.ipynb runs from top to bottom (nbclient, kernel
python3) with the recurrent package this test process imports."""

import os

import pytest

import recurrent

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "examples", "recurrent_intro.ipynb")
PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))


def test_intro_notebook_executes(tmp_path, monkeypatch):
    # the kernel is a subprocess: give it the same recurrent and a headless backend
    monkeypatch.setenv("PYTHONPATH", PKG_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                     if o.output_type == "stream")
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert "max |recurrent - numpy|" in text
    assert "gradients bitwise identical: True" in text
    assert "speedup" in text
    assert len(images) >= 2  # the loss plot and the executor timeline
    assert (tmp_path / "rnn_trace.json").is_file()
