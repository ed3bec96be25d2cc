//! The protobuf wire format, as far as reading and re-writing ONNX needs:
//! fields of a message in order, each with its number, its value and the
//! bytes it occupies, so a rewriter copies every field it does not change
//! byte for byte (unknown fields and future ONNX fields included).

use crate::error::{Error, Result};
use std::ops::Range;

/// A field's value as the wire gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// A length-delimited value: its bytes, as a range of the message.
    Bytes(usize, usize),
}

/// One field of a message: its number, value, and where the whole field
/// (tag included) lies in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) number: u32,
    pub(crate) value: Value,
    pub(crate) span: Range<usize>,
}

/// The fields of one message, in order; `what` names the message in errors.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'static str) -> Self {
        Fields { buf, at: 0, what }
    }

    fn malformed(&self, reason: &'static str) -> Error {
        Error::Malformed {
            message: self.what,
            at: self.at,
            reason,
        }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let &b = self
                .buf
                .get(self.at)
                .ok_or_else(|| self.malformed("a varint runs past the end"))?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.malformed("a varint is longer than 10 bytes"))
    }

    fn take(&mut self, n: u64) -> Result<(usize, usize)> {
        let start = self.at;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| self.malformed("a field runs past the end of its message"))?;
        self.at = end;
        Ok((start, end))
    }

    fn next_field(&mut self) -> Result<Field> {
        let start = self.at;
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3)
            .ok()
            .filter(|&n| n != 0)
            .ok_or_else(|| self.malformed("a field number is 0 or too large"))?;
        let value = match tag & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let (s, _) = self.take(8)?;
                Value::Fixed64(u64::from_le_bytes(
                    self.buf[s..s + 8].try_into().unwrap_or_default(),
                ))
            }
            2 => {
                let len = self.varint()?;
                let (s, e) = self.take(len)?;
                Value::Bytes(s, e)
            }
            5 => {
                let (s, _) = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes(
                    self.buf[s..s + 4].try_into().unwrap_or_default(),
                ))
            }
            _ => return Err(self.malformed("a wire type is a group or unknown")),
        };
        Ok(Field {
            number,
            value,
            span: start..self.at,
        })
    }
}

impl Iterator for Fields<'_> {
    type Item = Result<Field>;

    fn next(&mut self) -> Option<Result<Field>> {
        if self.at >= self.buf.len() {
            return None;
        }
        let field = self.next_field();
        if field.is_err() {
            // Nothing after a malformed field can be trusted.
            self.at = self.buf.len();
        }
        Some(field)
    }
}

/// The elements of a repeated scalar field, packed or not: each is a
/// varint, or fixed-width little-endian of `width` bytes.
pub(crate) fn scalars(
    message: &[u8],
    field: &Field,
    width: Option<usize>,
    out: &mut Vec<u64>,
    what: &'static str,
) -> Result<()> {
    each_scalar(message, field, width, what, &mut |v| {
        out.push(v);
        Ok(())
    })
}

/// Calls `each` with every element of a repeated scalar field (see
/// [`scalars`]), without collecting them.
pub(crate) fn each_scalar(
    message: &[u8],
    field: &Field,
    width: Option<usize>,
    what: &'static str,
    each: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    match (field.value, width) {
        (Value::Varint(v), None) => each(v)?,
        (Value::Fixed32(v), Some(4)) => each(u64::from(v))?,
        (Value::Fixed64(v), Some(8)) => each(v)?,
        (Value::Bytes(s, e), None) => {
            let mut inner = Fields::new(&message[s..e], what);
            while inner.at < inner.buf.len() {
                each(inner.varint()?)?;
            }
        }
        (Value::Bytes(s, e), Some(w)) => {
            let bytes = &message[s..e];
            if !bytes.len().is_multiple_of(w) {
                return Err(Error::Malformed {
                    message: what,
                    at: s,
                    reason: "a packed fixed-width field's length is not a multiple of its width",
                });
            }
            for c in bytes.chunks_exact(w) {
                let mut b = [0u8; 8];
                b[..w].copy_from_slice(c);
                each(u64::from_le_bytes(b))?;
            }
        }
        _ => {
            return Err(Error::Malformed {
                message: what,
                at: field.span.start,
                reason: "a repeated scalar field has the wrong wire type",
            });
        }
    }
    Ok(())
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a varint field.
pub(crate) fn put_varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    put_varint(out, u64::from(number) << 3);
    put_varint(out, v);
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes_field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(number) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(buf: &[u8]) -> Result<Vec<Field>> {
        Fields::new(buf, "test").collect()
    }

    #[test]
    fn fields_round_trip_through_the_writers() {
        let mut buf = Vec::new();
        put_varint_field(&mut buf, 1, 300);
        put_bytes_field(&mut buf, 8, b"name");
        put_varint_field(&mut buf, 2, u64::MAX);
        let fields = all(&buf).unwrap();
        assert_eq!(fields[0].value, Value::Varint(300));
        assert_eq!(fields[1].number, 8);
        let Value::Bytes(s, e) = fields[1].value else {
            panic!("bytes")
        };
        assert_eq!(&buf[s..e], b"name");
        assert_eq!(fields[2].value, Value::Varint(u64::MAX));
        assert_eq!(fields[2].span.end, buf.len());
    }

    #[test]
    fn truncated_and_bad_input_is_an_error() {
        let mut buf = Vec::new();
        put_bytes_field(&mut buf, 9, &[0; 10]);
        for cut in 1..buf.len() {
            assert!(all(&buf[..cut]).is_err(), "cut at {cut}");
        }
        // A group wire type, a field number 0, an endless varint.
        assert!(all(&[0x0b]).is_err());
        assert!(all(&[0x00, 0x01]).is_err());
        assert!(
            all(&[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ])
            .is_err()
        );
    }

    #[test]
    fn repeated_scalars_are_read_packed_and_unpacked() {
        let mut packed = Vec::new();
        put_varint(&mut packed, 3);
        put_varint(&mut packed, 1 << 40);
        let mut buf = Vec::new();
        put_bytes_field(&mut buf, 7, &packed);
        put_varint_field(&mut buf, 7, 5);
        let mut out = Vec::new();
        for f in all(&buf).unwrap() {
            scalars(&buf, &f, None, &mut out, "test").unwrap();
        }
        assert_eq!(out, [3, 1 << 40, 5]);
        let mut floats = Vec::new();
        put_bytes_field(&mut floats, 4, &[0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]);
        let mut out = Vec::new();
        let f = &all(&floats).unwrap()[0];
        scalars(&floats, f, Some(4), &mut out, "test").unwrap();
        assert_eq!(out, [0x3f80_0000, 0x4000_0000]);
        // A packed fixed-width field cut mid-element.
        let mut bad = Vec::new();
        put_bytes_field(&mut bad, 4, &[0, 0, 0x80]);
        let f = &all(&bad).unwrap()[0];
        assert!(scalars(&bad, f, Some(4), &mut Vec::new(), "test").is_err());
    }
}
