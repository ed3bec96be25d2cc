//! safetensors as a source and a destination.
//!
//! Reading goes through the `safetensors` crate's own header parser and
//! validation (`SafeTensors::read_metadata`), so `convert` accepts exactly the
//! files safetensors accepts: contiguous, non-overlapping `data_offsets` that
//! cover the data section, sizes that match shape and dtype, a header of at
//! most 100 MB. Writing streams: the whole header is known up front, so it is
//! written first and the data follows tensor by tensor.

use super::{Data, Entry, Feed, Source};
use anyhow::{Context, Result, anyhow, bail};
use hurray::{ElementType, atomic::AtomicFile};
use safetensors::SafeTensors;
use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The safetensors crate's cap on the JSON header (its `MAX_HEADER_SIZE`).
const MAX_HEADER: usize = crate::limits::SAFETENSORS_MAX_HEADER as usize;
/// The 8-byte little-endian header length in front of the header.
const PREFIX: usize = 8;

/// The tensors of a safetensors file, in data order.
pub(super) fn source(bytes: &[u8]) -> Result<Source<'_>> {
    let (n, header) = SafeTensors::read_metadata(bytes)
        .map_err(|e| anyhow!("not a valid safetensors file: {e}"))?;
    // read_metadata checked that the header and the data section it describes
    // are exactly the file.
    let data = &bytes[PREFIX + n..];
    let mut entries = Vec::new();
    for name in header.offset_keys() {
        let info = header.info(&name).context("a listed tensor has no info")?;
        let dtype_name = info.dtype.to_string();
        let dtype = ElementType::from_safetensors_dtype(&dtype_name).ok_or_else(|| {
            anyhow!("tensor {name:?}: safetensors dtype {dtype_name} has no Hurray element type")
        })?;
        let (begin, end) = info.data_offsets;
        let bytes = data
            .get(begin..end)
            .with_context(|| format!("tensor {name:?}: data_offsets outside the data"))?;
        let shape = info.shape.iter().map(|&d| d as u64).collect();
        entries.push(Entry::new(name, dtype, shape, Data::Slice(bytes)));
    }
    let metadata = header
        .metadata()
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Source {
        entries,
        metadata,
        zip: None,
        gguf: None,
    })
}

/// Why a safetensors reader would refuse `e`.
pub(super) fn refuses(e: &Entry<'_>) -> Option<String> {
    if e.name == "__metadata__" {
        return Some("safetensors reserves that name for file metadata".into());
    }
    // safetensors multiplies the whole shape out (in usize) before it compares
    // sizes, so a 0 dimension does not save a shape whose other dimensions overflow.
    // A bool is a byte there; F4 and F6 are packed as in Hurray.
    let bits = if e.dtype.bits() < 8 && e.dtype != ElementType::Bool {
        e.dtype.bits() as usize
    } else {
        usize::try_from(e.dtype.unpacked_size() * 8).ok()?
    };
    let product = e.shape.iter().try_fold(bits, |acc, &d| {
        usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    });
    match product {
        None => Some(format!(
            "shape {:?} overflows when multiplied out, and safetensors refuses such a file",
            e.shape
        )),
        Some(total) if !total.is_multiple_of(8) => Some(format!(
            "shape {:?} of {} is not a whole number of bytes, and safetensors refuses such a tensor",
            e.shape,
            e.dtype.name()
        )),
        Some(_) => None,
    }
}

/// Puts `entries` in the order the safetensors crate lays tensors out:
/// widest dtype first, then by name (its `prepare`), so that a file this
/// writes is the file safetensors' own writer makes of the same tensors.
pub(super) fn order(entries: &mut [Entry<'_>]) {
    let width = |e: &Entry<'_>| match e.dtype {
        ElementType::Bool => 8, // one byte there
        t => t.bits(),
    };
    entries.sort_by(|a, b| width(b).cmp(&width(a)).then_with(|| a.name.cmp(&b.name)));
}

/// One tensor's entry in the header, its fields in the safetensors crate's order.
#[derive(serde::Serialize)]
struct Info<'a> {
    dtype: &'a str,
    shape: &'a [u64],
    data_offsets: [u64; 2],
}

/// The JSON header for `source`'s tensors laid out back to back, padded with
/// spaces so the data starts 8-byte aligned, as the safetensors writer does:
/// `__metadata__` first, then the tensors in data order.
fn header(source: &Source<'_>) -> Result<Vec<u8>> {
    let mut json = b"{".to_vec();
    if !source.metadata.is_empty() {
        json.extend_from_slice(b"\"__metadata__\":");
        serde_json::to_writer(&mut json, &source.metadata)?;
    }
    let mut offset = 0u64;
    for e in &source.entries {
        let end = offset
            .checked_add(e.canonical_len()?)
            .context("the data size overflows")?;
        if json.len() > 1 {
            json.push(b',');
        }
        serde_json::to_writer(&mut json, &e.name)?;
        json.push(b':');
        let info = Info {
            dtype: e
                .dtype
                .safetensors_dtype()
                .context("checked before writing")?,
            shape: &e.shape,
            data_offsets: [offset, end],
        };
        serde_json::to_writer(&mut json, &info)?;
        offset = end;
    }
    json.push(b'}');
    json.resize(json.len().next_multiple_of(PREFIX), b' ');
    if json.len() > MAX_HEADER {
        bail!(
            "the safetensors header would take {} bytes, over the {MAX_HEADER}-byte limit safetensors reads",
            json.len()
        );
    }
    Ok(json)
}

/// Writes converted tensors to a `.safetensors` file.
pub(super) struct Sink {
    file: AtomicFile,
    out: BufWriter<std::fs::File>,
}

impl Sink {
    /// Writes the whole header up front: every tensor's size is known.
    pub(super) fn create(path: &Path, source: &Source<'_>) -> Result<Self> {
        let json = header(source)?;
        let (file, mut out) = super::atomic_output(path)?;
        out.write_all(&(json.len() as u64).to_le_bytes())?;
        out.write_all(&json)?;
        Ok(Sink { file, out })
    }
}

impl super::Sink for Sink {
    fn tensor(
        &mut self,
        e: &Entry<'_>,
        feed: &mut Feed<'_>,
        _quantization: &[Cow<'_, [u8]>],
    ) -> Result<()> {
        super::write_exact(e, &mut self.out, feed)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        super::commit(self.file, self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn entry(name: &str, shape: &[u64]) -> Entry<'static> {
        Entry::new(
            name.into(),
            ElementType::Float32,
            shape.to_vec(),
            Data::None,
        )
    }

    #[test]
    fn refuses_what_the_crate_would() {
        assert_eq!(refuses(&entry("w", &[3, 0, 5])), None);
        assert!(refuses(&entry("__metadata__", &[1])).is_some());
        let huge = entry("e", &[1 << 40, 1 << 40, 0]);
        assert!(refuses(&huge).unwrap().contains("overflows"));
        let mut odd = entry("fp4", &[3]);
        odd.dtype = ElementType::Float4E2M1FN;
        assert!(refuses(&odd).unwrap().contains("whole number of bytes"));
        odd.shape = vec![4];
        assert_eq!(refuses(&odd), None);
        // Written anyway, the crate refuses it: the check matches the reader.
        let json = br#"{"e":{"dtype":"F32","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0]}}"#;
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(json);
        assert!(SafeTensors::deserialize(&file).is_err());
    }

    #[test]
    fn written_headers_are_what_the_crate_reads() {
        let entries = vec![entry("a", &[2, 3]), entry("empty", &[3, 0, 5])];
        let source = Source {
            entries,
            metadata: BTreeMap::from([("k".to_owned(), "v".to_owned())]),
            zip: None,
            gguf: None,
        };
        let json = header(&source).unwrap();
        assert_eq!(json.len() % 8, 0);
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(&json);
        file.extend_from_slice(&[0u8; 24]);
        let st = SafeTensors::deserialize(&file).unwrap();
        assert_eq!(st.tensor("a").unwrap().shape(), [2, 3]);
        assert_eq!(st.tensor("empty").unwrap().data(), b"");
        let back = source_of(&file);
        assert_eq!(back.metadata["k"], "v");
        assert_eq!(back.entries[0].name, "a");
    }

    fn source_of(bytes: &[u8]) -> Source<'_> {
        super::source(bytes).unwrap()
    }
}
