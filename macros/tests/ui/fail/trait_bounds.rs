// Errors the compiler finds through the generated bounds, pointing at the field type.
use hurray::Tensors;

struct Plain {
    w: Vec<f32>,
}

#[derive(Tensors)]
struct Outer<'a> {
    inner: Plain,
    names: Vec<String>,
    wide: &'a [u128],
}

fn main() {}
