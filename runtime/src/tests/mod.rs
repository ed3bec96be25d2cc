//! Attack and corruption tests: every verification error, on files crafted
//! at the FlatBuffers level so that each carries exactly one defect.

use crate::format::{self, Footer};
use crate::generated::fb;
use crate::{Error, File};

/// A tensor entry with every field free, valid or not.
#[derive(Clone)]
struct Raw {
    name: &'static str,
    element_type: u8,
    shape: Vec<u64>,
    layout: RawLayout,
    buffers: Option<Vec<(u64, u64)>>,
    descriptor_only: bool,
    alignment: u64,
    quant: Option<RawQuant>,
}

#[derive(Clone)]
enum RawLayout {
    None,
    Strided(Vec<i64>),
    Csr {
        nnz: u64,
        index_type: u8,
    },
    /// A union tag this build does not know, with some table behind it.
    Unknown(u8),
}

#[derive(Clone, Copy)]
struct RawQuant {
    scheme: u8,
    scale_type: u8,
    axis: u32,
    scales: (u64, u64),
}

fn f32_tensor(name: &'static str, dims: &[u64], offset: u64) -> Raw {
    Raw {
        name,
        element_type: fb::ElementType::Float32.0,
        shape: dims.to_vec(),
        layout: RawLayout::None,
        buffers: Some(vec![(
            offset,
            dims.iter().fold(4u64, |a, d| a.wrapping_mul(*d)),
        )]),
        descriptor_only: false,
        alignment: 0,
        quant: None,
    }
}

/// A file with `data_len` bytes of data region and `tensors` in the header.
fn craft(
    tensors: &[Raw],
    data_len: u64,
    file_alignment: u64,
    metadata: &[(&str, &str)],
) -> Vec<u8> {
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let mut offs = Vec::new();
    for t in tensors {
        let name = fbb.create_string(t.name);
        let shape = fbb.create_vector(&t.shape);
        let (layout_type, layout) = match &t.layout {
            RawLayout::None => (fb::Layout::NONE, None),
            RawLayout::Strided(s) => {
                let strides = fbb.create_vector(s);
                let d = fb::Dense::create(
                    &mut fbb,
                    &fb::DenseArgs {
                        strides: Some(strides),
                    },
                );
                (fb::Layout::Dense, Some(d.as_union_value()))
            }
            RawLayout::Csr { nnz, index_type } => {
                let c = fb::Csr::create(
                    &mut fbb,
                    &fb::CsrArgs {
                        nnz: *nnz,
                        index_type: fb::ElementType(*index_type),
                    },
                );
                (fb::Layout::Csr, Some(c.as_union_value()))
            }
            RawLayout::Unknown(tag) => {
                let d = fb::Dense::create(&mut fbb, &fb::DenseArgs { strides: None });
                (fb::Layout(*tag), Some(d.as_union_value()))
            }
        };
        let buffers = t.buffers.as_ref().map(|b| {
            let v: Vec<fb::Buffer> = b.iter().map(|&(o, l)| fb::Buffer::new(o, l)).collect();
            fbb.create_vector(&v)
        });
        let quantization = t.quant.map(|q| {
            let scales = fb::Buffer::new(q.scales.0, q.scales.1);
            fb::Quantization::create(
                &mut fbb,
                &fb::QuantizationArgs {
                    scheme: fb::QuantizationScheme(q.scheme),
                    expressed_type: fb::ElementType::Float32,
                    scale_type: fb::ElementType(q.scale_type),
                    axis: q.axis,
                    scales: Some(&scales),
                    ..Default::default()
                },
            )
        });
        offs.push(fb::Tensor::create(
            &mut fbb,
            &fb::TensorArgs {
                name: Some(name),
                element_type: fb::ElementType(t.element_type),
                shape: Some(shape),
                layout_type,
                layout,
                buffers,
                descriptor_only: t.descriptor_only,
                alignment: t.alignment,
                quantization,
                metadata: None,
                checksums: None,
                digests: None,
            },
        ));
    }
    let tensors = fbb.create_vector(&offs);
    let kvs: Vec<_> = metadata
        .iter()
        .map(|(k, v)| {
            let key = fbb.create_string(k);
            let value = fbb.create_string(v);
            fb::KeyValue::create(
                &mut fbb,
                &fb::KeyValueArgs {
                    key: Some(key),
                    value: Some(value),
                },
            )
        })
        .collect();
    let metadata = (!kvs.is_empty()).then(|| fbb.create_vector(&kvs));
    let root = fb::Header::create(
        &mut fbb,
        &fb::HeaderArgs {
            tensors: Some(tensors),
            metadata,
            alignment: file_alignment,
            name_index: None,
            checksum_algorithm: fb::ChecksumAlgorithm::None,
            shard_index: None,
            digest_algorithm: fb::DigestAlgorithm::None,
            file_id: None,
        },
    );
    fb::finish_header_buffer(&mut fbb, root);
    format::frame(&vec![0xAB; data_len as usize], fbb.finished_data(), 0)
}

fn open(bytes: &[u8]) -> Result<File, Error> {
    File::from_bytes(bytes)
}

fn valid() -> Vec<u8> {
    craft(
        &[f32_tensor("a", &[4], 64), f32_tensor("b", &[2], 128)],
        128,
        64,
        &[],
    )
}

#[test]
fn crafted_baseline_is_valid() {
    let f = open(&valid()).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(f.tensor("b").unwrap().as_slice::<f32>().unwrap().len(), 2);
}

#[test]
fn too_short_and_bad_magic() {
    assert!(matches!(
        open(&[0; 10]),
        Err(Error::TooShort { len: 10, .. })
    ));
    let mut b = valid();
    b[1] = b'X';
    assert!(matches!(open(&b), Err(Error::BadMagic { .. })));
}

#[test]
fn unsupported_major_version_but_newer_minor_reads() {
    let mut b = valid();
    b[8] = 2;
    assert!(matches!(
        open(&b),
        Err(Error::UnsupportedVersion { major: 2, .. })
    ));
    let mut b = valid();
    b[10] = 7;
    assert_eq!(open(&b).unwrap().reader().version(), (1, 7));
}

#[test]
fn truncated_file_fails_on_the_footer() {
    let b = valid();
    assert!(matches!(
        open(&b[..b.len() - 5]),
        Err(Error::BadFooterMagic { .. })
    ));
}

#[test]
fn footer_pointing_outside() {
    let mut b = valid();
    let at = b.len() - 32;
    b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        open(&b),
        Err(Error::BadFooter {
            field: "header_offset",
            ..
        })
    ));
    let mut b = valid();
    b[at + 8..at + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(matches!(
        open(&b),
        Err(Error::BadFooter {
            field: "header_length",
            ..
        })
    ));
    let mut b = valid();
    b[at..at + 8].copy_from_slice(&8u64.to_le_bytes());
    assert!(matches!(
        open(&b),
        Err(Error::BadFooter {
            field: "header_offset",
            ..
        })
    ));
}

#[test]
fn garbage_header_is_rejected_by_the_verifier() {
    let mut b = valid();
    let at = b.len() - 32;
    let header_offset = format::read_u64(&b, at) as usize;
    // Point the root offset far outside the header.
    b[header_offset..header_offset + 4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    assert!(matches!(open(&b), Err(Error::InvalidHeader(_))));
    let mut b = valid();
    b[header_offset + 4] = b'X'; // file identifier
    assert!(matches!(open(&b), Err(Error::InvalidHeader(_))));
}

#[test]
fn unsorted_and_duplicate_names() {
    let b = craft(
        &[f32_tensor("b", &[1], 64), f32_tensor("a", &[1], 128)],
        128,
        64,
        &[],
    );
    assert!(matches!(open(&b), Err(Error::NamesNotSorted { .. })));
    let b = craft(
        &[f32_tensor("a", &[1], 64), f32_tensor("a", &[1], 128)],
        128,
        64,
        &[],
    );
    assert!(matches!(open(&b), Err(Error::NamesNotSorted { ref name, .. }) if name == "a"));
    let b = craft(&[f32_tensor("", &[1], 64)], 64, 64, &[]);
    assert!(matches!(open(&b), Err(Error::EmptyName { index: 0 })));
}

#[test]
fn unsorted_metadata() {
    let b = craft(&[], 0, 64, &[("z", "1"), ("a", "2")]);
    assert!(matches!(open(&b), Err(Error::MetadataNotSorted { .. })));
}

#[test]
fn unknown_element_type_and_layout() {
    let mut t = f32_tensor("t", &[1], 64);
    t.element_type = 200;
    let b = craft(&[t], 64, 64, &[]);
    match open(&b) {
        Err(Error::InvalidElementType {
            tensor,
            field,
            value,
            ..
        }) => {
            assert_eq!((tensor.as_str(), field, value), ("t", "element_type", 200));
        }
        other => panic!("{other:?}"),
    }
    let mut t = f32_tensor("t", &[1], 64);
    t.layout = RawLayout::Unknown(9);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::UnsupportedLayout { value: 9, .. })
    ));
}

#[test]
fn buffer_errors() {
    let mut t = f32_tensor("t", &[4], 64);
    t.buffers = Some(vec![(64, 12)]);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::BufferLength {
            expected: 16,
            found: 12,
            buffer: "values",
            ..
        })
    ));
    let t = f32_tensor("t", &[4], 64 + 64);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::BufferOutOfBounds { offset: 128, .. })
    ));
    let t = f32_tensor("t", &[4], 0);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::BufferOutOfBounds { offset: 0, .. })
    ));
    let mut t = f32_tensor("t", &[4], u64::MAX - 3);
    t.buffers = Some(vec![(u64::MAX - 3, 16)]);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::BufferOutOfBounds { .. })
    ));
    let t = f32_tensor("t", &[4], 72);
    assert!(matches!(
        open(&craft(&[t], 128, 64, &[])),
        Err(Error::BufferMisaligned {
            offset: 72,
            alignment: 64,
            ..
        })
    ));
    let t = f32_tensor("t", &[4], 128);
    assert!(open(&craft(&[t], 128, 128, &[])).is_ok());
    assert!(matches!(
        open(&craft(&[f32_tensor("t", &[4], 64)], 128, 128, &[])),
        Err(Error::BufferMisaligned { .. })
    ));
    let mut t = f32_tensor("t", &[4], 64);
    t.buffers = Some(vec![(64, 16), (128, 16)]);
    assert!(matches!(
        open(&craft(&[t], 128, 64, &[])),
        Err(Error::BufferCount {
            expected: 1,
            found: 2,
            ..
        })
    ));
}

#[test]
fn overlapping_buffers() {
    let b = craft(
        &[f32_tensor("a", &[32], 64), f32_tensor("b", &[4], 128)],
        256,
        64,
        &[],
    );
    match open(&b) {
        Err(Error::BuffersOverlap { first, second, .. }) => {
            assert_eq!((first.as_str(), second.as_str()), ("a", "b"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn zero_length_buffers_are_exempt_from_position_and_alignment() {
    // ADR-007 section 4: any offset, any alignment, never dereferenced.
    let mut t = f32_tensor("e", &[3, 0, 5], 0);
    t.buffers = Some(vec![(u64::MAX, 0)]);
    let f = open(&craft(&[t], 0, 64, &[])).unwrap();
    assert_eq!(
        f.tensor("e").unwrap().as_slice::<f32>().unwrap(),
        &[] as &[f32]
    );
}

#[test]
fn dynamic_dims_and_descriptor_only() {
    let mut t = f32_tensor("t", &[u64::MAX, 2], 64);
    t.buffers = Some(vec![(64, 0)]);
    assert!(matches!(
        open(&craft(&[t.clone()], 64, 64, &[])),
        Err(Error::DynamicWithData { dim: 0, .. })
    ));
    t.descriptor_only = true;
    assert!(matches!(
        open(&craft(&[t.clone()], 64, 64, &[])),
        Err(Error::DescriptorOnlyWithData { .. })
    ));
    t.buffers = None;
    assert!(open(&craft(&[t], 64, 64, &[])).is_ok());
}

#[test]
fn overflowing_shapes() {
    let mut t = f32_tensor("t", &[1 << 40, 1 << 40], 64);
    t.buffers = Some(vec![(64, 0)]);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::SizeOverflow { field: "shape", .. })
    ));
    // 2^62 f32 elements need 2^64 bytes: the byte size itself overflows.
    let mut t = f32_tensor("t", &[1 << 62], 64);
    t.buffers = Some(vec![(64, 0)]);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::SizeOverflow {
            field: "values",
            ..
        })
    ));
    // 3 * i64::MAX overflows u64 while computing the extent.
    let mut t = f32_tensor("t", &[4, 2], 64);
    t.layout = RawLayout::Strided(vec![i64::MAX, 1]);
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::SizeOverflow {
            field: "layout.strides",
            ..
        })
    ));
}

#[test]
fn invalid_strides() {
    let mut t = f32_tensor("t", &[2, 2], 64);
    t.layout = RawLayout::Strided(vec![1]);
    assert!(
        matches!(open(&craft(&[t.clone()], 64, 64, &[])), Err(Error::InvalidField { ref field, .. }) if field == "layout.strides")
    );
    t.layout = RawLayout::Strided(vec![-1, 1]);
    assert!(
        matches!(open(&craft(&[t], 64, 64, &[])), Err(Error::InvalidField { ref field, .. }) if field == "layout.strides[0]")
    );
}

mod layouts;
