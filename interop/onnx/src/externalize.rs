//! Initializers into a Hurray file, and a model whose initializers are
//! external data at their bytes inside that file.

use crate::error::{Error, Result};
use crate::initializer::{self, DATA_FIELDS, Initializer, LOCATION_EXTERNAL};
use crate::model::Model;
use crate::wire::{self, Fields};
use hurray::limits::MAX_ONNX_MODEL_BYTES;
use hurray::{
    ElementType, File, Layout, TensorDescriptor, TensorRef, Writer, atomic::AtomicFile,
    descriptor::BufferRole, shape,
};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// How [`externalize`] places and picks tensors.
#[derive(Debug, Clone)]
pub struct Options {
    /// The Hurray file's alignment: 4096 (a page) lets ONNX Runtime map
    /// each tensor in place; it must be a power of two in [64, 2^30].
    pub align: u64,
    /// Initializers smaller than this many bytes stay inline in the model
    /// (they are still written to the Hurray file).
    pub threshold: u64,
    /// Point at the tensors of an existing Hurray file (one a framework
    /// wrote) instead of writing one: each must match its initializer's
    /// type, shape and bytes.
    pub existing: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            align: 4096,
            threshold: 1024,
            existing: false,
        }
    }
}

/// What [`externalize`] did: how many initializers point into the Hurray
/// file, and which stayed inline, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub external: usize,
    pub inline: Vec<(String, &'static str)>,
}

/// Writes every initializer of `model` to a new Hurray file at `weights`
/// (aligned to `align`, checksummed), as `hurray convert model.onnx` does.
pub fn write_weights(model: &Model, weights: &Path, align: u64) -> Result<()> {
    for init in model.initializers() {
        init.check(&model.bytes, &model.base_dir)?;
    }
    let mut w = Writer::create(weights)?;
    w.set_alignment(align)?;
    for init in model.initializers() {
        let desc = TensorDescriptor::new(init.name(), init.element_type(), shape(init.dims()));
        let mut t = w.begin_tensor(&desc)?;
        init.stream(&model.bytes, &model.base_dir, |piece| {
            if init.element_type() == ElementType::Bool {
                init.check_bools(piece)?;
                t.write_packed(piece, 1)?;
            } else {
                t.write_all(piece)?;
            }
            Ok(())
        })?;
        t.finish()?;
    }
    w.finish()?;
    Ok(())
}

/// Writes `out_onnx`: `model` with each initializer of at least
/// `options.threshold` bytes as external data at its bytes inside
/// `weights`, which is written first (or, with `options.existing`, read).
/// Everything is checked before anything is written, and the weights take
/// their place only once the model's bytes are made, so a failure leaves
/// both paths as they were.
pub fn externalize(
    model: &Model,
    out_onnx: &Path,
    weights: &Path,
    options: &Options,
) -> Result<Report> {
    let location = location_from(out_onnx, weights, options.existing)?;
    refuse_input_files(model, weights)?;
    if options.existing {
        let file = File::open(weights)?;
        let bytes = rewritten(model, &file, &location, options)?;
        return write_model(out_onnx, bytes);
    }
    // The weights go to a partial file beside their place first.
    let name = weights.file_name().unwrap_or_default().to_string_lossy();
    let partial = weights.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let made = write_weights(model, &partial, options.align).and_then(|()| {
        let file = File::open(&partial)?;
        rewritten(model, &file, &location, options)
    });
    let (bytes, report) = match made {
        Ok(made) => made,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&partial, weights) {
        let _ = std::fs::remove_file(&partial);
        return Err(Error::io(weights)(e));
    }
    write_model(out_onnx, (bytes, report))
}

/// The rewritten model's bytes, and what was done, over the weights `file`.
fn rewritten(
    model: &Model,
    file: &File,
    location: &str,
    options: &Options,
) -> Result<(Vec<u8>, Report)> {
    let mut report = Report::default();
    let mut rewrites: Vec<Option<Vec<u8>>> = Vec::new();
    for init in model.initializers() {
        let proto = &model.bytes[init.proto.clone()];
        let rewrite = match place_of(model, init, file, options)? {
            Ok((offset, length)) => {
                report.external += 1;
                Some(external_proto(proto, location, offset, length))
            }
            Err(why) => {
                report.inline.push((init.name().to_owned(), why));
                // External data of the input moves into the model: the
                // output does not reach for the input's files.
                if init.is_external() {
                    let raw = init.onnx_bytes(&model.bytes, &model.base_dir)?;
                    if init.element_type() == ElementType::Bool {
                        init.check_bools(&raw)?;
                    }
                    Some(inline_proto(proto, &raw))
                } else {
                    None
                }
            }
        };
        rewrites.push(rewrite);
    }
    let bytes = model.rewrite(|i| rewrites[i].take())?;
    if bytes.len() as u64 > MAX_ONNX_MODEL_BYTES {
        return Err(Error::ModelTooLarge {
            path: PathBuf::from("(the rewritten model)"),
            size: bytes.len() as u64,
            limit: MAX_ONNX_MODEL_BYTES,
        });
    }
    Ok((bytes, report))
}

fn write_model(out_onnx: &Path, (bytes, report): (Vec<u8>, Report)) -> Result<Report> {
    write_atomically(out_onnx, &bytes)?;
    Ok(report)
}

/// Refuses a weights path that is one of the input's external data files:
/// writing it would destroy the input's own weights.
fn refuse_input_files(model: &Model, weights: &Path) -> Result<()> {
    let Ok(target) = weights.canonicalize() else {
        return Ok(()); // not there yet: no input file
    };
    for init in model.initializers() {
        if let Some(path) = init.external_path(&model.base_dir)
            && path.canonicalize().is_ok_and(|p| p == target)
        {
            return Err(Error::Argument(format!(
                "{} holds the external data of initializer {:?}: the weights must go to a file of their own",
                weights.display(),
                init.name()
            )));
        }
    }
    Ok(())
}

/// Where `init`'s bytes lie in `file` (`Ok((offset, length))`), or why it
/// stays inline; an error when an existing file's tensor does not match.
fn place_of(
    model: &Model,
    init: &Initializer,
    file: &File,
    options: &Options,
) -> Result<Result<(u64, u64), &'static str>> {
    let len = init.onnx_len()?;
    let t = match file.tensor(init.name()) {
        Ok(t) => t,
        Err(hurray::Error::NotFound { .. }) if options.existing => {
            return Ok(Err("not in the Hurray file"));
        }
        Err(e) => return Err(e.into()),
    };
    if options.existing {
        matches(model, init, &t)?;
    }
    if init.element_type() == ElementType::Bool {
        return Ok(Err("BOOL is a byte per element in ONNX, a bit in Hurray"));
    }
    if len == 0 {
        return Ok(Err("empty"));
    }
    // What the input kept outside the model goes to the Hurray file
    // whatever its size.
    if len < options.threshold && !init.is_external() {
        return Ok(Err("below the threshold"));
    }
    match t.buffer_range(BufferRole::Values) {
        Some((offset, length)) if length == len => Ok(Ok((offset, length))),
        _ => Err(Error::tensor(
            init.name(),
            "values",
            "missing",
            "the Hurray tensor has no values buffer of the model's length",
        )),
    }
}

/// An existing Hurray tensor stands for `init`: dense, same type, shape and bytes.
fn matches(model: &Model, init: &Initializer, t: &TensorRef<'_>) -> Result<()> {
    let name = init.name();
    let layout = t.layout();
    if layout != Layout::Dense {
        return Err(Error::tensor(
            name,
            "layout",
            layout.name(),
            "ONNX external data holds dense row-major values only",
        ));
    }
    if let Some(q) = t.quantization() {
        return Err(Error::tensor(
            name,
            "quantization",
            q.scheme.kind().name(),
            "ONNX external data cannot say how a quantized tensor's scales apply",
        ));
    }
    if t.is_descriptor_only() {
        return Err(Error::tensor(
            name,
            "data",
            "descriptor-only",
            "the Hurray tensor holds no data",
        ));
    }
    if t.element_type() != init.element_type() {
        return Err(Error::tensor(
            name,
            "data_type",
            init.element_type().name(),
            format!("the Hurray tensor is {}", t.element_type().name()),
        ));
    }
    let dims: Vec<u64> = t.dims().iter().map(|d| d.to_wire()).collect();
    if dims != init.dims() {
        return Err(Error::tensor(
            name,
            "dims",
            format!("{:?}", init.dims()),
            format!("the Hurray tensor's shape is {dims:?}"),
        ));
    }
    let ours = init.hurray_bytes(&model.bytes, &model.base_dir)?;
    if t.buffer(BufferRole::Values).unwrap_or_default() != &ours[..] {
        return Err(Error::tensor(
            name,
            "data",
            "the model's values",
            "the Hurray tensor's values differ",
        ));
    }
    Ok(())
}

/// `proto` with its data replaced by external data at `offset`, `length`
/// of `location`; every other field is kept as it was.
pub(crate) fn external_proto(proto: &[u8], location: &str, offset: u64, length: u64) -> Vec<u8> {
    let mut out = without_data(proto);
    for (k, v) in [
        ("location", location.to_owned()),
        ("offset", offset.to_string()),
        ("length", length.to_string()),
    ] {
        let mut e = Vec::new();
        wire::put_bytes_field(&mut e, 1, k.as_bytes());
        wire::put_bytes_field(&mut e, 2, v.as_bytes());
        wire::put_bytes_field(&mut out, initializer::EXTERNAL_DATA, &e);
    }
    wire::put_varint_field(&mut out, initializer::DATA_LOCATION, LOCATION_EXTERNAL);
    out
}

/// `proto` with its data as `raw_data`, every other field kept.
fn inline_proto(proto: &[u8], raw: &[u8]) -> Vec<u8> {
    let mut out = without_data(proto);
    wire::put_bytes_field(&mut out, initializer::RAW_DATA, raw);
    out
}

/// `proto` without the fields that hold or locate its data.
fn without_data(proto: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(proto.len().min(4096) + 64);
    for f in Fields::new(proto, "TensorProto").flatten() {
        if !DATA_FIELDS.contains(&f.number) {
            out.extend_from_slice(&proto[f.span]);
        }
    }
    out
}

/// `weights` relative to `out_onnx`'s directory, which it must be inside
/// (ONNX Runtime reads external data from the model's directory only).
fn location_from(out_onnx: &Path, weights: &Path, existing: bool) -> Result<String> {
    let dir = match out_onnx.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let dir = dir.canonicalize().map_err(Error::io(&dir))?;
    let weights_dir = match weights.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let file_name = weights.file_name().ok_or_else(|| {
        Error::Argument(format!(
            "{}: the weights path names no file",
            weights.display()
        ))
    })?;
    if existing && !weights.is_file() {
        return Err(Error::Io {
            path: weights.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the existing weights file is missing",
            ),
        });
    }
    let weights_dir = weights_dir
        .canonicalize()
        .map_err(Error::io(&weights_dir))?;
    let rel = weights_dir.strip_prefix(&dir).map_err(|_| {
        Error::Argument(format!(
            "{} is not inside {}: ONNX Runtime reads external data only from the model's directory",
            weights.display(),
            dir.display()
        ))
    })?;
    let rel = rel.join(file_name);
    let text = rel.to_str().ok_or_else(|| {
        Error::Argument(format!(
            "{}: an ONNX location is UTF-8 text",
            weights.display()
        ))
    })?;
    initializer::relative_location("(weights)", text)?;
    Ok(text.to_owned())
}

/// Writes `bytes` to `path` through `hurray::atomic::AtomicFile` (a temporary file
/// renamed over it), so a failure leaves whatever was there before.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(Error::io(path))?;
    f.commit()?;
    Ok(())
}
