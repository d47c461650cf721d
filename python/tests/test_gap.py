"""offcert.gap: the report's rows, as dicts and as a DataFrame."""

import json

import pytest

import offcert

FILES = ["instances/examples/chain3.json", "instances/examples/chain3m8.json"]


def test_gap_rows_of_a_small_sweep():
    r = offcert.gap(FILES, memory="8:12:3", jobs=1)
    assert len(r) == 6
    assert [x.instance for x in r] == [FILES[0]] * 3 + [FILES[1]] * 3
    assert [x.budget for x in r][:3] == [8, 10, 12]
    for row in r:
        assert row.best_makespan is not None
        assert row.best_certified_bound <= row.best_makespan
    rows = r.to_dicts()
    assert json.loads(json.dumps(rows)) == rows
    assert "rows" in r.summary and str(r).endswith(r.summary + "\n")


def test_gap_is_the_same_for_every_jobs_count():
    from conftest import without_seconds

    a = offcert.gap(FILES, memory="8:12:3", jobs=1).to_dicts()
    b = offcert.gap(FILES, memory="8:12:3", jobs=2).to_dicts()
    assert without_seconds(a) == without_seconds(b)


def test_gap_to_pandas():
    pd = pytest.importorskip("pandas")
    df = offcert.gap(FILES, jobs=1).to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 2
    assert {"instance", "budget", "best_schedule.makespan"} <= set(df.columns)


def test_gap_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="no-such.json"):
        offcert.gap(["instances/examples/no-such.json"])
    with pytest.raises(ValueError, match="jobs"):
        offcert.gap(FILES, jobs=0)
    with pytest.raises(ValueError):
        offcert.gap(FILES, memory="lots")


def test_gap_under_an_allocator():
    from conftest import without_seconds

    exact = offcert.gap(FILES, memory="8:12:3", jobs=1, allocator="exact").to_dicts()
    plain = offcert.gap(FILES, memory="8:12:3", jobs=1).to_dicts()
    assert without_seconds(exact) == without_seconds(plain)
    # Every 4 B activation occupies a whole 1 MB chunk: nothing fits in 8-12 B.
    va = offcert.gap(FILES, memory="8:12:3", jobs=1, allocator="va:1MB")
    assert len(va) == 6 and all(row.best_makespan is None for row in va)
    with pytest.raises(ValueError, match="allocator"):
        offcert.gap(FILES, allocator="buddy")
