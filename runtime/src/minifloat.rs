//! Decoding of the 8- and 4-bit floating-point element types (OCP formats),
//! for dequantization, printing and conversion. `half` covers f16 and bf16;
//! FP8 E5M2 is the top byte of an f16, so only E4M3FN and E2M1FN need code.

/// An OCP FP8 E4M3FN code: bias 7, no infinities, 0x7f/0xff are NaN.
pub fn f8e4m3fn_to_f64(code: u8) -> f64 {
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((code >> 3) & 0xf);
    let man = f64::from(code & 7);
    if exp == 0xf && code & 7 == 7 {
        return f64::NAN;
    }
    if exp == 0 {
        sign * man / 8.0 * pow2(-6)
    } else {
        sign * (1.0 + man / 8.0) * pow2(exp - 7)
    }
}

/// 2^`e`, exactly, for a normal exponent (`powi` may round, and does under Miri).
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// An OCP FP8 E5M2 code (IEEE-like: bias 15, infinities and NaNs).
pub fn f8e5m2_to_f64(code: u8) -> f64 {
    half::f16::from_bits(u16::from(code) << 8).to_f64()
}

/// An OCP FP4 E2M1FN code (the low 4 bits): no infinities, no NaN.
pub fn f4e2m1fn_to_f64(code: u8) -> f64 {
    const MAGNITUDE: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let m = MAGNITUDE[(code & 7) as usize];
    if code & 8 != 0 { -m } else { m }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes() {
        // Values from the OCP 8-bit floating point specification's tables.
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
    }
}
