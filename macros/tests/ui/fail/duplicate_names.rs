use hurray::Tensors;

#[derive(Tensors)]
struct Weights<'a> {
    w: &'a [f32],
    #[hurray(rename = "w")]
    other: &'a [f32],
    #[hurray(rename = "")]
    unnamed: &'a [f32],
}

fn main() {}
