//! Crafted files with sparse layouts, quantization, alignments, footers and
//! name indexes: each rule the reader enforces, one refusal at a time.

use super::*;

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
    // Bit 0 is 1.2's extended quantization, bit 1 1.3's index, bit 2 1.4's
    // composite quantization; bit 3 is unknown.
    b[at] = 8;
    assert!(matches!(
        open(&b),
        Err(Error::BadFooter {
            field: "flags",
            value: 8,
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
    let r = crate::reader::Reader::new(&out).unwrap();
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
