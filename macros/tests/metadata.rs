//! Metadata: declared with `#[hurray(metadata(key = "value"))]` on fields
//! (the tensor's) and on the struct (the file's); carried at run time by
//! `#[hurray(metadata)]` (the file's) and `#[hurray(metadata_of = "field")]`
//! (a tensor's) map fields, which load fills from the file.

use hurray::{File, Tensors};
use std::collections::{BTreeMap, HashMap};

#[derive(Tensors, Debug, PartialEq)]
#[hurray(metadata(producer = "hurray-tests", format = "hurray"))]
struct Checkpoint<'a> {
    #[hurray(metadata(role = "weight", init = "xavier"))]
    weight: &'a [f32],
    /// The weight's run-time metadata; wins over the declared entries.
    #[hurray(metadata_of = "weight")]
    weight_meta: BTreeMap<String, String>,
    #[hurray(rename = "b", metadata(role = "bias"))]
    bias: Option<&'a [f32]>,
    #[hurray(metadata_of = "bias")]
    bias_meta: HashMap<String, String>,
    /// The file's run-time metadata; wins over the struct's declared entries.
    #[hurray(metadata)]
    file_meta: BTreeMap<String, String>,
    head: Head<'a>,
}

#[derive(Tensors, Debug, PartialEq)]
#[hurray(metadata(format = "nested-loses", head = "yes"))]
struct Head<'a> {
    #[hurray(metadata(role = "logits"))]
    w: &'a [f32],
}

const W: [f32; 3] = [1.0, 2.0, 3.0];

fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn tensor_meta(file: &File, name: &str) -> BTreeMap<String, String> {
    file.tensor(name)
        .unwrap()
        .metadata()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[test]
fn declared_and_run_time_metadata_are_written_and_loaded() {
    let c = Checkpoint {
        weight: &W,
        weight_meta: map(&[("init", "orthogonal"), ("step", "7")]),
        bias: Some(&W[..1]),
        bias_meta: HashMap::new(),
        file_meta: map(&[("epoch", "3"), ("producer", "trainer")]),
        head: Head { w: &W },
    };
    let mut bytes = Vec::new();
    c.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();

    // Tensor metadata: declared entries, run-time ones winning.
    assert_eq!(
        tensor_meta(&file, "weight"),
        map(&[("init", "orthogonal"), ("role", "weight"), ("step", "7")])
    );
    assert_eq!(tensor_meta(&file, "b"), map(&[("role", "bias")]));
    assert_eq!(tensor_meta(&file, "head.w"), map(&[("role", "logits")]));
    // File metadata: the nested struct's, then the outer's declared, then
    // the run-time field's.
    let file_meta: BTreeMap<String, String> = file
        .reader()
        .metadata()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(
        file_meta,
        map(&[
            ("epoch", "3"),
            ("format", "hurray"),
            ("head", "yes"),
            ("producer", "trainer")
        ])
    );
    // The descriptors carry the tensor metadata too.
    let d = c.descriptors().unwrap();
    assert_eq!(d[0].metadata, tensor_meta(&file, "weight"));

    // Load exposes what the file holds.
    let loaded = Checkpoint::load(&file).unwrap();
    assert_eq!(loaded.weight_meta, tensor_meta(&file, "weight"));
    assert_eq!(
        loaded.bias_meta,
        HashMap::from([("role".to_owned(), "bias".to_owned())])
    );
    assert_eq!(loaded.file_meta, file_meta);
    assert_eq!(loaded.weight, &W);
}

#[test]
fn an_absent_optional_tensor_has_empty_metadata() {
    let c = Checkpoint {
        weight: &W,
        weight_meta: BTreeMap::new(),
        bias: None,
        bias_meta: HashMap::from([("ignored".to_owned(), "no tensor".to_owned())]),
        file_meta: BTreeMap::new(),
        head: Head { w: &W },
    };
    let mut bytes = Vec::new();
    c.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let loaded = Checkpoint::load(&file).unwrap();
    assert_eq!(loaded.bias, None);
    assert!(loaded.bias_meta.is_empty());
    assert_eq!(
        loaded.weight_meta,
        map(&[("init", "xavier"), ("role", "weight")])
    );
}
