//! The valid vectors: empty tensors (ADR-007), every element type, every
//! layout, every quantization scheme, descriptor-only tensors, metadata,
//! many tensors, alignment; and valid files this writer does not produce.

use super::Vector;
use super::build::{Spec, Stored, build, quantized, scaled, sparse};
use super::encode::{
    decode_all, encode, f32_codes, f64_codes, int_code, int_codes, ints_json, sample_codes,
};
use anyhow::{Context, Result};
use hurray::{
    Dim, ElementType, Layout, Quantization, TensorDescriptor, descriptor::QuantizationScheme, shape,
};
use serde_json::json;

/// The valid vectors, as the writer of this version writes them.
pub(super) fn vectors() -> Result<Vec<Vector>> {
    use ElementType as E;
    let mut out = vec![
        // --- ADR-007: empty tensors -------------------------------------------
        build(
            "empty_shape_0",
            "ADR-007: dense f32 tensor of shape [0]; its values buffer has length 0",
            None,
            &[],
            vec![Spec::dense("x", E::Float32, &[0], &[])?],
        )?,
        build(
            "empty_shape_3_0_5",
            "ADR-007: dense f32 tensor of shape [3, 0, 5]; 0 elements, 0 bytes",
            None,
            &[],
            vec![Spec::dense("x", E::Float32, &[3, 0, 5], &[])?],
        )?,
        build(
            "empty_csr_nnz_0",
            "ADR-007 section 6: CSR tensors with nnz = 0, one of shape [3, 4] (pointers [0, 0, 0, 0]) and one of shape [0, 4] (empty: every buffer, pointers included, is 0 bytes)",
            None,
            &[],
            vec![
                sparse(
                    "csr_0x4",
                    E::Float32,
                    &[0, 4],
                    Layout::Csr {
                        nnz: 0,
                        index_type: E::Int64,
                    },
                    &[("pointers", &[]), ("indices", &[])],
                    &[],
                )?,
                sparse(
                    "csr_3x4",
                    E::Float32,
                    &[3, 4],
                    Layout::Csr {
                        nnz: 0,
                        index_type: E::Int64,
                    },
                    &[("pointers", &[0, 0, 0, 0]), ("indices", &[])],
                    &[],
                )?,
            ],
        )?,
        build(
            "empty_sub_byte",
            "ADR-007 section 7: empty packed tensors (bool [3, 0], i4 [0], u2 [0, 7]) occupy 0 bytes",
            None,
            &[],
            vec![
                Spec::dense("bool_3x0", E::Bool, &[3, 0], &[])?,
                Spec::dense("i4_0", E::Int4, &[0], &[])?,
                Spec::dense("u2_0x7", E::UInt2, &[0, 7], &[])?,
            ],
        )?,
        build(
            "no_tensors",
            "a file with no tensor at all",
            None,
            &[],
            vec![],
        )?,
        build(
            "scalar",
            "rank-0 tensor (shape []): one element",
            None,
            &[],
            vec![Spec::dense("x", E::Float64, &[], &f64_codes(&[2.5]))?],
        )?,
    ];

    // --- every element type of the schema ----------------------------------
    for et in ElementType::ALL {
        let codes = sample_codes(et)?;
        out.push(build(
            &format!("dtype_{}", et.name()),
            &format!(
                "element type {} ({} bit{}): 7 elements of shape [7] covering its range{}",
                et.name(),
                et.bits(),
                if et.bits() == 1 { "" } else { "s" },
                if et.bits() < 8 {
                    ", packed LSB-first with a partial last byte"
                } else {
                    ""
                }
            ),
            None,
            &[],
            vec![Spec::dense("x", et, &[7], &codes)?],
        )?);
    }

    // --- layouts -------------------------------------------------------------
    out.push(build(
        "layout_dense",
        "dense row-major f32 [2, 3] and i16 [2, 2, 2]",
        None,
        &[],
        vec![
            Spec::dense(
                "a",
                E::Float32,
                &[2, 3],
                &f32_codes(&[1., 2., 3., 4., 5., 6.]),
            )?,
            Spec::dense(
                "b",
                E::Int16,
                &[2, 2, 2],
                &int_codes(E::Int16, &[-4, -3, -2, -1, 0, 1, 2, 3]),
            )?,
        ],
    )?);
    {
        // Column-major storage of the row-major values 1..6: strides [1, 2].
        let logical = [1.0f32, 2., 3., 4., 5., 6.];
        let stored = [1.0f32, 4., 2., 5., 3., 6.];
        let mut col = Spec::new(
            TensorDescriptor::new("column_major", E::Float32, shape(&[2, 3]))
                .with_layout(Layout::Strided(vec![1, 2])),
        );
        col.buffers.push(encode(E::Float32, &f32_codes(&stored)));
        col = col.with("values", decode_all(E::Float32, &f32_codes(&logical))?);
        // Broadcast rows: stride 0 on dimension 0, 2 stored elements.
        let mut bcast = Spec::new(
            TensorDescriptor::new("broadcast", E::Int32, shape(&[3, 2]))
                .with_layout(Layout::Strided(vec![0, 1])),
        );
        bcast
            .buffers
            .push(encode(E::Int32, &int_codes(E::Int32, &[7, -8])));
        bcast = bcast.with("values", ints_json(&[7, -8, 7, -8, 7, -8]));
        // Strided and empty: no bytes at all.
        let mut empty = Spec::new(
            TensorDescriptor::new("empty", E::Float32, shape(&[4, 0]))
                .with_layout(Layout::Strided(vec![1, 4])),
        );
        empty.buffers.push(Vec::new());
        empty = empty.with("values", json!([]));
        out.push(build(
            "layout_strided",
            "dense with explicit strides (in elements): column-major [2, 3] (strides [1, 2]), broadcast [3, 2] (strides [0, 1]), and empty [4, 0]",
            None,
            &[],
            vec![col, bcast, empty],
        )?);
    }
    out.push(build(
        "layout_coo",
        "COO [3, 4] f32 with nnz 3 (i64 coordinates, canonical) and [2, 2, 2] i8 with nnz 2 (i32 coordinates, not canonical)",
        None,
        &[],
        vec![
            sparse(
                "a",
                E::Float32,
                &[3, 4],
                Layout::Coo {
                    nnz: 3,
                    index_type: E::Int64,
                    canonical: true,
                },
                &[("indices", &[0, 1, 1, 3, 2, 0])],
                &f32_codes(&[1.5, -2.0, 3.25]),
            )?,
            sparse(
                "b",
                E::Int8,
                &[2, 2, 2],
                Layout::Coo {
                    nnz: 2,
                    index_type: E::Int32,
                    canonical: false,
                },
                &[("indices", &[1, 1, 1, 0, 0, 0])],
                &int_codes(E::Int8, &[-7, 9]),
            )?,
        ],
    )?);
    out.push(build(
        "layout_csr",
        "CSR [3, 4] f64 with nnz 4 and i32 pointers/indices (row 1 empty)",
        None,
        &[],
        vec![sparse(
            "m",
            E::Float64,
            &[3, 4],
            Layout::Csr {
                nnz: 4,
                index_type: E::Int32,
            },
            &[("pointers", &[0, 2, 2, 4]), ("indices", &[0, 3, 1, 2])],
            &f64_codes(&[1.0, 2.0, -3.0, 0.5]),
        )?],
    )?);
    out.push(build(
        "layout_csc",
        "CSC [3, 4] u8 with nnz 3 and i64 pointers/indices (columns 1 and 3 empty)",
        None,
        &[],
        vec![sparse(
            "m",
            E::UInt8,
            &[3, 4],
            Layout::Csc {
                nnz: 3,
                index_type: E::Int64,
            },
            &[("pointers", &[0, 2, 2, 3, 3]), ("indices", &[0, 2, 1])],
            &int_codes(E::UInt8, &[10, 200, 255]),
        )?],
    )?);
    out.push(build(
        "sparse_bool_values",
        "CSR [2, 9] with packed bool values (nnz 9, values in 2 bytes)",
        None,
        &[],
        vec![sparse(
            "m",
            E::Bool,
            &[2, 9],
            Layout::Csr {
                nnz: 9,
                index_type: E::Int32,
            },
            &[
                ("pointers", &[0, 4, 9]),
                ("indices", &[0, 2, 4, 8, 1, 3, 5, 6, 7]),
            ],
            &[1, 0, 1, 1, 0, 1, 1, 1, 1],
        )?],
    )?);

    // --- quantization --------------------------------------------------------
    out.push(build(
        "quant_per_tensor",
        "per-tensor quantization: i8 [4] stored, one f32 scale 0.5, one i8 zero point 1",
        None,
        &[],
        vec![quantized(
            "q",
            E::Int8,
            &[4],
            QuantizationScheme::PerTensor,
            &[-128, 0, 1, 127],
            &[0.5],
            Some((E::Int8, &[1])),
        )?],
    )?);
    out.push(build(
        "quant_per_axis",
        "per-axis quantization along axis 1 of u8 [2, 3] (3 scales, 3 u8 zero points) and symmetric along axis 0 of i8 [2, 3]",
        None,
        &[],
        vec![
            quantized(
                "asym",
                E::UInt8,
                &[2, 3],
                QuantizationScheme::PerAxis { axis: 1 },
                &[0, 128, 255, 1, 2, 3],
                &[0.5, 0.25, 2.0],
                Some((E::UInt8, &[0, 128, 255])),
            )?,
            quantized(
                "sym",
                E::Int8,
                &[2, 3],
                QuantizationScheme::PerAxis { axis: 0 },
                &[-1, 0, 1, -128, 64, 127],
                &[0.125, 4.0],
                None,
            )?,
        ],
    )?);
    out.push(build(
        "quant_empty",
        "ADR-007 sections 4 and 8: empty quantized tensors have 0-byte scales and zero points: per-axis i8 [0, 3] axis 0, per-axis i8 [3, 0] axis 1, per-block u4 [2, 0] axis 0 and per-tensor i8 [0]",
        None,
        &[],
        vec![
            quantized(
                "axis0_empty",
                E::Int8,
                &[0, 3],
                QuantizationScheme::PerAxis { axis: 0 },
                &[],
                &[],
                Some((E::Int8, &[])),
            )?,
            quantized(
                "axis1_empty",
                E::Int8,
                &[3, 0],
                QuantizationScheme::PerAxis { axis: 1 },
                &[],
                &[],
                None,
            )?,
            quantized(
                "per_block_empty",
                E::UInt4,
                &[2, 0],
                QuantizationScheme::PerBlock {
                    axis: 0,
                    block_size: 2,
                },
                &[],
                &[],
                Some((E::UInt4, &[])),
            )?,
            quantized(
                "per_tensor_empty",
                E::Int8,
                &[0],
                QuantizationScheme::PerTensor,
                &[],
                &[],
                Some((E::Int8, &[])),
            )?,
        ],
    )?);
    out.push(build(
        "quant_per_block",
        "per-block quantization: packed i4 [2, 6], axis 1, block 4 (2 x 2 scales, last block partial), and u4 [5] axis 0 block 2 with zero points",
        None,
        &[],
        vec![
            quantized(
                "i4",
                E::Int4,
                &[2, 6],
                QuantizationScheme::PerBlock {
                    axis: 1,
                    block_size: 4,
                },
                &[-8, -1, 0, 7, 1, 2, 3, 4, -5, -6, 6, 5],
                &[1.0, 0.5, 0.25, 2.0],
                None,
            )?,
            quantized(
                "u4",
                E::UInt4,
                &[5],
                QuantizationScheme::PerBlock {
                    axis: 0,
                    block_size: 2,
                },
                &[0, 15, 8, 9, 1],
                &[0.5, 1.0, 4.0],
                Some((E::UInt4, &[8, 8, 0])),
            )?,
        ],
    )?);

    // --- format 1.2: microscaling, tensor scales, offsets ----------------------
    {
        // FP4 codes 0..15 twice, then their negations: every E2M1 value.
        let fp4: Vec<u128> = (0..64u128).map(|i| i % 16).collect();
        let fp6: Vec<u128> = (0..40u128).map(|i| (i * 7) % 64).collect();
        let int8: Vec<u128> = (0..32i128)
            .map(|i| int_code(E::Int8, i * 9 - 128))
            .collect();
        let u4: Vec<u128> = (0..64u128).map(|i| (i * 5) % 16).collect();
        let f16 = |v: f32| u128::from(half::f16::from_f32(v).to_bits());
        out.push(build(
            "quant_microscaling",
            "format 1.2 block scales: MXFP4 f4e2m1fn [2, 64] with E8M0 scales 1, 2^-127, 2^127 and NaN (0xff: the block is NaN); MXFP6 f6e2m3fn [40] (last block partial); MXINT8 i8 [32] with tensor scale 2^-6; NVFP4 f4e2m1fn [32] with E4M3FN scales per 16 and an f32 tensor scale",
            None,
            &[],
            vec![
                scaled(
                    "mxfp4",
                    Stored { et: E::Float4E2M1FN, dims: &[2, 64], codes: &fp4.iter().chain(&fp4).copied().collect::<Vec<_>>() },
                    (1, 32),
                    (E::Float8E8M0FNU, &[127, 0, 254, 255]),
                    1.0,
                    None,
                )?,
                scaled(
                    "mxfp6",
                    Stored { et: E::Float6E2M3FN, dims: &[40], codes: &fp6 },
                    (0, 32),
                    (E::Float8E8M0FNU, &[126, 130]),
                    1.0,
                    None,
                )?,
                scaled(
                    "mxint8",
                    Stored { et: E::Int8, dims: &[32], codes: &int8 },
                    (0, 32),
                    (E::Float8E8M0FNU, &[128]),
                    1.0 / 64.0,
                    None,
                )?,
                scaled(
                    "nvfp4",
                    Stored { et: E::Float4E2M1FN, dims: &[32], codes: &fp4[..32] },
                    (0, 16),
                    (E::Float8E4M3FN, &[0x38, 0x7e]),
                    f64::from(0.012_345_678_f32),
                    None,
                )?,
            ],
        )?);
        out.push(build(
            "quant_offsets",
            "format 1.2 offsets (GGUF Q4_1's block minimum): u4 [64], per-block 32 along axis 0, f16 scales and f16 offsets; footer flag bit 0 set",
            None,
            &[],
            vec![scaled(
                "q4_1",
                Stored { et: E::UInt4, dims: &[64], codes: &u4 },
                (0, 32),
                (E::Float16, &[f16(0.5), f16(-0.125)]),
                1.0,
                Some((E::Float16, &[f16(-3.0), f16(0.0625)])),
            )?],
        )?);
    }

    // --- descriptor-only and dynamic shapes -----------------------------------
    {
        let dynamic = |name: &str, et, dims: Vec<Dim>| {
            Spec::new(TensorDescriptor::new(name, et, dims).into_descriptor_only())
        };
        let dq = Quantization {
            scheme: QuantizationScheme::PerAxis { axis: 0 },
            expressed_type: E::Float32,
            scale_type: E::Float16,
            zero_point_type: Some(E::Int8),
            storage_min: -127,
            storage_max: 127,
            tensor_scale: 1.0,
            offset_type: None,
            ..Default::default()
        };
        out.push(build(
            "descriptor_only",
            "descriptor-only tensors (no buffers at all): dynamic [?, 3] f32, [?, ?] i64 CSR, dynamic per-axis quantized i8 [?, 4], fully dynamic rank-1 bf16 [?], and a static f32 [2, 2] without data (not the same as a 0-byte buffer)",
            None,
            &[],
            vec![
                dynamic("batch", E::Float32, vec![Dim::Dynamic, Dim::Fixed(3)]),
                dynamic("csr", E::Float32, vec![Dim::Dynamic, Dim::Dynamic]).map_desc(|d| {
                    d.with_layout(Layout::Csr {
                        nnz: 0,
                        index_type: E::Int64,
                    })
                }),
                dynamic("quantized", E::Int8, vec![Dim::Dynamic, Dim::Fixed(4)])
                    .map_desc(|d| d.with_quantization(dq.clone())),
                dynamic("seq", E::BFloat16, vec![Dim::Dynamic]),
                dynamic("signature", E::Float32, shape(&[2, 2])),
            ],
        )?);
    }

    // --- metadata, many tensors, alignment -------------------------------------
    {
        let mut w = Spec::dense("weights", E::Float32, &[2], &f32_codes(&[0.5, -0.5]))?;
        w.desc = w
            .desc
            .with_metadata("origin", "layer1/kernel")
            .with_metadata("unit", "m/s²")
            .with_metadata("empty", "");
        let mut e = Spec::dense("empty", E::Float32, &[0], &[])?;
        e.desc = e
            .desc
            .with_metadata("note", "ADR-007: metadata on an empty tensor");
        out.push(build(
            "metadata",
            "file metadata (3 keys, one non-ASCII value, one empty value) and tensor metadata, sorted by key",
            None,
            &[
                ("created_by", "cargo xtask vectors"),
                ("license", "Apache-2.0"),
                ("ünïcode", "✓ ok"),
            ],
            vec![w, e],
        )?);
    }
    out.push(build(
        "multi_tensor",
        "7 tensors of mixed types and layouts whose names sort byte-wise (\"B\" < \"a\" < \"a.b\" < \"a_b\" < \"b\" < \"é\"; \"é\" is 0xC3 0xA9)",
        None,
        &[("purpose", "multi-tensor lookup")],
        vec![
            Spec::dense("é", E::Int32, &[1], &int_codes(E::Int32, &[42]))?,
            Spec::dense("b", E::UInt16, &[3], &int_codes(E::UInt16, &[1, 2, 65535]))?,
            Spec::dense("a_b", E::Bool, &[10], &[1, 1, 0, 0, 1, 0, 1, 0, 1, 1])?,
            Spec::dense("a.b", E::Float32, &[0, 2], &[])?,
            Spec::dense("a", E::Int4, &[3], &int_codes(E::Int4, &[-8, 7, 1]))?,
            Spec::dense("B", E::Float64, &[2], &f64_codes(&[1e-300, -1e300]))?,
            sparse(
                "c",
                E::Float32,
                &[2, 2],
                Layout::Csc {
                    nnz: 1,
                    index_type: E::Int32,
                },
                &[("pointers", &[0, 0, 1]), ("indices", &[1])],
                &f32_codes(&[9.0]),
            )?,
        ],
    )?);
    out.push(build(
        "alignment_4096",
        "file alignment 4096: every non-empty buffer starts on a 4096-byte boundary (two f32 tensors, one empty)",
        Some(4096),
        &[],
        vec![
            Spec::dense("a", E::Float32, &[3], &f32_codes(&[1.0, 2.0, 3.0]))?,
            Spec::dense("b", E::Float32, &[2], &f32_codes(&[4.0, 5.0]))?,
            Spec::dense("empty", E::Float32, &[0, 3], &[])?,
        ],
    )?);
    {
        let mut t = Spec::dense("wide", E::UInt8, &[3], &int_codes(E::UInt8, &[1, 2, 3]))?;
        t.desc = t.desc.with_alignment(256);
        out.push(build(
            "alignment_per_tensor",
            "a tensor asking for 256-byte alignment in a 64-aligned file, next to a default one",
            None,
            &[],
            vec![
                Spec::dense("narrow", E::UInt8, &[3], &int_codes(E::UInt8, &[4, 5, 6]))?,
                t,
            ],
        )?);
    }
    Ok(out)
}

/// Valid files a writer of this version does not produce, made by patching.
pub(super) fn patched_vectors(valid: &[Vector]) -> Result<Vec<Vector>> {
    let dense = valid
        .iter()
        .find(|v| v.name == "layout_dense")
        .context("no layout_dense")?;
    let mut bytes = dense.bytes.clone();
    bytes[10..12].copy_from_slice(&7u16.to_le_bytes());
    let mut json = dense.json.clone();
    json["version"] = json!([hurray::format::VERSION_MAJOR, 7]);
    Ok(vec![Vector {
        name: "future_minor_version".into(),
        description: "layout_dense with minor version 7 in the prefix: a reader accepts every minor version of its major".into(),
        bytes,
        json,
    }])
}
