//! Every element type both ways, lowered from dense values, splats and empty
//! shapes.

use super::*;
use half::{bf16, f16};
use hurray_mlir::{Mlir, hurray_type, mlir_type};

/// The value literals and expected Hurray bytes of a 3-element tensor of `et`.
fn sample(et: ElementType) -> (&'static str, Vec<u8>) {
    let le = |v: &[u64], bytes: usize| -> Vec<u8> {
        v.iter()
            .flat_map(|x| x.to_le_bytes()[..bytes].to_vec())
            .collect()
    };
    match et.mlir_name() {
        "i1" => ("[true, false, true]", vec![0b101]),
        "i2" => ("[1, -2, -1]", vec![0b11_10_01]),
        "ui2" => ("[1, 2, 3]", vec![0b11_10_01]),
        "i4" => ("[1, -2, 7]", vec![0xE1, 0x07]),
        "ui4" => ("[1, 14, 7]", vec![0xE1, 0x07]),
        // Format 1.4: 3-, 5- and 6-bit codes, packed LSB-first across bytes.
        "i3" => ("[1, -2, 3]", vec![0xF1, 0x00]),
        "ui3" => ("[1, 6, 7]", vec![0xF1, 0x01]),
        "i5" => ("[1, -2, 15]", vec![0xC1, 0x3F]),
        "ui5" => ("[1, 30, 17]", vec![0xC1, 0x47]),
        "i6" => ("[1, -2, 31]", vec![0x81, 0xFF, 0x01]),
        "ui6" => ("[1, 62, 33]", vec![0x81, 0x1F, 0x02]),
        "i8" => ("[1, -2, 127]", vec![1, 0xFE, 127]),
        "ui8" => ("[1, 254, 255]", vec![1, 254, 255]),
        "i16" => ("[1, -2, 300]", le(&[1, (-2i64) as u64, 300], 2)),
        "ui16" => ("[1, 65534, 300]", le(&[1, 65534, 300], 2)),
        "i32" => ("[1, -2, 70000]", le(&[1, (-2i64) as u64, 70000], 4)),
        "ui32" => ("[1, 4294967294, 70000]", le(&[1, 4294967294, 70000], 4)),
        "i64" => (
            "[1, -2, 5000000000]",
            le(&[1, (-2i64) as u64, 5000000000], 8),
        ),
        "ui64" => (
            "[1, 18446744073709551614, 5000000000]",
            le(&[1, u64::MAX - 1, 5000000000], 8),
        ),
        "f16" => (
            "[1.5, -2.0, 0.25]",
            [1.5f32, -2.0, 0.25]
                .iter()
                .flat_map(|x| f16::from_f32(*x).to_le_bytes())
                .collect(),
        ),
        "bf16" => (
            "[1.5, -2.0, 0.25]",
            [1.5f32, -2.0, 0.25]
                .iter()
                .flat_map(|x| bf16::from_f32(*x).to_le_bytes())
                .collect(),
        ),
        "f32" => (
            "[1.5, -2.0, 0.25]",
            [1.5f32, -2.0, 0.25]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        "f64" => (
            "[1.5, -2.0, 0.25]",
            [1.5f64, -2.0, 0.25]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        "f8E4M3FN" => ("[1.5, -2.0, 0.5]", vec![0x3C, 0xC0, 0x30]),
        "f8E5M2" => ("[1.5, -2.0, 0.5]", vec![0x3E, 0xC0, 0x38]),
        // e2m1: 1.5 = 0b0011, -2.0 = 0b1100, 0.5 = 0b0001, packed LSB-first.
        "f4E2M1FN" => ("[1.5, -2.0, 0.5]", vec![0xC3, 0x01]),
        // Format 1.2 (codes checked against ml_dtypes; edge codes in float_types.rs).
        // e8m0: 2^(code - 127), no sign.
        "f8E8M0FNU" => ("[1.0, 0.5, 4.0]", vec![0x7F, 0x7E, 0x81]),
        "f8E4M3FNUZ" => ("[1.5, -2.0, 0.5]", vec![0x44, 0xC8, 0x38]),
        "f8E5M2FNUZ" => ("[1.5, -2.0, 0.5]", vec![0x42, 0xC4, 0x3C]),
        "f8E3M4" => ("[1.5, -2.0, 0.5]", vec![0x38, 0xC0, 0x20]),
        "f8E4M3" => ("[1.5, -2.0, 0.5]", vec![0x3C, 0xC0, 0x30]),
        "f8E4M3B11FNUZ" => ("[1.5, -2.0, 0.5]", vec![0x5C, 0xE0, 0x50]),
        // e2m3: codes 0x0C, 0x30, 0x04; e3m2: 0x0E, 0x30, 0x08; 18 bits
        // LSB-first in 3 bytes, the last one's high 6 bits zero.
        "f6E2M3FN" => ("[1.5, -2.0, 0.5]", vec![0x0C, 0x4C, 0x00]),
        "f6E3M2FN" => ("[1.5, -2.0, 0.5]", vec![0x0E, 0x8C, 0x00]),
        "complex<f32>" => (
            "[(1.0, 2.0), (3.0, -4.0), (0.5, 0.0)]",
            [1.0f32, 2.0, 3.0, -4.0, 0.5, 0.0]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        "complex<f64>" => (
            "[(1.0, 2.0), (3.0, -4.0), (0.5, 0.0)]",
            [1.0f64, 2.0, 3.0, -4.0, 0.5, 0.0]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        other => panic!("add a sample for the new schema element type {other}"),
    }
}

#[test]
fn every_schema_element_type_maps_both_ways() {
    let mlir = Mlir::new().unwrap();
    for et in ElementType::ALL {
        let ty = mlir_type(mlir.context(), et)
            .unwrap_or_else(|| panic!("{} does not parse as an MLIR type", et.mlir_name()));
        assert_eq!(hurray_type(ty), Some(et), "{ty}");
    }
}

#[test]
fn every_element_type_lowers_dense_values_exactly() {
    let mut text = String::from("func.func @f() {\n");
    for et in ElementType::ALL {
        let (lit, _) = sample(et);
        text += &format!(
            "  %c{v} = arith.constant dense<{lit}> : tensor<3x{t}>\n",
            v = et.to_wire(),
            t = et.mlir_name()
        );
    }
    text += "  return\n}\n";
    let (lowered, file) = lower_text_with(&text, constants_only());
    assert_eq!(lowered.tensors.len(), ElementType::ALL.len());
    for (i, et) in ElementType::ALL.into_iter().enumerate() {
        let name = format!("f/{i}");
        let t = file.tensor(&name).unwrap();
        assert_eq!(t.element_type(), et, "{name}");
        assert_eq!(t.dims(), shape(&[3]));
        assert_eq!(values(&file, &name), sample(et).1, "{}", et.mlir_name());
    }
}

#[test]
fn every_element_type_lowers_splats_and_empty_shapes() {
    let mut text = String::from("func.func @f() {\n");
    for et in ElementType::ALL {
        let one = match et.mlir_name() {
            "i1" => "true",
            t if t.starts_with("complex") => "(1.0, 0.0)",
            t if t.starts_with('f') || t == "bf16" => "1.0",
            _ => "1",
        };
        let t = et.mlir_name();
        text += &format!(
            "  %s{v} = arith.constant dense<{one}> : tensor<5x3x{t}>\n",
            v = et.to_wire()
        );
        text += &format!(
            "  %e{v} = arith.constant dense<{one}> : tensor<3x0x5x{t}>\n",
            v = et.to_wire()
        );
        text += &format!(
            "  %z{v} = arith.constant dense<[]> : tensor<0x{t}>\n",
            v = et.to_wire()
        );
    }
    text += "  return\n}\n";
    let (_, file) = lower_text_with(&text, constants_only());
    for (i, et) in ElementType::ALL.into_iter().enumerate() {
        let splat = file.tensor(&format!("f/{}", 3 * i)).unwrap();
        let empty = file.tensor(&format!("f/{}", 3 * i + 1)).unwrap();
        let zero = file.tensor(&format!("f/{}", 3 * i + 2)).unwrap();
        // A splat of 15 elements is expanded to all of them.
        let bytes = splat
            .buffer(hurray::descriptor::BufferRole::Values)
            .unwrap();
        assert_eq!(
            bytes.len() as u64,
            hurray::elements::packed_len(15, et.bits()).unwrap()
        );
        let (_, one_bytes) = sample(et);
        match et.bits() {
            1 => assert_eq!(bytes, [0xFF, 0x7F]),
            2..=7 => {
                // The code of 1 (a 3-, 5- or 6-bit code spans bytes: 15
                // 6-bit codes are 90 bits).
                let code = match et.mlir_name() {
                    "f4E2M1FN" => 0b0010,
                    "f6E2M3FN" => 0x08, // 0 01 000
                    "f6E3M2FN" => 0x0C, // 0 011 00
                    _ => 1,
                };
                let expect = hurray::pack::pack_codes(std::iter::repeat_n(code, 15), et.bits());
                assert_eq!(bytes, expect, "{}", et.mlir_name());
            }
            b => {
                let per = (b / 8) as usize;
                let first = &bytes[..per];
                assert!(bytes.chunks(per).all(|c| c == first), "{}", et.mlir_name());
                let _ = one_bytes;
            }
        }
        // ADR-007: empty shapes are valid empty tensors with 0-byte buffers.
        for (t, dims) in [(empty, vec![3, 0, 5]), (zero, vec![0])] {
            assert_eq!(t.dims(), shape(&dims));
            assert!(t.is_empty() && !t.is_descriptor_only());
            assert_eq!(
                t.buffer(hurray::descriptor::BufferRole::Values).unwrap(),
                &[] as &[u8]
            );
            assert_eq!(t.element_type(), et);
        }
    }
}

/// ADR-0007 through the runtime's `hurray::elements::element_count`: a 0 dimension
/// makes the tensor empty before anything is multiplied, so 2^40 x 2^40 x 0
/// is an empty tensor, not an overflow.
#[test]
fn an_empty_shape_whose_other_dimensions_overflow_is_an_empty_tensor() {
    let (lowered, file) = lower_text_with(
        "func.func @f() {\n %c = arith.constant dense<0.0> : \
         tensor<1099511627776x1099511627776x0xf32>\n return\n}",
        constants_only(),
    );
    let [t] = lowered.tensors.as_slice() else {
        panic!("{lowered:?}")
    };
    assert_eq!(t.bytes, 0);
    let big = 1u64 << 40;
    assert_eq!(t.descriptor.shape, shape(&[big, big, 0]));
    let v = file.tensor("f/0").unwrap();
    assert_eq!(v.dims(), shape(&[big, big, 0]));
    assert!(v.is_empty() && !v.is_descriptor_only());
    assert_eq!(
        v.buffer(hurray::descriptor::BufferRole::Values).unwrap(),
        &[] as &[u8]
    );
}

#[test]
fn large_splat_is_expanded_by_streaming() {
    let (_, file) = lower_text_with(
        "func.func @f() {\n %c = arith.constant dense<2.5> : tensor<1024x1025xf32>\n return\n}",
        constants_only(),
    );
    let v = file.tensor("f/0").unwrap();
    let s = v.as_slice::<f32>().unwrap();
    assert_eq!(s.len(), 1024 * 1025);
    assert!(s.iter().all(|x| *x == 2.5));
}
