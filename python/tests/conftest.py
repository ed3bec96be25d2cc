import importlib
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

# Make `hurray_reader` importable when pytest runs from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[2]


def _build_extension():
    """Builds the extension into the running virtualenv with `maturin develop`
    (incremental: seconds when nothing changed), so the tests always run the
    current Rust code. HURRAY_PYEXT_PREBUILT=1 uses an installed `hurray`
    instead (e.g. after `pip install ./pyext`)."""
    if os.environ.get("HURRAY_PYEXT_PREBUILT") == "1":
        return
    if sys.prefix == sys.base_prefix:
        pytest.fail(
            "building the extension needs a virtualenv (maturin develop); "
            "run with .tools/py/bin/python or set HURRAY_PYEXT_PREBUILT=1 after `pip install ./pyext`"
        )
    maturin = Path(sys.executable).with_name("maturin")
    if not maturin.exists():
        pytest.fail(f"{maturin} not found: pip install -r python/requirements.txt")
    env = dict(os.environ, VIRTUAL_ENV=sys.prefix)
    result = subprocess.run(
        [str(maturin), "develop", "--manifest-path", str(ROOT / "pyext" / "Cargo.toml")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.fail(f"maturin develop failed:\n{result.stdout}\n{result.stderr}")
    # maturin installs the mixed Rust/Python package through a .pth file, which
    # Python only reads at start-up: read it now, or a first install in this
    # process would not be importable.
    site.addsitedir(sysconfig.get_paths()["purelib"])


@pytest.fixture(scope="session")
def hurray():
    _build_extension()
    importlib.invalidate_caches()
    return importlib.import_module("hurray")
