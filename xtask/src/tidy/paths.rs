//! Paths in this repository that a doc or a comment names but that do not
//! exist.
//!
//! When a file moves, the ADRs, READMEs and comments that pointed at it keep
//! its old name and send the next reader nowhere. This scans the tracked text
//! files for tokens that look like repository paths — they start with a
//! top-level directory, contain a `/` and end in a file extension or a `/` —
//! and reports each one that exists neither from the repository root nor from
//! the naming file's directory or crate (a crate's code and docs may name
//! `tests/<file>` meaning its own). URLs, placeholders (`<case>`,
//! `{name}`, `*.fbs`, `1.N`), build outputs (`target/`, `.tools/`) and other
//! projects' headers (`mlir/IR/Builders.h`) are not paths of the repository.
//! Generated code and test data are not scanned, and neither are lock files,
//! snapshots or other files of types not listed in [`SCANNED`].

use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::Path;
use std::process::Command;

/// The extensions of the files scanned.
const SCANNED: &[&str] = &["md", "rs", "py", "toml", "h", "c", "ts", "sh", "yml"];

/// Parts of the paths of files not scanned: generated code and test data
/// hold what their generator saw, and are checked by regenerating them.
const NOT_SCANNED: &[&str] = &["/gen/", "/tests/vectors/", "/tests/golden/"];

/// Characters that end a token (besides whitespace): quotes, brackets and
/// punctuation around a path, `:` before a line number, `#` before an anchor.
const SEPARATORS: &[char] = &[
    '`', '"', '\'', '(', ')', '[', ']', ',', ';', ':', '|', '=', '#', '\\',
];

/// What marks a token as a placeholder rather than a path.
const PLACEHOLDERS: &[&str] = &[
    "*", "{", "}", "<", ">", "$", "...", "VERSION", "X.Y", "NAME",
];

/// A path named at a line of a file that does not exist.
#[derive(Debug)]
pub(super) struct Stale {
    file: String,
    line: usize,
    path: String,
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {} does not exist",
            self.file, self.line, self.path
        )
    }
}

/// Every stale path in the files git tracks under `root`.
pub(super) fn find(root: &Path) -> Result<Vec<Stale>> {
    let out = Command::new("git")
        .current_dir(root)
        .args(["ls-files", "-z"])
        .output()
        .context("running git ls-files")?;
    if !out.status.success() {
        bail!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let listing = String::from_utf8(out.stdout).context("git ls-files printed non-UTF-8")?;
    let files: Vec<&str> = listing.split('\0').filter(|f| !f.is_empty()).collect();
    let top: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| Some(f.split_once('/')?.0))
        .collect();
    let mut stale = Vec::new();
    for file in files.into_iter().filter(|f| scanned(f)) {
        // A file moved away in the work tree but not yet in the index.
        let Ok(bytes) = fs::read(root.join(file)) else {
            continue;
        };
        stale.extend(stale_in(root, file, &String::from_utf8_lossy(&bytes), &top));
    }
    Ok(stale)
}

/// Whether the tracked file `file` is scanned.
fn scanned(file: &str) -> bool {
    let rooted = format!("/{file}");
    Path::new(file)
        .extension()
        .is_some_and(|e| SCANNED.iter().any(|s| e == *s))
        && !NOT_SCANNED.iter().any(|n| rooted.contains(n))
}

/// The stale paths in `text`, the contents of `file` (relative to `root`),
/// given the repository's top-level directories `top`.
fn stale_in(root: &Path, file: &str, text: &str, top: &BTreeSet<&str>) -> Vec<Stale> {
    let dir = root.join(file);
    let dir = dir.parent().unwrap_or(root);
    let krate = dir
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .find(|d| d.join("Cargo.toml").is_file())
        .unwrap_or(root);
    let mut stale = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for path in candidates(line, top) {
            if ![root, dir, krate]
                .iter()
                .any(|base| base.join(path).exists())
            {
                stale.push(Stale {
                    file: file.to_owned(),
                    line: n + 1,
                    path: path.to_owned(),
                });
            }
        }
    }
    stale
}

/// The tokens of `line` that look like paths in a repository whose
/// top-level directories are `top`.
fn candidates<'l>(line: &'l str, top: &BTreeSet<&str>) -> Vec<&'l str> {
    line.split_whitespace()
        .map(before_url)
        .flat_map(|word| word.split(SEPARATORS))
        .map(|token| token.trim_end_matches(['.', ',', '!', '?']))
        .filter(|token| {
            looks_like_path(token, top) && !is_placeholder(token) && !is_foreign_header(token)
        })
        .collect()
}

/// `word` up to the URL in it, if any (`see:https://…` gives `see:`).
fn before_url(word: &str) -> &str {
    match word.find("://") {
        Some(at) => {
            word[..at].trim_end_matches(|c: char| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => word,
    }
}

/// Whether `token` starts with a directory of `top`, has a `/` and ends in
/// a file extension or a `/` (build outputs left out).
fn looks_like_path(token: &str, top: &BTreeSet<&str>) -> bool {
    let Some((first, _)) = token.split_once('/') else {
        return false;
    };
    let name = token.rsplit('/').next().unwrap_or_default();
    let extension = name
        .rsplit_once('.')
        .is_some_and(|(_, ext)| !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric()));
    top.contains(first)
        && (extension || token.ends_with('/'))
        && !token
            .split('/')
            .any(|part| part == "target" || part == ".tools")
}

/// Whether `token` is a pattern or a template (`<case>.rs`, `{name}`,
/// `*.fbs`, `hurray-1.N.fbs`), not a path.
fn is_placeholder(token: &str) -> bool {
    PLACEHOLDERS.iter().any(|p| token.contains(p))
        || token
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|part| part == "N")
}

/// Whether `token` is a header of another project's include tree whose top
/// directory shares a name with one of this repository's: `mlir/IR/Builders.h`
/// is MLIR's (this repository names its directories in lowercase).
fn is_foreign_header(token: &str) -> bool {
    let mut dirs = token.rsplit('/').skip(1);
    token.ends_with(".h") && dirs.any(|d| d.starts_with(|c: char| c.is_ascii_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::temp_tree;

    /// What `line`, written in `file` of a repository with `present` files
    /// and the one top-level directory `alpha`, names that is stale.
    fn stale(file: &str, line: &str, present: &[&str]) -> Vec<String> {
        let files: Vec<(&str, &str)> = present.iter().map(|p| (*p, "")).collect();
        let root = temp_tree("paths", &files);
        let top = BTreeSet::from(["alpha"]);
        let found = stale_in(&root, file, line, &top);
        fs::remove_dir_all(&root).unwrap();
        found.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_missing_path_is_reported() {
        assert_eq!(
            stale(
                "README.md",
                "see `alpha/src/gone.rs`, and alpha/docs/.",
                &[]
            ),
            [
                "README.md:1: alpha/src/gone.rs does not exist",
                "README.md:1: alpha/docs/ does not exist"
            ]
        );
        assert_eq!(
            stale(
                "a.rs",
                "x\n// (alpha/gone.md#anchor): and alpha/gone.rs:12",
                &[]
            ),
            [
                "a.rs:2: alpha/gone.md does not exist",
                "a.rs:2: alpha/gone.rs does not exist"
            ]
        );
    }

    #[test]
    fn an_existing_path_is_not_reported() {
        let present = [
            "alpha/src/here.rs",
            "beta/Cargo.toml",
            "beta/alpha/data.bin",
        ];
        // From the root, a directory, and from the naming file's crate.
        let line = "[alpha/src/here.rs](alpha/src/here.rs) alpha/src/ alpha/data.bin";
        assert!(stale("beta/src/lib.rs", line, &present).is_empty());
        // Not a path: no extension, no `/`, another top-level name.
        assert!(stale("a.md", "alpha/src alpha gamma/gone.rs src/gone.rs", &[]).is_empty());
    }

    #[test]
    fn a_url_is_not_a_path() {
        let line =
            "<https://example.org/alpha/gone.rs> [x](http://h/alpha/a.md) git+ssh://h/alpha/";
        assert!(stale("a.md", line, &[]).is_empty());
    }

    #[test]
    fn a_placeholder_is_not_a_path() {
        let line = "alpha/<case>.rs alpha/{name}.c alpha/*.fbs alpha/v1.N.fbs \
                    alpha/$DIR/ alpha/.../x.rs alpha/NAME.md alpha/X.Y/ alpha/VERSION.h \
                    alpha/target/debug/x.so alpha/.tools/x.py";
        assert!(stale("a.md", line, &[]).is_empty());
    }

    #[test]
    fn another_projects_header_is_not_a_path() {
        let line = "#include \"alpha/IR/Builders.h\" (alpha/Tools/Plugins/PassPlugin.h)";
        assert!(stale("a.rs", line, &[]).is_empty());
        assert_eq!(stale("a.h", "alpha/ir/gone.h", &[]).len(), 1);
    }
}
