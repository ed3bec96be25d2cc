"""The TypeScript reader (js/) against the Rust writer and reader: files the
Rust writer wrote (every dense type, an empty [3, 0, 5], a scalar, unicode
metadata) and a file `hurray from-mlir` lowered with dynamic dimensions read
in Node with each tensor's dtype, shape, layout and byte length equal to
`hurray inspect --json`'s and its bytes equal to the Rust reader's; its
verdicts on mutated files equal the Rust reader's. `cargo xtask test` builds
js/dist before this suite runs."""

import json
import random
import shutil
import subprocess

import numpy as np
import pytest

from deploy import ROOT, cli
from test_producers import hurray_cli

NODE = shutil.which("node")
DUMP = ROOT / "js" / "scripts" / "dump.mjs"


def read_in_node(*paths):
    assert NODE, "node is not installed (cargo xtask setup installs nodejs)"
    assert (ROOT / "js" / "dist" / "index.js").exists(), "js/dist is not built: run `npm run build` in js/"
    run = subprocess.run([NODE, str(DUMP), *map(str, paths)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def inspect_json(path):
    run = cli("inspect", "--json", path)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def dense_types():
    """One array per dense element type NumPy (with ml_dtypes) holds."""
    import ml_dtypes

    rng = np.random.default_rng(7)
    arrays = {}
    numpy_types = {
        "f16": "<f2", "f32": "<f4", "f64": "<f8", "i8": "i1", "i16": "<i2", "i32": "<i4", "i64": "<i8",
        "u8": "u1", "u16": "<u2", "u32": "<u4", "u64": "<u8", "c64": "<c8", "c128": "<c16",
    }
    for name, dtype in numpy_types.items():
        arrays[f"dense.{name}"] = (rng.standard_normal((3, 5)) * 100).astype(dtype)
    arrays["dense.bool"] = rng.integers(0, 2, (3, 5)).astype(bool)
    for t in [
        "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
    ]:
        arrays[f"dense.{t}"] = rng.standard_normal((2, 5)).astype(np.float32).astype(getattr(ml_dtypes, t))
    for t in ["int2", "uint2", "int4", "uint4"]:
        info = ml_dtypes.iinfo(getattr(ml_dtypes, t))
        arrays[f"dense.{t}"] = rng.integers(int(info.min), int(info.max) + 1, (3, 5)).astype(getattr(ml_dtypes, t))
    arrays["empty"] = np.zeros((3, 0, 5), dtype=np.float32)
    arrays["scalar"] = np.array(2.5, dtype=np.float64)
    return arrays


# The typed array each dense type reads as (f16: Float16Array where Node has one).
ARRAYS = {
    "f32": "Float32Array", "f64": "Float64Array", "i8": "Int8Array", "u8": "Uint8Array", "i16": "Int16Array",
    "u16": "Uint16Array", "i32": "Int32Array", "u32": "Uint32Array", "i64": "BigInt64Array", "u64": "BigUint64Array",
    "bf16": "Uint16Array",
}


def test_files_of_the_rust_writer_read_as_the_rust_reader_reads_them(hurray, tmp_path):
    import hurray.numpy

    path = tmp_path / "every_type.hurray"
    metadata = {"名前": "モデル 🚀", "format": "pt", "empty": "", "é": "ü\u2028"}
    hurray.numpy.save_file(dense_types(), path, metadata=metadata)
    (read,) = read_in_node(path)
    shown = inspect_json(path)
    assert read["version"] == shown["version"]
    assert read["metadata"] == metadata == shown["metadata"]
    rust = hurray.open(path)
    assert [t["name"] for t in read["tensors"]] == [t["name"] for t in shown["tensors"]] == sorted(dense_types())
    for js, want in zip(read["tensors"], shown["tensors"]):
        for key, theirs in [("dtype", "dtype"), ("layout", "layout"), ("byteLength", "byte_length"), ("shape", "shape")]:
            assert js[key] == want[theirs], (js["name"], key)
        t = rust[js["name"]]
        assert bytes.fromhex(js["hex"]) == t.tobytes(), js["name"]
        assert js["view"] is True, js["name"]
        if js["dtype"] in ARRAYS:
            assert js["array"] == ARRAYS[js["dtype"]], js["name"]
        elif js["dtype"] == "f16":
            assert js["array"] in ("Float16Array", "Uint16Array")
        else:
            assert js["array"] == "Uint8Array", js["name"]
    by_name = {t["name"]: t for t in read["tensors"]}
    assert by_name["empty"]["shape"] == [3, 0, 5] and by_name["empty"]["hex"] == "" and by_name["empty"]["byteLength"] == 0
    assert by_name["scalar"]["shape"] == [] and np.frombuffer(bytes.fromhex(by_name["scalar"]["hex"]), "<f8")[0] == 2.5


def test_every_valid_vector_reads_as_inspect_lists_it():
    """Every valid compliance vector (every element type, layout and
    quantization the format has, written by the Rust writer) as `hurray
    inspect --json` lists it."""
    index = json.loads((ROOT / "tests" / "vectors" / "index.json").read_text())
    paths = [ROOT / "tests" / "vectors" / f"{v['name']}.hurray" for v in index["vectors"] if v["valid"]]
    for path, read in zip(paths, read_in_node(*paths), strict=True):
        shown = inspect_json(path)
        assert read["version"] == shown["version"] and read["metadata"] == shown["metadata"], path.name
        assert len(read["tensors"]) == len(shown["tensors"]), path.name
        for js, want in zip(read["tensors"], shown["tensors"]):
            assert (js["name"], js["dtype"], js["layout"], js["byteLength"], js["descriptorOnly"]) == (
                want["name"], want["dtype"], want["layout"], want["byte_length"], want["descriptor_only"]
            ), path.name
            assert js["shape"] == [None if d == "?" else d for d in want["shape"]], (path.name, js["name"])
            assert js["quantization"] == want["quantization"], (path.name, js["name"])


def report_of_view(path, tmp_path):
    """The data `hurray view` lays out, from the page it writes."""
    page = tmp_path / (path.stem + ".html")
    run = cli("view", path, "-o", page)
    assert run.returncode == 0, run.stderr
    text = page.read_text()
    start = text.index('<script type="application/json" id="report-data">') + len('<script type="application/json" id="report-data">')
    return json.loads(text[start : text.index("</script>", start)])


def test_the_viewers_report_is_hurray_views(tmp_path):
    """The page's report of every valid vector, computed in JavaScript, is
    the data `hurray view` computes for it: rows (type, shape, layout,
    quantization text, kind, bytes, parameters, checks) and totals."""
    index = json.loads((ROOT / "tests" / "vectors" / "index.json").read_text())
    paths = [ROOT / "tests" / "vectors" / f"{v['name']}.hurray" for v in index["vectors"] if v["valid"]]
    for path, read in zip(paths, read_in_node(*paths), strict=True):
        view = report_of_view(path, tmp_path)
        js = read["report"]
        assert view["source"].endswith(js["source"])
        for key in ["kind", "version", "file_bytes", "metadata", "members", "tensors", "totals", "stats"]:
            assert js[key] == view[key], (path.name, key)


def test_a_file_lowered_from_mlir_with_dynamic_dimensions(hurray, tmp_path):
    out = tmp_path / "mlp.hurray"
    run = subprocess.run([str(hurray_cli()), "from-mlir", ROOT / "examples" / "mlp.mlir", "-o", out], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    (read,) = read_in_node(out)
    shown = inspect_json(out)
    dynamic = 0
    for js, want in zip(read["tensors"], shown["tensors"], strict=True):
        assert js["name"] == want["name"]
        assert js["shape"] == [None if d == "?" else d for d in want["shape"]], js["name"]
        dynamic += None in js["shape"]
        assert (js["dtype"], js["layout"], js["byteLength"], js["descriptorOnly"]) == (
            want["dtype"], want["layout"], want["byte_length"], want["descriptor_only"]
        )
        if js["descriptorOnly"]:
            assert js["hex"] is None
        else:
            assert bytes.fromhex(js["hex"]) == hurray.open(out)[js["name"]].tobytes(), js["name"]
    assert dynamic >= 1, "the example has a dynamic batch"


def test_verdicts_on_mutated_files_equal_the_rust_readers(hurray, tmp_path):
    """Mutations of a real file's header and footer: the TypeScript reader
    accepts exactly the files the Rust reader accepts, and refuses the
    others with the error variant the Python reader names (the variants
    are the Rust reader's, docs/impl/compliance.md)."""
    import hurray.numpy
    import hurray_reader

    source = tmp_path / "source.hurray"
    hurray.numpy.save_file(dense_types(), source, metadata={"a": "b"})
    original = source.read_bytes()
    rng = random.Random(0x4A53)
    paths = []
    for i in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 3)):
            at = len(data) - 1 - rng.randrange(min(len(data), 2048))
            data[at] = rng.choice([data[at] ^ (1 << rng.randrange(8)), rng.randrange(256), 0, 0xFF])
        p = tmp_path / f"m{i}.hurray"
        p.write_bytes(bytes(data))
        paths.append(p)
    verdicts = read_in_node(*paths)
    agree = {"accepted": 0, "refused": 0}
    for p, js in zip(paths, verdicts, strict=True):
        try:
            hurray.open(p)
            rust = None
        except hurray.HurrayError as e:
            rust = str(e)
        if rust is None:
            assert "error" not in js, (p.name, js.get("error"))
            agree["accepted"] += 1
            continue
        assert "error" in js, (p.name, rust)
        agree["refused"] += 1
        with pytest.raises(hurray_reader.HurrayError) as python:
            hurray_reader.from_bytes(p.read_bytes())
        assert js["error"]["variant"] == python.value.variant, (p.name, js["error"], str(python.value), rust)
    assert agree["refused"] > 100 and agree["accepted"] > 0, agree
