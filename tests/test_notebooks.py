"""The analyst notebooks run top to bottom on bundled or simulated data (nbclient), so they
never rot. They use only the public API."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "reports" / "notebooks").glob("*.ipynb"))


def test_notebooks_exist():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.slow  # 10-50 s each
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # every notebook shows at least one figure
    assert any("image/png" in o.get("data", {}) for o in outputs)
    # and imports only the public API (no private modules)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "._" not in code.replace("._repr", "")
