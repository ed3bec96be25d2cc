//! `File::fetch_all` over a `PreadSource` (pread on N threads into owned
//! aligned memory)
//! against the raw bandwidth of the same file read by a plain sequential
//! `read` loop into one reused 8 MiB buffer, and against `std::fs::read`
//! (the whole file into fresh memory, which the kernel must fault in and
//! zero as it must for `fetch_all`), measured in the same run with a cold
//! page cache: the file's pages are dropped (`posix_fadvise(DONTNEED)`,
//! after an fsync) before every timed read.
//!
//! The file: `HURRAY_BENCH_MIB` MiB (default 1024) of f32 tensors of 16 MiB
//! each, in `HURRAY_BENCH_DIR` (default: the system temp directory; it must
//! be on a real disk for the cache to matter). Tensor names sort in another
//! order than their data (as a model's do), which matters to the last
//! rows: the file mapped and every page read in name order, faulted in
//! through readahead, against `read_all` first (what `load_file` does), and
//! the cold limit of a loader that maps: the map with `MADV_WILLNEED` over
//! all of it (the kernel's readahead of every page asked for at once), then
//! every page read in name order. The last line gives `read_all`'s speed as
//! a fraction of that limit's, round by round.
//!
//! A shared virtual disk's speed drifts between reads by up to 2x, so each
//! case is reported as the median, over the rounds, of its ratio to the
//! sequential loop of the same round (with the range), beside the median
//! time.
//!
//!     cargo bench -p hurray --bench load

#[allow(dead_code)] // the shared helpers this bench does not use
mod common;

use hurray::source::PreadSource;
use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TENSOR_BYTES: usize = 16 << 20;
const RUNS: usize = 7;

/// Drops the file's pages from the page cache.
fn drop_cache(path: &Path) {
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: a valid open descriptor; the call only advises the kernel.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise");
}

fn sequential_read(path: &Path, buf: &mut [u8]) -> u64 {
    let mut f = std::fs::File::open(path).unwrap();
    let mut total = 0u64;
    loop {
        let n = f.read(buf).unwrap();
        if n == 0 {
            return total;
        }
        total += n as u64;
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mib = common::bench_mib();
    let dir = common::bench_dir();
    let path = dir.join("hurray-bench-load.hurray");
    let tensors = (mib << 20).div_ceil(TENSOR_BYTES).max(1);
    // A stride coprime with the count permutes the names.
    let stride = if tensors.is_multiple_of(37) { 1 } else { 37 };
    {
        let mut w = Writer::create(&path).unwrap();
        let data: Vec<u8> = (0..TENSOR_BYTES).map(|i| (i * 31 % 251) as u8).collect();
        for i in 0..tensors {
            // Names in another order than the data, as a model's are
            // (`lm_head` sorts first, `model.layers.10` before `.2`).
            let d = TensorDescriptor::new(
                format!("w{:04}", (i * stride) % tensors),
                ElementType::Float32,
                shape(&[(TENSOR_BYTES / 4) as u64]),
            );
            w.add_tensor(&d, &[&data]).unwrap();
        }
        w.finish().unwrap();
    }
    let len = std::fs::metadata(&path).unwrap().len();
    println!(
        "hurray load benchmark: {tensors} tensors x 16 MiB, file {} MiB in {}, cold cache, median of {RUNS}",
        len >> 20,
        dir.display()
    );
    let mut buf = vec![0u8; 8 << 20];
    let threads = [1usize, 2, 4, 8];
    let mut raw = Vec::new();
    let mut whole = Vec::new();
    let mut loaded: Vec<Vec<Duration>> = vec![Vec::new(); threads.len()];
    let (mut faulted, mut asked, mut willneed) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        drop_cache(&path);
        let t = Instant::now();
        assert_eq!(sequential_read(&path, &mut buf), len);
        raw.push(t.elapsed());
        drop_cache(&path);
        let t = Instant::now();
        assert_eq!(std::fs::read(&path).unwrap().len() as u64, len);
        whole.push(t.elapsed());
        for (i, n) in threads.iter().enumerate() {
            drop_cache(&path);
            let t = Instant::now();
            let source = PreadSource::open(&path).unwrap().with_threads(*n);
            let file = File::open_source(Arc::new(source)).unwrap();
            let all = file.fetch_all().unwrap();
            loaded[i].push(t.elapsed());
            assert_eq!(all.len(), tensors);
        }
        // The map: faulted in by reading every page in name order, or read
        // in first (`read_all`: eight sequential streams, each
        // touching what it read, waited for) and then read in name order.
        for (ask, times) in [(false, &mut faulted), (true, &mut asked)] {
            drop_cache(&path);
            let t = Instant::now();
            let file = File::open(&path).unwrap();
            if ask {
                file.read_all().unwrap();
            }
            assert_eq!(touch(&file), tensors as u64 * TENSOR_BYTES as u64 / 4096);
            times.push(t.elapsed());
        }
        drop_cache(&path);
        let t = Instant::now();
        let pages = willneed_and_touch(&path, &File::open(&path).unwrap());
        willneed.push(t.elapsed());
        assert_eq!(pages, tensors as u64 * TENSOR_BYTES as u64 / 4096);
    }
    let _ = std::fs::remove_file(&path);
    let gib_s = |d: Duration| len as f64 / d.as_secs_f64() / (1u64 << 30) as f64;
    let report = |label: &str, times: &[Duration]| {
        // Per round: the sequential loop's time over this case's time.
        let mut ratios: Vec<f64> = raw
            .iter()
            .zip(times)
            .map(|(r, t)| r.as_secs_f64() / t.as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let t = median(times.to_vec());
        println!(
            "  {label:<36} {:>8.1} ms  {:>6.2} GiB/s  ratio {:.2} ({:.2}-{:.2})",
            t.as_secs_f64() * 1e3,
            gib_s(t),
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    };
    report("sequential read loop (8 MiB reads)", &raw);
    report("std::fs::read (fresh memory)", &whole);
    for (n, times) in threads.iter().zip(&loaded) {
        report(&format!("fetch_all, {n} thread(s)"), times);
    }
    report("map, every page read in name order", &faulted);
    report("map, read_all, every page read", &asked);
    report("limit: map, WILLNEED, every page read", &willneed);
    let mut ratios: Vec<f64> = willneed
        .iter()
        .zip(&asked)
        .map(|(l, a)| l.as_secs_f64() / a.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "  read_all / WILLNEED limit: median {:.2} ({:.2}-{:.2})",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
}

/// The cold limit of a loader that maps: a map of the file at `path` with
/// every page asked for at once (`MADV_WILLNEED`), then one byte of every
/// page of every tensor read in name order (the tensors' offsets taken from
/// `file`, opened before). The count of pages read.
fn willneed_and_touch(path: &Path, file: &File) -> u64 {
    let spans: Vec<(usize, usize)> = file
        .tensors()
        .filter_map(|t| t.buffer_range(hurray::descriptor::BufferRole::Values))
        .map(|(at, len)| (at as usize, len as usize))
        .collect();
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: the bench's own file, which nothing changes while it is mapped.
    let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
    map.advise(memmap2::Advice::WillNeed).unwrap();
    let mut pages = 0;
    for (at, len) in spans {
        for b in map[at..at + len].iter().step_by(4096) {
            std::hint::black_box(*b);
            pages += 1;
        }
    }
    pages
}

/// Reads one byte of every page of every tensor (in name order); the count.
fn touch(file: &File) -> u64 {
    let mut pages = 0;
    for t in file.tensors() {
        for b in t.data().unwrap().iter().step_by(4096) {
            std::hint::black_box(*b);
            pages += 1;
        }
    }
    pages
}
