//! Every float element type decoded by the runtime equals `ml_dtypes`'
//! decoding of the same code, for every code (NaN as NaN); and the sub-byte
//! floats safetensors names (F4, F6_E2M3, F6_E3M2), written by the
//! `safetensors` crate itself, convert to Hurray and back bit for bit.

mod common;

use common::{convert, python, run_python};
use hurray::{ElementType, File, elements::ElementClass, minifloat, pack};
use safetensors::tensor::{Dtype, TensorView};
use std::collections::BTreeMap;

#[test]
fn every_code_of_every_float_type_decodes_as_ml_dtypes_does() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let floats: Vec<ElementType> = ElementType::ALL
        .into_iter()
        .filter(|t| t.class() == ElementClass::Float && t.bits() <= 16)
        .collect();
    let names: Vec<String> = floats
        .iter()
        .map(|t| {
            let np = t.ml_dtypes_name().or(t.numpy_dtype()).unwrap();
            format!("({:?}, {np:?}, {})", t.name(), t.bits())
        })
        .collect();
    run_python(
        &py,
        dir.path(),
        &format!(
            r#"
import json, ml_dtypes, numpy as np
out = {{}}
for name, dtype, bits in [{}]:
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    codes = np.arange(1 << bits, dtype=np.uint16 if bits == 16 else np.uint8)
    values = codes.view(dt) if bits in (8, 16) else codes.astype(np.uint8).view(dt)
    out[name] = [float(v).hex() for v in values.astype(np.float64)]
json.dump(out, open("values.json", "w"))
"#,
            names.join(", ")
        ),
    );
    let values: BTreeMap<String, Vec<String>> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("values.json")).unwrap())
            .unwrap();
    let mut checked = 0;
    for t in floats {
        let want = &values[t.name()];
        assert_eq!(want.len(), 1 << t.bits(), "{}", t.name());
        for (code, hex) in want.iter().enumerate() {
            let got = minifloat::to_f64(t, code as u64).unwrap();
            let want = parse_hex_float(hex);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{} code {code:#x}: runtime {got} ml_dtypes {want}",
                t.name()
            );
            checked += 1;
        }
    }
    // f16, bf16, 8 fp8 types, 2 fp6, fp4: 2 * 65536 + 8 * 256 + 2 * 64 + 16.
    assert_eq!(checked, 2 * 65536 + 8 * 256 + 2 * 64 + 16);
}

/// Python's `float.hex()` form (`0x1.8p+3`, `-0x0.0p+0`, `inf`, `nan`).
fn parse_hex_float(s: &str) -> f64 {
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let magnitude = match s {
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => {
            let s = s.strip_prefix("0x").unwrap();
            let (mantissa, exp) = s.split_once('p').unwrap();
            let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
            let mut m = u64::from_str_radix(int, 16).unwrap() as f64;
            for (i, c) in frac.chars().enumerate() {
                m += f64::from(c.to_digit(16).unwrap()) / 16f64.powi(i as i32 + 1);
            }
            m * 2f64.powi(exp.parse().unwrap())
        }
    };
    if negative { -magnitude } else { magnitude }
}

#[test]
fn sub_byte_floats_round_trip_through_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    // Odd counts where safetensors allows them: 4 six-bit codes are 3 bytes.
    let cases = [
        ("fp4", Dtype::F4, ElementType::Float4E2M1FN, 6usize),
        ("fp6a", Dtype::F6_E2M3, ElementType::Float6E2M3FN, 8),
        ("fp6b", Dtype::F6_E3M2, ElementType::Float6E3M2FN, 4),
    ];
    let codes: BTreeMap<&str, Vec<u8>> = cases
        .iter()
        .map(|&(name, _, t, n)| {
            let mask = (1u16 << t.bits()) - 1;
            let c = (0..n).map(|i| ((i * 37 + 5) as u16 & mask) as u8).collect();
            (name, c)
        })
        .collect();
    let packed: BTreeMap<&str, Vec<u8>> = cases
        .iter()
        .map(|&(name, _, t, _)| {
            (
                name,
                pack::pack_codes(codes[name].iter().copied(), t.bits()),
            )
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> = cases
        .iter()
        .map(|&(name, dtype, _, n)| {
            let view = TensorView::new(dtype, vec![n], &packed[name]).unwrap();
            (name.to_owned(), view)
        })
        .collect();
    let original = dir.path().join("sub.safetensors");
    safetensors::serialize_to_file(views, None, &original).unwrap();
    let mid = dir.path().join("sub.hurray");
    let back = dir.path().join("back.safetensors");
    convert(&original, &mid);
    convert(&mid, &back);
    let file = File::open(&mid).unwrap();
    for &(name, _, t, n) in &cases {
        let tensor = file.tensor(name).unwrap();
        assert_eq!(
            (tensor.element_type(), tensor.shape().to_wire()),
            (t, vec![n as u64])
        );
        let got: Vec<u8> = tensor.packed().unwrap().iter().map(|c| c as u8).collect();
        assert_eq!(got, codes[name], "{name}: codes");
    }
    // The same tensors (the crate orders its output by dtype, so compare them, not the files).
    let (a, b) = (
        std::fs::read(&original).unwrap(),
        std::fs::read(&back).unwrap(),
    );
    let (a, b) = (
        safetensors::SafeTensors::deserialize(&a).unwrap(),
        safetensors::SafeTensors::deserialize(&b).unwrap(),
    );
    for &(name, dtype, _, n) in &cases {
        let (x, y) = (a.tensor(name).unwrap(), b.tensor(name).unwrap());
        assert_eq!((y.dtype(), y.shape()), (dtype, &[n][..]), "{name}");
        assert_eq!(x.data(), y.data(), "{name}");
    }
}
