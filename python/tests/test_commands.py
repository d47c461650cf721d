"""offcert.audit, offcert.offmate and the importers (run in this process)."""

import json

import pytest

import offcert

DATA = "tests/data"


def test_audit_of_an_nsight_trace():
    r = offcert.audit(f"{DATA}/traces/nsys_h200_nvfuser_report1.sqlite")
    assert r.returncode == 0 and isinstance(r.data, dict)


def test_audit_of_a_missing_trace_is_a_value_error():
    with pytest.raises(ValueError, match="no-such.sqlite"):
        offcert.audit(f"{DATA}/traces/no-such.sqlite")


def test_import_rotor_chain_and_its_bad_input(tmp_path):
    good = tmp_path / "c.txt"
    good.write_text("[(1, 2, 4, 6, 0, 0), (None, 1, 2, 2, None, 0)]")
    r = offcert.import_rotor(good, tick_us=1000)
    assert r.returncode == 0 and r.output["family"] == "remat_chain"
    assert offcert.heuristic(r.output)  # the imported instance is usable as a dict
    bad = tmp_path / "bad.txt"
    bad.write_text("[(1, 2, 4, 6, 0), (None, 1, 2, 2, None, 0)]")
    with pytest.raises(ValueError, match=r"bad.txt.*\[0\]"):
        offcert.import_rotor(bad)


def test_import_rockmate_chain_and_its_sequence(tmp_path):
    out = tmp_path / "remat2x2.json"
    r = offcert.import_rockmate(f"{DATA}/rotor_sequences/remat2x2.rk_chain.json", out=out, tick_us=1000,
                                gpu_memory=9, name="remat2x2")
    assert r.returncode == 0 and r.written == str(out)
    assert r.output == json.loads(out.read_text())
    s = offcert.import_rockmate_sequence(f"{DATA}/rotor_sequences/remat2x2.rockmate.json", out)
    assert s.returncode in (0, 1) and s.output is not None
    v = offcert.check(out, s.output)
    assert v.valid == (s.returncode == 0)


def test_import_et_with_kineto():
    r = offcert.import_et(f"{DATA}/traces/param_linear_et.json.gz",
                          kineto=f"{DATA}/traces/param_linear_kineto.json.gz")
    assert r.returncode == 0 and r.output["family"] == "op_sequence"


def test_import_offmate_solution_is_judged():
    r = offcert.import_offmate_solution(f"{DATA}/offmate_export_sample.json",
                                        f"{DATA}/offmate_export_sample_solution.json", no_compare=True)
    assert r.returncode in (0, 1)
    assert "checked period" in r.text or "refuted by the checker" in r.text


def test_offmate_end_to_end_on_a_tiny_instance():
    r = offcert.offmate("instances/offmate/tiny/frozen-2x2.json", time_limit=20, baselines=["all"])
    assert r.returncode in (0, 1) and r.data["rows"]


def test_run_any_subcommand_and_its_bad_options():
    r = offcert.run("examples")
    assert r.returncode == 0 and "chain3m8" in r.text
    with pytest.raises(ValueError, match="unexpected argument"):
        offcert.run("check", "--no-such-flag")
    h = offcert.run("gap", "--help")
    assert h.returncode == 0 and "--shard" in h.text


def test_commands_given_the_wrong_family_or_a_missing_file_raise_value_errors():
    chain = "instances/examples/chain3.json"
    with pytest.raises(ValueError, match=r"chain3.json: .*offmate instance"):
        offcert.offmate(chain, time_limit=5)
    with pytest.raises(ValueError, match=r"chain3.json: .*offmate instance"):
        offcert.import_offmate_solution(chain, f"{DATA}/offmate_export_sample_solution.json")
    with pytest.raises(ValueError, match=r"chain3.json: family: .*remat_chain"):
        offcert.import_rotor_sequence(f"{DATA}/rotor_sequences/remat2x2.rockmate.json", chain)
    with pytest.raises(ValueError, match=r"no-such.json.gz: cannot read"):
        offcert.import_et(f"{DATA}/traces/no-such.json.gz")
