//! What the bench binaries share.

use std::time::{Duration, Instant};

/// Median wall time of `f` over `runs` runs (after one warm-up run).
pub(crate) fn median(runs: usize, f: impl FnMut()) -> Duration {
    median_batched(runs, 1, f)
}

/// Median wall time of one call of `f`, each of the `runs` samples timing
/// `batch` calls in a row: for calls of a microsecond or less, whose
/// reading of the clock (tens of nanoseconds here) would otherwise be part
/// of what is measured.
pub(crate) fn median_batched(runs: usize, batch: usize, mut f: impl FnMut()) -> Duration {
    f();
    let batch = batch.max(1);
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            t.elapsed() / batch as u32
        })
        .collect();
    times.sort();
    times[runs / 2]
}

/// The medians of [`median_batched`] for `f` and `g`, their samples
/// taken in turn: a ratio of the two then compares them over the same
/// stretch of time, where timing one after the other would let a slower
/// or faster spell of the machine fall on one side only.
// Each bench binary compiles this module; not every one compares two sides.
#[allow(dead_code)]
pub(crate) fn median_pair(
    runs: usize,
    batch: usize,
    mut f: impl FnMut(),
    mut g: impl FnMut(),
) -> (Duration, Duration) {
    f();
    g();
    let batch = batch.max(1);
    let sample = |h: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..batch {
            h();
        }
        t.elapsed() / batch as u32
    };
    let (mut tf, mut tg): (Vec<Duration>, Vec<Duration>) =
        (0..runs).map(|_| (sample(&mut f), sample(&mut g))).unzip();
    tf.sort();
    tg.sort();
    (tf[runs / 2], tg[runs / 2])
}

/// The size of a bench's file in MiB: `HURRAY_BENCH_MIB`, else 1024.
#[allow(dead_code)] // not every bench binary reads files
pub(crate) fn bench_mib() -> usize {
    std::env::var("HURRAY_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

/// Where a bench writes its files: `HURRAY_BENCH_DIR`, else the system
/// temp directory (it must be on a real disk for the page cache to matter).
#[allow(dead_code)] // not every bench binary reads files
pub(crate) fn bench_dir() -> std::path::PathBuf {
    std::env::var_os("HURRAY_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(std::env::temp_dir)
}
