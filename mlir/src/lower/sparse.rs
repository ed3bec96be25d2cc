//! Sparse tensors: `sparse<...>` elements, `#sparse_tensor.encoding`
//! classification (COO, CSR, CSC), compression, and index encoding.

use super::payload::Buf;
use super::{Budget, Collector};
use crate::error::{Error, Result};
use crate::ffi::{self, RawDim, SparseLevel};
use crate::typed;
use crate::types::Storage;
use hurray::{Dim, ElementType, Layout};
use melior::ir::Attribute;

impl<'c> Collector<'c> {
    pub(crate) fn sparse_entry(
        &self,
        value: Attribute<'c>,
        shape: &[Dim],
        storage: Storage,
        encoding: Option<&ffi::SparseEncoding>,
        desc: &str,
        name: &str,
    ) -> Result<(Layout, Vec<Buf<'c>>)> {
        let (indices, values) = ffi::sparse_parts(value).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!("tensor {name:?}: the value is not a sparse elements attribute"),
        })?;
        let idx_ty = typed::attr_type(indices);
        let idx_shape = ffi::ranked_shape(idx_ty).unwrap_or_default();
        let rank = shape.len();
        let nnz = match idx_shape.as_slice() {
            // `sparse<>`: no stored element, whatever shape the indices have.
            s if s.contains(&RawDim::Static(0)) => 0,
            [RawDim::Static(n), RawDim::Static(r)] if *r as usize == rank => *n,
            [RawDim::Static(n)] if rank == 1 => *n,
            [] if rank == 0 => 0,
            _ => {
                return Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!("sparse indices of type {idx_ty} for a rank-{rank} tensor"),
                });
            }
        };
        let n = nnz
            .checked_mul(rank as u64)
            .ok_or_else(|| Error::Malformed {
                op: desc.to_owned(),
                reason: format!("{nnz} sparse entries of rank {rank} overflow 64 bits"),
            })?;
        let coords = read_i64s(indices, n, desc)?;
        let vals = self.values_buf(values, storage, nnz, desc, name)?;
        let entries: Vec<&[i64]> = if rank == 0 {
            Vec::new()
        } else {
            coords.chunks(rank).collect()
        };
        for c in &entries {
            for (i, (&x, d)) in c.iter().zip(shape).enumerate() {
                let inside = matches!(d, Dim::Fixed(n) if x >= 0 && (x as u64) < *n);
                if !inside {
                    return Err(Error::Malformed {
                        op: desc.to_owned(),
                        reason: format!("sparse coordinate {x} outside dimension {i} ({d})"),
                    });
                }
            }
        }
        let coo = |index_type: ElementType| -> Result<(Layout, Vec<Buf<'c>>)> {
            let canonical = entries.windows(2).all(|w| w[0] < w[1]);
            let idx = encode_indices(&coords, index_type);
            Ok((
                Layout::Coo {
                    nnz,
                    index_type,
                    canonical,
                },
                vec![Buf::Owned(idx), vals_owned(&vals)],
            ))
        };
        let Some(enc) = encoding else {
            return coo(ElementType::Int64);
        };
        let index_type = index_type_for(enc);
        match classify(enc, rank) {
            Some(SparseKind::Coo) => coo(index_type),
            Some(SparseKind::Compressed { by_column }) => compress(
                &entries,
                vals,
                shape,
                storage,
                by_column,
                index_type,
                nnz,
                desc,
                self.budget(name),
            ),
            None => Err(unsupported_encoding(desc, enc)),
        }
    }
}

pub(crate) fn read_i64s(indices: Attribute<'_>, n: u64, desc: &str) -> Result<Vec<i64>> {
    read_ints(indices, n, desc, "sparse indices").map(|(v, _)| v)
}

/// `n` integers of a dense 32- or 64-bit integer (or index) attribute, and
/// their width in bits.
pub(crate) fn read_ints(
    a: Attribute<'_>,
    n: u64,
    desc: &str,
    what: &str,
) -> Result<(Vec<i64>, u64)> {
    let el = ffi::element_type(typed::attr_type(a));
    let bits = el.and_then(ffi::dense_storage_bits);
    let is_int = el.is_some_and(|t| {
        let s = ffi::type_str(t);
        s == "index" || s.starts_with('i') || s.starts_with("ui") || s.starts_with("si")
    });
    let width = match bits {
        Some(b @ (32 | 64)) if typed::is_dense_elements(a) && is_int => b,
        _ => {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: format!("{what} must be dense 32- or 64-bit integers"),
            });
        }
    };
    if n == 0 {
        return Ok((Vec::new(), width));
    }
    let per = (width / 8) as usize;
    let splat = ffi::dense_is_splat(a);
    let count = usize::try_from(n).map_err(|_| Error::Malformed {
        op: desc.to_owned(),
        reason: format!("{what}: too many elements"),
    })?;
    let too_many = || Error::Malformed {
        op: desc.to_owned(),
        reason: format!("{what}: {count} elements of {per} bytes overflow the address space"),
    };
    let expanded = count.checked_mul(per).ok_or_else(too_many)?;
    if splat {
        // A splat is one stored integer; the vector below would be built
        // from the count it merely declares, so it is held to the policy.
        hurray::limits::check_expansion(what, per as u64, expanded as u64).map_err(|e| {
            Error::Malformed {
                op: desc.to_owned(),
                reason: e.to_string(),
            }
        })?;
    }
    let len = if splat { per } else { expanded };
    // SAFETY: a dense attribute of `width`-bit integers holding `n` elements:
    // one element's bytes for a splat, else `per` bytes per element.
    let raw = unsafe { ffi::dense_raw(a, len) };
    let mut v: Vec<i64> = raw
        .chunks_exact(per)
        .map(|c| {
            if per == 8 {
                i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))
            } else {
                i64::from(i32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
            }
        })
        .collect();
    if splat {
        v = vec![v.first().copied().unwrap_or(0); count];
    }
    Ok((v, width))
}

pub(crate) fn encode_indices(coords: &[i64], index_type: ElementType) -> Vec<u8> {
    match index_type {
        ElementType::Int32 => coords
            .iter()
            .flat_map(|&c| (c as i32).to_le_bytes())
            .collect(),
        _ => coords.iter().flat_map(|&c| c.to_le_bytes()).collect(),
    }
}

pub(crate) fn vals_owned<'c>(b: &Buf<'c>) -> Buf<'c> {
    match b {
        Buf::Raw(d) => Buf::Raw(d),
        Buf::Owned(d) => Buf::Owned(d.clone()),
        Buf::Packed { data, count, bits } => Buf::Packed {
            data,
            count: *count,
            bits: *bits,
        },
        Buf::Unpacked { data, bits } => Buf::Unpacked { data, bits: *bits },
        Buf::Splat {
            element,
            storage,
            count,
        } => Buf::Splat {
            element,
            storage: *storage,
            count: *count,
        },
    }
}

pub(crate) enum SparseKind {
    Coo,
    Compressed { by_column: bool },
}

pub(crate) fn classify(enc: &ffi::SparseEncoding, rank: usize) -> Option<SparseKind> {
    let identity = enc.dim_of_level.as_deref() == Some(&(0..rank).collect::<Vec<_>>()[..]);
    match enc.levels.as_slice() {
        [SparseLevel::Dense, SparseLevel::Compressed { unique: true }] if rank == 2 => {
            match enc.dim_of_level.as_deref() {
                Some([0, 1]) => Some(SparseKind::Compressed { by_column: false }),
                Some([1, 0]) => Some(SparseKind::Compressed { by_column: true }),
                _ => None,
            }
        }
        [SparseLevel::Compressed { .. }, rest @ ..]
            if identity
                && rest
                    .iter()
                    .all(|l| matches!(l, SparseLevel::Singleton { .. })) =>
        {
            Some(SparseKind::Coo)
        }
        _ => None,
    }
}

pub(crate) fn index_type_for(enc: &ffi::SparseEncoding) -> ElementType {
    let w = enc.pos_width.max(enc.crd_width);
    if w != 0 && w <= 32 {
        ElementType::Int32
    } else {
        ElementType::Int64
    }
}

pub(crate) fn unsupported_encoding(desc: &str, enc: &ffi::SparseEncoding) -> Error {
    Error::Unsupported {
        op: desc.to_owned(),
        what: format!("sparse encoding with levels {:?}", enc.levels),
        reason: "Hurray lowers COO (compressed + singleton levels), CSR and CSC \
                 ((i, j) -> (i : dense, j : compressed) and its transpose)"
            .into(),
    }
}

/// CSR (or CSC with `by_column`) buffers from coordinates and values, in
/// any order. The pointer buffer has one
/// entry per row (column) whatever nnz is, so its size is held to the
/// resource policy against the entries really present before it is allocated.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compress<'c>(
    entries: &[&[i64]],
    vals: Buf<'c>,
    shape: &[Dim],
    storage: Storage,
    by_column: bool,
    index_type: ElementType,
    nnz: u64,
    desc: &str,
    budget: Budget<'_>,
) -> Result<(Layout, Vec<Buf<'c>>)> {
    let (major, minor) = if by_column { (1, 0) } else { (0, 1) };
    let majors = match shape.get(major) {
        Some(Dim::Fixed(n)) => *n as usize,
        _ => {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: "a compressed sparse tensor needs static dimensions".into(),
            });
        }
    };
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (entries[i][major], entries[i][minor]));
    for w in order.windows(2) {
        let (a, b) = (entries[w[0]], entries[w[1]]);
        if a[major] == b[major] && a[minor] == b[minor] {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: format!("duplicate sparse coordinate {a:?}"),
            });
        }
    }
    // An empty tensor has no bytes at all, pointers included (ADR-007).
    let empty = shape.contains(&Dim::Fixed(0));
    let pointer_count = if empty { 0 } else { majors.saturating_add(1) };
    let input = entries
        .iter()
        .map(|e| e.len() as u64 * 8)
        .sum::<u64>()
        .saturating_add(vals.in_len());
    let output = (pointer_count as u64)
        .saturating_mul(index_type.unpacked_size())
        .saturating_add(input);
    budget.check(desc, input, output)?;
    let mut pointers = Vec::new();
    pointers
        .try_reserve_exact(pointer_count)
        .map_err(|_| Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "tensor {:?}: no memory for {pointer_count} row pointers",
                budget.tensor
            ),
        })?;
    pointers.resize(pointer_count, 0i64);
    for e in entries {
        pointers[e[major] as usize + 1] += 1;
    }
    for i in 0..pointers.len().saturating_sub(1) {
        pointers[i + 1] += pointers[i];
    }
    let indices: Vec<i64> = order.iter().map(|&i| entries[i][minor]).collect();
    let sorted = order.iter().enumerate().all(|(k, &i)| k == i);
    let values = if sorted {
        vals
    } else {
        permute(vals, &order, storage, desc)?
    };
    let layout = if by_column {
        Layout::Csc { nnz, index_type }
    } else {
        Layout::Csr { nnz, index_type }
    };
    Ok((
        layout,
        vec![
            Buf::Owned(encode_indices(&pointers, index_type)),
            Buf::Owned(encode_indices(&indices, index_type)),
            values,
        ],
    ))
}

pub(crate) fn permute<'c>(
    vals: Buf<'c>,
    order: &[usize],
    storage: Storage,
    desc: &str,
) -> Result<Buf<'c>> {
    match (vals, storage) {
        (Buf::Raw(d), Storage::Same { bytes }) => Ok(Buf::Owned(
            order
                .iter()
                .flat_map(|&i| d[i * bytes..(i + 1) * bytes].iter().copied())
                .collect(),
        )),
        (v @ Buf::Splat { .. }, _) => Ok(v),
        _ => Err(Error::Unsupported {
            op: desc.to_owned(),
            what: "unsorted sparse coordinates of a sub-byte element type".into(),
            reason: "sort the coordinates in the IR".into(),
        }),
    }
}

/// A dense constant with a sparse encoding: its non-zero elements (any
/// non-zero byte) become the stored entries. The entries are counted first
/// and the sparse buffers' size checked against the resource policy
/// ([`hurray::limits::check_expansion`]) before anything is built; a splat is
/// never expanded densely, so memory is O(nnz).
pub(crate) fn dense_to_sparse<'c>(
    values: Buf<'c>,
    shape: &[Dim],
    storage: Storage,
    enc: &ffi::SparseEncoding,
    desc: &str,
    budget: Budget<'_>,
) -> Result<(Layout, Vec<Buf<'c>>)> {
    let name = budget.tensor;
    let Storage::Same { bytes } = storage else {
        return Err(Error::Unsupported {
            op: desc.to_owned(),
            what: "a dense constant of a sub-byte type with a sparse encoding".into(),
            reason: "write it as sparse<...>".into(),
        });
    };
    let nonzero = |e: &[u8]| e.iter().any(|b| *b != 0);
    // The elements, as (data, how many times each chunk repeats).
    let (data, splat): (&[u8], Option<u64>) = match &values {
        Buf::Raw(d) => (d, None),
        Buf::Owned(d) => (d, None),
        Buf::Splat { element, count, .. } => (&element[..bytes], Some(*count)),
        _ => {
            return Err(Error::Unsupported {
                op: desc.to_owned(),
                what: "a packed dense constant with a sparse encoding".into(),
                reason: "write it as sparse<...>".into(),
            });
        }
    };
    let nnz = match splat {
        Some(count) if nonzero(data) => count,
        Some(_) => 0,
        None => data.chunks_exact(bytes).filter(|e| nonzero(e)).count() as u64,
    };
    let dims: Vec<u64> = shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) => *n,
            Dim::Dynamic => 0,
        })
        .collect();
    let rank = dims.len();
    let index_type = index_type_for(enc);
    let too_big = || Error::Malformed {
        op: desc.to_owned(),
        reason: format!("tensor {name:?}: {nnz} sparse entries overflow 64 bits"),
    };
    let per_entry = (rank as u64)
        .checked_mul(index_type.unpacked_size())
        .and_then(|i| i.checked_add(bytes as u64))
        .ok_or_else(too_big)?;
    let out = nnz.checked_mul(per_entry).ok_or_else(too_big)?;
    budget.check(desc, data.len() as u64, out)?;
    let reserve = |n: u64| -> Result<usize> { usize::try_from(n).map_err(|_| too_big()) };
    let no_memory = |_| Error::Malformed {
        op: desc.to_owned(),
        reason: format!("tensor {name:?}: no memory for {nnz} sparse entries"),
    };
    let mut coords: Vec<i64> = Vec::new();
    let mut vals: Vec<u8> = Vec::new();
    coords
        .try_reserve_exact(reserve(nnz.saturating_mul(rank as u64))?)
        .map_err(no_memory)?;
    vals.try_reserve_exact(reserve(nnz.saturating_mul(bytes as u64))?)
        .map_err(no_memory)?;
    let mut push = |i: u64, e: &[u8]| {
        let mut rem = i;
        let at = coords.len();
        coords.resize(at + rank, 0);
        for k in (0..rank).rev() {
            coords[at + k] = (rem % dims[k].max(1)) as i64;
            rem /= dims[k].max(1);
        }
        vals.extend_from_slice(e);
    };
    if splat.is_some() {
        for i in 0..nnz {
            push(i, data);
        }
    } else {
        for (i, e) in data.chunks_exact(bytes).enumerate() {
            if nonzero(e) {
                push(i as u64, e);
            }
        }
    }
    let entries: Vec<&[i64]> = if rank == 0 {
        Vec::new()
    } else {
        coords.chunks(rank).collect()
    };
    match classify(enc, rank) {
        Some(SparseKind::Coo) => Ok((
            Layout::Coo {
                nnz,
                index_type,
                canonical: true,
            },
            vec![
                Buf::Owned(encode_indices(&coords, index_type)),
                Buf::Owned(vals),
            ],
        )),
        Some(SparseKind::Compressed { by_column }) => compress(
            &entries,
            Buf::Owned(vals),
            shape,
            storage,
            by_column,
            index_type,
            nnz,
            desc,
            budget,
        ),
        None => Err(unsupported_encoding(desc, enc)),
    }
}
