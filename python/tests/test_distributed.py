"""offcert.distributed.gap on a local Ray instance (skipped without Ray)."""

import pytest

ray = pytest.importorskip("ray")

import offcert  # noqa: E402
from offcert import distributed  # noqa: E402

FILES = ["instances/examples/chain3.json", "instances/examples/chain3m8.json", "instances/examples/w2.json"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_rows_equal_the_local_run_without_a_time_limit(local_ray):
    from conftest import without_seconds

    local = offcert.gap(FILES, jobs=1)
    remote = distributed.gap(FILES)
    assert len(remote) == len(local) > 0
    for a, b in zip(local, remote):
        assert without_seconds(a.to_dict()) == without_seconds(b.to_dict())


def test_with_a_time_limit_every_row_is_certified(local_ray):
    remote = distributed.gap(FILES[:2], memory="8:12:2", time_limit=1)
    assert len(remote) == 4
    for row in remote:
        best = row["best_schedule"]
        assert best is not None
        distributed.recheck_row(row._d)
        v = offcert.check(row["instance_file_at_budget"], row["best_schedule_file"])
        assert v.valid and v.makespan == best["makespan"]
        assert row["best_certified_bound"]["strength"] == "lower bound (certified)"
        assert row.best_certified_bound <= v.makespan


def test_a_forged_row_is_refused():
    import json
    from pathlib import Path

    sched = json.loads(Path("instances/examples/chain3m8.in-use.invalid.schedule.json").read_text())
    row = {"instance": "x", "budget": 8, "best_schedule": {"makespan": 15, "by": "forged"},
           "best_schedule_file": sched, "instance_file_at_budget": "instances/examples/chain3m8.json"}
    with pytest.raises(distributed.UncheckedRow):
        distributed.recheck_row(row)
