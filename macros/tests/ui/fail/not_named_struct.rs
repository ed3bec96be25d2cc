use hurray::Tensors;

#[derive(Tensors)]
enum Choice<'a> {
    A(&'a [f32]),
}

#[derive(Tensors)]
struct Pair<'a>(&'a [f32], &'a [f32]);

#[derive(Tensors)]
struct Nothing;

fn main() {}
