//! Sharded checkpoints: transformers' layout (shards plus
//! `model.safetensors.index.json`, whose `weight_map` names each tensor's
//! shard) to and from a Hurray index and its members (ADR-0010).
//!
//! Each shard converts on its own, through the single-file path, to a
//! member of the same stem (`model-00001-of-00004.safetensors` <->
//! `model-00001-of-00004.hurray`; beside a checkpoint being replaced,
//! `model-00001-of-00004.1.hurray`), so a tensor stays in the shard
//! `weight_map` put it in. The index's `metadata` object travels as
//! `safetensors.index.metadata.<key>` entries of the Hurray index's
//! metadata, each value as its JSON text, so numbers stay numbers. In both
//! directions the index is written last, after every shard is in place: a
//! conversion that dies leaves no index.

use super::{Format, Options, map, safetensors_format};
use anyhow::{Context, Result, anyhow, bail};
use hurray::{File, ShardedFile, ShardedWriter, atomic::AtomicFile};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The Hurray index metadata key prefix of the safetensors index's `metadata`.
const METADATA_PREFIX: &str = "safetensors.index.metadata.";
/// The suffix that marks a safetensors index.
const INDEX_SUFFIX: &str = ".index.json";

/// The safetensors index `input` names: `input` itself when it ends in
/// `.index.json`, or the one `*.safetensors.index.json` in a directory;
/// `None` for anything else.
pub(super) fn safetensors_index_of(input: &Path) -> Result<Option<PathBuf>> {
    if input.is_dir() {
        let mut found = Vec::new();
        for entry in
            std::fs::read_dir(input).with_context(|| format!("reading {}", input.display()))?
        {
            let path = entry?.path();
            if path
                .to_str()
                .is_some_and(|p| p.ends_with(".safetensors.index.json"))
            {
                found.push(path);
            }
        }
        return match found.as_slice() {
            [one] => Ok(Some(one.clone())),
            // Not a checkpoint directory: the file formats' own error says so.
            [] => Ok(None),
            _ => bail!(
                "{}: more than one *.safetensors.index.json; name one",
                input.display()
            ),
        };
    }
    Ok(input
        .to_str()
        .filter(|p| p.ends_with(INDEX_SUFFIX))
        .map(PathBuf::from))
}

/// transformers' index file, as `save_pretrained` writes it.
#[derive(Debug, serde::Deserialize)]
struct SafetensorsIndex {
    #[serde(default)]
    metadata: BTreeMap<String, Value>,
    weight_map: BTreeMap<String, String>,
}

/// A shard's file name: a plain name in the index's directory.
fn plain_name(shard: &str) -> Result<&str> {
    let ok = !shard.is_empty()
        && Path::new(shard).file_name().and_then(|n| n.to_str()) == Some(shard)
        && shard != "..";
    if ok {
        Ok(shard)
    } else {
        bail!("weight_map names shard {shard:?}: only file names in the index's directory are read")
    }
}

fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// The checkpoint of the index `file`, already opened from `path` (which
/// says where its members are): the index is not mapped and verified again.
pub(crate) fn open_index(file: &File, path: &Path) -> hurray::Result<ShardedFile> {
    #[cfg(feature = "remote")]
    if let Some(url) = path.to_str().filter(|_| crate::input::is_url(path)) {
        // Members are the objects next to the index.
        return ShardedFile::from_index_with_sources(
            file,
            hurray_object_store::member_sources(url, &[]),
        );
    }
    ShardedFile::from_index_at(file, path)
}

fn read_index(path: &Path) -> Result<SafetensorsIndex> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if len > crate::limits::MAX_INDEX_JSON {
        bail!(
            "{}: {len} bytes, over the {}-byte limit of an index read whole",
            path.display(),
            crate::limits::MAX_INDEX_JSON
        );
    }
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&text)
        .with_context(|| format!("{}: not a safetensors index", path.display()))
}

/// `model.safetensors.index.json` and its shards to a Hurray index at `output`.
pub(super) fn from_safetensors(index_path: &Path, output: &Path, options: Options) -> Result<()> {
    if Format::of(output)? != Format::Hurray {
        bail!(
            "{}: a sharded safetensors checkpoint converts to a Hurray index (.hurray)",
            output.display()
        );
    }
    let index = read_index(index_path)?;
    let dir = dir_of(index_path);
    let out_dir = dir_of(output);
    // Shards in name order (save_pretrained's numbering), each checked
    // against weight_map before anything is written.
    let mut shards: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (tensor, shard) in &index.weight_map {
        shards.entry(plain_name(shard)?).or_default().push(tensor);
    }
    for (shard, listed) in &shards {
        let path = dir.join(shard);
        let mapped = map(&path)?;
        let source = safetensors_format::source(&mapped)
            .with_context(|| format!("reading {}", path.display()))?;
        let mut held: Vec<&str> = source.entries.iter().map(|e| e.name.as_str()).collect();
        held.sort_unstable();
        if held != *listed {
            let missing: Vec<_> = listed.iter().filter(|t| !held.contains(t)).collect();
            let extra: Vec<_> = held.iter().filter(|t| !listed.contains(t)).collect();
            bail!(
                "{}: weight_map and the shard disagree (listed but absent: {missing:?}; present but not listed: {extra:?})",
                path.display()
            );
        }
    }
    let mut writer = ShardedWriter::create(output)?;
    writer.set_digests(options.digest_algorithm())?;
    for (key, value) in &index.metadata {
        writer.set_metadata(format!("{METADATA_PREFIX}{key}"), value.to_string());
    }
    for shard in shards.keys() {
        let stem = shard.strip_suffix(".safetensors").unwrap_or(shard);
        // Beside, never over, a member of a Hurray checkpoint at `output`.
        let member = writer.member_path(&format!("{stem}.hurray"))?;
        let member_options = super::Options {
            file_id: Some(hurray::sharded::FileId::random()?),
            ..options
        };
        super::convert(&dir.join(shard), &out_dir.join(&member), member_options)?;
        writer.adopt_member(&member)?;
    }
    writer.finish()?;
    Ok(())
}

/// A Hurray index and its members to transformers' layout: a safetensors
/// shard per member and `output`, the `*.index.json`, written last.
pub(super) fn to_safetensors(
    index: &File,
    index_path: &Path,
    output: &Path,
    options: Options,
) -> Result<()> {
    if !output.to_str().is_some_and(|p| p.ends_with(INDEX_SUFFIX)) {
        bail!(
            "{} is a sharded checkpoint's index: convert it to a `*.safetensors.index.json` (its shards are written beside it)",
            index_path.display()
        );
    }
    let checkpoint = open_index(index, index_path)?;
    for t in checkpoint.tensors() {
        if t.whole_piece().is_none() {
            bail!(
                "tensor {:?} is stored in {} pieces; a safetensors index maps each tensor to one whole file",
                t.name,
                t.pieces.len()
            );
        }
    }
    // What is converted is what the index recorded.
    checkpoint.verify_members()?;
    let dir = dir_of(index_path);
    let out_dir = dir_of(output);
    let mut weight_map = BTreeMap::new();
    let mut total_size = 0u64;
    for member in checkpoint.members() {
        let file_name = Path::new(&member.path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(&member.path);
        let stem = file_name.strip_suffix(".hurray").unwrap_or(file_name);
        let shard = format!("{stem}.safetensors");
        let shard_path = out_dir.join(&shard);
        super::convert(&dir.join(&member.path), &shard_path, options)?;
        // weight_map lists what the shard holds (an MXFP4 tensor is a
        // `_blocks`/`_scales` pair there).
        let mapped = map(&shard_path)?;
        let source = safetensors_format::source(&mapped)?;
        for e in &source.entries {
            total_size += e.data.len();
            if weight_map
                .insert(e.name.clone(), Value::String(shard.clone()))
                .is_some()
            {
                bail!("tensor {:?} is in two members", e.name);
            }
        }
    }
    let mut metadata = serde_json::Map::new();
    for (key, value) in checkpoint.metadata() {
        if let Some(key) = key.strip_prefix(METADATA_PREFIX) {
            let value: Value = serde_json::from_str(value)
                .map_err(|e| anyhow!("index metadata {METADATA_PREFIX}{key}: not JSON: {e}"))?;
            metadata.insert(key.to_owned(), value);
        }
    }
    metadata
        .entry("total_size")
        .or_insert(Value::from(total_size));
    let doc = serde_json::json!({ "metadata": metadata, "weight_map": weight_map });
    // As save_pretrained writes it: two-space indent, sorted keys, a newline.
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    let mut file = AtomicFile::create(output).map_err(|e| anyhow!("{e}"))?;
    file.write_all(text.as_bytes())?;
    file.commit().map_err(|e| anyhow!("{e}"))
}
