//! What the `hurray` command's integration tests share: running the binary,
//! conversions that must succeed or fail cleanly, the project's Python venv.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) fn hurray(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(args)
        .output()
        .expect("run hurray")
}

pub(crate) fn convert(input: &Path, output: &Path) {
    let out = hurray(&[Path::new("convert"), input, output]);
    assert!(
        out.status.success(),
        "hurray convert {} {} failed: {}",
        input.display(),
        output.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The bytes a fixture's JSON spells in hexadecimal.
pub(crate) fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Runs a conversion that must fail; returns its message and checks no output appeared.
pub(crate) fn convert_err(input: &Path, output: &Path) -> String {
    let out = hurray(&[Path::new("convert"), input, output]);
    assert!(
        !out.status.success(),
        "hurray convert {} {} succeeded",
        input.display(),
        output.display()
    );
    assert!(
        !output.exists(),
        "a failed conversion left {}",
        output.display()
    );
    let dir = output.parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The project's Python venv, or `None` (a skip) outside CI when it is absent.
pub(crate) fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let py = root.join(".tools/py/bin/python");
    let usable = py.exists()
        && Command::new(&py)
            .args(["-c", "import numpy, safetensors"])
            .status()
            .is_ok_and(|s| s.success());
    if usable {
        return Some(py);
    }
    let why = format!(
        "{} with numpy and safetensors is missing (cargo xtask setup installs python/requirements.txt)",
        py.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}");
    }
    eprintln!("skipping: {why}");
    None
}

pub(crate) fn run_python(py: &Path, dir: &Path, script: &str) {
    let out = Command::new(py)
        .current_dir(dir)
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The address-space limit hostile inputs of a few KB run under.
pub(crate) const MEMORY_LIMIT: u64 = 1 << 30;

/// Runs `hurray ARGS` under a [`MEMORY_LIMIT`] address-space limit (`prlimit`).
pub(crate) fn hurray_bounded<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new("prlimit")
        .arg(format!("--as={MEMORY_LIMIT}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_hurray"))
        .args(args)
        .output()
        .expect("run prlimit (util-linux)")
}

/// `hurray convert [FLAGS] INPUT OUTPUT` under the [`MEMORY_LIMIT`].
pub(crate) fn convert_bounded(input: &Path, output: &Path, flags: &[&str]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["convert".as_ref()];
    args.extend(flags.iter().map(std::ffi::OsStr::new));
    args.extend([input.as_os_str(), output.as_os_str()]);
    hurray_bounded(&args)
}

/// `hurray from-mlir [FLAGS] INPUT -o OUTPUT` under the [`MEMORY_LIMIT`].
pub(crate) fn from_mlir_bounded(input: &Path, output: &Path, flags: &[&str]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["from-mlir".as_ref()];
    args.extend(flags.iter().map(std::ffi::OsStr::new));
    args.extend([input.as_os_str(), "-o".as_ref(), output.as_os_str()]);
    hurray_bounded(&args)
}

/// Checks that a run succeeded, showing what it printed if not.
pub(crate) fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Checks a refused run: exit status 1, a message holding every one of
/// `needles`, and nothing (no output, no temporary) left in `dir` but `keep`.
pub(crate) fn assert_refused(out: &Output, needles: &[&str], dir: &Path, keep: &[&Path]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "status of a refusal; stderr:\n{stderr}"
    );
    for n in needles {
        assert!(stderr.contains(n), "{n:?} missing from:\n{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| !keep.contains(&p.as_path()))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    stderr
}

/// Writes `bytes` to `input` and converts it to `output`, which must fail
/// and leave nothing behind, with a message that contains `want`.
pub(crate) fn assert_conversion_refused(input: &Path, bytes: &[u8], output: &Path, want: &str) {
    std::fs::write(input, bytes).unwrap();
    let message = convert_err(input, output);
    assert!(message.contains(want), "{}: {message}", input.display());
}

/// `count` mutants of `base`, each with 1 to 4 bit flips, overwritten
/// bytes or truncations, from a xorshift seeded with `seed`: what the fuzz
/// targets do, repeatably.
pub(crate) fn mutants(base: &[u8], seed: u64, count: usize) -> impl Iterator<Item = Vec<u8>> + '_ {
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count).map(move |_| {
        let mut m = base.to_vec();
        for _ in 0..1 + next() % 4 {
            let at = (next() % m.len() as u64) as usize;
            match next() % 3 {
                0 => m[at] ^= 1 << (next() % 8),
                1 => m[at] = next() as u8,
                _ => m.truncate(at.max(1)),
            }
        }
        m
    })
}

/// A fixture JSON's shape (an array of non-negative integers) as dims.
pub(crate) fn json_dims(shape: &serde_json::Value) -> Vec<u64> {
    shape
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .collect()
}

/// Asserts that tensor `name` of `file` has the shape a fixture's JSON
/// gives (`want["shape"]`) and `bytes` as its values.
pub(crate) fn assert_shape_and_bytes(
    file: &hurray::File,
    name: &str,
    want: &serde_json::Value,
    bytes: &[u8],
) {
    let t = file.tensor(name).unwrap();
    let shape = json_dims(&want["shape"]);
    let dims: Vec<u64> = t.dims().iter().map(|d| d.to_wire()).collect();
    assert_eq!(dims, shape, "{name}");
    assert_eq!(
        t.buffer(hurray::descriptor::BufferRole::Values)
            .unwrap_or_default(),
        bytes,
        "{name}"
    );
}
