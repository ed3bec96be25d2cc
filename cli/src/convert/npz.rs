//! `.npz` archives (zips of `.npy` members, as `numpy.savez` writes) as a
//! source and a destination.
//!
//! A stored member is read in place from the map; a compressed one is
//! inflated when its turn comes, into a buffer that grows with what actually
//! inflates (never sized from the size the archive declares) and that must
//! end exactly at the declared size. Written archives are store-only, so the
//! data stays 64-byte aligned inside its member as `numpy.load(mmap_mode=)`
//! expects of `.npy` files.

use super::{CHUNK, Data, Entry, Feed, Source, npy};
use anyhow::{Context, Result, bail};
use hurray::atomic::AtomicFile;
use std::borrow::Cow;
use std::cell::Cell;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufWriter, Cursor, Read, Write};
use std::path::Path;
use std::rc::Rc;

type Archive<'a> = zip::ZipArchive<Cursor<&'a [u8]>>;

/// The arrays of an `.npz` archive, in member order.
pub(super) fn source(bytes: &[u8]) -> Result<Source<'_>> {
    let mut zip = Archive::new(Cursor::new(bytes)).context("not a zip (.npz) archive")?;
    let mut entries = Vec::with_capacity(zip.len());
    for index in 0..zip.len() {
        let mut member = zip.by_index(index)?;
        if member.is_dir() {
            continue;
        }
        let member_name = member.name()?.into_owned();
        let Some(name) = member_name.strip_suffix(".npy").map(str::to_owned) else {
            bail!("npz member {member_name:?} is not a .npy array");
        };
        if member.encrypted() {
            bail!("npz member {member_name:?} is encrypted");
        }
        let entry = if member.compression() == zip::CompressionMethod::Stored {
            // Stored: read in place from the map.
            let start = member
                .data_start()
                .context("the zip reader gave no data offset")?;
            let body = usize::try_from(start)
                .ok()
                .zip(usize::try_from(member.size()).ok())
                .and_then(|(s, n)| bytes.get(s..s.checked_add(n)?))
                .with_context(|| format!("npz member {member_name:?} lies outside the file"))?;
            let (header, data_start) =
                npy::parse(body).with_context(|| format!("npz member {member_name:?}"))?;
            npy::entry(name, header, Data::Slice(&body[data_start..]))?
        } else {
            // Compressed: read the header now, inflate the data when its turn comes.
            let mut head = Vec::with_capacity(12);
            (&mut member).take(12).read_to_end(&mut head)?;
            let got = head.len();
            let (pre, len) =
                npy::preamble(&head).with_context(|| format!("npz member {member_name:?}"))?;
            head.resize(pre + len, 0);
            if got < pre + len {
                member
                    .read_exact(&mut head[got..])
                    .with_context(|| format!("npz member {member_name:?}: truncated header"))?;
            }
            let (header, data_start) =
                npy::parse(&head).with_context(|| format!("npz member {member_name:?}"))?;
            let skip = data_start as u64;
            let len = member
                .size()
                .checked_sub(skip)
                .context("npz member shorter than its header")?;
            let compressed = member.compressed_size();
            npy::entry(
                name,
                header,
                Data::Zip {
                    index,
                    skip,
                    len,
                    compressed,
                },
            )?
        };
        entries.push(entry);
    }
    Ok(Source {
        entries,
        metadata: BTreeMap::new(),
        zip: Some(RefCell::new(zip)),
        gguf: None,
    })
}

/// Inflates the data of member `index` (after `skip` header bytes), which
/// must be exactly `len` bytes. Memory grows with the bytes that really
/// inflate, so a member that merely declares a huge size costs nothing.
pub(super) fn inflate(
    zip: &mut Archive<'_>,
    index: usize,
    skip: u64,
    len: u64,
    name: &str,
) -> Result<Vec<u8>> {
    let mut member = zip.by_index(index)?;
    std::io::copy(&mut (&mut member).take(skip), &mut std::io::sink())?;
    // Grown a chunk at a time as bytes really inflate, with `try_reserve`, so
    // neither a declared size nor an opted-in expansion that outgrows memory
    // aborts; one byte past the declared size is read, as more is an error too.
    let mut data = Vec::new();
    let mut rest = (&mut member).take(len.saturating_add(1));
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = rest
            .read(&mut chunk)
            .with_context(|| format!("inflating npz member {name:?}.npy"))?;
        if n == 0 {
            break;
        }
        data.try_reserve(n).with_context(|| {
            format!(
                "inflating npz member {name:?}.npy: no memory for more than {} bytes",
                data.len()
            )
        })?;
        data.extend_from_slice(&chunk[..n]);
    }
    if data.len() as u64 != len {
        bail!(
            "npz member {name:?}.npy holds {} data bytes, {len} expected",
            data.len()
        );
    }
    // To the end, so the zip reader checks the member's CRC.
    std::io::copy(&mut member, &mut std::io::sink())
        .with_context(|| format!("inflating npz member {name:?}.npy"))?;
    Ok(data)
}

/// Why `name` can't be a member of a written archive: members are files
/// named `NAME.npy`, and a name that is a path (`a/b`, `../x`) or holds a
/// NUL would land somewhere else, or nowhere, when the archive is unpacked.
pub(super) fn refuses_name(name: &str) -> Option<String> {
    let reason = if name.contains('\0') {
        "it holds a NUL byte"
    } else if name.contains(['/', '\\']) {
        "it holds a path separator, so its member would unpack outside the archive's top level"
    } else if name == "." || name == ".." {
        "it names a directory"
    } else {
        return None;
    };
    Some(format!(
        ".npz member names must be plain file names and {reason}"
    ))
}

/// Writes converted arrays to a store-only `.npz` archive.
pub(super) struct Sink {
    file: Option<AtomicFile>,
    zip: Option<zip::ZipWriter<Abandonable>>,
    abandoned: Rc<Cell<bool>>,
}

/// The archive's output. A `ZipWriter` dropped unfinished finishes itself
/// and, if that fails (a full disk), prints to stderr on its own; once the
/// conversion has failed, this writer swallows those last writes, so the
/// conversion's own error is the only message and `AtomicFile` removes the
/// temporary file.
struct Abandonable {
    out: BufWriter<std::fs::File>,
    abandoned: Rc<Cell<bool>>,
}

impl Write for Abandonable {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.abandoned.get() {
            return Ok(buf.len());
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.abandoned.get() {
            return Ok(());
        }
        self.out.flush()
    }
}

impl std::io::Seek for Abandonable {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.out.seek(pos)
    }
}

impl Sink {
    pub(super) fn create(path: &Path) -> Result<Self> {
        let (file, out) = super::atomic_output(path)?;
        let abandoned = Rc::new(Cell::new(false));
        let out = Abandonable {
            out,
            abandoned: abandoned.clone(),
        };
        Ok(Sink {
            file: Some(file),
            zip: Some(zip::ZipWriter::new(out)),
            abandoned,
        })
    }

    fn zip(&mut self) -> Result<&mut zip::ZipWriter<Abandonable>> {
        self.zip.as_mut().context("the archive is finished")
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Still holding the archive means the conversion failed.
        self.abandoned.set(true);
    }
}

impl super::Sink for Sink {
    fn tensor(
        &mut self,
        e: &Entry<'_>,
        feed: &mut Feed<'_>,
        _quantization: &[Cow<'_, [u8]>],
    ) -> Result<()> {
        let descr = e.dtype.numpy_dtype().context("no NumPy dtype")?;
        let header = npy::header(descr, &e.shape);
        let size = (header.len() as u64).saturating_add(e.canonical_len()?);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(size >= u64::from(u32::MAX));
        let zip = self.zip()?;
        zip.start_file(format!("{}.npy", e.name), options)?;
        zip.write_all(&header)?;
        super::write_exact(e, zip, feed)
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        let out = self
            .zip
            .take()
            .context("the archive is finished")?
            .finish()?;
        let file = self.file.take().context("the archive is finished")?;
        super::commit(file, out.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_are_plain_file_names() {
        assert_eq!(refuses_name("layer.0.weight"), None);
        for bad in ["a/b", "../x", "..\\x", "a\0b", "..", "."] {
            assert!(refuses_name(bad).is_some(), "{bad:?}");
        }
    }
}
