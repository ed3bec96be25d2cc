//! Running every generation step, in memory; [`crate::output`] compares the
//! result with the tree or writes it.

use crate::flatc::Flatc;
use crate::output::{Output, Staleness};
use crate::schema::{self, ElementTypeFacts};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Output paths, relative to the workspace root.
pub const RUST_READER: &str = "runtime/src/gen/hurray_generated.rs";
pub const RUST_ELEMENT_TABLE: &str = "runtime/src/gen/element_type.rs";
pub const RUST_VERIFIER: &str = "runtime/src/gen/verifier.rs";
pub const PYTHON_READER: &str = "python/hurray_reader/hurray_generated.py";
pub const PYTHON_ELEMENT_TABLE: &str = "python/hurray_reader/element_types.py";
pub const MLIR_DIALECT: &str = "mlir/src/gen/hurray.irdl.mlir";
pub const DERIVE_ELEMENT_TABLE: &str = "macros/src/gen/dtype_table.rs";
/// The TypeScript reader's generated directory: `flatc --ts` writes
/// `hurray/fb.ts` and `hurray/fb/*.ts` under it.
pub const TYPESCRIPT_GEN: &str = "js/src/gen";

/// One file the generator owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the workspace root.
    pub path: PathBuf,
    pub contents: Vec<u8>,
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
        let bfbs = std::fs::read(t.join("hurray.bfbs"))?;
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
        let mut files = vec![
            GeneratedFile {
                path: RUST_READER.into(),
                contents: flatc("--rust", "hurray_generated.rs")?,
            },
            GeneratedFile {
                path: RUST_ELEMENT_TABLE.into(),
                contents: crate::element_table::render(&facts)?.into_bytes(),
            },
            GeneratedFile {
                path: RUST_VERIFIER.into(),
                contents: crate::verifier::render(&bfbs)?.into_bytes(),
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
                contents: crate::irdl::render(&facts, &bfbs)?.into_bytes(),
            },
            GeneratedFile {
                path: Path::new(TYPESCRIPT_GEN).join("element_types.ts"),
                contents: crate::typescript::render_element_types(&facts).into_bytes(),
            },
            GeneratedFile {
                path: Path::new(TYPESCRIPT_GEN).join("structure.ts"),
                contents: crate::typescript::render_structure(&bfbs)?.into_bytes(),
            },
        ];
        let ts = t.join("ts");
        self.flatc.run(
            t,
            &[
                "--ts".as_ref(),
                "-o".as_ref(),
                ts.as_os_str(),
                self.schema.as_os_str(),
            ],
        )?;
        for entry in walk(&ts)? {
            let relative = entry.strip_prefix(&ts)?;
            files.push(GeneratedFile {
                path: Path::new(TYPESCRIPT_GEN).join(relative),
                contents: std::fs::read(&entry)
                    .with_context(|| format!("reading flatc's {}", entry.display()))?,
            });
        }
        Ok(files)
    }

    /// Every generated file as the [`Output`] of `cargo xtask codegen`.
    pub fn output(&self) -> Result<Output> {
        Ok(self.generate()?.into_iter().fold(
            Output::new("codegen").owning_dir(Path::new(TYPESCRIPT_GEN).join("hurray/fb")),
            |out, f| out.with(f.path, f.contents),
        ))
    }

    /// The generated files whose checked-in copies are stale; empty when all
    /// are current.
    pub fn check(&self) -> Result<Vec<Staleness>> {
        self.output()?.check(&self.workspace)
    }
}

/// Every file under `dir`, recursively, sorted.
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(walk(&path)?);
        } else {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}
