//! `hurray from-mlir` on what real ML compilers emit: the IR that JAX and
//! torch-mlir wrote for a small MLP (f32 and bf16 weights, empty results and
//! an empty weight), checked in under `mlir/tests/fixtures/` with the script
//! that made it (`make_fixtures.py`) and the weights each must lower to
//! (`*.expected.json` + `*.expected.npz`, the npz read by `hurray convert`).
//! Every tensor is compared: the same names, types and shapes, data
//! bit-exact, signatures descriptor-only; and `validate` accepts the file.
#![cfg(feature = "mlir")]

mod common;

use common::{assert_ok, assert_refused, convert, from_mlir_bounded, hurray, json_dims};
use hurray::{ElementType, File};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mlir/tests/fixtures")
}

/// One tensor the lowering must write.
#[derive(Debug)]
struct Expected {
    dtype: ElementType,
    shape: Vec<u64>,
    /// The bytes of its data; `None` for a descriptor-only tensor.
    data: Option<Vec<u8>>,
    /// Metadata keys whose values must contain the given text.
    metadata_contains: BTreeMap<String, String>,
}

/// Reads `<base>.expected.json` and the data of `<base>.expected.npz`.
fn expected(base: &str, dir: &Path) -> (String, BTreeMap<String, Expected>) {
    let json = std::fs::read_to_string(fixtures().join(format!("{base}.expected.json"))).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&json).unwrap();
    let npz = dir.join("expected.hurray");
    convert(&fixtures().join(format!("{base}.expected.npz")), &npz);
    let data = File::open(&npz).unwrap();
    let mut out = BTreeMap::new();
    for (name, t) in manifest["tensors"].as_object().unwrap() {
        let dtype = ElementType::from_name(t["dtype"].as_str().unwrap()).unwrap();
        let shape = json_dims(&t["shape"]);
        let data = t["data"].as_bool().unwrap().then(|| {
            let stored = data
                .get(name)
                .unwrap_or_else(|| panic!("{base}: {name} is not in the npz"));
            assert_eq!(
                stored.shape().to_wire(),
                shape,
                "{base}: npz shape of {name}"
            );
            stored.data().unwrap().to_vec()
        });
        let metadata_contains = t
            .get("metadata_contains")
            .and_then(|m| m.as_object())
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        out.insert(
            name.clone(),
            Expected {
                dtype,
                shape,
                data,
                metadata_contains,
            },
        );
    }
    (manifest["producer"].as_str().unwrap().to_owned(), out)
}

/// Lowers `ir` with `hurray from-mlir` and compares every tensor with
/// `<base>.expected.*`.
fn lowers_bit_exactly(ir: &str, base: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (producer, expected) = expected(base, dir.path());
    let out = dir.path().join("out.hurray");
    assert_ok(&from_mlir_bounded(&fixtures().join(ir), &out, &[]));
    let file = File::open(&out).unwrap();
    let names: Vec<&str> = file.tensors().map(|t| t.name()).collect();
    assert_eq!(
        names,
        expected.keys().map(String::as_str).collect::<Vec<_>>(),
        "{ir} ({producer}): the tensors written"
    );
    for (name, want) in &expected {
        let t = file.get(name).unwrap();
        assert_eq!(t.element_type(), want.dtype, "{ir}: dtype of {name}");
        assert_eq!(t.shape().to_wire(), want.shape, "{ir}: shape of {name}");
        match &want.data {
            Some(bytes) => {
                assert!(!t.is_descriptor_only(), "{ir}: {name} has no data");
                assert_eq!(t.data().unwrap(), bytes.as_slice(), "{ir}: data of {name}");
            }
            None => assert!(t.is_descriptor_only(), "{ir}: {name} has data"),
        }
        let metadata = t.descriptor().metadata;
        for (key, part) in &want.metadata_contains {
            let value = metadata.get(key).map(String::as_str).unwrap_or_default();
            assert!(
                value.contains(part.as_str()),
                "{ir}: {name} metadata {key} = {value:?}"
            );
        }
    }
    let validated = hurray(&[Path::new("validate"), &out]);
    assert!(
        validated.status.success(),
        "{ir}: validate: {}",
        String::from_utf8_lossy(&validated.stderr)
    );
}

#[test]
fn jax_generic_stablehlo() {
    // `compiler_ir('stablehlo').operation.get_asm(print_generic_op_form=True,
    // enable_debug_info=True)`: the argument is named by its location
    // (`main/x`), results by `jax.result_info`; weights (f32, bf16, an
    // empty [3,0,5]) and JAX's 0.0 scalars are `main/<i>`.
    lowers_bit_exactly("jax/mlp.generic.mlir", "jax/mlp");
}

#[test]
fn jax_bytecode_as_far_as_mlir_22_reads_it() {
    // jaxlib's own bytecode (MLIR 23): stablehlo's properties come through
    // as the one attribute MLIR 22 decodes, which for a constant is its value.
    lowers_bit_exactly("jax/mlp.mlirbc", "jax/mlp");
}

#[test]
fn torch_mlir_raw_torch_dialect() {
    // `torch.vtensor.literal` with `!torch.vtensor` results and signature.
    lowers_bit_exactly("torch/mlp.torch.generic.mlir", "torch/mlp.torch");
    // torch-mlir 's own bytecode (MLIR 24) of the same module.
    lowers_bit_exactly("torch/mlp.torch.mlirbc", "torch/mlp.torch");
}

#[test]
fn torch_mlir_named_by_an_importer_hook() {
    // The documented recipe: a `FxImporterHooks.resolve_literal` that sets
    // `hurray.name` to the state_dict key.
    lowers_bit_exactly(
        "torch/mlp.torch-named.generic.mlir",
        "torch/mlp.torch-named",
    );
}

#[test]
fn torch_mlir_linalg_and_tosa() {
    lowers_bit_exactly("torch/mlp.linalg.mlir", "torch/mlp.linalg");
    // TOSA folds the transposes into the weights: expected are the
    // transposed weights, matched by the producer's own MLIR.
    lowers_bit_exactly("torch/mlp.tosa.mlir", "torch/mlp.tosa");
}

#[test]
fn iree_externalized_parameters_and_input_form() {
    // iree-turbine's `externalize_module_parameters`: `util.global`s whose
    // value is `#flow.parameter.named<"model"::"fc1.weight">` become
    // descriptor-only tensors named by their symbols, the parameter kept
    // in `mlir.initial_value`.
    lowers_bit_exactly("iree/mlp.params.mlir", "iree/mlp.params");
    // `iree-compile --compile-to=input`: `arith.constant`s in
    // `util.func @main$async` (whose signature is `!hal` types).
    lowers_bit_exactly("iree/mlp.input.mlir", "iree/mlp.input");
}

#[test]
fn tflite_as_tensorflow_imports_it() {
    // TensorFlow's flatbuffer-to-MLIR importer: `tfl.pseudo_const` weights
    // (w1 stored transposed, as fully_connected holds it), arguments and
    // results named by `tf.entry_function`.
    lowers_bit_exactly("tflite/mlp.tfl.mlir", "tflite/mlp.tfl");
}

/// Runs `from-mlir` on `input`, which must fail with every one of `needles`
/// in its message and leave no output.
fn refused(input: &Path, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.hurray");
    assert_refused(
        &from_mlir_bounded(input, &out, &[]),
        needles,
        dir.path(),
        &[],
    );
}

#[test]
fn pretty_stablehlo_is_refused_with_the_way_to_the_generic_form() {
    refused(
        &fixtures().join("jax/mlp.pretty.mlir"),
        &[
            "`stablehlo` is not a dialect of MLIR 22",
            "custom (pretty) syntax",
            "get_asm(print_generic_op_form=True)",
            "--mlir-print-op-generic",
        ],
    );
}

#[test]
fn bytecode_mlir_22_cannot_read_names_its_producer() {
    // `jax.export`'s portable artifact: VHLO, which has its own encoding.
    refused(
        &fixtures().join("jax/mlp.vhlo.mlirbc"),
        &[
            "written by \"StableHLO_v1.15.0\"",
            "bytecode version 6",
            "text is the portable form",
            "print_generic_op_form=True",
        ],
    );
    // A newer bytecode version: jaxlib's file with its version raised to 7.
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixtures().join("jax/mlp.mlirbc")).unwrap();
    assert_eq!(bytes[4], (6 << 1) | 1, "version 6 as a one-byte varint");
    bytes[4] = (7 << 1) | 1;
    let newer = dir.path().join("newer.mlirbc");
    std::fs::write(&newer, bytes).unwrap();
    refused(
        &newer,
        &[
            "bytecode version 7 written by \"MLIR23.0.0git\"",
            "reads bytecode versions 0..=6",
            "text is the portable form",
        ],
    );
}
