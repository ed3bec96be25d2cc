use hurray::{Tensors};
use hurray::derive::{Compressed, Quantized};

#[derive(Tensors)]
struct Sparse<'a> {
    #[hurray(shape = [3, 4, 5])]
    m: Compressed<'a, f32>,
    #[hurray(shape = [4, 4], quantization = "per_axis", axis = 2)]
    q: Quantized<'a, i8>,
    #[hurray(shape = [2, 3, 4])]
    grid: ndarray::ArrayView2<'a, f32>,
    #[hurray(shape = [5])]
    cube: ndarray::Array<f32, ndarray::Ix3>,
}

fn main() {}
