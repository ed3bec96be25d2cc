use hurray::Element;

#[derive(Element, Clone, Copy)]
struct NotTransparent(f32);

#[derive(Element, Clone, Copy)]
#[repr(transparent)]
struct TwoFields(f32, f32);

#[derive(Element, Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[hurray(shape = [?, 4], dtype(f32))]
#[repr(transparent)]
struct WrongKeys(f32);

#[derive(Element)]
#[repr(transparent)]
enum NotAStruct {
    A,
}

fn main() {}
