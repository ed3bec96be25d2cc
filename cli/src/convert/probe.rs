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

/// Parses `bytes` as a GGUF file and takes every block tensor apart into its
/// Hurray buffers and back together: the blocks must come back as they
/// were. Returns how many block tensors there were. The GGUF fuzz target's
/// round-trip property (what `convert` in and out does to each tensor).
#[doc(hidden)]
pub fn gguf_blocks_round_trip(bytes: &[u8]) -> Result<usize> {
    gguf::blocks_round_trip(bytes)
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
