//! A tensor's values as numbers, a chunk at a time: what a summary of a
//! checkpoint's values (`hurray view --stats`) reads, in bounded memory,
//! whatever the element type, layout or quantization.

use crate::{ElementType, elements::ElementClass};
use crate::{minifloat, pack};

/// The most values [`TensorRef::for_each_value_chunk`](crate::TensorRef::for_each_value_chunk) hands over at once.
pub const VALUE_CHUNK: usize = 1 << 16;

/// A chunk of a tensor's values: `f32` where every value of the type is
/// exactly an `f32` (floats of at most 32 bits, integers of at most 16,
/// bools, dequantized values, which the runtime rounds to `f32`), `f64`
/// otherwise (`f64`, 32- and 64-bit integers; integers above 2^53 round).
#[derive(Debug, Clone, Copy)]
pub enum Values<'c> {
    F32(&'c [f32]),
    F64(&'c [f64]),
}

impl Values<'_> {
    /// How many values.
    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A strided tensor's logical elements, row-major, each read at its
/// offset (strides in elements, verified at open to keep every element
/// inside `bytes`; strided types are byte-aligned).
pub(crate) fn strided_chunks(
    bytes: &[u8],
    t: ElementType,
    dims: &[u64],
    strides: &[i64],
    f: &mut impl FnMut(Values<'_>),
) {
    let count = crate::count::element_count(dims).known().unwrap_or(0);
    if count == 0 {
        return;
    }
    let stored = PackedOrWide {
        bytes,
        element_type: t,
    };
    let narrow = exact_in_f32(t);
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    let mut index = vec![0u64; dims.len()];
    let mut offset = 0i64;
    let mut done = 0u64;
    while done < count {
        let n = (count - done).min(VALUE_CHUNK as u64);
        lo.clear();
        hi.clear();
        for _ in 0..n {
            let v = stored.get(offset as u64);
            if narrow {
                lo.push(v as f32);
            } else {
                hi.push(v);
            }
            // The next index, row-major, and its offset.
            for d in (0..dims.len()).rev() {
                index[d] += 1;
                offset += strides[d];
                if index[d] < dims[d] {
                    break;
                }
                offset -= strides[d] * dims[d] as i64;
                index[d] = 0;
            }
        }
        if narrow {
            f(Values::F32(&lo));
        } else {
            f(Values::F64(&hi));
        }
        done += n;
    }
}

/// Whether every value of `t` is exactly an `f32`.
fn exact_in_f32(t: ElementType) -> bool {
    match t.class() {
        ElementClass::Float => t.bits() <= 32,
        ElementClass::SignedInt | ElementClass::UnsignedInt => t.bits() <= 16,
        ElementClass::Bool => true,
        ElementClass::Complex => false,
    }
}

/// Decodes `count` elements of `t` from `bytes`, handing each chunk to
/// `f`. The common float types take a direct path, one tight loop per
/// type; every other type goes through the exact per-element decoding the
/// dequantization uses.
pub(crate) fn decode_chunks(
    bytes: &[u8],
    t: ElementType,
    count: usize,
    f: &mut impl FnMut(Values<'_>),
) {
    match t {
        ElementType::Float32 => decode_with(bytes, count, f, f32::from_le_bytes),
        ElementType::BFloat16 => decode_with(bytes, count, f, |b: [u8; 2]| {
            f32::from_bits(u32::from(u16::from_le_bytes(b)) << 16)
        }),
        ElementType::Float16 => decode_with(bytes, count, f, |b: [u8; 2]| {
            half::f16::from_bits(u16::from_le_bytes(b)).to_f32()
        }),
        ElementType::Float64 => {
            let mut chunk = Vec::with_capacity(VALUE_CHUNK.min(count));
            for piece in bytes[..count.min(bytes.len() / 8) * 8].chunks(VALUE_CHUNK * 8) {
                chunk.clear();
                chunk.extend(piece.chunks_exact(8).map(|b| {
                    let mut code = [0u8; 8];
                    code.copy_from_slice(b);
                    f64::from_le_bytes(code)
                }));
                f(Values::F64(&chunk));
            }
        }
        _ => {
            let stored = PackedOrWide {
                bytes,
                element_type: t,
            };
            let (mut narrow, mut wide) = (Vec::new(), Vec::new());
            let mut start = 0;
            while start < count {
                let n = (count - start).min(VALUE_CHUNK);
                let values = (start..start + n).map(|i| stored.get(i as u64));
                if exact_in_f32(t) {
                    narrow.clear();
                    narrow.extend(values.map(|v| v as f32));
                    f(Values::F32(&narrow));
                } else {
                    wide.clear();
                    wide.extend(values);
                    f(Values::F64(&wide));
                }
                start += n;
            }
        }
    }
}

/// The direct path of [`decode_chunks`] for a float type of `W` bytes:
/// `decode` is inlined into one loop per chunk, which the compiler
/// vectorizes.
fn decode_with<const W: usize>(
    bytes: &[u8],
    count: usize,
    f: &mut impl FnMut(Values<'_>),
    decode: impl Fn([u8; W]) -> f32,
) {
    let used = count.min(bytes.len() / W) * W;
    let mut chunk = vec![0f32; VALUE_CHUNK.min(count)];
    for piece in bytes[..used].chunks(VALUE_CHUNK * W) {
        let n = piece.len() / W;
        for (out, b) in chunk[..n].iter_mut().zip(piece.chunks_exact(W)) {
            let mut code = [0u8; W];
            code.copy_from_slice(b);
            *out = decode(code);
        }
        f(Values::F32(&chunk[..n]));
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct PackedOrWide<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) element_type: ElementType,
}

impl PackedOrWide<'_> {
    /// Element `i` as a number (integers exact; floats decoded exactly).
    pub(crate) fn get(&self, i: u64) -> f64 {
        let t = self.element_type;
        let bits = t.bits();
        let raw = self.raw(i);
        match t.class() {
            ElementClass::SignedInt => ((raw << (64 - bits)) as i64 >> (64 - bits)) as f64,
            ElementClass::Float => minifloat::to_f64(t, raw).unwrap_or(f64::NAN),
            _ => raw as f64,
        }
    }

    /// Element `i`'s bits (0 past the end, which verified buffers never reach).
    pub(crate) fn raw(&self, i: u64) -> u64 {
        let bits = self.element_type.bits();
        if bits < 8 || !bits.is_multiple_of(8) {
            return u64::from(pack::code_at(self.bytes, bits, i).unwrap_or(0));
        }
        let n = (bits / 8) as usize;
        let at = i as usize * n;
        let mut w = [0u8; 8];
        if let Some(b) = self.bytes.get(at..at + n) {
            w[..n].copy_from_slice(b);
        }
        u64::from_le_bytes(w)
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        ElementType, File, Quantization, TensorDescriptor, Writer, quantization::QuantizationScheme,
    };
    use crate::{Layout, shape};

    fn values_of(file: &File, name: &str) -> Vec<f64> {
        let mut all = Vec::new();
        file.tensor(name)
            .unwrap()
            .for_each_value_chunk(|c| match c {
                super::Values::F32(v) => all.extend(v.iter().map(|&x| f64::from(x))),
                super::Values::F64(v) => all.extend_from_slice(v),
            })
            .unwrap();
        all
    }

    #[test]
    fn every_kind_of_tensor_gives_its_values() {
        let mut bytes = Vec::new();
        let mut w = Writer::new(&mut bytes).unwrap();
        let big: Vec<f32> = (0..200_000).map(|i| i as f32 - 7.5).collect();
        let d = TensorDescriptor::new("big", ElementType::Float32, shape(&[200_000]));
        w.add_tensor(&d, &[crate::as_bytes(&big)]).unwrap();
        let bf: Vec<u16> = [1.5f32, -2.0, f32::NAN, f32::INFINITY]
            .iter()
            .map(|v| (v.to_bits() >> 16) as u16)
            .collect();
        let d = TensorDescriptor::new("bf", ElementType::BFloat16, shape(&[4]));
        w.add_tensor(&d, &[crate::as_bytes(&bf)]).unwrap();
        // Int4 codes -1, 7, -8 packed LSB first.
        let d = TensorDescriptor::new("i4", ElementType::Int4, shape(&[3]));
        w.add_tensor(&d, &[&[0x7f, 0x08]]).unwrap();
        let mut d = TensorDescriptor::new("q", ElementType::Int8, shape(&[2, 2]));
        d.quantization = Some(Quantization::new(
            QuantizationScheme::PerAxis { axis: 0 },
            ElementType::Float32,
            ElementType::Float32,
        ));
        let scales = [0.5f32, 2.0];
        w.add_tensor(&d, &[&[2, 0xfe, 3, 4], crate::as_bytes(&scales), &[]])
            .unwrap();
        let mut d = TensorDescriptor::new("coo", ElementType::Float64, shape(&[4, 4]));
        d.layout = Layout::Coo {
            nnz: 2,
            index_type: ElementType::Int64,
            canonical: true,
        };
        let idx: [i64; 4] = [0, 1, 3, 2];
        let vals = [9.25f64, -1.0];
        w.add_tensor(&d, &[crate::as_bytes(&idx), crate::as_bytes(&vals)])
            .unwrap();
        // Strided [2, 2] with strides [3, 1] over 5 stored elements: the
        // gap (the element at 2) is no value of the tensor.
        let mut d = TensorDescriptor::new("s", ElementType::Float32, shape(&[2, 2]));
        d.layout = Layout::Strided(vec![3, 1]);
        let stored = [1.0f32, 2.0, 99.0, 4.0, 5.0];
        w.add_tensor(&d, &[crate::as_bytes(&stored)]).unwrap();
        let d = TensorDescriptor::new("c", ElementType::Complex64, shape(&[1]));
        w.add_tensor(&d, &[&[0; 8]]).unwrap();
        w.finish().unwrap();
        let file = File::from_bytes(&bytes).unwrap();

        let got = values_of(&file, "big");
        assert_eq!(got.len(), 200_000);
        assert!(got.iter().zip(&big).all(|(a, b)| *a == f64::from(*b)));
        let got = values_of(&file, "bf");
        assert_eq!(got[..2], [1.5, -2.0]);
        assert!(got[2].is_nan() && got[3] == f64::INFINITY);
        assert_eq!(values_of(&file, "i4"), [-1.0, 7.0, -8.0]);
        assert_eq!(values_of(&file, "q"), [1.0, -1.0, 6.0, 8.0]);
        assert_eq!(values_of(&file, "coo"), [9.25, -1.0]);
        assert_eq!(values_of(&file, "s"), [1.0, 2.0, 4.0, 5.0]);
        for (name, n) in [("big", 200_000), ("i4", 3), ("q", 4), ("coo", 2), ("s", 4)] {
            assert_eq!(file.tensor(name).unwrap().value_count(), n, "{name}");
        }
        let e = file
            .tensor("c")
            .unwrap()
            .for_each_value_chunk(|_| {})
            .unwrap_err();
        assert!(e.to_string().contains("complex"), "{e}");
    }
}
