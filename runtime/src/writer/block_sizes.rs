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
//! - pairs are written while they cost at most [`PAIR_COST_MAX`] times
//!   what single blocks cost per byte, single blocks otherwise;
//! - the first file of a process starts with a pair and two single blocks
//!   to learn both costs; a later file starts from what the last one
//!   learnt, and tries the size not in use with its first write (a
//!   long-lived process saving every few minutes may meet other memory);
//! - the size not in use is tried again after [`PROBE_FIRST`] bytes, then
//!   after twice as many each time it loses, so a machine whose memory
//!   changes while a file is written is followed, at a cost of about
//!   three writes of the dearer size per GiB.

use std::sync::Mutex;
use std::time::Duration;

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

/// What the last file written in this process learnt.
static LAST: Mutex<Option<BlockSizes>> = Mutex::new(None);

/// The costs seen so far and the size in use.
#[derive(Debug, Clone)]
pub(super) struct BlockSizes {
    pairs: bool,
    /// Nanoseconds per byte, a running average of the recent writes of
    /// each size; `None` until one is timed.
    single: Option<f64>,
    pair: Option<f64>,
    /// Bytes written since the size not in use was last tried, and after
    /// how many it is tried again.
    since_probe: u64,
    probe_every: u64,
    /// The single blocks left of a probe of single blocks (two: a pair's
    /// place), written whatever the choice.
    singles_left: u8,
}

impl BlockSizes {
    /// Starts from what the last file of this process learnt (trying the
    /// size not in use first), or, in the first, from a pair and then two
    /// single blocks.
    pub(super) fn new() -> Self {
        BlockSizes::after(LAST.lock().map(|l| l.clone()).unwrap_or_default())
    }

    /// Starts from what `last` learnt (see [`new`](Self::new)).
    fn after(last: Option<BlockSizes>) -> Self {
        match last {
            Some(last) => BlockSizes {
                since_probe: PROBE_FIRST,
                probe_every: PROBE_FIRST,
                singles_left: 0,
                ..last
            },
            None => BlockSizes::learning(),
        }
    }

    /// Knowing nothing yet.
    fn learning() -> Self {
        BlockSizes {
            pairs: true,
            single: None,
            pair: None,
            since_probe: 0,
            probe_every: PROBE_FIRST,
            singles_left: 0,
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
        if !at.is_multiple_of(PAIR as u64) {
            // The second half of a pair's place: only a single block fits.
            return BLOCK;
        }
        if self.singles_left > 0 {
            return BLOCK;
        }
        // Learn each size's cost first (a pair, then two single blocks),
        // then keep to the cheaper but for a probe of the other now and then.
        let pairs = if self.pair.is_none() {
            true
        } else if self.single.is_none() {
            false
        } else if self.since_probe >= self.probe_every {
            !self.pairs
        } else {
            self.pairs
        };
        if pairs != self.pairs {
            self.since_probe = 0;
        }
        if pairs {
            PAIR
        } else {
            // Single blocks fill a pair's place two at a time.
            self.singles_left = 2;
            BLOCK
        }
    }

    /// Records that a write of `len` bytes (one [`next`](Self::next) gave)
    /// took `took`, and chooses the size of the writes to come.
    pub(super) fn record(&mut self, len: usize, took: Duration) {
        let per_byte = took.as_nanos() as f64 / len as f64;
        let is_pair = len == PAIR;
        if !is_pair {
            self.singles_left = self.singles_left.saturating_sub(1);
        }
        let known = self.single.is_some() && self.pair.is_some();
        let in_use = is_pair == self.pairs;
        // A probe of single blocks is two writes; its first starts anew.
        let probe_starts = !in_use && (is_pair || self.singles_left == 1);
        let probe_ends = !in_use && (is_pair || self.singles_left == 0);
        let cost = if is_pair {
            &mut self.pair
        } else {
            &mut self.single
        };
        *cost = Some(match *cost {
            // An average of the recent writes of a size, so one slow write
            // does not turn the choice; but a probe replaces what the size
            // not in use cost before, which may be long out of date.
            Some(c) if !probe_starts => (c + per_byte) / 2.0,
            _ => per_byte,
        });
        self.since_probe += len as u64;
        if let (Some(single), Some(pair)) = (self.single, self.pair) {
            let pairs = pair <= single * PAIR_COST_MAX;
            if known && probe_ends && pairs == self.pairs {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `bytes` at costs per byte given by `cost(len)` and returns the
    /// sizes written.
    fn write(s: &mut BlockSizes, bytes: u64, cost: impl Fn(usize) -> u64) -> Vec<usize> {
        let (mut at, mut sizes) = (0u64, Vec::new());
        while at < bytes {
            let len = s.next(at);
            s.record(len, Duration::from_nanos(cost(len) * len as u64));
            sizes.push(len);
            at += len as u64;
        }
        sizes
    }

    fn fresh() -> BlockSizes {
        BlockSizes::learning()
    }

    /// Every write is whole and at a multiple of its own size.
    fn aligned(sizes: &[usize]) -> bool {
        let mut at = 0;
        sizes.iter().all(|&n| {
            let ok = at % n == 0;
            at += n;
            ok
        })
    }

    /// Where a pair costs what two blocks do, the file is written in pairs
    /// but for the two blocks that measure single blocks and the probes.
    #[test]
    fn pairs_while_they_cost_no_more() {
        let mut s = fresh();
        let sizes = write(&mut s, 1 << 30, |_| 1);
        assert!(s.pairs());
        assert!(aligned(&sizes));
        let singles = sizes.iter().filter(|&&n| n == BLOCK).count();
        assert_eq!(sizes[..3], [PAIR, BLOCK, BLOCK]);
        // 2 to learn, then 2 per probe: after 64, 128, 256 and 512 MiB.
        assert!(singles <= 10, "{singles} single blocks");
    }

    /// Where a pair costs several times more per byte, the file is written
    /// in single blocks but for the pairs that try again, fewer and fewer.
    #[test]
    fn single_blocks_when_pairs_cost_more() {
        let mut s = fresh();
        let sizes = write(&mut s, 1 << 30, |n| if n == PAIR { 5 } else { 1 });
        assert!(!s.pairs());
        assert!(aligned(&sizes));
        let pairs = sizes.iter().filter(|&&n| n == PAIR).count();
        assert!((2..=6).contains(&pairs), "{pairs} pairs");
        assert_eq!(sizes[..3], [PAIR, BLOCK, BLOCK]);
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
            let len = s.next(at);
            let per = if len == PAIR && expensive.get() { 5 } else { 1 };
            s.record(len, Duration::from_nanos(per * len as u64));
            sizes.push((at, len));
            at += len as u64;
        }
        assert!(s.pairs());
        let last_single = sizes.iter().rev().find(|(_, n)| *n == BLOCK).unwrap().0;
        assert!(last_single < 768 << 20, "single blocks up to {last_single}");
    }

    /// A file after one that chose single blocks tries a pair first, then
    /// keeps to single blocks while pairs still cost more.
    #[test]
    fn the_next_file_starts_from_what_the_last_learnt() {
        let mut first = fresh();
        write(&mut first, 64 << 20, |n| if n == PAIR { 5 } else { 1 });
        assert!(!first.pairs());
        let mut next = BlockSizes::after(Some(first));
        let sizes = write(&mut next, 64 << 20, |n| if n == PAIR { 5 } else { 1 });
        assert_eq!(sizes[0], PAIR, "the size not in use, tried first");
        assert!(sizes[1..].iter().all(|&n| n == BLOCK), "{sizes:?}");
        let mut again = BlockSizes::after(Some(next));
        let sizes = write(&mut again, 64 << 20, |_| 1);
        assert!(again.pairs(), "pairs cheap again: taken at once");
        assert_eq!(
            sizes.iter().filter(|&&n| n == BLOCK).count(),
            0,
            "{sizes:?}"
        );
    }
}
