//! Check-or-write for generated files: the one implementation behind
//! `cargo xtask codegen`, `cargo xtask vectors` and `cargo xtask cbindgen`.
//!
//! A generator produces an [`Output`]: every file it owns as bytes in
//! memory, plus the directories it owns whole. [`check_or_write`] then either
//! compares that with the tree (and fails listing every file that is missing,
//! differs — with its first differing line — or sits in an owned directory
//! without being generated) or brings the tree up to date, touching only the
//! files that change. Generating in memory first means a check never writes
//! and a failed generation never leaves the tree half updated.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Everything one generator owns: files, and directories in which every file
/// must be one of them.
#[derive(Debug, Clone)]
pub struct Output {
    task: String,
    files: BTreeMap<PathBuf, Vec<u8>>,
    owned_dirs: Vec<PathBuf>,
}

/// How a file on disk disagrees with the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drift {
    /// Generated, but absent from the tree.
    Missing,
    /// Present with other contents.
    Differs,
    /// In a directory the generator owns, but not generated.
    Extra,
}

/// A file on disk that disagrees with what the generator gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staleness {
    pub path: PathBuf,
    pub drift: Drift,
    /// Human-readable summary: missing, extra, or the first differing line.
    pub summary: String,
}

impl fmt::Display for Staleness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.summary)
    }
}

/// Whether [`check_or_write`] compares or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Check,
    Write,
}

impl Mode {
    /// `Check` for `--check`, `Write` otherwise.
    pub fn from_check_flag(check: bool) -> Self {
        if check { Mode::Check } else { Mode::Write }
    }
}

/// What [`Output::write`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Files created or rewritten because their contents changed.
    pub written: Vec<PathBuf>,
    /// Extra files removed from owned directories.
    pub removed: Vec<PathBuf>,
}

/// The outcome of a successful [`check_or_write`], printed by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    task: String,
    mode: Mode,
    files: usize,
    changes: Written,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Report {
            task, files, mode, ..
        } = self;
        for p in &self.changes.written {
            writeln!(f, "{task}: wrote {}", p.display())?;
        }
        for p in &self.changes.removed {
            writeln!(f, "{task}: removed {} (no longer generated)", p.display())?;
        }
        match mode {
            Mode::Check => write!(f, "{task}: {files} generated file(s) are current"),
            Mode::Write => write!(
                f,
                "{task}: {files} generated file(s) now current ({} written, {} removed)",
                self.changes.written.len(),
                self.changes.removed.len()
            ),
        }
    }
}

/// A `--check` that found stale files: lists each, then says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleFiles {
    pub task: String,
    pub stale: Vec<Staleness>,
}

impl fmt::Display for StaleFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} file(s) owned by `cargo xtask {}` are stale; run `cargo xtask {}`:",
            self.stale.len(),
            self.task,
            self.task
        )?;
        for s in &self.stale {
            writeln!(f, "  {s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for StaleFiles {}

impl Output {
    /// An empty output of the xtask subcommand `task` (named in messages).
    pub fn new(task: &str) -> Self {
        Output {
            task: task.to_owned(),
            files: BTreeMap::new(),
            owned_dirs: Vec::new(),
        }
    }

    /// Adds (or replaces) the file at `path`, relative to the workspace root.
    pub fn add(&mut self, path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), contents.into());
    }

    /// Adds a file, builder style.
    pub fn with(mut self, path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) -> Self {
        self.add(path, contents);
        self
    }

    /// Declares that every entry of `dir` (relative to the root, not
    /// recursive) must be a generated file: others are reported as extra by
    /// a check and removed by a write.
    pub fn owning_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.owned_dirs.push(dir.into());
        self
    }

    /// The xtask subcommand that produces this output.
    pub fn task(&self) -> &str {
        &self.task
    }

    /// How many files are generated.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is generated.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The contents generated for `path`, if it is generated.
    pub fn get(&self, path: impl AsRef<Path>) -> Option<&[u8]> {
        self.files.get(path.as_ref()).map(Vec::as_slice)
    }

    /// Every generated file, ordered by path.
    pub fn files(&self) -> impl Iterator<Item = (&Path, &[u8])> {
        self.files.iter().map(|(p, c)| (p.as_path(), c.as_slice()))
    }

    /// Every file of the tree under `root` that disagrees with this output;
    /// empty when the tree is current.
    pub fn check(&self, root: &Path) -> Result<Vec<Staleness>> {
        let mut stale = Vec::new();
        for (path, contents) in &self.files {
            let (drift, summary) = match std::fs::read(root.join(path)) {
                Err(_) => (Drift::Missing, "missing".to_owned()),
                Ok(old) if &old == contents => continue,
                Ok(old) => (Drift::Differs, first_difference(&old, contents)),
            };
            stale.push(Staleness {
                path: path.clone(),
                drift,
                summary,
            });
        }
        for path in self.extra_files(root)? {
            stale.push(Staleness {
                path,
                drift: Drift::Extra,
                summary: "not generated (an extra file in a directory the generator owns)"
                    .to_owned(),
            });
        }
        Ok(stale)
    }

    /// Writes every file whose contents changed and removes extra files from
    /// owned directories.
    pub fn write(&self, root: &Path) -> Result<Written> {
        let mut changes = Written::default();
        for path in self.extra_files(root)? {
            let full = root.join(&path);
            std::fs::remove_file(&full).with_context(|| {
                format!("removing {}, which is no longer generated", full.display())
            })?;
            changes.removed.push(path);
        }
        for (path, contents) in &self.files {
            let dest = root.join(path);
            if std::fs::read(&dest).ok().as_deref() == Some(contents.as_slice()) {
                continue;
            }
            if let Some(dir) = dest.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&dest, contents)
                .with_context(|| format!("writing {}", dest.display()))?;
            changes.written.push(path.clone());
        }
        Ok(changes)
    }

    /// Entries of the owned directories that are not generated, relative to `root`.
    fn extra_files(&self, root: &Path) -> Result<Vec<PathBuf>> {
        let mut extra = Vec::new();
        for dir in &self.owned_dirs {
            let full = root.join(dir);
            if !full.is_dir() {
                continue;
            }
            let entries =
                std::fs::read_dir(&full).with_context(|| format!("listing {}", full.display()))?;
            for entry in entries {
                let path = dir.join(entry?.file_name());
                if !self.files.contains_key(&path) {
                    extra.push(path);
                }
            }
        }
        extra.sort();
        Ok(extra)
    }
}

/// `--check` (`Mode::Check`): fails with [`StaleFiles`] unless the tree under
/// `root` matches `output` exactly. Otherwise brings the tree up to date.
/// Either way the returned report says what was found or done.
pub fn check_or_write(root: &Path, output: &Output, mode: Mode) -> Result<Report> {
    let changes = match mode {
        Mode::Check => {
            let stale = output.check(root)?;
            if !stale.is_empty() {
                return Err(StaleFiles {
                    task: output.task.clone(),
                    stale,
                }
                .into());
            }
            Written::default()
        }
        Mode::Write => output.write(root)?,
    };
    Ok(Report {
        task: output.task.clone(),
        mode,
        files: output.len(),
        changes,
    })
}

/// Where `old` (on disk) and `new` (generated) first differ: a line for
/// text, a byte offset for anything that is not UTF-8.
fn first_difference(old: &[u8], new: &[u8]) -> String {
    let (Ok(old_text), Ok(new_text)) = (std::str::from_utf8(old), std::str::from_utf8(new)) else {
        let first = old
            .iter()
            .zip(new)
            .position(|(a, b)| a != b)
            .unwrap_or(old.len().min(new.len()));
        return format!(
            "stale: binary contents differ from byte {first} ({} bytes on disk, {} generated)",
            old.len(),
            new.len()
        );
    };
    let old_lines: Vec<&str> = old_text.lines().collect();
    let new_lines: Vec<&str> = new_text.lines().collect();
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    if prefix == old_lines.len() && prefix == new_lines.len() {
        // Same lines, other bytes: line endings or a final newline.
        return "stale: same lines, different line endings or final newline".to_owned();
    }
    // The differing region between the common first and last lines: an
    // inserted line counts once, not as a shift of everything after it.
    let suffix = old_lines[prefix..]
        .iter()
        .rev()
        .zip(new_lines[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    format!(
        "stale: from line {} on, {} line(s) on disk differ from {} generated; first: on disk {:?}, generated {:?}",
        prefix + 1,
        old_lines.len() - prefix - suffix,
        new_lines.len() - prefix - suffix,
        old_lines.get(prefix).copied().unwrap_or("<end of file>"),
        new_lines.get(prefix).copied().unwrap_or("<end of file>"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        dir
    }

    fn output() -> Output {
        Output::new("demo")
            .with("a.txt", "one\ntwo\n")
            .with("d/b.bin", vec![0u8, 1, 2])
            .owning_dir("d")
    }

    #[test]
    fn a_current_tree_checks_clean() {
        let t = tree(&[("a.txt", b"one\ntwo\n"), ("d/b.bin", &[0, 1, 2])]);
        let report = check_or_write(t.path(), &output(), Mode::Check).unwrap();
        assert_eq!(report.to_string(), "demo: 2 generated file(s) are current");
    }

    #[test]
    fn missing_differing_and_extra_files_are_each_reported() {
        let t = tree(&[("a.txt", b"one\nTWO\n"), ("d/old.bin", b"x")]);
        let stale = output().check(t.path()).unwrap();
        let got: Vec<(String, Drift)> = stale
            .iter()
            .map(|s| (s.path.to_string_lossy().into_owned(), s.drift))
            .collect();
        assert_eq!(
            got,
            [
                ("a.txt".to_owned(), Drift::Differs),
                ("d/b.bin".to_owned(), Drift::Missing),
                ("d/old.bin".to_owned(), Drift::Extra),
            ]
        );
        assert!(
            stale[0]
                .summary
                .contains("from line 2 on, 1 line(s) on disk differ from 1")
                && stale[0].summary.contains("\"TWO\"")
                && stale[0].summary.contains("\"two\""),
            "{}",
            stale[0]
        );
        let err = check_or_write(t.path(), &output(), Mode::Check).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("3 file(s) owned by `cargo xtask demo` are stale"),
            "{text}"
        );
        assert!(text.contains("run `cargo xtask demo`"), "{text}");
        assert!(err.downcast_ref::<StaleFiles>().is_some());
    }

    #[test]
    fn an_inserted_line_is_one_difference() {
        assert_eq!(
            first_difference(b"a\nb\nc\n", b"a\nx\nb\nc\n"),
            "stale: from line 2 on, 0 line(s) on disk differ from 1 generated; first: on disk \"b\", generated \"x\""
        );
        assert_eq!(
            first_difference(b"a\nb", b"a\nb\n"),
            "stale: same lines, different line endings or final newline"
        );
    }

    #[test]
    fn binary_differences_name_the_first_byte() {
        assert_eq!(
            first_difference(&[0xff, 1, 2], &[0xff, 1, 3, 4]),
            "stale: binary contents differ from byte 2 (3 bytes on disk, 4 generated)"
        );
    }

    #[test]
    fn write_touches_only_what_changes_and_removes_extras() {
        let t = tree(&[("a.txt", b"one\ntwo\n"), ("d/old.bin", b"x")]);
        let report = check_or_write(t.path(), &output(), Mode::Write).unwrap();
        assert_eq!(
            report.changes,
            Written {
                written: vec!["d/b.bin".into()],
                removed: vec!["d/old.bin".into()],
            }
        );
        assert!(output().check(t.path()).unwrap().is_empty());
        let again = check_or_write(t.path(), &output(), Mode::Write).unwrap();
        assert_eq!(again.changes, Written::default());
    }
}
