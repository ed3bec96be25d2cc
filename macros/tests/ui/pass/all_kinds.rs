// Every field kind, with each attribute, through a full save/load.
use hurray::{Descriptor, Element, File, Tensors, derive::StaticDescriptor};
use hurray::elements::Int4;
use hurray::derive::{Compressed, Packed, Quantized};

#[derive(Tensors)]
struct Head<'a> {
    #[hurray(rename = "w", shape = [2, ?])]
    weight: &'a [f32],
}

#[derive(Tensors)]
struct Net<'a> {
    #[hurray(shape = [3, 0, 5])]
    empty: &'a [f32],
    #[hurray(shape = [4])]
    nibbles: Packed<'a, Int4>,
    #[hurray(layout = "csc", shape = [?, 3])]
    sparse: Compressed<'a, f32, i32>,
    #[hurray(quantization = "per_block", axis = 0, block_size = 2, expressed = "bf16")]
    q: Quantized<'a, u8, half::f16>,
    head: Head<'a>,
    r#type: Option<Vec<u32>>,
}

#[derive(Element, Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(transparent)]
struct Celsius(f64);

#[derive(Tensors)]
struct Readings {
    #[hurray(shape = [?, 2])]
    temps: Vec<Celsius>,
}

// Generic over the element type: f32 and bf16 variants of one model.
#[derive(Tensors)]
struct Layer<'a, T: hurray::Element> {
    w: &'a [T],
    b: Vec<T>,
    head: Head<'a>,
}

#[derive(Descriptor)]
#[hurray(name = "out", dtype = "bf16", shape = [?, ?, 64])]
struct Out;

fn main() -> hurray::Result<()> {
    let w = [1.0f32; 4];
    let net = Net {
        empty: &[],
        nibbles: Packed::from_values([1, -1, 7, -8]).unwrap(),
        // An empty matrix: every buffer, pointers included, is 0 bytes (ADR-007 section 4).
        sparse: Compressed::new([0, 3], Vec::<i32>::new(), vec![], vec![]),
        q: Quantized::new(vec![1u8, 2, 3], vec![half::f16::ONE; 2], None),
        head: Head { weight: &w },
        r#type: None,
    };
    let mut bytes = Vec::new();
    net.write_to(&mut bytes)?;
    let file = File::from_bytes(&bytes)?;
    let back = Net::load(&file)?;
    assert_eq!(back.head.weight, &w);
    assert_eq!(file.tensor("head.w")?.dims(), hurray::shape(&[2, 2]));
    assert!(file.get("type").is_none());

    let r = Readings { temps: vec![Celsius(1.0); 4] };
    let mut bytes = Vec::new();
    r.write_to(&mut bytes)?;
    assert_eq!(Readings::load(&File::from_bytes(&bytes)?)?.temps.len(), 4);
    assert!(Out::descriptor().descriptor_only);

    let wide = Layer { w: &[1.0f32, 2.0], b: vec![3.0f32], head: Head { weight: &w } };
    let narrow = Layer {
        w: &[half::bf16::ONE],
        b: vec![half::bf16::ZERO],
        head: Head { weight: &w },
    };
    let mut bytes = Vec::new();
    wide.write_to(&mut bytes)?;
    let file = File::from_bytes(&bytes)?;
    assert_eq!(Layer::<f32>::load(&file)?.w, &[1.0, 2.0]);
    assert!(Layer::<half::bf16>::load(&file).is_err(), "the element type is checked");
    let mut bytes = Vec::new();
    narrow.write_to(&mut bytes)?;
    assert_eq!(Layer::<half::bf16>::load(&File::from_bytes(&bytes)?)?.b, [half::bf16::ZERO]);
    Ok(())
}
