//! What a report shows, computed here (the page only lays it out): one row
//! per tensor (a sharded checkpoint's logical tensors, with their pieces'
//! member), totals by element type, layer and member, and with `--stats` a
//! summary of each tensor's values.

use super::stats::{Accumulator, Stats};
use crate::inspect::quant_text;
use crate::output::progress_bar;
use anyhow::Result;
use hurray::{Dim, File, ShardedFile, TensorRef};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The whole report.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// The path or URL it was made of.
    pub(crate) source: String,
    /// `"file"` or `"sharded checkpoint"`.
    pub(crate) kind: &'static str,
    pub(crate) version: String,
    /// Bytes of the file, or of the index and every member.
    pub(crate) file_bytes: u64,
    pub(crate) metadata: Vec<(String, String)>,
    pub(crate) members: Vec<Group>,
    pub(crate) tensors: Vec<Row>,
    pub(crate) totals: Totals,
    /// Whether rows carry `stats`.
    pub(crate) stats: bool,
}

/// One tensor.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) dtype: &'static str,
    /// Sizes, `"?"` for a dynamic dimension (0 stays 0).
    pub(crate) shape: Vec<Value>,
    pub(crate) layout: &'static str,
    pub(crate) quantization: Option<String>,
    /// What the treemap colours it by: its quantization scheme, or its type.
    pub(crate) kind: String,
    pub(crate) bytes: u64,
    /// Elements; `None` for a dynamic shape or a tensor without data.
    pub(crate) params: Option<u64>,
    /// What the file records to check it: `crc32c`, `blake3`, both, `none`.
    pub(crate) checks: &'static str,
    /// The members holding it (a sharded checkpoint's).
    pub(crate) members: Vec<String>,
    pub(crate) stats: Option<Stats>,
    /// Why it has no stats (complex values, no data).
    pub(crate) stats_note: Option<String>,
}

/// Totals over a group of tensors.
#[derive(Debug, Serialize, Default, Clone)]
pub(crate) struct Group {
    pub(crate) name: String,
    pub(crate) tensors: u64,
    pub(crate) params: u64,
    pub(crate) bytes: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct Totals {
    pub(crate) all: Group,
    pub(crate) by_dtype: Vec<Group>,
    pub(crate) by_layer: Vec<Group>,
}

/// The layer a tensor belongs to: its name up to the first all-digit
/// component (`model.layers.3`), else without its last component
/// (`model.embed_tokens`), else the name.
pub(crate) fn layer_of(name: &str) -> &str {
    let mut end = 0;
    for part in name.split('.') {
        end += part.len();
        if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            return &name[..end];
        }
        end += 1;
    }
    name.rfind('.').map_or(name, |i| &name[..i])
}

fn checks_of(t: &TensorRef<'_>) -> &'static str {
    match (t.checksums().is_some(), t.digests().is_some()) {
        (true, true) => "crc32c+blake3",
        (true, false) => "crc32c",
        (false, true) => "blake3",
        (false, false) => "none",
    }
}

fn shape_of(dims: &[Dim]) -> Vec<Value> {
    dims.iter()
        .map(|d| match d {
            Dim::Fixed(n) => json!(n),
            Dim::Dynamic => json!("?"),
        })
        .collect()
}

/// A row for tensor `t` (without stats).
fn row_of(t: &TensorRef<'_>) -> Row {
    let d = t.descriptor();
    let quantization = d
        .quantization
        .as_ref()
        .map(|q| quant_text(d.element_type, q));
    let kind = match &d.quantization {
        Some(q) => format!("{} {}", d.element_type.name(), q.scheme.kind().name()),
        None => d.element_type.name().to_owned(),
    };
    Row {
        name: d.name.clone(),
        dtype: d.element_type.name(),
        shape: shape_of(&d.shape),
        layout: d.layout.name(),
        quantization,
        kind,
        bytes: t.byte_length(),
        params: (!d.descriptor_only).then(|| t.element_count()).flatten(),
        checks: checks_of(t),
        members: Vec::new(),
        stats: None,
        stats_note: None,
    }
}

/// Totals by element type and by layer, sorted by bytes, largest first.
fn totals(rows: &[Row]) -> Totals {
    let mut all = Group {
        name: "all".into(),
        ..Group::default()
    };
    let (mut dtypes, mut layers) = (BTreeMap::new(), BTreeMap::new());
    for r in rows {
        for (g, key) in [
            (&mut all, None),
            (
                &mut *dtypes.entry(r.kind.clone()).or_insert_with(Group::default),
                Some(r.kind.as_str()),
            ),
            (
                &mut *layers
                    .entry(layer_of(&r.name).to_owned())
                    .or_insert_with(Group::default),
                Some(layer_of(&r.name)),
            ),
        ] {
            if let Some(k) = key {
                g.name = k.to_owned();
            }
            g.tensors += 1;
            g.params = g.params.saturating_add(r.params.unwrap_or(0));
            g.bytes = g.bytes.saturating_add(r.bytes);
        }
    }
    let sorted = |m: BTreeMap<String, Group>| {
        let mut v: Vec<Group> = m.into_values().collect();
        v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
        v
    };
    Totals {
        all,
        by_dtype: sorted(dtypes),
        by_layer: sorted(layers),
    }
}

/// Runs `work` on every index below `n` on all cores, the next index to
/// whichever thread is free (tensors differ in size).
fn on_threads(n: usize, work: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(n.max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    work(i);
                }
            });
        }
    });
}

/// Adds the values of tensor `t` of `file` to `acc` (`t` read first if
/// its source is not in memory, and dropped after), or says why there are
/// none.
fn summarize(file: &File, t: TensorRef<'_>, acc: &mut Accumulator) -> Result<(), String> {
    if t.is_descriptor_only() {
        return Err("no data".into());
    }
    file.with_data(t, |t| t.for_each_value_chunk(|c| acc.add(c)))
        .map_err(|e| e.to_string())
}

/// Fills every row's stats with `summary(i)` (or why there is none),
/// computed on every core, with a progress bar over the rows' bytes.
fn summarize_rows(rows: &mut [Row], summary: impl Fn(usize) -> Result<Accumulator, String> + Sync) {
    let bar = progress_bar(rows.iter().map(|r| r.bytes).sum());
    bar.set_message("stats");
    let slots: Vec<Mutex<Option<Result<Accumulator, String>>>> =
        rows.iter().map(|_| Mutex::new(None)).collect();
    let bytes: Vec<u64> = rows.iter().map(|r| r.bytes).collect();
    on_threads(rows.len(), |i| {
        let result = summary(i);
        bar.inc(bytes[i]);
        if let Ok(mut slot) = slots[i].lock() {
            *slot = Some(result);
        }
    });
    bar.finish_and_clear();
    for (row, slot) in rows.iter_mut().zip(slots) {
        match slot.into_inner().ok().flatten() {
            Some(Ok(acc)) => row.stats = Some(acc.finish()),
            Some(Err(why)) => row.stats_note = Some(why),
            None => row.stats_note = Some("not summarized".into()),
        }
    }
}

/// The report of a file of tensors.
pub(crate) fn of_file(source: &str, file: &File, stats: bool) -> Result<Report> {
    let mut rows: Vec<Row> = file.tensors().map(|t| row_of(&t)).collect();
    if stats {
        let tensors: Vec<TensorRef<'_>> = file.tensors().collect();
        summarize_rows(&mut rows, |i| {
            let mut acc = Accumulator::new(tensors[i].value_count());
            summarize(file, tensors[i], &mut acc).map(|()| acc)
        });
    }
    let (major, minor) = file.version();
    Ok(Report {
        source: source.to_owned(),
        kind: "file",
        version: format!("{major}.{minor}"),
        file_bytes: file.file_len(),
        metadata: file
            .metadata()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        members: Vec::new(),
        totals: totals(&rows),
        tensors: rows,
        stats,
    })
}

/// The report of a sharded checkpoint: its logical tensors, each with the
/// members holding its pieces (every member's header is read).
pub(crate) fn of_index(
    source: &str,
    index: &File,
    checkpoint: &ShardedFile,
    stats: bool,
) -> Result<Report> {
    let mut members: Vec<Group> = checkpoint
        .members()
        .iter()
        .map(|m| Group {
            name: m.path.clone(),
            bytes: m.size,
            ..Group::default()
        })
        .collect();
    let mut rows = Vec::with_capacity(checkpoint.tensors().len());
    for t in checkpoint.tensors() {
        // Headers only: of a checkpoint in a bucket, no tensor is fetched.
        let first = &t.pieces[0];
        let piece = checkpoint.piece_header(t, first)?;
        let mut row = row_of(&piece);
        row.name = t.name.clone();
        row.shape = t.shape.iter().map(|&d| json!(d)).collect();
        row.params = Some(
            t.shape
                .iter()
                .try_fold(1u64, |n, &d| n.checked_mul(d))
                .unwrap_or(u64::MAX),
        );
        row.bytes = 0;
        for p in &t.pieces {
            let piece = checkpoint.piece_header(t, p)?;
            row.bytes = row.bytes.saturating_add(piece.byte_length());
            let m = &mut members[p.member];
            m.params = m.params.saturating_add(piece.element_count().unwrap_or(0));
            m.tensors += 1;
            if !row.members.contains(&m.name) {
                row.members.push(m.name.clone());
            }
        }
        rows.push(row);
    }
    if stats {
        let tensors = checkpoint.tensors();
        summarize_rows(&mut rows, |i| {
            let t = &tensors[i];
            // One summary over the pieces in turn, sampled over the whole.
            let pieces = t
                .pieces
                .iter()
                .map(|p| Ok((checkpoint.member(p.member)?, checkpoint.piece_header(t, p)?)))
                .collect::<hurray::Result<Vec<(&File, TensorRef<'_>)>>>()
                .map_err(|e| e.to_string())?;
            let total = pieces.iter().map(|(_, p)| p.value_count()).sum();
            let mut acc = Accumulator::new(total);
            for (file, piece) in pieces {
                summarize(file, piece, &mut acc)?;
            }
            Ok(acc)
        });
    }
    let (major, minor) = index.version();
    Ok(Report {
        source: source.to_owned(),
        kind: "sharded checkpoint",
        version: format!("{major}.{minor}"),
        file_bytes: index.file_len() + members.iter().map(|m| m.bytes).sum::<u64>(),
        metadata: checkpoint
            .metadata()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        members,
        totals: totals(&rows),
        tensors: rows,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::layer_of;

    #[test]
    fn layers_end_at_the_first_index() {
        assert_eq!(
            layer_of("model.layers.3.mlp.up_proj.weight"),
            "model.layers.3"
        );
        assert_eq!(layer_of("model.embed_tokens.weight"), "model.embed_tokens");
        assert_eq!(layer_of("lm_head"), "lm_head");
        assert_eq!(layer_of("h.10.attn"), "h.10");
        assert_eq!(layer_of("a..b"), "a.");
    }
}
