"""safetensors.flax's verbs for JAX arrays, and :func:`save_lowered`: the
constants and signature of a jitted function's StableHLO as a Hurray file."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, Union

from .. import _hurray, _load
from .._save import save, save_file

__all__ = ["save", "save_file", "load", "load_file", "save_lowered"]


def load(data: bytes, dequantize: bool = False) -> Dict[str, Any]:
    """The arrays of a Hurray file held in ``data``; ``dequantize`` as in :func:`load_file`."""
    return _load.tensors(_hurray.open_bytes(data), "jax", "cpu", None, dequantize)


def load_file(
    filename: Union[str, os.PathLike], device: Any = "cpu", verify: bool = False, dequantize: bool = False
) -> Dict[str, Any]:
    """The arrays of the file as jax.Array (every type JAX has, ml_dtypes' included). ``verify`` checks
    every checksum while reading the file in, as ``hurray.torch.load_file`` does. Given a sharded
    checkpoint's index, every logical tensor of the checkpoint. A quantized tensor is refused unless
    ``dequantize=True``, which gives it as float32 values of its shape; descriptor-only tensors (no
    data) are left out, as ``safe_open(...).keys()`` leaves them out."""
    return _load.load_file(filename, "jax", device, verify, dequantize)


def _module_of(obj: Any):
    """The StableHLO module of a ``jax.stages.Lowered`` or a
    ``jax.export.Exported``, through jaxlib's own MLIR bindings."""
    import jax

    if isinstance(obj, jax.stages.Lowered):
        return obj.compiler_ir("stablehlo")
    if isinstance(obj, jax.export.Exported):
        # Exported keeps its module as text; jax's own context has every
        # dialect the text uses (stablehlo, chlo, sdy, ...).
        from jax._src.interpreters import mlir as jax_mlir
        from jax._src.lib.mlir import ir

        return ir.Module.parse(obj.mlir_module(), context=jax_mlir.make_ir_context())
    raise TypeError(
        f"save_lowered takes a jax.stages.Lowered (jax.jit(f).lower(...)) or a "
        f"jax.export.Exported, not {type(obj).__name__}"
    )


def _hurray_command() -> str:
    """The ``hurray`` command with ``from-mlir``: ``HURRAY_CLI``, else on PATH."""
    cli = os.environ.get("HURRAY_CLI") or shutil.which("hurray")
    if not cli:
        raise RuntimeError(
            "save_lowered runs the MLIR lowering of the `hurray` command (LLVM/MLIR 22, "
            "not part of this package): build it with `cargo install --path cli --features mlir` "
            "and put it on PATH, or set HURRAY_CLI to its path"
        )
    return cli


def save_lowered(
    obj: Any,
    filename: Union[str, os.PathLike],
    *,
    signatures: bool = True,
    tensor_empty: bool = False,
    allow_expansion: bool = False,
) -> None:
    """Writes every constant of a lowered JAX function (a ``jax.stages.Lowered``
    or a ``jax.export.Exported``) and its signature to a Hurray file, as
    ``hurray from-mlir`` does: weights closed over by the function are its
    constants; arguments and results become descriptor-only tensors (named
    from JAX's ``loc("x")`` and ``jax.result_info``; ``signatures=False`` leaves
    them out).

    The module is printed in the generic op form with locations through
    jaxlib's own MLIR bindings, and lowered by the ``hurray`` command in a
    process of its own (MLIR's C++ is kept out of this one, whose jaxlib
    carries another MLIR). The command is ``HURRAY_CLI`` or ``hurray`` on PATH,
    built with the ``mlir`` feature.

    Raises:
        TypeError: ``obj`` is neither a Lowered nor an Exported.
        RuntimeError: no ``hurray`` command with ``from-mlir`` is found.
        ValueError: the lowering refused the module (its message names the
            op and the tensor); nothing is written.
    """
    module = _module_of(obj)
    text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
    cli = _hurray_command()
    with tempfile.TemporaryDirectory(prefix="hurray-lowered-") as tmp:
        source = os.path.join(tmp, "module.mlir")
        with open(source, "w", encoding="utf-8") as f:
            f.write(text)
        args = [cli, "from-mlir", source, "-o", os.fspath(filename)]
        args += [] if signatures else ["--no-signatures"]
        args += ["--tensor-empty"] if tensor_empty else []
        args += ["--allow-expansion"] if allow_expansion else []
        run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode == 0:
        return
    if "unrecognized subcommand" in run.stderr:
        raise RuntimeError(f"{cli} has no from-mlir: build it with `--features mlir`")
    if run.returncode == 1 and run.stderr.strip():
        # The lowering's own refusal, naming the op and the tensor.
        raise ValueError(run.stderr.strip().removeprefix("hurray: "))
    raise RuntimeError(f"{cli} from-mlir ended with status {run.returncode}: {run.stderr.strip()}")
