//! `Option` of a nested struct: absent when none of its tensors is in the
//! file, an error naming the missing tensor when only some are.

use hurray::{Error, File, Tensors};

#[derive(Tensors, Debug, PartialEq)]
struct Adapter<'a> {
    down: &'a [f32],
    up: &'a [f32],
    scale: Option<&'a [f32]>,
}

#[derive(Tensors, Debug, PartialEq)]
struct Layer<'a> {
    weight: &'a [f32],
    #[hurray(rename = "lora")]
    adapter: Option<Adapter<'a>>,
}

#[derive(Tensors, Debug, PartialEq)]
struct Model<'a> {
    layer: Layer<'a>,
    // Optional nesting composes: `extra.lora.down`, ...
    extra: Option<Layer<'a>>,
}

const W: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
const D: [f32; 2] = [0.5, -0.5];

fn bytes_of(m: &Model<'_>) -> Vec<u8> {
    let mut bytes = Vec::new();
    m.write_to(&mut bytes).unwrap();
    bytes
}

fn names(file: &File) -> Vec<String> {
    file.tensors().map(|t| t.name().to_owned()).collect()
}

#[test]
fn absent_present_and_nested_absent() {
    let with = Model {
        layer: Layer {
            weight: &W,
            adapter: Some(Adapter {
                down: &D,
                up: &D,
                scale: None,
            }),
        },
        extra: Some(Layer {
            weight: &W,
            adapter: None,
        }),
    };
    let bytes = bytes_of(&with);
    let file = File::from_bytes(&bytes).unwrap();
    assert_eq!(
        names(&file),
        [
            "extra.weight",
            "layer.lora.down",
            "layer.lora.up",
            "layer.weight"
        ]
    );
    assert_eq!(Model::load(&file).unwrap(), with);

    let without = Model {
        layer: Layer {
            weight: &W,
            adapter: None,
        },
        extra: None,
    };
    let bytes = bytes_of(&without);
    let file = File::from_bytes(&bytes).unwrap();
    assert_eq!(names(&file), ["layer.weight"]);
    assert_eq!(Model::load(&file).unwrap(), without);
}

#[test]
fn partly_present_is_an_error_naming_the_missing_tensor() {
    // A file with `layer.lora.down` but no `layer.lora.up`.
    let mut bytes = Vec::new();
    let mut w = hurray::Writer::new(&mut bytes).unwrap();
    for (name, values) in [("layer.weight", &W[..]), ("layer.lora.down", &D[..])] {
        let desc = hurray::TensorDescriptor::new(
            name,
            hurray::ElementType::Float32,
            hurray::shape(&[values.len() as u64]),
        );
        w.add_tensor(&desc, &[hurray::as_bytes(values)]).unwrap();
    }
    w.finish().unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    match Model::load(&file) {
        Err(Error::NotFound { name }) => assert_eq!(name, "layer.lora.up"),
        other => panic!("expected NotFound for layer.lora.up, got {other:?}"),
    }
}

#[test]
fn a_prefix_is_not_a_name_that_merely_starts_alike() {
    // `layer.lorax` is not under `layer.lora.`: the adapter stays absent.
    let mut bytes = Vec::new();
    let mut w = hurray::Writer::new(&mut bytes).unwrap();
    for name in ["layer.lorax", "layer.weight"] {
        let desc =
            hurray::TensorDescriptor::new(name, hurray::ElementType::Float32, hurray::shape(&[4]));
        w.add_tensor(&desc, &[hurray::as_bytes(&W)]).unwrap();
    }
    w.finish().unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let m = Model::load(&file).unwrap();
    assert_eq!(m.layer.adapter, None);
    assert_eq!(m.extra, None);
}
