use hurray::Element;

#[derive(Element, Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(transparent)]
struct Wide(u128);

fn main() {}
