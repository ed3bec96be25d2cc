//! The fuzz targets' entries: everything a conversion does to its input,
//! on bytes in memory, without files.

use super::format::Format;
use super::{
    Emit, Source, canonical, compressed_tensors, fold_for_hurray, gguf, hurray_format, parse,
    write_exact,
};
use anyhow::{Result, anyhow};
use hurray::File;
use std::path::Path;

/// Reads `bytes` as a file of the format `extension` names (`"npy"`, ...)
/// and streams every tensor's canonical form to nowhere, with every check
/// `convert` makes; returns the canonical bytes seen. The fuzz targets'
/// entry: everything a conversion does to its input, without files.
#[doc(hidden)]
pub fn read_all(extension: &str, bytes: &[u8]) -> Result<u64> {
    let path = format!("input.{extension}");
    let path = Path::new(&path);
    let format = Format::of(path)?;
    let file;
    let source = if format == Format::Hurray {
        file = File::from_bytes(bytes).map_err(|e| anyhow!("{e}"))?;
        hurray_format::check_complete(&file, path)?;
        hurray_format::source(&file)?
    } else {
        parse(format, bytes, path)?
    };
    // What a conversion to Hurray does first.
    let entries = fold_for_hurray(source.entries, None)?;
    let source = Source { entries, ..source };
    let mut total = 0u64;
    for e in source.entries.iter().filter(|e| e.hurray_only.is_none()) {
        e.check_expansion()?;
        let data = source.load(e)?;
        let mut feed = |emit: &mut Emit<'_>| canonical::canonical(e, &data, emit);
        write_exact(e, &mut std::io::sink(), &mut feed)?;
        // A GGUF block tensor's fields are de-interleaved here.
        source.load_quantization(e)?;
        total += e.canonical_len()?;
    }
    Ok(total)
}

/// Reads `bytes` as a Hurray input of a conversion out of Hurray: verified
/// and validated whole, written as GGUF to nowhere, and every tensor
/// unfolded (MXFP4 pairs, bitsandbytes and compressed-tensors layers) and
/// streamed in canonical form as the other writers take it. Returns the
/// GGUF bytes written, or the error that refused them. The `convert_hurray`
/// fuzz target's entry.
#[doc(hidden)]
pub fn write_all_from_hurray(bytes: &[u8]) -> Result<u64> {
    let path = Path::new("input.hurray");
    let file = File::from_bytes(bytes).map_err(|e| anyhow!("{e}"))?;
    hurray_format::check_complete(&file, path)?;
    let mut out = Counter(0);
    let gguf = gguf::write(&file, &mut out, false).map(|()| out.0);
    let source = hurray_format::source(&file)?;
    for e in source.entries.iter().filter(|e| e.hurray_only.is_none()) {
        e.check_expansion()?;
        let data = source.load(e)?;
        let mut feed = |emit: &mut Emit<'_>| canonical::canonical(e, &data, emit);
        write_exact(e, &mut std::io::sink(), &mut feed)?;
    }
    gguf
}

/// A writer that keeps only the count of bytes written.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Parses `bytes` as a GGUF file and takes every block tensor apart into its
/// Hurray buffers and back together: the blocks must come back as they
/// were. Returns how many block tensors there were. The GGUF fuzz target's
/// round-trip property (what `convert` in and out does to each tensor).
#[doc(hidden)]
pub fn gguf_blocks_round_trip(bytes: &[u8]) -> Result<usize> {
    gguf::blocks_round_trip(bytes)
}

/// Reads `bytes` as a `config.json` up to its first NUL byte, and the rest
/// as a `.safetensors` file beside it: [`fold_compressed_tensors`] with the
/// config as hostile as the weights. The safetensors fuzz target's second
/// entry.
#[doc(hidden)]
pub fn fold_compressed_tensors_split(bytes: &[u8]) -> Result<usize> {
    let at = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let config = std::str::from_utf8(&bytes[..at])?;
    fold_compressed_tensors(config, bytes.get(at + 1..).unwrap_or(&[]))
}

/// Reads `bytes` as a `.safetensors` file beside a `config.json` holding
/// `config`, folds its compressed-tensors layers as a conversion to Hurray
/// does and loads every folded buffer; returns how many layers folded. The
/// safetensors fuzz target's entry for the compressed-tensors fold.
#[doc(hidden)]
pub fn fold_compressed_tensors(config: &str, bytes: &[u8]) -> Result<usize> {
    let Some(groups) = compressed_tensors::config(config, Path::new("config.json"))? else {
        return Ok(0);
    };
    let source = parse(Format::Safetensors, bytes, Path::new("input.safetensors"))?;
    let entries = fold_for_hurray(source.entries, Some(&groups))?;
    let source = Source { entries, ..source };
    let mut n = 0;
    for e in source.entries.iter().filter(|e| e.quantized.is_some()) {
        source.load(e)?;
        source.load_quantization(e)?;
        n += 1;
    }
    Ok(n)
}
