//! Running every generation step and comparing the result with the tree.

use crate::flatc::Flatc;
use crate::schema::{self, ElementTypeFacts};
use anyhow::{Context, Result};
use std::fmt;
use std::path::{Path, PathBuf};

/// Output paths, relative to the workspace root.
pub const RUST_READER: &str = "runtime/src/gen/hurray_generated.rs";
pub const RUST_ELEMENT_TABLE: &str = "runtime/src/gen/element_type.rs";
pub const PYTHON_READER: &str = "python/hurray_reader/hurray_generated.py";
pub const PYTHON_ELEMENT_TABLE: &str = "python/hurray_reader/element_types.py";
pub const MLIR_DIALECT: &str = "mlir/src/gen/hurray.irdl.mlir";
pub const DERIVE_ELEMENT_TABLE: &str = "macros/src/gen/dtype_table.rs";

/// One file the generator owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the workspace root.
    pub path: PathBuf,
    pub contents: Vec<u8>,
}

/// A generated file whose checked-in copy differs from what the schema gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staleness {
    pub path: PathBuf,
    /// Human-readable summary: missing, or the first differing line.
    pub summary: String,
}

impl fmt::Display for Staleness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.summary)
    }
}

/// Generates every output from one schema.
#[derive(Debug, Clone)]
pub struct Generator {
    workspace: PathBuf,
    schema: PathBuf,
    flatc: Flatc,
}

impl Generator {
    /// A generator for `workspace/schema/hurray.fbs`.
    pub fn new(workspace: &Path, flatc: Flatc) -> Self {
        Self {
            workspace: workspace.to_owned(),
            schema: workspace.join("schema/hurray.fbs"),
            flatc,
        }
    }

    /// Reads the schema from `schema` instead (used by tests on edited copies).
    pub fn with_schema(mut self, schema: PathBuf) -> Self {
        self.schema = schema;
        self
    }

    /// The schema this generator reads.
    pub fn schema(&self) -> &Path {
        &self.schema
    }

    /// The element-type facts of the schema.
    pub fn element_types(&self) -> Result<Vec<ElementTypeFacts>> {
        let tmp = tempfile::TempDir::new()?;
        self.element_types_in(tmp.path())
    }

    fn element_types_in(&self, tmp: &Path) -> Result<Vec<ElementTypeFacts>> {
        self.flatc.run(
            tmp,
            &[
                "--schema".as_ref(),
                "-b".as_ref(),
                "--bfbs-comments".as_ref(),
                "-o".as_ref(),
                tmp.as_os_str(),
                self.schema.as_os_str(),
            ],
        )?;
        let bfbs =
            std::fs::read(tmp.join("hurray.bfbs")).context("reading flatc's binary schema")?;
        schema::element_types(&bfbs)
    }

    /// Every generated file, in memory.
    pub fn generate(&self) -> Result<Vec<GeneratedFile>> {
        let tmp = tempfile::TempDir::new()?;
        let t = tmp.path();
        let facts = self.element_types_in(t)?;
        let flatc = |lang: &str, out: &str| -> Result<Vec<u8>> {
            let dir = t.join(lang.trim_start_matches('-'));
            let mut args: Vec<&std::ffi::OsStr> = vec![lang.as_ref()];
            if lang == "--python" {
                args.push("--gen-onefile".as_ref());
            }
            args.extend(["-o".as_ref(), dir.as_os_str(), self.schema.as_os_str()]);
            self.flatc.run(t, &args)?;
            std::fs::read(dir.join(out)).with_context(|| format!("reading flatc's {out}"))
        };
        Ok(vec![
            GeneratedFile {
                path: RUST_READER.into(),
                contents: flatc("--rust", "hurray_generated.rs")?,
            },
            GeneratedFile {
                path: RUST_ELEMENT_TABLE.into(),
                contents: crate::element_table::render(&facts)?.into_bytes(),
            },
            GeneratedFile {
                path: PYTHON_READER.into(),
                contents: flatc("--python", "hurray_generated.py")?,
            },
            GeneratedFile {
                path: PYTHON_ELEMENT_TABLE.into(),
                contents: crate::element_table::render_python(&facts).into_bytes(),
            },
            GeneratedFile {
                path: DERIVE_ELEMENT_TABLE.into(),
                contents: crate::element_table::render_derive(&facts).into_bytes(),
            },
            GeneratedFile {
                path: MLIR_DIALECT.into(),
                contents: crate::irdl::render(&facts, &std::fs::read(t.join("hurray.bfbs"))?)?
                    .into_bytes(),
            },
        ])
    }

    /// Writes every generated file whose contents changed; returns their paths.
    pub fn write(&self) -> Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        for file in self.generate()? {
            let dest = self.workspace.join(&file.path);
            if std::fs::read(&dest).ok().as_deref() != Some(&file.contents[..]) {
                if let Some(dir) = dest.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::write(&dest, &file.contents)
                    .with_context(|| format!("writing {}", dest.display()))?;
                written.push(file.path);
            }
        }
        Ok(written)
    }

    /// The generated files whose checked-in copies are stale; empty when all
    /// are current.
    pub fn check(&self) -> Result<Vec<Staleness>> {
        let mut stale = Vec::new();
        for file in self.generate()? {
            let dest = self.workspace.join(&file.path);
            let summary = match std::fs::read(&dest) {
                Err(_) => Some("missing".to_owned()),
                Ok(old) if old == file.contents => None,
                Ok(old) => Some(first_difference(&old, &file.contents)),
            };
            if let Some(summary) = summary {
                stale.push(Staleness {
                    path: file.path,
                    summary,
                });
            }
        }
        Ok(stale)
    }
}

fn first_difference(old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let (old_lines, new_lines): (Vec<_>, Vec<_>) = (old.lines().collect(), new.lines().collect());
    let changed = old_lines
        .iter()
        .zip(&new_lines)
        .filter(|(a, b)| a != b)
        .count()
        + old_lines.len().abs_diff(new_lines.len());
    let first = (0..old_lines.len().max(new_lines.len()))
        .find(|&i| old_lines.get(i) != new_lines.get(i))
        .unwrap_or(0);
    format!(
        "stale: {changed} line(s) differ, first at line {}: checked in {:?}, schema gives {:?}",
        first + 1,
        old_lines.get(first).copied().unwrap_or("<end of file>"),
        new_lines.get(first).copied().unwrap_or("<end of file>"),
    )
}
