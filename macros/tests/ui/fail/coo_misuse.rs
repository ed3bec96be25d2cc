use hurray::{Tensors};
use hurray::derive::{Compressed, Coo};

#[derive(Tensors)]
struct Sparse<'a> {
    #[hurray(layout = "coo")]
    dense: &'a [f32],
    #[hurray(layout = "csr")]
    points: Coo<'a, f32>,
    #[hurray(layout = "coo")]
    matrix: Compressed<'a, f32>,
    // Owned COO needs the struct's lifetime like every borrowed kind.
    loose: Coo<'static, f32, i32>,
}

fn main() {}
