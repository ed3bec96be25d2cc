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

/// `location` as a shared page may show it: a URL without its user
/// information, query and fragment (where presigned URLs and tokens are).
fn shown_location(location: &str) -> String {
    let Some((scheme, rest)) = location.split_once("://") else {
        return location.to_owned();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}://{host}{path}")
}

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
    let source = shown_location(&input.display().to_string());
    let file = input::open(input)?;
    let report = if file.is_shard_index() {
        let checkpoint = open_index(&file, input)?;
        model::of_index(&source, &file, &checkpoint, stats)?
    } else {
        model::of_file(&source, &file, stats)?
    };
    let page = page::render(&report)?;
    let mut out = hurray::atomic::AtomicFile::create(output)?;
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

#[cfg(test)]
mod tests {
    use super::shown_location;

    #[test]
    fn credentials_in_a_url_are_not_shown() {
        assert_eq!(
            shown_location("https://user:token@host.example/a/m.hurray?X-Amz-Signature=abc#x"),
            "https://host.example/a/m.hurray"
        );
        assert_eq!(
            shown_location("s3://bucket/run/m.hurray"),
            "s3://bucket/run/m.hurray"
        );
        assert_eq!(shown_location("/data/m@2.hurray"), "/data/m@2.hurray");
    }
}
