"""ONNX models read in place from Hurray files (hurray.onnx, `hurray
onnx-externalize`, `hurray convert model.onnx`), checked with the real
producers and consumers: torch.onnx.export, the onnx package's own tensor
helpers, and ONNX Runtime."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
from deploy import DeployModel, cli, mappings_of  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    model = DeployModel().eval()
    ids = torch.randint(0, 1000, (2, 7))
    d = tmp_path_factory.mktemp("exported")
    # Not optimized: the bf16 parameter stays an initializer, cast in the graph.
    torch.onnx.export(model, (ids,), str(d / "dynamo.onnx"), dynamo=True, optimize=False)
    torch.onnx.export(model, (ids,), str(d / "legacy.onnx"), dynamo=False)
    return model, ids.numpy(), d


def run(path, ids):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: ids})[0]


def external_entries(path):
    """{name: {location, offset, length}} of a model's external initializers."""
    m = onnx.load(str(path), load_external_data=False)
    return {
        t.name: {e.key: e.value for e in t.external_data}
        for t in m.graph.initializer
        if t.data_location == TensorProto.EXTERNAL
    }


@pytest.mark.parametrize("exporter", ["dynamo", "legacy"])
def test_an_exported_model_runs_from_a_hurray_file(hurray, exported, tmp_path, exporter):
    import hurray.onnx

    model, ids, d = exported
    source = d / f"{exporter}.onnx"
    out, weights = tmp_path / "model.onnx", tmp_path / "model.hurray"
    report = hurray.onnx.externalize(str(source), out, weights)
    want = run(source, ids)
    got = run(out, ids)
    assert np.array_equal(got, want)
    assert np.allclose(got, model(torch.from_numpy(ids)).detach().numpy(), atol=1e-4)
    # Every initializer of a kilobyte or more points into the Hurray file, at
    # a page boundary, at exactly the bytes of the tensor of its name.
    entries = external_entries(out)
    assert report["external"] == len(entries) >= 4
    assert {"emb.weight", "conv.weight"} <= set(entries)
    if exporter == "dynamo":
        # The bf16 parameter stays bf16 (the graph casts it).
        assert "head" in entries
        with hurray.open(weights) as f:
            assert f["head"].dtype == "bf16"
    raw = weights.read_bytes()
    with hurray.safe_open(weights, framework="np") as f:
        for name, e in entries.items():
            assert e["location"] == "model.hurray"
            offset, length = int(e["offset"]), int(e["length"])
            assert offset % 4096 == 0
            stored = f.get_tensor(name)
            assert raw[offset : offset + length] == np.ascontiguousarray(stored).tobytes()
    assert set(report["inline"].values()) <= {"below the threshold"}
    check = cli("validate", "--checksums", weights)
    assert check.returncode == 0, check.stderr
    # ONNX Runtime maps the Hurray file: each external tensor's bytes lie in
    # a mapping of the file while the session lives (no copy into its heap).
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    mapped = [(offset, offset + hi - lo) for lo, hi, offset in mappings_of(weights)]
    for name, e in entries.items():
        offset, length = int(e["offset"]), int(e["length"])
        assert any(start <= offset and offset + length <= end for start, end in mapped), name
    del session


def test_the_cli_externalizes_and_converts(hurray, exported, tmp_path):
    _, ids, d = exported
    out, weights = tmp_path / "m.onnx", tmp_path / "w" / "m.hurray"
    weights.parent.mkdir()
    r = cli("onnx-externalize", d / "dynamo.onnx", out, "--weights", weights, "--threshold", 0)
    assert r.returncode == 0, r.stderr
    assert np.array_equal(run(out, ids), run(d / "dynamo.onnx", ids))
    assert {e["location"] for e in external_entries(out).values()} == {"w/m.hurray"}
    converted = tmp_path / "c.hurray"
    r = cli("convert", d / "dynamo.onnx", converted)
    assert r.returncode == 0, r.stderr
    m = onnx.load(str(d / "dynamo.onnx"))
    with hurray.safe_open(converted, framework="np") as f:
        assert sorted(f.keys()) == sorted(t.name for t in m.graph.initializer)
        for t in m.graph.initializer:
            want = numpy_helper.to_array(t)
            got = f.get_tensor(t.name)
            assert got.dtype == want.dtype and np.array_equal(got, want), t.name


def test_existing_weights_from_torch_save_file(hurray, exported, tmp_path):
    """The legacy exporter names initializers as the state dict does: the
    model points into the file hurray.torch.save_file wrote."""
    import hurray.onnx
    import hurray.torch

    model, ids, d = exported
    weights, out = tmp_path / "state.hurray", tmp_path / "m.onnx"
    hurray.torch.save_file(model.state_dict(), weights)
    before = weights.read_bytes()
    report = hurray.onnx.externalize(d / "legacy.onnx", out, weights, existing=True)
    assert weights.read_bytes() == before
    assert np.array_equal(run(out, ids), run(d / "legacy.onnx", ids))
    entries = external_entries(out)
    assert {"emb.weight", "conv.weight"} <= set(entries)
    # The exporter's transposed copy of fc.weight is no state-dict tensor.
    assert "not in the Hurray file" in report["inline"].values()


def onnx_types(hurray):
    from hurray import _hurray

    return [t for t in _hurray.element_types() if t["onnx"] is not None]


def test_every_type_onnx_has_converts_from_typed_fields_and_raw_data(hurray, tmp_path):
    """onnx's own helpers write each type both ways (typed fields like
    int32_data, and raw_data); both convert to the same Hurray tensor, equal
    to what onnx reads back."""
    import hurray.onnx

    rng = np.random.default_rng(0)
    inits = []
    for t in onnx_types(hurray):
        code = t["onnx"]
        assert TensorProto.DataType.Name(code)  # a type this onnx knows
        if t["class"] == "complex":
            values = rng.normal(size=10) + 1j * rng.normal(size=10)
        elif t["class"] in ("float",):
            values = rng.choice([0.0, 0.5, 1.0, -2.0, 4.0, 0.25], size=10)
        elif t["class"] == "bool":
            values = rng.integers(0, 2, size=10).astype(bool)
        else:
            lo = -(2 ** (t["bits"] - 1)) if t["class"] == "int" else 0
            hi = 2 ** (t["bits"] - 1) if t["class"] == "int" else 2 ** t["bits"]
            values = rng.integers(max(lo, -(2**62)), min(hi, 2**62), size=10, dtype=np.int64)
        typed = helper.make_tensor(f"{t['name']}.typed", code, [2, 5], values.tolist())
        raw = numpy_helper.from_array(numpy_helper.to_array(typed), f"{t['name']}.raw")
        assert raw.raw_data and not typed.raw_data
        inits += [typed, raw]
    graph = helper.make_graph([], "g", [], [], initializer=inits)
    model = helper.make_model(graph)
    weights = tmp_path / "types.hurray"
    hurray.onnx.write_weights(model, weights)
    with hurray.open(weights) as f:
        for t in onnx_types(hurray):
            a, b = f[f"{t['name']}.typed"], f[f"{t['name']}.raw"]
            assert a.dtype == b.dtype == t["name"]
            assert a.tobytes() == b.tobytes(), t["name"]
    with hurray.safe_open(weights, framework="np") as f:
        for init in inits:
            if init.data_type == TensorProto.BOOL or "float" in TensorProto.DataType.Name(init.data_type).lower():
                want = numpy_helper.to_array(init).astype(np.float64 if init.data_type != TensorProto.BOOL else bool)
                got = f.get_tensor(init.name).astype(want.dtype)
            else:
                want = numpy_helper.to_array(init).astype(np.complex128)
                got = f.get_tensor(init.name).astype(np.complex128)
            assert np.array_equal(got, want), init.name


def model_with_external(tmp_path, offset, length, data_len=64):
    (tmp_path / "w.bin").write_bytes(bytes(range(data_len)))
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "w.bin"), ("offset", str(offset)), ("length", str(length))]:
        t.external_data.add(key=k, value=v)
    graph = helper.make_graph([], "g", [], [], initializer=[t])
    path = tmp_path / "in.onnx"
    onnx.save(helper.make_model(graph), str(path))
    return path


def test_bad_input_names_the_tensor_and_writes_nothing(hurray, exported, tmp_path):
    import hurray.onnx

    model, ids, d = exported
    out = tmp_path / "out.onnx"
    # External data that runs past the end of its file.
    bad = model_with_external(tmp_path, offset=16, length=64)
    with pytest.raises(ValueError, match=r'"w".*outside'):
        hurray.onnx.externalize(bad, out, tmp_path / "w.hurray")
    # External data that leaves the model's directory.
    escape = tmp_path / "sub"
    escape.mkdir()
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="../w.bin")
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], initializer=[t])), str(escape / "m.onnx"))
    with pytest.raises(ValueError, match=r'"w".*inside the model'):
        hurray.onnx.externalize(escape / "m.onnx", out, tmp_path / "w.hurray")
    # A missing weights file to point into.
    with pytest.raises(FileNotFoundError):
        hurray.onnx.externalize(d / "legacy.onnx", out, tmp_path / "missing.hurray", existing=True)
    # A tensor of another type, and of another shape, than the model's.
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for name, changed, message in [
        ("conv.bias", state["conv.bias"].double(), r'"conv.bias".*data_type'),
        ("ln.weight", state["ln.weight"][:64].clone(), r'"ln.weight".*dims'),
        ("emb.weight", state["emb.weight"] + 1, r'"emb.weight".*values differ'),
    ]:
        import hurray.torch

        weights = tmp_path / f"{name}.hurray"
        hurray.torch.save_file({**state, name: changed}, weights)
        with pytest.raises(ValueError, match=message):
            hurray.onnx.externalize(d / "legacy.onnx", out, weights, existing=True)
    # A weights file outside the output model's directory.
    with pytest.raises(ValueError, match="model's directory"):
        hurray.onnx.externalize(d / "legacy.onnx", escape / "o.onnx", tmp_path / "w.hurray")
    # Arguments that cannot be honoured are refused, not ignored.
    with pytest.raises(ValueError, match="already written"):
        hurray.onnx.externalize(d / "legacy.onnx", out, tmp_path / "w.hurray", align=64, existing=True)
    with pytest.raises(ValueError, match="base_dir is for a ModelProto"):
        hurray.onnx.externalize(d / "legacy.onnx", out, tmp_path / "w.hurray", base_dir=tmp_path)
    with pytest.raises(ValueError, match="pass base_dir"):
        hurray.onnx.externalize(onnx.load(str(bad), load_external_data=False), out, tmp_path / "w.hurray")
    assert not out.exists() and not (tmp_path / "w.hurray").exists()
    assert not (escape / "o.onnx").exists()
    r = cli("onnx-externalize", bad, out, "--weights", tmp_path / "w.hurray")
    assert r.returncode != 0 and '"w"' in r.stderr and not out.exists()


def test_a_model_over_2_gib_reads_its_weights_in_place(hurray, tmp_path):
    """Weights past protobuf's 2 GiB limit: an embedding of 2.03 GiB (a sparse
    file with a few rows written) and a bias stored after it, at an offset
    past 2^31 in the Hurray file too; ONNX Runtime gathers the rows from the
    Hurray file."""
    import hurray.onnx

    rows, cols = 8_500_000, 64
    size = rows * cols * 4
    assert size > 2**31
    picked = np.array([0, 4_000_123, rows - 1], dtype=np.int64)
    rng = np.random.default_rng(1)
    values = rng.normal(size=(3, cols)).astype(np.float32)
    bias = rng.normal(size=cols).astype(np.float32)
    try:
        with open(tmp_path / "big.bin", "wb") as f:
            f.truncate(size)
            for r, v in zip(picked, values):
                f.seek(int(r) * cols * 4)
                f.write(v.tobytes())
            f.seek(size)
            f.write(bias.tobytes())
        inits = []
        for name, dims, offset, length in [("emb", [rows, cols], 0, size), ("bias", [cols], size, cols * 4)]:
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
            t.data_location = TensorProto.EXTERNAL
            for k, v in [("location", "big.bin"), ("offset", str(offset)), ("length", str(length))]:
                t.external_data.add(key=k, value=v)
            inits.append(t)
        graph = helper.make_graph(
            [helper.make_node("Gather", ["emb", "ids"], ["g"]), helper.make_node("Add", ["g", "bias"], ["out"])],
            "g",
            [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3, cols])],
            initializer=inits,
        )
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "in.onnx"))
        out, weights = tmp_path / "out.onnx", tmp_path / "w.hurray"
        report = hurray.onnx.externalize(tmp_path / "in.onnx", out, weights)
        assert report["external"] == 2
        entries = external_entries(out)
        assert int(entries["bias"]["offset"]) > 2**31
        got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"ids": picked})[0]
        assert np.array_equal(got, values + bias)
    finally:
        # pytest keeps the last runs' directories: do not leave gigabytes there.
        for name in ("big.bin", "w.hurray"):
            (tmp_path / name).unlink(missing_ok=True)
