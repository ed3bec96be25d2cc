//! sparse_tensor encodings -> Hurray sparse layouts; !quant.uniform ->
//! quantization descriptors.

use crate::common::*;
use hurray::{ElementType, Layout, descriptor::QuantizationScheme, shape};
use hurray_mlir::Error;

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

const SPARSE: &str = r#"
#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
#CSR32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>
#CSC = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>
#COO = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>
#DCSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>
func.func @f() {
  %plain = arith.constant sparse<[[0, 1], [2, 3]], [1.0, 2.0]> : tensor<3x4xf32>
  %csr = arith.constant sparse<[[2, 3], [0, 1], [0, 3]], [3.0, 1.0, 2.0]> : tensor<3x4xf32, #CSR>
  %csr32 = arith.constant sparse<[[0, 1]], [5]> : tensor<2x2xi8, #CSR32>
  %csc = arith.constant sparse<[[0, 1], [2, 0], [1, 1]], [1.0, 2.0, 3.0]> : tensor<3x2xf64, #CSC>
  %coo = arith.constant sparse<[[1, 1], [0, 2]], [7, 8]> : tensor<2x3xi32, #COO>
  %empty = arith.constant sparse<> : tensor<4x5xf32, #CSR>
  %zero = arith.constant sparse<> : tensor<0x5xf32, #CSR>
  %dense = arith.constant dense<[[0.0, 1.5], [0.0, 0.0], [2.5, 0.0]]> : tensor<3x2xf32, #CSR>
  return
}
"#;

#[test]
fn sparse_constants_become_sparse_layouts() {
    let (_, file) = lower_text_with(SPARSE, constants_only());

    let plain = file.tensor("f/0").unwrap();
    assert_eq!(
        plain.layout(),
        Layout::Coo {
            nnz: 2,
            index_type: ElementType::Int64,
            canonical: true
        }
    );
    assert_eq!(
        i64s(
            plain
                .buffer(hurray::descriptor::BufferRole::Indices)
                .unwrap()
        ),
        [0, 1, 2, 3]
    );
    assert_eq!(
        plain
            .buffer(hurray::descriptor::BufferRole::Values)
            .unwrap()
            .len(),
        8
    );

    let csr = file.tensor("f/1").unwrap();
    assert_eq!(
        csr.layout(),
        Layout::Csr {
            nnz: 3,
            index_type: ElementType::Int64
        }
    );
    // Unsorted coordinates are sorted row-major with their values.
    assert_eq!(
        i64s(
            csr.buffer(hurray::descriptor::BufferRole::Pointers)
                .unwrap()
        ),
        [0, 2, 2, 3]
    );
    assert_eq!(
        i64s(csr.buffer(hurray::descriptor::BufferRole::Indices).unwrap()),
        [1, 3, 3]
    );
    let v: Vec<f32> = csr
        .buffer(hurray::descriptor::BufferRole::Values)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(v, [1.0, 2.0, 3.0]);

    let csr32 = file.tensor("f/2").unwrap();
    assert_eq!(
        csr32.layout(),
        Layout::Csr {
            nnz: 1,
            index_type: ElementType::Int32
        }
    );
    assert_eq!(
        i32s(
            csr32
                .buffer(hurray::descriptor::BufferRole::Pointers)
                .unwrap()
        ),
        [0, 1, 1]
    );
    assert_eq!(
        i32s(
            csr32
                .buffer(hurray::descriptor::BufferRole::Indices)
                .unwrap()
        ),
        [1]
    );

    let csc = file.tensor("f/3").unwrap();
    assert_eq!(
        csc.layout(),
        Layout::Csc {
            nnz: 3,
            index_type: ElementType::Int64
        }
    );
    // Columns: col 0 has row 2; col 1 has rows 0, 1.
    assert_eq!(
        i64s(
            csc.buffer(hurray::descriptor::BufferRole::Pointers)
                .unwrap()
        ),
        [0, 1, 3]
    );
    assert_eq!(
        i64s(csc.buffer(hurray::descriptor::BufferRole::Indices).unwrap()),
        [2, 0, 1]
    );
    let v = f64s(csc.buffer(hurray::descriptor::BufferRole::Values).unwrap());
    assert_eq!(v, [2.0, 1.0, 3.0]);

    let coo = file.tensor("f/4").unwrap();
    assert_eq!(
        coo.layout(),
        Layout::Coo {
            nnz: 2,
            index_type: ElementType::Int64,
            canonical: false
        }
    );
    assert_eq!(
        i64s(coo.buffer(hurray::descriptor::BufferRole::Indices).unwrap()),
        [1, 1, 0, 2]
    );

    // nnz = 0 is valid (ADR-007 section 6), with or without a 0 dimension;
    // a tensor with a 0 dimension has no bytes at all, pointers included.
    for (name, dims, rows) in [("f/5", [4, 5], 5), ("f/6", [0, 5], 0)] {
        let t = file.tensor(name).unwrap();
        assert_eq!(t.dims(), shape(&dims));
        assert_eq!(
            t.layout(),
            Layout::Csr {
                nnz: 0,
                index_type: ElementType::Int64
            }
        );
        assert_eq!(
            i64s(t.buffer(hurray::descriptor::BufferRole::Pointers).unwrap()),
            vec![0; rows]
        );
        assert!(
            t.buffer(hurray::descriptor::BufferRole::Indices)
                .unwrap()
                .is_empty()
        );
        assert!(
            t.buffer(hurray::descriptor::BufferRole::Values)
                .unwrap()
                .is_empty()
        );
    }

    let dense = file.tensor("f/7").unwrap();
    assert_eq!(
        dense.layout(),
        Layout::Csr {
            nnz: 2,
            index_type: ElementType::Int64
        }
    );
    assert_eq!(
        i64s(
            dense
                .buffer(hurray::descriptor::BufferRole::Pointers)
                .unwrap()
        ),
        [0, 1, 1, 2]
    );
    assert_eq!(
        i64s(
            dense
                .buffer(hurray::descriptor::BufferRole::Indices)
                .unwrap()
        ),
        [1, 0]
    );
}

#[test]
fn unsupported_sparse_encodings_name_the_op() {
    let e = lower_err_with(
        r#"#DCSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>
func.func @f() {
  %a = arith.constant sparse<[[0, 1]], [1.0]> : tensor<3x4xf32, #DCSR>
  return
}"#,
        constants_only(),
    );
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    assert!(e.to_string().contains("arith.constant"), "{e}");
}

#[test]
fn duplicate_csr_coordinates_are_an_error() {
    let e = lower_err_with(
        r#"#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
func.func @f() {
  %a = arith.constant sparse<[[0, 1], [0, 1]], [1.0, 2.0]> : tensor<3x4xf32, #CSR>
  return
}"#,
        constants_only(),
    );
    assert!(e.to_string().contains("duplicate"), "{e}");
}

const QUANT: &str = r#"
func.func @q(%in: tensor<?x4x!quant.uniform<i8:f32, 0.5:-3>>) {
  %t = "tosa.const"() {values = dense<[1, -2, 3, 4]> : tensor<4xi8>} : () -> tensor<4x!quant.uniform<i8:f32, 0.25:10>>
  %a = "tosa.const"() {values = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>} : () -> tensor<3x2x!quant.uniform<i8:f32:0, {0.5, 0.25:1, 2.0:-1}>>
  %s = "tosa.const"() {values = dense<[10, 20]> : tensor<2xui8>} : () -> tensor<2x!quant.uniform<u8:f32, 0.125>>
  %c = arith.constant dense<[5, 6]> : tensor<2xi8>
  %cq = quant.scast %c : tensor<2xi8> to tensor<2x!quant.uniform<i8:f32, 0.75:4>>
  %b = "tosa.const"() {values = dense<1> : tensor<2x4xi8>} : () -> tensor<2x4x!quant.uniform<i8:f32:{1:2}, {{2.0, 3.0}, {4.0, 5.0}}>>
  return
}
"#;

#[test]
fn quantized_constants_carry_quantization_descriptors() {
    let (_, file) = lower_text(QUANT);

    let t = file.tensor("q/0").unwrap();
    assert_eq!(t.element_type(), ElementType::Int8);
    let q = t.quantization().unwrap();
    assert_eq!(q.scheme, QuantizationScheme::PerTensor);
    assert_eq!(q.expressed_type, ElementType::Float32);
    assert_eq!(q.scale_type, ElementType::Float64);
    assert_eq!(q.zero_point_type, Some(ElementType::Int64));
    assert_eq!((q.storage_min, q.storage_max), (-128, 127));
    assert_eq!(
        f64s(t.buffer(hurray::descriptor::BufferRole::Scales).unwrap()),
        [0.25]
    );
    assert_eq!(
        i64s(
            t.buffer(hurray::descriptor::BufferRole::ZeroPoints)
                .unwrap()
        ),
        [10]
    );
    assert_eq!(
        t.buffer(hurray::descriptor::BufferRole::Values).unwrap(),
        [1, 0xFE, 3, 4]
    );

    let a = file.tensor("q/1").unwrap();
    let q = a.quantization().unwrap();
    assert_eq!(q.scheme, QuantizationScheme::PerAxis { axis: 0 });
    assert_eq!(
        f64s(a.buffer(hurray::descriptor::BufferRole::Scales).unwrap()),
        [0.5, 0.25, 2.0]
    );
    assert_eq!(
        i64s(
            a.buffer(hurray::descriptor::BufferRole::ZeroPoints)
                .unwrap()
        ),
        [0, 1, -1]
    );

    let s = file.tensor("q/2").unwrap();
    assert_eq!(s.element_type(), ElementType::UInt8);
    let q = s.quantization().unwrap();
    assert_eq!(q.zero_point_type, None, "symmetric: no zero points");
    assert_eq!((q.storage_min, q.storage_max), (0, 255));

    // An arith.constant reinterpreted by quant.scast is quantized too.
    let c = file.tensor("q/3").unwrap();
    assert_eq!(
        c.buffer(hurray::descriptor::BufferRole::Values).unwrap(),
        [5, 6]
    );
    assert_eq!(
        f64s(c.buffer(hurray::descriptor::BufferRole::Scales).unwrap()),
        [0.75]
    );
    assert_eq!(
        i64s(
            c.buffer(hurray::descriptor::BufferRole::ZeroPoints)
                .unwrap()
        ),
        [4]
    );

    let b = file.tensor("q/5").unwrap();
    let q = b.quantization().unwrap();
    assert_eq!(
        q.scheme,
        QuantizationScheme::PerBlock {
            axis: 1,
            block_size: 2
        }
    );
    assert_eq!(
        f64s(b.buffer(hurray::descriptor::BufferRole::Scales).unwrap()),
        [2.0, 3.0, 4.0, 5.0]
    );

    // A quantized signature: descriptor-only, quantization kept, dynamic dim kept.
    let input = file.tensor("q/arg0").unwrap();
    assert!(input.is_descriptor_only());
    assert_eq!(input.element_type(), ElementType::Int8);
    assert_eq!(
        input.quantization().unwrap().scheme,
        QuantizationScheme::PerTensor
    );
    assert_eq!(input.dims()[0], hurray::Dim::Dynamic);
}

#[test]
fn sparse_tensor_assemble_of_constants_is_one_sparse_tensor() {
    let (lowered, file) = lower_text_with(
        r#"
#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
#CSC = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 32 }>
#COO = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton), posWidth = 32, crdWidth = 32 }>
func.func @f(%rt: tensor<3xf64>) -> (tensor<2x3xf64, #CSR>, tensor<2x3xf32, #COO>, tensor<3x2xi8, #CSC>, tensor<2x3xf64, #CSR>) {
  %pos = arith.constant dense<[0, 2, 3]> : tensor<3xindex>
  %crd = arith.constant dense<[0, 2, 1]> : tensor<3xindex>
  %val = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64>
  %t = sparse_tensor.assemble (%pos, %crd), %val : (tensor<3xindex>, tensor<3xindex>), tensor<3xf64> to tensor<2x3xf64, #CSR>
  %cpos = arith.constant dense<[0, 2]> : tensor<2xi32>
  %ccrd = arith.constant dense<[[0, 1], [1, 2]]> : tensor<2x2xi32>
  %cval = arith.constant dense<[5.0, 6.0]> : tensor<2xf32>
  %c = sparse_tensor.assemble (%cpos, %ccrd), %cval : (tensor<2xi32>, tensor<2x2xi32>), tensor<2xf32> to tensor<2x3xf32, #COO>
  %spos = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %scrd = arith.constant dense<[2]> : tensor<1xi32>
  %sval = arith.constant dense<[7]> : tensor<1xi8>
  %s = sparse_tensor.assemble (%spos, %scrd), %sval {hurray.name = "csc"} : (tensor<3xi32>, tensor<1xi32>), tensor<1xi8> to tensor<3x2xi8, #CSC>
  %r = sparse_tensor.assemble (%pos, %crd), %rt : (tensor<3xindex>, tensor<3xindex>), tensor<3xf64> to tensor<2x3xf64, #CSR>
  return %t, %c, %s, %r : tensor<2x3xf64, #CSR>, tensor<2x3xf32, #COO>, tensor<3x2xi8, #CSC>, tensor<2x3xf64, #CSR>
}"#,
        constants_only(),
    );
    // The position / coordinate / value constants are not tensors of their own.
    let names: Vec<_> = lowered
        .tensors
        .iter()
        .map(|t| t.descriptor.name.as_str())
        .collect();
    assert_eq!(names, ["csc", "f/3", "f/7"] as [&str; 3]);
    let t = file.tensor("f/3").unwrap();
    assert_eq!(
        t.layout(),
        Layout::Csr {
            nnz: 3,
            index_type: ElementType::Int64
        }
    );
    assert_eq!(
        i64s(t.buffer(hurray::descriptor::BufferRole::Pointers).unwrap()),
        [0, 2, 3]
    );
    assert_eq!(
        i64s(t.buffer(hurray::descriptor::BufferRole::Indices).unwrap()),
        [0, 2, 1]
    );
    assert_eq!(
        f64s(t.buffer(hurray::descriptor::BufferRole::Values).unwrap()),
        [1.0, 2.0, 3.0]
    );
    let c = file.tensor("f/7").unwrap();
    assert_eq!(
        c.layout(),
        Layout::Coo {
            nnz: 2,
            index_type: ElementType::Int32,
            canonical: true
        }
    );
    assert_eq!(
        i32s(c.buffer(hurray::descriptor::BufferRole::Indices).unwrap()),
        [0, 1, 1, 2]
    );
    let s = file.tensor("csc").unwrap();
    assert_eq!(
        s.layout(),
        Layout::Csc {
            nnz: 1,
            index_type: ElementType::Int32
        }
    );
    assert_eq!(
        i32s(s.buffer(hurray::descriptor::BufferRole::Pointers).unwrap()),
        [0, 1, 1]
    );
    assert_eq!(
        s.buffer(hurray::descriptor::BufferRole::Values).unwrap(),
        [7]
    );
    // Assembled from a function argument: a run-time value, reported, not stored.
    assert!(file.get("f/12").is_none());
    assert!(
        lowered
            .skipped
            .iter()
            .any(|s| s.contains("run-time values")),
        "{:?}",
        lowered.skipped
    );
}

#[test]
fn inconsistent_assemble_is_an_error() {
    let e = lower_err_with(
        r#"#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
func.func @f() -> tensor<2x3xf64, #CSR> {
  %pos = arith.constant dense<[0, 3, 2]> : tensor<3xindex>
  %crd = arith.constant dense<[0, 2]> : tensor<2xindex>
  %val = arith.constant dense<[1.0, 2.0]> : tensor<2xf64>
  %t = sparse_tensor.assemble (%pos, %crd), %val : (tensor<3xindex>, tensor<2xindex>), tensor<2xf64> to tensor<2x3xf64, #CSR>
  return %t : tensor<2x3xf64, #CSR>
}"#,
        constants_only(),
    );
    assert!(e.to_string().contains("positions"), "{e}");
}
