//! Saves in a long-lived process: the writer's unsynced save
//! (`Durability::RenameOnly`, CRC-32C on, as `save_file(..., durable=False)`)
//! repeated in one process, against its limit, a plain `write` of the same
//! bytes in 1 MiB pieces to a new file, in the same loop. The two alternate,
//! each file deleted after its save, as a training loop that checkpoints
//! every N steps and keeps the last checkpoint or two would.
//!
//! What it guards: the cost of the page cache's folios. A file written in
//! 2 MiB aligned pieces gets 2 MiB folios, whose memory a virtual machine
//! that reports free memory to its host may have to fault back in (the
//! first save of a process took 5x the plain write here); the writer
//! writes such pairs only while they cost about what 1 MiB blocks do
//! (`writer/block_sizes.rs`).
//!
//! The state: `HURRAY_BENCH_MIB` MiB (default 1024) of tensors of 7 MiB and
//! 3 KiB each (sizes that are no multiple of a block, as a model's are), in
//! `HURRAY_BENCH_DIR` (default: the system temp directory; a real disk).
//! Reported per case: the first save, the median and the last, and the
//! median over rounds of the plain write's time over the writer's (the
//! writer's fraction of the limit; the first round's too).
//!
//!     cargo bench -p hurray --bench save_loop

#[allow(dead_code)] // the shared helpers this bench does not use
mod common;

use hurray::atomic::Durability;
use hurray::{ElementType, TensorDescriptor, Writer, shape};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

const TENSOR_BYTES: usize = (7 << 20) + (3 << 10);
const ROUNDS: usize = 10;

fn save(path: &Path, tensors: &[(TensorDescriptor, Vec<u8>)]) {
    let mut w = Writer::create_with(path, Durability::RenameOnly).unwrap();
    for (d, bytes) in tensors {
        w.add_tensor(d, &[bytes]).unwrap();
    }
    w.finish().unwrap();
}

fn plain_write(path: &Path, tensors: &[(TensorDescriptor, Vec<u8>)]) {
    let mut f = std::fs::File::create(path).unwrap();
    for (_, bytes) in tensors {
        for piece in bytes.chunks(1 << 20) {
            f.write_all(piece).unwrap();
        }
    }
}

fn main() {
    let mib = common::bench_mib();
    let dir = common::bench_dir();
    let count = (mib << 20).div_ceil(TENSOR_BYTES).max(1);
    let tensors: Vec<(TensorDescriptor, Vec<u8>)> = (0..count)
        .map(|i| {
            let bytes: Vec<u8> = (0..TENSOR_BYTES)
                .map(|j| ((i * 7919 + j) * 31 % 251) as u8)
                .collect();
            let d = TensorDescriptor::new(
                format!("layers.{i}.weight"),
                ElementType::Float32,
                shape(&[(TENSOR_BYTES / 4) as u64]),
            );
            (d, bytes)
        })
        .collect();
    println!(
        "hurray save-loop benchmark: {count} tensors x {:.2} MiB in {}, {ROUNDS} rounds in one process",
        TENSOR_BYTES as f64 / (1 << 20) as f64,
        dir.display()
    );
    let (ours, limit) = (
        dir.join("hurray-bench-save.hurray"),
        dir.join("hurray-bench-save.raw"),
    );
    let (mut saved, mut written) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // Alternate which goes first: the first of a round meets the memory
        // the last one freed.
        for first in [round % 2 == 0, round % 2 == 1] {
            let t = Instant::now();
            if first {
                save(&ours, &tensors);
                saved.push(t.elapsed());
                std::fs::remove_file(&ours).unwrap();
            } else {
                plain_write(&limit, &tensors);
                written.push(t.elapsed());
                std::fs::remove_file(&limit).unwrap();
            }
        }
    }
    let median = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (label, times) in [
        ("writer, unsynced", &saved),
        ("plain write, 1 MiB", &written),
    ] {
        println!(
            "  {label:<20} first {:>8.1} ms  median {:>8.1} ms  last {:>8.1} ms",
            ms(times[0]),
            ms(median(times)),
            ms(times[ROUNDS - 1])
        );
    }
    let mut ratios: Vec<f64> = written
        .iter()
        .zip(&saved)
        .map(|(w, s)| w.as_secs_f64() / s.as_secs_f64())
        .collect();
    let first = ratios[0];
    ratios.sort_by(f64::total_cmp);
    println!(
        "  writer / limit: median {:.2} ({:.2}-{:.2}), first round {first:.2}",
        ratios[ROUNDS / 2],
        ratios[0],
        ratios[ROUNDS - 1]
    );
}
