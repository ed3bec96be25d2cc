"""IREE runs a model whose parameters are a Hurray file's tensors, in place
(hurray.iree.parameter_index), against the same model with IREE's own
parameter archive (IRPA): the real producer (iree-turbine's export with
externalized parameters), compiler (iree-compile for llvm-cpu) and runtime."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from deploy import DeployModel, cli, hurray_cli, mappings_of  # noqa: E402
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
    vmfb = compile_llvm_cpu(mlir)
    d = tmp_path_factory.mktemp("iree")
    aot.save_module_parameters(str(d / "model.irpa"), model)
    return model, ids.numpy(), want, vmfb, d


def compile_llvm_cpu(mlir):
    """iree-compile of ``mlir`` for the CPU this runs on."""
    return ic.compile_str(mlir, target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=generic"])


def run(vmfb, index, inputs):
    """``main(inputs)`` of the compiled module, its parameters (scope
    ``model``) served by ``index`` when there is one."""
    instance = rt.VmInstance()
    device = rt.get_device("local-task")
    main = rt.VmModule.copy_buffer(instance, vmfb)
    modules = [rt.create_hal_module(instance, device)]
    if index is not None:
        modules.append(rt.create_io_parameters_module(instance, index.create_provider(scope="model")))
    context = rt.VmContext(instance, modules=[*modules, main])
    return rt.FunctionInvoker(context, device, main.lookup_function("main"))(inputs).to_host()


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
    import hurray.torch

    model, ids, want, vmfb, d = compiled
    path, irpa = tmp_path / "model.hurray", tmp_path / "model.irpa"
    hurray.torch.save_file(model.state_dict(), path)
    done = cli("convert", path, irpa)
    assert done.returncode == 0, done.stderr
    ours = rt.ParameterIndex()
    ours.load(str(irpa))
    theirs = rt.ParameterIndex()
    theirs.load(str(d / "model.irpa"))
    assert np.array_equal(run(vmfb, ours, ids), run(vmfb, theirs, ids))
    # IREE's archive converts to the tensors torch saved.
    back = tmp_path / "back.hurray"
    done = cli("convert", d / "model.irpa", back)
    assert done.returncode == 0, done.stderr
    with hurray.open(path) as a, hurray.open(back) as b:
        assert sorted(a.keys()) == sorted(b.keys())
        for name in a.keys():
            assert (a[name].dtype, a[name].shape, a[name].tobytes()) == (b[name].dtype, b[name].shape, b[name].tobytes())


def file_offset_at(address, path):
    """The offset in ``path`` that ``address`` maps."""
    for lo, hi, offset in mappings_of(path):
        if lo <= address < hi:
            return offset + address - lo
    raise AssertionError(f"{address:#x} is not in a mapping of {path}")


def test_tensors_iree_cannot_take_are_refused_by_name(hurray, tmp_path):
    """The bundled example holds a sparse and a descriptor-only tensor beside
    dense, empty and packed int4 ones."""
    import hurray.iree

    path = tmp_path / "example.hurray"
    done = cli("example", path)
    assert done.returncode == 0, done.stderr
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
    import hurray.iree

    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    if cli("opt", "--help").returncode != 0:
        pytest.skip(f"{hurray_cli()} with the mlir feature is not built (cargo build -p hurray-cli --features mlir)")
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
    opt = cli("opt", source, "-o", exported, f"--pass-pipeline={pipeline}")
    assert opt.returncode == 0, opt.stderr
    text = exported.read_text()
    assert text.count("#flow.parameter.named<\"model\"::") == 3 and "stablehlo.constant" not in text

    inline = run(compile_llvm_cpu(source.read_text()), None, x)
    from_file = run(compile_llvm_cpu(text), hurray.iree.parameter_index(weights), x)
    assert np.array_equal(from_file, inline)
    assert np.allclose(from_file, np.asarray(mlp(x)), atol=1e-5)
