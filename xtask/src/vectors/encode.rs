//! Element codes: how the generator spells elements. Every element is given
//! as a raw code (its bits, in a `u128`); [`encode`] turns codes into stored
//! bytes and [`decode`] into the JSON an expectation holds (bool, integer,
//! float or `"nan"`/`"inf"`/`"-inf"`, `[re, im]` for complex).

use anyhow::{Result, bail};
use hurray::{ElementType, elements::ElementClass, minifloat};
use serde_json::{Value, json};

/// The stored bytes of elements given as raw codes (the low `bits` bits of each).
pub(super) fn encode(et: ElementType, codes: &[u128]) -> Vec<u8> {
    let bits = et.bits();
    if bits < 8 {
        hurray::pack::pack_codes(codes.iter().map(|&c| c as u8), bits)
    } else {
        let n = (bits / 8) as usize;
        codes
            .iter()
            .flat_map(|c| c.to_le_bytes()[..n].to_vec())
            .collect()
    }
}

/// The raw code of an integer value of an integer (or bool) type.
pub(super) fn int_code(et: ElementType, v: i128) -> u128 {
    let bits = et.bits();
    let mask = if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    (v as u128) & mask
}

/// A float as an expectation spells it: a JSON number (exact), or
/// `"nan"`, `"inf"`, `"-inf"`, which JSON numbers cannot be.
pub(super) fn float_json(v: f64) -> Value {
    if v.is_nan() {
        json!("nan")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(v)
    }
}

/// A float type's value for `code`, as f64 (exact for every type: each
/// value of a narrower float format is a binary64): the runtime's one decoder,
/// [`hurray::minifloat::to_f64`], whose every code is checked against
/// `ml_dtypes` (cli/tests/element_types.rs).
fn float_value(et: ElementType, code: u128) -> Result<f64> {
    minifloat::to_f64(et, code as u64)
        .ok_or_else(|| anyhow::anyhow!("{} is not a float type", et.name()))
}

/// The JSON value of one element: bool, integer, float (or "nan"/"inf"/"-inf"),
/// or `[re, im]` for complex types.
fn decode(et: ElementType, code: u128) -> Result<Value> {
    let bits = et.bits();
    Ok(match et.class() {
        ElementClass::Bool => json!(code != 0),
        ElementClass::SignedInt => {
            let shift = 128 - bits;
            json!(((code << shift) as i128 >> shift) as i64)
        }
        ElementClass::UnsignedInt => json!(code as u64),
        ElementClass::Float => float_json(float_value(et, code)?),
        ElementClass::Complex => {
            let half = bits / 2;
            let mask = (1u128 << half) - 1;
            let (re, im) = (code & mask, code >> half);
            match half {
                32 => json!([
                    float_json(f64::from(f32::from_bits(re as u32))),
                    float_json(f64::from(f32::from_bits(im as u32)))
                ]),
                64 => json!([
                    float_json(f64::from_bits(re as u64)),
                    float_json(f64::from_bits(im as u64))
                ]),
                _ => bail!("no decoder for complex type {}", et.name()),
            }
        }
    })
}

pub(super) fn decode_all(et: ElementType, codes: &[u128]) -> Result<Value> {
    Ok(Value::Array(
        codes
            .iter()
            .map(|&c| decode(et, c))
            .collect::<Result<_>>()?,
    ))
}

/// Seven codes per element type that exercise its range: extremes, signs,
/// subnormals and special values. Derived from the class and bit width, with
/// a hand-picked set of codes per float format.
pub(super) fn sample_codes(et: ElementType) -> Result<Vec<u128>> {
    let bits = et.bits();
    Ok(match et.class() {
        ElementClass::Bool => vec![1, 0, 1, 1, 0, 0, 1],
        ElementClass::SignedInt => {
            let min = -(1i128 << (bits - 1));
            let max = (1i128 << (bits - 1)) - 1;
            [min, min + 1, -1, 0, 1, max - 1, max]
                .iter()
                .map(|&v| int_code(et, v))
                .collect()
        }
        ElementClass::UnsignedInt => {
            let max = (1u128 << bits) - 1;
            vec![0, 1, max / 2, max / 2 + 1, max - 1, max, 2 % (max + 1)]
        }
        ElementClass::Float => match et {
            // 0, smallest subnormal, 1.0, -1.5, largest finite, -0.0, a special.
            ElementType::Float16 => vec![0x0000, 0x0001, 0x3c00, 0xbe00, 0x7bff, 0x8000, 0x7c00],
            ElementType::BFloat16 => vec![0x0000, 0x0001, 0x3f80, 0xbfc0, 0x7f7f, 0x8000, 0xff80],
            ElementType::Float32 => [0.0f32, f32::from_bits(1), 1.0, -1.5, f32::MAX, -0.0, 0.1]
                .iter()
                .map(|v| u128::from(v.to_bits()))
                .collect(),
            ElementType::Float64 => [
                0.0f64,
                f64::from_bits(1),
                1.0,
                -1.5,
                f64::MAX,
                -0.0,
                f64::NAN,
            ]
            .iter()
            .map(|v| u128::from(v.to_bits()))
            .collect(),
            ElementType::Float8E4M3FN => vec![0x00, 0x01, 0x38, 0xbc, 0x7e, 0x80, 0x7f],
            ElementType::Float8E5M2 => vec![0x00, 0x01, 0x3c, 0xbe, 0x7b, 0x80, 0x7c],
            ElementType::Float4E2M1FN => vec![0x0, 0x1, 0x2, 0xb, 0x7, 0x8, 0x4],
            // E8M0 has no zero and no sign: 2^-127, 2^-126, 1, 2, 2^127, 0.5, NaN.
            ElementType::Float8E8M0FNU => vec![0x00, 0x01, 0x7f, 0x80, 0xfe, 0x7e, 0xff],
            // FNUZ types have no -0.0 (0x80 is their NaN): a small normal instead.
            ElementType::Float8E4M3FNUZ => vec![0x00, 0x01, 0x40, 0xc4, 0x7f, 0x08, 0x80],
            ElementType::Float8E5M2FNUZ => vec![0x00, 0x01, 0x40, 0xc2, 0x7f, 0x04, 0x80],
            ElementType::Float8E4M3B11FNUZ => vec![0x00, 0x01, 0x58, 0xdc, 0x7f, 0x08, 0x80],
            ElementType::Float8E3M4 => vec![0x00, 0x01, 0x30, 0xb8, 0x6f, 0x80, 0x70],
            ElementType::Float8E4M3 => vec![0x00, 0x01, 0x38, 0xbc, 0x77, 0x80, 0x78],
            // FP6 is finite-only: a power of two (2.0 / 0.25) as the last.
            ElementType::Float6E2M3FN => vec![0x00, 0x01, 0x08, 0x2c, 0x1f, 0x20, 0x10],
            ElementType::Float6E3M2FN => vec![0x00, 0x01, 0x0c, 0x2e, 0x1f, 0x20, 0x04],
            other => bail!(
                "no sample codes for float type {}: add them to xtask/src/vectors/encode.rs",
                other.name()
            ),
        },
        ElementClass::Complex => {
            let parts: [(f64, f64); 7] = [
                (0.0, 0.0),
                (1.0, -1.0),
                (1.5, 2.5),
                (-0.5, 0.25),
                (1e30, -1e-30),
                (-0.0, 3.0),
                (0.1, -0.1),
            ];
            let half = bits / 2;
            parts
                .iter()
                .map(|&(re, im)| {
                    let (re, im) = match half {
                        32 => (
                            u128::from((re as f32).to_bits()),
                            u128::from((im as f32).to_bits()),
                        ),
                        _ => (u128::from(re.to_bits()), u128::from(im.to_bits())),
                    };
                    re | (im << half)
                })
                .collect()
        }
    })
}

/// Lowercase hex of stored bytes, as buffer `hex` fields spell them.
pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The codes of f32 values (their bits).
pub(super) fn f32_codes(v: &[f32]) -> Vec<u128> {
    v.iter().map(|x| u128::from(x.to_bits())).collect()
}

/// The codes of f64 values (their bits).
pub(super) fn f64_codes(v: &[f64]) -> Vec<u128> {
    v.iter().map(|x| u128::from(x.to_bits())).collect()
}

/// The codes of integer values of `et`.
pub(super) fn int_codes(et: ElementType, v: &[i128]) -> Vec<u128> {
    v.iter().map(|&x| int_code(et, x)).collect()
}

/// Integer values as a JSON array.
pub(super) fn ints_json(v: &[i128]) -> Value {
    Value::Array(v.iter().map(|&x| json!(x as i64)).collect())
}
