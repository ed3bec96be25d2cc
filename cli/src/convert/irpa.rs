//! IREE's parameter archive (`.irpa`) as a source and a destination.
//!
//! An archive is a header (88 bytes), an entry table, a segment of names
//! and metadata, and a storage segment; offsets are relative to the header,
//! every integer little-endian (IREE's `iree_io_parameter_archive_*`
//! structs). An entry is a name, an opaque metadata blob and a range of
//! storage: IRPA itself has no element type or shape. IREE's Python helpers
//! and iree-turbine record them in the metadata as JSON after a `TENSORv0:`
//! or `PYTORCH:` prefix (`{"dtype": "float32", "shape": [4, 8], ...}`, NumPy
//! dtype names); that is read, and written for every tensor. An entry
//! without it reads as a 1-D `u8` tensor of its bytes. Splat entries (a
//! repeated pattern) and linked archives are refused by name.

use super::placed::Placed;
use super::{Data, Entry, Source};
use crate::limits::{IRPA_MAX_METADATA, IRPA_MAX_NAME, IRPA_MAX_RANK};
use anyhow::{Context, Result, anyhow, bail};
use hurray::{ElementType, elements::ElementClass};
use std::path::Path;

const MAGIC: u32 = 0x4150_5249; // "IRPA"
const HEADER_LEN: u64 = 88;
/// The entry table starts at, and each entry is padded to, 16 bytes.
const ENTRY_ALIGN: u64 = 16;
/// The common entry header, and a data entry (the header plus its range).
const ENTRY_HEADER_LEN: u64 = 60;
const DATA_ENTRY_LEN: u64 = 76;
const TYPE_SKIP: u32 = 0;
const TYPE_SPLAT: u32 = 1;
const TYPE_DATA: u32 = 2;
/// Where data is placed: what IREE's writer uses, and what its CPU device
/// needs to use a mapped parameter without a copy.
const DATA_ALIGN: u64 = 64;
/// The metadata prefix IREE's own NumPy helper writes.
const TENSOR_PREFIX: &str = "TENSORv0:";
const PYTORCH_PREFIX: &str = "PYTORCH:";

/// The NumPy dtype name an IRPA entry's metadata gives `t`; `None` for the
/// sub-byte types, which NumPy and ml_dtypes hold one element per byte.
pub(super) fn dtype_name(t: ElementType) -> Option<&'static str> {
    if t.bits() < 8 && t != ElementType::Bool {
        return None;
    }
    if let Some(name) = t.ml_dtypes_name() {
        return Some(name);
    }
    Some(match (t.class(), t.bits()) {
        (ElementClass::Bool, _) => "bool",
        (ElementClass::SignedInt, 8) => "int8",
        (ElementClass::SignedInt, 16) => "int16",
        (ElementClass::SignedInt, 32) => "int32",
        (ElementClass::SignedInt, 64) => "int64",
        (ElementClass::UnsignedInt, 8) => "uint8",
        (ElementClass::UnsignedInt, 16) => "uint16",
        (ElementClass::UnsignedInt, 32) => "uint32",
        (ElementClass::UnsignedInt, 64) => "uint64",
        (ElementClass::Float, 16) => "float16",
        (ElementClass::Float, 32) => "float32",
        (ElementClass::Float, 64) => "float64",
        (ElementClass::Complex, 64) => "complex64",
        (ElementClass::Complex, 128) => "complex128",
        _ => return None,
    })
}

fn from_dtype_name(name: &str) -> Option<ElementType> {
    ElementType::ALL
        .iter()
        .copied()
        .find(|t| dtype_name(*t) == Some(name))
}

/// A little-endian reader over the archive, every read bounds-checked.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn range(&self, at: u64, len: u64, what: &str) -> Result<&'a [u8]> {
        at.checked_add(len)
            .filter(|end| *end <= self.0.len() as u64)
            .map(|end| &self.0[at as usize..end as usize])
            .ok_or_else(|| {
                anyhow!(
                    "{what} (offset {at}, {len} bytes) lies outside the {}-byte archive",
                    self.0.len()
                )
            })
    }

    fn u64(&self, at: u64) -> Result<u64> {
        let b = self.range(at, 8, "a header field")?;
        Ok(u64::from_le_bytes(b.try_into()?))
    }

    fn u32(&self, at: u64) -> Result<u32> {
        let b = self.range(at, 4, "a header field")?;
        Ok(u32::from_le_bytes(b.try_into()?))
    }

    /// An `(offset, length)` pair at `at`.
    fn span(&self, at: u64) -> Result<(u64, u64)> {
        Ok((self.u64(at)?, self.u64(at + 8)?))
    }
}

/// Where a segment lies, checked against the archive.
fn segment<'a>(file: &Bytes<'a>, at: u64, what: &str) -> Result<(u64, &'a [u8])> {
    let (offset, len) = file.span(at)?;
    Ok((offset, file.range(offset, len, what)?))
}

/// The tensors of an archive, in entry order.
pub(super) fn source(bytes: &[u8]) -> Result<Source<'_>> {
    let file = Bytes(bytes);
    if file.u32(0)? != MAGIC {
        bail!("not an IRPA archive (no IRPA magic)");
    }
    let major = u16::from_le_bytes(file.range(4, 2, "version")?.try_into()?);
    let minor = u16::from_le_bytes(file.range(6, 2, "version")?.try_into()?);
    if major != 0 {
        bail!("IRPA version {major}.{minor} is not read (0.x is)");
    }
    if file.u64(8)? != HEADER_LEN {
        bail!("an IRPA header of {} bytes (88 expected)", file.u64(8)?);
    }
    if file.u64(16)? != 0 {
        bail!("a linked IRPA archive (next_header_offset is not 0) is not read");
    }
    let count = file.u64(32)?;
    let (_, entries) = segment(&file, 40, "the entry segment")?;
    let (_, metadata) = segment(&file, 56, "the metadata segment")?;
    let (_, storage) = segment(&file, 72, "the storage segment")?;
    let table = Bytes(entries);
    let meta = Bytes(metadata);
    let store = Bytes(storage);
    let mut out = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut at = 0u64;
    for i in 0..count {
        let size = table.u64(at)?;
        if size < ENTRY_HEADER_LEN {
            bail!("IRPA entry #{i}: {size} bytes, under the 60-byte entry header");
        }
        let kind = table.u32(at + 8)?;
        let (name_at, name_len) = table.span(at + 20)?;
        let (meta_at, meta_len) = table.span(at + 36)?;
        if name_len > IRPA_MAX_NAME || meta_len > IRPA_MAX_METADATA {
            bail!(
                "IRPA entry #{i}: a name of {name_len} bytes or metadata of {meta_len} bytes \
                 (the limits are {IRPA_MAX_NAME} and {IRPA_MAX_METADATA})"
            );
        }
        let name = std::str::from_utf8(meta.range(name_at, name_len, "a name")?)
            .with_context(|| format!("IRPA entry #{i}: its name is not UTF-8"))?
            .to_owned();
        let blob = meta.range(meta_at, meta_len, "metadata")?;
        if kind != TYPE_SKIP && !names.insert(name.clone()) {
            bail!("IRPA entry {name:?} appears twice");
        }
        match kind {
            TYPE_SKIP => {}
            TYPE_DATA => {
                if size < DATA_ENTRY_LEN {
                    bail!("IRPA entry {name:?}: {size} bytes, too short for a data entry");
                }
                let (data_at, data_len) = table.span(at + ENTRY_HEADER_LEN)?;
                let data = store
                    .range(data_at, data_len, "its data")
                    .with_context(|| format!("IRPA entry {name:?}"))?;
                out.push(entry(name, blob, data)?);
            }
            TYPE_SPLAT => {
                bail!("IRPA entry {name:?} is a splat (a repeated pattern), which is not read")
            }
            other => bail!("IRPA entry {name:?} has type {other}, which is not read"),
        }
        at = size
            .checked_next_multiple_of(ENTRY_ALIGN)
            .and_then(|s| at.checked_add(s))
            .context("the IRPA entry table overflows")?;
    }
    Ok(Source {
        entries: out,
        metadata: Default::default(),
        zip: None,
        gguf: None,
    })
}

/// One data entry: typed by its metadata when that says how, else bytes.
fn entry<'a>(name: String, metadata: &[u8], data: &'a [u8]) -> Result<Entry<'a>> {
    let text = std::str::from_utf8(metadata).unwrap_or_default();
    let json = text
        .strip_prefix(TENSOR_PREFIX)
        .or_else(|| text.strip_prefix(PYTORCH_PREFIX));
    let Some(json) = json else {
        return Ok(Entry::new(
            name,
            ElementType::UInt8,
            vec![data.len() as u64],
            Data::Slice(data),
        ));
    };
    let v: serde_json::Value = serde_json::from_str(json)
        .with_context(|| format!("IRPA entry {name:?}: its metadata is not JSON"))?;
    let dtype = v["dtype"].as_str().unwrap_or_default();
    let element_type = from_dtype_name(dtype).ok_or_else(|| {
        anyhow!("IRPA entry {name:?}: dtype {dtype:?} has no Hurray element type")
    })?;
    let shape = v["shape"]
        .as_array()
        .filter(|dims| dims.len() <= IRPA_MAX_RANK)
        .and_then(|dims| {
            dims.iter()
                .map(serde_json::Value::as_u64)
                .collect::<Option<Vec<u64>>>()
        })
        .ok_or_else(|| {
            anyhow!(
                "IRPA entry {name:?}: its metadata has no shape of at most {IRPA_MAX_RANK} whole numbers"
            )
        })?;
    let e = Entry::new(name, element_type, shape, Data::Slice(data));
    // The data must be exactly what the type and shape take.
    let want = e.canonical_len()?;
    if want != data.len() as u64 {
        bail!(
            "IRPA entry {:?}: {} of {:?} takes {want} bytes, and the entry holds {}",
            e.name,
            dtype,
            e.shape,
            data.len()
        );
    }
    Ok(e)
}

/// Starts an `.irpa` archive of `source`'s tensors: the header, entry table
/// and metadata are written up front (every tensor's size is known), and
/// the returned sink writes each tensor at its place.
pub(super) fn sink(path: &Path, source: &Source<'_>) -> Result<Placed> {
    let n = source.entries.len() as u64;
    let table_at = HEADER_LEN.next_multiple_of(ENTRY_ALIGN);
    let table_len = match n {
        0 => 0,
        n => (n - 1) * DATA_ENTRY_LEN.next_multiple_of(ENTRY_ALIGN) + DATA_ENTRY_LEN,
    };
    let mut names_and_meta = Vec::new();
    let mut table = Vec::new();
    let mut stored = 0u64;
    let mut places = Vec::new();
    for e in &source.entries {
        let dtype = dtype_name(e.dtype).context("no IRPA dtype")?;
        let meta = format!(
            "{TENSOR_PREFIX}{}",
            serde_json::json!({"type": "Tensor", "dtype": dtype, "shape": e.shape})
        );
        let name_at = names_and_meta.len() as u64;
        names_and_meta.extend_from_slice(e.name.as_bytes());
        let meta_at = names_and_meta.len() as u64;
        names_and_meta.extend_from_slice(meta.as_bytes());
        let data_at = stored.next_multiple_of(DATA_ALIGN);
        let len = e.canonical_len()?;
        stored = data_at + len;
        places.push(data_at);
        let start = table.len();
        table.extend_from_slice(&DATA_ENTRY_LEN.to_le_bytes());
        table.extend_from_slice(&TYPE_DATA.to_le_bytes());
        for v in [
            0,
            name_at,
            e.name.len() as u64,
            meta_at,
            meta.len() as u64,
            DATA_ALIGN,
            data_at,
            len,
        ] {
            table.extend_from_slice(&v.to_le_bytes());
        }
        debug_assert_eq!(table.len() - start, DATA_ENTRY_LEN as usize);
        table.resize(table.len().next_multiple_of(ENTRY_ALIGN as usize), 0);
    }
    table.truncate(table_len as usize);
    let meta_at = table_at + table_len;
    let storage_at = (meta_at + names_and_meta.len() as u64).next_multiple_of(DATA_ALIGN);
    let mut header = Vec::with_capacity(HEADER_LEN as usize);
    header.extend_from_slice(&MAGIC.to_le_bytes());
    header.extend_from_slice(&[0; 4]); // version 0.0
    for v in [
        HEADER_LEN,
        0,
        0,
        n,
        table_at,
        table_len,
        meta_at,
        names_and_meta.len() as u64,
        storage_at,
        stored,
    ] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    // IREE's writer pads the archive to a page.
    let end = (storage_at + stored).next_multiple_of(4096);
    let places = places.into_iter().map(|p| p + storage_at).collect();
    let gap = vec![0; (table_at - HEADER_LEN) as usize];
    Placed::create(
        path,
        &[&header, &gap, &table, &names_and_meta],
        places,
        Some(end),
    )
}
