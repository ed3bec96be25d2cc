//! Schema evolution: the current schema must be a compatible evolution of
//! every released schema under `schema/released/`.

use crate::flatc::Flatc;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// The released schemas, oldest first (sorted by file name).
pub fn released_schemas(schema_dir: &Path) -> Result<Vec<PathBuf>> {
    let dir = schema_dir.join("released");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "fbs") {
            out.push(path);
        }
    }
    out.sort();
    if out.is_empty() {
        bail!("no released schema in {}", dir.display());
    }
    Ok(out)
}

/// Runs `flatc --conform RELEASED CURRENT` for every released schema; the
/// error lists each incompatibility flatc reports.
pub fn check_conforms(flatc: &Flatc, current: &Path, released: &[PathBuf]) -> Result<()> {
    let mut problems = Vec::new();
    let tmp = std::env::temp_dir();
    for old in released {
        let result = flatc.run(
            &tmp,
            &["--conform".as_ref(), old.as_os_str(), current.as_os_str()],
        );
        if let Err(e) = result {
            problems.push(format!(
                "{} is not a compatible evolution of {}: {e:#}",
                current.display(),
                old.display()
            ));
        }
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(())
}
