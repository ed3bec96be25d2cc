//! The one form values travel in between formats: row-major, little-endian,
//! one byte (0 or 1) per bool. Hurray's packed bools are unpacked with the
//! runtime's [`hurray::pack`]; a Fortran-order `.npy` or a strided Hurray
//! tensor is gathered into row-major order; a big-endian `.npy` is
//! byte-swapped.

use super::{CHUNK, Emit, Entry};
use anyhow::{Result, anyhow};
use hurray::elements::ElementClass;

/// Streams `e`'s values, stored as `data`, in canonical form.
pub(super) fn canonical(e: &Entry<'_>, data: &[u8], emit: &mut Emit<'_>) -> Result<()> {
    let count = e.count()?;
    if count == 0 {
        return Ok(());
    }
    if e.packed_bool {
        let codes = hurray::pack::unpack_codes(data, 1, count);
        if (codes.len() as u64) < count {
            return Err(anyhow!("tensor {:?}: the packed bools run out", e.name));
        }
        let mut buf = Vec::with_capacity(CHUNK);
        for code in codes {
            buf.push(code);
            if buf.len() == CHUNK {
                emit(&buf)?;
                buf.clear();
            }
        }
        return if buf.is_empty() { Ok(()) } else { emit(&buf) };
    }
    let size = e.dtype.unpacked_size() as usize;
    // Byte-swap unit: an element, or each half of a complex number.
    let unit = if e.dtype.class() == ElementClass::Complex {
        size / 2
    } else {
        size
    };
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + size);
    let mut flush = |buf: &mut Vec<u8>| -> Result<()> {
        if e.big_endian {
            buf.chunks_exact_mut(unit).for_each(<[u8]>::reverse);
        }
        emit(buf)?;
        buf.clear();
        Ok(())
    };
    let Some(strides) = &e.strides else {
        if !e.big_endian {
            // Already canonical: straight from the map.
            for chunk in data.chunks(CHUNK) {
                emit(chunk)?;
            }
            return Ok(());
        }
        for chunk in data.chunks(CHUNK) {
            buf.extend_from_slice(chunk);
            flush(&mut buf)?;
        }
        return Ok(());
    };
    // Gather, walking the destination in row-major order.
    let rank = e.shape.len();
    let out_of_range = || anyhow!("tensor {:?}: strides reach past the data", e.name);
    let at = |offset: u64| {
        usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_mul(size))
    };
    if rank >= 2 && strides[rank - 1] != 1 {
        // The last dimension is not contiguous (a Fortran-order or transposed
        // array): gather tiles of whole rows, reading along the source's
        // memory order inside each tile so the reads stay sequential.
        let (m, n) = (e.shape[rank - 2] as usize, e.shape[rank - 1] as usize);
        let (sm, sn) = (strides[rank - 2] as usize, strides[rank - 1] as usize);
        let row = n * size;
        let tile_rows = (CHUNK / row).clamp(1, m);
        let mut tile = vec![0u8; tile_rows * row];
        return for_each_outer(&e.shape[..rank - 2], strides, |base| {
            let base = usize::try_from(base).map_err(|_| out_of_range())?;
            for first in (0..m).step_by(tile_rows) {
                let rows = tile_rows.min(m - first);
                let start = base + first * sm;
                let filled = match size {
                    1 => gather_tile::<1>(data, &mut tile, start, rows, n, sm, sn),
                    2 => gather_tile::<2>(data, &mut tile, start, rows, n, sm, sn),
                    4 => gather_tile::<4>(data, &mut tile, start, rows, n, sm, sn),
                    8 => gather_tile::<8>(data, &mut tile, start, rows, n, sm, sn),
                    16 => gather_tile::<16>(data, &mut tile, start, rows, n, sm, sn),
                    _ => None,
                };
                filled.ok_or_else(out_of_range)?;
                buf.extend_from_slice(&tile[..rows * row]);
                flush(&mut buf)?;
            }
            Ok(())
        });
    }
    // Copy whole rows when the last dimension is contiguous, single elements otherwise.
    let (outer, run) = match strides.last() {
        Some(1) => (rank - 1, e.shape[rank - 1] as usize),
        _ => (rank, 1),
    };
    for_each_outer(&e.shape[..outer], strides, |offset| {
        let start = at(offset).ok_or_else(out_of_range)?;
        let bytes = data
            .get(start..start + run * size)
            .ok_or_else(out_of_range)?;
        buf.extend_from_slice(bytes);
        if buf.len() >= CHUNK {
            flush(&mut buf)?;
        }
        Ok(())
    })?;
    if !buf.is_empty() {
        flush(&mut buf)?;
    }
    Ok(())
}
/// Calls `f` with the element offset of every index over `shape` (the leading
/// dimensions of a tensor with `strides`), in row-major order. Every dimension is >= 1.
fn for_each_outer(
    shape: &[u64],
    strides: &[u64],
    mut f: impl FnMut(u64) -> Result<()>,
) -> Result<()> {
    let mut index = vec![0u64; shape.len()];
    let mut offset = 0u64;
    loop {
        f(offset)?;
        // The odometer.
        let mut d = shape.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            index[d] += 1;
            offset += strides[d];
            if index[d] < shape[d] {
                break;
            }
            offset -= strides[d] * shape[d];
            index[d] = 0;
        }
    }
}

/// Fills `tile` with `rows` row-major rows of `n` elements of `S` bytes: element
/// `(k, j)` comes from element offset `start + k * sm + j * sn` of `data`.
/// `None` if an offset falls outside `data`.
fn gather_tile<const S: usize>(
    data: &[u8],
    tile: &mut [u8],
    start: usize,
    rows: usize,
    n: usize,
    sm: usize,
    sn: usize,
) -> Option<()> {
    for j in 0..n {
        let column = start.checked_add(j.checked_mul(sn)?)?;
        for k in 0..rows {
            let src = column.checked_add(k.checked_mul(sm)?)?.checked_mul(S)?;
            let dst = (k * n + j) * S;
            tile[dst..dst + S].copy_from_slice(data.get(src..src.checked_add(S)?)?);
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::{Data, npy::fortran_strides};
    use super::*;
    use hurray::ElementType;

    /// The canonical bytes of a tensor stored as `data` with `strides`.
    fn gathered(
        dtype: ElementType,
        shape: &[u64],
        strides: Option<Vec<u64>>,
        data: &[u8],
    ) -> Vec<u8> {
        let e = Entry {
            strides,
            packed_bool: dtype == ElementType::Bool,
            ..Entry::new("t".into(), dtype, shape.to_vec(), Data::Slice(data))
        };
        let mut out = Vec::new();
        canonical(&e, data, &mut |c: &[u8]| {
            out.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn packed_bools_unpack_to_one_byte_each() {
        let bools: Vec<u8> = (0..19).map(|i| u8::from(i % 3 == 0)).collect();
        let packed = hurray::pack::pack_codes(bools.iter().copied(), 1);
        assert_eq!(gathered(ElementType::Bool, &[19], None, &packed), bools);
        assert_eq!(gathered(ElementType::Bool, &[3, 0, 5], None, &[]), b"");
    }

    #[test]
    fn gather_fortran_order() {
        // [[1, 2, 3], [4, 5, 6]] stored column-major.
        let values: [u16; 6] = [1, 4, 2, 5, 3, 6];
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let out = gathered(
            ElementType::UInt16,
            &[2, 3],
            fortran_strides(&[2, 3]),
            &data,
        );
        let got: Vec<u16> = out
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(got, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn gather_tiles_cover_every_row_of_a_3d_fortran_array() {
        // Rows of 3 bytes: tiles hold CHUNK / 3 rows, so 400_000 rows need two tiles.
        let shape = [2u64, 400_000, 3];
        let count: u64 = shape.iter().product();
        let strides = fortran_strides(&shape).unwrap();
        // Column-major storage of the logical value (a, b, c) -> (a + 7 b + 13 c) % 251.
        let value = |a: u64, b: u64, c: u64| ((a + 7 * b + 13 * c) % 251) as u8;
        let mut data = vec![0u8; count as usize];
        for a in 0..shape[0] {
            for b in 0..shape[1] {
                for c in 0..shape[2] {
                    let at = a * strides[0] + b * strides[1] + c * strides[2];
                    data[at as usize] = value(a, b, c);
                }
            }
        }
        let out = gathered(ElementType::UInt8, &shape, Some(strides), &data);
        let mut i = 0;
        for a in 0..shape[0] {
            for b in 0..shape[1] {
                for c in 0..shape[2] {
                    assert_eq!(out[i], value(a, b, c), "({a}, {b}, {c})");
                    i += 1;
                }
            }
        }
        assert_eq!(i, out.len());
    }
}
