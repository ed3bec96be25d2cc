//! Nested prefixes, shapes that cannot be inferred, and index, packed and
//! scale types that differ from the stored ones.

use super::*;

#[derive(Tensors, Debug, PartialEq)]
pub(super) struct Deep<'a> {
    #[hurray(rename = "enc")]
    pub(super) encoder: Encoder<'a>,
    pub(super) outer: Outer<'a>,
}

#[derive(Tensors, Debug, PartialEq)]
pub(super) struct Outer<'a> {
    pub(super) inner: Encoder<'a>,
    #[hurray(shape = [?, 4])]
    pub(super) rows: Vec<f32>,
}

#[derive(Tensors, Debug)]
pub(super) struct Shapes<'a> {
    #[hurray(shape = [?, ?])]
    pub(super) two_dynamic: &'a [f32],
}

#[derive(Tensors, Debug)]
pub(super) struct DynamicBesideEmpty<'a> {
    #[hurray(shape = [?, 0])]
    pub(super) w: &'a [f32],
}

#[derive(Tensors, Debug)]
pub(super) struct Narrow<'a> {
    #[hurray(rename = "sparse")]
    pub(super) sparse: Compressed<'a, f32, i32>,
    #[hurray(rename = "nibbles", shape = [2, 3])]
    pub(super) nibbles: Packed<'a, hurray::elements::UInt4>,
}

#[derive(Tensors, Debug)]
pub(super) struct HalfScales<'a> {
    #[hurray(shape = [2, 2], quantization = "per_axis", axis = 0)]
    pub(super) quant: Quantized<'a, i8, half::f16>,
}

#[test]
fn nested_prefixes_compose() {
    let d = more::Deep {
        encoder: Encoder {
            weight: &W,
            bias: &B,
        },
        outer: more::Outer {
            inner: Encoder {
                weight: &W,
                bias: &[],
            },
            // `[?, 4]` with no element: an empty [0, 4] tensor.
            rows: vec![],
        },
    };
    let names: Vec<String> = d
        .descriptors()
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(
        names,
        [
            "enc.weight",
            "enc.bias",
            "outer.inner.weight",
            "outer.inner.bias",
            "outer.rows"
        ]
    );
    let mut bytes = Vec::new();
    d.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    assert_eq!(file.tensor("outer.rows").unwrap().dims(), shape(&[0, 4]));
    assert_eq!(more::Deep::load(&file).unwrap(), d);
}

#[test]
fn uninferable_shapes_are_refused_on_save() {
    let e = more::Shapes {
        two_dynamic: &[1.0; 4],
    }
    .descriptors()
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("\"two_dynamic\"") && e.contains("one dynamic"),
        "{e}"
    );
    let e = more::DynamicBesideEmpty { w: &[] }
        .descriptors()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"w\"") && e.contains("cannot be inferred"),
        "{e}"
    );
}

#[test]
fn index_packed_and_scale_types_are_checked_on_load() {
    let m = model(&W, &B, None);
    let mut bytes = Vec::new();
    m.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let e = more::Narrow::load(&file).unwrap_err();
    assert!(
        matches!(&e, hurray::Error::TypeMismatch { tensor, requested: ElementType::Int32, found: ElementType::Int64 } if tensor == "sparse"),
        "{e:?}"
    );
    let e = more::HalfScales::load(&file).unwrap_err();
    assert!(
        matches!(&e, hurray::Error::TypeMismatch { tensor, requested: ElementType::Float16, .. } if tensor == "quant"),
        "{e:?}"
    );
}
