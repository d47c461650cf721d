"""offcert.bound, offcert.heuristic and offcert.solve on the bundled chains."""

import pytest

import offcert

CHAIN = "instances/examples/chain3m8.json"


def test_bound_gives_certified_bounds_below_the_optimum():
    r = offcert.bound(CHAIN)
    assert r.family == "activation_chain" and r.memory == 8
    best = r.best_certified
    assert best is not None and best.certified
    # The optimum under after_end is 19 (instances/README.md); a bound is at most that.
    assert 0 < best.ceil <= 19
    assert not r.infeasible


def test_bound_at_a_budget_too_small_says_infeasible():
    r = offcert.bound(CHAIN, memory=1)
    assert r.infeasible
    assert any(f.infeasible for f in r.failures)


def test_every_valid_heuristic_schedule_checks_again():
    runs = offcert.heuristic(CHAIN)
    assert runs, "some heuristic applies to an activation chain"
    valid = [h for h in runs if h.valid]
    assert valid
    for h in valid:
        v = offcert.check(CHAIN, h.schedule)
        assert v.valid and v.makespan == h.makespan and v.peak == h.peak
        assert h.makespan >= 19


def test_an_unknown_heuristic_is_a_value_error():
    with pytest.raises(ValueError, match="unknown heuristic `nope`"):
        offcert.heuristic(CHAIN, ["nope"])


def test_solve_finds_the_optimum_19_and_15_under_after_start():
    r = offcert.solve(CHAIN, method="search", time_limit=20)
    assert r.makespan == 19 and "optimal" in r.status
    assert offcert.check(CHAIN, r.schedule).makespan == 19
    r = offcert.solve(CHAIN, method="search", time_limit=20, release="after_start")
    assert r.makespan == 15


def test_solve_rejects_a_bad_method_and_a_bad_limit():
    with pytest.raises(ValueError, match="method"):
        offcert.solve(CHAIN, method="guess")
    with pytest.raises(ValueError, match="time_limit"):
        offcert.solve(CHAIN, time_limit=0)
