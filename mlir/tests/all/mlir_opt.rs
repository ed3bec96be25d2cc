//! Lowering IR produced by the real `mlir-opt-22` (Debian's mlir-22-tools):
//! folds that create empty constants, TOSA shape inference, bytecode, and
//! elided output.

use crate::common::*;
use hurray::{Dim, ElementType, shape};
use hurray_mlir::{Error, LowerOptions, Mlir, lower_module};

fn lower_bytes(
    bytes: &[u8],
    options: LowerOptions,
) -> Result<(hurray_mlir::Lowered, hurray::File), Error> {
    let mlir = Mlir::new()?;
    let module = mlir.parse(bytes, "mlir-opt output")?;
    let mut out = Vec::new();
    let lowered = lower_module(&module, &mut out, options)?;
    Ok((lowered, hurray::File::from_bytes(&out)?))
}

const FOLDS: &str = r#"
func.func @f(%x: tensor<?x4xf32>) -> (tensor<3x0x5xf32>, tensor<0xi4>, tensor<?x4xf32>, tensor<1x4xf32>) {
  %c = arith.constant dense<1.0> : tensor<3x4x5xf32>
  %s = tensor.extract_slice %c[0, 0, 0] [3, 0, 5] [1, 1, 1] : tensor<3x4x5xf32> to tensor<3x0x5xf32>
  %n = arith.constant dense<3> : tensor<8xi4>
  %m = tensor.extract_slice %n[2] [0] [1] : tensor<8xi4> to tensor<0xi4>
  %w = arith.constant dense_resource<w> : tensor<4xf32>
  %b = tensor.expand_shape %w [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
  %y = arith.addf %x, %x : tensor<?x4xf32>
  return %s, %m, %y, %b : tensor<3x0x5xf32>, tensor<0xi4>, tensor<?x4xf32>, tensor<1x4xf32>
}
{-#
  dialect_resources: { builtin: { w: "0x040000000000803F000000400000404000008040" } }
#-}
"#;

#[test]
fn canonicalize_folds_slices_to_empty_constants_that_lower_as_empty_tensors() {
    let folded = mlir_opt_run(FOLDS, &["--canonicalize"]);
    let text = String::from_utf8(folded.clone()).unwrap();
    // The folds really happened in mlir-opt, not in our test input.
    assert!(
        text.contains(": tensor<3x0x5xf32>")
            && text.contains("arith.constant dense<1.000000e+00> : tensor<3x0x5xf32>"),
        "{text}"
    );
    assert!(
        text.contains("arith.constant dense<3> : tensor<0xi4>"),
        "{text}"
    );
    assert!(!text.contains("extract_slice"), "{text}");
    let (lowered, file) = lower_bytes(&folded, LowerOptions::default()).unwrap();
    let empties: Vec<_> = lowered
        .tensors
        .iter()
        .filter(|t| !t.descriptor.descriptor_only && t.descriptor.is_empty())
        .collect();
    assert_eq!(empties.len(), 2, "{lowered:#?}");
    for t in empties {
        let r = file.tensor(&t.descriptor.name).unwrap();
        assert_eq!(
            r.buffer(hurray::descriptor::BufferRole::Values)
                .unwrap()
                .len(),
            0
        );
        assert!(
            (r.element_type() == ElementType::Float32 && r.dims() == shape(&[3, 0, 5]))
                || (r.element_type() == ElementType::Int4 && r.dims() == shape(&[0]))
        );
    }
    // The dense_resource weights survive canonicalization with their bytes.
    let w = lowered
        .tensors
        .iter()
        .find(|t| t.descriptor.shape == shape(&[4]) && !t.descriptor.descriptor_only)
        .expect("the weights");
    let r = file.tensor(&w.descriptor.name).unwrap();
    assert_eq!(r.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    // The dynamic signature stays dynamic, never 0.
    let x = file.tensor("f/arg0").unwrap();
    assert_eq!(x.dims(), vec![Dim::Dynamic, Dim::Fixed(4)]);
    assert!(x.is_descriptor_only());
}

#[test]
fn tosa_shape_inference_output_lowers() {
    let input = r#"
func.func @t(%a: tensor<?x3xf32>) -> tensor<*xf32> {
  %w = "tosa.const"() {values = dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
  %q = "tosa.const"() {values = dense<[1, -1, 7]> : tensor<3xi8>} : () -> tensor<3x!quant.uniform<i8:f32, 0.5:2>>
  %r = tosa.add %a, %w : (tensor<?x3xf32>, tensor<1x3xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}"#;
    let inferred = mlir_opt_run(input, &["--tosa-infer-shapes"]);
    let text = String::from_utf8(inferred.clone()).unwrap();
    assert!(
        text.contains("-> tensor<?x3xf32>"),
        "shape inference ran: {text}"
    );
    let (lowered, file) = lower_bytes(&inferred, LowerOptions::default()).unwrap();
    assert_eq!(
        file.tensor("t/0").unwrap().as_slice::<f32>().unwrap(),
        &[1.0, 2.0, 3.0]
    );
    let q = file.tensor("t/1").unwrap();
    assert_eq!(q.element_type(), ElementType::Int8);
    assert!(q.quantization().is_some());
    assert_eq!(
        file.tensor("t/arg0").unwrap().dims(),
        vec![Dim::Dynamic, Dim::Fixed(3)]
    );
    // The unranked result cannot be a descriptor; it is reported, not dropped silently.
    assert!(
        lowered.skipped.iter().any(|s| s.contains("tensor<*xf32>")),
        "{:?}",
        lowered.skipped
    );
}

#[test]
fn mlir_opt_bytecode_lowers_like_its_text() {
    let text = mlir_opt_run(FOLDS, &["--canonicalize"]);
    let bytecode = mlir_opt_run(FOLDS, &["--canonicalize", "--emit-bytecode"]);
    assert!(bytecode.starts_with(b"ML\xefR"));
    let (a, fa) = lower_bytes(&text, LowerOptions::default()).unwrap();
    let (b, fb) = lower_bytes(&bytecode, LowerOptions::default()).unwrap();
    assert_eq!(
        a.tensors.iter().map(|t| &t.descriptor).collect::<Vec<_>>(),
        b.tensors.iter().map(|t| &t.descriptor).collect::<Vec<_>>()
    );
    for t in fa.tensors() {
        assert_eq!(t.buffers(), fb.tensor(t.name()).unwrap().buffers());
    }
}

#[test]
fn elided_output_of_mlir_opt_is_a_clear_error() {
    // Large elements attributes printed as `dense_resource<__elided__>`.
    let elided = mlir_opt_run(
        "func.func @f() -> tensor<8xi32> {\n %c = arith.constant dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xi32>\n return %c : tensor<8xi32>\n}",
        &["--mlir-elide-elementsattrs-if-larger=2"],
    );
    let e = lower_bytes(&elided, LowerOptions::default()).unwrap_err();
    assert!(matches!(e, Error::MissingResourceData { .. }), "{e:?}");
    // Bytecode written without its resource data.
    let stripped = mlir_opt_run(
        FOLDS,
        &["--emit-bytecode", "--elide-resource-data-from-bytecode"],
    );
    let e = lower_bytes(&stripped, LowerOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::MissingResourceData { ref resource, .. } if resource == "w"),
        "{e:?}"
    );
}
