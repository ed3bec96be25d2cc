//! `hurray view --stats` against reading the same file once, in one run:
//! a file of `HURRAY_BENCH_MIB` MiB (default 1024) of bf16 matrices (a
//! Llama-shaped state dict's bulk), each command a fresh process, the cases
//! interleaved in each of 5 rounds. Cold: the file's pages dropped
//! (`posix_fadvise(DONTNEED)`) before the command; warm: in the page cache.
//! "Read once" is the file read sequentially into a reused 8 MiB buffer
//! (what `cat FILE > /dev/null` does). Medians, and the median of each
//! round's ratio to the read of the same temperature.
//!
//!     cargo bench -p hurray-cli --bench view

use hurray::{ElementType, TensorDescriptor, Writer, shape};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const ROUNDS: usize = 5;

fn drop_cache(path: &Path) {
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: a valid open descriptor; the call only advises the kernel.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise");
}

fn read_once(path: &Path) {
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 8 << 20];
    while f.read(&mut buf).unwrap() > 0 {}
}

fn hurray(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mib: u64 = std::env::var("HURRAY_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let dir = std::env::var_os("HURRAY_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let path = dir.join("hurray-bench-view.hurray");
    let page = dir.join("hurray-bench-view.html");
    // 16 MiB matrices of pseudo-random normal-ish bf16 values.
    let (rows, cols) = (2048u64, 4096u64);
    let tensors = (mib << 20).div_ceil(rows * cols * 2).max(1);
    {
        let mut w = Writer::create(&path).unwrap();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let data: Vec<u8> = (0..rows * cols)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2;
                ((v.to_bits() >> 16) as u16).to_le_bytes()
            })
            .collect();
        for i in 0..tensors {
            let d = TensorDescriptor::new(
                format!("model.layers.{i}.mlp.up_proj.weight"),
                ElementType::BFloat16,
                shape(&[rows, cols]),
            );
            w.add_tensor(&d, &[&data]).unwrap();
        }
        w.finish().unwrap();
    }
    let (p, o) = (path.to_str().unwrap(), page.to_str().unwrap());
    type Case<'a> = (&'a str, bool, Box<dyn Fn() + 'a>);
    let cases: Vec<Case<'_>> = vec![
        ("cold: read once", true, Box::new(|| read_once(&path))),
        (
            "cold: view --stats",
            true,
            Box::new(|| hurray(&["view", p, "-o", o, "--stats"])),
        ),
        ("warm: read once", false, Box::new(|| read_once(&path))),
        (
            "warm: view --stats",
            false,
            Box::new(|| hurray(&["view", p, "-o", o, "--stats"])),
        ),
        (
            "warm: view (header only)",
            false,
            Box::new(|| hurray(&["view", p, "-o", o])),
        ),
    ];
    let mut times = vec![Vec::new(); cases.len()];
    for round in 0..=ROUNDS {
        for (i, (_, cold, run)) in cases.iter().enumerate() {
            if *cold {
                drop_cache(&path);
            } else {
                read_once(&path);
            }
            let start = Instant::now();
            run();
            if round > 0 {
                times[i].push(start.elapsed().as_secs_f64());
            }
        }
    }
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "{} MiB in {tensors} bf16 tensors; median of {ROUNDS} rounds, fresh processes",
        size >> 20
    );
    println!(
        "{:<28} {:>9} {:>9} {:>16}",
        "case", "ms", "GB/s", "x read once"
    );
    for (i, (name, cold, _)) in cases.iter().enumerate() {
        let reference = if *cold { &times[0] } else { &times[2] };
        let ratio = median(times[i].iter().zip(reference).map(|(a, b)| a / b).collect());
        let t = median(times[i].clone());
        println!(
            "{name:<28} {:>9.1} {:>9.2} {ratio:>16.2}",
            t * 1e3,
            size as f64 / t / 1e9
        );
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&page);
}
