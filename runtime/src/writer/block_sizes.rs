//! Which size of write a stream gets next: a 1 MiB block, or a pair of
//! blocks (2 MiB at a 2 MiB offset), chosen from what each has cost.
//!
//! Why two sizes: a file's page cache is made of folios as large as the
//! writes that filled it. A pair fills a 2 MiB folio, which a reader maps
//! with one huge-page entry: a warm load of a file written in pairs touched
//! its pages about 2x faster than one written in single blocks (4-6 ms
//! against 8-11 ms for 1 GiB; docs/head-to-head.md). But a 2 MiB folio
//! needs a free 2 MiB block, and a virtual machine that reports free memory
//! to its host (free page reporting, from 2 MiB blocks up) has given those
//! back: every 2 MiB folio then faults its memory in from the host, and a
//! 1 GiB save in pairs took 1.6-1.7 s where single blocks, cut from free
//! 1 MiB blocks that are never reported, took 0.3-0.4 s. Whether that is
//! so depends on the machine and on the moment (on the same machine, once
//! its free 1 MiB blocks were used up, single blocks cost as much as
//! pairs), so it is measured as the file is written:
//!
//! - the size in use costs the lower median of its last [`RECENT`]
//!   writes, so one slow write among cheap ones (a stall) does not turn
//!   the choice and two in a row do;
//! - pairs are written while they cost at most [`PAIR_COST_MAX`] times
//!   what single blocks cost per byte, single blocks otherwise;
//! - the first file of a process starts with a pair and two single blocks,
//!   to learn both costs; a later file starts from what the last one
//!   learnt;
//! - the size not in use is tried again (one pair, or two single blocks)
//!   after [`PROBE_FIRST`] bytes, then after twice as many each time it
//!   loses, up to [`PROBE_MAX`], counted across the files of the process;
//!   and first thing in a file when the last try is older than
//!   [`PROBE_AGE`] (a long-lived process saving every few minutes meets
//!   other memory each time).
//!
//! What that costs, measured in a long-lived process saving 1 GiB again
//! and again, each file deleted after (docs/performance.md): where pairs
//! are dear, a pair costs 2-3 ns per byte against 0.23-0.27 ns for a single
//! block, so each try of a pair adds about 5 ms to a save of about 300 ms;
//! the same machine, minutes later, wrote pairs and single blocks at the
//! same cost (0.23-0.29 ns), but for about one pair in a hundred that took
//! 2-5 ns, once.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The single block: the largest folio smaller than a huge page.
pub(super) const BLOCK: usize = 1 << 20;

/// A pair of blocks, written whole at a multiple of its size: a huge page.
pub(super) const PAIR: usize = 2 * BLOCK;

/// How much more per byte a pair may cost than a single block and still be
/// written: its folio halves the cost of every later warm load's page
/// walk, so a little more at the write is worth it; several times more is
/// the host faulting memory in, which is not.
const PAIR_COST_MAX: f64 = 2.0;

/// Bytes written in one size before the other is tried again (doubled
/// each time the other loses, up to [`PROBE_MAX`]).
const PROBE_FIRST: u64 = 256 << 20;
const PROBE_MAX: u64 = 1 << 30;

/// How old the last try of the size not in use may be when a file starts
/// before the file tries it first: free page reporting gives a freed 2 MiB
/// block back to the host about 2 s after it was freed, so what was
/// measured longer ago may no longer hold.
const PROBE_AGE: Duration = Duration::from_secs(2);

/// How many of its latest writes a size's cost is taken from.
const RECENT: usize = 3;

/// What the last file written in this process learnt.
static LAST: Mutex<Option<BlockSizes>> = Mutex::new(None);

/// The cost per byte of a size's latest writes, at most [`RECENT`] of them.
#[derive(Debug, Clone, Default)]
struct Costs {
    /// Nanoseconds per byte, oldest first.
    latest: Vec<f64>,
}

impl Costs {
    fn push(&mut self, per_byte: f64) {
        if self.latest.len() == RECENT {
            self.latest.remove(0);
        }
        self.latest.push(per_byte);
    }

    /// The lower median of the latest writes (the cheaper of two, the
    /// second of three): what most of them cost, one outlier aside. `None`
    /// before the first.
    fn cost(&self) -> Option<f64> {
        let mut sorted = self.latest.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len().saturating_sub(1) / 2).copied()
    }
}

/// The costs seen so far and the size in use.
#[derive(Debug, Clone)]
pub(super) struct BlockSizes {
    pairs: bool,
    single: Costs,
    pair: Costs,
    /// Bytes written since the size not in use was last tried, and after
    /// how many it is tried again; when it was last tried.
    since_probe: u64,
    probe_every: u64,
    probed_at: Option<Instant>,
    /// A try of one size under way (learning it, or a probe of the size
    /// not in use): that size, and the bytes of it still to write.
    trying: Option<(bool, u64)>,
}

impl BlockSizes {
    /// Starts from what the last file of this process learnt (trying the
    /// size not in use first when its last try is [`PROBE_AGE`] old), or,
    /// in the first, from learning both.
    pub(super) fn new() -> Self {
        let last = LAST.lock().map(|l| l.clone()).unwrap_or_default();
        BlockSizes::after(last, Instant::now())
    }

    /// Starts, at `now`, from what `last` learnt (see [`new`](Self::new)).
    fn after(last: Option<BlockSizes>, now: Instant) -> Self {
        match last {
            Some(last) => {
                let stale = last
                    .probed_at
                    .is_none_or(|at| now.saturating_duration_since(at) >= PROBE_AGE);
                BlockSizes {
                    since_probe: if stale {
                        last.probe_every
                    } else {
                        last.since_probe
                    },
                    trying: None,
                    ..last
                }
            }
            None => BlockSizes::learning(),
        }
    }

    /// Knowing nothing yet (also what a writer that stages nothing holds:
    /// no look at what the last file learnt).
    pub(super) fn learning() -> Self {
        BlockSizes {
            pairs: true,
            single: Costs::default(),
            pair: Costs::default(),
            since_probe: 0,
            probe_every: PROBE_FIRST,
            probed_at: None,
            trying: None,
        }
    }

    /// Leaves what this file learnt to the next file of the process.
    pub(super) fn keep(&self) {
        if let Ok(mut last) = LAST.lock() {
            *last = Some(self.clone());
        }
    }

    /// The size of the next write, which starts at `at` (a multiple of
    /// [`BLOCK`]).
    pub(super) fn next(&mut self, at: u64) -> usize {
        self.next_at(at, Instant::now())
    }

    /// [`next`](Self::next) at `now`: the clock is an argument so that the
    /// tests' schedules do not turn on how fast the machine runs them.
    fn next_at(&mut self, at: u64, now: Instant) -> usize {
        if !at.is_multiple_of(PAIR as u64) {
            // The second half of a pair's place: only a single block fits.
            return BLOCK;
        }
        if self.trying.is_none() {
            // Learn each size's cost first (pairs, then single blocks),
            // then keep to the cheaper but for a probe of the other now
            // and then, which starts its costs anew (what it cost before
            // may be long out of date).
            let start = if self.pair.latest.is_empty() {
                Some(true)
            } else if self.single.latest.is_empty() {
                Some(false)
            } else if self.since_probe >= self.probe_every {
                Some(!self.pairs)
            } else {
                None
            };
            if let Some(pairs) = start {
                *self.costs(pairs) = Costs::default();
                self.trying = Some((pairs, PAIR as u64));
                if pairs != self.pairs {
                    self.since_probe = 0;
                    self.probed_at = Some(now);
                }
            }
        }
        match self.trying.map_or(self.pairs, |(pairs, _)| pairs) {
            true => PAIR,
            false => BLOCK,
        }
    }

    fn costs(&mut self, pairs: bool) -> &mut Costs {
        if pairs {
            &mut self.pair
        } else {
            &mut self.single
        }
    }

    /// Records that a write of `len` bytes (one [`next`](Self::next) gave)
    /// took `took`, and chooses the size of the writes to come.
    pub(super) fn record(&mut self, len: usize, took: Duration) {
        let is_pair = len == PAIR;
        self.costs(is_pair)
            .push(took.as_nanos() as f64 / len as f64);
        self.since_probe += len as u64;
        let probe_ended = match &mut self.trying {
            Some((_, left)) => {
                *left = left.saturating_sub(len as u64);
                if *left > 0 {
                    return;
                }
                self.trying = None;
                true
            }
            None => false,
        };
        if let (Some(single), Some(pair)) = (self.single.cost(), self.pair.cost()) {
            let pairs = pair <= single * PAIR_COST_MAX;
            if probe_ended && is_pair != self.pairs && pairs == self.pairs {
                // The size tried lost: try it less often.
                self.probe_every = (self.probe_every * 2).min(PROBE_MAX);
            }
            self.pairs = pairs;
        }
    }

    /// Whether pairs are the size in use.
    #[cfg(test)]
    pub(super) fn pairs(&self) -> bool {
        self.pairs
    }
}

/// Whether every one of `writes` (lengths, in order from the start of the
/// output) is a block or a pair at a multiple of its own size: what the
/// writer's and the staging's tests check of a stream's writes.
#[cfg(test)]
pub(super) fn whole_and_aligned(writes: &[usize]) -> bool {
    let mut at = 0;
    writes.iter().all(|&n| {
        let ok = (n == BLOCK || n == PAIR) && at % n == 0;
        at += n;
        ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The moment every test's writes happen at: a fixed clock, so that no
    /// schedule depends on how long the test takes (under Miri, seconds).
    fn start() -> Instant {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *START.get_or_init(Instant::now)
    }

    /// Writes `bytes` at costs per byte given by `cost(len)`, all at
    /// [`start`], and returns the sizes written.
    fn write(s: &mut BlockSizes, bytes: u64, mut cost: impl FnMut(usize) -> u64) -> Vec<usize> {
        let (mut at, mut sizes) = (0u64, Vec::new());
        while at < bytes {
            let len = s.next_at(at, start());
            s.record(len, Duration::from_nanos(cost(len) * len as u64));
            sizes.push(len);
            at += len as u64;
        }
        sizes
    }

    fn fresh() -> BlockSizes {
        BlockSizes::learning()
    }

    /// The number of writes of `size` in `sizes`.
    fn count(sizes: &[usize], size: usize) -> usize {
        sizes.iter().filter(|&&n| n == size).count()
    }

    /// Where a pair costs what two blocks do, the file is written in pairs
    /// but for the blocks that measure single blocks and the probes.
    #[test]
    fn pairs_while_they_cost_no_more() {
        let mut s = fresh();
        let sizes = write(&mut s, 1 << 30, |_| 1);
        assert!(s.pairs());
        assert!(whole_and_aligned(&sizes));
        assert_eq!(sizes[..3], [PAIR, BLOCK, BLOCK]);
        // 2 to learn, then 2 per probe: after 256 MiB, then 512 more.
        let singles = count(&sizes, BLOCK);
        assert!(singles <= 6, "{singles} single blocks");
    }

    /// Where a pair costs several times more per byte, the file is written
    /// in single blocks but for the pairs that try again, fewer and fewer.
    #[test]
    fn single_blocks_when_pairs_cost_more() {
        let mut s = fresh();
        let sizes = write(&mut s, 1 << 30, dear_pairs);
        assert!(!s.pairs());
        assert!(whole_and_aligned(&sizes));
        let pairs = count(&sizes, PAIR);
        // 1 to learn, then 1 per probe: after 256 MiB, then 512 more.
        assert!((1..=3).contains(&pairs), "{pairs} pairs");
        assert_eq!(sizes[..3], [PAIR, BLOCK, BLOCK]);
    }

    /// One slow pair among cheap ones (a stall) leaves pairs in use; two
    /// in a row (the host faulting their memory in from now on) do not.
    #[test]
    fn one_slow_write_does_not_turn_the_choice() {
        let mut s = fresh();
        write(&mut s, 64 << 20, |_| 1);
        assert!(s.pairs());
        s.record(PAIR, Duration::from_nanos(10 * PAIR as u64));
        assert!(s.pairs(), "one slow pair");
        write(&mut s, 64 << 20, |_| 1);
        for _ in 0..2 {
            assert!(s.pairs());
            assert_eq!(s.next_at(0, start()), PAIR);
            s.record(PAIR, Duration::from_nanos(10 * PAIR as u64));
        }
        assert!(!s.pairs(), "two slow pairs in a row");
    }

    /// Pairs at five times a block's cost per byte.
    fn dear_pairs(n: usize) -> u64 {
        if n == PAIR { 5 } else { 1 }
    }

    /// What a first file where pairs were dear leaves to a file started a
    /// while later (past [`PROBE_AGE`]).
    fn after_dear_pairs() -> BlockSizes {
        let mut first = fresh();
        write(&mut first, 64 << 20, dear_pairs);
        assert!(!first.pairs());
        BlockSizes::after(Some(first), later())
    }

    /// A probe won by a cheap pair where pairs now cost more is undone by
    /// the next two pairs.
    #[test]
    fn a_probe_won_by_chance_is_undone() {
        let mut next = after_dear_pairs();
        let mut pairs_seen = 0;
        let sizes = write(&mut next, 64 << 20, |n| {
            if n == PAIR {
                pairs_seen += 1;
                // Only the probe's pair is cheap.
                if pairs_seen == 1 { 1 } else { 5 }
            } else {
                1
            }
        });
        assert!(!next.pairs(), "back to single blocks {sizes:?}");
        assert_eq!(sizes[..3], [PAIR, PAIR, PAIR], "{sizes:?}");
        assert_eq!(count(&sizes, PAIR), 3, "{sizes:?}");
    }

    /// When pairs get cheap in the middle of a file (memory freed), the
    /// next probe finds it and the rest is written in pairs.
    #[test]
    fn follows_a_change_of_cost() {
        let mut s = fresh();
        let expensive = std::cell::Cell::new(true);
        let mut at = 0u64;
        let mut sizes = Vec::new();
        while at < 1 << 30 {
            if at >= 256 << 20 {
                expensive.set(false);
            }
            let len = s.next_at(at, start());
            let per = if len == PAIR && expensive.get() { 5 } else { 1 };
            s.record(len, Duration::from_nanos(per * len as u64));
            sizes.push((at, len));
            at += len as u64;
        }
        assert!(s.pairs());
        let last_single = sizes.iter().rev().find(|(_, n)| *n == BLOCK).unwrap().0;
        assert!(last_single < 768 << 20, "single blocks up to {last_single}");
    }

    /// A moment past [`PROBE_AGE`] after [`start`].
    fn later() -> Instant {
        start() + PROBE_AGE + Duration::from_millis(1)
    }

    /// A file started a while after the last try, by a process whose last
    /// file chose single blocks, tries a pair first, then keeps to single
    /// blocks while pairs still cost more; and takes pairs at once when
    /// they are cheap again.
    #[test]
    fn a_later_file_tries_the_other_size_first() {
        let mut next = after_dear_pairs();
        let sizes = write(&mut next, 64 << 20, dear_pairs);
        assert_eq!(sizes[0], PAIR, "the size not in use, tried first");
        assert!(sizes[1..].iter().all(|&n| n == BLOCK), "{sizes:?}");
        let mut again = BlockSizes::after(Some(next), later());
        let sizes = write(&mut again, 64 << 20, |_| 1);
        assert!(again.pairs(), "pairs cheap again: taken at once");
        assert_eq!(count(&sizes, BLOCK), 0, "{sizes:?}");
    }

    /// Files saved one right after another (within [`PROBE_AGE`]) keep to
    /// the schedule of tries the process has: no try at each file's start.
    #[test]
    fn files_in_quick_succession_share_one_schedule() {
        let mut s = fresh();
        write(&mut s, 64 << 20, dear_pairs);
        let mut pairs = 0;
        for _ in 0..8 {
            let mut next = BlockSizes::after(Some(s), start());
            pairs += count(&write(&mut next, 64 << 20, dear_pairs), PAIR);
            s = next;
        }
        // 512 MiB in 8 files: one try, after the first 256 MiB.
        assert_eq!(pairs, 1);
        assert!(!s.pairs());
    }
}
