//! Payload buffers as MLIR holds them ([`Buf`]: borrowed raw data, packed
//! or one-per-byte sub-byte codes, splats), and streaming them into the
//! [`hurray::Writer`].

use super::{Collected, Entry, Lowered, LoweredTensor, short};
use crate::error::{Error, Result};
use crate::ffi::{self, Blob, RawDim};
use crate::types::Storage;
use hurray::{TensorWriter, Writer};
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

pub(crate) fn mask_last(byte: u8, count: u64, bits: u32) -> u8 {
    let used = (count * u64::from(bits)) % 8;
    if used == 0 {
        byte
    } else {
        byte & ((1u16 << used) - 1) as u8
    }
}

impl Buf<'_> {
    /// The number of bytes this buffer writes.
    pub(crate) fn out_len(&self) -> u64 {
        match self {
            Buf::Raw(d) => d.len() as u64,
            Buf::Owned(d) => d.len() as u64,
            Buf::Packed { data, .. } => data.len() as u64,
            Buf::Unpacked { data, bits } => {
                hurray::packed_len(data.len() as u64, *bits).unwrap_or(u64::MAX)
            }
            Buf::Splat { storage, count, .. } => match storage {
                Storage::Same { bytes } => count.saturating_mul(*bytes as u64),
                Storage::Bits => count.div_ceil(8),
                Storage::BytePerElement { bits } => {
                    hurray::packed_len(*count, *bits).unwrap_or(u64::MAX)
                }
            },
        }
    }

    pub(crate) fn write<W: Write>(&self, tw: &mut TensorWriter<'_, W>) -> hurray::Result<()> {
        match self {
            Buf::Raw(d) => tw.write_all(d),
            Buf::Owned(d) => tw.write_all(d),
            Buf::Packed { data, count, bits } => {
                if let Some((last, head)) = data.split_last() {
                    tw.write_all(head)?;
                    tw.write_all(&[mask_last(*last, *count, *bits)])?;
                }
                Ok(())
            }
            Buf::Unpacked { data, bits } => {
                // Chunks of a multiple of 8 elements start on a byte boundary.
                let mut packed = Vec::with_capacity(CHUNK);
                for chunk in data.chunks(CHUNK) {
                    packed.clear();
                    pack_into(chunk, *bits, &mut packed);
                    tw.write_all(&packed)?;
                }
                Ok(())
            }
            Buf::Splat {
                element,
                storage,
                count,
            } => write_splat(tw, element, *storage, *count),
        }
    }
}

/// Packs one-per-byte codes (value in the low `bits` bits) LSB-first, as
/// `hurray::pack_codes` does, a byte at a time.
pub(crate) fn pack_into(src: &[u8], bits: u32, out: &mut Vec<u8>) {
    let per = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    let pack = |c: &[u8]| {
        c.iter()
            .enumerate()
            .fold(0u8, |acc, (i, v)| acc | ((v & mask) << (i * bits as usize)))
    };
    match bits {
        4 => out.extend(
            src.chunks_exact(2)
                .map(|c| (c[0] & 0x0F) | ((c[1] & 0x0F) << 4)),
        ),
        2 => out.extend(
            src.chunks_exact(4)
                .map(|c| (c[0] & 3) | ((c[1] & 3) << 2) | ((c[2] & 3) << 4) | ((c[3] & 3) << 6)),
        ),
        _ => out.extend(src.chunks_exact(per).map(pack)),
    }
    let rest = src.chunks_exact(per).remainder();
    if !rest.is_empty() {
        out.push(pack(rest));
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
            count * bytes as u64,
            8,
        ),
        Storage::Bits => {
            let on = element.first().is_some_and(|b| b & 1 == 1);
            (vec![if on { 0xFF } else { 0 }], count.div_ceil(8), 1)
        }
        Storage::BytePerElement { bits } => {
            let code = element.first().copied().unwrap_or(0);
            let per_byte = 8 / bits;
            (
                hurray::pack_codes(std::iter::repeat_n(code, per_byte as usize), bits),
                hurray::packed_len(count, bits).unwrap_or(0),
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
            if let Some(last) = tail.last_mut() {
                *last = mask_last(*last, count, bits);
            }
            tw.write_all(&tail)?;
        } else {
            tw.write_all(&chunk[..n])?;
        }
        left -= n as u64;
    }
    Ok(())
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
    let ty = ffi::attr_type(b);
    let bits = ffi::element_type(ty).and_then(ffi::dense_storage_bits);
    let count = ffi::ranked_shape(ty).and_then(|s| match s.as_slice() {
        [RawDim::Static(n)] => Some(*n),
        _ => None,
    });
    match (ffi::is_dense_elements(b), bits, count) {
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
            if Some(len) == count.checked_mul(per as u64) {
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
            let packed = hurray::packed_len(count, bits).unwrap_or(u64::MAX);
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
                    Ok(Buf::Owned(hurray::pack_codes(b, 1)))
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

    #[test]
    fn pack_into_matches_the_runtime_packing() {
        for bits in [1u32, 2, 4] {
            for len in 0..40usize {
                let codes: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let mut out = Vec::new();
                pack_into(&codes, bits, &mut out);
                assert_eq!(
                    out,
                    hurray::pack_codes(codes.iter().copied(), bits),
                    "{bits} {len}"
                );
            }
        }
    }

    #[test]
    fn mask_last_keeps_only_real_elements() {
        assert_eq!(mask_last(0xFF, 3, 1), 0b111);
        assert_eq!(mask_last(0xFF, 3, 4), 0x0F);
        assert_eq!(mask_last(0xFF, 4, 2), 0xFF);
    }
}
