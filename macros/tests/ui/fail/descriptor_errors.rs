use hurray::Descriptor;

#[derive(Descriptor)]
#[hurray(shape = [2])]
struct NoDtype;

#[derive(Descriptor)]
#[hurray(dtype = "f33", shape = [?, 4])]
struct UnknownDtype;

#[derive(Descriptor)]
#[hurray(dtype = "bool", quantization = "per_axis", axis = 1, scale = "i8")]
struct BadQuant;

#[derive(Descriptor)]
#[hurray(dtype = "f32")]
struct NotUnit {
    x: f32,
}

fn main() {}
