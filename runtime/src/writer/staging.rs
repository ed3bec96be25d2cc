//! Where the writer's bytes wait before they reach its `W`.
//!
//! A stream (a file, a socket) gets them in whole blocks: every write it
//! receives, but the last, is [`BLOCK`] bytes at a multiple of [`BLOCK`] of
//! the output. A producer that hands over exactly what completes the staged
//! block ([`Staging::room`]) is written straight from its own memory (one
//! `writev` of the staged bytes and its own), so only the pieces that do not
//! reach a block's end (a tensor's tail, padding, the header) are copied.
//! A `Vec<u8>` written by [`Writer::in_memory`] gets the bytes in place: the
//! vector itself is the buffer, so nothing is copied twice.
//!
//! Why whole, aligned blocks of 1 MiB: a file's page cache is made of
//! folios as large as the writes that filled it. Written in whole, aligned
//! blocks, it is mapped by its readers a large folio at a time; written in
//! pieces at arbitrary offsets, 4 KiB to 64 KiB per fault (a warm load of
//! such a file touched its pages about 1.5x slower). Why not 2 MiB, the
//! largest folio, which a reader maps with one huge-page entry: a 2 MiB
//! folio needs a free 2 MiB block, and a virtual machine that reports free
//! memory to its host (free page reporting, from 2 MiB blocks up) has given
//! those back, so every 2 MiB folio faults its memory in from the host. A
//! 1 GiB save in 2 MiB blocks took 1.6-1.7 s the first time in a process
//! where 1 MiB blocks, like a plain `write` of the same bytes, took
//! 0.3-0.4 s; a 1 MiB block is never reported and stays backed
//! (docs/head-to-head.md).
//!
//! Either way, a producer that computes its bytes (the packer of sub-byte
//! codes) appends them to [`Staging::appender`], the vector they will stay in
//! until they are written, instead of into a scratch buffer that is then
//! copied: on a 4-bit lowering that second copy cost about a third of the
//! time.
//!
//! [`Writer::in_memory`]: super::Writer::in_memory

use std::io::{self, IoSlice, Write};

/// The size and alignment (in the output) of the writes a stream receives:
/// the largest folio smaller than a huge page (see the module's docs).
pub(super) const BLOCK: usize = 1 << 20;

/// The most an [`Staging::appender`] may be asked for.
pub(super) const APPEND_MAX: usize = 1 << 20;

/// The writer's output: `W`, and the bytes not yet handed to it.
#[derive(Debug)]
pub(super) struct Staging<W: Write> {
    inner: W,
    /// Stream mode: the bytes of the current block not yet handed to
    /// `inner`, which has received whole blocks only. Shorter than [`BLOCK`]
    /// between calls, but for what an appender added. Empty in place.
    buf: Vec<u8>,
    /// In place: the vector `inner` is, which is appended to directly. Set
    /// only by a constructor for a `W` that is such a vector.
    in_place: Option<fn(&mut W) -> &mut Vec<u8>>,
}

impl<W: Write> Staging<W> {
    /// Stages bytes for the stream `inner`.
    pub(super) fn stream(inner: W) -> Self {
        Staging {
            inner,
            buf: Vec::with_capacity(BLOCK + APPEND_MAX),
            in_place: None,
        }
    }

    /// Appends to the vector `as_vec(&mut inner)` in place.
    pub(super) fn in_place(inner: W, as_vec: fn(&mut W) -> &mut Vec<u8>) -> Self {
        Staging {
            inner,
            buf: Vec::new(),
            in_place: Some(as_vec),
        }
    }

    /// The bytes that complete the staged block (1 to [`BLOCK`]): handed
    /// over in one call, they are written from the caller's memory, not
    /// copied. `None` in place, where nothing is staged.
    pub(super) fn room(&self) -> Option<usize> {
        self.in_place
            .is_none()
            .then(|| BLOCK - self.buf.len() % BLOCK)
    }

    pub(super) fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(as_vec) = self.in_place {
            as_vec(&mut self.inner).extend_from_slice(bytes);
            return Ok(());
        }
        self.write_whole_blocks()?;
        let room = BLOCK - self.buf.len();
        if bytes.len() < room {
            self.buf.extend_from_slice(bytes);
            return Ok(());
        }
        let (head, mut rest) = bytes.split_at(room);
        write_both(&mut self.inner, &self.buf, head)?;
        self.buf.clear();
        // One block per write: larger writes into the page cache were
        // measured slower, and build no larger folios.
        while rest.len() >= BLOCK {
            let (block, after) = rest.split_at(BLOCK);
            self.inner.write_all(block)?;
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
        self.write_whole_blocks()?;
        Ok(&mut self.buf)
    }

    /// Writes the whole blocks an appender left in the staging buffer,
    /// keeping the rest (less than a block) staged.
    fn write_whole_blocks(&mut self) -> io::Result<()> {
        let whole = self.buf.len() - self.buf.len() % BLOCK;
        if whole > 0 {
            for block in self.buf[..whole].chunks(BLOCK) {
                self.inner.write_all(block)?;
            }
            self.buf.drain(..whole);
        }
        Ok(())
    }

    /// Hands every staged byte to `W`, flushes it and gives it back.
    pub(super) fn into_inner(mut self) -> io::Result<W> {
        self.write_whole_blocks()?;
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
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
    /// whole blocks at multiples of the block size (the last write aside),
    /// and the bytes in order.
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn a_stream_receives_whole_aligned_blocks() {
        let mut s = Staging::stream(Recorder::default());
        let mut at = 0;
        for len in [100, BLOCK, 3 * BLOCK + 5, 7, BLOCK - 112, 1, 0, 2 * BLOCK] {
            s.write_all(&numbered(at, len)).unwrap();
            at += len;
        }
        s.appender(3).unwrap().extend_from_slice(&numbered(at, 3));
        at += 3;
        let out = s.into_inner().unwrap();
        assert_eq!(out.bytes, numbered(0, at));
        let (last, blocks) = out.writes.split_last().unwrap();
        assert!(blocks.iter().all(|&n| n == BLOCK), "{:?}", out.writes);
        assert_eq!(*last, at % BLOCK);
    }

    /// Handing over exactly the room left completes the block at once, and
    /// the next room is a whole block.
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn the_room_left_completes_the_block() {
        let mut s = Staging::stream(Recorder::default());
        s.write_all(&numbered(0, 10)).unwrap();
        assert_eq!(s.room(), Some(BLOCK - 10));
        assert!(s.inner.writes.is_empty(), "a short piece is staged");
        s.write_all(&numbered(10, BLOCK - 10)).unwrap();
        assert_eq!(s.inner.writes, [BLOCK], "one vectored write");
        assert_eq!(s.room(), Some(BLOCK));
    }

    /// An appender may run past the block's end; the whole block is written
    /// before anything else, and the rest stays staged.
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn an_appender_past_the_block_end_is_written_in_blocks() {
        let mut s = Staging::stream(Recorder::default());
        s.write_all(&numbered(0, BLOCK - 1)).unwrap();
        s.appender(2)
            .unwrap()
            .extend_from_slice(&numbered(BLOCK - 1, 2));
        assert_eq!(s.room(), Some(BLOCK - 1));
        s.write_all(&numbered(BLOCK + 1, 4)).unwrap();
        assert_eq!(s.inner.writes, [BLOCK]);
        let out = s.into_inner().unwrap();
        assert_eq!(out.bytes, numbered(0, BLOCK + 5));
        assert_eq!(out.writes, [BLOCK, 5]);
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
        let e = s.write_all(&vec![0; BLOCK]).unwrap_err();
        assert_eq!(e.to_string(), "disk gone");
    }
}
