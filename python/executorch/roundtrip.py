"""`python roundtrip.py DIR HURRAY`: for each model of et_models (an f32
MLP; a bf16 weight with an int8 buffer), ExecuTorch exports the program and
its external weights (`.ptd`) into DIR; the `HURRAY` command converts the
`.ptd` into a Hurray file and that back into a `.ptd`; ExecuTorch runs the
program with each `.ptd`, and hurray.executorch runs it with the Hurray
file in place. Prints, as JSON, per model: whether each route's outputs
are bit-equal to the official one's, and per tensor whether the converted
`.ptd` holds the same key, layout and bytes (read by ExecuTorch's own
FlatTensor deserializer); for the MLP, what hurray.executorch says of
weights files whose first matrix is missing, of another type or of
another shape. Needs PYTHONPATH to hold pyext/python (the built package)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from executorch.exir._serialize._cord import Cord
from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

import hurray
import hurray.executorch
import hurray.numpy
from et_models import Mixed, Mlp, export, run


def tensors(path):
    payload = FlatTensorSerializer().deserialize(Cord(Path(path).read_bytes()))
    return {
        key: (str(e.tensor_layout), bytes(payload.buffers[e.buffer_index]))
        for key, e in payload.named_data.items()
    }


def equal(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def refusals(pte, converted, inputs, directory):
    """What loading and running says of a weights file with its first f32
    matrix dropped, cast to f64, or transposed in shape."""
    f = hurray.open(converted)
    arrays = {k: np.array(f[k]) for k in f.keys()}
    first = sorted(k for k, a in arrays.items() if a.ndim == 2)[0]
    cases = {
        "missing": {k: v for k, v in arrays.items() if k != first},
        "dtype": {**arrays, first: arrays[first].astype(np.float64)},
        "shape": {**arrays, first: arrays[first].reshape(arrays[first].shape[::-1])},
    }
    out = {"tensor": first}
    for case, weights in cases.items():
        path = directory / f"bad_{case}.hurray"
        hurray.numpy.save_file(weights, path)
        try:
            hurray.executorch.load_program(pte, weights=path).forward(*inputs)
            out[case] = None
        except hurray.HurrayError as e:
            out[case] = str(e)
    return out


def main(directory, cli):
    report = {}
    for model in (Mlp(), Mixed()):
        name = type(model).__name__
        pte, ptd = export(model, Path(directory) / name)
        converted = ptd.with_name("weights.hurray")
        back = ptd.with_name("back.ptd")
        for a, b in ((ptd, converted), (converted, back)):
            subprocess.run([cli, "convert", str(a), str(b)], check=True)
        official = run(pte, ptd, model.inputs())
        program = hurray.executorch.load_program(pte, weights=converted)
        original, again = tensors(ptd), tensors(back)
        report[name] = {
            "outputs": len(official),
            "outputs_equal": equal(official, run(pte, back, model.inputs())),
            "in_place_equal": equal(official, program.forward(*model.inputs()))
            and equal(official, program.run_method("forward", list(model.inputs()))),
            "methods": program.method_names,
            "keys": sorted(original),
            "same_keys": sorted(original) == sorted(again),
            "same_tensors": {k: original[k] == again.get(k) for k in original},
            "layouts": {k: v[0] for k, v in original.items()},
        }
        if isinstance(model, Mlp):
            report[name]["refusals"] = refusals(pte, converted, model.inputs(), Path(directory) / name)
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:])
