"""IREE runs a model whose parameters are a Hurray file's tensors, in place
(hurray.iree.parameter_index), against the same model with IREE's own
parameter archive (IRPA): the real producer (iree-turbine's export with
externalized parameters), compiler (iree-compile for llvm-cpu) and runtime."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from deploy_model import DeployModel  # noqa: E402
rt = pytest.importorskip("iree.runtime")
ic = pytest.importorskip("iree.compiler")
aot = pytest.importorskip("iree.turbine.aot")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    torch.manual_seed(0)
    model = DeployModel().eval()
    ids = torch.randint(0, 1000, (2, 7))
    want = model(ids).detach().numpy()
    aot.externalize_module_parameters(model)
    exported = aot.export(model, args=(ids,))
    mlir = str(exported.mlir_module)
    assert '#flow.parameter.named<"model"::"fc.weight">' in mlir
    vmfb = ic.compile_str(mlir, target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=generic"])
    d = tmp_path_factory.mktemp("iree")
    aot.save_module_parameters(str(d / "model.irpa"), model)
    return model, ids.numpy(), want, vmfb, d


def run(vmfb, index, ids):
    instance = rt.VmInstance()
    device = rt.get_device("local-task")
    main = rt.VmModule.copy_buffer(instance, vmfb)
    params = rt.create_io_parameters_module(instance, index.create_provider(scope="model"))
    context = rt.VmContext(instance, modules=[rt.create_hal_module(instance, device), params, main])
    return rt.FunctionInvoker(context, device, main.lookup_function("main"))(ids).to_host()


def test_iree_runs_on_the_tensors_of_a_file_torch_saved(hurray, compiled, tmp_path):
    import hurray.iree
    import hurray.torch

    model, ids, want, vmfb, d = compiled
    irpa = rt.ParameterIndex()
    irpa.load(str(d / "model.irpa"))
    from_irpa = run(vmfb, irpa, ids)
    assert np.allclose(from_irpa, want, atol=1e-5)

    path = tmp_path / "model.hurray"
    hurray.torch.save_file(model.state_dict(), path)
    index = hurray.iree.parameter_index(path)
    got = run(vmfb, index, ids)
    assert np.array_equal(got, from_irpa)

    # Every entry is a range of the file, at the tensor's own bytes.
    entries = dict(index.items())
    assert set(entries) == set(model.state_dict())
    raw = path.read_bytes()
    with hurray.open(path) as f:
        for name, entry in entries.items():
            assert entry.is_file
            offset, length = f[name].buffer_range("values")
            assert entry.file_storage[1] == offset and entry.length == length
            assert bytes(entry.file_view) == raw[offset : offset + length] == f[name].tobytes()
    # ... of the file's map itself, not a copy: the address IREE reads lies in
    # a mapping of the file (/proc/self/maps), at the tensor's offset in it.
    for name in ("emb.weight", "head"):
        address = np.frombuffer(entries[name].file_view, dtype=np.uint8).__array_interface__["data"][0]
        assert file_offset_at(address, path) == entries[name].file_storage[1]


def test_iree_runs_on_an_archive_hurray_convert_wrote(hurray, compiled, tmp_path):
    """`hurray convert model.hurray model.irpa` (and back) gives an archive
    IREE loads and runs exactly as on its own."""
    import subprocess
    from pathlib import Path

    import hurray.torch

    model, ids, want, vmfb, d = compiled
    cli = Path(__file__).resolve().parents[2] / "target" / "debug" / "hurray"
    assert cli.exists(), f"{cli} is not built: run `cargo build -p hurray-cli` first"
    path, irpa = tmp_path / "model.hurray", tmp_path / "model.irpa"
    hurray.torch.save_file(model.state_dict(), path)
    subprocess.run([str(cli), "convert", str(path), str(irpa)], check=True, capture_output=True)
    ours = rt.ParameterIndex()
    ours.load(str(irpa))
    theirs = rt.ParameterIndex()
    theirs.load(str(d / "model.irpa"))
    assert np.array_equal(run(vmfb, ours, ids), run(vmfb, theirs, ids))
    # IREE's archive converts to the tensors torch saved.
    back = tmp_path / "back.hurray"
    subprocess.run([str(cli), "convert", str(d / "model.irpa"), str(back)], check=True, capture_output=True)
    with hurray.open(path) as a, hurray.open(back) as b:
        assert sorted(a.keys()) == sorted(b.keys())
        for name in a.keys():
            assert (a[name].dtype, a[name].shape, a[name].tobytes()) == (b[name].dtype, b[name].shape, b[name].tobytes())


def file_offset_at(address, path):
    """The offset in ``path`` that ``address`` maps, from /proc/self/maps."""
    real = str(path.resolve())
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == real:
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                if lo <= address < hi:
                    return int(fields[2], 16) + address - lo
    raise AssertionError(f"{address:#x} is not in a mapping of {real}")


def test_tensors_iree_cannot_take_are_refused_by_name(hurray, tmp_path):
    """The bundled example holds a sparse and a descriptor-only tensor beside
    dense, empty and packed int4 ones."""
    import subprocess
    from pathlib import Path

    import hurray.iree

    cli = Path(__file__).resolve().parents[2] / "target" / "debug" / "hurray"
    assert cli.exists(), f"{cli} is not built: run `cargo build -p hurray-cli` first"
    path = tmp_path / "example.hurray"
    subprocess.run([str(cli), "example", str(path)], check=True, capture_output=True)
    with pytest.raises(ValueError, match="'sparse.csr_empty' is csr"):
        hurray.iree.parameter_index(path)
    with pytest.raises(ValueError, match="'signature.input' is descriptor-only"):
        hurray.iree.parameter_index(path, names=["signature.input"])
    with pytest.raises(ValueError, match="'sparse.csr_empty' is csr"):
        hurray.iree.parameter_index(path, names=["sparse.csr_empty"])
    with pytest.raises(KeyError):
        hurray.iree.parameter_index(path, names=["missing"])
    mask = tmp_path / "mask.hurray"
    hurray.save(mask, {"mask": np.array([True, False, True])})
    with pytest.raises(ValueError, match="'mask' is bool"):
        hurray.iree.parameter_index(mask)
    plain = ["dense.weight", "empty.slice", "packed.int4"]
    index = hurray.iree.parameter_index(path, names=plain)
    entries = dict(index.items())
    assert sorted(entries) == plain
    assert entries["empty.slice"].length == 0
    assert entries["packed.int4"].length == 3
    with hurray.open(path) as f:
        assert bytes(entries["dense.weight"].file_view) == f["dense.weight"].tobytes()


def test_the_export_pass_makes_constants_iree_parameters(hurray, tmp_path):
    """`hurray opt` with `hurray-export-constants{parameters=model}` on a JAX
    MLP's StableHLO: the weights go to a Hurray file and the module loads
    them as IREE parameters; iree-compile builds it, and IREE runs it with
    parameters from that file, exactly as the module with its constants
    inline."""
    import subprocess
    from pathlib import Path

    import hurray.iree

    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    cli = Path(__file__).resolve().parents[2] / "target" / "debug" / "hurray"
    if subprocess.run([str(cli), "opt", "--help"], capture_output=True).returncode != 0:
        pytest.skip(f"{cli} with the mlir feature is not built (cargo build -p hurray-cli --features mlir)")
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((3, 16), dtype=np.float32)
    b1 = rng.standard_normal((16,), dtype=np.float32)
    w2 = rng.standard_normal((16, 4), dtype=np.float32)

    def mlp(x):
        return jnp.tanh(x @ w1 + b1) @ w2

    x = np.ones((2, 3), np.float32)
    source = tmp_path / "mlp.mlir"
    module = jax.jit(mlp).lower(x).compiler_ir("stablehlo")
    source.write_text(module.operation.get_asm(print_generic_op_form=True, enable_debug_info=True))
    weights, exported = tmp_path / "mlp.hurray", tmp_path / "mlp.params.mlir"
    pipeline = f"builtin.module(hurray-export-constants{{file={weights} parameters=model threshold=0}})"
    run = subprocess.run([str(cli), "opt", str(source), "-o", str(exported), f"--pass-pipeline={pipeline}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    text = exported.read_text()
    assert text.count("#flow.parameter.named<\"model\"::") == 3 and "stablehlo.constant" not in text

    def compile_and_run(mlir, index=None):
        vmfb = ic.compile_str(mlir, target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=generic"])
        instance = rt.VmInstance()
        device = rt.get_device("local-task")
        main = rt.VmModule.copy_buffer(instance, vmfb)
        modules = [rt.create_hal_module(instance, device)]
        if index is not None:
            modules.append(rt.create_io_parameters_module(instance, index.create_provider(scope="model")))
        context = rt.VmContext(instance, modules=[*modules, main])
        return rt.FunctionInvoker(context, device, main.lookup_function("main"))(x).to_host()

    inline = compile_and_run(source.read_text())
    from_file = compile_and_run(text, hurray.iree.parameter_index(weights))
    assert np.array_equal(from_file, inline)
    assert np.allclose(from_file, np.asarray(mlp(x)), atol=1e-5)
