"""docs/PYTHON.md's worked example runs as written."""

import contextlib
import io
import re
from pathlib import Path

from conftest import ROOT


def test_the_worked_example_runs():
    text = (ROOT / "docs" / "PYTHON.md").read_text()
    section = text.split("## Worked example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/PYTHON.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "True 15 12"
    assert lines[1] == "False"
    assert any(l.startswith("input_not_resident ") for l in lines[2:]), lines
    assert "rows" in lines[-1]
