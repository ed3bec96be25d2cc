//! ExecuTorch's external-data file (`.ptd`, the FlatTensor format) as a
//! source and a destination.
//!
//! A `.ptd` file is one FlatBuffer (file identifier `FT01`) followed by
//! data segments. Bytes 8..56 inside the FlatBuffer hold an extended header
//! (magic `FH01`, its length, then four little-endian u64: where the
//! FlatBuffer's tables start and how long it is, where the segments start
//! and how many bytes they take). The root table lists the segments
//! (offset from the segment base, size) and the named data: a key, a
//! segment index and, for a tensor, a layout (ExecuTorch's scalar type,
//! i32 sizes, a dim order). Keys become tensor names, layouts shapes and
//! element types; a blob without a layout reads as a 1-D `u8` tensor whose
//! metadata says so, and is written back without one.
//!
//! The FlatBuffer is read by a reader of its own here (the project's
//! generated code is for Hurray's schema): every offset it follows is
//! checked against the bytes before it is used, every count against what
//! the bytes can hold, and nothing is allocated that the file merely
//! claims.

use super::placed::Placed;
use super::{Data, Entry, Source};
use crate::limits::{PTD_MAX_KEY, PTD_MAX_RANK};
use anyhow::{Context, Result, anyhow, bail};
use hurray::ElementType;
use std::path::Path;

const IDENTIFIER: &[u8; 4] = b"FT01";
const HEADER_MAGIC: &[u8; 4] = b"FH01";
/// Where the extended header starts, and its length (magic, length, four u64).
const HEADER_AT: usize = 8;
const HEADER_LEN: u32 = 40;
/// The extended header padded to the FlatBuffer's 16-byte alignment.
const PADDED_HEADER_LEN: u64 = 48;
/// The highest FlatTensor schema version ExecuTorch 1.5 reads.
const MAX_VERSION: u32 = 0;
/// Segment alignment ExecuTorch's serializer uses (and the least a segment
/// written here gets).
const SEGMENT_ALIGN: u64 = 128;
/// The per-tensor metadata key that marks a blob without a tensor layout.
pub(super) const BLOB_KEY: &str = "executorch.tensor_layout";
const BLOB_VALUE: &str = "none";

/// ExecuTorch's `ScalarType` values with a Hurray element type, and their names.
const SCALAR_TYPES: &[(i8, &str, ElementType)] = &[
    (0, "Byte", ElementType::UInt8),
    (1, "Char", ElementType::Int8),
    (2, "Short", ElementType::Int16),
    (3, "Int", ElementType::Int32),
    (4, "Long", ElementType::Int64),
    (5, "Half", ElementType::Float16),
    (6, "Float", ElementType::Float32),
    (7, "Double", ElementType::Float64),
    (11, "Bool", ElementType::Bool),
    (15, "BFloat16", ElementType::BFloat16),
    (23, "Float8_e5m2", ElementType::Float8E5M2),
    (24, "Float8_e4m3fn", ElementType::Float8E4M3FN),
    (25, "Float8_e5m2fnuz", ElementType::Float8E5M2FNUZ),
    (26, "Float8_e4m3fnuz", ElementType::Float8E4M3FNUZ),
    (27, "UInt16", ElementType::UInt16),
    (28, "UInt32", ElementType::UInt32),
    (29, "UInt64", ElementType::UInt64),
];

/// ExecuTorch's values that have no Hurray element type, named for messages.
const UNMAPPED: &[(i8, &str)] = &[
    (8, "ComplexHalf"),
    (9, "ComplexFloat"),
    (10, "ComplexDouble"),
    (12, "QInt8"),
    (13, "QUInt8"),
    (14, "QInt32"),
    (16, "QUInt4x2"),
    (17, "QUInt2x4"),
    (22, "Bits16"),
];

/// The ExecuTorch scalar type of `t`, with its name; `None` where ExecuTorch has none.
pub(super) fn scalar_type(t: ElementType) -> Option<(i8, &'static str)> {
    SCALAR_TYPES
        .iter()
        .find(|(_, _, e)| *e == t)
        .map(|(v, n, _)| (*v, *n))
}

fn element_type(value: i8, key: &str) -> Result<ElementType> {
    if let Some((_, _, t)) = SCALAR_TYPES.iter().find(|(v, _, _)| *v == value) {
        return Ok(*t);
    }
    match UNMAPPED.iter().find(|(v, _)| *v == value) {
        Some((_, name)) => {
            bail!("named data {key:?}: scalar type {name} ({value}) has no Hurray element type")
        }
        None => bail!("named data {key:?}: scalar type {value} is not one ExecuTorch defines"),
    }
}

/// A FlatBuffer in `buf`, read with every offset checked.
#[derive(Clone, Copy)]
struct Buf<'a>(&'a [u8]);

/// One table of it: where it is and where its vtable is.
#[derive(Clone, Copy)]
struct Table<'a> {
    buf: Buf<'a>,
    at: usize,
    vtable: usize,
    vtable_len: usize,
}

impl<'a> Buf<'a> {
    fn bytes(self, at: usize, len: usize, what: &str) -> Result<&'a [u8]> {
        at.checked_add(len)
            .and_then(|end| self.0.get(at..end))
            .ok_or_else(|| {
                anyhow!(
                    "{what} at {at} ({len} bytes) lies outside the {}-byte FlatBuffer",
                    self.0.len()
                )
            })
    }

    fn u16(self, at: usize) -> Result<u16> {
        Ok(u16::from_le_bytes(
            self.bytes(at, 2, "a vtable entry")?.try_into()?,
        ))
    }

    fn u32(self, at: usize) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.bytes(at, 4, "an offset")?.try_into()?,
        ))
    }

    /// Where the unsigned offset stored at `at` points.
    fn follow(self, at: usize) -> Result<usize> {
        at.checked_add(self.u32(at)? as usize)
            .filter(|&to| to < self.0.len())
            .ok_or_else(|| anyhow!("an offset at {at} points outside the FlatBuffer"))
    }

    fn table(self, at: usize) -> Result<Table<'a>> {
        let soffset = i32::from_le_bytes(self.bytes(at, 4, "a table")?.try_into()?);
        let vtable = (at as i64)
            .checked_sub(i64::from(soffset))
            .and_then(|v| usize::try_from(v).ok())
            .ok_or_else(|| {
                anyhow!("the vtable of the table at {at} lies outside the FlatBuffer")
            })?;
        let vtable_len = usize::from(self.u16(vtable)?);
        if vtable_len < 4 || vtable_len % 2 != 0 {
            bail!("the vtable at {vtable} has length {vtable_len}");
        }
        self.bytes(vtable, vtable_len, "a vtable")?;
        Ok(Table {
            buf: self,
            at,
            vtable,
            vtable_len,
        })
    }
}

impl<'a> Table<'a> {
    /// Where field `slot` is stored, if it is present.
    fn field(&self, slot: usize) -> Result<Option<usize>> {
        let entry = 4 + 2 * slot;
        if entry + 2 > self.vtable_len {
            return Ok(None);
        }
        match self.buf.u16(self.vtable + entry)? {
            0 => Ok(None),
            off => Ok(Some(self.at + usize::from(off))),
        }
    }

    fn scalar<const N: usize>(&self, slot: usize, what: &str) -> Result<Option<[u8; N]>> {
        match self.field(slot)? {
            None => Ok(None),
            Some(at) => Ok(Some(self.buf.bytes(at, N, what)?.try_into()?)),
        }
    }

    fn u32(&self, slot: usize, what: &str) -> Result<u32> {
        Ok(self.scalar::<4>(slot, what)?.map_or(0, u32::from_le_bytes))
    }

    fn u64(&self, slot: usize, what: &str) -> Result<u64> {
        Ok(self.scalar::<8>(slot, what)?.map_or(0, u64::from_le_bytes))
    }

    fn i8(&self, slot: usize, what: &str) -> Result<i8> {
        Ok(self.scalar::<1>(slot, what)?.map_or(0, i8::from_le_bytes))
    }

    fn table(&self, slot: usize) -> Result<Option<Table<'a>>> {
        match self.field(slot)? {
            None => Ok(None),
            Some(at) => Ok(Some(self.buf.table(self.buf.follow(at)?)?)),
        }
    }

    /// The elements of a vector field, `size` bytes each (empty when absent).
    fn vector(&self, slot: usize, size: usize, what: &str) -> Result<(usize, &'a [u8])> {
        let Some(at) = self.field(slot)? else {
            return Ok((0, &[]));
        };
        let start = self.buf.follow(at)?;
        let n = self.buf.u32(start)? as usize;
        let len = n
            .checked_mul(size)
            .ok_or_else(|| anyhow!("{what}: {n} elements overflow"))?;
        Ok((start + 4, self.buf.bytes(start + 4, len, what)?))
    }

    /// The tables of a vector of tables.
    fn tables(&self, slot: usize, what: &str) -> Result<Vec<Table<'a>>> {
        let (start, bytes) = self.vector(slot, 4, what)?;
        (0..bytes.len() / 4)
            .map(|i| self.buf.table(self.buf.follow(start + 4 * i)?))
            .collect()
    }

    fn string(&self, slot: usize, what: &str, max: usize) -> Result<Option<&'a str>> {
        let Some(at) = self.field(slot)? else {
            return Ok(None);
        };
        let start = self.buf.follow(at)?;
        let n = self.buf.u32(start)? as usize;
        if n > max {
            bail!("{what} of {n} bytes (at most {max} are read)");
        }
        let bytes = self.buf.bytes(start + 4, n, what)?;
        Ok(Some(
            std::str::from_utf8(bytes).with_context(|| format!("{what} is not UTF-8"))?,
        ))
    }
}

/// The extended header's fields, checked against the file.
struct Header {
    flatbuffer_end: usize,
    segment_base: usize,
    segment_end: usize,
}

fn header(bytes: &[u8]) -> Result<Header> {
    let field = |at: usize| -> Result<u64> {
        let b = bytes
            .get(HEADER_AT + at..HEADER_AT + at + 8)
            .ok_or_else(|| anyhow!("the file ends inside its extended header"))?;
        Ok(u64::from_le_bytes(b.try_into()?))
    };
    if bytes.get(4..8) != Some(IDENTIFIER.as_slice()) {
        bail!("not a .ptd file: no FlatBuffer identifier FT01 at byte 4");
    }
    if bytes.get(HEADER_AT..HEADER_AT + 4) != Some(HEADER_MAGIC.as_slice()) {
        bail!("not a .ptd file: no extended header FH01 at byte 8");
    }
    let length = u32::from_le_bytes(
        bytes
            .get(HEADER_AT + 4..HEADER_AT + 8)
            .context("the file ends inside its extended header")?
            .try_into()?,
    );
    if length < HEADER_LEN {
        bail!("extended header length {length}, under the {HEADER_LEN} bytes of its fields");
    }
    let (fb_offset, fb_size, base, data_size) = (field(8)?, field(16)?, field(24)?, field(32)?);
    let len = bytes.len() as u64;
    let flatbuffer_end = fb_offset
        .checked_add(fb_size)
        .filter(|&e| e <= len)
        .ok_or_else(|| {
            anyhow!(
                "header: flatbuffer_offset {fb_offset} + flatbuffer_size {fb_size} lies past the {len}-byte file"
            )
        })?;
    let segment_end = base
        .checked_add(data_size)
        .filter(|&e| e <= len)
        .ok_or_else(|| {
            anyhow!(
                "header: segment_base_offset {base} + segment_data_size {data_size} lies past the {len}-byte file"
            )
        })?;
    if base < flatbuffer_end {
        bail!(
            "header: segment_base_offset {base} lies inside the FlatBuffer (which ends at {flatbuffer_end})"
        );
    }
    // Every value is within the file's length, so within usize.
    Ok(Header {
        flatbuffer_end: flatbuffer_end as usize,
        segment_base: base as usize,
        segment_end: segment_end as usize,
    })
}

/// The tensors of a `.ptd` file, in its named-data order.
pub(super) fn source(bytes: &[u8]) -> Result<Source<'_>> {
    let h = header(bytes)?;
    let fb = Buf(&bytes[..h.flatbuffer_end]);
    let root = fb.table(fb.follow(0)?)?;
    let version = root.u32(0, "version")?;
    if version > MAX_VERSION {
        bail!("FlatTensor version {version} (ExecuTorch 1.5 reads up to {MAX_VERSION})");
    }
    let segment_data = &bytes[h.segment_base..h.segment_end];
    let mut segments: Vec<(u64, u64)> = Vec::new();
    for (i, s) in root.tables(1, "segments")?.iter().enumerate() {
        let (offset, size) = (s.u64(0, "segment offset")?, s.u64(1, "segment size")?);
        if offset
            .checked_add(size)
            .is_none_or(|end| end > segment_data.len() as u64)
        {
            bail!(
                "segment {i}: offset {offset} + size {size} lies past the {} bytes of segment data",
                segment_data.len()
            );
        }
        segments.push((offset, size));
    }
    let mut sorted: Vec<(u64, u64, usize)> = segments
        .iter()
        .enumerate()
        .filter(|(_, (_, size))| *size > 0)
        .map(|(i, &(o, s))| (o, o + s, i))
        .collect();
    sorted.sort_unstable();
    for pair in sorted.windows(2) {
        if pair[1].0 < pair[0].1 {
            bail!(
                "segments {} and {} overlap: [{}, {}) and [{}, {})",
                pair[0].2,
                pair[1].2,
                pair[0].0,
                pair[0].1,
                pair[1].0,
                pair[1].1
            );
        }
    }
    let mut names = std::collections::HashSet::new();
    let mut entries = Vec::new();
    for (i, named) in root.tables(2, "named_data")?.iter().enumerate() {
        let key = named
            .string(0, "a key", PTD_MAX_KEY)?
            .filter(|k| !k.is_empty())
            .ok_or_else(|| anyhow!("named data #{i} has no key"))?;
        if !names.insert(key) {
            bail!("named data {key:?} appears twice");
        }
        let index = named.u32(1, "segment_index")? as usize;
        let &(offset, size) = segments.get(index).ok_or_else(|| {
            anyhow!(
                "named data {key:?}: segment {index} does not exist ({} segments)",
                segments.len()
            )
        })?;
        let data = &segment_data[offset as usize..(offset + size) as usize];
        entries.push(match named.table(2)? {
            Some(layout) => tensor(key, &layout, data)?,
            None => {
                let mut e = Entry::new(
                    key.to_owned(),
                    ElementType::UInt8,
                    vec![data.len() as u64],
                    Data::Slice(data),
                );
                e.tensor_metadata = vec![(BLOB_KEY.to_owned(), BLOB_VALUE.to_owned())];
                e
            }
        });
    }
    Ok(Source {
        entries,
        metadata: Default::default(),
        zip: None,
        gguf: None,
    })
}

/// A named tensor: its layout checked, its segment exactly its bytes.
fn tensor<'a>(key: &str, layout: &Table<'a>, data: &'a [u8]) -> Result<Entry<'a>> {
    let dtype = element_type(layout.i8(0, "scalar_type")?, key)?;
    let (_, sizes) = layout.vector(1, 4, "sizes")?;
    let (_, dim_order) = layout.vector(2, 1, "dim_order")?;
    let rank = sizes.len() / 4;
    if rank > PTD_MAX_RANK {
        bail!("named data {key:?}: rank {rank} (at most {PTD_MAX_RANK} is read)");
    }
    let mut shape = Vec::with_capacity(rank);
    for (d, size) in sizes.chunks_exact(4).enumerate() {
        let size = i32::from_le_bytes(size.try_into()?);
        shape.push(
            u64::try_from(size)
                .map_err(|_| anyhow!("named data {key:?}: sizes[{d}] = {size} is negative"))?,
        );
    }
    let identity = dim_order
        .iter()
        .enumerate()
        .all(|(i, &d)| usize::from(d) == i);
    if !dim_order.is_empty() && (dim_order.len() != rank || !identity) {
        bail!(
            "named data {key:?}: dim order {dim_order:?} is not the contiguous order of its {rank} dimensions, which is the only one converted"
        );
    }
    let e = Entry::new(key.to_owned(), dtype, shape, Data::Slice(data));
    let want = e.canonical_len()?;
    if want != data.len() as u64 {
        bail!(
            "named data {key:?}: {} {:?} takes {want} bytes, its segment holds {}",
            dtype.name(),
            e.shape,
            data.len()
        );
    }
    Ok(e)
}

/// Starts a `.ptd` file of `source`'s tensors: the FlatBuffer describes
/// every tensor up front, and the returned sink writes each tensor's
/// segment in order (the last segment ends the file).
pub(super) fn sink(path: &Path, source: &Source<'_>) -> Result<Placed> {
    let mut segments = Vec::new();
    let mut end = 0u64;
    for e in &source.entries {
        let size = e.canonical_len()?;
        let offset = end.next_multiple_of(SEGMENT_ALIGN);
        segments.push((offset, size));
        end = offset + size;
    }
    let flatbuffer = flat_tensor(source, &segments)?;
    let fb_size = flatbuffer.len() as u64;
    let base = (fb_size + PADDED_HEADER_LEN).next_multiple_of(SEGMENT_ALIGN);
    let mut head = Vec::with_capacity(base as usize);
    // The root offset, moved past the header that is inserted after it.
    let root = u32::from_le_bytes(flatbuffer[..4].try_into()?) + PADDED_HEADER_LEN as u32;
    head.extend_from_slice(&root.to_le_bytes());
    head.extend_from_slice(&flatbuffer[4..8]);
    head.extend_from_slice(HEADER_MAGIC);
    head.extend_from_slice(&HEADER_LEN.to_le_bytes());
    for v in [PADDED_HEADER_LEN, fb_size, base, end] {
        head.extend_from_slice(&v.to_le_bytes());
    }
    head.resize(HEADER_AT + PADDED_HEADER_LEN as usize, 0);
    head.extend_from_slice(&flatbuffer[8..]);
    head.resize(base as usize, 0);
    let places = segments.iter().map(|&(offset, _)| offset + base).collect();
    Placed::create(path, &[&head], places, None)
}

/// The FlatBuffer describing `source`'s tensors in `segments`.
fn flat_tensor(source: &Source<'_>, segments: &[(u64, u64)]) -> Result<Vec<u8>> {
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let mut named = Vec::new();
    for (i, e) in source.entries.iter().enumerate() {
        let key = fbb.create_string(&e.name);
        let blob = e
            .tensor_metadata
            .iter()
            .any(|(k, v)| k == BLOB_KEY && v == BLOB_VALUE);
        let layout = if blob {
            None
        } else {
            let (scalar, _) = scalar_type(e.dtype)
                .ok_or_else(|| anyhow!("tensor {:?}: no ExecuTorch scalar type", e.name))?;
            let sizes = e
                .shape
                .iter()
                .map(|&d| i32::try_from(d))
                .collect::<Result<Vec<i32>, _>>()
                .map_err(|_| {
                    anyhow!(
                        "tensor {:?}: a size of {:?} exceeds an i32",
                        e.name,
                        e.shape
                    )
                })?;
            let order: Vec<u8> = (0..e.shape.len())
                .map(|d| u8::try_from(d).map_err(|_| anyhow!("tensor {:?}: rank over 255", e.name)))
                .collect::<Result<_>>()?;
            let sizes = fbb.create_vector(&sizes);
            let order = fbb.create_vector(&order);
            let t = fbb.start_table();
            fbb.push_slot_always(6, sizes);
            fbb.push_slot_always(8, order);
            fbb.push_slot::<i8>(4, scalar, 0);
            Some(fbb.end_table(t))
        };
        let t = fbb.start_table();
        fbb.push_slot_always(4, key);
        if let Some(layout) = layout {
            fbb.push_slot_always(8, layout);
        }
        fbb.push_slot::<u32>(6, u32::try_from(i)?, 0);
        named.push(fbb.end_table(t));
    }
    let mut segment_tables = Vec::new();
    for &(offset, size) in segments {
        let t = fbb.start_table();
        fbb.push_slot::<u64>(4, offset, 0);
        fbb.push_slot::<u64>(6, size, 0);
        segment_tables.push(fbb.end_table(t));
    }
    let segment_tables = fbb.create_vector(&segment_tables);
    let named = fbb.create_vector(&named);
    let root = fbb.start_table();
    fbb.push_slot_always(6, segment_tables);
    fbb.push_slot_always(8, named);
    fbb.push_slot::<u32>(4, 0, 0);
    let root = fbb.end_table(root);
    fbb.finish(root, Some(std::str::from_utf8(IDENTIFIER)?));
    Ok(fbb.finished_data().to_vec())
}
