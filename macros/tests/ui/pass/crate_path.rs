// `#[hurray(crate = "...")]`: the generated code names the runtime only
// through the given path.
mod facade {
    pub use ::hurray as runtime;
}

#[derive(facade::runtime::Tensors)]
#[hurray(crate = "crate::facade::runtime")]
struct Weights<'a> {
    w: &'a [f32],
}

#[derive(facade::runtime::Descriptor)]
#[hurray(crate = "crate::facade::runtime", dtype = "i8", shape = [2])]
struct Sig;

#[derive(facade::runtime::Element, Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[hurray(crate = "crate::facade::runtime")]
#[repr(transparent)]
struct Id(u32);

fn main() {
    use facade::runtime::derive::StaticDescriptor;
    let w = Weights { w: &[1.0] };
    assert_eq!(w.descriptors().unwrap().len(), 1);
    assert_eq!(Sig::descriptor().name, "Sig");
    assert_eq!(<Id as facade::runtime::Element>::TYPE.name(), "u32");
}
