use hurray::Tensors;

#[derive(Tensors)]
#[hurray(crate = "hurray", prefix = "x")]
struct Weights<'a> {
    #[hurray(renam = "w")]
    weight: &'a [f32],
    #[hurray(rename = "b", rename = "c", scale = "f32")]
    bias: &'a [f32],
}

// The failed derive still provides `load`: no cascade of errors here.
fn main() {
    let file = hurray::File::from_bytes(&[]).unwrap();
    let _ = Weights::load(&file);
}
