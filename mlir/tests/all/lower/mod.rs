//! Lowering hand-written IR: every element type, splats, empty shapes,
//! dense_resource blobs, dynamic signatures, naming, and the error cases.

// Dynamic signatures and naming are tested here, the other groups in the
// modules below.
mod element_types;
mod malformed;
mod refusals;
mod resources;

use crate::common::*;
use hurray::{Dim, ElementType, shape};
use hurray_mlir::Error;

#[test]
fn dynamic_signatures_are_descriptor_only_with_the_dynamic_sentinel() {
    let (lowered, file) = lower_text(
        r#"func.func @predict(%x: tensor<?x784xf32>, %n: index, %m: tensor<*xf32>, %y: tensor<?x?xi8> {hurray.name = "labels"}) -> (tensor<?x10xf32> {hurray.name = "logits"}, tensor<0x10xf32>) {
  %e = tensor.empty() : tensor<0x10xf32>
  %r = tensor.empty(%n) : tensor<?x10xf32>
  return %r, %e : tensor<?x10xf32>, tensor<0x10xf32>
}"#,
    );
    let x = file.tensor("predict/arg0").unwrap();
    assert!(x.is_descriptor_only());
    assert_eq!(x.dims(), vec![Dim::Dynamic, Dim::Fixed(784)]);
    assert_eq!(x.shape().to_wire(), vec![u64::MAX, 784]);
    assert!(x.buffers().is_empty());
    let y = file.tensor("labels").unwrap();
    assert_eq!(y.dims(), vec![Dim::Dynamic, Dim::Dynamic]);
    assert_eq!(y.element_type(), ElementType::Int8);
    let r0 = file.tensor("logits").unwrap();
    assert_eq!(r0.dims(), vec![Dim::Dynamic, Dim::Fixed(10)]);
    // A static empty result type is a 0 dimension, never the sentinel.
    let r1 = file.tensor("predict/result1").unwrap();
    assert_eq!(r1.dims(), shape(&[0, 10]));
    assert!(r1.is_descriptor_only());
    let meta: Vec<_> = r1.metadata().collect();
    assert!(meta.contains(&("mlir.role", "result")), "{meta:?}");
    // tensor.empty is not recorded by default, and `index` / unranked args are not tensors of data.
    assert!(file.get("predict/0").is_none() && file.get("predict/1").is_none());
    assert!(
        lowered
            .skipped
            .iter()
            .any(|s| s.contains("unranked") && s.contains("tensor<*xf32>")),
        "{:?}",
        lowered.skipped
    );
}

#[test]
fn tensor_empty_is_at_most_a_descriptor() {
    let mut o = constants_only();
    o.tensor_empty = true;
    let (_, file) = lower_text_with(
        "func.func @f(%n: index) {\n %a = tensor.empty() : tensor<4x8xf32>\n %b = tensor.empty(%n) : tensor<?x0xi4>\n return\n}",
        o,
    );
    let a = file.tensor("f/0").unwrap();
    assert!(a.is_descriptor_only(), "uninitialised, so no data");
    assert!(a.buffers().is_empty());
    assert_eq!(a.dims(), shape(&[4, 8]));
    let b = file.tensor("f/1").unwrap();
    assert!(b.is_descriptor_only());
    assert_eq!(b.dims(), vec![Dim::Dynamic, Dim::Fixed(0)]);
}

#[test]
fn names_come_from_symbols_globals_and_stable_positions() {
    let text = r#"
module {
  ml_program.global private @embedding(dense<1.0> : tensor<4x2xf32>) : tensor<4x2xf32>
  ml_program.global private mutable @state : tensor<?x8xf32>
  memref.global "private" constant @table : memref<3xi32> = dense<[1, 2, 3]>
  func.func @main() -> tensor<2xi32> {
    %a = arith.constant dense<[1, 2]> : tensor<2xi32>
    %b = scf.execute_region -> tensor<2xi32> {
      %c = arith.constant dense<[3, 4]> : tensor<2xi32>
      scf.yield %c : tensor<2xi32>
    }
    %d = "tosa.const"() {values = dense<7> : tensor<2xi32>} : () -> tensor<2xi32>
    %k = arith.constant {hurray.name = "kernel"} dense<9> : tensor<1xi8>
    %s = tosa.const_shape {values = dense<[1, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %v = arith.constant dense<1.0> : vector<4xf32>
    return %b : tensor<2xi32>
  }
  module @inner {
    func.func @g() {
      %e = arith.constant dense<0> : tensor<1xi8>
      return
    }
  }
}"#;
    let (lowered, file) = lower_text_with(text, constants_only());
    // In file order: sorted by name.
    let names: Vec<_> = lowered
        .tensors
        .iter()
        .map(|t| t.descriptor.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "embedding",
            "inner/g/0",
            "kernel",
            "main/0",
            "main/2",
            "main/4",
            "state",
            "table",
        ]
    );
    assert!(file.tensor("state").unwrap().is_descriptor_only());
    assert_eq!(values(&file, "main/2"), [3, 0, 0, 0, 4, 0, 0, 0]);
    assert_eq!(values(&file, "main/4"), [7, 0, 0, 0, 7, 0, 0, 0]);
    assert_eq!(values(&file, "table"), [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
    // Stable: the same IR gives the same names.
    let (again, _) = lower_text_with(text, constants_only());
    assert_eq!(again.tensors, lowered.tensors);
}

#[test]
fn duplicate_names_are_an_error_naming_both_ops() {
    let e = lower_err_with(
        r#"ml_program.global private @"f/0"(dense<1> : tensor<1xi8>) : tensor<1xi8>
func.func @f() {
  %a = arith.constant dense<2> : tensor<1xi8>
  return
}"#,
        constants_only(),
    );
    let Error::DuplicateName {
        name,
        first,
        second,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(name, "f/0");
    assert!(
        first.contains("ml_program.global") && second.contains("arith.constant"),
        "{e}"
    );
}
