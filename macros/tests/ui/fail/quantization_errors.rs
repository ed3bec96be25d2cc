use hurray::{Tensors};
use hurray::derive::Quantized;

#[derive(Tensors)]
struct Q<'a> {
    no_scheme: Quantized<'a, i8>,
    #[hurray(quantization = "per_axis")]
    no_axis: Quantized<'a, i8>,
    #[hurray(quantization = "per_block", axis = 0)]
    no_block: Quantized<'a, i8>,
    #[hurray(quantization = "per_tensor", axis = 0, block_size = 4)]
    extra: Quantized<'a, i8>,
    #[hurray(quantization = "per_row", expressed = "i8")]
    unknown: Quantized<'a, i8>,
    #[hurray(quantization = "per_tensor")]
    plain: &'a [i8],
}

fn main() {}
