use hurray::Tensors;

#[derive(Tensors)]
struct Weights<'a> {
    name: String,
    scale: f32,
    pair: (&'a [f32], &'a [f32]),
    fixed: [f32; 4],
    nested: Option<Option<Vec<f32>>>,
    mutable: &'a mut [f32],
}

fn main() {}
