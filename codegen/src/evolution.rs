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

/// The file beside the released schemas that pins each one's SHA-256.
pub const FROZEN_SUMS: &str = "SHA256SUMS";

/// Checks that every released schema is byte for byte the one released:
/// each is listed in `released/SHA256SUMS` (`<hex>  <file name>` lines, as
/// `sha256sum` writes them) with its digest, and every listed file exists.
/// Releasing a version adds its line; no other edit passes.
pub fn check_frozen(released: &[PathBuf]) -> Result<()> {
    use sha2::Digest;
    let Some(dir) = released.first().and_then(|p| p.parent()) else {
        bail!("no released schema");
    };
    let sums_path = dir.join(FROZEN_SUMS);
    let text = std::fs::read_to_string(&sums_path)
        .with_context(|| format!("reading {}", sums_path.display()))?;
    let mut pinned = std::collections::BTreeMap::new();
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        // `sha256sum` writes `<hex>  <file>`, or `<hex> *<file>` in binary mode.
        let Some((hex, name)) = line.split_once("  ").or_else(|| line.split_once(" *")) else {
            bail!(
                "{}: {line:?} is not `<sha256>  <file>`",
                sums_path.display()
            );
        };
        if pinned.insert(name.to_owned(), hex.to_owned()).is_some() {
            bail!("{}: {name} is pinned twice", sums_path.display());
        }
    }
    let mut problems = Vec::new();
    for path in released {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let digest: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        match pinned.remove(&name) {
            None => problems.push(format!("{name} is not pinned in {FROZEN_SUMS}")),
            Some(hex) if hex != digest => problems.push(format!(
                "{name} was edited after its release (SHA-256 {digest}, released {hex}); released schemas are frozen"
            )),
            Some(_) => {}
        }
    }
    for name in pinned.keys() {
        problems.push(format!(
            "{FROZEN_SUMS} pins {name}, which is not in {}",
            dir.display()
        ));
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(())
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
