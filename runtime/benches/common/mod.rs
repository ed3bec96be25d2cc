//! What the bench binaries share.

use std::time::{Duration, Instant};

/// Median wall time of `f` over `runs` runs (after one warm-up run).
pub(crate) fn median(runs: usize, mut f: impl FnMut()) -> Duration {
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
