use hurray::Tensors;
use std::collections::BTreeMap;

#[derive(Tensors)]
struct Inner<'a> {
    w: &'a [f32],
}

#[derive(Tensors)]
struct Model<'a> {
    #[hurray(metadata(role = "weight", role = "again"))]
    weight: &'a [f32],
    #[hurray(metadata_of = "wieght")]
    typo: BTreeMap<String, String>,
    #[hurray(metadata(kind = "nested"))]
    inner: Inner<'a>,
    #[hurray(metadata_of = "inner")]
    inner_meta: BTreeMap<String, String>,
    #[hurray(metadata_of = "weight")]
    first: BTreeMap<String, String>,
    #[hurray(metadata_of = "weight", shape = [2])]
    second: BTreeMap<String, String>,
    #[hurray(metadata)]
    file: BTreeMap<String, String>,
    #[hurray(metadata)]
    file_again: Option<BTreeMap<String, String>>,
}

#[derive(Tensors)]
#[hurray(metadata)]
struct BareOnTheStruct<'a> {
    w: &'a [f32],
}

#[derive(Tensors)]
struct NotAMap<'a> {
    w: &'a [f32],
    #[hurray(metadata_of = "w")]
    meta: Vec<u8>,
}

fn main() {}
