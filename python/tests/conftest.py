"""pytest setup: every test runs from the repository root, so that the
bundled instances are reached by the same relative paths as in the docs."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def without_seconds(x):
    """``x`` without its wall-clock figures (every ``seconds`` key)."""
    if isinstance(x, dict):
        return {k: without_seconds(v) for k, v in x.items() if k != "seconds"}
    if isinstance(x, list):
        return [without_seconds(v) for v in x]
    return x
