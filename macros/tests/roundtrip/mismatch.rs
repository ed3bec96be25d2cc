//! The same tensors seen through differently declared structs, and the
//! errors that name the field at fault.

use super::*;

#[derive(Tensors, Debug)]
pub(super) struct WrongType<'a> {
    #[hurray(rename = "encoder.bias")]
    pub(super) bias: &'a [f64],
}

#[derive(Tensors, Debug)]
pub(super) struct WrongRank<'a> {
    #[hurray(rename = "encoder.weight")]
    pub(super) weight: &'a [f32],
}

#[derive(Tensors, Debug)]
pub(super) struct WrongDim<'a> {
    #[hurray(rename = "encoder.weight", shape = [3, 2])]
    pub(super) weight: &'a [f32],
}

#[derive(Tensors, Debug)]
pub(super) struct DynamicDim<'a> {
    #[hurray(rename = "encoder.weight", shape = [?, 3])]
    pub(super) weight: &'a [f32],
}

#[derive(Tensors, Debug)]
pub(super) struct Missing<'a> {
    pub(super) nowhere: &'a [f32],
}

#[derive(Tensors, Debug)]
pub(super) struct WrongLayout<'a> {
    #[hurray(rename = "sparse", layout = "csc")]
    pub(super) sparse: Compressed<'a, f32>,
}

#[derive(Tensors, Debug)]
pub(super) struct NotQuantized<'a> {
    #[hurray(rename = "quant", shape = [2, 2])]
    pub(super) quant: &'a [i8],
}

#[derive(Tensors, Debug)]
pub(super) struct OtherScheme<'a> {
    #[hurray(rename = "quant", shape = [2, 2], quantization = "per_tensor")]
    pub(super) quant: Quantized<'a, i8>,
}

#[test]
fn mismatches_are_errors_naming_the_field() {
    let m = model(&W, &B, None);
    let mut bytes = Vec::new();
    m.write_to(&mut bytes).unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let msg = |e: hurray::Error| e.to_string();

    let e = msg(mismatch::WrongType::load(&file).unwrap_err());
    assert!(
        e.contains("\"encoder.bias\"") && e.contains("Float32"),
        "{e}"
    );
    let e = msg(mismatch::WrongRank::load(&file).unwrap_err());
    assert!(
        e.contains("\"encoder.weight\"") && e.contains("rank"),
        "{e}"
    );
    let e = msg(mismatch::WrongDim::load(&file).unwrap_err());
    assert!(
        e.contains("\"encoder.weight\"") && e.contains("shape[0]"),
        "{e}"
    );
    let e = msg(mismatch::Missing::load(&file).unwrap_err());
    assert!(e.contains("\"nowhere\""), "{e}");
    let e = msg(mismatch::WrongLayout::load(&file).unwrap_err());
    assert!(e.contains("\"sparse\"") && e.contains("csc"), "{e}");
    let e = msg(mismatch::NotQuantized::load(&file).unwrap_err());
    assert!(e.contains("\"quant\"") && e.contains("quantization"), "{e}");
    let e = msg(mismatch::OtherScheme::load(&file).unwrap_err());
    assert!(e.contains("\"quant\"") && e.contains("PerAxis"), "{e}");

    // A declared `?` accepts the stored size; fixed dims still count.
    let ok = mismatch::DynamicDim::load(&file).unwrap();
    assert_eq!(ok.weight, &W);
}
