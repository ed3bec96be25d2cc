import importlib
import os
import shutil
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


S3_KEY, S3_SECRET = "hurray-test", "hurray-test-secret"


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """The tests' S3 server (s3s-fs over a directory, signed requests):
    ``(root, options)``, where ``root / bucket / key`` is an object's file
    and ``options`` are the ``storage_options`` that reach it."""
    cargo = os.environ.get("CARGO") or shutil.which("cargo")
    subprocess.run(
        [cargo, "build", "--quiet", "-p", "hurray-s3-test-server"], cwd=ROOT, check=True
    )
    server = ROOT / "target" / "debug" / "hurray-s3-test-server"
    root = tmp_path_factory.mktemp("s3")
    proc = subprocess.Popen(
        [str(server), str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline().strip()
    assert line.startswith("endpoint="), line
    endpoint = line.split("=", 1)[1]
    options = {
        "aws_endpoint": endpoint,
        "aws_allow_http": "true",
        "aws_access_key_id": S3_KEY,
        "aws_secret_access_key": S3_SECRET,
        "aws_region": "us-east-1",
    }
    yield root, options
    proc.stdin.close()
    proc.wait(timeout=30)


def s3_env(options):
    """The environment the AWS tools (and object_store in a child process) read
    to reach the server of ``options``."""
    return {
        "AWS_ENDPOINT": options["aws_endpoint"],
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": S3_KEY,
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_REGION": "us-east-1",
    }
