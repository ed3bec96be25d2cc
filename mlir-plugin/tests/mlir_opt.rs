//! The plugin in stock `mlir-opt-22` (Debian's mlir-22-tools), on torch-mlir's
//! linalg output and JAX's StableHLO: export writes a valid Hurray file and
//! IR that `mlir-opt-22` verifies on its own, import restores the module.

use hurray_mlir::passes::canonical_resource_names;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The plugin cargo built for these tests: next to them in
/// `target/<profile>/deps/` (the crate is an rlib too, so the tests depend on
/// the library and cargo builds it, the cdylib with it).
fn plugin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.with_file_name("libhurray_mlir_plugin.so");
    assert!(lib.is_file(), "{} was not built", lib.display());
    lib
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mlir/tests/fixtures")
        .join(rel)
}

fn mlir_opt(args: &[&str]) -> Output {
    Command::new("mlir-opt-22")
        .args(args)
        .output()
        .expect("mlir-opt-22 runs (apt install mlir-22-tools; .ci/run does)")
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn load(plugin: &Path) -> String {
    format!("--load-pass-plugin={}", plugin.display())
}

/// What `hurray validate --checksums` checks: the verifying open, sparse
/// indices, and every buffer against its CRC-32C.
fn validate(path: &Path) -> hurray::File {
    let file = hurray::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(file.reader().check_sparse_indices().is_empty());
    for t in file.tensors().filter(|t| !t.is_descriptor_only()) {
        assert!(t.verify_checksum().unwrap(), "{}", t.name());
    }
    file
}

/// Exports `input` with the plugin in `mlir-opt-22` under `options`, into
/// `dir`: the weights file and the exported IR.
fn export(plugin: &Path, input: &Path, dir: &Path, options: &str) -> (PathBuf, PathBuf) {
    let weights = dir.join("mlp.hurray");
    let exported_ir = dir.join("mlp.ref.mlir");
    let pipeline = format!(
        "--pass-pipeline=builtin.module(hurray-export-constants{{file={} {options}}})",
        weights.display()
    );
    ok(
        mlir_opt(&[
            &load(plugin),
            &pipeline,
            input.to_str().unwrap(),
            "-o",
            exported_ir.to_str().unwrap(),
        ]),
        "export",
    );
    (weights, exported_ir)
}

#[test]
fn torch_mlir_linalg_exports_to_a_valid_file_and_imports_back() {
    let plugin = plugin();
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("torch/mlp.linalg.mlir");
    let (weights, exported_ir) = export(&plugin, &input, dir.path(), "inline-small=false");
    let file = validate(&weights);
    let names: Vec<String> = file.tensors().map(|t| t.descriptor().name).collect();
    assert_eq!(
        names,
        [
            "main/1",
            "main/2",
            "main/3",
            "main/4",
            "main/5",
            "main/arg0",
            "main/result0",
            "main/result1",
            "main/result2"
        ]
    );
    // The weights, as torch-mlir wrote them (fc1.weight, 4x3 f32).
    let w = file.tensor("main/5").unwrap();
    assert_eq!(w.dims(), hurray::shape(&[4, 3]));
    assert_eq!(w.as_slice::<f32>().unwrap()[0].to_bits(), 0xBB8D_A3E8);
    assert_eq!(
        file.tensor("main/1").unwrap().dims(),
        hurray::shape(&[3, 0, 5])
    );

    // The exported IR holds no data and verifies in mlir-opt-22 alone.
    let text = std::fs::read_to_string(&exported_ir).unwrap();
    assert!(!text.contains("dialect_resources"), "{text}");
    assert_eq!(
        text.matches("dense_resource<\"hurray.resource:").count(),
        5,
        "{text}"
    );
    ok(
        mlir_opt(&["--verify-each", exported_ir.to_str().unwrap()]),
        "verify",
    );

    // Import restores the module mlir-opt-22 prints from the input.
    let imported = ok(
        mlir_opt(&[
            &load(&plugin),
            "--pass-pipeline=builtin.module(hurray-import-constants)",
            exported_ir.to_str().unwrap(),
        ]),
        "import",
    );
    let original = ok(mlir_opt(&[input.to_str().unwrap()]), "print the input");
    assert_eq!(
        canonical_resource_names(&imported),
        canonical_resource_names(&original)
    );
}

#[test]
fn jax_stablehlo_round_trips_with_its_dense_constants() {
    let plugin = plugin();
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("jax/mlp.generic.mlir");
    let weights = dir.path().join("jax.hurray");
    let pipeline = format!(
        "--pass-pipeline=builtin.module(hurray-export-constants{{file={} inline-small=false}}, hurray-import-constants)",
        weights.display()
    );
    let round_trip = ok(
        mlir_opt(&[
            "--allow-unregistered-dialect",
            &load(&plugin),
            &pipeline,
            input.to_str().unwrap(),
        ]),
        "export + import",
    );
    let original = ok(
        mlir_opt(&["--allow-unregistered-dialect", input.to_str().unwrap()]),
        "print the input",
    );
    assert_eq!(round_trip, original);
    let file = validate(&weights);
    assert_eq!(
        file.tensor("main/0").unwrap().dims(),
        hurray::shape(&[3, 4])
    );
}

#[test]
fn errors_are_mlir_diagnostics_and_fail_the_pipeline() {
    let plugin = plugin();
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("torch/mlp.linalg.mlir");
    let (weights, exported_ir) = export(&plugin, &input, dir.path(), "threshold=0");
    std::fs::remove_file(&weights).unwrap();
    let out = mlir_opt(&[
        &load(&plugin),
        "--pass-pipeline=builtin.module(hurray-import-constants)",
        exported_ir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error:") && stderr.contains("mlp.hurray"),
        "{stderr}"
    );

    // An unknown option is refused by MLIR's option parser.
    let out = mlir_opt(&[
        &load(&plugin),
        "--pass-pipeline=builtin.module(hurray-export-constants{bogus=1})",
        input.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
}
