"""compressed-tensors layers with an activation-order group index (issue 34).

compressed-tensors 0.20 no longer writes `weight_g_idx` (it removed
activation ordering), but checkpoints made by its earlier versions (and by
GPTQ through it) carry one: column c's scale and zero point are group
`g_idx[c]`'s. This builds such a layer with the library's own packer
(`pack_to_int32`) and a permuted `g_idx`, and checks that `hurray convert`
holds it as a typed tensor with a group index whose values equal `(q - zp) *
scale[row, g_idx[c]]` rounded to bf16 (as the library computed it), that
the independent reference reader agrees, and that converting back writes
the same file. The real library's output without `g_idx` is checked in
cli/tests/compressed_tensors.rs.
"""

import json

import numpy as np
import pytest

import torch
import compressed_tensors  # noqa: F401  (the library the fixture came from)
from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import hurray_reader  # noqa: E402
from deploy import cli  # noqa: E402


def test_a_group_index_folds_dequantizes_and_unfolds(hurray, tmp_path):
    gen = torch.Generator().manual_seed(34)
    out_f, in_f, group = 12, 64, 16
    groups = in_f // group
    q = torch.randint(-8, 8, (out_f, in_f), generator=gen, dtype=torch.int8)
    zp = torch.randint(-3, 4, (out_f, groups), generator=gen, dtype=torch.int8)
    scale = (torch.rand(out_f, groups, generator=gen) * 0.1 + 0.01).to(torch.bfloat16)
    g_idx = torch.randperm(in_f, generator=gen).to(torch.int32) // group  # each group 16 columns, shuffled
    state = {
        "layer.weight_packed": pack_to_int32(q, 4),
        "layer.weight_scale": scale,
        "layer.weight_shape": torch.tensor([out_f, in_f]),
        "layer.weight_zero_point": pack_to_int32(zp, 4, packed_dim=0),
        "layer.weight_g_idx": g_idx,
    }
    src = tmp_path / "model.safetensors"
    save_file(state, str(src), metadata={"format": "pt"})
    config = {
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "format": "pack-quantized",
            "config_groups": {
                "group_0": {
                    "targets": ["Linear"],
                    "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": group, "symmetric": False},
                }
            },
        }
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = tmp_path / "model.hurray"
    r = cli("convert", src, out)
    assert r.returncode == 0, r.stderr
    # The library's own formula, in bf16, column c in group g_idx[c].
    cols = g_idx.long()
    want = ((q.float() - zp.float()[:, cols]) * scale.float()[:, cols]).to(torch.bfloat16)
    with hurray.safe_open(str(out), framework="pt") as f:
        values = f.get_dequantized("layer.weight")
    got = values.to(torch.bfloat16)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    ref = hurray_reader.open(out)["layer.weight"]
    assert ref.quantization["group_index_type"] == "i32"
    assert np.array_equal(ref.dequantize(), values.numpy())
    back = tmp_path / "back.safetensors"
    r = cli("convert", out, back)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == src.read_bytes()


def test_a_group_index_naming_no_group_is_refused(hurray, tmp_path):
    q = torch.zeros(4, 32, dtype=torch.int8)
    state = {
        "l.weight_packed": pack_to_int32(q, 4),
        "l.weight_scale": torch.ones(4, 2, dtype=torch.float16),
        "l.weight_shape": torch.tensor([4, 32]),
        "l.weight_g_idx": torch.full((32,), 2, dtype=torch.int32),  # only groups 0 and 1 exist
    }
    save_file(state, str(tmp_path / "m.safetensors"))
    packed_config(tmp_path)
    r = cli("convert", tmp_path / "m.safetensors", tmp_path / "m.hurray")
    assert r.returncode != 0 and '"l"' in r.stderr and "weight_g_idx[0] = 2" in r.stderr, r.stderr
    assert not (tmp_path / "m.hurray").exists()


def packed_config(tmp_path):
    """A pack-quantized config: 4-bit ints in groups of 16, symmetric (the
    strategy inferred from the group size, as the library infers it)."""
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 16}}}}}))


def naive_config(tmp_path, group):
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "compressed-tensors", "format": "naive-quantized",
        "config_groups": {"g": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "int", "strategy": "group", "group_size": group, "symmetric": False}}}}}))


def test_an_unpacked_layer_with_a_group_index_folds_with_it(hurray, tmp_path):
    """An int8 naive-quantized layer saved with `weight_g_idx` (GPTQ's
    activation order at W8A16): column c takes group g_idx[c]'s scale and
    zero point, never its position's."""
    gen = torch.Generator().manual_seed(8)
    out_f, in_f, group = 6, 48, 16
    q = torch.randint(-128, 128, (out_f, in_f), generator=gen, dtype=torch.int8)
    zp = torch.randint(-5, 6, (out_f, in_f // group), generator=gen, dtype=torch.int8)
    scale = (torch.rand(out_f, in_f // group, generator=gen) * 0.1 + 0.01).to(torch.bfloat16)
    g_idx = (torch.randperm(in_f, generator=gen) // group).to(torch.int32)
    state = {"l.weight": q, "l.weight_scale": scale, "l.weight_zero_point": zp, "l.weight_g_idx": g_idx}
    src = tmp_path / "model.safetensors"
    save_file(state, str(src), metadata={"format": "pt"})
    naive_config(tmp_path, group)
    out = tmp_path / "model.hurray"
    r = cli("convert", src, out)
    assert r.returncode == 0, r.stderr
    cols = g_idx.long()
    want = ((q.to(torch.bfloat16) - zp.to(torch.bfloat16)[:, cols]) * scale[:, cols]).to(torch.bfloat16)
    with hurray.safe_open(str(out), framework="pt") as f:
        assert list(f.keys()) == ["l.weight"]
        got = f.get_dequantized("l.weight").to(torch.bfloat16)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    back = tmp_path / "back.safetensors"
    assert cli("convert", out, back).returncode == 0
    assert back.read_bytes() == src.read_bytes()


def test_an_empty_layer_is_refused_not_looped_over(hurray, tmp_path):
    """A weight_shape of [0, N] with scales claiming any number of groups
    over nothing is refused by name at once."""
    state = {
        "l.weight_packed": torch.zeros(0, 4, dtype=torch.int32),
        "l.weight_scale": torch.ones(0, 2, dtype=torch.float16),
        "l.weight_shape": torch.tensor([0, 32]),
    }
    save_file(state, str(tmp_path / "m.safetensors"))
    packed_config(tmp_path)
    r = cli("convert", tmp_path / "m.safetensors", tmp_path / "m.hurray")
    assert r.returncode != 0 and '"l"' in r.stderr and "[0, 32]" in r.stderr, r.stderr
