use hurray::Tensors;

#[derive(Tensors)]
struct A<'a> {
    #[hurray(shape = [3, -1])]
    w: &'a [f32],
}

#[derive(Tensors)]
struct B<'a> {
    #[hurray(shape = [18446744073709551615])]
    w: &'a [f32],
    #[hurray(shape = 3)]
    v: &'a [f32],
}

fn main() {}
