//! `bench-peers`: the head-to-head of `python/bench/peers.py`, in a venv of
//! its own (`.tools/bench`) with the peers' packages and a release build of
//! the extension. Not part of `test`: it takes minutes and wants a quiet
//! machine.

use crate::setup::{pip, python, run, venv};
use anyhow::{Context, Result};
use std::path::Path;
use std::process::Command;

/// Sets up the bench venv (once per change of its requirements) and runs the
/// benchmark with `args`.
pub(crate) fn peers(root: &Path, args: &[&str]) -> Result<()> {
    // The tools venv holds torch (3 GB with its CUDA libraries); the bench
    // venv reads its packages through a .pth file instead of a second copy.
    let tools = python(root)?;
    let py = venv(
        &root.join(".tools/bench"),
        &root.join("python/bench/requirements-peers.txt"),
        |py| {
            std::fs::write(
                Path::new(&purelib(py)?).join("hurray-tools-venv.pth"),
                format!("{}\n", purelib(&tools)?),
            )?;
            Ok(())
        },
    )?;
    // The extension as a user gets it from `pip install ./pyext`: a release build.
    let wheels = root.join("target/bench-wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run(Command::new(tools.with_file_name("maturin"))
        .args(["build", "--quiet", "--release", "-m"])
        .arg(root.join("pyext/Cargo.toml"))
        .arg("-o")
        .arg(&wheels)
        .arg("--interpreter")
        .arg(&py))?;
    let wheel = std::fs::read_dir(&wheels)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .context("maturin wrote no wheel")?;
    pip(
        &py,
        &[
            "--no-deps".as_ref(),
            "--force-reinstall".as_ref(),
            wheel.as_os_str(),
        ],
    )?;
    run(Command::new(&py)
        .arg(root.join("python/bench/peers.py"))
        .args(args))
}

/// Where the venv of `python` installs pure-Python packages.
fn purelib(python: &Path) -> Result<String> {
    let out = Command::new(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .with_context(|| format!("running {}", python.display()))?;
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}
