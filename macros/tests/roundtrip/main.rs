//! Round trips through `#[derive(Tensors)]`: save, mmap, load borrowing,
//! and the checks that name the field at fault.

use hurray::derive::{Compressed, Packed, Quantized};
use hurray::elements::{Int4, UInt2};
use hurray::{
    Descriptor, Dim, Element, ElementType, File, Layout, Tensors,
    derive::{StaticDescriptor, TensorSet},
    descriptor::QuantizationScheme,
    shape,
};
use std::borrow::Cow;

// Groups of tests with the structs they declare sit in `roundtrip/`: a test
// target's root finds `mod x;` next to itself, where Cargo would take `x.rs`
// for a test target of its own, hence the paths.
mod mismatch;
mod more;
mod nd;

#[derive(Tensors, Debug, PartialEq)]
struct Encoder<'a> {
    #[hurray(shape = [2, 3])]
    weight: &'a [f32],
    bias: &'a [f32],
}

#[derive(Tensors, Debug, PartialEq)]
struct Model<'a> {
    /// An empty tensor (ADR-007): a resolved shape with no elements.
    #[hurray(shape = [3, 0, 5])]
    empty: &'a [f32],
    /// Packed 4-bit integers.
    #[hurray(shape = [?, 3])]
    nibbles: Packed<'a, Int4>,
    /// A CSR matrix with no stored element.
    #[hurray(layout = "csr", shape = [4, 5])]
    sparse: Compressed<'a, f32>,
    /// Per-axis int8 quantization: one scale per row.
    #[hurray(shape = [2, 2], quantization = "per_axis", axis = 0)]
    quant: Quantized<'a, i8>,
    encoder: Encoder<'a>,
    #[hurray(rename = "extra.mask")]
    mask: Option<&'a [u8]>,
    counts: Option<Vec<i64>>,
}

fn model<'a>(w: &'a [f32], b: &'a [f32], mask: Option<&'a [u8]>) -> Model<'a> {
    Model {
        empty: &[],
        nibbles: Packed::from_values([-8, -1, 0, 1, 7, 3]).unwrap(),
        sparse: Compressed::new([4, 5], vec![0i64; 5], vec![], vec![]),
        quant: Quantized::new(
            vec![1i8, -2, 3, -4],
            vec![0.5f32, 0.25],
            Some(Cow::Owned(vec![0i8, 1])),
        ),
        encoder: Encoder { weight: w, bias: b },
        mask,
        counts: None,
    }
}

const W: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
const B: [f32; 2] = [0.5, -0.5];

fn saved(m: &Model<'_>) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.hurray");
    m.save(&path).unwrap();
    (dir, path)
}

fn inside(file: &File, ptr: *const u8, len: usize) -> bool {
    let range = file.bytes().unwrap().as_ptr_range();
    range.contains(&ptr) && ptr.wrapping_add(len) <= range.end
}

#[test]
fn descriptors_follow_fields_and_attributes() {
    let m = model(&W, &B, None);
    let d = m.descriptors().unwrap();
    let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "empty",
            "nibbles",
            "sparse",
            "quant",
            "encoder.weight",
            "encoder.bias"
        ]
    );
    assert_eq!(d[0].shape, shape(&[3, 0, 5]));
    assert_eq!(d[0].element_type, ElementType::Float32);
    assert_eq!(d[1].element_type, ElementType::Int4);
    assert_eq!(
        d[1].shape,
        shape(&[2, 3]),
        "the `?` is inferred from 6 elements"
    );
    assert_eq!(
        d[2].layout,
        Layout::Csr {
            nnz: 0,
            index_type: ElementType::Int64
        }
    );
    let q = d[3].quantization.as_ref().unwrap();
    assert_eq!(q.scheme, QuantizationScheme::PerAxis { axis: 0 });
    assert_eq!(q.zero_point_type, Some(ElementType::Int8));
    assert_eq!(d[4].shape, shape(&[2, 3]));
    assert_eq!(d[5].shape, shape(&[2]), "no shape attribute: rank 1");
}

#[test]
fn round_trip_borrows_from_the_mmap() {
    let mask = [1u8, 0, 1];
    let m = model(&W, &B, Some(&mask));
    let (_dir, path) = saved(&m);
    let file = File::open(&path).unwrap();
    let back = Model::load(&file).unwrap();
    assert_eq!(back, m);

    // Zero-copy: every non-empty view points into the mapped file.
    let w = back.encoder.weight;
    assert!(inside(&file, w.as_ptr().cast(), std::mem::size_of_val(w)));
    let mask = back.mask.unwrap();
    assert!(inside(&file, mask.as_ptr(), mask.len()));
    assert!(back.nibbles.is_borrowed());
    assert!(inside(&file, back.nibbles.bytes().as_ptr(), 3));
    assert!(matches!(back.quant.values, Cow::Borrowed(_)));
    assert!(inside(&file, back.quant.values.as_ptr().cast(), 4));
    assert!(matches!(back.sparse.pointers, Cow::Borrowed(_)));

    // Values survive.
    assert_eq!(back.empty.len(), 0);
    assert_eq!(
        back.nibbles.values().collect::<Vec<_>>(),
        [-8, -1, 0, 1, 7, 3]
    );
    assert_eq!(back.sparse.nnz(), 0);
    assert_eq!(&*back.sparse.pointers, &[0i64; 5]);
    assert_eq!(back.counts, None);
    assert_eq!(file.tensor("empty").unwrap().dims(), shape(&[3, 0, 5]));
    assert_eq!(
        file.tensor("quant")
            .unwrap()
            .quantized()
            .unwrap()
            .dequantize(),
        [0.5, -1.0, 0.5, -1.25]
    );
}

#[test]
fn optional_tensor_absent_and_present() {
    let m = model(&W, &B, None);
    let (_dir, path) = saved(&m);
    let file = File::open(&path).unwrap();
    assert!(file.get("extra.mask").is_none());
    assert_eq!(Model::load(&file).unwrap().mask, None);

    let mut m = model(&W, &B, Some(&[7, 8]));
    m.counts = Some(vec![1, 2, 3]);
    let mut bytes = Vec::new();
    m.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let back = Model::load(&file).unwrap();
    assert_eq!(back.mask, Some(&[7u8, 8][..]));
    assert_eq!(back.counts, Some(vec![1, 2, 3]));
}

#[test]
fn save_checks_the_declared_shape() {
    let short = [1.0f32; 5];
    let m = model(&short, &B, None);
    let e = m.descriptors().unwrap_err().to_string();
    assert!(
        e.contains("\"encoder.weight\"") && e.contains("[2, 3]"),
        "{e}"
    );
    let mut bytes = Vec::new();
    assert!(m.write_to(&mut bytes).is_err());
}

#[derive(Tensors, Debug, PartialEq)]
struct Owned {
    #[hurray(shape = [2, 2])]
    grid: Vec<u16>,
    #[hurray(shape = [0])]
    none: Vec<f64>,
}

#[test]
fn owned_struct_copies_and_outlives_the_file() {
    let o = Owned {
        grid: vec![1, 2, 3, 4],
        none: vec![],
    };
    let mut bytes = Vec::new();
    o.write_to(&mut bytes).unwrap();
    let back = {
        let file = File::from_bytes(&bytes).unwrap();
        Owned::load(&file).unwrap()
    };
    assert_eq!(back, o);
    // Generic code through the trait.
    fn count<'a, T: TensorSet<'a>>(t: &T) -> usize {
        t.tensor_descriptors().unwrap().len()
    }
    assert_eq!(count(&o), 2);
}

#[derive(Tensors, Debug)]
struct Small<'a> {
    #[hurray(shape = [5])]
    bits: Packed<'a, UInt2>,
    #[hurray(layout = "csc")]
    csc: Compressed<'a, f64, i32>,
}

#[test]
fn sub_byte_odd_length_and_csc_with_values() {
    let s = Small {
        bits: Packed::from_codes([0, 1, 2, 3, 2]),
        csc: Compressed::new([2, 3], vec![0i32, 1, 1, 2], vec![1, 0], vec![9.0, 8.0]),
    };
    let mut bytes = Vec::new();
    s.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let t = file.tensor("bits").unwrap();
    assert_eq!(t.element_type(), ElementType::UInt2);
    assert_eq!(t.data().unwrap().len(), 2, "5 x 2 bits = 2 bytes");
    let back = Small::load(&file).unwrap();
    assert_eq!(back.bits.codes().collect::<Vec<_>>(), [0, 1, 2, 3, 2]);
    assert_eq!(&*back.csc.values, &[9.0, 8.0]);
    assert_eq!(&*back.csc.indices, &[1, 0]);
    assert_eq!(file.tensor("csc").unwrap().layout().name(), "csc");
}

#[derive(Element, Clone, Copy, Debug, PartialEq, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(transparent)]
struct Meters(f32);

#[derive(Tensors, Debug, PartialEq)]
struct Track<'a> {
    distances: &'a [Meters],
    half: Vec<half::bf16>,
}

#[test]
fn element_newtype_is_stored_as_its_field() {
    assert_eq!(<Meters as Element>::TYPE, ElementType::Float32);
    let d = [Meters(1.5), Meters(2.5)];
    let t = Track {
        distances: &d,
        half: vec![half::bf16::from_f32(1.0)],
    };
    let mut bytes = Vec::new();
    t.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    assert_eq!(
        file.tensor("distances").unwrap().as_slice::<f32>().unwrap(),
        &[1.5, 2.5]
    );
    assert_eq!(Track::load(&file).unwrap(), t);
}

#[derive(Descriptor)]
#[hurray(name = "logits", dtype = "f32", shape = [?, 1000])]
struct Logits;

#[derive(Descriptor)]
#[hurray(dtype = "i4", shape = [0, 8], quantization = "per_axis", axis = 0, scale = "f16")]
struct EmptyQuant;

#[test]
fn static_descriptors() {
    let d = Logits::descriptor();
    assert_eq!(Logits::NAME, "logits");
    assert_eq!(d.shape, vec![Dim::Dynamic, Dim::Fixed(1000)]);
    assert!(d.descriptor_only, "a dynamic dimension carries no data");
    assert_eq!(d.element_type, ElementType::Float32);

    let d = EmptyQuant::descriptor();
    assert_eq!(d.name, "EmptyQuant");
    assert!(!d.descriptor_only);
    let q = d.quantization.as_ref().unwrap();
    assert_eq!(q.scale_type, ElementType::Float16);
    // An empty quantization axis has empty scales (ADR-007 section 8).
    let plan = d.buffer_plan().unwrap();
    assert_eq!(plan.scales, 0);

    // Both write: the signature without data, the empty one with 0 bytes.
    let mut bytes = Vec::new();
    let mut w = hurray::Writer::new(&mut bytes).unwrap();
    w.add_tensor(&Logits::descriptor(), &[]).unwrap();
    w.add_tensor(&d, &[&[], &[], &[]]).unwrap();
    w.finish().unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    assert!(file.tensor("logits").unwrap().is_descriptor_only());
    assert_eq!(file.tensor("EmptyQuant").unwrap().descriptor(), d);
}

#[test]
fn packed_from_values_checks_the_range() {
    assert!(Packed::<Int4>::from_values([8]).is_none());
    assert!(Packed::<Int4>::from_values([-9]).is_none());
    assert!(Packed::<UInt2>::from_values([4]).is_none());
    let p = Packed::<UInt2>::from_values([0, 3]).unwrap();
    assert_eq!(p.bytes(), &[0b1100]);
    assert!(Packed::<Int4>::from_bytes(&[0u8; 2][..], 5).is_err());
    assert_eq!(
        Packed::<Int4>::from_bytes(&[0x21u8][..], 2)
            .unwrap()
            .values()
            .collect::<Vec<_>>(),
        [1, 2]
    );
}

#[derive(Tensors, Debug, PartialEq)]
struct Int4Weights<'a> {
    /// int4 weights, one f16 scale and one int4 zero point per block of 2 along axis 1.
    #[hurray(shape = [2, 4], quantization = "per_block", axis = 1, block_size = 2)]
    w: hurray::derive::PackedQuantized<'a, Int4, half::f16>,
}

#[test]
fn packed_quantized_round_trip() {
    let f = half::f16::from_f32;
    let q = Int4Weights {
        w: hurray::derive::PackedQuantized::new(
            Packed::from_values([1, 2, 3, 4, -1, -2, -3, -4]).unwrap(),
            vec![f(1.0), f(0.5), f(2.0), f(0.25)],
            Some(Packed::from_values([0, 1, -1, 0]).unwrap()),
        ),
    };
    let mut bytes = Vec::new();
    q.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let t = file.tensor("w").unwrap();
    assert_eq!(t.element_type(), ElementType::Int4);
    assert_eq!(t.data().unwrap().len(), 4, "8 x 4 bits");
    assert_eq!(
        t.quantized().unwrap().dequantize(),
        [1.0, 2.0, 1.0, 1.5, -0.0, -2.0, -0.75, -1.0]
    );
    let back = Int4Weights::load(&file).unwrap();
    assert!(back.w.values.is_borrowed());
    assert_eq!(back, q);
}

/// MXFP4 (format 1.2): packed FP4 values with one E8M0 scale per block of 32.
#[derive(Tensors, Debug, PartialEq)]
struct Mxfp4Weights<'a> {
    #[hurray(shape = [2, 32], quantization = "per_block", axis = 1, block_size = 32)]
    w: hurray::derive::PackedQuantized<
        'a,
        hurray::elements::Float4E2M1FN,
        hurray::elements::Float8E8M0FNU,
    >,
}

#[test]
fn mxfp4_field_round_trip() {
    // FP4 codes 0..15 twice; E8M0 scales 2^0 and 2^-2.
    let codes: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
    let q = Mxfp4Weights {
        w: hurray::derive::PackedQuantized::new(
            Packed::from_codes(codes.iter().copied()),
            vec![
                hurray::elements::Float8E8M0FNU(127),
                hurray::elements::Float8E8M0FNU(125),
            ],
            None,
        ),
    };
    let mut bytes = Vec::new();
    q.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let t = file.tensor("w").unwrap();
    let qz = t.quantization().unwrap();
    assert_eq!(
        (t.element_type(), qz.scale_type),
        (ElementType::Float4E2M1FN, ElementType::Float8E8M0FNU)
    );
    let deq = t.quantized().unwrap().dequantize();
    let fp4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for (i, &c) in codes.iter().enumerate() {
        let v = fp4[usize::from(c & 7)] * if i < 32 { 1.0 } else { 0.25 };
        let v = if c & 8 != 0 { -v } else { v };
        assert_eq!(deq[i].to_bits(), (v as f32).to_bits(), "element {i}");
    }
    assert_eq!(Mxfp4Weights::load(&file).unwrap(), q);
}

/// ADR-0007: a 0 decides emptiness before any multiplication, so a declared
/// shape whose other dimensions overflow when multiplied is still empty.
#[derive(Tensors, Debug, PartialEq)]
struct HugeEmpty {
    #[hurray(shape = [1099511627776, 1099511627776, 0])]
    empty: Vec<f32>,
}

#[test]
fn huge_empty_shapes_round_trip() {
    let t = HugeEmpty { empty: Vec::new() };
    let mut bytes = Vec::new();
    t.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let stored = file.tensor("empty").unwrap();
    assert_eq!(
        stored.descriptor().shape,
        vec![Dim::Fixed(1 << 40), Dim::Fixed(1 << 40), Dim::Fixed(0)]
    );
    assert_eq!(stored.byte_length(), 0);
    assert_eq!(HugeEmpty::load(&file).unwrap(), t);
}
