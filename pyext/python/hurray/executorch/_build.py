"""Compiling the bridge (``shim.cpp``) against the installed executorch
wheel, once per wheel: its headers (``executorch/include``), its
``libexecutorch.so`` and the kernel library its own Python runtime links
(``libexecutorch_kernels_optimized.so``, whose kernels register themselves
when it loads). The library is cached under ``$XDG_CACHE_HOME/hurray``
(``~/.cache/hurray``), keyed by the bridge's source and the wheel's
location and version, and written under a temporary name then renamed, so
concurrent first uses never load a half-written file."""

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("shim.cpp")


def _executorch_dir() -> Path:
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "hurray.executorch needs the executorch package (pip install executorch==1.5.1, "
            "with the torch it pins)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def library() -> Path:
    """The compiled bridge, built first if this wheel has none yet."""
    et = _executorch_dir()
    include, lib = et / "include", et / "lib"
    for needed in (include / "executorch" / "runtime" / "core" / "named_data_map.h", lib / "libexecutorch.so"):
        if not needed.exists():
            raise ImportError(f"the executorch package at {et} lacks {needed.name}: its C++ runtime is needed")
    version = importlib.metadata.version("executorch")
    key = hashlib.sha256(SOURCE.read_bytes() + f"{et}|{version}".encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hurray" / "executorch"
    out = cache / f"shim-{key}.so"
    if out.exists():
        return out
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        raise ImportError("hurray.executorch compiles a small C++ bridge on first use: no C++ compiler found (set CXX)")
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name, suffix=".tmp", dir=cache)
    os.close(fd)
    command = [
        compiler, "-std=c++17", "-O2", "-fPIC", "-shared",
        # What the wheel's CMake config gives its consumers.
        "-DC10_USING_CUSTOM_GENERATED_MACROS", "-DET_EVENT_TRACER_ENABLED",
        f"-I{include}", f"-I{include / 'executorch' / 'runtime' / 'core' / 'portable_type' / 'c10'}",
        str(SOURCE), "-o", tmp,
        f"-L{lib}", "-Wl,--no-as-needed", "-lexecutorch", "-lexecutorch_kernels_optimized",
        f"-Wl,-rpath,{lib}",
    ]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        os.unlink(tmp)
        raise ImportError(f"compiling the ExecuTorch bridge failed:\n{' '.join(command)}\n{run.stderr[-4000:]}")
    os.replace(tmp, out)
    return out
