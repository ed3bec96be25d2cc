"""ExecuTorch programs with their weights read from a Hurray file in place.

    import hurray.executorch
    program = hurray.executorch.load_program("model.pte", weights="model.hurray")
    outputs = program.forward(x)                  # or program.run_method("forward", [x])

A program exported with ``ExecutorchBackendConfig(external_constants=True)``
keeps its weights out of the ``.pte``; ExecuTorch asks for them by name
through its ``NamedDataMap`` interface. Here that map is the Hurray file:
it is mapped (``hurray.open``), and each weight ExecuTorch asks for is
handed over as the address of its bytes in the mapping, so the weights are
never copied and stay file pages the kernel can drop and read again. The
kernels are those of ExecuTorch's own Python runtime (the wheel's
``libexecutorch_kernels_optimized.so``), so the outputs are those of
``Runtime.get().load_program(pte, data_path=ptd)`` with the same weights.

Needs the ``executorch`` package (1.5.1, with the torch it pins) and a C++
compiler: a small bridge (``shim.cpp``) is compiled against the installed
wheel on first use and cached (see ``_build.py``). The rest of ``hurray``
works without either.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any, List, Sequence

from .. import _hurray

__all__ = ["Program", "load_program"]

# ExecuTorch's ScalarType values of Hurray's element types (the table of
# `hurray convert`'s .ptd writer, cli/src/convert/ptd.rs, but for bool: a
# Hurray bool is one bit, ExecuTorch's one byte, so it cannot be handed over
# in place).
_SCALAR_TYPES = {
    "u8": 0, "i8": 1, "i16": 2, "i32": 3, "i64": 4, "f16": 5, "f32": 6, "f64": 7,
    "bf16": 15, "f8e5m2": 23, "f8e4m3fn": 24, "f8e5m2fnuz": 25, "f8e4m3fnuz": 26,
    "u16": 27, "u32": 28, "u64": 29,
}

_lib = None


def _bridge():
    global _lib
    if _lib is None:
        from ._build import library

        lib = ctypes.CDLL(str(library()))
        P, S, C = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
        lib.hx_load.restype = P
        lib.hx_load.argtypes = [C, S, ctypes.POINTER(C), ctypes.POINTER(P), ctypes.POINTER(S),
                                ctypes.POINTER(ctypes.c_int8), ctypes.POINTER(ctypes.c_int32),
                                ctypes.POINTER(ctypes.c_int32), ctypes.c_char_p, S]
        lib.hx_method_count.restype = S
        lib.hx_method_count.argtypes = [P]
        lib.hx_method_name.restype = C
        lib.hx_method_name.argtypes = [P, S]
        lib.hx_run.restype = ctypes.c_int64
        lib.hx_run.argtypes = [P, C, S, ctypes.POINTER(ctypes.c_int8), ctypes.POINTER(ctypes.c_int32),
                               ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(P), ctypes.c_char_p, S]
        lib.hx_output.restype = ctypes.c_int
        lib.hx_output.argtypes = [P, C, S, ctypes.POINTER(ctypes.c_int8), ctypes.POINTER(ctypes.c_int32),
                                  ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)), ctypes.POINTER(P),
                                  ctypes.POINTER(S)]
        lib.hx_free.restype = None
        lib.hx_free.argtypes = [P]
        _lib = lib
    return _lib


def _array(ctype, values):
    return (ctype * max(len(values), 1))(*values)


class Program:
    """An ExecuTorch program whose weights are a Hurray file's tensors.
    Use :func:`load_program`."""

    def __init__(self, pte_path: str, weights: str):
        # The mapping the weights live in: kept open as long as the program.
        self._file = _hurray.open(os.fspath(weights))
        keys, data, nbytes, types, ranks, sizes = [], [], [], [], [], []
        for name in self._file.keys():
            t = self._file[name]
            if t.descriptor_only or t.layout != "dense" or t.quantized:
                continue  # not something a .ptd could hold either
            if t.dtype == "bool":
                raise _hurray.HurrayError(
                    f"tensor {name!r} is bool, stored one bit per element, and ExecuTorch reads one "
                    f"byte per element: it cannot be read in place (hurray convert the file to .ptd)"
                )
            if t.dtype not in _SCALAR_TYPES:
                raise _hurray.HurrayError(
                    f"tensor {name!r} is {t.dtype}, which has no ExecuTorch scalar type"
                )
            if len(t.shape) > 255 or any(d >= 2**31 for d in t.shape):
                raise _hurray.HurrayError(f"tensor {name!r}: shape {list(t.shape)} exceeds ExecuTorch's int32 sizes")
            keys.append(name.encode())
            data.append(t.data_ptr if t.nbytes else None)
            nbytes.append(t.nbytes)
            types.append(_SCALAR_TYPES[t.dtype])
            ranks.append(len(t.shape))
            sizes.extend(t.shape)
        err = ctypes.create_string_buffer(1024)
        lib = _bridge()
        self._handle = lib.hx_load(
            os.fsencode(pte_path), len(keys), _array(ctypes.c_char_p, keys), _array(ctypes.c_void_p, data),
            _array(ctypes.c_size_t, nbytes), _array(ctypes.c_int8, types), _array(ctypes.c_int32, ranks),
            _array(ctypes.c_int32, sizes), err, len(err),
        )
        if not self._handle:
            raise _hurray.HurrayError(err.value.decode(errors="replace"))
        self._lib = lib

    @property
    def method_names(self) -> List[str]:
        n = self._lib.hx_method_count(self._handle)
        return [self._lib.hx_method_name(self._handle, i).decode() for i in range(n)]

    def run_method(self, name: str, inputs: Sequence[Any]) -> List[Any]:
        """Runs method ``name`` on ``inputs`` (PyTorch tensors); returns its
        outputs as new PyTorch tensors."""
        import torch

        tensors = [torch.as_tensor(x).contiguous() for x in inputs]
        types, ranks, sizes, data = [], [], [], []
        for t in tensors:
            code = _torch_scalar_types().get(t.dtype)
            if code is None:
                raise TypeError(f"an input of dtype {t.dtype} has no ExecuTorch scalar type")
            types.append(code)
            ranks.append(t.dim())
            sizes.extend(t.shape)
            data.append(t.data_ptr())
        err = ctypes.create_string_buffer(1024)
        n = self._lib.hx_run(
            self._handle, name.encode(), len(tensors), _array(ctypes.c_int8, types),
            _array(ctypes.c_int32, ranks), _array(ctypes.c_int32, sizes), _array(ctypes.c_void_p, data),
            err, len(err),
        )
        if n < 0:
            message = err.value.decode(errors="replace")
            for key in self._file.keys():
                if f"tensor '{key}' of the weights file" in message:
                    t = self._file[key]
                    message += f" (the file has {t.dtype} {list(t.shape)})"
                    break
            raise _hurray.HurrayError(message)
        by_code = _torch_dtypes()
        out = []
        for i in range(n):
            code, rank = ctypes.c_int8(), ctypes.c_int32()
            shape_ptr, data_ptr, size = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_void_p(), ctypes.c_size_t()
            if self._lib.hx_output(self._handle, name.encode(), i, ctypes.byref(code), ctypes.byref(rank),
                                   ctypes.byref(shape_ptr), ctypes.byref(data_ptr), ctypes.byref(size)) != 0:
                raise _hurray.HurrayError(f"output {i} of method {name!r} is not a tensor")
            shape = [shape_ptr[d] for d in range(rank.value)]
            raw = ctypes.string_at(data_ptr.value, size.value) if size.value else b""
            # A copy: the method's memory holds the next run's outputs.
            out.append(torch.frombuffer(bytearray(raw), dtype=by_code[code.value]).reshape(shape)
                       if raw else torch.empty(shape, dtype=by_code[code.value]))
        return out

    def forward(self, *inputs: Any) -> List[Any]:
        """``run_method("forward", inputs)``."""
        return self.run_method("forward", inputs)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.hx_free(handle)
            self._handle = None


@functools.cache
def _torch_scalar_types():
    """ExecuTorch's ScalarType value of each PyTorch dtype an input or output may have."""
    import torch

    return {
        torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4, torch.float16: 5,
        torch.float32: 6, torch.float64: 7, torch.bool: 11, torch.bfloat16: 15,
    }


def load_program(pte_path: str, weights: str) -> Program:
    """The program at ``pte_path`` with its external weights read in place
    from the Hurray file ``weights`` (one ``hurray convert model.ptd
    weights.hurray`` made, or any with the same names, types and shapes)."""
    return Program(os.fspath(pte_path), weights)


@functools.cache
def _torch_dtypes():
    """The PyTorch dtype of each ScalarType value of `_torch_scalar_types`."""
    return {code: dtype for dtype, code in _torch_scalar_types().items()}
