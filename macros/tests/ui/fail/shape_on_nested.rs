use hurray::Tensors;

#[derive(Tensors)]
struct Inner<'a> {
    w: &'a [f32],
}

#[derive(Tensors)]
struct Outer<'a> {
    #[hurray(shape = [2], layout = "csr")]
    inner: Inner<'a>,
    #[hurray(shape = [1])]
    maybe: Option<Inner<'a>>,
}

fn main() {}
