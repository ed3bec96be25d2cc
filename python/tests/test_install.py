"""`pip install ./pyext` in a fresh virtualenv, as a Python user installs:
PEP 517 through maturin, an abi3 wheel, and a package that works without
NumPy for what needs none (open, inspect, copy tensors between files)."""

import subprocess
import sys
import venv
import zipfile

from conftest import ROOT

_NO_NUMPY = r"""
import sys
import hurray
src, dst = sys.argv[1], sys.argv[2]
f = hurray.open(src)
print(repr(f))
hurray.save(dst, {name: f[name] for name in f.keys() if f[name].layout == "dense" and not f[name].descriptor_only and not f[name].quantized})
g = hurray.open(dst)
assert all(g[n].tobytes() == f[n].tobytes() for n in g.keys())
try:
    import numpy
    raise SystemExit("numpy is installed in the fresh venv")
except ImportError:
    pass
print("ok", len(g))
"""


def test_pip_install_in_a_fresh_venv(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [str(py), "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT / "pyext")],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    (wheel,) = wheels.glob("hurray-*.whl")
    # One wheel for every CPython >= 3.11 (the stable ABI).
    assert "-cp311-abi3-" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    for part in (
        "hurray/__init__.py",
        "hurray/py.typed",
        "hurray/__init__.pyi",
        "hurray/_hurray.pyi",
        "hurray/torch/__init__.py",
        "hurray/torch/dcp.py",
        # hurray.executorch compiles its bridge from this source on first use.
        "hurray/executorch/__init__.py",
        "hurray/executorch/shim.cpp",
    ):
        assert part in names, (part, names)
    install = subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-4000:]
    vector = sorted((ROOT / "tests" / "vectors").glob("alignment_*.hurray"))[0]
    run = subprocess.run(
        [str(py), "-c", _NO_NUMPY, str(vector), str(tmp_path / "copy.hurray")],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the source tree: the installed package
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1].startswith("ok"), run.stdout


def test_readme_python_quick_start_runs(hurray, tmp_path, monkeypatch):
    """The README's Python quick start, as written, in an empty directory."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Using it from Python") :]
    code = section[section.index("```python\n") + len("```python\n") :]
    code = code[: code.index("```")]
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["row"].tolist() == [[1.0, 1.0, 1.0]]
    assert scope["part"].tolist() == [1.0, 1.0, 1.0]  # from the sharded checkpoint
    assert scope["arrays"]["empty"].shape == (3, 0, 5)
