//! Where the writer's bytes wait before they reach its `W`.
//!
//! A stream (a file, a socket) gets them in whole blocks: every write it
//! receives, but the last, is a 1 MiB block or a pair of blocks, at a
//! multiple of its own size in the output; which of the two is chosen from
//! what each has cost, for the page cache's folios
//! ([`BlockSizes`](super::block_sizes::BlockSizes) says why). A producer
//! that hands over exactly what completes the staged write
//! ([`Staging::room`]) is written straight from its own memory (one
//! `writev` of the staged bytes and its own), so only the pieces that do not
//! reach a write's end (a tensor's tail, padding, the header) are copied.
//! A `Vec<u8>` written by [`Writer::in_memory`] gets the bytes in place: the
//! vector itself is the buffer, so nothing is copied twice.
//!
//! Either way, a producer that computes its bytes (the packer of sub-byte
//! codes) appends them to [`Staging::appender`], the vector they will stay in
//! until they are written, instead of into a scratch buffer that is then
//! copied: on a 4-bit lowering that second copy cost about a third of the
//! time.
//!
//! [`Writer::in_memory`]: super::Writer::in_memory

use super::block_sizes::{BlockSizes, PAIR};
use std::io::{self, IoSlice, Write};
use std::time::Instant;

/// The most an [`Staging::appender`] may be asked for.
pub(super) const APPEND_MAX: usize = 1 << 20;

/// The writer's output: `W`, and the bytes not yet handed to it.
#[derive(Debug)]
pub(super) struct Staging<W: Write> {
    inner: W,
    /// Stream mode: the bytes of the current write not yet handed to
    /// `inner`, which has received whole writes only. Shorter than the
    /// write between calls, but for what an appender added. Empty in place.
    buf: Vec<u8>,
    /// Stream mode: the bytes handed to `inner` so far (a multiple of a
    /// block), and the size of the write being staged, once chosen.
    handed: u64,
    size: Option<usize>,
    sizes: BlockSizes,
    /// In place: the vector `inner` is, which is appended to directly. Set
    /// only by a constructor for a `W` that is such a vector.
    in_place: Option<fn(&mut W) -> &mut Vec<u8>>,
}

impl<W: Write> Staging<W> {
    /// Stages bytes for the stream `inner`.
    pub(super) fn stream(inner: W) -> Self {
        Staging {
            inner,
            buf: Vec::with_capacity(PAIR + APPEND_MAX),
            handed: 0,
            size: None,
            sizes: BlockSizes::new(),
            in_place: None,
        }
    }

    /// Appends to the vector `as_vec(&mut inner)` in place.
    pub(super) fn in_place(inner: W, as_vec: fn(&mut W) -> &mut Vec<u8>) -> Self {
        Staging {
            inner,
            buf: Vec::new(),
            handed: 0,
            size: None,
            sizes: BlockSizes::learning(),
            in_place: Some(as_vec),
        }
    }

    /// The bytes that complete the staged write (1 to a pair's size):
    /// handed over in one call, they are written from the caller's memory,
    /// not copied. `None` in place, where nothing is staged.
    pub(super) fn room(&mut self) -> Option<usize> {
        if self.in_place.is_some() {
            return None;
        }
        Some(self.size() - self.buf.len() % self.size())
    }

    /// The size of the write being staged, chosen when it is first needed.
    fn size(&mut self) -> usize {
        *self
            .size
            .get_or_insert_with(|| self.sizes.next(self.handed))
    }

    /// Hands `inner` one whole write: the first staged bytes, then `head`
    /// (its end, from the caller's memory), timed for the choice of sizes.
    fn write_one(&mut self, head: &[u8]) -> io::Result<()> {
        let len = self.size();
        let staged = len - head.len();
        let start = Instant::now();
        write_both(&mut self.inner, &self.buf[..staged], head)?;
        self.sizes.record(len, start.elapsed());
        self.buf.drain(..staged);
        self.handed += len as u64;
        self.size = None;
        Ok(())
    }

    pub(super) fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(as_vec) = self.in_place {
            as_vec(&mut self.inner).extend_from_slice(bytes);
            return Ok(());
        }
        self.write_whole()?;
        let room = self.size() - self.buf.len();
        if bytes.len() < room {
            self.buf.extend_from_slice(bytes);
            return Ok(());
        }
        let (head, mut rest) = bytes.split_at(room);
        self.write_one(head)?;
        // One block or pair per write: larger writes into the page cache
        // were measured slower, and build no larger folios.
        while rest.len() >= self.size() {
            let (one, after) = rest.split_at(self.size());
            self.write_one(one)?;
            rest = after;
        }
        self.buf.extend_from_slice(rest);
        Ok(())
    }

    /// The vector to append at most `max` bytes to (`max` at most
    /// [`APPEND_MAX`]): the target itself in place, else the staging
    /// buffer. The caller appends, and the appended bytes are then part of
    /// the output.
    pub(super) fn appender(&mut self, max: usize) -> io::Result<&mut Vec<u8>> {
        debug_assert!(max <= APPEND_MAX);
        if let Some(as_vec) = self.in_place {
            let v = as_vec(&mut self.inner);
            v.reserve(max);
            return Ok(v);
        }
        self.write_whole()?;
        Ok(&mut self.buf)
    }

    /// Writes the whole writes an appender left in the staging buffer,
    /// keeping the rest (less than a write) staged.
    fn write_whole(&mut self) -> io::Result<()> {
        while self.buf.len() >= self.size() {
            self.write_one(&[])?;
        }
        Ok(())
    }

    /// Hands every staged byte to `W`, flushes it and gives it back.
    pub(super) fn into_inner(mut self) -> io::Result<W> {
        if self.in_place.is_none() {
            self.write_whole()?;
            if !self.buf.is_empty() {
                self.inner.write_all(&self.buf)?;
                self.buf.clear();
            }
            // What this stream's writes cost, for the next file's choice.
            self.sizes.keep();
        }
        self.inner.flush()?;
        Ok(self.inner)
    }
}

/// Writes `a` then `b` to `w`, in one vectored write where `w` takes it.
fn write_both<W: Write>(w: &mut W, mut a: &[u8], mut b: &[u8]) -> io::Result<()> {
    while !a.is_empty() {
        match w.write_vectored(&[IoSlice::new(a), IoSlice::new(b)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) if n < a.len() => a = &a[n..],
            Ok(n) => {
                b = &b[n - a.len()..];
                a = &[];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    w.write_all(b)
}

#[cfg(test)]
mod tests {
    use super::super::block_sizes::{BLOCK, whole_and_aligned};
    use super::*;

    /// A stream that records the length of every write it receives, and
    /// takes a vectored write whole (as `writev` on a file does).
    #[derive(Debug, Default)]
    struct Recorder {
        bytes: Vec<u8>,
        writes: Vec<usize>,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let n = bufs.iter().map(|b| b.len()).sum();
            bufs.iter().for_each(|b| self.bytes.extend_from_slice(b));
            self.writes.push(n);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Bytes numbered by their position in the output, from `at`.
    fn numbered(at: usize, len: usize) -> Vec<u8> {
        (at..at + len).map(|i| (i % 251) as u8).collect()
    }

    /// Whatever the sizes of the pieces handed over, the stream receives
    /// whole blocks or pairs at multiples of their sizes (the last write
    /// aside), and the bytes in order.
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn a_stream_receives_whole_aligned_writes() {
        let mut s = Staging::stream(Recorder::default());
        let mut at = 0;
        for len in [
            100,
            BLOCK,
            3 * BLOCK + 5,
            7,
            BLOCK - 112,
            1,
            0,
            2 * BLOCK,
            9 * BLOCK,
        ] {
            s.write_all(&numbered(at, len)).unwrap();
            at += len;
        }
        s.appender(3).unwrap().extend_from_slice(&numbered(at, 3));
        at += 3;
        let out = s.into_inner().unwrap();
        assert_eq!(out.bytes, numbered(0, at));
        let (_, whole) = out.writes.split_last().unwrap();
        assert!(whole_and_aligned(whole), "{:?}", out.writes);
    }

    /// Handing over exactly the room left completes the write at once, and
    /// the next room is a whole write.
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn the_room_left_completes_the_write() {
        let mut s = Staging::stream(Recorder::default());
        s.write_all(&numbered(0, 10)).unwrap();
        let first = s.room().unwrap() + 10;
        assert!(first == PAIR || first == BLOCK, "{first}");
        assert!(s.inner.writes.is_empty(), "a short piece is staged");
        s.write_all(&numbered(10, first - 10)).unwrap();
        assert_eq!(s.inner.writes, [first], "one vectored write");
        let next = s.room().unwrap();
        assert!(next == PAIR || next == BLOCK, "{next}");
    }

    /// An appender may run past the write's end; the whole write is made
    /// before anything else, and the rest stays staged.
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn an_appender_past_the_end_is_written_whole() {
        let mut s = Staging::stream(Recorder::default());
        let first = s.room().unwrap();
        s.write_all(&numbered(0, first - 1)).unwrap();
        s.appender(2)
            .unwrap()
            .extend_from_slice(&numbered(first - 1, 2));
        assert_eq!(s.room(), Some(first - 1), "what is staged past the write");
        s.write_all(&numbered(first + 1, 4)).unwrap();
        assert_eq!(s.inner.writes, [first]);
        let out = s.into_inner().unwrap();
        assert_eq!(out.bytes, numbered(0, first + 5));
        assert_eq!(out.writes, [first, 5]);
    }

    /// In place, every byte lands in the vector at once.
    #[test]
    fn in_place_appends_to_the_vector_itself() {
        let mut v = b"kept".to_vec();
        let mut s = Staging::in_place(&mut v, |w| &mut **w);
        assert_eq!(s.room(), None);
        s.write_all(b"-a").unwrap();
        s.appender(2).unwrap().extend_from_slice(b"-b");
        s.into_inner().unwrap();
        assert_eq!(v, b"kept-a-b");
    }

    /// A stream that takes a vectored write a byte at a time still gets
    /// every byte, in order.
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn short_vectored_writes_are_resumed() {
        #[derive(Debug, Default)]
        struct Trickle(Vec<u8>);
        impl Write for Trickle {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0.extend_from_slice(&buf[..buf.len().min(1)]);
                Ok(buf.len().min(1))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut s = Staging::stream(Trickle::default());
        s.write_all(&numbered(0, 3)).unwrap();
        s.write_all(&numbered(3, BLOCK)).unwrap();
        assert_eq!(s.into_inner().unwrap().0, numbered(0, BLOCK + 3));
    }

    /// A failing stream reports its error instead of losing bytes silently.
    #[test]
    fn a_failing_stream_reports_the_error() {
        #[derive(Debug)]
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk gone"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut s = Staging::stream(Broken);
        s.write_all(b"x").unwrap();
        let e = s.into_inner().unwrap_err();
        assert_eq!(e.to_string(), "disk gone");
        let mut s = Staging::stream(Broken);
        let e = s.write_all(&vec![0; 2 * PAIR]).unwrap_err();
        assert_eq!(e.to_string(), "disk gone");
    }
}
