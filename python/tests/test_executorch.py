"""ExecuTorch with Hurray files, in ExecuTorch itself: the real executorch
1.5.1 wheel, in its own venv (`.tools/et`, which `cargo xtask setup`
installs from python/requirements-executorch.txt: it pins torch 2.13), runs
the scripts in python/executorch/ with this checkout's `hurray` package
(PYTHONPATH=pyext/python, built by the `hurray` fixture).

- An f32 MLP and a model with a bf16 weight and an int8 buffer: the `.ptd`
  ExecuTorch writes converts to Hurray and back, and the program runs with
  the converted `.ptd`, and with the Hurray file in place
  (`hurray.executorch.load_program`), bit-equal to the official route;
  every tensor keeps its key, layout and bytes; a weights file missing a
  tensor, or with one of another type or shape, is refused by its name.
- A model of 256 MiB of weights: loaded and run once from the Hurray file,
  it adds less than 32 MiB of anonymous memory while the file's pages are
  resident (they are file pages of the mapping), with outputs bit-equal to
  the official route's."""

import json
import os
import subprocess

import pytest

from deploy import ROOT, hurray_cli

ET = ROOT / ".tools" / "et" / "bin" / "python"
SCRIPTS = ROOT / "python" / "executorch"


def et_python():
    if not ET.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{ET} is missing: cargo xtask setup installs it")
        pytest.skip(f"{ET} is not installed (cargo xtask setup)")
    return ET


@pytest.fixture(scope="module")
def et_env(hurray, tmp_path_factory):
    """The ExecuTorch venv's environment: this checkout's package, and a
    cache of its own for the compiled bridge."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "pyext" / "python"), str(SCRIPTS)])
    env["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    return env


def et_run(env, *args, timeout=900):
    run = subprocess.run([str(et_python()), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_ptd_files_convert_both_ways_and_hurray_files_run_in_place(et_env, tmp_path):
    report = et_run(et_env, SCRIPTS / "roundtrip.py", tmp_path, hurray_cli())
    assert set(report) == {"Mlp", "Mixed"}
    for name, r in report.items():
        assert r["outputs"] >= 1 and r["outputs_equal"] and r["in_place_equal"], (name, r)
        assert r["same_keys"] and all(r["same_tensors"].values()), (name, r)
        assert r["methods"] == ["forward"]
    assert report["Mlp"]["keys"] == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    layouts = report["Mixed"]["layouts"]
    assert "BFLOAT16" in layouts["w"] and "CHAR" in layouts["codes"] and "FLOAT" in layouts["bias"], layouts
    refused = report["Mlp"]["refusals"]
    key = refused["tensor"]
    assert f"needs tensor '{key}', which the weights file does not have" in refused["missing"]
    assert f"tensor '{key}' of the weights file is not the type and shape" in refused["dtype"]
    assert "f64" in refused["dtype"] and "[16, 32]" in refused["shape"]


def test_256_mib_of_weights_run_from_the_mapping_without_anonymous_copies(et_env, tmp_path):
    export = (
        "import sys, torch; from et_models import Large, export; "
        "pte, ptd = export(Large(), sys.argv[1]); torch.save(list(Large.inputs()), sys.argv[1] + '/inputs.pt'); "
        "print('{\"ptd\": \"%s\"}' % ptd)"
    )
    ptd = et_run(et_env, "-c", export, tmp_path)["ptd"]
    assert os.path.getsize(ptd) >= 256 << 20
    weights = tmp_path / "weights.hurray"
    subprocess.run([str(hurray_cli()), "convert", ptd, weights], check=True)
    pte, inputs = tmp_path / "model.pte", tmp_path / "inputs.pt"
    ours = et_run(et_env, SCRIPTS / "in_place.py", "hurray", pte, weights, inputs, tmp_path / "ours.pt")
    theirs = et_run(et_env, SCRIPTS / "in_place.py", "official", pte, ptd, inputs, tmp_path / "theirs.pt")
    print(f"hurray: {ours}; official .ptd: {theirs}")
    assert ours["RssAnon"] < 32 << 20, ours
    # The weights were read, as file pages of the mapping.
    assert ours["RssFile"] >= 256 << 20, ours
    same = et_run(
        et_env, "-c",
        "import sys, json, torch; a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2]); "
        "print(json.dumps(len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))))",
        tmp_path / "ours.pt", tmp_path / "theirs.pt",
    )
    assert same is True
