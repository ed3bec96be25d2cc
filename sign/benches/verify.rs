//! What checking costs a warm load (ADR-0012): a file of `HURRAY_BENCH_MIB`
//! MiB (default 1024) of 16 MiB f32 tensors, in the page cache, loaded as
//! the peers bench loads (open, then one byte of every page of every tensor
//! read), against the same load that also
//! - checks the signature (the header only: what `safe_open(...,
//!   verify=KEY)` does at open),
//! - checks every tensor's CRC-32C (a file with checksums only),
//! - checks the signature and every tensor's BLAKE3 digest (a file with
//!   digests only: what a verifying loader does when it reads every tensor),
//! - and memcpy of the same bytes, the reference for "reading every byte";
//!
//! then what digests cost a save (see `saves`).
//!
//! Every case runs in turn in each of 7 rounds; each is reported as the
//! median time and the median of its ratio to the plain load of the same
//! round.
//!
//!     cargo bench -p hurray-sign --bench verify

use hurray::{
    ElementType, File, TensorDescriptor, Writer,
    integrity::{ChecksumAlgorithm, DigestAlgorithm},
    shape,
};
use hurray_sign::{PrivateKey, Signature};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TENSOR_BYTES: usize = 16 << 20;
const ROUNDS: usize = 7;
const PAGE: usize = 4096;

/// Writes `tensors` tensors of `data` to `path` (renamed into place, not
/// fsynced), with CRC-32C and BLAKE3 as asked.
fn write(path: &Path, tensors: usize, data: &[u8], checksums: bool, digests: bool) {
    let mut w = Writer::create_with(path, hurray::atomic::Durability::RenameOnly).unwrap();
    w.set_checksums(checksums.then_some(ChecksumAlgorithm::Crc32c))
        .unwrap();
    w.set_digests(digests.then_some(DigestAlgorithm::Blake3))
        .unwrap();
    for i in 0..tensors {
        let desc = TensorDescriptor::new(
            format!("layers.{i:03}.weight"),
            ElementType::Float32,
            shape(&[(TENSOR_BYTES / 4) as u64]),
        );
        w.add_tensor(&desc, &[data]).unwrap();
    }
    w.finish().unwrap();
}

/// One byte of every page of every tensor: what a load leaves resident.
fn touch(file: &File) -> u64 {
    let mut sum = 0u64;
    for t in file.tensors() {
        let bytes = t.data().unwrap();
        for i in (0..bytes.len()).step_by(PAGE) {
            sum = sum.wrapping_add(u64::from(bytes[i]));
        }
    }
    sum
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mib: usize = std::env::var("HURRAY_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let dir: PathBuf = std::env::var_os("HURRAY_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(std::env::temp_dir);
    let tensors = (mib << 20).div_ceil(TENSOR_BYTES).max(1);
    let crc = dir.join("hurray-bench-verify-crc.hurray");
    let digested = dir.join("hurray-bench-verify-blake3.hurray");
    let data: Vec<u8> = (0..TENSOR_BYTES).map(|i| (i * 31 % 251) as u8).collect();
    write(&crc, tensors, &data, true, false);
    write(&digested, tensors, &data, false, true);
    let key = PrivateKey::from_seed([1; 32]);
    let signature = Signature::sign(&File::open(&digested).unwrap(), &key).unwrap();
    let sig_path = hurray_sign::signature_path(&digested);
    signature.write(&sig_path).unwrap();
    let public = key.public_key();
    let bytes = (tensors * TENSOR_BYTES) as f64;
    let source = vec![7u8; tensors * TENSOR_BYTES];
    // Touched once, so the copy measures the copy, not page faults.
    let target = std::cell::RefCell::new(vec![1u8; tensors * TENSOR_BYTES]);

    type Case<'a> = (&'a str, Box<dyn Fn() -> u64 + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "plain load",
            Box::new(|| touch(&File::open(&digested).unwrap())),
        ),
        (
            "load + signature",
            Box::new(|| {
                let f = File::open(&digested).unwrap();
                let s = Signature::read(&sig_path).unwrap();
                s.verify(&f, &public).unwrap();
                touch(&f)
            }),
        ),
        (
            "load + every CRC-32C",
            Box::new(|| {
                let f = File::open(&crc).unwrap();
                assert!(f.verify_checksums().unwrap());
                touch(&f)
            }),
        ),
        (
            "load + signature + every BLAKE3",
            Box::new(|| {
                let f = File::open(&digested).unwrap();
                let s = Signature::read(&sig_path).unwrap();
                s.verify(&f, &public).unwrap();
                assert!(f.verify_checksums().unwrap());
                touch(&f)
            }),
        ),
        (
            "memcpy of the same bytes",
            Box::new(|| {
                let mut target = target.borrow_mut();
                target.copy_from_slice(&source);
                u64::from(target[target.len() / 2])
            }),
        ),
    ];
    let mut times = vec![Vec::new(); cases.len()];
    for round in 0..=ROUNDS {
        for (i, (_, run)) in cases.iter().enumerate() {
            let start = Instant::now();
            black_box(run());
            if round > 0 {
                times[i].push(start.elapsed());
            }
        }
    }
    let plain: Vec<Duration> = times[0].clone();
    println!(
        "{} MiB in {tensors} tensors, warm; median of {ROUNDS} rounds",
        (tensors * TENSOR_BYTES) >> 20
    );
    println!(
        "{:<34} {:>10} {:>10} {:>14}",
        "case", "ms", "GB/s", "x plain load"
    );
    for ((name, _), t) in cases.iter().zip(&times) {
        let ms = median(t.iter().map(|d| d.as_secs_f64() * 1e3).collect());
        let ratio = median(
            t.iter()
                .zip(&plain)
                .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
                .collect(),
        );
        println!(
            "{name:<34} {ms:>10.1} {:>10.2} {ratio:>14.2}",
            bytes / ms / 1e6
        );
    }
    for p in [&crc, &digested, &sig_path] {
        let _ = std::fs::remove_file(p);
    }
    saves(&dir, tensors, &data);
}

/// What digests cost a save: the same tensors written (renamed into place,
/// not fsynced) with CRC-32C (the default), with CRC-32C and BLAKE3, and
/// with BLAKE3 alone.
fn saves(dir: &Path, tensors: usize, data: &[u8]) {
    let path = dir.join("hurray-bench-verify-save.hurray");
    let save = |crc: bool, blake3: bool| write(&path, tensors, data, crc, blake3);
    let cases = [
        ("save, CRC-32C (default)", true, false),
        ("save, CRC-32C + BLAKE3", true, true),
        ("save, BLAKE3 only", false, true),
    ];
    let mut times = vec![Vec::new(); cases.len()];
    for round in 0..=ROUNDS {
        for (i, &(_, crc, blake3)) in cases.iter().enumerate() {
            let start = Instant::now();
            save(crc, blake3);
            if round > 0 {
                times[i].push(start.elapsed());
            }
        }
    }
    println!(
        "{:<34} {:>10} {:>10} {:>14}",
        "case", "ms", "GB/s", "x default save"
    );
    let bytes = (tensors * TENSOR_BYTES) as f64;
    for ((name, ..), t) in cases.iter().zip(&times) {
        let ms = median(t.iter().map(|d| d.as_secs_f64() * 1e3).collect());
        let ratio = median(
            t.iter()
                .zip(&times[0])
                .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
                .collect(),
        );
        println!(
            "{name:<34} {ms:>10.1} {:>10.2} {ratio:>14.2}",
            bytes / ms / 1e6
        );
    }
    let _ = std::fs::remove_file(&path);
}
