//! `cargo xtask tidy`: checks of the tree that no compiler makes.
//!
//! - [`cycles`]: files of a crate that import each other in a loop — a
//!   concern with no clear owner, which only grows harder to untie.
//! - [`paths`]: paths in docs and comments that no longer exist — a moved
//!   file leaves its old name behind, and sends the next reader nowhere.
//!
//! Both checks run before either fails, so one run lists everything to fix.

mod cycles;
mod paths;

use anyhow::{Result, bail};
use std::path::Path;

/// Runs both checks on the workspace at `root`, printing what each finds.
pub(crate) fn run(root: &Path) -> Result<()> {
    let cycles = cycles::find(root)?;
    for (n, cycle) in cycles.iter().enumerate() {
        println!("cycle {}: {cycle}", n + 1);
    }
    println!("import cycles: {}", cycles.len());
    let stale = paths::find(root)?;
    for path in &stale {
        println!("{path}");
    }
    println!("stale paths: {}", stale.len());
    if !cycles.is_empty() || !stale.is_empty() {
        bail!(
            "tidy: {} import cycle(s), {} stale path(s)",
            cycles.len(),
            stale.len()
        );
    }
    Ok(())
}

/// A fresh directory under the system's temporary directory holding `files`
/// (path, contents), for the checks' tests.
#[cfg(test)]
fn temp_tree(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pid = std::process::id();
    let dir = std::env::temp_dir().join(format!("xtask-tidy-{pid}-{n}-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}
