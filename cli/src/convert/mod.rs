//! `hurray convert IN OUT`: tensors between `.hurray`, `.safetensors`, `.npy`,
//! `.npz`, IREE's `.irpa` and ExecuTorch's `.ptd`, and from `.gguf` and
//! `.onnx` (its initializers), each format chosen by its extension.
//!
//! Conversion streams. Every source is opened and checked whole first (a
//! Hurray file is verified, its sparse indices included; a safetensors file
//! goes through the `safetensors` crate's own validation), and every tensor is
//! checked against the destination format before a byte is written, so a
//! tensor the destination can't hold fails the whole conversion up front with
//! its name and the reason. Then the tensors are copied one at a time, in
//! chunks, straight from the map to the destination; only a compressed `.npz`
//! member is inflated into memory (one tensor at a time). Every destination is
//! written through `hurray::atomic::AtomicFile`, so a failed conversion leaves no
//! partial file and a finished one has the mode any new file gets.
//!
//! Between the formats the values travel in one canonical form
//! (`canonical`): row-major, little-endian, a bool one byte (0 or 1). Every
//! format rule (element counts, dtype names, bit packing) is the runtime's.

mod bnb;
mod canonical;
mod compressed_tensors;
mod format;
mod gguf;
mod hurray_format;
mod irpa;
mod mxfp4;
mod npy;
mod npz;
mod onnx;
mod placed;
mod probe;
mod ptd;
mod safetensors_format;
pub(crate) mod sharded;

#[doc(hidden)]
pub use probe::{
    fold_compressed_tensors, fold_compressed_tensors_split, gguf_blocks_round_trip, read_all,
    write_all_from_hurray,
};

use format::Format;

use anyhow::{Context, Result, anyhow, bail};
use hurray::{ElementType, atomic::AtomicFile};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufWriter, Cursor, Write};
use std::path::Path;

/// Bytes handed to the destination at a time.
const CHUNK: usize = 1 << 20;

/// One tensor of a source, as stored there.
#[derive(Debug)]
struct Entry<'a> {
    name: String,
    dtype: ElementType,
    /// On-wire dimensions (a Hurray descriptor-only tensor may hold the dynamic sentinel).
    shape: Vec<u64>,
    /// Element strides of the stored values; `None` when they are row-major.
    strides: Option<Vec<u64>>,
    big_endian: bool,
    /// A bool stored one bit per element (Hurray), not one byte.
    packed_bool: bool,
    data: Data<'a>,
    /// Why only Hurray can hold this tensor (sparse, quantized, descriptor-only).
    hurray_only: Option<String>,
    /// Entries of per-tensor metadata (only Hurray keeps them).
    metadata: usize,
    /// Per-tensor metadata a conversion to Hurray records (a bitsandbytes
    /// weight's quant state, kept verbatim to write it back).
    tensor_metadata: Vec<(String, String)>,
    /// The quantization of a tensor bound for a Hurray file (an MXFP4 pair
    /// folded into one tensor, a GGUF block tensor); its stored values are
    /// `data`.
    quantized: Option<Quantized<'a>>,
}

/// A quantization and where its buffers' bytes are.
#[derive(Debug)]
struct Quantized<'a> {
    quantization: hurray::Quantization,
    /// The quantization buffers in wire order (scales, zero points, then
    /// offsets when the quantization has them), as the runtime's plan lists them.
    buffers: Vec<Data<'a>>,
}

impl<'a> Entry<'a> {
    /// A dense, row-major, little-endian tensor stored as `data`.
    fn new(name: String, dtype: ElementType, shape: Vec<u64>, data: Data<'a>) -> Self {
        Entry {
            name,
            dtype,
            shape,
            strides: None,
            big_endian: false,
            packed_bool: false,
            data,
            hurray_only: None,
            metadata: 0,
            tensor_metadata: Vec::new(),
            quantized: None,
        }
    }

    /// The element count, in the runtime's order (a 0 dimension first).
    fn count(&self) -> Result<u64> {
        hurray::elements::element_count(&self.shape)
            .known()
            .ok_or_else(|| {
                anyhow!(
                    "tensor {:?}: shape {:?} has no element count that fits 64 bits",
                    self.name,
                    self.shape
                )
            })
    }

    /// Bytes of the canonical form: row-major, a bool per byte, the other
    /// sub-byte types packed as Hurray, safetensors and DLPack all store them.
    fn canonical_len(&self) -> Result<u64> {
        if let Some(q) = &self.quantized
            && q.quantization.block_format.is_some()
        {
            // A block format's values are its blocks, as stored.
            return Ok(self.data.len());
        }
        let count = self.count()?;
        let len = if self.dtype.bits() < 8 && self.dtype != ElementType::Bool {
            hurray::elements::packed_len(count, self.dtype.bits())
        } else {
            count.checked_mul(self.dtype.unpacked_size())
        };
        len.ok_or_else(|| anyhow!("tensor {:?}: the byte size overflows", self.name))
    }

    /// Bytes the source stores (for the progress bar).
    fn stored_len(&self) -> u64 {
        let quantization: u64 = self
            .quantized
            .iter()
            .flat_map(|q| &q.buffers)
            .map(Data::len)
            .sum();
        self.data.len() + quantization
    }

    /// Bytes of the input this tensor is made from: what is stored, or for a
    /// compressed `.npz` member what is really in the archive, not what it
    /// declares it inflates to.
    fn input_len(&self) -> u64 {
        match &self.data {
            Data::Zip { compressed, .. } => *compressed,
            _ => self.stored_len(),
        }
    }

    /// The resource policy: the canonical form may not be far larger than
    /// the input it is made from ([`hurray::limits::check_expansion`]).
    fn check_expansion(&self) -> Result<()> {
        let output = self.canonical_len()?;
        Ok(hurray::limits::check_expansion(
            &self.name,
            self.input_len(),
            output,
        )?)
    }
}

/// Where a tensor's stored bytes are.
#[derive(Debug)]
enum Data<'a> {
    /// In the memory map.
    Slice(&'a [u8]),
    /// In a compressed `.npz` member, after `skip` header bytes; the member
    /// takes `compressed` bytes of the archive.
    Zip {
        index: usize,
        skip: u64,
        len: u64,
        compressed: u64,
    },
    /// Nowhere (the tensor does not leave Hurray).
    None,
    /// Made by the conversion (a re-packed or rearranged buffer).
    Owned(Vec<u8>),
    /// In the memory map, the two 4-bit codes of every byte swapped when
    /// the tensor is written (bitsandbytes packs the first code high,
    /// Hurray low).
    Nibbles(&'a [u8]),
    /// A field of GGUF block tensor `index`, de-interleaved when the tensor
    /// is written; `len` bytes.
    Gguf {
        index: usize,
        part: gguf::Part,
        len: u64,
    },
}

impl Data<'_> {
    /// Bytes stored (for a `.npz` member, inflated).
    fn len(&self) -> u64 {
        match self {
            Data::Slice(s) | Data::Nibbles(s) => s.len() as u64,
            Data::Owned(v) => v.len() as u64,
            Data::Zip { len, .. } | Data::Gguf { len, .. } => *len,
            Data::None => 0,
        }
    }
}

/// A parsed source: its tensors in file order and its file-wide metadata.
struct Source<'a> {
    entries: Vec<Entry<'a>>,
    metadata: BTreeMap<String, String>,
    zip: Option<RefCell<zip::ZipArchive<Cursor<&'a [u8]>>>>,
    /// A GGUF source's parsed file, for its block tensors' fields.
    gguf: Option<gguf::Blocks<'a>>,
}

impl<'a> Source<'a> {
    /// The stored bytes of `e`: borrowed from the map, or inflated from a `.npz` member.
    fn load(&self, e: &Entry<'a>) -> Result<Cow<'a, [u8]>> {
        self.load_data(&e.data, &e.name)
    }

    /// The bytes of `e`'s quantization buffers, in wire order.
    fn load_quantization(&self, e: &Entry<'a>) -> Result<Vec<Cow<'a, [u8]>>> {
        e.quantized
            .iter()
            .flat_map(|q| &q.buffers)
            .map(|d| self.load_data(d, &e.name))
            .collect()
    }

    fn load_data(&self, data: &Data<'a>, name: &str) -> Result<Cow<'a, [u8]>> {
        match *data {
            Data::Slice(s) => Ok(Cow::Borrowed(s)),
            Data::Nibbles(s) => Ok(Cow::Owned(s.iter().map(|b| b.rotate_left(4)).collect())),
            Data::None => Ok(Cow::Borrowed(&[])),
            Data::Owned(ref v) => Ok(Cow::Owned(v.clone())),
            Data::Zip {
                index, skip, len, ..
            } => {
                let zip = self.zip.as_ref().context("no archive")?;
                npz::inflate(&mut zip.borrow_mut(), index, skip, len, name).map(Cow::Owned)
            }
            Data::Gguf { index, part, .. } => {
                let blocks = self.gguf.as_ref().context("no GGUF file")?;
                blocks.part(index, part).map(Cow::Owned)
            }
        }
    }
}

/// Maps `path` read-only.
fn map(path: &Path) -> Result<memmap2::Mmap> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        bail!("opening {}: it is a directory", path.display());
    }
    // SAFETY: a read-only private map, read only through `&[u8]`. As with every
    // mapped reader, another process truncating the file meanwhile is outside
    // what Rust can guard against.
    let map = unsafe { memmap2::Mmap::map(&file) }
        .with_context(|| format!("mapping {}", path.display()))?;
    // Read front to back, once: let the kernel read ahead and drop pages behind.
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

/// What `hurray convert` may do beyond the resource policy's defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Write tensors far larger than the input bytes they come from
    /// (broadcast strides expanded densely, highly compressed members); see
    /// [`hurray::limits::check_expansion`].
    pub allow_expansion: bool,
    /// Record a BLAKE3 digest of every buffer in the Hurray files written
    /// (format 1.4), and each member's header digest in an index, so that
    /// `hurray sign` can sign them (ADR-0012).
    pub digests: bool,
    /// The identity the Hurray file written gets (format 1.5): a member of
    /// a sharded checkpoint gets a fresh one, which its index records.
    pub file_id: Option<hurray::sharded::FileId>,
}

impl Options {
    /// The digest algorithm of the Hurray files written.
    pub(crate) fn digest_algorithm(self) -> Option<hurray::integrity::DigestAlgorithm> {
        self.digests
            .then_some(hurray::integrity::DigestAlgorithm::Blake3)
    }
}

/// Converts `input` to `output`, formats chosen by extension.
pub fn convert(input: &Path, output: &Path, options: Options) -> Result<()> {
    let context = || format!("converting {} to {}", input.display(), output.display());
    if options.digests && Format::of(output).ok() != Some(Format::Hurray) {
        bail!(
            "{}: --digests records digests in Hurray files; the output is not one",
            output.display()
        );
    }
    // A sharded checkpoint: transformers' index (or its directory).
    if let Some(index) = sharded::safetensors_index_of(input)? {
        return sharded::from_safetensors(&index, output, options).with_context(context);
    }
    if onnx::is_onnx(input) {
        if options.digests {
            bail!(
                "--digests: an ONNX model's weights are written without digests; convert them to .hurray first, then that file with --digests"
            );
        }
        return onnx::to_hurray(input, output).with_context(context);
    }
    let from = Format::of(input)?;
    if from == Format::Hurray {
        // hurray's messages name the path and the cause (its `Io` variant also
        // chains the cause as a source, so format it once, here).
        let file = crate::input::open(input).map_err(|e| anyhow!("{e}"))?;
        if file.is_shard_index() {
            return sharded::to_safetensors(&file, input, output, options).with_context(context);
        }
        let to = Format::of(output)?;
        hurray_format::check_complete(&file, input)?;
        if to == Format::Hurray {
            return hurray_format::copy(&file, output, options).with_context(context);
        }
        if file.bytes().is_none() {
            file.read_all().map_err(|e| anyhow!("{e}"))?;
        }
        if to == Format::Gguf {
            return gguf::from_hurray(&file, output, options.allow_expansion).with_context(context);
        }
        // The other writers take every tensor at once: a file read from a
        // URL is read whole first (above: one batch of concurrent range
        // GETs). A mapped file is streamed from the map as the writer goes.
        let source = hurray_format::source(&file)?;
        return transfer(source, input, to, output, options).with_context(context);
    }
    let to = Format::of(output)?;
    if to == Format::Gguf {
        bail!(
            "{}: GGUF is written from a .hurray file only (convert {} to .hurray first)",
            output.display(),
            input.display()
        );
    }
    let mapped = map(input)?;
    let mut source =
        parse(from, &mapped, input).with_context(|| format!("reading {}", input.display()))?;
    if to == Format::Hurray {
        let groups = match from {
            Format::Safetensors => compressed_tensors::config_beside(input)?,
            _ => None,
        };
        source.entries = fold_for_hurray(std::mem::take(&mut source.entries), groups.as_deref())?;
    }
    transfer(source, input, to, output, options).with_context(context)
}

/// The tensors of `bytes`, a file of a format other than Hurray (whose
/// source borrows a verified `File` instead) found at `path`.
fn parse<'a>(from: Format, bytes: &'a [u8], path: &Path) -> Result<Source<'a>> {
    match from {
        Format::Safetensors => safetensors_format::source(bytes),
        Format::Npy => npy::source(bytes, path),
        Format::Npz => npz::source(bytes),
        Format::Gguf => gguf::source(bytes),
        Format::Irpa => irpa::source(bytes),
        Format::Ptd => ptd::source(bytes),
        Format::Hurray => unreachable!("a Hurray source borrows its File"),
    }
}

/// The quantized weights a conversion to Hurray folds into one typed tensor
/// each: MXFP4 pairs, bitsandbytes 4-bit weights and, with the config found
/// beside a safetensors file, compressed-tensors layers.
fn fold_for_hurray<'a>(
    entries: Vec<Entry<'a>>,
    compressed_tensors: Option<&[compressed_tensors::Group]>,
) -> Result<Vec<Entry<'a>>> {
    let entries = bnb::fold(mxfp4::fold_pairs(entries)?)?;
    match compressed_tensors {
        Some(groups) => compressed_tensors::fold(entries, groups),
        None => Ok(entries),
    }
}

/// Checks every tensor against the destination, and the resource policy,
/// before anything is written.
fn check(source: &Source<'_>, input: &Path, to: Format, options: Options) -> Result<()> {
    let mut problems = Vec::new();
    if to == Format::Npy && source.entries.len() != 1 {
        problems.push(format!(
            "a .npy file holds exactly one array and {} has {} tensors (write .npz instead)",
            input.display(),
            source.entries.len()
        ));
    }
    for e in &source.entries {
        if e.quantized.is_some() && to != Format::Hurray {
            problems.push(format!(
                "tensor {:?}: it is quantized; {} holds only plain tensors",
                e.name,
                to.name()
            ));
        } else if let Some(reason) = &e.hurray_only {
            problems.push(format!(
                "tensor {:?}: {reason}; {} holds only dense tensors with data",
                e.name,
                to.name()
            ));
        } else if to.dtype(e.dtype).is_none() {
            problems.push(format!(
                "tensor {:?}: element type {} has no {} counterpart",
                e.name,
                e.dtype.name(),
                to.dtype_kind()
            ));
        } else if let Some(reason) = to.refuses(e) {
            problems.push(format!("tensor {:?}: {reason}", e.name));
        } else if !options.allow_expansion
            && let Err(err) = e.check_expansion()
        {
            problems.push(err.to_string());
        }
    }
    match problems.len() {
        0 => Ok(()),
        1 => bail!("{}", problems[0]),
        n => bail!(
            "{n} tensors can't be converted to {}:\n  {}",
            to.name(),
            problems.join("\n  ")
        ),
    }
}

/// Where converted tensors go.
trait Sink {
    /// Writes one tensor; `feed` calls its argument with the canonical bytes,
    /// chunk by chunk; `quantization` holds the bytes of the quantization
    /// buffers of a quantized entry (only a Hurray sink receives one).
    fn tensor(
        &mut self,
        e: &Entry<'_>,
        feed: &mut Feed<'_>,
        quantization: &[Cow<'_, [u8]>],
    ) -> Result<()>;
    /// Completes the file and moves it into place.
    fn finish(self: Box<Self>) -> Result<()>;
}

type Emit<'e> = dyn FnMut(&[u8]) -> Result<()> + 'e;
type Feed<'f> = dyn FnMut(&mut Emit<'_>) -> Result<()> + 'f;

/// Warns about what the destination format has no place for.
fn warn_dropped(source: &Source<'_>, to: Format) {
    if to == Format::Hurray {
        return;
    }
    for e in source.entries.iter().filter(|e| e.metadata > 0) {
        eprintln!(
            "hurray: warning: {} has no per-tensor metadata; {} of tensor {:?} not carried over",
            to.name(),
            entries(e.metadata),
            e.name
        );
    }
    if !source.metadata.is_empty() && to != Format::Safetensors {
        eprintln!(
            "hurray: warning: {} has no file metadata; {} not carried over",
            to.name(),
            entries(source.metadata.len())
        );
    }
}

fn entries(n: usize) -> String {
    match n {
        1 => "1 metadata entry is".to_owned(),
        n => format!("{n} metadata entries are"),
    }
}

fn transfer(
    mut source: Source<'_>,
    input: &Path,
    to: Format,
    output: &Path,
    options: Options,
) -> Result<()> {
    check(&source, input, to, options)?;
    if to == Format::Safetensors {
        safetensors_format::order(&mut source.entries);
    }
    let mut sink: Box<dyn Sink> = match to {
        Format::Hurray => Box::new(hurray_format::Sink::create(
            output,
            &source.metadata,
            options,
        )?),
        Format::Safetensors => Box::new(safetensors_format::Sink::create(output, &source)?),
        Format::Npy => Box::new(npy::Sink::create(output)?),
        Format::Npz => Box::new(npz::Sink::create(output)?),
        Format::Irpa => Box::new(irpa::sink(output, &source)?),
        Format::Ptd => Box::new(ptd::sink(output, &source)?),
        Format::Gguf => bail!("GGUF is only read"),
    };
    warn_dropped(&source, to);
    let bar = crate::output::progress_bar(source.entries.iter().map(Entry::stored_len).sum());
    for e in &source.entries {
        bar.set_message(e.name.clone());
        let data = source.load(e)?;
        let quantization = source.load_quantization(e)?;
        let mut feed = |emit: &mut Emit<'_>| {
            canonical::canonical(e, &data, &mut |chunk: &[u8]| {
                bar.inc(chunk.len() as u64);
                emit(chunk)
            })
        };
        sink.tensor(e, &mut feed, &quantization)
            .with_context(|| format!("tensor {:?}", e.name))?;
        bar.inc(quantization.iter().map(|b| b.len() as u64).sum());
        drop(data);
    }
    sink.finish()?;
    bar.finish_and_clear();
    Ok(())
}

/// Feeds `e` to `out`, checking exactly the canonical length arrives.
fn write_exact(e: &Entry<'_>, out: &mut dyn Write, feed: &mut Feed<'_>) -> Result<()> {
    let expected = e.canonical_len()?;
    let mut written = 0u64;
    feed(&mut |chunk: &[u8]| {
        written += chunk.len() as u64;
        Ok(out.write_all(chunk)?)
    })?;
    if written != expected {
        bail!("{written} bytes of data, {expected} expected");
    }
    Ok(())
}

/// Starts an output file through the runtime's atomic writer: the bytes go to
/// the returned buffered handle, and [`commit`] puts the file in place.
fn atomic_output(path: &Path) -> Result<(AtomicFile, BufWriter<std::fs::File>)> {
    let file = AtomicFile::create(path).map_err(|e| anyhow!("{e}"))?;
    let out = BufWriter::with_capacity(CHUNK, file.reopen().map_err(|e| anyhow!("{e}"))?);
    Ok((file, out))
}

/// Flushes `out` and commits `file` (fsync, rename, directory sync).
fn commit(file: AtomicFile, out: BufWriter<std::fs::File>) -> Result<()> {
    out.into_inner().map_err(|e| e.into_error())?;
    file.commit().map_err(|e| anyhow!("{e}"))
}
