//! The passes `hurray-export-constants` and `hurray-import-constants` from
//! Rust (melior `PassManager` with the pass objects, and textual pipelines
//! through `passes::run_pipeline`), on the real producers' fixtures and on
//! hand-written IR: what the file holds, what the IR keeps, the round trip
//! `import(export(m))`, and every refusal.

use crate::common;

use hurray::{Dim, ElementType, descriptor::BufferRole, shape};
use hurray_mlir::passes::{self, ExportOptions, ImportOptions, canonical_resource_names};
use hurray_mlir::{Error, Mlir, lower_module};
use melior::ir::Module;
use melior::ir::operation::OperationLike;
use melior::pass::PassManager;
use std::path::{Path, PathBuf};

const MODEL: &str = r#"
module {
  func.func @f(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<3x0x5xf32>, tensor<2x4xbf16>) {
    %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
    %e = arith.constant dense<> : tensor<3x0x5xf32>
    %b = arith.constant dense_resource<torch_bias> : tensor<2x4xbf16>
    %z = arith.constant dense<0.0> : tensor<4x4xf32>
    %m = arith.constant dense<[1, 2, 3, 5]> : tensor<4xi4>
    %k = arith.constant dense<[true, false, true]> : tensor<3xi1>
    %y = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%x : tensor<?x4xf32>) -> tensor<?x4xf32>
    return %y, %e, %b : tensor<?x4xf32>, tensor<3x0x5xf32>, tensor<2x4xbf16>
  }
}
{-#
  dialect_resources: { builtin: { torch_bias: "0x02000000803F004040408040A040C040E0400041" } }
#-}
"#;

fn text(module: &Module<'_>) -> String {
    String::from_utf8(Mlir::print(module, false)).unwrap()
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn export_pipeline(path: &Path, extra: &str) -> String {
    format!(
        "builtin.module(hurray-export-constants{{file={} {extra}}})",
        path.display()
    )
}

/// Every tensor of `exported` has the descriptor and bytes the lowering of
/// the original module gives it.
fn assert_same_tensors_as_lowering(original: &hurray::File, exported: &hurray::File) {
    assert!(!exported.is_empty());
    for t in exported.tensors() {
        let d = t.descriptor();
        let o = original
            .tensor(&d.name)
            .unwrap_or_else(|e| panic!("{}: {e}", d.name));
        assert_eq!(o.descriptor(), d, "{}", d.name);
        assert_eq!(o.buffers(), t.buffers(), "{}", d.name);
    }
}

#[test]
fn export_then_import_through_a_pass_manager_restores_the_module() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.hurray");
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(MODEL).unwrap();
    let original = text(&module);
    let mut lowered = Vec::new();
    lower_module(&module, &mut lowered, Default::default()).unwrap();

    let pm = PassManager::new(mlir.context());
    pm.add_pass(passes::export_pass(
        &ExportOptions::new(&path).inline_small(false),
    ));
    pm.run(&mut module).unwrap();
    let exported = text(&module);
    assert!(module.as_operation().verify());
    assert!(
        exported.contains(&format!("hurray.file = \"{}\"", path.display())),
        "{exported}"
    );
    for reference in [
        "arith.constant dense_resource<\"hurray.dense:f/0\"> : tensor<4x4xf32>",
        "arith.constant dense_resource<\"hurray.dense:f/1\"> : tensor<3x0x5xf32>",
        "arith.constant dense_resource<\"hurray.resource:f/2\"> : tensor<2x4xbf16>",
        "arith.constant dense_resource<\"hurray.dense:f/4\"> : tensor<4xi4>",
        "arith.constant dense_resource<\"hurray.dense:f/5\"> : tensor<3xi1>",
    ] {
        assert!(exported.contains(reference), "{reference} in\n{exported}");
    }
    // The splat stays: one element of IR is not data.
    assert!(exported.contains("dense<0.000000e+00> : tensor<4x4xf32>"));
    assert!(!exported.contains("1.000000e+00") && !exported.contains("dialect_resources"));

    let file = hurray::File::open(&path).unwrap();
    assert_same_tensors_as_lowering(&hurray::File::from_bytes(&lowered).unwrap(), &file);
    assert_eq!(
        file.tensor("f/0").unwrap().as_slice::<f32>().unwrap()[15],
        16.0
    );
    // Empty: a 0-byte tensor, not dropped. Dynamic: still dynamic.
    let e = file.tensor("f/1").unwrap();
    assert_eq!(
        (e.element_type(), e.dims()),
        (ElementType::Float32, shape(&[3, 0, 5]))
    );
    assert_eq!(e.buffer(BufferRole::Values), Some(&[][..]));
    let x = file.tensor("f/arg0").unwrap();
    assert_eq!(x.dims(), vec![Dim::Dynamic, Dim::Fixed(4)]);
    assert!(x.is_descriptor_only());
    assert!(file.tensor("f/3").is_err(), "the splat is not exported");

    let pm = PassManager::new(mlir.context());
    pm.add_pass(passes::import_pass(&ImportOptions::new()));
    pm.run(&mut module).unwrap();
    let imported = text(&module);
    assert_eq!(
        imported.replace("\"hurray.resource:f/2\"", "torch_bias"),
        original
    );
}

#[test]
fn the_threshold_keeps_small_constants_inline_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.hurray");
    let big: Vec<String> = (0..64).map(|i| format!("{i}.5")).collect();
    let src = format!(
        "func.func @f() -> (tensor<64xf32>, tensor<63xf32>) {{
           %a = arith.constant dense<[{}]> : tensor<64xf32>
           %b = arith.constant dense<[{}]> : tensor<63xf32>
           return %a, %b : tensor<64xf32>, tensor<63xf32>
         }}",
        big.join(", "),
        big[..63].join(", ")
    );
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(&src).unwrap();
    passes::run_pipeline(&mlir, &mut module, &export_pipeline(&path, "")).unwrap();
    let exported = text(&module);
    // 256 bytes are exported, 252 stay.
    assert!(exported.contains("dense_resource<\"hurray.dense:f/0\"> : tensor<64xf32>"));
    assert!(
        exported.contains("dense<[5.000000e-01, 1.500000e+00, "),
        "{exported}"
    );
    let file = hurray::File::open(&path).unwrap();
    let names: Vec<String> = file.tensors().map(|t| t.descriptor().name).collect();
    assert_eq!(names, ["f/0", "f/result0", "f/result1"]);

    // checksums=false: the same tensors, no CRC recorded.
    let mut module = mlir.parse_text(&src).unwrap();
    passes::run_pipeline(
        &mlir,
        &mut module,
        &export_pipeline(&path, "checksums=false"),
    )
    .unwrap();
    let file = hurray::File::open(&path).unwrap();
    assert_eq!(
        file.tensor("f/0").unwrap().as_slice::<f32>().unwrap()[63],
        63.5
    );
    assert!(!file.tensor("f/0").unwrap().verify_checksum().unwrap());

    // threshold=1000: nothing to export, the file holds the signature only.
    let mut module = mlir.parse_text(&src).unwrap();
    let before = text(&module);
    passes::run_pipeline(
        &mlir,
        &mut module,
        &export_pipeline(&path, "threshold=1000"),
    )
    .unwrap();
    assert_eq!(
        text(&module),
        before.replacen(
            "module {",
            &format!(
                "module attributes {{hurray.file = \"{}\"}} {{",
                path.display()
            ),
            1
        )
    );
    assert_eq!(hurray::File::open(&path).unwrap().len(), 2);
}

/// `import(export(m))` prints as `m` up to resource names, and the file
/// holds what `from-mlir` lowers, for every real producer's IR that MLIR 22
/// reads; the exported IR verifies.
#[test]
fn real_producer_ir_round_trips_through_export_and_import() {
    let fixtures = [
        "torch/mlp.linalg.mlir",
        "torch/mlp.torch.generic.mlir",
        "torch/mlp.torch-named.generic.mlir",
        "torch/mlp.tosa.mlir",
        "torch/mlp.torch.mlirbc",
        "jax/mlp.generic.mlir",
        "jax/mlp.mlirbc",
        "iree/mlp.input.mlir",
        "iree/mlp.params.mlir",
        "tflite/mlp.tfl.mlir",
        // The project's own example (ml_program globals, a quantized
        // tosa.const, an empty global).
        "../../../examples/mlp.mlir",
    ];
    let dir = tempfile::tempdir().unwrap();
    for rel in fixtures {
        let path = dir.path().join(rel.replace(['/', '.'], "_") + ".hurray");
        let mlir = Mlir::new().unwrap();
        let mut module = mlir.parse_file(&fixture(rel)).unwrap();
        let original = text(&module);
        let mut lowered = Vec::new();
        lower_module(&module, &mut lowered, Default::default()).unwrap();

        passes::run_pipeline(
            &mlir,
            &mut module,
            &export_pipeline(&path, "inline-small=false"),
        )
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(module.as_operation().verify(), "{rel}");
        let exported = text(&module);
        let file = hurray::File::open(&path).unwrap();
        assert_same_tensors_as_lowering(&hurray::File::from_bytes(&lowered).unwrap(), &file);
        for t in file.tensors().filter(|t| !t.is_descriptor_only()) {
            assert!(
                t.verify_checksum().unwrap(),
                "{rel}: {} has a CRC-32C",
                t.name()
            );
        }
        // Every tensor written is referenced at least once; only IREE's
        // externalized parameters have no data to export (splats stay).
        let references = exported.matches("dense_resource<\"hurray.").count();
        let data = file.tensors().filter(|t| !t.is_descriptor_only()).count();
        assert!(
            references >= data && (data > 0 || rel == "iree/mlp.params.mlir"),
            "{rel}: {references} references, {data} tensors\n{exported}"
        );

        passes::run_pipeline(
            &mlir,
            &mut module,
            "builtin.module(hurray-import-constants)",
        )
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(
            canonical_resource_names(&text(&module)),
            canonical_resource_names(&original),
            "{rel}"
        );
    }
}

fn exported_model(dir: &Path) -> (PathBuf, String) {
    let path = dir.join("w.hurray");
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(MODEL).unwrap();
    passes::run_pipeline(
        &mlir,
        &mut module,
        &export_pipeline(&path, "inline-small=false"),
    )
    .unwrap();
    (path, text(&module))
}

fn import_err(ir: &str, file: Option<&Path>) -> Error {
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(ir).unwrap();
    let options = match file {
        Some(f) => format!("{{file={}}}", f.display()),
        None => String::new(),
    };
    passes::run_pipeline(
        &mlir,
        &mut module,
        &format!("builtin.module(hurray-import-constants{options})"),
    )
    .expect_err("the import must fail")
}

#[test]
fn import_names_the_missing_or_mismatched_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let (path, exported) = exported_model(dir.path());
    let cases = [
        (
            exported.replace("hurray.dense:f/0", "hurray.dense:f/9"),
            "tensor \"f/9\"",
            "the file has no tensor of that name",
        ),
        (
            exported.replace("4xi4", "4xi8"),
            "tensor \"f/4\"",
            "the IR expects tensor<4xi8> but the file's tensor is i4",
        ),
        (
            exported.replace("2x4xbf16", "4x2xbf16"),
            "tensor \"f/2\"",
            "the IR expects tensor<4x2xbf16> but the file's tensor has shape",
        ),
        (
            exported.replace("hurray.dense:f/0", "hurray.dense:f/arg0"),
            "tensor \"f/arg0\"",
            "descriptor-only",
        ),
    ];
    for (ir, tensor, reason) in cases {
        let e = import_err(&ir, None).to_string();
        assert!(e.contains(tensor) && e.contains(reason), "{e}");
        assert!(e.contains(&path.display().to_string()), "{e}");
    }
    // No file named anywhere.
    let unnamed = exported.replace(
        &format!("attributes {{hurray.file = \"{}\"}} ", path.display()),
        "",
    );
    assert!(!unnamed.contains("hurray.file"));
    let e = import_err(&unnamed, None).to_string();
    assert!(e.contains("no file: pass file=PATH"), "{e}");
    // A file that is not there.
    let e = import_err(&unnamed, Some(&dir.path().join("gone.hurray"))).to_string();
    assert!(e.contains("gone.hurray"), "{e}");
}

#[test]
fn exported_ir_survives_bytecode() {
    let dir = tempfile::tempdir().unwrap();
    let (_, exported) = exported_model(dir.path());
    let mlir = Mlir::new().unwrap();
    let bytecode = Mlir::print(&mlir.parse_text(&exported).unwrap(), true);
    let reader = Mlir::new().unwrap();
    let mut module = reader.parse(&bytecode, "exported.mlirbc").unwrap();
    assert_eq!(text(&module), exported);
    passes::run_pipeline(
        &reader,
        &mut module,
        "builtin.module(hurray-import-constants)",
    )
    .unwrap();
    let original = text(&Mlir::new().unwrap().parse_text(MODEL).unwrap());
    assert_eq!(
        canonical_resource_names(&text(&module)),
        canonical_resource_names(&original)
    );
}

#[test]
fn lowering_an_exported_module_says_to_import_first() {
    let dir = tempfile::tempdir().unwrap();
    let (_, exported) = exported_model(dir.path());
    let e = common::lower_err(&exported).to_string();
    assert!(
        e.contains("refers to tensor \"f/0\"") && e.contains("run hurray-import-constants first"),
        "{e}"
    );
}

#[test]
fn a_failed_export_leaves_the_ir_and_the_disk_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(MODEL).unwrap();
    let before = text(&module);
    let missing_dir = dir.path().join("no/such/dir/w.hurray");
    let e = passes::run_pipeline(&mlir, &mut module, &export_pipeline(&missing_dir, ""))
        .expect_err("no directory to write in");
    assert!(e.to_string().contains("no/such/dir"), "{e}");
    assert_eq!(text(&module), before);
    // Without a file option.
    let e = passes::run_pipeline(
        &mlir,
        &mut module,
        "builtin.module(hurray-export-constants)",
    )
    .expect_err("no file");
    assert!(e.to_string().contains("pass file=PATH"), "{e}");
    assert_eq!(text(&module), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn importing_a_second_module_over_keys_another_import_filled_is_refused() {
    // Two modules of one context export tensors of the same names to two
    // files; once the first is imported, the shared keys hold its bytes,
    // which the second import must not take for its own file's.
    let dir = tempfile::tempdir().unwrap();
    let mlir = Mlir::new().unwrap();
    let mut first = mlir.parse_text(MODEL).unwrap();
    let mut second = mlir.parse_text(MODEL).unwrap();
    for (module, name) in [(&mut first, "a.hurray"), (&mut second, "b.hurray")] {
        let pipeline = export_pipeline(&dir.path().join(name), "inline-small=false");
        passes::run_pipeline(&mlir, module, &pipeline).unwrap();
    }
    let import = "builtin.module(hurray-import-constants)";
    passes::run_pipeline(&mlir, &mut first, import).unwrap();
    let e = passes::run_pipeline(&mlir, &mut second, import).unwrap_err();
    assert!(
        e.to_string()
            .contains("already holds data from another import"),
        "{e}"
    );
    assert!(e.to_string().contains("b.hurray"), "{e}");
}

#[test]
fn exporting_twice_in_one_context_is_refused_not_aliased() {
    // The second export's references would take the names the first
    // import filled with data.
    let dir = tempfile::tempdir().unwrap();
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(MODEL).unwrap();
    let pipeline = format!(
        "builtin.module(hurray-export-constants{{file={0} inline-small=false}}, hurray-import-constants, hurray-export-constants{{file={0} inline-small=false}})",
        dir.path().join("w.hurray").display()
    );
    let e = passes::run_pipeline(&mlir, &mut module, &pipeline).expect_err("aliasing");
    assert!(
        e.to_string()
            .contains("already holds data under resource key"),
        "{e}"
    );
}
