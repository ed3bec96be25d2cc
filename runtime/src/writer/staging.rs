//! Where the writer's bytes wait before they reach its `W`.
//!
//! A stream (a file, a socket) gets them through a 1 MiB staging buffer, as
//! `std::io::BufWriter` would give them; writes of a whole buffer or more go
//! straight through. A `Vec<u8>` written by [`Writer::in_memory`] gets them
//! in place: the vector itself is the buffer, so nothing is copied twice.
//!
//! Either way, a producer that computes its bytes (the packer of sub-byte
//! codes) appends them to [`Staging::appender`], the vector they will stay in
//! until the flush, instead of into a scratch buffer that is then copied:
//! on a 4-bit lowering that second copy cost about a third of the time.
//!
//! [`Writer::in_memory`]: super::Writer::in_memory

use std::io::{self, Write};

/// The staging buffer's size, and the smallest write that bypasses it.
pub(super) const STAGING_CAPACITY: usize = 1 << 20;

/// The writer's output: `W`, and the bytes not yet handed to it.
#[derive(Debug)]
pub(super) struct Staging<W: Write> {
    inner: W,
    /// Bytes waiting for `inner` (stream mode; empty in place).
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
            buf: Vec::with_capacity(STAGING_CAPACITY),
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

    pub(super) fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(as_vec) = self.in_place {
            as_vec(&mut self.inner).extend_from_slice(bytes);
            return Ok(());
        }
        if self.buf.len() + bytes.len() > STAGING_CAPACITY {
            self.flush_buf()?;
        }
        if bytes.len() >= STAGING_CAPACITY {
            self.inner.write_all(bytes)
        } else {
            self.buf.extend_from_slice(bytes);
            Ok(())
        }
    }

    /// The vector to append at most `max` bytes to (`max` at most
    /// [`STAGING_CAPACITY`]): the target itself in place, else the staging
    /// buffer, flushed first if they would not fit. The caller appends, and
    /// the appended bytes are then part of the output.
    pub(super) fn appender(&mut self, max: usize) -> io::Result<&mut Vec<u8>> {
        debug_assert!(max <= STAGING_CAPACITY);
        if let Some(as_vec) = self.in_place {
            let v = as_vec(&mut self.inner);
            v.reserve(max);
            return Ok(v);
        }
        if self.buf.len() + max > STAGING_CAPACITY {
            self.flush_buf()?;
        }
        Ok(&mut self.buf)
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Hands every staged byte to `W`, flushes it and gives it back.
    pub(super) fn into_inner(mut self) -> io::Result<W> {
        self.flush_buf()?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small writes are staged, large ones pass straight through, and the
    /// order of the bytes is kept either way.
    #[test]
    fn streams_keep_the_order_of_small_and_large_writes() {
        let mut s = Staging::stream(Vec::new());
        s.write_all(b"ab").unwrap();
        assert!(s.inner.is_empty(), "a small write is staged");
        let big = vec![7u8; STAGING_CAPACITY];
        s.write_all(&big).unwrap();
        assert_eq!(
            s.inner.len(),
            2 + big.len(),
            "a large write flushes, then passes"
        );
        s.appender(3).unwrap().extend_from_slice(b"xyz");
        let out = s.into_inner().unwrap();
        assert_eq!(&out[..2], b"ab");
        assert_eq!(&out[out.len() - 3..], b"xyz");
    }

    /// An appender that would overflow the staging buffer flushes it first.
    #[test]
    fn a_full_staging_buffer_is_flushed_before_appending() {
        let mut s = Staging::stream(Vec::new());
        s.write_all(&vec![1; STAGING_CAPACITY - 1]).unwrap();
        assert!(s.inner.is_empty());
        s.appender(2).unwrap().extend_from_slice(&[2, 2]);
        assert_eq!(s.inner.len(), STAGING_CAPACITY - 1);
        let out = s.into_inner().unwrap();
        assert_eq!(out.len(), STAGING_CAPACITY + 1);
        assert_eq!(&out[out.len() - 2..], &[2, 2]);
    }

    /// In place, every byte lands in the vector at once.
    #[test]
    fn in_place_appends_to_the_vector_itself() {
        let mut v = b"kept".to_vec();
        let mut s = Staging::in_place(&mut v, |w| &mut **w);
        s.write_all(b"-a").unwrap();
        s.appender(2).unwrap().extend_from_slice(b"-b");
        s.into_inner().unwrap();
        assert_eq!(v, b"kept-a-b");
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
    }
}
