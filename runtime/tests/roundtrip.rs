//! Round trips through the writer and the reader: every element type, every
//! layout, quantization, metadata, and the ADR-007 empty-tensor cases.

mod common;
use common::*;
use hurray::{
    Dim, ElementType, Error, File, Layout, Quantization, TensorDescriptor, Writer,
    descriptor::QuantizationScheme, shape,
};

fn roundtrip(tensors: &[(TensorDescriptor, Vec<Vec<u8>>)]) -> File {
    let bytes = write(tensors);
    let file = File::from_bytes(&bytes).unwrap();
    assert_eq!(file.len(), tensors.len());
    for (d, bufs) in tensors {
        let t = file.tensor(&d.name).unwrap();
        assert_eq!(&t.descriptor(), d, "descriptor of {}", d.name);
        let plan = d.buffer_plan().unwrap();
        for ((role, _), want) in plan.buffers().into_iter().zip(bufs) {
            assert_eq!(
                t.buffer(role).unwrap(),
                &want[..],
                "{} buffer {role}",
                d.name
            );
        }
    }
    file
}

#[test]
fn every_element_type_dense() {
    let tensors: Vec<_> = ElementType::ALL
        .iter()
        .flat_map(|&et| {
            [shape(&[5]), shape(&[2, 3]), shape(&[]), shape(&[0])]
                .into_iter()
                .enumerate()
                .map(move |(i, s)| {
                    let d = TensorDescriptor::new(format!("{}.{i}", et.name()), et, s);
                    let b = dense_buffers(&d);
                    (d, b)
                })
        })
        .collect();
    let file = roundtrip(&tensors);
    // Byte sizes follow ceil(elements * bits / 8).
    for et in ElementType::ALL {
        let t = file.tensor(&format!("{}.0", et.name())).unwrap();
        assert_eq!(
            t.byte_length(),
            (5 * u64::from(et.bits())).div_ceil(8),
            "{et:?}"
        );
        let empty = file.tensor(&format!("{}.3", et.name())).unwrap();
        assert_eq!(
            empty.byte_length(),
            0,
            "ADR-007 section 7: empty {et:?} is 0 bytes"
        );
    }
}

#[test]
fn typed_views_borrow_and_match() {
    let vals: Vec<f32> = (0..6).map(|i| i as f32 - 2.5).collect();
    let halfs: Vec<half::bf16> = vals.iter().map(|&v| half::bf16::from_f32(v)).collect();
    let file = roundtrip(&[
        (
            TensorDescriptor::new("f32", ElementType::Float32, shape(&[2, 3])),
            vec![f32s(&vals)],
        ),
        (
            TensorDescriptor::new("bf16", ElementType::BFloat16, shape(&[6])),
            vec![hurray::as_bytes(&halfs).to_vec()],
        ),
    ]);
    let t = file.tensor("f32").unwrap();
    let s = t.as_slice::<f32>().unwrap();
    assert_eq!(s, &vals[..]);
    let range = file.bytes().unwrap().as_ptr_range();
    assert!(
        range.contains(&(s.as_ptr() as *const u8)),
        "the view borrows the file"
    );
    assert_eq!(s.as_ptr() as usize % 64, 0, "64-byte aligned");
    assert_eq!(
        file.tensor("bf16")
            .unwrap()
            .as_slice::<half::bf16>()
            .unwrap(),
        &halfs[..]
    );
    assert!(matches!(
        t.as_slice::<i32>(),
        Err(Error::TypeMismatch { .. })
    ));
}

#[test]
fn packed_sub_byte_bit_order() {
    // int4 values -1, 2, -8, 7, 0: codes 0xf, 0x2, 0x8, 0x7, 0x0 packed LSB-first.
    let codes = [0xfu8, 0x2, 0x8, 0x7, 0x0];
    let packed = hurray::pack::pack_codes(codes, 4);
    assert_eq!(packed, vec![0x2f, 0x78, 0x00]);
    let bools = hurray::pack::pack_codes([1, 0, 1, 1, 0, 0, 0, 0, 1], 1);
    assert_eq!(bools, vec![0b0000_1101, 0b1]);
    let u2 = hurray::pack::pack_codes([3, 0, 1, 2, 1], 2);
    assert_eq!(u2, vec![0b1001_0011, 0b01]);
    let file = roundtrip(&[
        (
            TensorDescriptor::new("i4", ElementType::Int4, shape(&[5])),
            vec![packed],
        ),
        (
            TensorDescriptor::new("bool", ElementType::Bool, shape(&[9])),
            vec![bools],
        ),
        (
            TensorDescriptor::new("u2", ElementType::UInt2, shape(&[5])),
            vec![u2],
        ),
    ]);
    let v: Vec<i16> = file
        .tensor("i4")
        .unwrap()
        .packed()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(v, vec![-1, 2, -8, 7, 0]);
    let b: Vec<i16> = file
        .tensor("bool")
        .unwrap()
        .packed()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(b, vec![1, 0, 1, 1, 0, 0, 0, 0, 1]);
    let u: Vec<i16> = file
        .tensor("u2")
        .unwrap()
        .packed()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(u, vec![3, 0, 1, 2, 1]);
}

#[test]
fn adr007_empty_tensors() {
    let csr = |rows: u64| {
        TensorDescriptor::new(
            format!("csr_{rows}"),
            ElementType::Float32,
            shape(&[rows, 4]),
        )
        .with_layout(Layout::Csr {
            nnz: 0,
            index_type: ElementType::Int64,
        })
    };
    let per_axis = TensorDescriptor::new("q_empty_axis", ElementType::Int8, shape(&[0, 16]))
        .with_quantization(Quantization {
            scheme: QuantizationScheme::PerAxis { axis: 0 },
            expressed_type: ElementType::Float32,
            scale_type: ElementType::Float32,
            zero_point_type: Some(ElementType::Int8),
            storage_min: -128,
            storage_max: 127,
            tensor_scale: 1.0,
            offset_type: None,
            ..Default::default()
        });
    // Found by `mutations_never_panic`: dequantize multiplied the whole
    // shape, overflowing on huge dimensions beside a 0 (ADR-007: zero first).
    let huge_empty = TensorDescriptor::new(
        "q_huge_empty",
        ElementType::Int8,
        shape(&[1 << 40, 1 << 40, 0]),
    )
    .with_quantization(Quantization {
        scheme: QuantizationScheme::PerAxis { axis: 1 },
        ..per_axis.quantization.clone().unwrap()
    });
    let file = roundtrip(&[
        (huge_empty, vec![vec![], vec![], vec![]]),
        (
            TensorDescriptor::new("zero", ElementType::Float32, shape(&[0])),
            vec![vec![]],
        ),
        (
            TensorDescriptor::new("three_zero_five", ElementType::Float32, shape(&[3, 0, 5])),
            vec![vec![]],
        ),
        (
            TensorDescriptor::new("i4_empty", ElementType::Int4, shape(&[7, 0])),
            vec![vec![]],
        ),
        (csr(3), vec![i64s(&[0, 0, 0, 0]), vec![], vec![]]),
        // An empty CSR (shape [0, 4]) has no bytes at all, pointers included.
        (csr(0), vec![vec![], vec![], vec![]]),
        (per_axis.clone(), vec![vec![], vec![], vec![]]),
    ]);
    let t = file.tensor("three_zero_five").unwrap();
    assert!(t.is_empty() && !t.is_descriptor_only());
    assert_eq!(t.element_count(), Some(0));
    assert_eq!(t.dims(), vec![Dim::Fixed(3), Dim::Fixed(0), Dim::Fixed(5)]);
    assert_eq!(t.as_slice::<f32>().unwrap().len(), 0);
    assert_eq!(t.data().unwrap().len(), 0);
    let c = file.tensor("csr_3").unwrap().csr().unwrap();
    assert_eq!(
        (c.nnz, c.pointers.len(), c.indices.len(), c.values.len()),
        (0, 4, 0, 0)
    );
    let q = file.tensor("q_empty_axis").unwrap().quantized().unwrap();
    assert!(q.scales.is_empty() && q.zero_points.is_empty());
    assert!(q.dequantize().is_empty());
    let q = file.tensor("q_huge_empty").unwrap().quantized().unwrap();
    assert!(q.dequantize().is_empty());
    assert_eq!(file.tensor("i4_empty").unwrap().packed().unwrap().len(), 0);
}

#[test]
fn zero_and_dynamic_are_never_conflated() {
    let sig = TensorDescriptor::new(
        "sig",
        ElementType::Float32,
        vec![Dim::Dynamic, Dim::Fixed(0), Dim::Fixed(4)],
    )
    .into_descriptor_only();
    let file = roundtrip(&[(sig.clone(), vec![])]);
    let t = file.tensor("sig").unwrap();
    assert_eq!(t.dims(), vec![Dim::Dynamic, Dim::Fixed(0), Dim::Fixed(4)]);
    // A resolved 0 decides the count even beside a dynamic dim (ADR-007 section 1).
    assert_eq!(t.element_count(), Some(0));
    assert_eq!(sig.element_count(), Some(0));
    let unknown =
        TensorDescriptor::new("u", ElementType::Float32, vec![Dim::Dynamic, Dim::Fixed(4)]);
    assert_eq!(unknown.element_count(), None);
    assert!(matches!(t.data(), Err(Error::NoData { .. })));
    // u64::MAX is the sentinel on the wire, never a size.
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    let max = TensorDescriptor::new("m", ElementType::Float32, vec![Dim::Fixed(u64::MAX)])
        .into_descriptor_only();
    assert!(
        matches!(w.add_tensor(&max, &[]), Err(Error::InvalidField { ref field, .. }) if field == "shape[0]")
    );
    // resolve fills the dynamic dim, keeps the 0, and refuses to replace it.
    let r = sig.resolve(&[8, 0, 4]).unwrap();
    assert_eq!(r.shape, shape(&[8, 0, 4]));
    assert!(matches!(
        sig.resolve(&[8, 1, 4]),
        Err(Error::Resolve { dim: 1, .. })
    ));
    assert!(matches!(
        sig.resolve(&[u64::MAX, 0, 4]),
        Err(Error::Resolve { dim: 0, .. })
    ));
    assert!(matches!(sig.resolve(&[8, 0]), Err(Error::Resolve { .. })));
    // A dynamic dim on a tensor with data is refused by the writer.
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    let bad = TensorDescriptor::new("bad", ElementType::Float32, vec![Dim::Dynamic]);
    assert!(matches!(
        w.add_tensor(&bad, &[&[]]),
        Err(Error::DynamicWithData { dim: 0, .. })
    ));
    // ... and the writer is still usable: nothing already written is lost.
    w.add_tensor(
        &TensorDescriptor::new("ok", ElementType::UInt8, shape(&[1])),
        &[&[7]],
    )
    .unwrap();
    w.finish().unwrap();
    assert_eq!(
        File::from_bytes(&out)
            .unwrap()
            .tensor("ok")
            .unwrap()
            .data()
            .unwrap(),
        &[7]
    );
}

#[test]
fn sparse_layouts() {
    let coo = TensorDescriptor::new("coo", ElementType::Float64, shape(&[3, 4])).with_layout(
        Layout::Coo {
            nnz: 2,
            index_type: ElementType::Int32,
            canonical: true,
        },
    );
    let csr = TensorDescriptor::new("csr", ElementType::Float32, shape(&[2, 3])).with_layout(
        Layout::Csr {
            nnz: 3,
            index_type: ElementType::Int64,
        },
    );
    let csc =
        TensorDescriptor::new("csc", ElementType::Int16, shape(&[2, 3])).with_layout(Layout::Csc {
            nnz: 1,
            index_type: ElementType::Int32,
        });
    let file = roundtrip(&[
        (
            coo,
            vec![
                i32s(&[0, 1, 2, 3]),
                [1.5f64, -2.0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ],
        ),
        (
            csr,
            vec![i64s(&[0, 2, 3]), i64s(&[0, 2, 1]), f32s(&[1.0, 2.0, 3.0])],
        ),
        (
            csc,
            vec![i32s(&[0, 0, 1, 1]), i32s(&[1]), 9i16.to_le_bytes().to_vec()],
        ),
    ]);
    let c = file.tensor("coo").unwrap().coo().unwrap();
    assert_eq!((c.nnz, c.rank, c.indices.get(3)), (2, 2, 3));
    assert_eq!(c.values_as::<f64>().unwrap(), &[1.5, -2.0]);
    let r = file.tensor("csr").unwrap().csr().unwrap();
    assert_eq!(r.values_as::<f32>().unwrap(), &[1.0, 2.0, 3.0]);
    assert_eq!(r.indices.get(1), 2);
    let s = file.tensor("csc").unwrap().csc().unwrap();
    assert_eq!(s.values_as::<i16>().unwrap(), &[9]);
    assert!(matches!(
        file.tensor("csr").unwrap().csc(),
        Err(Error::LayoutMismatch { .. })
    ));
    assert!(matches!(
        file.tensor("csr").unwrap().data(),
        Err(Error::LayoutMismatch { .. })
    ));
}

#[test]
fn strided_dense() {
    // A 2x3 view with column-major strides over 6 elements.
    let d = TensorDescriptor::new("t", ElementType::Float32, shape(&[2, 3]))
        .with_layout(Layout::Strided(vec![1, 2]));
    let file = roundtrip(&[(d, vec![f32s(&[0., 1., 2., 3., 4., 5.])])]);
    let t = file.tensor("t").unwrap();
    assert!(matches!(
        t.as_slice::<f32>(),
        Err(Error::NotContiguous { .. })
    ));
    let (s, strides) = t.as_strided::<f32>().unwrap();
    assert_eq!((s.len(), strides), (6, vec![1, 2]));
    // Row-major strides given explicitly are contiguous.
    let d = TensorDescriptor::new("rm", ElementType::Float32, shape(&[2, 3]))
        .with_layout(Layout::Strided(vec![3, 1]));
    let file = roundtrip(&[(d, vec![f32s(&[0., 1., 2., 3., 4., 5.])])]);
    assert_eq!(
        file.tensor("rm").unwrap().as_slice::<f32>().unwrap().len(),
        6
    );
    // Broadcast (stride 0) needs a single element.
    let d = TensorDescriptor::new("bc", ElementType::Float32, shape(&[4, 3]))
        .with_layout(Layout::Strided(vec![0, 1]));
    roundtrip(&[(d, vec![f32s(&[1., 2., 3.])])]);
}

#[test]
fn quantization_schemes_dequantize() {
    let q = |scheme, zp| Quantization {
        scheme,
        expressed_type: ElementType::Float32,
        scale_type: ElementType::Float32,
        zero_point_type: zp,
        storage_min: 0,
        storage_max: 0,
        tensor_scale: 1.0,
        offset_type: None,
        ..Default::default()
    };
    let per_tensor = TensorDescriptor::new("pt", ElementType::Int8, shape(&[4]))
        .with_quantization(q(QuantizationScheme::PerTensor, Some(ElementType::Int8)));
    let per_axis = TensorDescriptor::new("pa", ElementType::UInt8, shape(&[2, 2]))
        .with_quantization(q(QuantizationScheme::PerAxis { axis: 1 }, None));
    let per_block = TensorDescriptor::new("pb", ElementType::Int4, shape(&[2, 5]))
        .with_quantization(q(
            QuantizationScheme::PerBlock {
                axis: 1,
                block_size: 2,
            },
            None,
        ));
    let file = roundtrip(&[
        (per_tensor, vec![vec![1, 2, 3, 0xff], f32s(&[0.5]), vec![1]]),
        (per_axis, vec![vec![1, 2, 3, 4], f32s(&[1.0, 10.0]), vec![]]),
        // int4 2x5: rows [1,2,3,4,5] and [-1,-2,-3,-4,-5]; 3 blocks per row.
        (
            per_block,
            vec![
                hurray::pack::pack_codes([1, 2, 3, 4, 5, 0xf, 0xe, 0xd, 0xc, 0xb], 4),
                f32s(&[1., 2., 3., 4., 5., 6.]),
                vec![],
            ],
        ),
    ]);
    assert_eq!(
        file.tensor("pt").unwrap().quantized().unwrap().dequantize(),
        vec![0.0, 0.5, 1.0, -1.0]
    );
    assert_eq!(
        file.tensor("pa").unwrap().quantized().unwrap().dequantize(),
        vec![1.0, 20.0, 3.0, 40.0]
    );
    assert_eq!(
        file.tensor("pb").unwrap().quantized().unwrap().dequantize(),
        vec![1., 2., 6., 8., 15., -4., -8., -15., -20., -30.]
    );
}

#[test]
fn metadata_alignment_and_lookup() {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.set_alignment(4096).unwrap();
    w.set_metadata("producer", "test");
    w.set_metadata("a", "first");
    for name in ["zeta", "alpha", "mid", "Alpha"] {
        let d =
            TensorDescriptor::new(name, ElementType::UInt8, shape(&[3])).with_metadata("k", name);
        w.add_tensor(&d, &[&[1, 2, 3]]).unwrap();
    }
    let big =
        TensorDescriptor::new("page", ElementType::UInt8, shape(&[1])).with_alignment(1 << 16);
    w.add_tensor(&big, &[&[9]]).unwrap();
    assert!(matches!(
        w.add_tensor(
            &TensorDescriptor::new("x", ElementType::UInt8, shape(&[1])).with_alignment(100),
            &[&[1]]
        ),
        Err(Error::InvalidAlignment { value: 100, .. })
    ));
    assert!(matches!(
        w.add_tensor(
            &TensorDescriptor::new("mid", ElementType::UInt8, shape(&[1])),
            &[&[1]]
        ),
        Err(Error::DuplicateName { .. })
    ));
    w.finish().unwrap();
    let file = File::from_bytes(&out).unwrap();
    let r = file.reader();
    assert_eq!(r.alignment(), 4096);
    assert_eq!(
        r.metadata().collect::<Vec<_>>(),
        vec![("a", "first"), ("producer", "test")]
    );
    let names: Vec<_> = file.tensors().map(|t| t.name()).collect();
    assert_eq!(names, vec!["Alpha", "alpha", "mid", "page", "zeta"]);
    for t in file.tensors() {
        let off = t.data().unwrap().as_ptr() as usize - file.bytes().unwrap().as_ptr() as usize;
        assert_eq!(off % t.alignment() as usize, 0);
        assert_eq!(file.get(t.name()).unwrap().name(), t.name());
    }
    assert_eq!(file.tensor("page").unwrap().alignment(), 1 << 16);
    assert_eq!(
        file.tensor("mid").unwrap().metadata().collect::<Vec<_>>(),
        vec![("k", "mid")]
    );
    assert!(file.get("nope").is_none());
    assert!(matches!(file.tensor("nope"), Err(Error::NotFound { .. })));
}

#[test]
fn writer_refuses_wrong_data() {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    let d = TensorDescriptor::new("t", ElementType::Float32, shape(&[2]));
    assert!(matches!(
        w.add_tensor(&d, &[&[0; 7]]),
        Err(Error::BufferLength {
            expected: 8,
            found: 7,
            ..
        })
    ));
    assert!(matches!(
        w.add_tensor(&d, &[]),
        Err(Error::WriteMismatch { .. })
    ));
    let csr = TensorDescriptor::new("c", ElementType::Float32, shape(&[2, 2, 2])).with_layout(
        Layout::Csr {
            nnz: 0,
            index_type: ElementType::Int64,
        },
    );
    assert!(matches!(
        w.add_tensor(&csr, &[&[], &[], &[]]),
        Err(Error::InvalidField { .. })
    ));
    let idx =
        TensorDescriptor::new("c", ElementType::Float32, shape(&[2, 2])).with_layout(Layout::Csr {
            nnz: 0,
            index_type: ElementType::Float32,
        });
    assert!(matches!(
        w.add_tensor(&idx, &[&[], &[], &[]]),
        Err(Error::InvalidElementType {
            field: "layout.index_type",
            ..
        })
    ));
    // The streaming path: a short tensor poisons the writer (its bytes are already out).
    let mut t = w.begin_tensor(&d).unwrap();
    t.write_all(&[0; 4]).unwrap();
    assert!(matches!(t.finish(), Err(Error::WriteMismatch { .. })));
    assert!(matches!(w.finish(), Err(Error::WriterPoisoned { .. })));
}

#[test]
fn streaming_writer_matches_one_shot() {
    let d = TensorDescriptor::new("t", ElementType::UInt8, shape(&[1000]));
    let data: Vec<u8> = (0..1000).map(|i| i as u8).collect();
    let one = write(&[(d.clone(), vec![data.clone()])]);
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    let mut t = w.begin_tensor(&d).unwrap();
    for chunk in data.chunks(7) {
        t.write_all(chunk).unwrap();
    }
    t.finish().unwrap();
    w.finish().unwrap();
    assert_eq!(one, out);
}

#[test]
fn atomic_create_and_drop_without_finish() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("out.hurray");
    std::fs::write(&dest, b"old contents").unwrap();
    {
        let mut w = Writer::create(&dest).unwrap();
        w.add_tensor(
            &TensorDescriptor::new("t", ElementType::UInt8, shape(&[2])),
            &[&[1, 2]],
        )
        .unwrap();
        // Dropped without finish(): the destination keeps its old contents.
    }
    assert_eq!(std::fs::read(&dest).unwrap(), b"old contents");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file is left behind"
    );
    let mut w = Writer::create(&dest).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("t", ElementType::UInt8, shape(&[2])),
        &[&[1, 2]],
    )
    .unwrap();
    w.finish().unwrap();
    let file = File::open(&dest).unwrap();
    assert_eq!(file.tensor("t").unwrap().data().unwrap(), &[1, 2]);
    // Its mode: tests/atomic.rs.
}

#[test]
fn file_alignment_is_set_before_the_first_tensor() {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("t", ElementType::UInt8, shape(&[1])),
        &[&[1]],
    )
    .unwrap();
    assert!(matches!(
        w.set_alignment(4096),
        Err(Error::InvalidField { .. })
    ));
    w.finish().unwrap();
    File::from_bytes(&out).unwrap();
}
