//! Lowering throughput against memcpy of the same bytes, measured in the same run.
//!
//! Builds modules holding `HURRAY_BENCH_MIB` MiB (default 256) of f32 weights,
//! 4 MiB per constant, as (a) `dense<...>` elements attributes and (b)
//! `dense_resource` blobs, then times `lower_module` into a pre-faulted
//! `Vec<u8>` and a plain memcpy of the same bytes into a pre-faulted buffer.
//! Also times packing i4 dense constants (one byte per element in MLIR, two
//! per byte in the file), over as many MLIR bytes as the f32 cases.
//!
//!     cargo bench -p hurray-mlir --bench lower
//!
//! Prints one line per case with the median of the runs, GiB/s, and the ratio
//! to memcpy (1.0 = memcpy speed). Every case moves the same bytes: a smaller
//! i4 case (a quarter, run four times as often) let its memcpy run from the
//! processor's cache while the lowering read MLIR's copy from memory, and the
//! ratio moved 0.81-0.96 from run to run with which side the cache favoured.

mod common;

use common::{
    CHUNK_BYTES, RUNS, dense_module, gib_s, median, resource_module, sources, time_memcpy,
};
use hurray_mlir::{LowerOptions, Mlir, lower_module};
use melior::ir::Module;
use std::time::{Duration, Instant};

fn time_lowering(module: &Module<'_>, out: &mut Vec<u8>) -> Duration {
    out.clear();
    let t = Instant::now();
    let l = lower_module(module, &mut *out, LowerOptions::default()).expect("lowering");
    let d = t.elapsed();
    assert_eq!(l.file_len as usize, out.len());
    std::hint::black_box(&out);
    d
}

fn main() {
    // `cargo bench` passes `--bench`; accept and ignore arguments.
    let mib: usize = std::env::var("HURRAY_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let chunks = (mib << 20).div_ceil(CHUNK_BYTES).max(1);
    let total = chunks * CHUNK_BYTES;
    println!(
        "hurray-mlir lowering benchmark: {chunks} constants x 4 MiB = {} MiB, median of {RUNS}",
        total >> 20
    );

    let src = sources(chunks);
    let mut dst = vec![1u8; total];
    let mut out: Vec<u8> = Vec::with_capacity(total + (16 << 20));
    out.resize(out.capacity(), 1); // pre-fault
    out.clear();

    let mlir = Mlir::new().unwrap();
    let t = Instant::now();
    let dense = dense_module(&mlir, &src, "f32", 4);
    println!("  built dense module in {:.2} s", t.elapsed().as_secs_f64());
    let resource = resource_module(&mlir, &src);

    let (mut m, mut d, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        m.push(time_memcpy(&src, &mut dst));
        d.push(time_lowering(&dense, &mut out));
        r.push(time_lowering(&resource, &mut out));
    }
    let (m, d, r) = (median(m), median(d), median(r));
    let base = gib_s(total, m);
    println!(
        "  memcpy                     {:>8.1} ms  {:>6.2} GiB/s  ratio 1.00",
        m.as_secs_f64() * 1e3,
        base
    );
    for (label, t) in [("lower dense<...>", d), ("lower dense_resource<...>", r)] {
        let g = gib_s(total, t);
        println!(
            "  {label:<26} {:>8.1} ms  {:>6.2} GiB/s  ratio {:.2}",
            t.as_secs_f64() * 1e3,
            g,
            g / base
        );
    }
    drop(dense);
    drop(resource);

    // Packing: i4 constants stored one byte per element in MLIR, packed 2 per
    // byte by the lowering. Throughput counts the MLIR bytes read.
    let nibbles: Vec<Vec<u8>> = src
        .iter()
        .map(|s| s.iter().map(|b| b & 0x0F).collect())
        .collect();
    let packed_total: usize = nibbles.iter().map(Vec::len).sum();
    let mlir4 = Mlir::new().unwrap();
    let i4 = dense_module(&mlir4, &nibbles, "i4", 1);
    let (mut m4, mut p4) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        m4.push(time_memcpy(&nibbles, &mut dst));
        p4.push(time_lowering(&i4, &mut out));
    }
    let (m4, p4) = (median(m4), median(p4));
    println!(
        "  lower dense<i4> (packing)  {:>8.1} ms  {:>6.2} GiB/s  ratio {:.2}  ({} MiB of MLIR bytes)",
        p4.as_secs_f64() * 1e3,
        gib_s(packed_total, p4),
        gib_s(packed_total, p4) / gib_s(packed_total, m4),
        packed_total >> 20
    );
}
