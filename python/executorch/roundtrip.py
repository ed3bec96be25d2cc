"""`python roundtrip.py DIR HURRAY`: for each model of et_models (an f32
MLP; a bf16 weight with an int8 buffer), ExecuTorch exports the program and
its external weights (`.ptd`) into DIR; `HURRAY convert` turns the `.ptd`
into a Hurray file and that back into a `.ptd`; ExecuTorch runs the program
with each `.ptd`. Prints, as JSON, per model: whether the outputs are
bit-equal, and per tensor whether the converted `.ptd` holds the same key,
layout and bytes (read by ExecuTorch's own FlatTensor deserializer)."""

import json
import subprocess
import sys
from pathlib import Path

import torch
from executorch.exir._serialize._cord import Cord
from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

from et_models import Mixed, Mlp, export, run


def tensors(path):
    payload = FlatTensorSerializer().deserialize(Cord(Path(path).read_bytes()))
    return {
        key: (str(e.tensor_layout), bytes(payload.buffers[e.buffer_index]))
        for key, e in payload.named_data.items()
    }


def main(directory, hurray):
    report = {}
    for model in (Mlp(), Mixed()):
        name = type(model).__name__
        pte, ptd = export(model, Path(directory) / name)
        converted = ptd.with_name("weights.hurray")
        back = ptd.with_name("back.ptd")
        for a, b in ((ptd, converted), (converted, back)):
            subprocess.run([hurray, "convert", str(a), str(b)], check=True)
        official = run(pte, ptd, model.inputs())
        through_hurray = run(pte, back, model.inputs())
        original, again = tensors(ptd), tensors(back)
        report[name] = {
            "outputs_equal": len(official) == len(through_hurray)
            and all(torch.equal(x, y) for x, y in zip(official, through_hurray)),
            "outputs": len(official),
            "keys": sorted(original),
            "same_keys": sorted(original) == sorted(again),
            "same_tensors": {k: original[k] == again.get(k) for k in original},
            "layouts": {k: v[0] for k, v in original.items()},
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:])
