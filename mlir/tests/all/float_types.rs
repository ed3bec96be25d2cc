//! The float types of format 1.2 (`f8E8M0FNU`, `f8E4M3FNUZ`, `f8E5M2FNUZ`,
//! `f8E3M4`, `f8E4M3`, `f8E4M3B11FNUZ`, and the 6-bit `f6E2M3FN`,
//! `f6E3M2FN`): dense constants holding their edge codes, splats, odd-length
//! 6-bit tensors (a partial last byte) and `dense_resource` blobs lower to
//! exactly the codes the types define, and to-mlir gives back the same
//! attributes, bit for bit, as text `mlir-opt-22` reads. Microscaling
//! quantization (E8M0 / E4M3FN scales, a tensor scale, offsets) survives the
//! hurray-style import.

use crate::common::{self, *};
use hurray::pack::{pack_codes, unpack_codes};
use hurray::{
    ElementType, File, Quantization, TensorDescriptor, Writer,
    descriptor::{BufferRole, QuantizationScheme},
    shape,
};
use hurray_mlir::{ImportStyle, LowerOptions, Mlir, import_file, lower_module};
use melior::ir::attribute::StringAttribute;
use melior::ir::operation::OperationLike;
use melior::ir::{Attribute, AttributeLike, BlockLike, Module};
use std::collections::BTreeMap;

/// One new type: MLIR literals, the code each is stored as, and the value
/// that code stands for (NaN: any NaN).
struct Case {
    ty: &'static str,
    values: &'static [(&'static str, u8, f64)],
    /// The codes packed LSB-first (6-bit types only; an 8-bit code is its byte).
    packed: Option<&'static [u8]>,
}

const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

/// Each type's 1, -2 (or 0.5 / 2 for the unsigned E8M0), largest finite,
/// smallest subnormal (E8M0 has none: its smallest value, 2^-127), NaN and
/// negative zero where the type has them, the infinities of the IEEE-like
/// ones, as literals MLIR parses (hex for NaN and infinity codes). The codes
/// come from the types' definitions (sign, exponent, mantissa from the most
/// significant bit, the bias), e.g. f8E4M3FNUZ -2.0 = 1 1001 000 = 0xC8 with
/// bias 8; all agree with ml_dtypes 0.7
/// (`np.array(values).astype(ml_dtypes.float8_e4m3fnuz).view(np.uint8)`),
/// NaN codes aside (ml_dtypes writes 0x78 / 0x7C for the IEEE-like ones' NaN;
/// 0x7F is one too).
const CASES: &[Case] = &[
    Case {
        // 2^(code - 127); no sign, no zero; 0xFF is NaN.
        ty: "f8E8M0FNU",
        values: &[
            ("1.0", 0x7F, 1.0),
            ("0.5", 0x7E, 0.5),
            ("2.0", 0x80, 2.0),
            ("1.7014118346046923e+38", 0xFE, 1.7014118346046923e38),
            ("5.877471754111438e-39", 0x00, 5.877471754111438e-39),
            ("0xFF", 0xFF, NAN),
        ],
        packed: None,
    },
    Case {
        // Bias 8, no infinities, no negative zero: 0x80 is the NaN.
        ty: "f8E4M3FNUZ",
        values: &[
            ("1.0", 0x40, 1.0),
            ("-2.0", 0xC8, -2.0),
            ("240.0", 0x7F, 240.0),
            ("-240.0", 0xFF, -240.0),
            ("9.765625e-04", 0x01, 9.765625e-04),
            ("0.0", 0x00, 0.0),
            ("0x80", 0x80, NAN),
        ],
        packed: None,
    },
    Case {
        // Bias 16, no infinities, no negative zero: 0x80 is the NaN.
        ty: "f8E5M2FNUZ",
        values: &[
            ("1.0", 0x40, 1.0),
            ("-2.0", 0xC4, -2.0),
            ("57344.0", 0x7F, 57344.0),
            ("-57344.0", 0xFF, -57344.0),
            ("7.62939453125e-06", 0x01, 7.62939453125e-06),
            ("0.0", 0x00, 0.0),
            ("0x80", 0x80, NAN),
        ],
        packed: None,
    },
    Case {
        // Bias 3, IEEE-like: exponent 111 holds the infinities and NaNs.
        ty: "f8E3M4",
        values: &[
            ("1.0", 0x30, 1.0),
            ("-2.0", 0xC0, -2.0),
            ("15.5", 0x6F, 15.5),
            ("1.5625e-02", 0x01, 0.015625),
            ("-0.0", 0x80, -0.0),
            ("0x70", 0x70, INF),
            ("0xF0", 0xF0, -INF),
            ("0x7F", 0x7F, NAN),
        ],
        packed: None,
    },
    Case {
        // Bias 7, IEEE-like: exponent 1111 holds the infinities and NaNs.
        ty: "f8E4M3",
        values: &[
            ("1.0", 0x38, 1.0),
            ("-2.0", 0xC0, -2.0),
            ("240.0", 0x77, 240.0),
            ("1.953125e-03", 0x01, 0.001953125),
            ("-0.0", 0x80, -0.0),
            ("0x78", 0x78, INF),
            ("0x7F", 0x7F, NAN),
        ],
        packed: None,
    },
    Case {
        // Bias 11, no infinities, no negative zero: 0x80 is the NaN.
        ty: "f8E4M3B11FNUZ",
        values: &[
            ("1.0", 0x58, 1.0),
            ("-2.0", 0xE0, -2.0),
            ("30.0", 0x7F, 30.0),
            ("1.220703125e-04", 0x01, 1.220703125e-04),
            ("0.0", 0x00, 0.0),
            ("0x80", 0x80, NAN),
        ],
        packed: None,
    },
    Case {
        // 6 bits: sign, 2 exponent bits (bias 1), 3 mantissa bits; finite only.
        ty: "f6E2M3FN",
        values: &[
            ("1.0", 0x08, 1.0),
            ("-2.0", 0x30, -2.0),
            ("7.5", 0x1F, 7.5),
            ("0.125", 0x01, 0.125),
            ("-0.0", 0x20, -0.0),
            ("-7.5", 0x3F, -7.5),
            ("0.0", 0x00, 0.0),
        ],
        // 7 x 6 = 42 bits: 6 bytes, the last holding 2 bits.
        packed: Some(&[0x08, 0xFC, 0x05, 0xE0, 0x0F, 0x00]),
    },
    Case {
        // 6 bits: sign, 3 exponent bits (bias 3), 2 mantissa bits; finite only.
        ty: "f6E3M2FN",
        values: &[
            ("1.0", 0x0C, 1.0),
            ("-2.0", 0x30, -2.0),
            ("28.0", 0x1F, 28.0),
            ("6.250000e-02", 0x01, 0.0625),
            ("-0.0", 0x20, -0.0),
            ("-28.0", 0x3F, -28.0),
            ("0.5", 0x08, 0.5),
        ],
        packed: Some(&[0x0C, 0xFC, 0x05, 0xE0, 0x8F, 0x00]),
    },
];

fn et(case: &Case) -> ElementType {
    ElementType::from_mlir_name(case.ty).unwrap_or_else(|| panic!("{} is in the schema", case.ty))
}

fn codes(case: &Case) -> Vec<u8> {
    case.values.iter().map(|v| v.1).collect()
}

fn literals(case: &Case) -> String {
    let l: Vec<&str> = case.values.iter().map(|v| v.0).collect();
    format!("[{}]", l.join(", "))
}

/// `ml_program.global`s: each type's edge values (`@<ty>`) and a splat of
/// 7 of its -2 (`@<ty>.splat`; E8M0: of 0.5).
fn edge_module() -> String {
    let mut text = String::new();
    for c in CASES {
        let n = c.values.len();
        let t = format!("tensor<{n}x{}>", c.ty);
        text += &format!(
            "ml_program.global private @{ty}(dense<{lits}> : {t}) : {t}\n",
            ty = c.ty,
            lits = literals(c)
        );
        let t7 = format!("tensor<7x{}>", c.ty);
        text += &format!(
            "ml_program.global private @{ty}.splat(dense<{one}> : {t7}) : {t7}\n",
            ty = c.ty,
            one = c.values[1].0
        );
    }
    text
}

/// The covering set of the ALL table: every type added in format 1.2 is here.
#[test]
fn the_cases_are_the_new_types_of_the_schema() {
    let covered: Vec<ElementType> = CASES.iter().map(et).collect();
    for t in ElementType::ALL {
        if t.to_wire() > ElementType::Complex128.to_wire() && t.float_format().is_some() {
            assert!(covered.contains(&t), "{} has no case", t.mlir_name());
        }
    }
    for c in CASES {
        assert_eq!(c.packed.is_some(), et(c).bits() == 6, "{}", c.ty);
    }
}

/// The pinned codes mean the values: the runtime's decoder (the schema's
/// `hurray_float` layouts) agrees with every entry of the table.
#[test]
fn the_pinned_codes_decode_to_their_values() {
    for c in CASES {
        for (lit, code, value) in c.values {
            let got = hurray::minifloat::to_f64(et(c), u64::from(*code)).unwrap();
            if value.is_nan() {
                assert!(got.is_nan(), "{} {lit}: {got}", c.ty);
            } else {
                assert_eq!(got.to_bits(), value.to_bits(), "{} {lit}", c.ty);
            }
        }
        if let Some(packed) = c.packed {
            assert_eq!(pack_codes(codes(c), 6), packed, "{}", c.ty);
        }
    }
}

#[test]
fn edge_values_and_splats_lower_to_the_exact_codes() {
    let (_, file) = lower_text_with(&edge_module(), constants_only());
    for c in CASES {
        let t = file.tensor(c.ty).unwrap();
        assert_eq!(t.element_type(), et(c));
        assert_eq!(t.dims(), shape(&[c.values.len() as u64]));
        let bytes = values(&file, c.ty);
        match c.packed {
            Some(packed) => assert_eq!(bytes, packed, "{}", c.ty),
            None => assert_eq!(bytes, codes(c), "{}", c.ty),
        }
        let n = c.values.len() as u64;
        let back: Vec<u8> = unpack_codes(&bytes, et(c).bits(), n).collect();
        assert_eq!(back, codes(c), "{}", c.ty);

        let splat = values(&file, &format!("{}.splat", c.ty));
        let code = c.values[1].1;
        assert_eq!(
            splat,
            pack_codes(std::iter::repeat_n(code, 7), et(c).bits()),
            "{} splat",
            c.ty
        );
    }
    // -2.0 in f6E2M3FN is 0x30: four codes are 0x30 | 0x30 << 6 | ... =
    // 0xC30C30, bytes 30 0C C3; seven end with 30 0C (code 6's 2 bits) 00.
    assert_eq!(
        values(&file, "f6E2M3FN.splat"),
        [0x30, 0x0C, 0xC3, 0x30, 0x0C, 0x03]
    );
}

/// Every code of each new type as a splat, and every code in one dense
/// constant: NaN, infinity, zero and subnormal codes come through as hex
/// literals, unchanged.
#[test]
fn every_code_of_every_new_type_lowers_unchanged() {
    let mut text = String::from("func.func @f() {\n");
    for c in CASES {
        let bits = et(c).bits();
        let all: Vec<String> = (0..1u16 << bits).map(|x| format!("0x{x:02X}")).collect();
        text += &format!(
            "  %{ty} = arith.constant {{hurray.name = \"{ty}\"}} dense<[{}]> : tensor<{}x{ty}>\n",
            all.join(", "),
            all.len(),
            ty = c.ty
        );
        for (lit, code, _) in c.values {
            text += &format!(
                "  %{ty}_{code} = arith.constant {{hurray.name = \"{ty}.{code}\"}} dense<{lit}> : tensor<5x{ty}>\n",
                ty = c.ty
            );
        }
    }
    text += "  return\n}\n";
    let (_, file) = lower_text_with(&text, constants_only());
    for c in CASES {
        let bits = et(c).bits();
        let all: Vec<u8> = (0..1u16 << bits).map(|x| x as u8).collect();
        assert_eq!(
            values(&file, c.ty),
            pack_codes(all.iter().copied(), bits),
            "{}",
            c.ty
        );
        for (lit, code, _) in c.values {
            assert_eq!(
                values(&file, &format!("{}.{code}", c.ty)),
                pack_codes(std::iter::repeat_n(*code, 5), bits),
                "{} splat of {lit}",
                c.ty
            );
        }
    }
}

/// A 6-bit code spans two bytes: tensors of 1..=9 elements (every position
/// within a 3-byte group, partial last bytes with their unused bits zero),
/// a splat longer than the lowering's 1 MiB write chunk, and
/// `dense_resource` blobs one byte per element and already packed.
#[test]
fn odd_length_six_bit_tensors_pack_with_a_partial_last_byte() {
    for c in CASES.iter().filter(|c| et(c).bits() == 6) {
        let mut text = String::from("func.func @f() {\n");
        for n in 1..=9usize {
            let lits: Vec<&str> = (0..n).map(|i| c.values[i % c.values.len()].0).collect();
            text += &format!(
                "  %a{n} = arith.constant {{hurray.name = \"n{n}\"}} dense<[{}]> : tensor<{n}x{ty}>\n",
                lits.join(", "),
                ty = c.ty
            );
        }
        // 1_500_001 codes: 1_125_001 bytes, past one 1 MiB chunk.
        text += &format!(
            "  %big = arith.constant {{hurray.name = \"big\"}} dense<{}> : tensor<1500001x{ty}>\n",
            c.values[1].0,
            ty = c.ty
        );
        // The 7 edge codes as MLIR holds them (one per byte, junk in the
        // high bits is ignored) and packed (junk in the last byte's unused
        // high 6 bits is cleared).
        let per_byte: String = codes(c)
            .iter()
            .map(|x| format!("{:02X}", x | 0xC0))
            .collect();
        let mut packed = c.packed.unwrap().to_vec();
        *packed.last_mut().unwrap() |= 0xFC;
        let packed: String = packed.iter().map(|x| format!("{x:02X}")).collect();
        text += &format!(
            "  %r1 = arith.constant {{hurray.name = \"per_byte\"}} dense_resource<per_byte> : tensor<7x{ty}>\n\
             \x20 %r2 = arith.constant {{hurray.name = \"packed\"}} dense_resource<packed> : tensor<7x{ty}>\n\
             \x20 return\n}}\n\
             {{-#\n  dialect_resources: {{ builtin: {{\n    per_byte: \"0x01000000{per_byte}\",\n    packed: \"0x01000000{packed}\"\n  }} }}\n#-}}\n",
            ty = c.ty
        );
        let (_, file) = lower_text_with(&text, constants_only());
        for n in 1..=9usize {
            let want: Vec<u8> = (0..n).map(|i| c.values[i % c.values.len()].1).collect();
            let got = values(&file, &format!("n{n}"));
            assert_eq!(got.len(), (n * 6).div_ceil(8), "{} n{n}", c.ty);
            assert_eq!(got, pack_codes(want.iter().copied(), 6), "{} n{n}", c.ty);
            let used = n * 6 % 8;
            if used != 0 {
                assert_eq!(got[got.len() - 1] >> used, 0, "{} n{n}: padding", c.ty);
            }
        }
        assert_eq!(values(&file, "n7"), c.packed.unwrap());
        // -2.0 is 0x30 in both 6-bit types: groups of 30 0C C3, then one code.
        let big = values(&file, "big");
        assert_eq!(big.len(), 1_125_001);
        assert!(
            big[..1_125_000]
                .chunks_exact(3)
                .all(|g| g == [0x30, 0x0C, 0xC3])
        );
        assert_eq!(big[1_125_000], 0x30);
        assert_eq!(values(&file, "per_byte"), c.packed.unwrap(), "{}", c.ty);
        assert_eq!(values(&file, "packed"), c.packed.unwrap(), "{}", c.ty);
    }
}

/// The `value` of every `ml_program.global` of `module`, by symbol.
fn global_values<'c>(module: &Module<'c>) -> BTreeMap<String, Attribute<'c>> {
    let body = module.body();
    std::iter::successors(body.first_operation(), |o| o.next_in_block())
        .filter(|o| o.name().as_string_ref().as_str() == Ok("ml_program.global"))
        .map(|o| {
            let name = StringAttribute::try_from(o.attribute("sym_name").unwrap()).unwrap();
            (name.value().to_owned(), o.attribute("value").unwrap())
        })
        .collect()
}

/// The bytes of blob `key` in the `dialect_resources` of printed IR (after
/// its 4-byte alignment prefix).
fn blob_hex<'t>(text: &'t str, key: &str) -> &'t str {
    let at = text
        .find(&format!("{key}: \"0x"))
        .unwrap_or_else(|| panic!("no blob {key}"));
    let hex = &text[at + key.len() + 5..];
    &hex[8..hex.find('"').unwrap()]
}

/// Runs `mlir-opt-22 ARGS` on `input` and returns its text output.
fn mlir_opt_run(input: &str, args: &[&str]) -> String {
    String::from_utf8(common::mlir_opt_run(input, args)).unwrap()
}

fn lower_to_bytes(module: &Module<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    lower_module(module, &mut out, LowerOptions::default()).unwrap();
    out
}

fn assert_same_tensors(a: &File, b: &File) {
    assert_eq!(a.len(), b.len());
    for t in a.tensors() {
        let u = b.tensor(t.name()).unwrap();
        assert_eq!(t.descriptor(), u.descriptor(), "{}", t.name());
        assert_eq!(t.buffers(), u.buffers(), "{}", t.name());
    }
}

/// from-mlir then to-mlir: the ml_program style gives back each constant's
/// attribute, equal in MLIR's sense (same type, same stored bits) to the
/// original; 6-bit values print as `dense<...>` (MLIR's one byte per
/// element), 8-bit ones as `dense_resource` blobs of the same bytes. The
/// hurray style reproduces the file byte for byte. `mlir-opt-22` parses
/// both, and what it prints lowers to the same tensors.
#[test]
fn to_mlir_gives_back_the_same_attributes_bit_for_bit() {
    let mlir = Mlir::new().unwrap();
    let source = mlir.parse_text(&edge_module()).unwrap();
    let first = lower_to_bytes(&source);
    let file = File::from_bytes(&first).unwrap();
    let originals = global_values(&source);
    assert_eq!(originals.len(), 2 * CASES.len());

    let text = hurray_mlir::import_to_text(&file, ImportStyle::MlProgram).unwrap();
    let imported = mlir.parse_text(&text).unwrap();
    let back = global_values(&imported);
    assert_eq!(back.len(), originals.len());
    for (name, original) in &originals {
        let value = back[name];
        let et = file.tensor(name).unwrap().element_type();
        let printed = value.to_string();
        let value = if et.bits() == 6 {
            assert!(printed.starts_with("dense<"), "{name}: {printed}");
            value
        } else {
            // The blob holds MLIR's raw storage: the same attribute as hex.
            assert!(printed.starts_with("dense_resource<"), "{name}: {printed}");
            let hex = blob_hex(&text, &format!("{name}.values"));
            let ty = original.r#type();
            Attribute::parse(mlir.context(), &format!("dense<\"0x{hex}\"> : {ty}")).unwrap()
        };
        assert_eq!(value, *original, "{name}: {value} vs {original}");
    }
    // Lowering the imported IR gives the same tensors, bit for bit.
    assert_same_tensors(
        &file,
        &File::from_bytes(&lower_to_bytes(&imported)).unwrap(),
    );

    // The hurray style: the very same file.
    let hurray_text = hurray_mlir::import_to_text(&file, ImportStyle::Hurray).unwrap();
    let module = Mlir::new().unwrap();
    let again = lower_to_bytes(&module.parse_text(&hurray_text).unwrap());
    assert!(again == first, "lower(import(lower(x))) == lower(x)");

    // mlir-opt-22 reads what to-mlir prints (the hurray dialect is loaded
    // at run time, so for mlir-opt its ops are unregistered), and its
    // output lowers to the same tensors.
    let opt = mlir_opt_run(&text, &[]);
    let fresh = Mlir::new().unwrap();
    let reparsed = lower_to_bytes(&fresh.parse_text(&opt).unwrap());
    assert_same_tensors(&file, &File::from_bytes(&reparsed).unwrap());
    let opt = mlir_opt_run(&hurray_text, &["--allow-unregistered-dialect"]);
    let fresh = Mlir::new().unwrap();
    let reparsed = lower_to_bytes(&fresh.parse_text(&opt).unwrap());
    assert!(reparsed == first, "through mlir-opt-22, the same file");
}

/// MXFP4 / MXFP6 / NVFP4-style quantization: E8M0 and E4M3FN scales, a
/// tensor scale and offsets come back from the hurray-style import exactly,
/// through in-memory IR, text and bytecode, and `mlir-opt-22` reads the text.
#[test]
fn microscaling_quantization_round_trips_through_the_hurray_style() {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    let block = |storage: ElementType, scale: ElementType| {
        let q = Quantization::new(
            QuantizationScheme::PerBlock {
                axis: 1,
                block_size: 4,
            },
            ElementType::Float32,
            scale,
        );
        TensorDescriptor::new(
            format!("{}.{}", storage.name(), scale.name()),
            storage,
            shape(&[2, 8]),
        )
        .with_quantization(q)
    };
    // 16 FP4 codes in 8 bytes, 4 scales (2 rows x 2 blocks).
    let mxfp4 = block(ElementType::Float4E2M1FN, ElementType::Float8E8M0FNU);
    let fp4 = [0x21, 0x43, 0x65, 0x87, 0xA9, 0xCB, 0xED, 0x0F];
    w.add_tensor(&mxfp4, &[&fp4, &[0x7F, 0x80, 0x7E, 0xFF], &[]])
        .unwrap();
    // 16 FP6 codes in 12 bytes.
    let mxfp6 = block(ElementType::Float6E3M2FN, ElementType::Float8E8M0FNU);
    let fp6 = pack_codes((0..16u8).map(|i| i * 4 + 3), 6);
    w.add_tensor(&mxfp6, &[&fp6, &[0x00, 0x01, 0xFE, 0x7F], &[]])
        .unwrap();
    // NVFP4: E4M3FN block scales and a tensor scale.
    let mut nvfp4 = block(ElementType::Float4E2M1FN, ElementType::Float8E4M3FN);
    if let Some(q) = nvfp4.quantization.as_mut() {
        q.tensor_scale = 0.1;
    }
    w.add_tensor(&nvfp4, &[&fp4, &[0x38, 0x7E, 0x01, 0xB8], &[]])
        .unwrap();
    // Offsets (GGUF Q4_1-style block minima), f16.
    let mut offs = block(ElementType::UInt4, ElementType::Float16);
    if let Some(q) = offs.quantization.as_mut() {
        q.offset_type = Some(ElementType::Float16);
        q.tensor_scale = -3.0e-300;
    }
    let f16s = |v: [u16; 4]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    w.add_tensor(
        &offs,
        &[
            &fp4,
            &f16s([0x3C00, 0x3800, 0x4000, 0x3555]),
            &[],
            &f16s([0xBC00, 0x0001, 0x7BFF, 0x8000]),
        ],
    )
    .unwrap();
    w.finish().unwrap();
    let file = File::from_bytes(&out).unwrap();
    assert_eq!(
        file.tensor("f4e2m1fn.f8e4m3fn")
            .unwrap()
            .quantization()
            .unwrap()
            .tensor_scale,
        0.1
    );

    let mlir = Mlir::new().unwrap();
    let module = import_file(&mlir, &file, ImportStyle::Hurray).unwrap();
    assert!(module.as_operation().verify());
    let text = module.as_operation().to_string();
    assert!(text.contains("scale_type = f8E8M0FNU"), "{text}");
    assert!(text.contains("offset_type = f16"), "{text}");
    assert!(text.contains("tensor_scale = "), "{text}");
    // Descriptors (quantization included) and buffers (scales, offsets) equal.
    let same = |bytes: Vec<u8>| assert_same_tensors(&file, &File::from_bytes(&bytes).unwrap());
    same(lower_to_bytes(&module));

    let text = hurray_mlir::import_to_text(&file, ImportStyle::Hurray).unwrap();
    let bytecode = hurray_mlir::import_to_bytecode(&file, ImportStyle::Hurray).unwrap();
    let fresh = Mlir::new().unwrap();
    same(lower_to_bytes(&fresh.parse_text(&text).unwrap()));
    let fresh = Mlir::new().unwrap();
    same(lower_to_bytes(&fresh.parse(&bytecode, "q.mlirbc").unwrap()));
    let opt = mlir_opt_run(&text, &["--allow-unregistered-dialect"]);
    let fresh = Mlir::new().unwrap();
    same(lower_to_bytes(&fresh.parse_text(&opt).unwrap()));
}

/// A dense constant with a sparse encoding leaves its zeros out; E8M0 has
/// no zero (code 0 is 2^-127), so that would drop values: refused. The
/// other new types' code 0 is zero.
#[test]
fn dense_to_sparse_of_a_type_without_zero_is_refused() {
    let csr =
        "#CSR = #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>\n";
    let e = lower_err_with(
        &format!(
            "{csr}func.func @f() {{\n  %a = arith.constant dense<[[5.877471754111438e-39, 1.0]]> : tensor<1x2xf8E8M0FNU, #CSR>\n  return\n}}"
        ),
        constants_only(),
    );
    assert!(
        matches!(e, hurray_mlir::Error::Unsupported { .. }) && e.to_string().contains("no zero"),
        "{e}"
    );
    let (_, file) = lower_text_with(
        &format!(
            "{csr}func.func @f() {{\n  %a = arith.constant dense<[[0.0, -2.0]]> : tensor<1x2xf8E4M3FNUZ, #CSR>\n  return\n}}"
        ),
        constants_only(),
    );
    let t = file.tensor("f/0").unwrap();
    assert_eq!(t.buffer(BufferRole::Values).unwrap(), [0xC8]);
}
