//! Decoding of every binary floating-point element type from its stored code,
//! for dequantization, printing and conversion. One function serves them all:
//! the bit layout (exponent and mantissa widths, bias, special codes) comes
//! from the schema's `hurray_float` attribute through
//! [`ElementType::float_format`], so a new float type needs no code here.

use crate::generated::element_type::{FloatFormat, FloatSpecials};
use crate::{ElementType, elements::ElementClass};

/// The value of `code` (the low bits of a stored element) in format `f`,
/// exactly: every value of every Hurray float type is an f64.
pub fn decode(f: FloatFormat, code: u64) -> f64 {
    let (e_bits, m_bits) = (f.exponent_bits, f.mantissa_bits);
    if e_bits == 11 && m_bits == 52 {
        // binary64 itself: its subnormals lie below the range `pow2` covers.
        return f64::from_bits(code);
    }
    let man = code & ((1u64 << m_bits) - 1);
    let exp = (code >> m_bits) & ((1u64 << e_bits) - 1);
    let exp_max = (1u64 << e_bits) - 1;
    let man_max = (1u64 << m_bits) - 1;
    if f.specials == FloatSpecials::UnsignedPowerOfTwo {
        return if exp == exp_max {
            f64::NAN
        } else {
            pow2(exp as i32 - f.bias)
        };
    }
    let negative = (code >> (m_bits + e_bits)) & 1 == 1;
    match f.specials {
        FloatSpecials::Ieee if exp == exp_max => {
            return match (man, negative) {
                (0, false) => f64::INFINITY,
                (0, true) => f64::NEG_INFINITY,
                _ => f64::NAN,
            };
        }
        FloatSpecials::FiniteNan if exp == exp_max && man == man_max => return f64::NAN,
        FloatSpecials::FiniteNanUnsignedZero if negative && exp == 0 && man == 0 => {
            return f64::NAN;
        }
        _ => {}
    }
    // value = significand * 2^(exponent - bias - mantissa bits), with the
    // implicit leading 1 for normal codes; both factors and their product
    // are exact in f64 for every format of at most 32 bits.
    let magnitude = if exp == 0 {
        man as f64 * pow2(1 - f.bias - m_bits as i32)
    } else {
        (man | (1u64 << m_bits)) as f64 * pow2(exp as i32 - f.bias - m_bits as i32)
    };
    if negative { -magnitude } else { magnitude }
}

/// The value of a stored code of float type `t`; `None` when `t` is not a
/// float type.
pub fn to_f64(t: ElementType, code: u64) -> Option<f64> {
    (t.class() == ElementClass::Float)
        .then(|| t.float_format())
        .flatten()
        .map(|f| decode(f, code))
}

/// An OCP FP8 E4M3FN code: bias 7, no infinities, 0x7f/0xff are NaN.
pub fn f8e4m3fn_to_f64(code: u8) -> f64 {
    float(ElementType::Float8E4M3FN, code)
}

/// An OCP FP8 E5M2 code (IEEE-like: bias 15, infinities and NaNs).
pub fn f8e5m2_to_f64(code: u8) -> f64 {
    float(ElementType::Float8E5M2, code)
}

/// An OCP FP4 E2M1FN code (the low 4 bits): no infinities, no NaN.
pub fn f4e2m1fn_to_f64(code: u8) -> f64 {
    float(ElementType::Float4E2M1FN, code)
}

fn float(t: ElementType, code: u8) -> f64 {
    match t.float_format() {
        Some(f) => decode(f, u64::from(code)),
        None => f64::NAN,
    }
}

/// 2^`e`, exactly, for a normal exponent (`powi` may round, and does under Miri).
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(t: ElementType, code: u64) -> f64 {
        to_f64(t, code).unwrap()
    }

    #[test]
    fn known_codes() {
        // Values from the OCP 8-bit floating point and MX specifications' tables.
        assert_eq!(f8e4m3fn_to_f64(0x38), 1.0);
        assert_eq!(f8e4m3fn_to_f64(0x7e), 448.0);
        assert_eq!(f8e4m3fn_to_f64(0x01), 1.0 / 512.0);
        assert_eq!(f8e4m3fn_to_f64(0xb8), -1.0);
        assert!(f8e4m3fn_to_f64(0x7f).is_nan() && f8e4m3fn_to_f64(0xff).is_nan());
        assert_eq!(f8e5m2_to_f64(0x3c), 1.0);
        assert_eq!(f8e5m2_to_f64(0x7b), 57344.0);
        assert_eq!(f8e5m2_to_f64(0x7c), f64::INFINITY);
        assert_eq!(f4e2m1fn_to_f64(0x7), 6.0);
        assert_eq!(f4e2m1fn_to_f64(0x9), -0.5);
        assert_eq!(f4e2m1fn_to_f64(0x8), -0.0);
        use ElementType as E;
        // E8M0: 2^(code - 127); 0xff NaN; no zero.
        assert_eq!(v(E::Float8E8M0FNU, 127), 1.0);
        // (Exact powers of two: `powi` may round, and does under Miri.)
        assert_eq!(v(E::Float8E8M0FNU, 0), f64::from_bits((1023 - 127) << 52));
        assert_eq!(v(E::Float8E8M0FNU, 254), f64::from_bits((1023 + 127) << 52));
        assert!(v(E::Float8E8M0FNU, 255).is_nan());
        // FP6 E2M3: max 7.5, min subnormal 0.125; E3M2: max 28, min subnormal 0.0625.
        assert_eq!(v(E::Float6E2M3FN, 0x1f), 7.5);
        assert_eq!(v(E::Float6E2M3FN, 0x01), 0.125);
        assert_eq!(v(E::Float6E2M3FN, 0x3f), -7.5);
        assert_eq!(v(E::Float6E3M2FN, 0x1f), 28.0);
        assert_eq!(v(E::Float6E3M2FN, 0x01), 0.0625);
        // FNUZ: 0x80 is the NaN, no negative zero; max 240 (e4m3) and 57344 (e5m2).
        assert!(v(E::Float8E4M3FNUZ, 0x80).is_nan());
        assert_eq!(v(E::Float8E4M3FNUZ, 0x7f), 240.0);
        assert_eq!(v(E::Float8E5M2FNUZ, 0x7f), 57344.0);
        assert_eq!(v(E::Float8E4M3B11FNUZ, 0x7f), 30.0);
        assert!(v(E::Float8E4M3B11FNUZ, 0x80).is_nan());
        // IEEE-like E4M3 and E3M4: infinities at 0x78 and 0x70.
        assert_eq!(v(E::Float8E4M3, 0x78), f64::INFINITY);
        assert_eq!(v(E::Float8E4M3, 0x77), 240.0);
        assert_eq!(v(E::Float8E3M4, 0x70), f64::INFINITY);
        assert_eq!(v(E::Float8E3M4, 0x6f), 15.5);
        assert!(to_f64(E::Int8, 1).is_none());
    }

    #[test]
    fn wide_floats_match_the_standard_library() {
        use ElementType as E;
        for x in [
            0.0f32,
            -0.0,
            1.5,
            f32::MIN_POSITIVE / 8.0,
            f32::MAX,
            -3.25e-41,
        ] {
            let got = v(E::Float32, u64::from(x.to_bits()));
            assert_eq!(got.to_bits(), f64::from(x).to_bits());
        }
        assert_eq!(v(E::Float64, 5e-324f64.to_bits()), 5e-324);
        for bits in [0u16, 1, 0x3c00, 0x7bff, 0x8001, 0x7c00, 0xfc00] {
            let want = half::f16::from_bits(bits).to_f64();
            assert_eq!(v(E::Float16, u64::from(bits)), want);
            let want = half::bf16::from_bits(bits).to_f64();
            assert_eq!(v(E::BFloat16, u64::from(bits)), want);
        }
    }
}
