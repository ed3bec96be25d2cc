//! Import cycles between the files of each crate in the workspace.
//!
//! Files that import each other in a loop can only be read, tested or moved
//! together: the concern that ties them has no clear owner. A file imports
//! another when it has a `use` or a qualified path in code (`crate::x::f`,
//! `super::y::T`, `child::g`) that resolves to the other file's module. A
//! `pub use` only hands a name on and is not an import; a name a module
//! re-exports is followed to the module that defines it. A child using its
//! ancestors' items is the module tree, not a loop. `#[cfg(test)] mod` blocks,
//! `src/bin/` and everything outside `src/` (tests, benches, examples) are
//! left out, and so are the fuzz targets and build outputs.
//!
//! Source is read with a small lexer (comments, strings and char literals
//! dropped), not parsed: `use` trees and `a::b::c` paths are all it needs.

use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// A module below the crate root, as its path: `["validate", "quant"]`; the
/// root is empty.
type Module = Vec<String>;

/// File -> file it imports -> the names that tie them (files relative to the
/// workspace root).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Directories no crate to check is found under.
const SKIP_DIRS: &[&str] = &[
    "target",
    "node_modules",
    "fuzz",
    "tests",
    "benches",
    "examples",
];

/// Files of one crate that import each other in a loop.
#[derive(Debug)]
pub(super) struct Cycle {
    /// The crate's directory, relative to the workspace root.
    krate: String,
    /// Each import between two files of the cycle, with the names that tie it.
    imports: Vec<(String, String, BTreeSet<String>)>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: BTreeSet<&str> = self.imports.iter().map(|i| i.0.as_str()).collect();
        write!(f, "{} files in {}", files.len(), self.krate)?;
        for (from, to, names) in &self.imports {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            write!(f, "\n  {from} -> {to}: {}", names.join(", "))?;
        }
        Ok(())
    }
}

/// Every import cycle in the crates under `root`.
pub(super) fn find(root: &Path) -> Result<Vec<Cycle>> {
    let mut crates = Vec::new();
    find_crates(root, &mut crates)?;
    let mut cycles = Vec::new();
    for (dir, entry) in crates {
        let graph = imports(root, &entry)?;
        for files in strongly_connected(&graph) {
            let mut imports = Vec::new();
            for &from in &files {
                for (to, names) in &graph[from] {
                    if files.contains(&to.as_str()) {
                        imports.push((from.to_owned(), to.clone(), names.clone()));
                    }
                }
            }
            cycles.push(Cycle {
                krate: relative(root, &dir),
                imports,
            });
        }
    }
    Ok(cycles)
}

/// Each crate under `dir` (with a `Cargo.toml` and a `src/lib.rs` or
/// `src/main.rs`) as its directory and entry file.
fn find_crates(dir: &Path, out: &mut Vec<(PathBuf, PathBuf)>) -> Result<()> {
    let src = dir.join("src");
    if dir.join("Cargo.toml").is_file()
        && let Some(entry) = ["lib.rs", "main.rs"]
            .map(|e| src.join(e))
            .into_iter()
            .find(|e| e.is_file())
    {
        out.push((dir.to_owned(), entry));
    }
    for sub in subdirectories(dir)? {
        let name = sub.file_name().unwrap_or_default().to_string_lossy();
        if !name.starts_with('.') && !SKIP_DIRS.contains(&&*name) {
            find_crates(&sub, out)?;
        }
    }
    Ok(())
}

/// The directories in `dir`, in name order.
fn subdirectories(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// `path` relative to `root`, with `/` separators.
fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<_> = rel.iter().map(|p| p.to_string_lossy()).collect();
    parts.join("/")
}

/// Each `.rs` file under `dir` but in `bin/` folders, by its module: `a/b.rs`
/// and `a/b/mod.rs` are `a::b`.
fn modules(src: &Path, dir: &Path, out: &mut BTreeMap<Module, PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                modules(src, &path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module: Module = relative(src, &path.with_extension(""))
                .split('/')
                .map(str::to_owned)
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module != ["lib"] && module != ["main"] {
                out.insert(module, path);
            }
        }
    }
    Ok(())
}

/// The imports between the files of the crate whose entry file is `entry`.
fn imports(root: &Path, entry: &Path) -> Result<Graph> {
    let src = entry.parent().context("an entry file is in src/")?;
    let mut mods = BTreeMap::from([(Module::new(), entry.to_owned())]);
    modules(src, src, &mut mods)?;
    let mut named = BTreeMap::new();
    for (module, file) in &mods {
        let text =
            fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        named.insert(module, paths(&text));
    }
    // What each module re-exports: the name it hands on -> where it comes from.
    let mut reexports: BTreeMap<Module, BTreeMap<&str, Module>> = BTreeMap::new();
    for (&here, paths) in &named {
        for p in paths.iter().filter(|p| p.public && p.path.len() > 1) {
            if let Some(source) = absolute(here, &p.path, &mods)
                && p.path.last().is_some_and(|last| last != "*")
            {
                reexports
                    .entry(here.clone())
                    .or_default()
                    .insert(p.name(), source);
            }
        }
    }
    let mut graph = Graph::new();
    for (&here, paths) in &named {
        for p in paths.iter().filter(|p| !p.public) {
            let Some(mut path) = absolute(here, &p.path, &mods) else {
                continue;
            };
            // Follow re-exports (a few hops at most) to the defining module.
            for _ in 0..4 {
                let known = known_prefix(&path, &mods);
                let source = path
                    .get(known)
                    .and_then(|name| reexports.get(&path[..known])?.get(name.as_str()));
                match source {
                    Some(source) if source[..] != path[..=known] => {
                        path = [&source[..], &path[known + 1..]].concat();
                    }
                    _ => break,
                }
            }
            let known = known_prefix(&path, &mods);
            let target = &path[..known];
            if here.starts_with(target) {
                continue; // itself, or an ancestor (the crate root included)
            }
            let name = path.get(known).or(path.last()).cloned().unwrap_or_default();
            graph
                .entry(relative(root, &mods[here]))
                .or_default()
                .entry(relative(root, &mods[target]))
                .or_default()
                .insert(name);
        }
    }
    Ok(graph)
}

/// The length of the longest start of `path` that is a module of the crate.
fn known_prefix(path: &[String], mods: &BTreeMap<Module, PathBuf>) -> usize {
    (0..=path.len())
        .rev()
        .find(|&k| mods.contains_key(&path[..k]))
        .unwrap_or(0)
}

/// `path`, written in module `here`, from the crate root; `None` when it
/// names something outside the crate (`std::fs`, another crate).
fn absolute(here: &[String], path: &[String], mods: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let (first, mut rest) = path.split_first()?;
    let mut abs = match first.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => {
            let mut base = here[..here.len().saturating_sub(1)].to_vec();
            while let [next, tail @ ..] = rest
                && next == "super"
            {
                base.pop();
                rest = tail;
            }
            base
        }
        child => {
            let child = [here, &[child.to_owned()]].concat();
            if !mods.contains_key(&child) {
                return None;
            }
            child
        }
    };
    abs.extend(rest.iter().filter(|s| *s != "*").cloned());
    Some(abs)
}

/// A path a file names: in a `use` (with the name it is bound to, when
/// renamed) or in code.
#[derive(Debug)]
struct Named {
    path: Vec<String>,
    alias: Option<String>,
    /// A `pub use` (of any visibility): a re-export.
    public: bool,
}

impl Named {
    /// The name the path binds.
    fn name(&self) -> &str {
        self.alias
            .as_deref()
            .or(self.path.last().map(String::as_str))
            .unwrap_or_default()
    }
}

/// A token of Rust source, as far as paths go.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    /// `::`
    Sep,
    Punct(char),
}

/// Every path `text` names in `use` declarations, and every qualified path
/// (two or more segments) in its code, but in `#[cfg(test)] mod` blocks.
fn paths(text: &str) -> Vec<Named> {
    let toks = without_test_mods(lex(text));
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Word(w) if w == "use" => {
                let end = (i..toks.len())
                    .find(|&j| toks[j] == Tok::Punct(';'))
                    .unwrap_or(toks.len());
                use_tree(&toks[i + 1..end], &[], is_pub(&toks[..i]), &mut out);
                i = end;
            }
            // A path's first segment; later ones (and `<T>::f`) are not.
            Tok::Word(w) if i == 0 || toks[i - 1] != Tok::Sep => {
                let mut path = vec![w.clone()];
                while let (Some(Tok::Sep), Some(Tok::Word(next))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    path.push(next.clone());
                    i += 2;
                }
                if path.len() > 1 {
                    out.push(Named {
                        path,
                        alias: None,
                        public: false,
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether the item whose tokens follow `before` is declared `pub` or
/// `pub(...)`.
fn is_pub(before: &[Tok]) -> bool {
    let pub_word = |t: Option<&Tok>| matches!(t, Some(Tok::Word(w)) if w == "pub");
    match before {
        [.., Tok::Punct(')')] => before
            .iter()
            .rposition(|t| *t == Tok::Punct('('))
            .is_some_and(|open| pub_word(before[..open].last())),
        _ => pub_word(before.last()),
    }
}

/// Expands the `use` tree `toks` below `prefix` into one path per name it
/// brings in: `a::{b, c::{self, D as E}}` gives `a::b`, `a::c` and `a::c::D`
/// (bound as `E`).
fn use_tree(toks: &[Tok], prefix: &[String], public: bool, out: &mut Vec<Named>) {
    let mut path = prefix.to_vec();
    let mut alias = None;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct('{') => {
                let close = closing(toks, i);
                let (mut start, mut depth) = (i + 1, 0);
                for (j, t) in toks.iter().enumerate().take(close + 1).skip(i + 1) {
                    match t {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') if depth > 0 => depth -= 1,
                        Tok::Punct(',' | '}') if depth == 0 => {
                            if start < j {
                                use_tree(&toks[start..j], &path, public, out);
                            }
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            Tok::Word(w) if w == "as" => {
                if let Some(Tok::Word(name)) = toks.get(i + 1) {
                    alias = Some(name.clone());
                }
                i += 1;
            }
            // `a::{self}` is `a` itself.
            Tok::Word(w) if w == "self" && !path.is_empty() => {}
            Tok::Word(w) => path.push(w.clone()),
            Tok::Punct('*') => path.push("*".into()),
            _ => {}
        }
        i += 1;
    }
    if !path.is_empty() {
        out.push(Named {
            path,
            alias,
            public,
        });
    }
}

/// The index of the `}` closing the `{` at `open` (or the last token).
fn closing(toks: &[Tok], open: usize) -> usize {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    toks.len().saturating_sub(1)
}

/// `toks` without the `#[cfg(test)] mod name { ... }` blocks (their
/// imports are the tests', not the file's).
fn without_test_mods(toks: Vec<Tok>) -> Vec<Tok> {
    let word = |t: Option<&Tok>, w: &str| matches!(t, Some(Tok::Word(x)) if x == w);
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        let cfg_test = toks[i] == Tok::Punct('#')
            && toks.get(i + 1) == Some(&Tok::Punct('['))
            && word(toks.get(i + 2), "cfg")
            && toks.get(i + 3) == Some(&Tok::Punct('('))
            && word(toks.get(i + 4), "test")
            && toks.get(i + 5) == Some(&Tok::Punct(')'))
            && toks.get(i + 6) == Some(&Tok::Punct(']'));
        if cfg_test {
            // Other attributes, then a visibility, then `mod name {`.
            let mut j = i + 7;
            while toks.get(j) == Some(&Tok::Punct('#')) && toks.get(j + 1) == Some(&Tok::Punct('['))
            {
                j = (j + 1..toks.len())
                    .find(|&k| toks[k] == Tok::Punct(']'))
                    .map_or(toks.len(), |k| k + 1);
            }
            if word(toks.get(j), "pub") {
                j += 1;
                if toks.get(j) == Some(&Tok::Punct('(')) {
                    j = (j..toks.len())
                        .find(|&k| toks[k] == Tok::Punct(')'))
                        .map_or(toks.len(), |k| k + 1);
                }
            }
            if word(toks.get(j), "mod")
                && matches!(toks.get(j + 1), Some(Tok::Word(_)))
                && toks.get(j + 2) == Some(&Tok::Punct('{'))
            {
                i = closing(&toks, j + 2) + 1;
                continue;
            }
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out
}

/// The words, `::` and punctuation of Rust source `text`, without its
/// comments, string literals, char literals and lifetimes' quotes.
fn lex(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut toks = Vec::new();
    let mut i = 0;
    while i < c.len() {
        match (c[i], at(i + 1)) {
            ('/', '/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            ('/', '*') => {
                let mut depth = 0;
                while i < c.len() {
                    match (c[i], at(i + 1)) {
                        ('/', '*') => (depth, i) = (depth + 1, i + 2),
                        ('*', '/') => (depth, i) = (depth - 1, i + 2),
                        _ => i += 1,
                    }
                    if depth == 0 {
                        break;
                    }
                }
            }
            ('"', _) => i = string_end(&c, i + 1, 0),
            // A char literal (`'x'`, `'\n'`); otherwise a lifetime's quote.
            ('\'', '\\') => {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            ('\'', _) if at(i + 2) == '\'' => i += 3,
            (':', ':') => {
                toks.push(Tok::Sep);
                i += 2;
            }
            (ch, _) if ch.is_alphanumeric() || ch == '_' => {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                let word: String = c[start..i].iter().collect();
                // Raw strings (`r"…"`, `br#"…"#`) and raw identifiers (`r#type`).
                let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
                if matches!(word.as_str(), "r" | "br" | "cr") && at(i + hashes) == '"' {
                    i = string_end(&c, i + hashes + 1, hashes);
                } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                    i = string_end(&c, i + 1, 0);
                } else if word == "r" && hashes == 1 {
                    i += 1;
                } else {
                    toks.push(Tok::Word(word));
                }
            }
            (ch, _) => {
                if !ch.is_whitespace() {
                    toks.push(Tok::Punct(ch));
                }
                i += 1;
            }
        }
    }
    toks
}

/// The index just past the string literal whose contents start at `i`:
/// past a `"` followed by `hashes` `#`s; escapes count only when `hashes` is
/// 0 (a plain string, not a raw one).
fn string_end(c: &[char], mut i: usize, hashes: usize) -> usize {
    while i < c.len() {
        if c[i] == '\\' && hashes == 0 {
            i += 2;
        } else if c[i] == '"' && c[i + 1..].iter().take(hashes).all(|&h| h == '#') {
            return i + 1 + hashes;
        } else {
            i += 1;
        }
    }
    i
}

/// The strongly connected components of more than one file (Tarjan), each
/// in file order.
fn strongly_connected(graph: &Graph) -> Vec<Vec<&str>> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<&'g str>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let graph = self.graph;
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in graph.get(v).into_iter().flat_map(BTreeMap::keys) {
                let w = w.as_str();
                let reach = if !self.index.contains_key(w) {
                    self.visit(w);
                    self.low[w]
                } else if self.stack.contains(&w) {
                    self.index[w]
                } else {
                    continue;
                };
                let low = self.low[v].min(reach);
                self.low.insert(v, low);
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().rposition(|&x| x == v).unwrap_or(0);
                let mut component = self.stack.split_off(at);
                if component.len() > 1 {
                    component.sort_unstable();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !tarjan.index.contains_key(v.as_str()) {
            tarjan.visit(v);
        }
    }
    tarjan.found.sort();
    tarjan.found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::temp_tree;

    /// The cycles in a one-crate tree, as (files, rendering).
    fn cycles_in(name: &str, files: &[(&str, &str)]) -> Vec<(Vec<String>, String)> {
        let mut all = vec![("k/Cargo.toml", "[package]\nname = \"k\"\n")];
        all.extend_from_slice(files);
        let root = temp_tree(name, &all);
        let found = find(&root).unwrap();
        fs::remove_dir_all(&root).unwrap();
        found
            .iter()
            .map(|c| {
                let files: BTreeSet<_> = c.imports.iter().map(|i| i.0.clone()).collect();
                (files.into_iter().collect(), c.to_string())
            })
            .collect()
    }

    #[test]
    fn two_files_using_each_other_are_a_cycle() {
        let found = cycles_in(
            "two",
            &[
                ("k/src/lib.rs", "mod a;\nmod b;\n"),
                ("k/src/a.rs", "use crate::b::B;\npub struct A;\n"),
                (
                    "k/src/b.rs",
                    "pub struct B;\nfn f() -> crate::a::A { todo!() }\n",
                ),
            ],
        );
        assert_eq!(
            found,
            [(
                vec!["k/src/a.rs".to_owned(), "k/src/b.rs".to_owned()],
                "2 files in k\n  k/src/a.rs -> k/src/b.rs: B\n  k/src/b.rs -> k/src/a.rs: A"
                    .to_owned()
            )]
        );
    }

    #[test]
    fn a_name_the_root_reexports_ties_its_defining_file() {
        let found = cycles_in(
            "three",
            &[
                ("k/src/lib.rs", "mod x;\nmod y;\nmod z;\npub use z::Zed;\n"),
                ("k/src/x.rs", "use crate::y::Why;\npub struct Ex;\n"),
                ("k/src/y.rs", "pub struct Why(super::Zed);\n"),
                (
                    "k/src/z.rs",
                    "use crate::{x::Ex as Renamed};\npub struct Zed;\n",
                ),
            ],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, ["k/src/x.rs", "k/src/y.rs", "k/src/z.rs"]);
        assert!(
            found[0].1.contains("k/src/y.rs -> k/src/z.rs: Zed"),
            "{}",
            found[0].1
        );
    }

    #[test]
    fn a_child_using_its_parents_items_is_not_a_cycle() {
        let found = cycles_in(
            "child",
            &[
                ("k/src/main.rs", "mod p;\nfn main() {}\n"),
                (
                    "k/src/p/mod.rs",
                    "mod c;\npub struct P;\nfn f() { c::helper() }\n",
                ),
                (
                    "k/src/p/c.rs",
                    "use super::P;\npub fn helper() -> crate::p::P { P }\n",
                ),
            ],
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn comments_strings_reexports_and_test_modules_are_not_imports() {
        let b = r##"
            // crate::a::A
            /* crate::a::A /* nested */ crate::a::A */
            const S: &str = "crate::a::A \" crate::a::A";
            const R: &str = r#"crate::a::A " crate::a::A"#;
            const C: char = '"';
            pub use crate::a::A;
            pub struct B<'a>(&'a str);
            #[cfg(test)]
            #[allow(unused)]
            mod tests {
                use crate::a::A;
            }
        "##;
        let found = cycles_in(
            "noise",
            &[
                ("k/src/lib.rs", "mod a;\nmod b;\n"),
                ("k/src/a.rs", "use crate::b::B;\npub struct A;\n"),
                ("k/src/b.rs", b),
            ],
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn use_trees_expand_to_one_path_per_name() {
        let got: Vec<(String, String, bool)> =
            paths("pub(crate) use a::{self, b::{C as D, *}};\nuse ::std::fs;")
                .iter()
                .map(|n| (n.path.join("::"), n.name().to_owned(), n.public))
                .collect();
        let want = [
            ("a", "a", true),
            ("a::b::C", "D", true),
            ("a::b::*", "*", true),
            ("std::fs", "fs", false),
        ]
        .map(|(p, n, public)| (p.to_owned(), n.to_owned(), public));
        assert_eq!(got, want);
    }
}
