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

#[test]
fn sparse_structure_and_index_contents() {
    let csr = |ptrs: &[i64], idx: &[i64], nnz: u64| {
        let mut data = Vec::new();
        for v in ptrs.iter().chain(idx) {
            data.extend_from_slice(&v.to_le_bytes());
        }
        let t = Raw {
            name: "s",
            element_type: fb::ElementType::UInt8.0,
            shape: vec![2, 3],
            layout: RawLayout::Csr {
                nnz,
                index_type: fb::ElementType::Int64.0,
            },
            buffers: Some(vec![(64, 24), (128, nnz * 8), (192, nnz)]),
            descriptor_only: false,
            alignment: 0,
            quant: None,
        };
        let mut b = craft(&[t], 192, 64, &[]);
        b[64..88].copy_from_slice(&data[..24]);
        b[128..128 + idx.len() * 8].copy_from_slice(&data[24..]);
        b
    };
    let ok = csr(&[0, 1, 2], &[0, 2], 2);
    assert_eq!(
        open(&ok).unwrap().tensor("s").unwrap().csr().unwrap().nnz,
        2
    );
    let f = open(&csr(&[0, 2, 1], &[0, 2], 2)).unwrap();
    assert!(matches!(
        f.tensor("s").unwrap().csr(),
        Err(Error::InvalidSparseIndex {
            buffer: "pointers",
            position: 2,
            ..
        })
    ));
    let f = open(&csr(&[0, 1, 1], &[0, 2], 2)).unwrap();
    assert!(
        matches!(f.tensor("s").unwrap().csr(), Err(Error::InvalidSparseIndex { reason, .. }) if reason.contains("nnz"))
    );
    let f = open(&csr(&[0, 1, 2], &[0, 3], 2)).unwrap();
    assert!(matches!(
        f.tensor("s").unwrap().csr(),
        Err(Error::InvalidSparseIndex {
            buffer: "indices",
            value: 3,
            ..
        })
    ));
    let f = open(&csr(&[1, 1, 2], &[0, 1], 2)).unwrap();
    assert!(matches!(
        f.tensor("s").unwrap().csr(),
        Err(Error::InvalidSparseIndex { position: 0, .. })
    ));
    // nnz larger than the shape holds is a structural error at open.
    let mut t = f32_tensor("t", &[2, 2], 64);
    t.layout = RawLayout::Csr {
        nnz: 5,
        index_type: fb::ElementType::Int64.0,
    };
    assert!(
        matches!(open(&craft(&[t], 64, 64, &[])), Err(Error::InvalidField { ref field, .. }) if field == "layout.nnz")
    );
}

#[test]
fn quantization_errors() {
    let q = |scheme, scale_type, axis, scales| RawQuant {
        scheme,
        scale_type,
        axis,
        scales,
    };
    let mut t = f32_tensor("q", &[2, 3], 64);
    t.element_type = fb::ElementType::Int8.0;
    t.buffers = Some(vec![(64, 6)]);
    t.quant = Some(q(2, fb::ElementType::Float32.0, 1, (128, 12)));
    assert!(open(&craft(&[t.clone()], 128, 64, &[])).is_ok());
    t.quant = Some(q(2, fb::ElementType::Float32.0, 1, (128, 8)));
    assert!(matches!(
        open(&craft(&[t.clone()], 128, 64, &[])),
        Err(Error::BufferLength {
            buffer: "scales",
            expected: 12,
            ..
        })
    ));
    t.quant = Some(q(2, fb::ElementType::Float32.0, 2, (128, 12)));
    assert!(
        matches!(open(&craft(&[t.clone()], 128, 64, &[])), Err(Error::InvalidField { ref field, .. }) if field == "quantization.axis")
    );
    t.quant = Some(q(9, fb::ElementType::Float32.0, 1, (128, 12)));
    assert!(matches!(
        open(&craft(&[t.clone()], 128, 64, &[])),
        Err(Error::UnsupportedQuantization { value: 9, .. })
    ));
    t.quant = Some(q(1, fb::ElementType::Int8.0, 0, (128, 1)));
    assert!(matches!(
        open(&craft(&[t.clone()], 128, 64, &[])),
        Err(Error::InvalidElementType {
            field: "quantization.scale_type",
            ..
        })
    ));
    // Scales overlapping the values are caught like any other buffer.
    t.quant = Some(q(2, fb::ElementType::Float32.0, 1, (64, 12)));
    assert!(matches!(
        open(&craft(&[t], 128, 64, &[])),
        Err(Error::BuffersOverlap { .. })
    ));
}

#[test]
fn invalid_alignments() {
    assert!(matches!(
        open(&craft(&[], 0, 48, &[])),
        Err(Error::InvalidAlignment { value: 48, .. })
    ));
    let mut t = f32_tensor("t", &[1], 64);
    t.alignment = 96;
    assert!(matches!(
        open(&craft(&[t], 64, 64, &[])),
        Err(Error::InvalidAlignment { value: 96, .. })
    ));
}

#[test]
fn errors_name_tensor_field_and_value() {
    let mut t = f32_tensor("layer1.weight", &[4], 64);
    t.buffers = Some(vec![(64, 12)]);
    let msg = open(&craft(&[t], 64, 64, &[])).unwrap_err().to_string();
    assert_eq!(
        msg,
        "tensor \"layer1.weight\": buffer values is 12 bytes, expected 16"
    );
}

#[test]
fn header_shorter_than_a_flatbuffer_start() {
    // 64-byte prefix, then a footer claiming a 0-byte header at 64.
    let mut b = format::prefix().to_vec();
    b.extend_from_slice(
        &Footer {
            header_offset: 64,
            header_length: 0,
            flags: 0,
        }
        .encode(),
    );
    assert!(matches!(
        open(&b),
        Err(Error::BadFooter {
            field: "header_length",
            value: 0,
            ..
        })
    ));
}

#[test]
fn unknown_footer_flags_need_a_newer_reader() {
    let mut b = valid();
    let at = b.len() - 16;
    b[at] = 4; // bit 0 is 1.2's extended quantization, bit 1 1.3's index; bit 2 is unknown
    assert!(matches!(
        open(&b),
        Err(Error::BadFooter {
            field: "flags",
            value: 4,
            ..
        })
    ));
    // The index flag on a file without an index is refused, naming the field.
    b[at] = 2;
    let e = open(&b).unwrap_err();
    assert!(e.to_string().contains("shard_index = absent"), "{e}");
}

#[test]
fn empty_shapes_never_overflow() {
    // ADR-007: the 0 decides, even after dimensions whose product overflows.
    let mut t = f32_tensor("t", &[1 << 40, 1 << 40, 0], 0);
    t.buffers = Some(vec![(0, 0)]);
    let f = open(&craft(&[t.clone()], 0, 64, &[])).unwrap();
    assert_eq!(f.tensor("t").unwrap().element_count(), Some(0));
    t.layout = RawLayout::Strided(vec![i64::MAX, i64::MAX, 1]);
    assert!(open(&craft(&[t], 0, 64, &[])).is_ok());
}

#[test]
fn empty_csr_has_no_pointer_bytes() {
    let t = Raw {
        name: "s",
        element_type: fb::ElementType::Float32.0,
        shape: vec![3, 0],
        layout: RawLayout::Csr {
            nnz: 0,
            index_type: fb::ElementType::Int64.0,
        },
        buffers: Some(vec![(64, 32), (0, 0), (0, 0)]),
        descriptor_only: false,
        alignment: 0,
        quant: None,
    };
    assert!(matches!(
        open(&craft(std::slice::from_ref(&t), 64, 64, &[])),
        Err(Error::BufferLength {
            buffer: "pointers",
            expected: 0,
            found: 32,
            ..
        })
    ));
    let mut t = t;
    t.buffers = Some(vec![(0, 0); 3]);
    let f = open(&craft(&[t], 0, 64, &[])).unwrap();
    assert_eq!(f.tensor("s").unwrap().csr().unwrap().pointers.len(), 0);
}

#[test]
fn packed_view_refuses_strided_layouts() {
    let t = Raw {
        name: "t",
        element_type: fb::ElementType::UInt8.0,
        shape: vec![4],
        layout: RawLayout::Strided(vec![0]),
        buffers: Some(vec![(64, 1)]),
        descriptor_only: false,
        alignment: 0,
        quant: None,
    };
    let f = open(&craft(&[t], 64, 64, &[])).unwrap();
    assert!(matches!(
        f.tensor("t").unwrap().packed(),
        Err(Error::LayoutMismatch { .. })
    ));
}

#[test]
fn name_index_is_checked_and_only_a_hint() {
    use crate::{ElementType, TensorDescriptor, Writer, shape};
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    for i in 0..50 {
        w.add_tensor(
            &TensorDescriptor::new(format!("t{i}"), ElementType::UInt8, shape(&[1])),
            &[&[i as u8]],
        )
        .unwrap();
    }
    w.finish().unwrap();
    let f = File::from_bytes(&out).unwrap();
    // A reader over `out` in place (a `File` reads a copy of the header), so
    // the index's position in `out` can be found.
    let r = crate::Reader::new(&out).unwrap();
    let index = r.header().name_index().expect("the writer emits an index");
    assert_eq!(index.len(), 128);
    for i in 0..50 {
        assert_eq!(
            f.tensor(&format!("t{i}")).unwrap().data().unwrap(),
            &[i as u8]
        );
    }
    assert!(f.get("t50").is_none());
    // Locate the index vector in the header and corrupt it.
    let at = index.bytes().as_ptr() as usize - out.as_ptr() as usize;
    drop(f);
    let mut wiped = out.clone();
    wiped[at..at + 128 * 4].fill(0);
    // An empty index is sound: every look-up falls back to binary search.
    let f = File::from_bytes(&wiped).unwrap();
    assert_eq!(f.tensor("t42").unwrap().data().unwrap(), &[42]);
    // Entries all pointing at one wrong tensor: still the right answers.
    let mut wrong = out.clone();
    for s in 0..128 {
        wrong[at + 4 * s..at + 4 * s + 4].copy_from_slice(&1u32.to_le_bytes());
    }
    let f = File::from_bytes(&wrong).unwrap();
    assert_eq!(f.tensor("t17").unwrap().data().unwrap(), &[17]);
    // An entry past the tensor count is refused at open.
    let mut bad = out.clone();
    bad[at..at + 4].copy_from_slice(&51u32.to_le_bytes());
    assert!(
        matches!(open(&bad), Err(Error::InvalidField { ref field, .. }) if field == "name_index")
    );
    // The v1.0 layout (no index) reads as before.
    let f = File::from_bytes(&valid()).unwrap();
    assert!(f.reader().header().name_index().is_none());
    assert!(f.get("b").is_some());
}

#[test]
fn empty_tensors_size_no_pointers_or_scales() {
    // Sizing pointers (2^64 entries) or scales would overflow; an empty tensor never sizes them.
    let t = Raw {
        name: "s",
        element_type: fb::ElementType::Float32.0,
        shape: vec![u64::MAX - 1, 0],
        layout: RawLayout::Csr {
            nnz: 0,
            index_type: fb::ElementType::Int64.0,
        },
        buffers: Some(vec![(0, 0); 3]),
        descriptor_only: false,
        alignment: 0,
        quant: None,
    };
    assert!(open(&craft(&[t], 0, 64, &[])).is_ok());
    let mut q = f32_tensor("q", &[1 << 62, 0], 0);
    q.element_type = fb::ElementType::Int8.0;
    q.buffers = Some(vec![(0, 0)]);
    q.quant = Some(RawQuant {
        scheme: 2,
        scale_type: fb::ElementType::Float32.0,
        axis: 0,
        scales: (0, 0),
    });
    assert!(open(&craft(&[q], 0, 64, &[])).is_ok());
}
