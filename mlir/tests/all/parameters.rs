//! `hurray-export-constants{parameters=SCOPE}`: exported constants become
//! IREE parameters (`util.global @hurray.NAME = #flow.parameter.named<...>`
//! and a `util.global.load` in the constant's place); a global that holds its
//! value gets the parameter as its value. IREE compiles and runs the result
//! with parameters from the Hurray file in python/tests/test_iree.py.

use hurray_mlir::Mlir;
use hurray_mlir::passes::{self, ExportOptions};
use melior::ir::operation::OperationLike;
use melior::pass::PassManager;

const MODEL: &str = r#"
module {
  "util.global"() {sym_name = "g", type = tensor<4xf32>, initial_value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> ()
  func.func @f(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<2x4xbf16>) {
    %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
    %b = arith.constant dense_resource<torch_bias> : tensor<2x4xbf16>
    %z = arith.constant dense<0.0> : tensor<4x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%x : tensor<?x4xf32>) -> tensor<?x4xf32>
    return %y, %b : tensor<?x4xf32>, tensor<2x4xbf16>
  }
}
{-#
  dialect_resources: { builtin: { torch_bias: "0x02000000803F004040408040A040C040E0400041" } }
#-}
"#;

#[test]
fn exported_constants_become_iree_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.hurray");
    let mlir = Mlir::new().unwrap();
    let mut module = mlir.parse_text(MODEL).unwrap();
    let mut lowered_bytes = Vec::new();
    let lowered_before =
        hurray_mlir::lower_module(&module, &mut lowered_bytes, Default::default()).unwrap();
    let pipeline = format!(
        "builtin.module(hurray-export-constants{{file={} parameters=model threshold=0}})",
        path.display()
    );
    passes::run_pipeline(&mlir, &mut module, &pipeline).unwrap();
    assert!(module.as_operation().verify());
    let text = String::from_utf8(Mlir::print(&module, false)).unwrap();
    // The constants' globals first in the module, in file order, then the
    // global that held its value.
    let w = text
        .find(r#""util.global"() {initial_value = #flow.parameter.named<"model"::"f/0"> : tensor<4x4xf32>, sym_name = "hurray.f/0", sym_visibility = "private", type = tensor<4x4xf32>}"#)
        .unwrap_or_else(|| panic!("{text}"));
    let b = text
        .find(r#"#flow.parameter.named<"model"::"f/1"> : tensor<2x4xbf16>"#)
        .unwrap_or_else(|| panic!("{text}"));
    let g = text
        .find(r#"initial_value = #flow.parameter.named<"model"::"g"> : tensor<4xf32>, sym_name = "g""#)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(w < b && b < g, "{text}");
    assert!(
        text.contains(
            r#"%0 = "util.global.load"() {global = @"hurray.f/0"} : () -> tensor<4x4xf32>"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#""util.global.load"() {global = @"hurray.f/1"} : () -> tensor<2x4xbf16>"#),
        "{text}"
    );
    assert!(text.contains("linalg.matmul ins(%arg0, %0 :"), "{text}");
    // The splat stays (one element of IR is not data); no other constant does.
    assert_eq!(text.matches("arith.constant").count(), 1, "{text}");
    assert!(text.contains("arith.constant dense<0.000000e+00> : tensor<4x4xf32>"));
    // The file holds what the lowering gives those tensors.
    let file = hurray::File::open(&path).unwrap();
    for t in &lowered_before.tensors {
        if t.descriptor.name == "f/2" {
            continue; // the splat, left inline
        }
        let exported = file.tensor(&t.descriptor.name).unwrap();
        assert_eq!(exported.descriptor(), t.descriptor, "{}", t.descriptor.name);
    }
    assert_eq!(
        file.tensor("f/1")
            .unwrap()
            .buffer(hurray::descriptor::BufferRole::Values)
            .unwrap(),
        &[
            0x80, 0x3f, 0, 0x40, 0x40, 0x40, 0x80, 0x40, 0xa0, 0x40, 0xc0, 0x40, 0xe0, 0x40, 0,
            0x41
        ]
    );
}

#[test]
fn scopes_and_names_are_quoted_as_mlir_strings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.hurray");
    let mlir = Mlir::new().unwrap();
    let src = r#"func.func @f() -> tensor<2xf32> {
        %c = arith.constant {hurray.name = "w\"x\\y"} dense<[1.0, 2.0]> : tensor<2xf32>
        return %c : tensor<2xf32>
    }"#;
    let mut module = mlir.parse_text(src).unwrap();
    let options = ExportOptions::new(&path)
        .threshold(0)
        .parameters("my \"scope\"");
    let pm = PassManager::new(mlir.context());
    pm.add_pass(passes::export_pass(&options));
    pm.run(&mut module).unwrap();
    let text = String::from_utf8(Mlir::print(&module, false)).unwrap();
    assert!(
        text.contains(r#"#flow.parameter.named<"my \"scope\""::"w\"x\\y"> : tensor<2xf32>"#),
        "{text}"
    );
    assert!(hurray::File::open(&path).unwrap().tensor("w\"x\\y").is_ok());
}
