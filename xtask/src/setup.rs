//! Installing what the tests and the example need on a fresh Debian machine:
//! the pinned flatc, the Python test environment, the TypeScript reader's
//! npm packages, `openssl`, headless Chromium and the LLVM/MLIR 22 packages.

use anyhow::{Context, Result, bail};
use hurray_codegen::flatc::Flatc;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian packages the MLIR crate builds against (melior 0.27 = LLVM 22).
pub(crate) const MLIR_PACKAGES: &[&str] = &[
    "libmlir-22-dev",
    "mlir-22-tools",
    "llvm-22-dev",
    "libclang-22-dev",
    "libpolly-22-dev",
    "zlib1g-dev",
    "libzstd-dev",
];

/// Debian packages the tests call: `openssl` writes the ed25519 and ECDSA
/// keys the signature tests sign with, as users make them;
/// `chromium-headless-shell` renders `hurray view`'s reports.
pub(crate) const TEST_PACKAGES: &[&str] = &["openssl", "chromium-headless-shell"];

/// Runs `cmd`, failing with its description when it fails.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Installs the Debian packages in `packages` that are missing.
pub(crate) fn apt(packages: &[&str]) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let apt_get = |args: &[&str]| {
        let mut all: Vec<&str> = sudo.to_vec();
        all.push("apt-get");
        all.extend_from_slice(args);
        let mut c = Command::new(all[0]);
        c.args(&all[1..]).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(&mut apt_get(&["update", "-qq"]))?;
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend_from_slice(&missing);
    run(&mut apt_get(&install))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The Python used by the Python reader's tests: a venv under `.tools/py`
/// with `python/requirements.txt` installed.
pub(crate) fn python(root: &Path) -> Result<PathBuf> {
    venv(
        &root.join(".tools/py"),
        &root.join("python/requirements.txt"),
        |_| Ok(()),
    )
}

/// The Python of the venv at `venv` with `requirements` installed, set up
/// again only when the requirements change; `prepare` runs on a new or
/// changed venv before the install.
pub(crate) fn venv(
    venv: &Path,
    requirements: &Path,
    prepare: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let py = venv.join("bin/python");
    let wanted = std::fs::read_to_string(requirements).unwrap_or_default();
    once_per(&venv.join(".requirements"), &wanted, || {
        if !py.exists() {
            run(Command::new("python3").arg("-m").arg("venv").arg(venv))?;
        }
        prepare(&py)?;
        if requirements.exists() {
            pip(&py, &["-r".as_ref(), requirements.as_os_str()])?;
        }
        Ok(())
    })?;
    Ok(py)
}

/// Runs `install` unless the file `stamp` holds `wanted` (what the last
/// install was made from), then records `wanted` there.
fn once_per(stamp: &Path, wanted: &str, install: impl FnOnce() -> Result<()>) -> Result<()> {
    if std::fs::read_to_string(stamp).ok().as_deref() == Some(wanted) {
        return Ok(());
    }
    install()?;
    std::fs::write(stamp, wanted)?;
    Ok(())
}

/// `pip install` into the venv of `py`, quietly and without pip's cache: the
/// wheels (torch's CUDA libraries alone are 3 GB) are installed once per
/// venv, and a second copy in the cache only costs disk a CI machine lacks.
pub(crate) fn pip(py: &Path, args: &[&std::ffi::OsStr]) -> Result<()> {
    run(Command::new(py)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--no-cache-dir")
        .args(args))
}

/// The TypeScript reader's packages (`js/node_modules`), installed by
/// `npm ci` from `js/package-lock.json`, again only when the lock changes.
pub(crate) fn npm(root: &Path) -> Result<()> {
    let js = root.join("js");
    let wanted = std::fs::read_to_string(js.join("package-lock.json"))
        .context("reading js/package-lock.json")?;
    once_per(&js.join("node_modules/.hurray-lock"), &wanted, || {
        run(Command::new("npm").current_dir(&js).args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]))
    })
}

/// The ExecuTorch venv under `.tools/et` (executorch pins a torch older
/// than the main venv's), with `python/requirements-executorch.txt`.
pub(crate) fn executorch(root: &Path) -> Result<PathBuf> {
    venv(
        &root.join(".tools/et"),
        &root.join("python/requirements-executorch.txt"),
        |_| Ok(()),
    )
}

/// Everything: flatc, Python, Node's packages, LLVM/MLIR.
pub(crate) fn all(root: &Path) -> Result<()> {
    Flatc::install(root)?;
    python(root)?;
    executorch(root)?;
    apt(&["nodejs"])?;
    npm(root)?;
    apt(TEST_PACKAGES)?;
    apt(MLIR_PACKAGES)
}
