//! Hurray against safetensors and memcpy, measured in one run.
//!
//! `cargo bench -p hurray --bench compare` prints a Markdown table of medians
//! and ratios (the numbers in docs/performance.md come from it). A plain bench
//! binary rather than criterion, because the interesting output is the ratio
//! between peers measured side by side, not each one's absolute time.
//!
//! Arguments after `--` select sections by substring of their names
//! (`open`, `write`, `write-file`, `checksum`, `digest`, `open-by-size`):
//! `cargo bench -p hurray --bench compare -- checksum write` runs the
//! checksum and write sections only. No argument runs them all.

mod common;

use common::{median, median_batched, median_pair};
use hurray::{
    ElementType, File, TensorDescriptor, Writer, atomic::Durability, integrity::ChecksumAlgorithm,
    reader::Reader, shape,
};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("model.layers.{i}.weight")).collect()
}

fn hurray_file(names: &[String], elems: usize) -> Vec<u8> {
    let data = vec![1u8; elems * 4];
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    for n in names {
        w.add_tensor(
            &TensorDescriptor::new(n.as_str(), ElementType::Float32, shape(&[elems as u64])),
            &[&data],
        )
        .unwrap();
    }
    w.finish().unwrap();
    out
}

fn safetensors_file(names: &[String], elems: usize) -> Vec<u8> {
    let data = vec![1u8; elems * 4];
    let views: Vec<(String, TensorView<'_>)> = names
        .iter()
        .map(|n| {
            (
                n.clone(),
                TensorView::new(Dtype::F32, vec![elems], &data).unwrap(),
            )
        })
        .collect();
    safetensors::serialize(views, None).unwrap()
}

fn ns(d: Duration) -> f64 {
    d.as_secs_f64() * 1e9
}

fn open_and_lookup() {
    println!("\n### Open + verify + look up every tensor (16 f32 each)\n");
    println!("| tensors | hurray | safetensors | safetensors / hurray | hurray per tensor |");
    println!("|---:|---:|---:|---:|---:|");
    for n in [10usize, 1_000, 10_000] {
        let names = names(n);
        let h = hurray_file(&names, 16);
        let s = safetensors_file(&names, 16);
        let runs = if n >= 10_000 { 31 } else { 201 };
        // Samples of at least ~1,000 tensors: at 10 tensors a sample is
        // under a microsecond, and reading the clock would be part of it.
        let batch = (1_000 / n).max(1);
        let (th, ts) = median_pair(
            runs,
            batch,
            || {
                let r = Reader::new(black_box(&h)).unwrap();
                for name in &names {
                    black_box(r.get(name).unwrap().data().unwrap());
                }
            },
            || {
                let st = SafeTensors::deserialize(black_box(&s)).unwrap();
                for name in &names {
                    black_box(st.tensor(name).unwrap().data());
                }
            },
        );
        let tv = median_batched(runs, batch, || {
            black_box(Reader::new(black_box(&h)).unwrap());
        });
        let r = Reader::new(&h).unwrap();
        let tl = median_batched(runs, batch, || {
            for name in &names {
                black_box(r.get(name).unwrap());
            }
        });
        eprintln!(
            "n={n}: open (verify, index of names) {:.0} ns/tensor, look-up {:.0} ns/tensor",
            ns(tv) / n as f64,
            ns(tl) / n as f64
        );
        println!(
            "| {n} | {:.1} µs | {:.1} µs | {:.1}× | {:.0} ns |",
            ns(th) / 1e3,
            ns(ts) / 1e3,
            ns(ts) / ns(th),
            ns(th) / n as f64
        );
    }
}

/// Streams one tensor of `data` per name through `w` and finishes the file.
fn write_tensors<W: Write>(mut w: Writer<W>, names: &[String], data: &[u8]) {
    for n in names {
        w.add_tensor(
            &TensorDescriptor::new(n.as_str(), ElementType::UInt8, shape(&[data.len() as u64])),
            &[data],
        )
        .unwrap();
    }
    w.finish().unwrap();
}

/// Bytes that are not all alike (a checksum's speed must not depend on them,
/// but a compressing or deduplicating layer below could).
fn pattern(len: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn write_1gib() {
    println!("\n### Write 1 GiB (16 tensors × 64 MiB) into memory\n");
    let per = 64usize << 20;
    let count = 16;
    let data = pattern(per);
    let names = names(count);
    let total = per * count;
    let mut sink: Vec<u8> = Vec::with_capacity(total + (1 << 20));
    let runs = 5;
    let tm = median(runs, || {
        sink.clear();
        for _ in 0..count {
            sink.extend_from_slice(black_box(&data));
        }
        black_box(&sink);
    });
    let t_off = median(runs, || {
        sink.clear();
        let mut w = Writer::new(&mut sink).unwrap();
        w.set_checksums(None).unwrap();
        write_tensors(w, &names, &data);
        black_box(&sink);
    });
    // The default: one CRC-32C per buffer (ADR-0009).
    let t_on = median(runs, || {
        sink.clear();
        write_tensors(Writer::new(&mut sink).unwrap(), &names, &data);
        black_box(&sink);
    });
    let ts = median(runs, || {
        let views: Vec<(String, TensorView<'_>)> = names
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    TensorView::new(Dtype::U8, vec![per], &data).unwrap(),
                )
            })
            .collect();
        black_box(safetensors::serialize(views, None).unwrap());
    });
    write_table(
        "memcpy",
        total,
        &[
            ("memcpy (Vec::extend_from_slice)", tm),
            ("hurray Writer, checksums off", t_off),
            ("hurray Writer, CRC-32C (default)", t_on),
            ("safetensors serialize", ts),
        ],
    );
    println!(
        "\nchecksums on / off (speed): {:.2}; checksums on / memcpy (speed): {:.2}",
        t_off.as_secs_f64() / t_on.as_secs_f64(),
        tm.as_secs_f64() / t_on.as_secs_f64()
    );
}

fn write_1gib_file() {
    println!("\n### Write 1 GiB (16 tensors × 64 MiB) to a file (page cache, no fsync)\n");
    let per = 64usize << 20;
    let count = 16;
    let data = pattern(per);
    let names = names(count);
    let total = per * count;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.hurray");
    let runs = 5;
    // The physical limit: the same bytes written to a new plain file.
    let tp = median(runs, || {
        let _ = std::fs::remove_file(&path);
        let mut f = std::fs::File::create(&path).unwrap();
        for _ in 0..count {
            f.write_all(black_box(&data)).unwrap();
        }
    });
    let t_off = median(runs, || {
        let _ = std::fs::remove_file(&path);
        let mut w = Writer::create_with(&path, Durability::RenameOnly).unwrap();
        w.set_checksums(None).unwrap();
        write_tensors(w, &names, &data);
    });
    let t_on = median(runs, || {
        let _ = std::fs::remove_file(&path);
        write_tensors(
            Writer::create_with(&path, Durability::RenameOnly).unwrap(),
            &names,
            &data,
        );
    });
    write_table(
        "plain write",
        total,
        &[
            ("plain File::write_all", tp),
            ("hurray Writer (RenameOnly), checksums off", t_off),
            ("hurray Writer (RenameOnly), CRC-32C (default)", t_on),
        ],
    );
    println!(
        "\nchecksums on / off (speed): {:.2}; checksums on / plain write (speed): {:.2}",
        t_off.as_secs_f64() / t_on.as_secs_f64(),
        tp.as_secs_f64() / t_on.as_secs_f64()
    );
}

/// Checksum throughput against memcpy of the same bytes, at a size that fits
/// in cache and two that do not. Every sample covers 1 GiB of input.
/// Prints a table of writers: time, GB/s over `total` bytes, and the
/// first row's time over each row's (the first row is the reference).
fn write_table(reference: &str, total: usize, rows: &[(&str, Duration)]) {
    let base = rows[0].1.as_secs_f64();
    println!("| writer | time | GB/s | {reference} / writer time |");
    println!("|---|---:|---:|---:|");
    for (label, d) in rows {
        println!(
            "| {label} | {:.0} ms | {:.2} | {:.2} |",
            d.as_secs_f64() * 1e3,
            total as f64 / d.as_secs_f64() / 1e9,
            base / d.as_secs_f64()
        );
    }
}

/// The input sizes of the throughput sections: in cache, and from memory.
const THROUGHPUT_INPUTS: [(&str, usize); 3] =
    [("1 MiB", 1 << 20), ("64 MiB", 64 << 20), ("1 GiB", 1 << 30)];

/// The median time (of 5) for `f` to go over 1 GiB of input, `src` at a time.
fn per_gib(src: &[u8], mut f: impl FnMut(&[u8])) -> Duration {
    let reps = (1usize << 30) / src.len();
    median(5, || {
        for _ in 0..reps {
            f(black_box(src));
        }
    })
}

/// [`per_gib`] of copying `src` into `dst`, and of its CRC-32C: the two
/// baselines of every throughput section.
fn memcpy_and_crc(src: &[u8], dst: &mut [u8]) -> (Duration, Duration) {
    let tm = per_gib(src, |s| {
        dst.copy_from_slice(s);
        black_box(&*dst);
    });
    let tc = per_gib(src, |s| {
        black_box(ChecksumAlgorithm::Crc32c.of(s));
    });
    (tm, tc)
}

fn checksum_throughput() {
    println!("\n### Checksum throughput (one thread, in memory)\n");
    println!(
        "| input | memcpy GB/s | CRC-32C GB/s | XXH3-64 GB/s | memcpy + CRC-32C, 256 KiB pieces GB/s | CRC-32C / memcpy | XXH3-64 / memcpy | CRC-32C / XXH3-64 |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let gib = 1usize << 30;
    for (label, len) in THROUGHPUT_INPUTS {
        let src = pattern(len);
        let mut dst = vec![0u8; len];
        let reps = gib / len;
        let runs = 5;
        let (tm, tc) = memcpy_and_crc(&src, &mut dst);
        let tx = per_gib(&src, |s| {
            black_box(xxhash_rust::xxh3::xxh3_64(s));
        });
        // What a writer fusing copy and checksum at cache granularity would
        // cost: each piece is checksummed while it is still in cache.
        let tf = median(runs, || {
            for _ in 0..reps {
                let mut crc = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi);
                for (d, s) in dst
                    .chunks_mut(256 << 10)
                    .zip(black_box(&src).chunks(256 << 10))
                {
                    d.copy_from_slice(s);
                    crc.update(s);
                }
                black_box((&dst, crc.finalize()));
            }
        });
        // The runtime's own entry point computes the same value.
        assert_eq!(
            ChecksumAlgorithm::Crc32c.of(&src),
            crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &src)
        );
        let gbps = |d: Duration| gib as f64 / d.as_secs_f64() / 1e9;
        println!(
            "| {label} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            gbps(tm),
            gbps(tc),
            gbps(tx),
            gbps(tf),
            tm.as_secs_f64() / tc.as_secs_f64(),
            tm.as_secs_f64() / tx.as_secs_f64(),
            tx.as_secs_f64() / tc.as_secs_f64(),
        );
    }
}

/// Cryptographic digests a tamper-evident file could commit to per buffer,
/// against memcpy and the CRC-32C the writer computes now: one thread, the
/// writer's and a verifying reader's case, and BLAKE3 on every core.
fn digest_throughput() {
    use sha2::Digest;
    println!("\n### Digest throughput (in memory)\n");
    println!(
        "| input | memcpy GB/s | CRC-32C GB/s | BLAKE3 GB/s | BLAKE3, {} threads GB/s | SHA-256 GB/s | BLAKE3 / memcpy | SHA-256 / memcpy | BLAKE3 / SHA-256 |",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let gib = 1usize << 30;
    for (label, len) in THROUGHPUT_INPUTS {
        let src = pattern(len);
        let mut dst = vec![0u8; len];
        let (tm, tc) = memcpy_and_crc(&src, &mut dst);
        let tb = per_gib(&src, |s| {
            black_box(blake3::hash(s));
        });
        let tbp = per_gib(&src, |s| {
            black_box(blake3::Hasher::new().update_rayon(s).finalize());
        });
        let ts = per_gib(&src, |s| {
            black_box(sha2::Sha256::digest(s));
        });
        let gbps = |d: Duration| gib as f64 / d.as_secs_f64() / 1e9;
        println!(
            "| {label} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            gbps(tm),
            gbps(tc),
            gbps(tb),
            gbps(tbp),
            gbps(ts),
            tm.as_secs_f64() / tb.as_secs_f64(),
            tm.as_secs_f64() / ts.as_secs_f64(),
            ts.as_secs_f64() / tb.as_secs_f64(),
        );
    }
}

fn open_by_file_size() {
    println!("\n### Open (mmap + verify) by file size, 100 tensors\n");
    let dir = tempfile::tempdir().unwrap();
    println!("| data size | File::open |");
    println!("|---:|---:|");
    for (label, per) in [("1 MiB", 10_486usize), ("4.3 GB", 42_949_672)] {
        let path = dir.path().join(format!("{per}.hurray"));
        {
            // Real files through the real writer (the large one costs 4.3 GB of disk briefly).
            let mut w = Writer::create(&path).unwrap();
            let zeros = vec![0u8; per];
            for n in names(100) {
                w.add_tensor(
                    &TensorDescriptor::new(n.as_str(), ElementType::UInt8, shape(&[per as u64])),
                    &[&zeros],
                )
                .unwrap();
            }
            w.finish().unwrap();
        }
        let t = median(101, || {
            black_box(File::open(&path).unwrap());
        });
        println!("| {label} | {:.1} µs |", ns(t) / 1e3);
    }
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: keep that fast.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    let filters: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let sections: [(&str, fn()); 6] = [
        ("open", open_and_lookup),
        ("write", write_1gib),
        ("write-file", write_1gib_file),
        ("checksum", checksum_throughput),
        ("digest", digest_throughput),
        ("open-by-size", open_by_file_size),
    ];
    for (name, run) in sections {
        if filters.is_empty() || filters.iter().any(|f| name.contains(f)) {
            run();
        }
    }
}
