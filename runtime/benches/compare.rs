//! Hurray against safetensors and memcpy, measured in one run.
//!
//! `cargo bench -p hurray --bench compare` prints a Markdown table of medians
//! and ratios (the numbers in docs/performance.md come from it). A plain bench
//! binary rather than criterion, because the interesting output is the ratio
//! between peers measured side by side, not each one's absolute time.

use hurray::{ElementType, File, Reader, TensorDescriptor, Writer, shape};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Median wall time of `f` over `runs` runs (after one warm-up run).
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

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
        let th = median(runs, || {
            let r = Reader::new(black_box(&h)).unwrap();
            for name in &names {
                black_box(r.get(name).unwrap().data().unwrap());
            }
        });
        let ts = median(runs, || {
            let st = SafeTensors::deserialize(black_box(&s)).unwrap();
            for name in &names {
                black_box(st.tensor(name).unwrap().data());
            }
        });
        let tv = median(runs, || {
            black_box(Reader::new(black_box(&h)).unwrap());
        });
        let r = Reader::new(&h).unwrap();
        let tl = median(runs, || {
            for name in &names {
                black_box(r.get(name).unwrap());
            }
        });
        eprintln!(
            "n={n}: verify {:.0} ns/tensor, look-up {:.0} ns/tensor",
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

fn write_1gib() {
    println!("\n### Write 1 GiB (16 tensors × 64 MiB) into memory\n");
    let per = 64usize << 20;
    let count = 16;
    let data: Vec<u8> = (0..per).map(|i| i as u8).collect();
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
    let th = median(runs, || {
        sink.clear();
        let mut w = Writer::new(&mut sink).unwrap();
        for n in &names {
            w.add_tensor(
                &TensorDescriptor::new(n.as_str(), ElementType::UInt8, shape(&[per as u64])),
                &[&data],
            )
            .unwrap();
        }
        w.finish().unwrap();
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
    let gbps = |d: Duration| total as f64 / d.as_secs_f64() / 1e9;
    println!("| writer | time | GB/s | memcpy / writer time |");
    println!("|---|---:|---:|---:|");
    println!(
        "| memcpy (Vec::extend_from_slice) | {:.0} ms | {:.2} | 1.00 |",
        tm.as_secs_f64() * 1e3,
        gbps(tm)
    );
    println!(
        "| hurray Writer | {:.0} ms | {:.2} | {:.2} |",
        th.as_secs_f64() * 1e3,
        gbps(th),
        tm.as_secs_f64() / th.as_secs_f64()
    );
    println!(
        "| safetensors serialize | {:.0} ms | {:.2} | {:.2} |",
        ts.as_secs_f64() * 1e3,
        gbps(ts),
        tm.as_secs_f64() / ts.as_secs_f64()
    );
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
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    open_and_lookup();
    write_1gib();
    open_by_file_size();
}
