//! Format 1.2's quantization additions, through the writer and the reader:
//! footer flag bit 0 is written exactly when a tensor scale or offsets are
//! used (so a file without them stays readable by a 1.1 reader), a reader
//! refuses such a file without the flag, and bad values are typed errors
//! naming the tensor and field. The dequantized values are checked against a
//! reference written here from the OCP MX and NVFP4 definitions.

use hurray::pack::pack_codes;
use hurray::{
    ElementType, Error, File, Quantization, TensorDescriptor, Writer,
    descriptor::{BufferRole, QuantizationScheme},
    format,
};

fn flags(bytes: &[u8]) -> u64 {
    let at = bytes.len() - 16;
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn write(desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out)?;
    w.add_tensor(desc, buffers)?;
    w.finish()?;
    Ok(out)
}

/// OCP MX v1.0: FP4 E2M1 magnitudes by code (table 5), E8M0 = 2^(e - 127), 0xff NaN.
fn mx_reference(fp4: u8, e8m0: u8) -> f32 {
    const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let v = E2M1[usize::from(fp4 & 7)];
    let v = if fp4 & 8 != 0 { -v } else { v };
    if e8m0 == 0xff {
        return f32::NAN;
    }
    (f64::from(v) * 2f64.powi(i32::from(e8m0) - 127)) as f32
}

fn mxfp4(rows: u64, codes: &[u8]) -> (TensorDescriptor, Vec<u8>) {
    let q = Quantization::new(
        QuantizationScheme::PerBlock {
            axis: 1,
            block_size: 32,
        },
        ElementType::BFloat16,
        ElementType::Float8E8M0FNU,
    );
    let d = TensorDescriptor::new("w", ElementType::Float4E2M1FN, hurray::shape(&[rows, 64]))
        .with_quantization(q);
    (d, pack_codes(codes.iter().copied(), 4))
}

#[test]
fn mxfp4_dequantizes_as_the_ocp_definition_and_needs_no_flag() {
    let codes: Vec<u8> = (0..128u32).map(|i| (i * 7 % 16) as u8).collect();
    let scales = [127u8, 0, 254, 0xff];
    let (d, values) = mxfp4(2, &codes);
    let bytes = write(&d, &[&values, &scales, &[]]).unwrap();
    // E8M0 scales alone change nothing a 1.1 reader would ignore: 1.1 refuses
    // the scale type by its own rule, so no flag is needed.
    assert_eq!(flags(&bytes), 0);
    let file = File::from_bytes(&bytes).unwrap();
    let got = file.tensor("w").unwrap().quantized().unwrap().dequantize();
    for (i, (&g, &c)) in got.iter().zip(&codes).enumerate() {
        let want = mx_reference(c, scales[i / 32]);
        assert!(
            g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
            "element {i}: {g} != {want}"
        );
    }
    // The last block's scale is NaN: the whole block is NaN (OCP MX 6.3).
    assert!(got[96..].iter().all(|v| v.is_nan()));
}

#[test]
fn nvfp4_two_level_scaling_sets_the_flag_and_matches_its_definition() {
    // NVFP4: FP4 codes, one E4M3FN scale per 16, one f32 per tensor:
    // x = fp4 * e4m3 * global (each factor exact, one rounding to f32 at the end).
    let codes: Vec<u8> = (0..32u8).map(|i| i % 16).collect();
    let block_scales = [0x38u8, 0x7e]; // 1.0, 448.0
    let global = 1.0f32 / 2688.0; // a typical amax / (6 * 448)
    let mut q = Quantization::new(
        QuantizationScheme::PerBlock {
            axis: 0,
            block_size: 16,
        },
        ElementType::Float32,
        ElementType::Float8E4M3FN,
    );
    q.tensor_scale = f64::from(global);
    let d = TensorDescriptor::new("nv", ElementType::Float4E2M1FN, hurray::shape(&[32]))
        .with_quantization(q);
    let values = pack_codes(codes.iter().copied(), 4);
    let bytes = write(&d, &[&values, &block_scales, &[]]).unwrap();
    assert_eq!(flags(&bytes), format::FLAG_EXTENDED_QUANTIZATION);
    let file = File::from_bytes(&bytes).unwrap();
    let got = file.tensor("nv").unwrap().quantized().unwrap().dequantize();
    for (i, &c) in codes.iter().enumerate() {
        let block = if i < 16 { 1.0 } else { 448.0 };
        let fp4 = f64::from(mx_reference(c, 127));
        let want = (fp4 * block * f64::from(global)) as f32;
        assert_eq!(got[i].to_bits(), want.to_bits(), "element {i}");
    }

    // The same file with the flag cleared is refused, naming tensor and field.
    let mut cleared = bytes.clone();
    let at = cleared.len() - 16;
    cleared[at] = 0;
    match File::from_bytes(&cleared) {
        Err(Error::InvalidField { tensor, field, .. }) => {
            assert_eq!(
                (tensor.as_str(), field.as_str()),
                ("nv", "quantization.tensor_scale")
            );
        }
        other => panic!("expected InvalidField, got {other:?}"),
    }
}

#[test]
fn offsets_are_a_buffer_after_the_zero_points() {
    let mut q = Quantization::new(
        QuantizationScheme::PerBlock {
            axis: 0,
            block_size: 2,
        },
        ElementType::Float32,
        ElementType::Float32,
    );
    q.offset_type = Some(ElementType::Float32);
    let d =
        TensorDescriptor::new("q", ElementType::UInt8, hurray::shape(&[4])).with_quantization(q);
    let plan = d.buffer_plan().unwrap();
    let roles: Vec<BufferRole> = plan.buffers().iter().map(|b| b.0).collect();
    assert_eq!(
        roles,
        [
            BufferRole::Values,
            BufferRole::Scales,
            BufferRole::ZeroPoints,
            BufferRole::Offsets
        ]
    );
    let scales = hurray::as_bytes(&[0.5f32, 2.0]).to_vec();
    let offsets = hurray::as_bytes(&[-1.0f32, 10.0]).to_vec();
    let bytes = write(&d, &[&[0, 1, 2, 3], &scales, &[], &offsets]).unwrap();
    assert_eq!(flags(&bytes), format::FLAG_EXTENDED_QUANTIZATION);
    let file = File::from_bytes(&bytes).unwrap();
    let t = file.tensor("q").unwrap();
    assert_eq!(t.buffer(BufferRole::Offsets).unwrap(), &offsets[..]);
    assert_eq!(
        t.quantized().unwrap().dequantize(),
        [-1.0, -0.5, 14.0, 16.0]
    );
    // A tensor without offsets has no such buffer at all.
    let plain = TensorDescriptor::new("p", ElementType::Float32, hurray::shape(&[1]));
    let bytes = write(&plain, &[&[0; 4]]).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    assert_eq!(file.tensor("p").unwrap().buffer(BufferRole::Offsets), None);
    assert_eq!(
        flags(&bytes),
        0,
        "a 1.2 file without 1.2 quantization has no flag"
    );
}

#[test]
fn bad_tensor_scales_and_offset_types_are_typed_errors() {
    let base = || {
        Quantization::new(
            QuantizationScheme::PerTensor,
            ElementType::Float32,
            ElementType::Float32,
        )
    };
    let mut q = base();
    q.tensor_scale = f64::NAN;
    let d = TensorDescriptor::new("t", ElementType::Int8, hurray::shape(&[2])).with_quantization(q);
    match d.buffer_plan() {
        Err(Error::InvalidField { tensor, field, .. }) => {
            assert_eq!(
                (tensor.as_str(), field.as_str()),
                ("t", "quantization.tensor_scale")
            );
        }
        other => panic!("{other:?}"),
    }
    let mut q = base();
    q.offset_type = Some(ElementType::Int8);
    let d = TensorDescriptor::new("t", ElementType::Int8, hurray::shape(&[2])).with_quantization(q);
    match d.buffer_plan() {
        Err(Error::InvalidElementType { tensor, field, .. }) => {
            assert_eq!((tensor.as_str(), field), ("t", "quantization.offset_type"));
        }
        other => panic!("{other:?}"),
    }
    // A scale type outside the list (an 8-bit float that is no block scale).
    let mut q = base();
    q.scale_type = ElementType::Float8E5M2;
    let d = TensorDescriptor::new("t", ElementType::Int8, hurray::shape(&[2])).with_quantization(q);
    assert!(matches!(
        d.buffer_plan(),
        Err(Error::InvalidElementType {
            field: "quantization.scale_type",
            ..
        })
    ));
}

/// MXFP8 (OCP MX v1.0, E4M3 elements): an independent E4M3 decoder written
/// from the OCP FP8 table, times the block's E8M0 power of two.
#[test]
fn mxfp8_dequantizes_as_the_ocp_definition() {
    fn e4m3(code: u8) -> f64 {
        let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
        let (exp, man) = (i32::from((code >> 3) & 0xf), f64::from(code & 7));
        if code & 0x7f == 0x7f {
            return f64::NAN;
        }
        if exp == 0 {
            sign * man / 8.0 * 2f64.powi(-6)
        } else {
            sign * (1.0 + man / 8.0) * 2f64.powi(exp - 7)
        }
    }
    let codes: Vec<u8> = (0..=255u8).collect();
    let scales = [127u8, 120, 135, 1, 200, 60, 127, 254];
    let q = Quantization::new(
        QuantizationScheme::PerBlock {
            axis: 0,
            block_size: 32,
        },
        ElementType::Float32,
        ElementType::Float8E8M0FNU,
    );
    let d = TensorDescriptor::new("mx8", ElementType::Float8E4M3FN, hurray::shape(&[256]))
        .with_quantization(q);
    let bytes = write(&d, &[&codes, &scales, &[]]).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let got = file
        .tensor("mx8")
        .unwrap()
        .quantized()
        .unwrap()
        .dequantize();
    for (i, &c) in codes.iter().enumerate() {
        let want = (e4m3(c) * 2f64.powi(i32::from(scales[i / 32]) - 127)) as f32;
        assert!(
            got[i].to_bits() == want.to_bits() || (got[i].is_nan() && want.is_nan()),
            "code {c:#x}: {} != {want}",
            got[i]
        );
    }
}

/// Per-buffer checksums (ADR-0009): written by default in the writer's one
/// pass, checked only on demand, a flipped byte reported with the tensor,
/// the buffer and both values.
#[test]
fn checksums_are_written_by_default_and_catch_a_flipped_byte() {
    use hurray::integrity::ChecksumAlgorithm;
    let mut q = Quantization::new(
        QuantizationScheme::PerTensor,
        ElementType::Float32,
        ElementType::Float32,
    );
    q.zero_point_type = Some(ElementType::Int8);
    let quantized =
        TensorDescriptor::new("q", ElementType::Int8, hurray::shape(&[4])).with_quantization(q);
    let empty = TensorDescriptor::new("e", ElementType::Float32, hurray::shape(&[3, 0]));
    let signature = TensorDescriptor::new("s", ElementType::Float32, vec![hurray::Dim::Dynamic])
        .into_descriptor_only();
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.add_tensor(&quantized, &[&[1, 2, 3, 4], &2.0f32.to_le_bytes(), &[7]])
        .unwrap();
    w.add_tensor(&empty, &[&[]]).unwrap();
    w.add_tensor(&signature, &[]).unwrap();
    assert!(
        w.set_checksums(None).is_err(),
        "too late: tensors are written"
    );
    w.finish().unwrap();

    let file = File::from_bytes(&out).unwrap();
    let crc = |b: &[u8]| ChecksumAlgorithm::Crc32c.of(b);
    let q = file.tensor("q").unwrap();
    assert_eq!(
        q.checksums().unwrap(),
        [
            (BufferRole::Values, crc(&[1, 2, 3, 4])),
            (BufferRole::Scales, crc(&2.0f32.to_le_bytes())),
            (BufferRole::ZeroPoints, crc(&[7])),
        ]
    );
    assert!(q.verify_checksum().unwrap());
    assert_eq!(
        file.tensor("e").unwrap().checksums().unwrap(),
        [(BufferRole::Values, 0)]
    );
    assert_eq!(file.tensor("s").unwrap().checksums(), None);
    assert!(!file.tensor("s").unwrap().verify_checksum().unwrap());

    // Flip one bit of the scale: opening still succeeds (it reads no data),
    // verifying names the tensor, the buffer and both checksums.
    let at = q.buffer_range(BufferRole::Scales).unwrap().0 as usize;
    let mut bad = out.clone();
    bad[at] ^= 1;
    let file = File::from_bytes(&bad).unwrap();
    match file.tensor("q").unwrap().verify_checksum() {
        Err(Error::ChecksumMismatch {
            tensor,
            buffer,
            expected,
            found,
            ..
        }) => {
            assert_eq!((tensor.as_str(), buffer), ("q", "scales"));
            assert_eq!(expected, crc(&2.0f32.to_le_bytes()));
            let mut flipped = 2.0f32.to_le_bytes();
            flipped[0] ^= 1;
            assert_eq!(found, crc(&flipped));
        }
        other => panic!("expected ChecksumMismatch, got {other:?}"),
    }
}

#[test]
fn checksums_can_be_turned_off() {
    let d = TensorDescriptor::new("x", ElementType::UInt8, hurray::shape(&[2]));
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.set_checksums(None).unwrap();
    w.add_tensor(&d, &[&[1, 2]]).unwrap();
    w.finish().unwrap();
    let file = File::from_bytes(&out).unwrap();
    assert_eq!(file.tensor("x").unwrap().checksums(), None);
    assert!(!file.tensor("x").unwrap().verify_checksum().unwrap());
}

/// `File::verify_checksums` over a map checks every tensor on several
/// threads, each a run of the file: a flipped byte anywhere is named. A
/// buffer of 8 MiB or more is checksummed beside its writes, on a thread
/// of its own: what it records is the CRC-32C of its bytes all the same.
#[test]
#[cfg_attr(miri, ignore = "maps a file, and 9 MiB of CRC under Miri is too slow")]
fn verify_checksums_of_a_map_names_any_flipped_tensor() {
    use hurray::integrity::ChecksumAlgorithm;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.hurray");
    let sizes: Vec<usize> = (0..24)
        .map(|i| if i == 7 { 9 << 20 } else { 1000 + i * 4096 })
        .collect();
    let data: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect();
    let mut w = Writer::create(&path).unwrap();
    for (i, bytes) in data.iter().enumerate() {
        let desc = TensorDescriptor::new(
            format!("t{i:02}"),
            ElementType::UInt8,
            hurray::shape(&[bytes.len() as u64]),
        );
        w.add_tensor(&desc, &[bytes]).unwrap();
    }
    w.finish().unwrap();
    let file = File::open(&path).unwrap();
    assert!(file.verify_checksums().unwrap());
    let big = file.tensor("t07").unwrap();
    let crc = ChecksumAlgorithm::Crc32c.of(&data[7]);
    assert_eq!(big.checksums().unwrap(), [(BufferRole::Values, crc)]);
    let original = std::fs::read(&path).unwrap();
    for name in ["t00", "t07", "t13", "t23"] {
        let at = file
            .tensor(name)
            .unwrap()
            .buffer_range(BufferRole::Values)
            .unwrap()
            .0;
        let mut bad = original.clone();
        bad[at as usize + 5] ^= 0x40;
        let bad_path = dir.path().join(format!("bad-{name}.hurray"));
        std::fs::write(&bad_path, &bad).unwrap();
        for opened in [
            File::open(&bad_path).unwrap(),
            File::from_bytes(&bad).unwrap(),
        ] {
            match opened.verify_checksums() {
                Err(Error::ChecksumMismatch { tensor, .. }) => assert_eq!(tensor, name),
                other => panic!("{name}: expected ChecksumMismatch, got {other:?}"),
            }
        }
    }
}

/// Drops `path`'s pages from the page cache, so reading it in goes to the disk.
fn drop_cached(path: &std::path::Path) {
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: posix_fadvise only advises about the open descriptor.
    let rc = unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
            0,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    assert_eq!(rc, 0);
}

/// A mapped file is read in (several threads, 4 MiB at a time), then
/// checked on several threads: tensors larger than a chunk, small ones side
/// by side, an empty one. It passes cold and warm, and a flipped byte
/// anywhere is the mismatch of the tensor it is in, cold.
#[test]
fn a_mapped_file_is_read_in_then_verified() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.hurray");
    let mut w = Writer::create(&path).unwrap();
    let mut ranges = Vec::new();
    let big = |i: usize| (9 << 20) + 4096 * i + 3;
    for i in 0..3 {
        let bytes: Vec<u8> = (0..big(i)).map(|k| (k * 7 + i) as u8).collect();
        let d = TensorDescriptor::new(
            format!("big.{i}"),
            ElementType::UInt8,
            hurray::shape(&[bytes.len() as u64]),
        );
        w.add_tensor(&d, &[&bytes]).unwrap();
    }
    for i in 0..50 {
        let d = TensorDescriptor::new(
            format!("small.{i:02}"),
            ElementType::UInt8,
            hurray::shape(&[100 + i]),
        );
        w.add_tensor(&d, &[&vec![i as u8; 100 + i as usize]])
            .unwrap();
    }
    let d = TensorDescriptor::new("empty", ElementType::Float32, hurray::shape(&[0]));
    w.add_tensor(&d, &[&[]]).unwrap();
    w.finish().unwrap();
    let good = std::fs::read(&path).unwrap();
    {
        let file = File::open(&path).unwrap();
        for name in ["big.1", "small.07", "big.2"] {
            let (at, len) = file
                .tensor(name)
                .unwrap()
                .buffer_range(BufferRole::Values)
                .unwrap();
            // The middle of a big tensor lies in a later piece than its start.
            ranges.push((name, (at + len / 2) as usize));
        }
        drop_cached(&path);
        assert!(file.verify_checksums().unwrap(), "cold");
        assert!(file.verify_checksums().unwrap(), "warm");
    }
    for (name, at) in ranges {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        drop_cached(&path);
        let file = File::open(&path).unwrap();
        match file.verify_checksums() {
            Err(Error::ChecksumMismatch { tensor, .. }) => assert_eq!(tensor, name),
            other => panic!("{name}: expected ChecksumMismatch, got {other:?}"),
        }
    }
}
