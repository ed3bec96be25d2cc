"""ExecuTorch's `.ptd` through `hurray convert`, in ExecuTorch itself: the
real executorch 1.5.1 wheel (its own venv, `.tools/et`, which `cargo xtask
setup` installs from python/requirements-executorch.txt) exports an f32 MLP
and a model with a bf16 weight and an int8 buffer; the `.ptd` it writes
converts to Hurray and back, and the program runs with the converted `.ptd`
bit-equal to the official one, every tensor the same key, layout and bytes."""

import json
import os
import subprocess

import pytest

from deploy import ROOT, hurray_cli

ET = ROOT / ".tools" / "et" / "bin" / "python"


def et_python():
    if not ET.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{ET} is missing: cargo xtask setup installs it")
        pytest.skip(f"{ET} is not installed (cargo xtask setup)")
    return ET


def test_ptd_converts_both_ways_and_runs_bit_equal_in_executorch(tmp_path):
    script = ROOT / "python" / "executorch" / "roundtrip.py"
    run = subprocess.run(
        [str(et_python()), str(script), str(tmp_path), str(hurray_cli())],
        capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert set(report) == {"Mlp", "Mixed"}
    for name, r in report.items():
        assert r["outputs"] >= 1 and r["outputs_equal"], (name, r)
        assert r["same_keys"] and all(r["same_tensors"].values()), (name, r)
    assert report["Mlp"]["keys"] == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    layouts = report["Mixed"]["layouts"]
    assert "BFLOAT16" in layouts["w"] and "CHAR" in layouts["codes"] and "FLOAT" in layouts["bias"], layouts
