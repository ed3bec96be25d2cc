use hurray::{Tensors};
use hurray::elements::Int4;
use hurray::derive::Packed;

// A borrowed field needs the struct's lifetime.
#[derive(Tensors)]
struct NoLifetime {
    w: &'static [f32],
    p: Packed<'static, Int4>,
}

// One lifetime only, and the fields must use it.
#[derive(Tensors)]
struct TwoLifetimes<'a, 'b> {
    a: &'a [f32],
    b: &'b [f32],
}

// Type parameters are fine, but the field types still need their bounds.
#[derive(Tensors)]
struct Generic<T, const N: usize> {
    w: Vec<T>,
    fixed: Vec<[u8; N]>,
}

fn main() {}
