"""safetensors' habits: the same script run against `safetensors` and against
`hurray` gives the same results, so code ports by changing an import.
`get_slice` reads parts equal to indexing the whole tensor; `save_model` /
`load_model` store tied weights once and tie them back.
"""

import importlib
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
safetensors = pytest.importorskip("safetensors")
import safetensors.numpy  # noqa: E402
import safetensors.torch  # noqa: E402


def _library(name):
    """`safetensors` or `hurray`, with the modules a user would import."""
    if name == "safetensors":
        return safetensors, safetensors.numpy, safetensors.torch
    hurray = importlib.import_module("hurray")
    return hurray, hurray.numpy, hurray.torch


NUMPY_TENSORS = {
    "embed": np.arange(40 * 8, dtype=np.float32).reshape(40, 8),
    "layer.0.bias": np.linspace(-1, 1, 8).astype(np.float16),
    "mask": np.array([True, False, False, True]),
    "steps": np.array(3, dtype=np.int64),
    "empty": np.zeros((2, 0), dtype=np.int32),
}


def _script(lib_name, tmp_path):
    """One user script, written against safetensors' API, run with either library."""
    lib, np_mod, pt_mod = _library(lib_name)
    out = {}
    path = str(tmp_path / f"{lib_name}.bin")
    np_mod.save_file(NUMPY_TENSORS, path, metadata={"format": "np", "step": "3"})
    loaded = np_mod.load_file(path)
    out["np.load_file"] = {k: (v.dtype.str, v.shape, v.tobytes()) for k, v in loaded.items()}
    with lib.safe_open(path, framework="np") as f:
        out["keys"] = sorted(f.keys())
        out["metadata"] = f.metadata()
        out["get_tensor"] = f.get_tensor("embed").tobytes()
        s = f.get_slice("embed")
        out["shape"] = s.get_shape()
        out["slices"] = [s[3:7].tobytes(), s[:, 2:5].tobytes(), s[5].tobytes(), s[36:, :].tobytes()]  # safetensors takes no negative bounds
    round_trip = np_mod.load(np_mod.save(NUMPY_TENSORS))
    out["np.save/load"] = {k: v.tobytes() for k, v in round_trip.items()}

    torch.manual_seed(0)
    tensors = {"w": torch.randn(5, 3).to(torch.bfloat16), "n": torch.tensor(9), "b": torch.tensor([True, False])}
    pt_path = str(tmp_path / f"{lib_name}.pt.bin")
    pt_mod.save_file(tensors, pt_path)
    back = pt_mod.load_file(pt_path)
    out["pt.load_file"] = {k: (str(v.dtype), tuple(v.shape), v.float().tolist()) for k, v in back.items()}
    with lib.safe_open(pt_path, framework="pt") as f:
        out["pt.metadata"] = f.metadata()
        out["pt.slice"] = f.get_slice("w")[1:3].float().tolist()
    out["pt.save/load"] = {k: v.float().tolist() for k, v in pt_mod.load(pt_mod.save(tensors)).items()}
    return out


def test_same_script_same_results(hurray, tmp_path):
    theirs = _script("safetensors", tmp_path)
    ours = _script("hurray", tmp_path)
    assert theirs.keys() == ours.keys()
    for key in theirs:
        assert ours[key] == theirs[key], key


@pytest.mark.parametrize("framework", ["np", "pt", "jax"])
def test_get_slice_equals_indexing_the_whole_tensor(hurray, tmp_path, framework):
    path = tmp_path / "s.hurray"
    full = np.arange(6 * 5 * 4, dtype=np.float32).reshape(6, 5, 4)
    hurray.numpy.save_file({"t": full, "mask": full > 50}, path)
    indexes = [
        np.s_[1:4],
        np.s_[:, 2],
        np.s_[..., 1:3],
        np.s_[2, 1:4, 0],
        np.s_[-2:, ::2],
        np.s_[0],
        np.s_[4:2],  # empty
    ]
    with hurray.safe_open(path, framework=framework) as f:
        s = f.get_slice("t")
        assert s.get_shape() == [6, 5, 4] and s.get_dtype() == "f32" and len(s) == 6
        for index in indexes:
            part = s[index]
            expected = full[index]
            assert tuple(part.shape) == expected.shape, index
            np.testing.assert_array_equal(np.asarray(part), expected, err_msg=str(index))
        np.testing.assert_array_equal(np.asarray(f.get_slice("mask")[1:3, 4]), (full > 50)[1:3, 4])


def test_get_slice_is_a_copy_that_leaves_the_file_alone(hurray, tmp_path):
    path = tmp_path / "s.hurray"
    hurray.numpy.save_file({"t": np.zeros((4, 4), np.float32)}, path)
    before = path.read_bytes()
    with hurray.safe_open(path, framework="pt") as f:
        part = f.get_slice("t")[1:3]
        part += 1
        assert float(f.get_tensor("t").sum()) == 0  # the slice was a copy
    assert path.read_bytes() == before


def test_safe_open_after_close_and_bad_framework(hurray, tmp_path):
    path = tmp_path / "s.hurray"
    hurray.numpy.save_file({"t": np.ones(2, np.float32)}, path)
    with hurray.safe_open(path, framework="np") as f:
        t = f.get_tensor("t")
        assert f.metadata() is None  # no metadata: None, as safetensors
    assert t.sum() == 2  # tensors outlive the block
    with pytest.raises(ValueError, match="closed"):
        f.keys()
    with pytest.raises(ValueError, match="framework"):
        hurray.safe_open(path, framework="tf")
    with pytest.raises(KeyError):
        hurray.safe_open(path, framework="np").get_tensor("missing")


class TinyLM(torch.nn.Module):
    """A transformers-style language model: tied embedding / LM head, layer
    norm, an attention-like projection and a batch norm (rank-0 counter)."""

    def __init__(self, vocab=50, d=16):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.proj = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)
        self.bn = torch.nn.BatchNorm1d(d)
        self.lm_head = torch.nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.embed.weight  # tied, as GPT-2

    def forward(self, ids):
        h = self.norm(torch.relu(self.proj(self.embed(ids))))
        return self.lm_head(self.bn(h.transpose(1, 2)).transpose(1, 2))


def _model_round_trip(pt_mod, path):
    torch.manual_seed(1)
    model = TinyLM()
    model.train()
    ids = torch.randint(0, 50, (2, 7))
    model(ids)  # moves batch-norm statistics and its counter
    pt_mod.save_model(model, path)
    fresh = TinyLM()
    missing, unexpected = pt_mod.load_model(fresh, path)
    model.eval(), fresh.eval()
    assert torch.equal(model(ids), fresh(ids))
    assert fresh.lm_head.weight is fresh.embed.weight  # still tied
    assert int(fresh.bn.num_batches_tracked) == 1
    # One optimizer step on what was loaded.
    fresh.train()
    opt = torch.optim.SGD(fresh.parameters(), lr=0.1)
    fresh(ids).logsumexp(-1).mean().backward()
    opt.step()
    return sorted(missing), sorted(unexpected)


def test_save_model_stores_tied_weights_once_like_safetensors(hurray, tmp_path):
    ours = _model_round_trip(hurray.torch, tmp_path / "m.hurray")
    theirs = _model_round_trip(safetensors.torch, tmp_path / "m.safetensors")
    assert ours == theirs
    with hurray.safe_open(tmp_path / "m.hurray", framework="pt") as f:
        our_keys = sorted(f.keys())
    with safetensors.safe_open(tmp_path / "m.safetensors", framework="pt") as f:
        their_keys = sorted(f.keys())
    assert len(our_keys) == len(their_keys)
    assert "embed.weight" in our_keys and "lm_head.weight" not in our_keys


def test_save_model_refuses_partly_shared_tensors(hurray, tmp_path):
    class Views(torch.nn.Module):
        def __init__(self):
            super().__init__()
            base = torch.zeros(4, 4)
            self.a = torch.nn.Parameter(base)
            self.register_buffer("b", base[1:])  # a different view of a's memory

    with pytest.raises(ValueError, match="different views"):
        hurray.torch.save_model(Views(), tmp_path / "v.hurray")
    assert not (tmp_path / "v.hurray").exists()


def test_load_model_strict_reports_what_does_not_fit(hurray, tmp_path):
    path = tmp_path / "m.hurray"
    hurray.torch.save_file({"embed.weight": torch.zeros(50, 16), "extra": torch.zeros(1)}, path)
    with pytest.raises(RuntimeError, match="missing: .*proj.weight.*unexpected: extra"):
        hurray.torch.load_model(TinyLM(), path)
    missing, unexpected = hurray.torch.load_model(TinyLM(), path, strict=False)
    assert "proj.weight" in missing and "lm_head.weight" not in missing and unexpected == ["extra"]


def _resident_bytes_of_map(address_range):
    """Resident bytes of this process's mapping that holds `address_range`
    (Linux /proc/self/smaps): the pages this process has touched."""
    start, _ = address_range
    resident, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= start < hi
            elif inside and head == "Rss:":
                resident += int(line.split()[1]) * 1024
    return resident


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
@pytest.mark.parametrize("framework", ["np", "pt"])
def test_get_slice_reads_only_the_pages_of_the_slice(hurray, tmp_path, framework):
    path = tmp_path / "big.hurray"
    rows = np.arange(16384 * 1024, dtype=np.float32).reshape(16384, 1024)  # 64 MiB, 4 KiB rows
    hurray.numpy.save_file({"t": rows}, path)  # durable: its pages are clean
    with open(path, "rb") as fd:
        os.posix_fadvise(fd.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # out of the page cache
    with hurray.safe_open(path, framework=framework) as f:
        span = f._file.address_range()
        part = f.get_slice("t")[8000:8002]
        np.testing.assert_array_equal(np.asarray(part), rows[8000:8002])
        sliced = _resident_bytes_of_map(span)
        # The control: reading the whole tensor makes all of it resident.
        whole = f.get_tensor("t")
        assert np.array_equal(np.asarray(whole), rows)
        touched = _resident_bytes_of_map(span)
    assert touched >= 60 << 20, f"the measure is blind: {touched} bytes after reading all 64 MiB"
    assert sliced < 4 << 20, f"a 8 KiB slice left {sliced} bytes of the 64 MiB map resident"


def test_a_real_transformers_gpt2_round_trips_like_safetensors(hurray, tmp_path, monkeypatch):
    """A GPT-2 of the real `transformers` (tied `lm_head`/`wte`), built from a
    config (nothing downloaded): save_model / load_model give what
    safetensors gives, the same logits, and training goes on."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=16, bos_token_id=0, eos_token_id=0
    )
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    assert model.lm_head.weight is model.transformer.wte.weight
    hurray.torch.save_model(model, tmp_path / "gpt2.hurray")
    saved = (tmp_path / "gpt2.hurray").read_bytes()
    safetensors.torch.save_model(model, tmp_path / "gpt2.safetensors")
    with hurray.safe_open(tmp_path / "gpt2.hurray", framework="pt") as f:
        ours = sorted(f.keys())
    with safetensors.safe_open(tmp_path / "gpt2.safetensors", framework="pt") as f:
        theirs = sorted(f.keys())
    assert ours == theirs  # the same tied name dropped

    loaded = transformers.GPT2LMHeadModel(config)
    missing, unexpected = hurray.torch.load_model(loaded, tmp_path / "gpt2.hurray")
    assert (list(missing), list(unexpected)) == ([], [])
    assert loaded.lm_head.weight is loaded.transformer.wte.weight
    ids = torch.randint(0, 100, (2, 8))
    model.eval(), loaded.eval()
    assert torch.equal(model(ids).logits, loaded(ids).logits)

    # Zero-copy state dict straight from the file, then an optimizer step.
    fresh = transformers.GPT2LMHeadModel(config)
    state = hurray.torch.load_file(tmp_path / "gpt2.hurray")
    fresh.load_state_dict(state, strict=False, assign=True)
    fresh.tie_weights()
    fresh.train()
    opt = torch.optim.AdamW(fresh.parameters(), lr=1e-3)
    fresh(ids, labels=ids).loss.backward()
    opt.step()
    # The step wrote into the mapped pages, never into the file.
    assert not torch.equal(fresh.transformer.wte.weight, model.transformer.wte.weight)
    assert (tmp_path / "gpt2.hurray").read_bytes() == saved
