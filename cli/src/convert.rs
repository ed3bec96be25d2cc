//! `hurray convert IN OUT`: tensors between `.hurray`, `.safetensors`, `.npy`
//! and `.npz`, each format chosen by its extension.
//!
//! Conversion streams. Every source is memory-mapped and its header parsed
//! first; every tensor is checked against the destination format before a
//! byte is written, so a tensor the destination can't hold fails the whole
//! conversion up front with its name and the reason. Then the tensors are
//! copied one at a time, in chunks, straight from the map to the destination;
//! only a compressed `.npz` member is inflated into memory (one tensor at a
//! time). Every destination is written to a temporary file beside it and
//! renamed into place at the end, so a failed conversion leaves no partial
//! file.
//!
//! Element types are matched through the schema's own tables
//! (`ElementType::from_safetensors_dtype`, `safetensors_dtype`,
//! `numpy_dtype`), never a table of our own. Between the formats the values
//! travel in one canonical form: row-major, little-endian, a bool one byte
//! (0 or 1). Hurray packs bools eight to a byte; a Fortran-order `.npy` or a
//! strided Hurray tensor is gathered into row-major order; a big-endian
//! `.npy` is byte-swapped.

use anyhow::{Context, Result, anyhow, bail};
use hurray::{ElementClass, ElementType, File, Layout, TensorDescriptor, Writer, shape};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufWriter, Cursor, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// Bytes handed to the destination at a time.
const CHUNK: usize = 1 << 20;
/// Inputs with more tensor data than this show a progress bar (on a terminal).
const PROGRESS_THRESHOLD: u64 = 64 << 20;
/// Largest safetensors JSON header accepted (the safetensors crate's own cap).
const MAX_SAFETENSORS_HEADER: u64 = 100_000_000;
/// Largest `.npy` header accepted.
const MAX_NPY_HEADER: usize = 1 << 20;
const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A file format, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Hurray,
    Safetensors,
    Npy,
    Npz,
}

impl Format {
    fn of(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        Ok(match ext.as_deref() {
            Some("hurray") => Format::Hurray,
            Some("safetensors") => Format::Safetensors,
            Some("npy") => Format::Npy,
            Some("npz") => Format::Npz,
            _ => bail!(
                "{}: unknown format: the extension must be .hurray, .safetensors, .npy or .npz",
                path.display()
            ),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Format::Hurray => "Hurray",
            Format::Safetensors => "safetensors",
            Format::Npy => ".npy",
            Format::Npz => ".npz",
        }
    }

    /// What the format calls `t`, from the schema's tables; `None` where it has no such type.
    fn dtype(self, t: ElementType) -> Option<&'static str> {
        match self {
            Format::Hurray => Some(t.name()),
            Format::Safetensors => t.safetensors_dtype(),
            Format::Npy | Format::Npz => t.numpy_dtype(),
        }
    }

    /// What the format's type is called, for messages.
    fn dtype_kind(self) -> &'static str {
        match self {
            Format::Hurray => "Hurray element type",
            Format::Safetensors => "safetensors dtype",
            Format::Npy | Format::Npz => "NumPy dtype",
        }
    }
}

/// Bytes one element takes outside Hurray (safetensors and NumPy store a bool in a byte).
fn unpacked_size(t: ElementType) -> u64 {
    u64::from(t.bits().div_ceil(8))
}

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
}

impl Entry<'_> {
    fn count(&self) -> Result<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| anyhow!("tensor {:?}: the element count overflows", self.name))
    }

    /// Bytes of the canonical (row-major, bool-per-byte) form.
    fn canonical_len(&self) -> Result<u64> {
        self.count()?
            .checked_mul(unpacked_size(self.dtype))
            .ok_or_else(|| anyhow!("tensor {:?}: the byte size overflows", self.name))
    }

    /// Bytes the source stores (for the progress bar).
    fn stored_len(&self) -> u64 {
        match &self.data {
            Data::Slice(s) => s.len() as u64,
            Data::Zip { len, .. } => *len,
            Data::None => 0,
        }
    }
}

/// Where a tensor's stored bytes are.
#[derive(Debug)]
enum Data<'a> {
    /// In the memory map.
    Slice(&'a [u8]),
    /// In a compressed `.npz` member, after `skip` header bytes.
    Zip { index: usize, skip: u64, len: u64 },
    /// Nowhere (the tensor does not leave Hurray).
    None,
}

/// A parsed source: its tensors in file order and its file-wide metadata.
struct Source<'a> {
    entries: Vec<Entry<'a>>,
    metadata: BTreeMap<String, String>,
    zip: Option<RefCell<zip::ZipArchive<Cursor<&'a [u8]>>>>,
}

impl<'a> Source<'a> {
    /// The stored bytes of `e`: borrowed from the map, or inflated from a `.npz` member.
    fn load(&self, e: &Entry<'a>) -> Result<Cow<'a, [u8]>> {
        match e.data {
            Data::Slice(s) => Ok(Cow::Borrowed(s)),
            Data::None => Ok(Cow::Borrowed(&[])),
            Data::Zip { index, skip, len } => {
                let zip = self.zip.as_ref().context("no archive")?;
                let mut zip = zip.borrow_mut();
                let mut member = zip.by_index(index)?;
                std::io::copy(&mut (&mut member).take(skip), &mut std::io::sink())?;
                let mut v = Vec::with_capacity(usize::try_from(len)?);
                // To the end, so the zip reader checks the member's CRC.
                member
                    .read_to_end(&mut v)
                    .with_context(|| format!("inflating npz member {:?}.npy", e.name))?;
                if v.len() as u64 != len {
                    bail!(
                        "npz member {:?}.npy holds {} data bytes, {len} expected",
                        e.name,
                        v.len()
                    );
                }
                Ok(Cow::Owned(v))
            }
        }
    }
}

/// Maps `path` read-only.
fn map(path: &Path) -> Result<memmap2::Mmap> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
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

/// Converts `input` to `output`, formats chosen by extension.
pub(crate) fn convert(input: &Path, output: &Path) -> Result<()> {
    let from = Format::of(input)?;
    let to = Format::of(output)?;
    let context = || format!("converting {} to {}", input.display(), output.display());
    if from == Format::Hurray {
        // hurray's messages name the path and the cause (its `Io` variant also
        // chains the cause as a source, so format it once, here).
        let file = File::open(input).map_err(|e| anyhow!("{e}"))?;
        if to == Format::Hurray {
            return copy_hurray(&file, output).with_context(context);
        }
        let source = hurray_source(&file)?;
        return transfer(source, input, to, output).with_context(context);
    }
    let mapped = map(input)?;
    let source = match from {
        Format::Safetensors => safetensors_source(&mapped),
        Format::Npy => npy_source(&mapped, input),
        Format::Npz => npz_source(&mapped),
        Format::Hurray => unreachable!("handled above"),
    }
    .with_context(|| format!("reading {}", input.display()))?;
    transfer(source, input, to, output).with_context(context)
}

fn progress_bar(total: u64) -> ProgressBar {
    let target = if total >= PROGRESS_THRESHOLD && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:24!} [{bar:32}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Copies a Hurray file as it is: every layout, quantization and descriptor-only tensor.
fn copy_hurray(file: &File, output: &Path) -> Result<()> {
    let reader = file.reader();
    let bar = progress_bar(file.tensors().map(|t| t.byte_length()).sum());
    let mut w = Writer::create(output)?;
    w.set_alignment(reader.alignment())?;
    for (k, v) in reader.metadata() {
        w.set_metadata(k, v);
    }
    for t in file.tensors() {
        bar.set_message(t.name().to_owned());
        let desc = t.descriptor();
        let mut buffers: Vec<&[u8]> = Vec::new();
        if !desc.descriptor_only {
            buffers.extend(t.buffers().into_iter().map(|(_, b)| b));
        }
        w.add_tensor(&desc, &buffers)?;
        bar.inc(t.byte_length());
    }
    w.finish()?;
    bar.finish_and_clear();
    Ok(())
}

fn hurray_source(file: &File) -> Result<Source<'_>> {
    let mut entries = Vec::with_capacity(file.len());
    for t in file.tensors() {
        let layout = t.layout();
        let hurray_only = if t.is_descriptor_only() {
            Some("it is descriptor-only (it carries no data)".to_owned())
        } else if let Some(q) = t.quantization() {
            Some(format!(
                "it is quantized ({} stored, {} expressed)",
                t.element_type().name(),
                q.expressed_type.name()
            ))
        } else if matches!(
            layout,
            Layout::Coo { .. } | Layout::Csr { .. } | Layout::Csc { .. }
        ) {
            Some(format!("it is sparse ({})", layout.name()))
        } else {
            None
        };
        let strides = match (&layout, &hurray_only) {
            // Validated at open: non-negative, within the values buffer.
            (Layout::Strided(s), None) => Some(s.iter().map(|&s| s as u64).collect()),
            _ => None,
        };
        let data = match hurray_only {
            None => Data::Slice(t.data()?),
            Some(_) => Data::None,
        };
        entries.push(Entry {
            name: t.name().to_owned(),
            dtype: t.element_type(),
            shape: t.shape().to_wire(),
            strides,
            big_endian: false,
            packed_bool: t.element_type() == ElementType::Bool,
            data,
            hurray_only,
            metadata: t.metadata().count(),
        });
    }
    let metadata = file
        .reader()
        .metadata()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Ok(Source {
        entries,
        metadata,
        zip: None,
    })
}

fn safetensors_source(bytes: &[u8]) -> Result<Source<'_>> {
    let len = bytes.len() as u64;
    if len < 8 {
        bail!("not a safetensors file: {len} bytes, shorter than the 8-byte header length");
    }
    let n = u64::from_le_bytes(bytes[..8].try_into()?);
    if n > MAX_SAFETENSORS_HEADER {
        bail!("safetensors header of {n} bytes is over the {MAX_SAFETENSORS_HEADER}-byte limit");
    }
    if 8 + n > len {
        bail!("safetensors header of {n} bytes runs past the end of the {len}-byte file");
    }
    let data = &bytes[8 + n as usize..];
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + n as usize])
            .context("the safetensors header is not a JSON object")?;
    let mut metadata = BTreeMap::new();
    let mut entries = Vec::with_capacity(header.len());
    for (name, info) in &header {
        if name == "__metadata__" {
            let obj = info
                .as_object()
                .context("__metadata__ must be an object of strings")?;
            for (k, v) in obj {
                let v = v
                    .as_str()
                    .with_context(|| format!("__metadata__ entry {k:?} is not a string"))?;
                metadata.insert(k.clone(), v.to_owned());
            }
            continue;
        }
        let bad = |what: &str| anyhow!("tensor {name:?}: {what}");
        let dtype_name = info["dtype"]
            .as_str()
            .ok_or_else(|| bad("no \"dtype\" string"))?;
        let dtype = ElementType::from_safetensors_dtype(dtype_name).ok_or_else(|| {
            bad(&format!(
                "safetensors dtype {dtype_name} has no Hurray element type"
            ))
        })?;
        let shape: Vec<u64> = info["shape"]
            .as_array()
            .and_then(|a| a.iter().map(|d| d.as_u64()).collect())
            .ok_or_else(|| bad("\"shape\" must be an array of non-negative integers"))?;
        let offsets: Vec<u64> = info["data_offsets"]
            .as_array()
            .and_then(|a| a.iter().map(|d| d.as_u64()).collect())
            .filter(|o: &Vec<u64>| o.len() == 2)
            .ok_or_else(|| bad("\"data_offsets\" must be two non-negative integers"))?;
        let (begin, end) = (offsets[0], offsets[1]);
        if begin > end || end > data.len() as u64 {
            bail!(bad(&format!(
                "data_offsets [{begin}, {end}] lie outside the {}-byte data section",
                data.len()
            )));
        }
        let entry = Entry {
            name: name.clone(),
            dtype,
            shape,
            strides: None,
            big_endian: false,
            packed_bool: false,
            data: Data::Slice(&data[begin as usize..end as usize]),
            hurray_only: None,
            metadata: 0,
        };
        let expected = entry.canonical_len()?;
        if expected != end - begin {
            bail!(bad(&format!(
                "{} bytes of data, but shape {:?} of {dtype_name} needs {expected}",
                end - begin,
                entry.shape
            )));
        }
        entries.push((begin, entry));
    }
    // File order, so the map is read front to back.
    entries.sort_by_key(|(begin, e)| (*begin, e.name.clone()));
    Ok(Source {
        entries: entries.into_iter().map(|(_, e)| e).collect(),
        metadata,
        zip: None,
    })
}

/// What an `.npy` header says.
#[derive(Debug)]
struct NpyHeader {
    dtype: ElementType,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// Length of the `.npy` preamble (magic, version, header length) and of the header.
fn npy_preamble(bytes: &[u8]) -> Result<(usize, usize)> {
    if bytes.len() < 10 || &bytes[..6] != NPY_MAGIC {
        bail!("not a .npy array (no \\x93NUMPY magic)");
    }
    let (pre, len) = match bytes[6] {
        1 => (10, usize::from(u16::from_le_bytes([bytes[8], bytes[9]]))),
        2 | 3 => {
            if bytes.len() < 12 {
                bail!("truncated .npy preamble");
            }
            let n = u32::from_le_bytes(bytes[8..12].try_into()?);
            (12, usize::try_from(n)?)
        }
        v => bail!(".npy format version {v}.{} is not supported", bytes[7]),
    };
    if len > MAX_NPY_HEADER {
        bail!(".npy header of {len} bytes is over the {MAX_NPY_HEADER}-byte limit");
    }
    Ok((pre, len))
}

/// Parses a whole `.npy` header (`bytes` starts at the magic); returns it and where the data starts.
fn parse_npy(bytes: &[u8]) -> Result<(NpyHeader, usize)> {
    let (pre, len) = npy_preamble(bytes)?;
    let text = bytes
        .get(pre..pre + len)
        .context("the .npy header runs past the end of the file")?;
    let text = std::str::from_utf8(text).context("the .npy header is not text")?;
    let dict = PyDict::parse(text)?;
    let descr = match dict.get("descr") {
        Some(PyValue::Str(s)) => s.as_str(),
        Some(_) => bail!("structured .npy dtypes (descr {text:?}) are not supported"),
        None => bail!("the .npy header has no 'descr'"),
    };
    let fortran_order = match dict.get("fortran_order") {
        Some(PyValue::Bool(b)) => *b,
        _ => bail!("the .npy header has no boolean 'fortran_order'"),
    };
    let shape = match dict.get("shape") {
        Some(PyValue::Tuple(t)) => t.clone(),
        _ => bail!("the .npy header has no 'shape' tuple"),
    };
    let (dtype, big_endian) = numpy_type(descr)?;
    Ok((
        NpyHeader {
            dtype,
            big_endian,
            fortran_order,
            shape,
        },
        pre + len,
    ))
}

/// The element type of a NumPy type string (`<f4`, `|b1`, `>i8` ...), through the schema's
/// `numpy_dtype` table; and whether its bytes are big-endian.
fn numpy_type(descr: &str) -> Result<(ElementType, bool)> {
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let dtype = ElementType::ALL
        .into_iter()
        .find(|t| t.numpy_dtype().is_some_and(|n| &n[1..] == code))
        .ok_or_else(|| anyhow!("NumPy dtype {descr:?} has no Hurray element type"))?;
    let big_endian = match order {
        '>' => true,
        '=' => cfg!(target_endian = "big"),
        _ => false,
    };
    Ok((dtype, big_endian && dtype.bits() > 8))
}

/// Element strides of a Fortran-order (column-major) array.
fn fortran_strides(shape: &[u64]) -> Option<Vec<u64>> {
    let mut strides = Vec::with_capacity(shape.len());
    let mut acc = 1u64;
    for &d in shape {
        strides.push(acc);
        acc = acc.checked_mul(d)?;
    }
    Some(strides)
}

/// An entry for an `.npy` array whose data is `data` (or elsewhere, for a compressed member).
fn npy_entry<'a>(name: String, h: NpyHeader, data: Data<'a>) -> Result<Entry<'a>> {
    let strides = if h.fortran_order && h.shape.len() > 1 {
        Some(
            fortran_strides(&h.shape)
                .with_context(|| format!("array {name:?}: shape overflows"))?,
        )
    } else {
        None
    };
    let entry = Entry {
        name,
        dtype: h.dtype,
        shape: h.shape,
        strides,
        big_endian: h.big_endian,
        packed_bool: false,
        data,
        hurray_only: None,
        metadata: 0,
    };
    let expected = entry.canonical_len()?;
    if entry.stored_len() != expected {
        bail!(
            "array {:?}: {} bytes of data, but shape {:?} of {} needs {expected}",
            entry.name,
            entry.stored_len(),
            entry.shape,
            h.dtype.numpy_dtype().unwrap_or("?"),
        );
    }
    Ok(entry)
}

fn npy_source<'a>(bytes: &'a [u8], path: &Path) -> Result<Source<'a>> {
    let (header, start) = parse_npy(bytes)?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("array")
        .to_owned();
    let entry = npy_entry(name, header, Data::Slice(&bytes[start..]))?;
    Ok(Source {
        entries: vec![entry],
        metadata: BTreeMap::new(),
        zip: None,
    })
}

fn npz_source(bytes: &[u8]) -> Result<Source<'_>> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).context("not a zip (.npz) archive")?;
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
                parse_npy(body).with_context(|| format!("npz member {member_name:?}"))?;
            npy_entry(name, header, Data::Slice(&body[data_start..]))?
        } else {
            // Compressed: read the header now, inflate the data when its turn comes.
            let mut head = vec![0u8; 12];
            let got = read_up_to(&mut member, &mut head)?;
            head.truncate(got);
            let (pre, len) =
                npy_preamble(&head).with_context(|| format!("npz member {member_name:?}"))?;
            head.resize(pre + len, 0);
            if got < pre + len {
                member
                    .read_exact(&mut head[got..])
                    .with_context(|| format!("npz member {member_name:?}: truncated header"))?;
            }
            let (header, data_start) =
                parse_npy(&head).with_context(|| format!("npz member {member_name:?}"))?;
            let skip = data_start as u64;
            let len = member
                .size()
                .checked_sub(skip)
                .context("npz member shorter than its header")?;
            npy_entry(name, header, Data::Zip { index, skip, len })?
        };
        entries.push(entry);
    }
    Ok(Source {
        entries,
        metadata: BTreeMap::new(),
        zip: Some(RefCell::new(zip)),
    })
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// A value of the Python literal subset `.npy` headers use.
#[derive(Debug, Clone, PartialEq)]
enum PyValue {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
    /// A list or dict (structured dtypes): recognised only to be refused.
    Nested,
}

/// The `.npy` header dictionary: `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
struct PyDict(BTreeMap<String, PyValue>);

impl PyDict {
    fn get(&self, key: &str) -> Option<&PyValue> {
        self.0.get(key)
    }

    fn parse(text: &str) -> Result<PyDict> {
        let mut p = PyParser {
            s: text.as_bytes(),
            i: 0,
        };
        let bad = |p: &PyParser<'_>| anyhow!("malformed .npy header {text:?} at byte {}", p.i);
        let mut map = BTreeMap::new();
        p.ws();
        if !p.eat(b'{') {
            return Err(bad(&p));
        }
        loop {
            p.ws();
            if p.eat(b'}') {
                break;
            }
            let key = p.string().ok_or_else(|| bad(&p))?;
            p.ws();
            if !p.eat(b':') {
                return Err(bad(&p));
            }
            p.ws();
            let value = p.value().ok_or_else(|| bad(&p))?;
            map.insert(key, value);
            p.ws();
            if !p.eat(b',') {
                p.ws();
                if !p.eat(b'}') {
                    return Err(bad(&p));
                }
                break;
            }
        }
        p.ws();
        if p.i != p.s.len() {
            return Err(bad(&p));
        }
        Ok(PyDict(map))
    }
}

struct PyParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl PyParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn string(&mut self) -> Option<String> {
        let quote = self.peek().filter(|c| *c == b'\'' || *c == b'"')?;
        let start = self.i + 1;
        let end = start + self.s[start..].iter().position(|&c| c == quote)?;
        self.i = end + 1;
        String::from_utf8(self.s[start..end].to_vec()).ok()
    }
    fn value(&mut self) -> Option<PyValue> {
        match self.peek()? {
            b'\'' | b'"' => self.string().map(PyValue::Str),
            b'T' if self.s[self.i..].starts_with(b"True") => {
                self.i += 4;
                Some(PyValue::Bool(true))
            }
            b'F' if self.s[self.i..].starts_with(b"False") => {
                self.i += 5;
                Some(PyValue::Bool(false))
            }
            b'(' => {
                self.i += 1;
                let mut dims = Vec::new();
                loop {
                    self.ws();
                    if self.eat(b')') {
                        return Some(PyValue::Tuple(dims));
                    }
                    let start = self.i;
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                    let digits = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                    dims.push(digits.parse().ok()?);
                    self.eat(b'L'); // Python 2 long suffix
                    self.ws();
                    if !self.eat(b',') {
                        self.ws();
                        return self.eat(b')').then_some(PyValue::Tuple(dims));
                    }
                }
            }
            open @ (b'[' | b'{') => {
                let close = if open == b'[' { b']' } else { b'}' };
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    self.i += 1;
                    if c == open {
                        depth += 1;
                    } else if c == close {
                        depth -= 1;
                        if depth == 0 {
                            return Some(PyValue::Nested);
                        }
                    }
                }
                None
            }
            _ => None,
        }
    }
}

/// The `.npy` header NumPy itself would write (version 1.0, or 2.0 when it must),
/// padded so the data starts on a 64-byte boundary.
fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [] => "()".to_owned(),
        [d] => format!("({d},)"),
        _ => {
            let d: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", d.join(", "))
        }
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let build = |pre: usize| {
        let pad = (64 - (pre + dict.len() + 1) % 64) % 64;
        dict.len() + pad + 1
    };
    let (version, pre) = if build(10) <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let len = build(pre);
    let mut out = Vec::with_capacity(pre + len);
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(pre + len - 1, b' ');
    out.push(b'\n');
    out
}

/// Checks every tensor against the destination before anything is written.
fn check(source: &Source<'_>, input: &Path, to: Format) -> Result<()> {
    let mut problems = Vec::new();
    if to == Format::Npy && source.entries.len() != 1 {
        problems.push(format!(
            "a .npy file holds exactly one array and {} has {} tensors (write .npz instead)",
            input.display(),
            source.entries.len()
        ));
    }
    for e in &source.entries {
        if let Some(reason) = &e.hurray_only {
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
        }
        if to == Format::Safetensors && e.name == "__metadata__" {
            problems.push(
                "tensor \"__metadata__\": safetensors reserves that name for file metadata".into(),
            );
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
    /// Writes one tensor; `feed` calls its argument with the canonical bytes, chunk by chunk.
    fn tensor(&mut self, e: &Entry<'_>, feed: &mut Feed<'_>) -> Result<()>;
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

fn transfer(source: Source<'_>, input: &Path, to: Format, output: &Path) -> Result<()> {
    check(&source, input, to)?;
    let mut sink: Box<dyn Sink> = match to {
        Format::Hurray => Box::new(HurraySink::create(output, &source.metadata)?),
        Format::Safetensors => Box::new(SafetensorsSink::create(output, &source)?),
        Format::Npy => Box::new(NpySink::create(output, false)?),
        Format::Npz => Box::new(NpySink::create(output, true)?),
    };
    warn_dropped(&source, to);
    let bar = progress_bar(source.entries.iter().map(Entry::stored_len).sum());
    for e in &source.entries {
        bar.set_message(e.name.clone());
        let data = source.load(e)?;
        let mut feed = |emit: &mut Emit<'_>| {
            canonical(e, &data, &mut |chunk: &[u8]| {
                bar.inc(chunk.len() as u64);
                emit(chunk)
            })
        };
        sink.tensor(e, &mut feed)
            .with_context(|| format!("tensor {:?}", e.name))?;
        drop(data);
    }
    sink.finish()?;
    bar.finish_and_clear();
    Ok(())
}

/// Streams `e`'s values, stored as `data`, in canonical form: row-major,
/// little-endian, one byte (0 or 1) per bool.
fn canonical(e: &Entry<'_>, data: &[u8], emit: &mut Emit<'_>) -> Result<()> {
    let count = e.count()?;
    if count == 0 {
        return Ok(());
    }
    if e.packed_bool {
        let mut buf = Vec::with_capacity(CHUNK);
        for i in 0..count {
            let byte = data[(i / 8) as usize];
            buf.push((byte >> (i % 8)) & 1);
            if buf.len() == CHUNK {
                emit(&buf)?;
                buf.clear();
            }
        }
        return if buf.is_empty() { Ok(()) } else { emit(&buf) };
    }
    let size = unpacked_size(e.dtype) as usize;
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

/// Writes into a temporary file next to `dest`, renamed over it by [`Temp::persist`].
struct Temp {
    file: tempfile::NamedTempFile,
    dest: PathBuf,
}

impl Temp {
    fn create(dest: &Path) -> Result<Temp> {
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        let file = tempfile::Builder::new()
            .prefix(".hurray-")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
        Ok(Temp {
            file,
            dest: dest.to_owned(),
        })
    }

    fn writer(&self) -> Result<BufWriter<std::fs::File>> {
        Ok(BufWriter::with_capacity(CHUNK, self.file.reopen()?))
    }

    fn persist(self, out: BufWriter<std::fs::File>) -> Result<()> {
        let out = out.into_inner().map_err(|e| e.into_error())?;
        out.sync_all()?;
        drop(out);
        self.file
            .persist(&self.dest)
            .map_err(|e| e.error)
            .with_context(|| format!("renaming into {}", self.dest.display()))?;
        Ok(())
    }
}

struct HurraySink {
    writer: Writer<std::fs::File>,
}

impl HurraySink {
    fn create(path: &Path, metadata: &BTreeMap<String, String>) -> Result<Self> {
        let mut writer = Writer::create(path)?;
        for (k, v) in metadata {
            writer.set_metadata(k.clone(), v.clone());
        }
        Ok(HurraySink { writer })
    }
}

impl Sink for HurraySink {
    fn tensor(&mut self, e: &Entry<'_>, feed: &mut Feed<'_>) -> Result<()> {
        let desc = TensorDescriptor::new(e.name.clone(), e.dtype, shape(&e.shape));
        let mut t = self.writer.begin_tensor(&desc)?;
        if e.dtype == ElementType::Bool {
            // Pack one byte per bool into bits, LSB first, as Hurray stores them.
            let (mut acc, mut bits, mut seen) = (0u8, 0u32, 0u64);
            let mut packed = Vec::with_capacity(CHUNK / 8 + 1);
            feed(&mut |chunk: &[u8]| {
                packed.clear();
                for &b in chunk {
                    if b > 1 {
                        bail!("bool element {seen} holds {b}; only 0 and 1 are booleans");
                    }
                    acc |= b << bits;
                    bits += 1;
                    seen += 1;
                    if bits == 8 {
                        packed.push(acc);
                        (acc, bits) = (0, 0);
                    }
                }
                Ok(t.write_all(&packed)?)
            })?;
            if bits > 0 {
                t.write_all(&[acc])?;
            }
        } else {
            feed(&mut |chunk: &[u8]| Ok(t.write_all(chunk)?))?;
        }
        Ok(t.finish()?)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        self.writer.finish()?;
        Ok(())
    }
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

struct SafetensorsSink {
    temp: Temp,
    out: BufWriter<std::fs::File>,
}

impl SafetensorsSink {
    /// Writes the whole header up front: every tensor's size is known.
    fn create(path: &Path, source: &Source<'_>) -> Result<Self> {
        let mut header = serde_json::Map::new();
        if !source.metadata.is_empty() {
            header.insert("__metadata__".into(), serde_json::json!(source.metadata));
        }
        let mut offset = 0u64;
        for e in &source.entries {
            let end = offset
                .checked_add(e.canonical_len()?)
                .context("the data size overflows")?;
            header.insert(
                e.name.clone(),
                serde_json::json!({
                    "dtype": Format::Safetensors.dtype(e.dtype),
                    "shape": e.shape,
                    "data_offsets": [offset, end],
                }),
            );
            offset = end;
        }
        let mut json = serde_json::to_vec(&header)?;
        // Pad with spaces so the data starts 8-byte aligned, as the safetensors writer does.
        json.resize(json.len().next_multiple_of(8), b' ');
        let temp = Temp::create(path)?;
        let mut out = temp.writer()?;
        out.write_all(&(json.len() as u64).to_le_bytes())?;
        out.write_all(&json)?;
        Ok(SafetensorsSink { temp, out })
    }
}

impl Sink for SafetensorsSink {
    fn tensor(&mut self, e: &Entry<'_>, feed: &mut Feed<'_>) -> Result<()> {
        write_exact(e, &mut self.out, feed)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        self.temp.persist(self.out)
    }
}

/// `.npy` (one array) or `.npz` (a store-only zip of `.npy` members, as `numpy.savez` writes).
struct NpySink {
    temp: Temp,
    out: NpyOut,
}

enum NpyOut {
    Npy(BufWriter<std::fs::File>),
    Npz(Box<zip::ZipWriter<BufWriter<std::fs::File>>>),
}

impl NpySink {
    fn create(path: &Path, npz: bool) -> Result<Self> {
        let temp = Temp::create(path)?;
        let out = temp.writer()?;
        let out = if npz {
            NpyOut::Npz(Box::new(zip::ZipWriter::new(out)))
        } else {
            NpyOut::Npy(out)
        };
        Ok(NpySink { temp, out })
    }
}

impl Sink for NpySink {
    fn tensor(&mut self, e: &Entry<'_>, feed: &mut Feed<'_>) -> Result<()> {
        let descr = Format::Npy.dtype(e.dtype).context("no NumPy dtype")?;
        let header = npy_header(descr, &e.shape);
        match &mut self.out {
            NpyOut::Npy(out) => {
                out.write_all(&header)?;
                write_exact(e, out, feed)
            }
            NpyOut::Npz(zip) => {
                let size = (header.len() as u64).saturating_add(e.canonical_len()?);
                let options = zip::write::SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Stored)
                    .large_file(size >= u64::from(u32::MAX));
                zip.start_file(format!("{}.npy", e.name), options)?;
                zip.write_all(&header)?;
                write_exact(e, zip, feed)
            }
        }
    }

    fn finish(self: Box<Self>) -> Result<()> {
        let out = match self.out {
            NpyOut::Npy(out) => out,
            NpyOut::Npz(zip) => (*zip).finish()?,
        };
        self.temp.persist(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_parses_what_numpy_writes() {
        let d = PyDict::parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0, 5), }")
            .unwrap();
        assert_eq!(d.get("descr"), Some(&PyValue::Str("<f4".into())));
        assert_eq!(d.get("fortran_order"), Some(&PyValue::Bool(false)));
        assert_eq!(d.get("shape"), Some(&PyValue::Tuple(vec![3, 0, 5])));
        let d = PyDict::parse("{'descr':'|b1','fortran_order':True,'shape':(7L,)}  ").unwrap();
        assert_eq!(d.get("shape"), Some(&PyValue::Tuple(vec![7])));
        let d = PyDict::parse("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': ()}")
            .unwrap();
        assert_eq!(d.get("descr"), Some(&PyValue::Nested));
        assert_eq!(d.get("shape"), Some(&PyValue::Tuple(vec![])));
        for bad in ["", "{", "{'a' 1}", "{'shape': (1,2}", "{'x': 'y'} z"] {
            assert!(PyDict::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn written_npy_headers_parse_back_and_align() {
        for shape in [vec![], vec![4], vec![3, 0, 5], vec![1; 40]] {
            let h = npy_header("<f8", &shape);
            assert_eq!(h.len() % 64, 0);
            let (parsed, start) = parse_npy(&h).unwrap();
            assert_eq!(start, h.len());
            assert_eq!(parsed.shape, shape);
            assert_eq!(parsed.dtype, ElementType::Float64);
            assert!(!parsed.big_endian && !parsed.fortran_order);
        }
    }

    #[test]
    fn numpy_types_come_from_the_schema_table() {
        for t in ElementType::ALL {
            if let Some(n) = t.numpy_dtype() {
                assert_eq!(numpy_type(n).unwrap(), (t, false));
                if t.bits() > 8 {
                    let be = format!(">{}", &n[1..]);
                    assert_eq!(numpy_type(&be).unwrap(), (t, true));
                }
            }
        }
        assert!(numpy_type("<V2").is_err());
    }

    #[test]
    fn gather_fortran_order() {
        // [[1, 2, 3], [4, 5, 6]] stored column-major.
        let values: [u16; 6] = [1, 4, 2, 5, 3, 6];
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let e = Entry {
            name: "a".into(),
            dtype: ElementType::UInt16,
            shape: vec![2, 3],
            strides: fortran_strides(&[2, 3]),
            big_endian: false,
            packed_bool: false,
            data: Data::Slice(&data),
            hurray_only: None,
            metadata: 0,
        };
        let mut out = Vec::new();
        canonical(&e, &data, &mut |c: &[u8]| {
            out.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
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
        let e = Entry {
            name: "t".into(),
            dtype: ElementType::UInt8,
            shape: shape.to_vec(),
            strides: Some(strides),
            big_endian: false,
            packed_bool: false,
            data: Data::Slice(&data),
            hurray_only: None,
            metadata: 0,
        };
        let mut out = Vec::new();
        canonical(&e, &data, &mut |c: &[u8]| {
            out.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
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
