//! `hurray view FILE -o report.html`: a self-contained HTML report of a
//! file or sharded checkpoint (local or a URL): a zoomable treemap of bytes
//! by name prefix, a sortable and filterable table of every tensor, totals by
//! element type, layer and member, and with `--stats` a summary of each
//! tensor's values. `model` computes it, `page` writes it out, `stats` sums
//! values up.

mod model;
mod page;
mod stats;

use crate::convert::sharded::open_index;
use crate::input;
use anyhow::{Result, bail};
use std::io::Write;
use std::path::Path;

/// Writes the report of `input` to `output` (replaced atomically).
pub fn view(input: &Path, output: &Path, stats: bool) -> Result<()> {
    if input::is_url(output) {
        // The report is written locally; a URL is refused, not taken for a
        // file name.
        bail!(
            "{}: the report is written to a local path",
            output.display()
        );
    }
    let source = input.display().to_string();
    let file = input::open(input)?;
    let report = if file.is_shard_index() {
        let checkpoint = open_index(&file, input)?;
        model::of_index(&source, &file, &checkpoint, stats)?
    } else {
        model::of_file(&source, &file, stats)?
    };
    let page = page::render(&report)?;
    let mut out = hurray::AtomicFile::create(output)?;
    out.write_all(page.as_bytes())
        .map_err(|e| hurray::Error::io("writing", output, e))?;
    out.commit()?;
    println!(
        "{}: report of {} ({} tensor(s), {} bytes)",
        output.display(),
        source,
        report.tensors.len(),
        report.totals.all.bytes
    );
    Ok(())
}
