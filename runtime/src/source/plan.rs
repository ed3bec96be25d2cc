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
        if fetched.len() as u64 != self.range.end - self.range.start {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "asked for bytes {}..{}, got {} bytes",
                    self.range.start,
                    self.range.end,
                    fetched.len()
                ),
            ));
        }
        for part in &mut self.parts {
            // Every part lies inside the range (built so by `coalesce`).
            let at = (part.offset - self.range.start) as usize;
            part.buf.copy_from_slice(&fetched[at..at + part.buf.len()]);
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
