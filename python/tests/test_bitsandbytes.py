"""bitsandbytes 4-bit checkpoints through Hurray and back (issue 34).

A model of `bitsandbytes.nn.Linear4bit` layers, quantized by bitsandbytes on
CPU (NF4 with double quantization, FP4 without, and a layer whose rows are
not whole blocks, so blocks run across rows), saved as transformers saves
it (`safetensors.torch.save_file` of the state dict); `hurray convert` folds
each weight's six entries into one typed tensor; its values, dequantized by
the runtime, equal `bitsandbytes.functional.dequantize_4bit` bit for bit (in
the layer's dtype); converting back writes the very same file.
"""

import json

import numpy as np
import pytest

import torch
import bitsandbytes as bnb
from safetensors.torch import save_file  # noqa: E402

import hurray_reader  # noqa: E402
from deploy import cli  # noqa: E402


def model():
    torch.manual_seed(4)
    layers = torch.nn.Sequential(
        bnb.nn.Linear4bit(64, 48, bias=False, compress_statistics=True, quant_type="nf4", compute_dtype=torch.bfloat16),
        bnb.nn.Linear4bit(128, 24, bias=False, compress_statistics=False, quant_type="fp4"),
        bnb.nn.Linear4bit(100, 30, bias=False, compress_statistics=True, quant_type="nf4", quant_storage=torch.uint8),
    )
    with torch.no_grad():
        for layer in layers:
            layer.weight.data = layer.weight.data * 3.0
    return layers.to("cpu")  # bitsandbytes quantizes on the move


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit, but for the sign of a zero: for FP4's code 8,
    bitsandbytes' code table, which the file stores, holds +0.0, while its
    dequantization gives -0.0 on some CPUs (this 2-core AMD EPYC without
    AVX-512) and +0.0 on others; the runtime follows the stored table."""
    a, b = a.contiguous(), b.contiguous()
    a = torch.where(a == 0, torch.zeros_like(a), a)
    b = torch.where(b == 0, torch.zeros_like(b), b)
    bits = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}[a.dtype]
    return bool(torch.equal(a.view(bits), b.view(bits)))


def test_bitsandbytes_4bit_folds_dequantizes_exactly_and_unfolds_byte_for_byte(hurray, tmp_path):
    m = model()
    src = tmp_path / "model.safetensors"
    save_file(m.state_dict(), str(src), metadata={"format": "pt"})
    out = tmp_path / "model.hurray"
    r = cli("convert", src, out)
    assert r.returncode == 0, r.stderr
    r = cli("validate", "--checksums", out)
    assert r.returncode == 0, r.stderr + r.stdout
    f_values = []
    with hurray.safe_open(str(out), framework="pt") as f:
        # Six (or four) entries per weight became one tensor each.
        assert sorted(f.keys()) == ["0.weight", "1.weight", "2.weight"]
        for i, layer in enumerate(m):
            w = layer.weight
            name = f"{i}.weight"
            want = bnb.functional.dequantize_4bit(w.data, w.quant_state)
            got = f.get_dequantized(name)
            assert tuple(got.shape) == tuple(w.quant_state.shape), name
            assert same_bits(got.to(want.dtype), want), (name, (got.to(want.dtype) - want).abs().max())
            f_values.append(got)
    # The typed form, as the independent reference reader sees it.
    ref = hurray_reader.open(out)
    q = ref["0.weight"].quantization
    assert ref["0.weight"].dtype == "u4" and ref["0.weight"].shape == (48, 64)
    state = json.loads(ref["0.weight"].metadata["bitsandbytes.quant_state"])
    expressed = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[state["dtype"]]
    assert (q["scheme"], q["block_size"], q["scale_type"], q["code_table_type"], q["expressed_type"]) == (
        "per_flat_block", state["blocksize"], "u8", "f32", expressed)
    nested = q["scale_quantization"]
    assert (nested["scheme"], nested["block_size"], nested["code_table_type"]) == ("per_flat_block", 256, "f32")
    assert nested["tensor_offset"] == state["nested_offset"]
    assert ref["1.weight"].quantization["scale_quantization"] is None
    assert np.array_equal(ref["2.weight"].dequantize(), f_values[2].float().numpy())
    back = tmp_path / "back.safetensors"
    r = cli("convert", out, back)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == src.read_bytes()


def test_a_quant_state_that_does_not_fit_its_weight_is_refused_by_name(hurray, tmp_path):
    m = model()
    sd = dict(m.state_dict())
    sd["1.weight.absmax"] = sd["1.weight.absmax"][:-1].clone()  # one block scale short
    src = tmp_path / "bad.safetensors"
    save_file(sd, str(src))
    r = cli("convert", src, tmp_path / "bad.hurray")
    assert r.returncode != 0
    assert '"1.weight"' in r.stderr and "absmax" in r.stderr, r.stderr
    assert not (tmp_path / "bad.hurray").exists()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("blocksize", [64, 128, 256])
def test_every_weight_dtype_and_block_size_dequantizes_exactly(hurray, tmp_path, dtype, blocksize):
    """Weights quantized by `bitsandbytes.functional.quantize_4bit` itself,
    in the dtypes checkpoints ship (bf16, f16) and f32, at block sizes 64 to
    256, NF4 with double quantization and FP4 without; the state dict as
    `Linear4bit` saves it (the packed codes, then `quant_state.as_dict(packed=True)`).

    Rows are whole blocks here, as in every shipped model: for other shapes
    bitsandbytes 0.50.2's CPU dequantization takes another path, which
    disagrees with its own quantization (96 columns in NF4 blocks of 64:
    row r's columns 64-95 get absmax[r + 1], 4.5 off where the quantization
    error is at most 1.0) and with its other path (FP4 code 8 comes out
    -0.0, where its `quant_map` and the whole-block path say +0.0). Hurray
    keeps the flat blocks and the table bitsandbytes saved. A shape whose
    rows are not whole blocks, where both paths agree, is the 100-column
    NF4 layer of the test above."""
    torch.manual_seed(blocksize)
    sd = {}
    states = {}
    for name, (shape, quant_type, nested) in {
        "a.weight": ((40, 2 * blocksize), "nf4", True),
        "b.weight": ((24, blocksize), "fp4", False),
    }.items():
        w = (torch.randn(shape) * 2.5).to(dtype)
        q, state = bnb.functional.quantize_4bit(
            w, blocksize=blocksize, compress_statistics=nested, quant_type=quant_type, quant_storage=torch.uint8)
        sd[name] = q
        for k, v in state.as_dict(packed=True).items():
            sd[f"{name}.{k}"] = v
        states[name] = (q, state)
    src = tmp_path / "model.safetensors"
    save_file(sd, str(src), metadata={"format": "pt"})
    out = tmp_path / "model.hurray"
    r = cli("convert", src, out)
    assert r.returncode == 0, r.stderr
    with hurray.safe_open(str(out), framework="pt") as f:
        assert sorted(f.keys()) == sorted(states)
        for name, (q, state) in states.items():
            want = bnb.functional.dequantize_4bit(q, state)
            assert want.dtype == dtype
            got = f.get_dequantized(name)
            assert same_bits(got.to(dtype), want), (name, (got.to(dtype) - want).abs().max())
    back = tmp_path / "back.safetensors"
    r = cli("convert", out, back)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == src.read_bytes()


def test_an_edited_quant_state_is_refused_on_the_way_out(hurray, tmp_path):
    """A folded weight's quant state (kept verbatim in tensor metadata, so it
    unfolds byte for byte) that no longer describes the typed tensor is
    refused by name when converting back, never written as another weight."""
    src = tmp_path / "model.safetensors"
    save_file(model().state_dict(), str(src), metadata={"format": "pt"})
    out = tmp_path / "model.hurray"
    assert cli("convert", src, out).returncode == 0
    data = out.read_bytes()
    # The same length, so the header stays well-formed: the state now claims
    # blocks of 32 where the tensor's quantization says 64.
    assert data.count(b'"blocksize": 64') >= 1, data[:0]
    (tmp_path / "edited.hurray").write_bytes(data.replace(b'"blocksize": 64', b'"blocksize": 32', 1))
    r = cli("convert", tmp_path / "edited.hurray", tmp_path / "back.safetensors")
    assert r.returncode != 0
    assert "bitsandbytes.quant_state" in r.stderr and "no longer describes" in r.stderr, r.stderr
    assert not (tmp_path / "back.safetensors").exists()
