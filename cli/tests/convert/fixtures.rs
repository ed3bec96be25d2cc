//! The sample file every round trip starts from, and the tensors of a
//! .hurray or .safetensors file read back for comparison.

use hurray::pack::pack_codes;
use hurray::{ElementType, File, Layout, TensorDescriptor, Writer, shape};
use std::path::{Path, PathBuf};

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

/// A Hurray file with one tensor of every type safetensors and NumPy share, plus
/// bool (packed), an empty tensor, a scalar and a strided (transposed) tensor.
pub(crate) fn sample(dir: &Path) -> PathBuf {
    let path = dir.join("sample.hurray");
    let mut w = Writer::create(&path).unwrap();
    w.set_metadata("format", "pt");
    let f32s: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
    w.add_tensor(
        &TensorDescriptor::new("a.f32", ElementType::Float32, shape(&[3, 4])),
        &[&le(&f32s, f32::to_le_bytes)],
    )
    .unwrap();
    let f64s = [1.5f64, -0.0, f64::MAX, f64::MIN_POSITIVE];
    w.add_tensor(
        &TensorDescriptor::new("b.f64", ElementType::Float64, shape(&[4])),
        &[&le(&f64s, f64::to_le_bytes)],
    )
    .unwrap();
    let bools = [
        true, false, true, true, false, false, true, false, true, true, true,
    ];
    w.add_tensor(
        &TensorDescriptor::new("c.bool", ElementType::Bool, shape(&[11])),
        &[&pack_codes(bools.iter().map(|&b| u8::from(b)), 1)],
    )
    .unwrap();
    let i8s = [-128i8, -1, 0, 1, 127, 5];
    w.add_tensor(
        &TensorDescriptor::new("d.i8", ElementType::Int8, shape(&[2, 3])),
        &[&le(&i8s, i8::to_le_bytes)],
    )
    .unwrap();
    let u64s = [u64::MAX, 0, 1 << 40];
    w.add_tensor(
        &TensorDescriptor::new("e.u64", ElementType::UInt64, shape(&[3, 1])),
        &[&le(&u64s, u64::to_le_bytes)],
    )
    .unwrap();
    let f16s = [0x3c00u16, 0xc000, 0x7bff];
    w.add_tensor(
        &TensorDescriptor::new("f.f16", ElementType::Float16, shape(&[3])),
        &[&le(&f16s, u16::to_le_bytes)],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("g.empty", ElementType::Float32, shape(&[3, 0, 5])),
        &[&[]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("h.scalar", ElementType::Int32, shape(&[])),
        &[&(-7i32).to_le_bytes()],
    )
    .unwrap();
    // Logical [[0, 1, 2], [3, 4, 5]] stored column-major: strides (1, 2).
    let stored = [0i16, 3, 1, 4, 2, 5];
    w.add_tensor(
        &TensorDescriptor::new("i.strided", ElementType::Int16, shape(&[2, 3]))
            .with_layout(Layout::Strided(vec![1, 2])),
        &[&le(&stored, i16::to_le_bytes)],
    )
    .unwrap();
    let u32s = [7u32, 8];
    w.add_tensor(
        &TensorDescriptor::new("j.u32", ElementType::UInt32, shape(&[1, 2, 1]))
            .with_metadata("unit", "m"),
        &[&le(&u32s, u32::to_le_bytes)],
    )
    .unwrap();
    w.finish().unwrap();
    path
}

/// Name, dtype, shape and row-major values (bools as bytes) of every tensor in `path`.
pub(crate) type Tensors = Vec<(String, ElementType, Vec<u64>, Vec<u8>)>;

pub(crate) fn read_hurray(path: &Path) -> Tensors {
    let file = File::open(path).unwrap();
    file.tensors()
        .map(|t| {
            let dims = t.shape().to_wire();
            let bytes = if t.element_type() == ElementType::Bool {
                t.packed().unwrap().iter().map(|v| v as u8).collect()
            } else if let Layout::Strided(s) = t.layout() {
                // Gather by hand (the test's own, independent of the converter).
                assert_eq!(dims.len(), 2);
                let size = (t.element_type().bits() / 8) as usize;
                let data = t.data().unwrap();
                let mut v = Vec::new();
                for i in 0..dims[0] as i64 {
                    for j in 0..dims[1] as i64 {
                        let at = (i * s[0] + j * s[1]) as usize * size;
                        v.extend_from_slice(&data[at..at + size]);
                    }
                }
                v
            } else {
                t.data().unwrap().to_vec()
            };
            (t.name().to_owned(), t.element_type(), dims, bytes)
        })
        .collect()
}

pub(crate) fn read_safetensors(path: &Path) -> (Tensors, Option<Vec<(String, String)>>) {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Tensors = st
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let dtype = format!("{:?}", view.dtype());
            let t = ElementType::from_safetensors_dtype(&dtype).unwrap();
            let dims = view.shape().iter().map(|&d| d as u64).collect();
            (name, t, dims, view.data().to_vec())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta = meta.metadata().as_ref().map(|m| {
        let mut v: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort();
        v
    });
    (out, meta)
}

pub(crate) fn sorted(mut t: Tensors) -> Tensors {
    t.sort_by(|a, b| a.0.cmp(&b.0));
    t
}
