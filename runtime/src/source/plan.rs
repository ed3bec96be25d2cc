//! Turning many positioned reads into few requests: the plan a back end
//! whose requests are expensive (an object store's range GETs) follows.

use super::ReadRequest;
use std::ops::Range;

/// One request of a plan: a range of the object, and the reads it fills.
#[derive(Debug)]
pub struct Coalesced<'b> {
    pub range: Range<u64>,
    pub parts: Vec<ReadRequest<'b>>,
}

impl Coalesced<'_> {
    /// Copies the bytes fetched for [`range`](Self::range) into every part;
    /// fewer bytes than the range is [`std::io::ErrorKind::UnexpectedEof`].
    pub fn fill(&mut self, fetched: &[u8]) -> std::io::Result<()> {
        self.fill_piece(0, fetched)?;
        self.filled(fetched.len() as u64)
    }

    /// Copies `piece`, the fetched bytes from `at` bytes into
    /// [`range`](Self::range), into the parts it overlaps: how a response
    /// is copied as it streams in, each chunk straight to where it goes,
    /// with no buffer of the whole range in between. More bytes than the
    /// range is an error.
    pub fn fill_piece(&mut self, at: u64, piece: &[u8]) -> std::io::Result<()> {
        let len = self.range.end - self.range.start;
        let end = at.saturating_add(piece.len() as u64);
        if end > len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "asked for bytes {}..{}, got more than {len} bytes",
                    self.range.start, self.range.end
                ),
            ));
        }
        for part in &mut self.parts {
            // Every part lies inside the range (built so by `coalesce`).
            let start = part.offset - self.range.start;
            let (from, to) = (start.max(at), (start + part.buf.len() as u64).min(end));
            if from < to {
                let (from, to) = ((from - start) as usize, (to - start) as usize);
                let src = (start + from as u64 - at) as usize;
                part.buf[from..to].copy_from_slice(&piece[src..src + (to - from)]);
            }
        }
        Ok(())
    }

    /// Checks that `got` bytes, all fetched for [`range`](Self::range), are
    /// all of it: fewer is [`std::io::ErrorKind::UnexpectedEof`].
    pub fn filled(&self, got: u64) -> std::io::Result<()> {
        if got != self.range.end - self.range.start {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "asked for bytes {}..{}, got {got} bytes",
                    self.range.start, self.range.end
                ),
            ));
        }
        Ok(())
    }
}

/// Plans `requests` as few requests as possible: cut into parts of at most
/// `max_len` bytes (so one large tensor is fetched by several requests at
/// once), sorted by offset, and neighbours at most `max_gap` bytes apart
/// joined while the joined request stays within `max_len`. The gap bytes are
/// fetched and dropped: alignment padding between a tensor's buffers, or
/// between small tensors, costs less than another request.
pub fn coalesce<'b>(
    requests: &'b mut [ReadRequest<'_>],
    max_gap: u64,
    max_len: usize,
) -> Vec<Coalesced<'b>> {
    let max_len = max_len.max(1);
    let mut parts: Vec<ReadRequest<'b>> = Vec::new();
    for r in requests.iter_mut() {
        let mut offset = r.offset;
        for buf in r.buf.chunks_mut(max_len) {
            let len = buf.len() as u64;
            parts.push(ReadRequest { offset, buf });
            offset += len;
        }
    }
    parts.sort_by_key(|p| p.offset);
    let mut plan: Vec<Coalesced<'b>> = Vec::new();
    for part in parts {
        let range = part.range();
        if let Some(last) = plan.last_mut()
            && range.start >= last.range.end
            && range.start - last.range.end <= max_gap
            && range.end - last.range.start <= max_len as u64
        {
            last.range.end = range.end;
            last.parts.push(part);
            continue;
        }
        plan.push(Coalesced {
            range,
            parts: vec![part],
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_join_large_reads_split_overlaps_stay_apart() {
        let mut a = vec![0u8; 10];
        let mut b = vec![0u8; 6];
        let mut c = vec![0u8; 25];
        let mut d = vec![0u8; 4];
        let mut requests = [
            ReadRequest {
                offset: 100,
                buf: &mut c,
            },
            ReadRequest {
                offset: 0,
                buf: &mut a,
            },
            ReadRequest {
                offset: 12,
                buf: &mut b,
            },
            ReadRequest {
                offset: 14,
                buf: &mut d,
            },
        ];
        let plan = coalesce(&mut requests, 4, 20);
        let ranges: Vec<_> = plan.iter().map(|c| c.range.clone()).collect();
        // a and b join over a 2-byte gap; d overlaps b, so it starts anew;
        // c is cut at 20 bytes.
        assert_eq!(ranges, [0..18, 14..18, 100..120, 120..125]);
        let object: Vec<u8> = (0..=255).collect();
        for mut c in plan {
            let r = c.range.start as usize..c.range.end as usize;
            c.fill(&object[r.clone()]).unwrap();
            assert!(c.fill(&object[r.start..r.end - 1]).is_err());
        }
        assert_eq!(a, (0..10).collect::<Vec<u8>>());
        assert_eq!(b, (12..18).collect::<Vec<u8>>());
        assert_eq!(c, (100..125).collect::<Vec<u8>>());
        assert_eq!(d, (14..18).collect::<Vec<u8>>());
    }

    /// A response copied chunk by chunk, at any cut, fills the parts as the
    /// whole response does; a chunk past the range's end is an error.
    #[test]
    fn a_response_streams_into_the_parts_at_any_cut() {
        let object: Vec<u8> = (0..=255).collect();
        for cut in [1, 2, 3, 5, 7, 16, 40] {
            let (mut a, mut b, mut c) = (vec![0u8; 10], vec![0u8; 6], vec![0u8; 3]);
            let mut requests = [
                ReadRequest {
                    offset: 3,
                    buf: &mut a,
                },
                ReadRequest {
                    offset: 15,
                    buf: &mut b,
                },
                ReadRequest {
                    offset: 22,
                    buf: &mut c,
                },
            ];
            let mut plan = coalesce(&mut requests, 8, 64);
            assert_eq!(plan.len(), 1);
            let whole = &object[3..25];
            let mut at = 0;
            for chunk in whole.chunks(cut) {
                plan[0].fill_piece(at, chunk).unwrap();
                at += chunk.len() as u64;
            }
            plan[0].filled(at).unwrap();
            assert!(plan[0].filled(at - 1).is_err());
            assert!(plan[0].fill_piece(at, &[0]).is_err(), "past the end");
            drop(plan);
            assert_eq!(a, &object[3..13], "cut {cut}");
            assert_eq!(b, &object[15..21], "cut {cut}");
            assert_eq!(c, &object[22..25], "cut {cut}");
        }
    }

    #[test]
    fn empty_reads_plan_nothing() {
        assert!(coalesce(&mut [], 0, 8).is_empty());
        let mut e: [u8; 0] = [];
        let mut r = [ReadRequest {
            offset: 5,
            buf: &mut e,
        }];
        assert!(coalesce(&mut r, 0, 8).is_empty());
    }
}
