//! Property tests: any valid descriptor round-trips exactly, and no mutation
//! of a valid file makes the reader or a view panic.

mod common;
use common::*;
use hurray::{
    Dim, ElementType, File, Layout, Quantization, TensorDescriptor, descriptor::QuantizationScheme,
};
use proptest::prelude::*;

fn element_type() -> impl Strategy<Value = ElementType> {
    proptest::sample::select(ElementType::ALL.to_vec())
}

fn dims() -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(prop_oneof![3 => 1u64..5, 1 => Just(0u64)], 0..4)
}

/// A valid dense or quantized descriptor with pattern data.
fn dense_case() -> impl Strategy<Value = (TensorDescriptor, Vec<Vec<u8>>)> {
    (element_type(), dims(), any::<bool>(), any::<bool>(), 0u8..3).prop_map(
        |(et, dims, dynamic, quantize, scheme)| {
            let mut d =
                TensorDescriptor::new("t", et, dims.iter().map(|&n| Dim::Fixed(n)).collect());
            if dynamic && !dims.is_empty() {
                d.shape[0] = Dim::Dynamic;
                d = d.into_descriptor_only();
            }
            let int = matches!(
                et.class(),
                hurray::elements::ElementClass::SignedInt
                    | hurray::elements::ElementClass::UnsignedInt
            );
            if quantize && int {
                let scheme = match (scheme, dims.len()) {
                    (_, 0) | (0, _) => QuantizationScheme::PerTensor,
                    (1, _) => QuantizationScheme::PerAxis { axis: 0 },
                    _ => QuantizationScheme::PerBlock {
                        axis: 0,
                        block_size: 2,
                    },
                };
                d = d.with_quantization(Quantization {
                    scheme,
                    expressed_type: ElementType::Float32,
                    scale_type: ElementType::Float16,
                    zero_point_type: Some(ElementType::Int8),
                    storage_min: -8,
                    storage_max: 7,
                    tensor_scale: 1.0,
                    offset_type: None,
                    ..Default::default()
                });
            }
            let b = if d.descriptor_only {
                vec![]
            } else {
                dense_buffers(&d)
            };
            (d, b)
        },
    )
}

/// A valid CSR descriptor with consistent random structure.
fn csr_case() -> impl Strategy<Value = (TensorDescriptor, Vec<Vec<u8>>)> {
    (
        0u64..4,
        1u64..5,
        proptest::collection::vec(any::<u16>(), 0..12),
    )
        .prop_map(|(rows, cols, picks)| {
            let mut counts = vec![0i64; rows as usize];
            let mut indices = Vec::new();
            if rows > 0 {
                for p in &picks {
                    let c = &mut counts[(*p as u64 % rows) as usize];
                    // At most one stored element per column of a row.
                    *c = (*c + 1).min(cols as i64);
                }
                for (r, c) in counts.iter().enumerate() {
                    for k in 0..*c {
                        indices.push((k + r as i64) % cols as i64);
                    }
                }
            }
            let mut ptrs = vec![0i64];
            for c in &counts {
                ptrs.push(ptrs.last().unwrap() + c);
            }
            if rows == 0 {
                ptrs.clear(); // an empty tensor has no bytes, pointers included (ADR-007)
            }
            let nnz = indices.len() as u64;
            let d = TensorDescriptor::new("s", ElementType::Float32, hurray::shape(&[rows, cols]))
                .with_layout(Layout::Csr {
                    nnz,
                    index_type: ElementType::Int64,
                });
            let values: Vec<f32> = (0..nnz).map(|i| i as f32).collect();
            (d, vec![i64s(&ptrs), i64s(&indices), f32s(&values)])
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn dense_round_trip((d, bufs) in dense_case()) {
        let bytes = write(&[(d.clone(), bufs.clone())]);
        let file = File::from_bytes(&bytes).unwrap();
        let t = file.tensor("t").unwrap();
        prop_assert_eq!(t.descriptor(), d.clone());
        let plan = d.buffer_plan().unwrap();
        if !d.descriptor_only {
            for ((role, _), want) in plan.buffers().into_iter().zip(&bufs) {
                prop_assert_eq!(t.buffer(role).unwrap(), &want[..]);
            }
        }
    }

    #[test]
    fn csr_round_trip((d, bufs) in csr_case()) {
        let bytes = write(&[(d.clone(), bufs.clone())]);
        let file = File::from_bytes(&bytes).unwrap();
        let t = file.tensor("s").unwrap();
        prop_assert_eq!(t.descriptor(), d);
        let v = t.csr().unwrap();
        prop_assert_eq!(hurray::as_bytes(v.values_as::<f32>().unwrap()), &bufs[2][..]);
    }

    #[test]
    fn mutations_never_panic((d, bufs) in dense_case(), (s, sb) in csr_case(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut bytes = write(&[(d, bufs), (s, sb)]);
        for (at, v) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= v | 1;
        }
        if let Ok(file) = File::from_bytes(&bytes) {
            for t in file.tensors() {
                let _ = t.descriptor();
                let _ = t.data();
                let _ = t.packed().map(|p| p.iter().count());
                let _ = t.csr();
                let _ = t.quantized().map(|q| q.dequantize());
            }
        }
    }
}
