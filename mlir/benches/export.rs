//! `hurray-export-constants` throughput, measured in the same run against
//! memcpy of the same bytes, exporting into a pre-faulted buffer
//! (`export_constants_into`); and exporting to a file (what the pass does)
//! against the physical limit of that: the same bytes written to a new file
//! in the same directory, fsynced and renamed into place (the runtime's
//! `AtomicFile`, which the export writes through too).
//!
//! Modules of `HURRAY_BENCH_MIB` MiB (default 256) of f32 weights, 4 MiB per
//! constant, as `dense<...>` and as `dense_resource` blobs; each run exports
//! a freshly built module (building is not timed). Files go to
//! `HURRAY_BENCH_DIR` (default: the system temp directory).
//!
//!     cargo bench -p hurray-mlir --bench export

mod common;

use common::{
    CHUNK_BYTES, RUNS, dense_module, gib_s, median, resource_module, sources, time_memcpy,
};
use hurray_mlir::Mlir;
use hurray_mlir::passes::{ExportOptions, export_constants, export_constants_into};
use melior::ir::Module;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

fn time_export(mut module: Module<'_>, path: &Path) -> Duration {
    let options = ExportOptions::new(path);
    let t = Instant::now();
    let exported = export_constants(module.as_operation_mut(), &options).expect("export");
    let d = t.elapsed();
    assert!(!exported.references.is_empty());
    d
}

fn time_export_into(mut module: Module<'_>, out: &mut Vec<u8>, checksums: bool) -> Duration {
    out.clear();
    let options = ExportOptions::new("weights.hurray").checksums(checksums);
    let t = Instant::now();
    let exported =
        export_constants_into(module.as_operation_mut(), &mut *out, &options).expect("export");
    let d = t.elapsed();
    assert_eq!(exported.lowered.file_len as usize, out.len());
    std::hint::black_box(&out);
    d
}

fn time_file_write(src: &[Vec<u8>], path: &Path) -> Duration {
    let t = Instant::now();
    let mut f = hurray::atomic::AtomicFile::create(path).unwrap();
    for s in src {
        f.write_all(s).unwrap();
    }
    f.commit().unwrap();
    t.elapsed()
}

fn main() {
    let mib: usize = std::env::var("HURRAY_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let dir = std::env::var_os("HURRAY_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(std::env::temp_dir);
    let chunks = (mib << 20).div_ceil(CHUNK_BYTES).max(1);
    let total = chunks * CHUNK_BYTES;
    println!(
        "hurray-export-constants benchmark: {chunks} constants x 4 MiB = {} MiB into {}, median of {RUNS}",
        total >> 20,
        dir.display()
    );
    let src = sources(chunks);
    let mut dst = vec![1u8; total];
    let peer = dir.join("hurray-bench-peer.bin");
    let out = dir.join("hurray-bench-export.hurray");

    let mut buffer: Vec<u8> = Vec::with_capacity(total + (16 << 20));
    buffer.resize(buffer.capacity(), 1); // pre-fault

    let mlir = Mlir::new().unwrap();
    let [mut m, mut w, mut d, mut r, mut dm, mut rm, mut dn] = std::array::from_fn(|_| Vec::new());
    for _ in 0..RUNS {
        m.push(time_memcpy(&src, &mut dst));
        dm.push(time_export_into(
            dense_module(&mlir, &src, "f32", 4),
            &mut buffer,
            true,
        ));
        rm.push(time_export_into(
            resource_module(&mlir, &src),
            &mut buffer,
            true,
        ));
        dn.push(time_export_into(
            dense_module(&mlir, &src, "f32", 4),
            &mut buffer,
            false,
        ));
        w.push(time_file_write(&src, &peer));
        d.push(time_export(dense_module(&mlir, &src, "f32", 4), &out));
        r.push(time_export(resource_module(&mlir, &src), &out));
    }
    let _ = std::fs::remove_file(&peer);
    let _ = std::fs::remove_file(&out);
    let (m, w) = (median(m), median(w));
    let (base, write) = (gib_s(total, m), gib_s(total, w));
    println!(
        "  memcpy                      {:>8.1} ms  {:>6.2} GiB/s",
        m.as_secs_f64() * 1e3,
        base
    );
    println!(
        "  write + fsync + rename      {:>8.1} ms  {:>6.2} GiB/s  ratio to memcpy {:.2}",
        w.as_secs_f64() * 1e3,
        write,
        write / base
    );
    for (label, t, peer, peer_gib_s) in [
        ("dense<...> into memory", median(dm), "memcpy", base),
        ("dense_resource into memory", median(rm), "memcpy", base),
        ("dense<...>, no checksums", median(dn), "memcpy", base),
        ("dense<...> to a file", median(d), "write", write),
        ("dense_resource to a file", median(r), "write", write),
    ] {
        let g = gib_s(total, t);
        println!(
            "  {label:<27} {:>8.1} ms  {:>6.2} GiB/s  ratio to {peer} {:.2}",
            t.as_secs_f64() * 1e3,
            g,
            g / peer_gib_s
        );
    }
}
