"""offcert.check and offcert.plot: the verdict, and bad input as ValueError."""

import json
from pathlib import Path

import pytest

import offcert

CHAIN = "instances/examples/chain3m8.json"
IN_USE = "instances/examples/chain3m8.in-use.invalid.schedule.json"


def test_the_in_use_schedule_is_released_while_in_use():
    v = offcert.check(CHAIN, IN_USE)
    assert not v.valid
    assert "released_while_in_use" in v.rules
    # The schedule's note: events[6] (x2 at 10) and events[7] (x3 at 7).
    got = sorted((x.event, x.time) for x in v.violations if x.rule == "released_while_in_use")
    assert got == [(6, 10), (7, 7)]
    assert all(x.rule_name == "released-while-in-use" and x.sentence for x in v.violations)
    assert v.release == "after_end"
    assert "INVALID" in str(v) and "Violation(" in repr(v)


def test_under_after_start_the_same_schedule_is_valid_with_makespan_15():
    v = offcert.check(CHAIN, IN_USE, release="after_start")
    assert v.valid and v.violations == []
    assert v.makespan == 15 and v.peak <= 8


def test_dicts_and_paths_give_the_same_verdict():
    inst = json.loads(Path(CHAIN).read_text())
    sched = json.loads(Path(IN_USE).read_text())
    a = offcert.check(CHAIN, IN_USE)
    b = offcert.check(inst, sched)
    assert (a.valid, a.makespan, a.peak, a.rules) == (b.valid, b.makespan, b.peak, b.rules)
    assert a.schedule_sha256 == b.schedule_sha256
    assert b.instance == "<instance dict>"


def test_a_missing_file_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="no-such.json"):
        offcert.check("instances/examples/no-such.json", IN_USE)


def test_a_bad_field_is_a_value_error_naming_the_field():
    inst = json.loads(Path(CHAIN).read_text())
    inst["layers"][1]["x"] = "four"
    with pytest.raises(ValueError, match=r"<instance dict>.*layers\[1\]\.x"):
        offcert.check(inst, IN_USE)


def test_a_schedule_naming_an_unknown_op_is_a_value_error():
    sched = json.loads(Path(IN_USE).read_text())
    sched["events"][0]["op"] = "F9"
    with pytest.raises(ValueError, match=r"<schedule dict>.*F9"):
        offcert.check(CHAIN, sched)


def test_malformed_json_and_a_bad_release_rule_are_value_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(ValueError, match="bad.json"):
        offcert.check(bad, IN_USE)
    with pytest.raises(ValueError, match="release"):
        offcert.check(CHAIN, IN_USE, release="sometime")
    with pytest.raises(TypeError):
        offcert.check(42, IN_USE)


def test_plot_writes_the_picture_and_returns_the_verdict(tmp_path):
    out = tmp_path / "s.svg"
    v = offcert.plot(CHAIN, IN_USE, out)
    assert not v.valid and "released_while_in_use" in v.rules
    text = out.read_text()
    assert text.startswith("<svg") or "<svg" in text[:200]
    assert v.svg == text
