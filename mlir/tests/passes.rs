//! The passes `hurray-export-constants` and `hurray-import-constants` from
//! Rust: a melior `PassManager` with the pass objects, and a textual
//! pipeline after `passes::register()`.

mod common;

use hurray::{Dim, ElementType, shape};
use hurray_mlir::passes::{self, ExportOptions, ImportOptions};
use hurray_mlir::{Mlir, lower_module};
use melior::ir::operation::OperationLike;
use melior::pass::PassManager;

const MODEL: &str = r#"
module {
  func.func @f(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<3x0x5xf32>, tensor<2x4xbf16>) {
    %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
    %e = arith.constant dense<> : tensor<3x0x5xf32>
    %b = arith.constant dense_resource<torch_bias> : tensor<2x4xbf16>
    %z = arith.constant dense<0.0> : tensor<4x4xf32>
    %m = arith.constant dense<[1, 2, 3, 5]> : tensor<4xi4>
    %y = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%x : tensor<?x4xf32>) -> tensor<?x4xf32>
    return %y, %e, %b : tensor<?x4xf32>, tensor<3x0x5xf32>, tensor<2x4xbf16>
  }
}
{-#
  dialect_resources: { builtin: { torch_bias: "0x02000000803F004040408040A040C040E0400041" } }
#-}
"#;

fn print(module: &melior::ir::Module<'_>) -> String {
    module.as_operation().to_string()
}

#[test]
fn export_then_import_through_a_pass_manager_restores_the_module() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.hurray");
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(MODEL).unwrap();
    let original = print(&module);
    let mut before = Vec::new();
    lower_module(&module, &mut before, Default::default()).unwrap();

    let pm = PassManager::new(mlir.context());
    pm.add_pass(passes::export_pass(
        &ExportOptions::new(&path).inline_small(false),
    ));
    pm.run(&mut module).unwrap();
    let exported = print(&module);
    assert!(
        exported.contains(&format!("hurray.file = \"{}\"", path.display())),
        "{exported}"
    );
    assert!(
        exported.contains("dense_resource<\"hurray.dense:f/0\"> : tensor<4x4xf32>"),
        "{exported}"
    );
    assert!(!exported.contains("1.000000e+00"), "{exported}");
    assert!(module.as_operation().verify());
    println!("{exported}");

    let file = hurray::File::open(&path).unwrap();
    let w = file.tensor("f/0").unwrap();
    assert_eq!(w.as_slice::<f32>().unwrap()[15], 16.0);
    let x = file.tensor("f/arg0").unwrap();
    assert_eq!(x.dims(), vec![Dim::Dynamic, Dim::Fixed(4)]);
    let e = file.tensor("f/1").unwrap();
    assert_eq!(e.dims(), shape(&[3, 0, 5]));
    assert_eq!(e.element_type(), ElementType::Float32);

    let pm = PassManager::new(mlir.context());
    pm.add_pass(passes::import_pass(&ImportOptions::new()));
    pm.run(&mut module).unwrap();
    let imported = print(&module);
    println!("{imported}");
    assert_eq!(
        imported.replace("\"hurray.resource:f/2\"", "torch_bias"),
        original
    );
}
