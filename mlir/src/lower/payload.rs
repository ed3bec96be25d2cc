//! Payload buffers as MLIR holds them ([`Buf`]: borrowed raw data, packed
//! or one-per-byte sub-byte codes, splats), and streaming them into the
//! [`hurray::Writer`].

use super::{Collected, Entry, Lowered, LoweredTensor, short};
use crate::error::{Error, Result};
use crate::ffi::{self, Blob, RawDim};
use crate::typed;
use crate::types::Storage;
use hurray::pack::clear_padding;
use hurray::{Writer, writer::TensorWriter};
use melior::ir::Attribute;
use std::io::Write;

pub(crate) fn write_all<W: Write>(
    mut writer: Writer<W>,
    collected: Collected<'_>,
) -> Result<Lowered> {
    let Collected {
        mut entries,
        skipped,
        file,
    } = collected;
    // Data in name order, the header's order: the same tensors always give
    // the same bytes, so lower(import(file)) reproduces a lowered file exactly.
    entries.sort_by(|a, b| a.desc.name.cmp(&b.desc.name));
    if let Some(f) = &file {
        if let Some(a) = f.alignment {
            writer.set_alignment(a)?;
        }
        for (k, v) in &f.metadata {
            writer.set_metadata(k.clone(), v.clone());
        }
    }
    let mut tensors = Vec::with_capacity(entries.len());
    for e in entries {
        let bytes = write_entry(&mut writer, &e)?;
        tensors.push(LoweredTensor {
            op: e.op,
            descriptor: e.desc,
            bytes,
        });
    }
    let file_len = writer.finish()?;
    Ok(Lowered {
        tensors,
        skipped,
        file_len,
    })
}

/// One buffer's bytes, as MLIR holds them.
#[derive(Debug)]
pub(crate) enum Buf<'c> {
    /// Exactly the bytes to write.
    Raw(&'c [u8]),
    Owned(Vec<u8>),
    /// `count` elements of `bits` bits, packed LSB-first, except that the
    /// unused high bits of the last byte may be garbage.
    Packed {
        data: &'c [u8],
        count: u64,
        bits: u32,
    },
    /// `count` elements stored one per byte (value in the low `bits` bits).
    Unpacked {
        data: &'c [u8],
        bits: u32,
    },
    /// One element (MLIR storage) repeated `count` times.
    Splat {
        element: &'c [u8],
        storage: Storage,
        count: u64,
    },
}

const CHUNK: usize = 1 << 20;

impl Buf<'_> {
    /// The number of bytes this buffer writes.
    pub(crate) fn out_len(&self) -> u64 {
        match self {
            Buf::Raw(d) => d.len() as u64,
            Buf::Owned(d) => d.len() as u64,
            Buf::Packed { data, .. } => data.len() as u64,
            Buf::Unpacked { data, bits } => {
                hurray::elements::packed_len(data.len() as u64, *bits).unwrap_or(u64::MAX)
            }
            Buf::Splat { storage, count, .. } => {
                hurray::elements::packed_len(*count, storage.bits()).unwrap_or(u64::MAX)
            }
        }
    }

    /// The bytes of the IR this buffer is made from (a splat: its one
    /// element), which the resource policy weighs its output against.
    pub(crate) fn in_len(&self) -> u64 {
        match self {
            Buf::Raw(d) | Buf::Packed { data: d, .. } | Buf::Unpacked { data: d, .. } => {
                d.len() as u64
            }
            Buf::Owned(d) => d.len() as u64,
            Buf::Splat { element, .. } => element.len() as u64,
        }
    }

    pub(crate) fn write<W: Write>(&self, tw: &mut TensorWriter<'_, W>) -> hurray::Result<()> {
        match self {
            Buf::Raw(d) => tw.write_all(d),
            Buf::Owned(d) => tw.write_all(d),
            Buf::Packed { data, count, bits } => {
                if let Some((last, head)) = data.split_last() {
                    tw.write_all(head)?;
                    let mut last = [*last];
                    clear_padding(&mut last, *bits, *count);
                    tw.write_all(&last)?;
                }
                Ok(())
            }
            // The runtime packs straight into the output (LSB-first, zero padding).
            Buf::Unpacked { data, bits } => tw.write_packed(data, *bits),
            Buf::Splat {
                element,
                storage,
                count,
            } => write_splat(tw, element, *storage, *count),
        }
    }
}

fn write_splat<W: Write>(
    tw: &mut TensorWriter<'_, W>,
    element: &[u8],
    storage: Storage,
    count: u64,
) -> hurray::Result<()> {
    if count == 0 {
        return Ok(());
    }
    let (pattern, total, bits): (Vec<u8>, u64, u32) = match storage {
        Storage::Same { bytes } => (
            element[..bytes.min(element.len())].to_vec(),
            hurray::elements::packed_len(count, storage.bits()).unwrap_or(0),
            8,
        ),
        Storage::Bits => {
            let on = element.first().is_some_and(|b| b & 1 == 1);
            (
                vec![if on { 0xFF } else { 0 }],
                hurray::elements::packed_len(count, 1).unwrap_or(0),
                1,
            )
        }
        Storage::BytePerElement { bits } => {
            let code = element.first().copied().unwrap_or(0);
            // The shortest run of codes that fills whole bytes: 8 / gcd(bits, 8)
            // codes (two 4-bit codes in one byte, four 6-bit codes in three),
            // so the pattern repeats byte-aligned.
            let codes = 8 / gcd(bits, 8);
            (
                hurray::pack::pack_codes(std::iter::repeat_n(code, codes as usize), bits),
                hurray::elements::packed_len(count, bits).unwrap_or(0),
                bits,
            )
        }
    };
    if pattern.is_empty() {
        return Ok(());
    }
    let reps = (CHUNK / pattern.len()).max(1);
    let chunk: Vec<u8> = pattern.repeat(reps);
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        if left == n as u64 && bits < 8 {
            // The last byte keeps only the bits of real elements.
            let mut tail = chunk[..n].to_vec();
            clear_padding(&mut tail, bits, count);
            tw.write_all(&tail)?;
        } else {
            tw.write_all(&chunk[..n])?;
        }
        left -= n as u64;
    }
    Ok(())
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn write_entry<W: Write>(writer: &mut Writer<W>, e: &Entry<'_>) -> Result<u64> {
    let tensor_err = |source| Error::Tensor {
        tensor: e.desc.name.clone(),
        op: e.op.clone(),
        error: Box::new(source),
    };
    let plan = e.desc.buffer_plan().map_err(tensor_err)?;
    let expected = plan.buffers();
    if !e.desc.descriptor_only {
        if expected.len() != e.buffers.len() {
            return Err(Error::Malformed {
                op: e.op.clone(),
                reason: format!(
                    "tensor {:?} needs {} buffer(s) ({:?}), the IR gives {}",
                    e.desc.name,
                    expected.len(),
                    expected.iter().map(|x| x.0.name()).collect::<Vec<_>>(),
                    e.buffers.len()
                ),
            });
        }
        for ((role, len), b) in expected.iter().zip(&e.buffers) {
            if b.out_len() != *len {
                return Err(Error::Malformed {
                    op: e.op.clone(),
                    reason: format!(
                        "tensor {:?}: buffer {role} holds {} bytes, its descriptor needs {len}",
                        e.desc.name,
                        b.out_len()
                    ),
                });
            }
        }
    }
    let mut tw = writer.begin_tensor(&e.desc).map_err(tensor_err)?;
    if !e.desc.descriptor_only {
        for b in &e.buffers {
            b.write(&mut tw).map_err(tensor_err)?;
        }
    }
    tw.finish().map_err(tensor_err)?;
    Ok(if e.desc.descriptor_only {
        0
    } else {
        plan.total()
    })
}

/// Bytes of a `hurray.tensor` buffer: a `dense_resource` blob, or a dense
/// attribute of 8-bit integers (Hurray's wire bytes, verbatim).
pub(crate) fn raw_bytes<'c>(b: Attribute<'c>, desc: &str, name: &str, i: usize) -> Result<Buf<'c>> {
    match ffi::resource_blob(b) {
        Blob::Data(_, bytes) => return Ok(Buf::Raw(bytes)),
        Blob::Missing(key) => {
            return Err(Error::MissingResourceData {
                op: desc.to_owned(),
                tensor: name.to_owned(),
                resource: key,
            });
        }
        Blob::NotResource => {}
    }
    let ty = typed::attr_type(b);
    let bits = ffi::element_type(ty).and_then(ffi::dense_storage_bits);
    let count = ffi::ranked_shape(ty).and_then(|s| match s.as_slice() {
        [RawDim::Static(n)] => Some(*n),
        _ => None,
    });
    match (typed::is_dense_elements(b), bits, count) {
        (true, Some(8), Some(0)) => Ok(Buf::Raw(&[])),
        (true, Some(8), Some(n)) => {
            let n = usize::try_from(n).map_err(|_| Error::Malformed {
                op: desc.to_owned(),
                reason: "buffer larger than the address space".into(),
            })?;
            if ffi::dense_is_splat(b) {
                // SAFETY: a dense attribute of 8-bit elements; a splat stores one byte.
                let one = unsafe { ffi::dense_raw(b, 1) };
                Ok(Buf::Splat {
                    element: one,
                    storage: Storage::Same { bytes: 1 },
                    count: n as u64,
                })
            } else {
                // SAFETY: a dense attribute of `n` 8-bit elements stores `n` bytes.
                Ok(Buf::Raw(unsafe { ffi::dense_raw(b, n) }))
            }
        }
        _ => Err(Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "tensor {name:?}: buffers[{i}] is {}; expected dense_resource<...> or dense<...> \
                 of a rank-1 tensor of 8-bit integers",
                short(&ffi::attr_str(b))
            ),
        }),
    }
}

/// A buffer from a `dense_resource` blob: byte-aligned types verbatim
/// (zero-copy); sub-byte types either already packed or one byte per element.
pub(crate) fn blob_buf<'c>(
    bytes: &'c [u8],
    storage: Storage,
    count: u64,
    desc: &str,
    name: &str,
    key: &str,
) -> Result<Buf<'c>> {
    let len = bytes.len() as u64;
    let bad = |expected: String| Error::Malformed {
        op: desc.to_owned(),
        reason: format!(
            "tensor {name:?}: dense_resource<{key}> holds {len} bytes, expected {expected}"
        ),
    };
    match storage {
        Storage::Same { bytes: per } => {
            if Some(len) == hurray::elements::packed_len(count, storage.bits()) {
                Ok(Buf::Raw(bytes))
            } else {
                Err(bad(format!("{count} x {per}")))
            }
        }
        Storage::Bits | Storage::BytePerElement { .. } => {
            let bits = match storage {
                Storage::BytePerElement { bits } => bits,
                _ => 1,
            };
            let packed = hurray::elements::packed_len(count, bits).unwrap_or(u64::MAX);
            if len == packed {
                Ok(Buf::Packed {
                    data: bytes,
                    count,
                    bits,
                })
            } else if len == count {
                if bits == 1 {
                    // Bools one per byte: any non-zero byte is true.
                    let b: Vec<u8> = bytes.iter().map(|&b| u8::from(b != 0)).collect();
                    Ok(Buf::Owned(hurray::pack::pack_codes(b, 1)))
                } else {
                    Ok(Buf::Unpacked { data: bytes, bits })
                }
            } else {
                Err(bad(format!(
                    "{packed} (packed) or {count} (one per element)"
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hurray::{Dim, ElementType, TensorDescriptor, descriptor::BufferRole};

    /// One-per-byte codes (garbage in the high bits) across a chunk boundary
    /// and packed bytes with garbage padding come out as the runtime packs
    /// them: LSB-first, the unused high bits of the last byte zero.
    #[test]
    fn sub_byte_buffers_are_written_as_the_runtime_packs() {
        // Past one chunk of 4-bit codes (CHUNK packed bytes).
        let n = CHUNK * 2 + 3;
        let codes: Vec<u8> = (0..n).map(|i| (i * 7 + 0xA3) as u8).collect();
        let bools = [0xFFu8, 0xFF];
        let entries = vec![
            Entry {
                desc: TensorDescriptor::new("a", ElementType::Int4, vec![Dim::Fixed(n as u64)]),
                op: "test".into(),
                buffers: vec![Buf::Unpacked {
                    data: &codes,
                    bits: 4,
                }],
                origin: None,
            },
            Entry {
                desc: TensorDescriptor::new("b", ElementType::Bool, vec![Dim::Fixed(11)]),
                op: "test".into(),
                buffers: vec![Buf::Packed {
                    data: &bools,
                    count: 11,
                    bits: 1,
                }],
                origin: None,
            },
        ];
        let mut out = Vec::new();
        let collected = Collected {
            entries,
            skipped: Vec::new(),
            file: None,
        };
        write_all(Writer::new(&mut out).unwrap(), collected).unwrap();
        let file = hurray::File::from_bytes(&out).unwrap();
        let a = file.tensor("a").unwrap();
        assert_eq!(
            a.buffer(BufferRole::Values).unwrap(),
            hurray::pack::pack_codes(codes.iter().copied(), 4)
        );
        let b = file.tensor("b").unwrap();
        assert_eq!(b.buffer(BufferRole::Values).unwrap(), [0xFF, 0x07]);
    }

    /// 6-bit codes (which span bytes) one per byte across a chunk boundary,
    /// and 6-bit splats longer than a chunk and of every length mod 4: the
    /// bytes the runtime's packer gives, the padding zero.
    #[test]
    fn six_bit_buffers_and_splats_are_written_as_the_runtime_packs() {
        // Past one chunk of 6-bit codes (CHUNK packed bytes).
        let n = CHUNK * 8 / 6 + 3;
        let codes: Vec<u8> = (0..n).map(|i| (i * 7 + 0xA3) as u8).collect();
        let code = 0xEA_u8; // 0x2A in its low 6 bits, garbage above
        let splats = [1u64, 2, 3, 4, 5, 7, (CHUNK as u64) * 4 / 3 + 5];
        let mut entries = vec![Entry {
            desc: TensorDescriptor::new("a", ElementType::Float6E2M3FN, vec![Dim::Fixed(n as u64)]),
            op: "test".into(),
            buffers: vec![Buf::Unpacked {
                data: &codes,
                bits: 6,
            }],
            origin: None,
        }];
        for count in splats {
            entries.push(Entry {
                desc: TensorDescriptor::new(
                    format!("s{count}"),
                    ElementType::Float6E3M2FN,
                    vec![Dim::Fixed(count)],
                ),
                op: "test".into(),
                buffers: vec![Buf::Splat {
                    element: std::slice::from_ref(&code),
                    storage: Storage::BytePerElement { bits: 6 },
                    count,
                }],
                origin: None,
            });
        }
        let mut out = Vec::new();
        let collected = Collected {
            entries,
            skipped: Vec::new(),
            file: None,
        };
        write_all(Writer::new(&mut out).unwrap(), collected).unwrap();
        let file = hurray::File::from_bytes(&out).unwrap();
        let a = file.tensor("a").unwrap();
        assert_eq!(
            a.buffer(BufferRole::Values).unwrap(),
            hurray::pack::pack_codes(codes.iter().copied(), 6)
        );
        for count in splats {
            let s = file.tensor(&format!("s{count}")).unwrap();
            let bytes = s.buffer(BufferRole::Values).unwrap();
            let want = hurray::pack::pack_codes(std::iter::repeat_n(0x2A, count as usize), 6);
            assert!(bytes == want.as_slice(), "splat of {count}");
        }
    }
}
