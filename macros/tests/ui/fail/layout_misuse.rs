use hurray::{Tensors};
use hurray::derive::Compressed;

#[derive(Tensors)]
struct Weights<'a> {
    #[hurray(layout = "csr")]
    dense: &'a [f32],
    #[hurray(layout = "blocked")]
    blocked: Vec<f32>,
    #[hurray(layout = "dense")]
    sparse: Compressed<'a, f32>,
}

fn main() {}
