//! `.npy` arrays as a source and a destination, in NumPy's format 1.0–3.0.
//!
//! The header is a Python dict literal. It is read by a small parser for the
//! subset NumPy writes (a string, a bool, a tuple of integers; lists and
//! dicts of structured dtypes recognised only to be refused): it never
//! recurses and the header it reads is capped at [`MAX_NPY_HEADER`], so a
//! hostile header costs at most one linear pass over 1 MiB. NumPy type
//! strings map to element types through the schema's table
//! ([`ElementType::from_numpy_dtype`]).

use super::{Data, Entry, Feed, Source};
use anyhow::{Context, Result, anyhow, bail};
use hurray::{ElementType, atomic::AtomicFile};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Largest `.npy` header accepted.
const MAX_NPY_HEADER: usize = crate::limits::NPY_MAX_HEADER as usize;
const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// What an `.npy` header says.
#[derive(Debug)]
pub(super) struct NpyHeader {
    dtype: ElementType,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// Length of the `.npy` preamble (magic, version, header length) and of the header.
pub(super) fn preamble(bytes: &[u8]) -> Result<(usize, usize)> {
    if bytes.len() < 10 || &bytes[..6] != NPY_MAGIC {
        bail!("not a .npy array (no \\x93NUMPY magic)");
    }
    let (pre, len) = match bytes[6] {
        1 => (10, usize::from(u16::from_le_bytes([bytes[8], bytes[9]]))),
        2 | 3 => {
            if bytes.len() < 12 {
                bail!("truncated .npy preamble");
            }
            let n = u32::from_le_bytes(bytes[8..12].try_into()?);
            (12, usize::try_from(n)?)
        }
        v => bail!(".npy format version {v}.{} is not supported", bytes[7]),
    };
    if len > MAX_NPY_HEADER {
        bail!(".npy header of {len} bytes is over the {MAX_NPY_HEADER}-byte limit");
    }
    Ok((pre, len))
}

/// Parses a whole `.npy` header (`bytes` starts at the magic); returns it and where the data starts.
pub(super) fn parse(bytes: &[u8]) -> Result<(NpyHeader, usize)> {
    let (pre, len) = preamble(bytes)?;
    let text = bytes
        .get(pre..pre + len)
        .context("the .npy header runs past the end of the file")?;
    let text = std::str::from_utf8(text).context("the .npy header is not text")?;
    let dict = PyDict::parse(text)?;
    let descr = match dict.get("descr") {
        Some(PyValue::Str(s)) => s.as_str(),
        Some(_) => bail!("structured .npy dtypes (descr {text:?}) are not supported"),
        None => bail!("the .npy header has no 'descr'"),
    };
    let fortran_order = match dict.get("fortran_order") {
        Some(PyValue::Bool(b)) => *b,
        _ => bail!("the .npy header has no boolean 'fortran_order'"),
    };
    let shape = match dict.get("shape") {
        Some(PyValue::Tuple(t)) => t.clone(),
        _ => bail!("the .npy header has no 'shape' tuple"),
    };
    let (dtype, big_endian) = numpy_type(descr)?;
    Ok((
        NpyHeader {
            dtype,
            big_endian,
            fortran_order,
            shape,
        },
        pre + len,
    ))
}

/// The element type of a NumPy type string (`<f4`, `|b1`, `>i8`, `=u2`, `f8` ...),
/// and whether its bytes are big-endian.
fn numpy_type(descr: &str) -> Result<(ElementType, bool)> {
    let (big_endian, code) = match descr.split_at_checked(1) {
        Some((">", code)) => (true, code),
        Some(("<" | "|", code)) => (false, code),
        Some(("=", code)) => (cfg!(target_endian = "big"), code),
        _ => (cfg!(target_endian = "big"), descr),
    };
    let dtype = ["<", "|"]
        .iter()
        .find_map(|order| ElementType::from_numpy_dtype(&format!("{order}{code}")))
        .ok_or_else(|| anyhow!("NumPy dtype {descr:?} has no Hurray element type"))?;
    Ok((dtype, big_endian && dtype.bits() > 8))
}

/// Element strides of a Fortran-order (column-major) array.
pub(super) fn fortran_strides(shape: &[u64]) -> Option<Vec<u64>> {
    let mut strides = Vec::with_capacity(shape.len());
    let mut acc = 1u64;
    for &d in shape {
        strides.push(acc);
        acc = acc.checked_mul(d)?;
    }
    Some(strides)
}

/// An entry for an `.npy` array whose data is `data` (or elsewhere, for a compressed member).
pub(super) fn entry<'a>(name: String, h: NpyHeader, data: Data<'a>) -> Result<Entry<'a>> {
    let strides = if h.fortran_order && h.shape.len() > 1 {
        Some(
            fortran_strides(&h.shape)
                .with_context(|| format!("array {name:?}: shape overflows"))?,
        )
    } else {
        None
    };
    let entry = Entry {
        strides,
        big_endian: h.big_endian,
        ..Entry::new(name, h.dtype, h.shape, data)
    };
    let expected = entry.canonical_len()?;
    if entry.stored_len() != expected {
        bail!(
            "array {:?}: {} bytes of data, but shape {:?} of {} needs {expected}",
            entry.name,
            entry.stored_len(),
            entry.shape,
            h.dtype.numpy_dtype().unwrap_or("?"),
        );
    }
    Ok(entry)
}

/// The one array of an `.npy` file, named after the file.
pub(super) fn source<'a>(bytes: &'a [u8], path: &Path) -> Result<Source<'a>> {
    let (header, start) = parse(bytes)?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("array")
        .to_owned();
    let entry = entry(name, header, Data::Slice(&bytes[start..]))?;
    Ok(Source {
        entries: vec![entry],
        metadata: BTreeMap::new(),
        zip: None,
        gguf: None,
    })
}

/// Why NumPy would refuse to load `e`: it holds each dimension in an `intp`
/// and, skipping zeros, multiplies the dimensions and the item size with an
/// overflow check, so `[2^62, 4, 0]` of `f4` is refused even though it is
/// empty.
pub(super) fn refuses(e: &Entry<'_>) -> Option<String> {
    if let Some(d) = e.shape.iter().find(|&&d| i64::try_from(d).is_err()) {
        return Some(format!(
            "dimension {d} is over NumPy's largest dimension (2^63 - 1)"
        ));
    }
    let itemsize = e.dtype.unpacked_size() as i64;
    let fits = e
        .shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(itemsize, |acc, &d| acc.checked_mul(d as i64))
        .is_some();
    (!fits).then(|| {
        format!(
            "shape {:?} is too big for NumPy (the item size times the nonzero dimensions overflows 2^63)",
            e.shape
        )
    })
}

/// The `.npy` header NumPy itself would write (version 1.0, or 2.0 when it must),
/// padded so the data starts on a 64-byte boundary.
pub(super) fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [] => "()".to_owned(),
        [d] => format!("({d},)"),
        _ => {
            let d: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", d.join(", "))
        }
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let build = |pre: usize| {
        let pad = (64 - (pre + dict.len() + 1) % 64) % 64;
        dict.len() + pad + 1
    };
    let (version, pre) = if build(10) <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let len = build(pre);
    let mut out = Vec::with_capacity(pre + len);
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(pre + len - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes the one converted array to a `.npy` file.
pub(super) struct Sink {
    file: AtomicFile,
    out: BufWriter<std::fs::File>,
}

impl Sink {
    pub(super) fn create(path: &Path) -> Result<Self> {
        let (file, out) = super::atomic_output(path)?;
        Ok(Sink { file, out })
    }
}

impl super::Sink for Sink {
    fn tensor(
        &mut self,
        e: &Entry<'_>,
        feed: &mut Feed<'_>,
        _quantization: &[Cow<'_, [u8]>],
    ) -> Result<()> {
        let descr = e.dtype.numpy_dtype().context("no NumPy dtype")?;
        self.out.write_all(&header(descr, &e.shape))?;
        super::write_exact(e, &mut self.out, feed)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        super::commit(self.file, self.out)
    }
}

/// A value of the Python literal subset `.npy` headers use.
#[derive(Debug, Clone, PartialEq)]
enum PyValue {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
    /// A list or dict (structured dtypes): recognised only to be refused.
    Nested,
}

/// The `.npy` header dictionary: `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
struct PyDict(BTreeMap<String, PyValue>);

impl PyDict {
    fn get(&self, key: &str) -> Option<&PyValue> {
        self.0.get(key)
    }

    fn parse(text: &str) -> Result<PyDict> {
        let mut p = PyParser {
            s: text.as_bytes(),
            i: 0,
        };
        let bad = |p: &PyParser<'_>| anyhow!("malformed .npy header {text:?} at byte {}", p.i);
        let mut map = BTreeMap::new();
        p.ws();
        if !p.eat(b'{') {
            return Err(bad(&p));
        }
        loop {
            p.ws();
            if p.eat(b'}') {
                break;
            }
            let key = p.string().ok_or_else(|| bad(&p))?;
            p.ws();
            if !p.eat(b':') {
                return Err(bad(&p));
            }
            p.ws();
            let value = p.value().ok_or_else(|| bad(&p))?;
            map.insert(key, value);
            p.ws();
            if !p.eat(b',') {
                p.ws();
                if !p.eat(b'}') {
                    return Err(bad(&p));
                }
                break;
            }
        }
        p.ws();
        if p.i != p.s.len() {
            return Err(bad(&p));
        }
        Ok(PyDict(map))
    }
}

struct PyParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl PyParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn string(&mut self) -> Option<String> {
        let quote = self.peek().filter(|c| *c == b'\'' || *c == b'"')?;
        let start = self.i + 1;
        let end = start + self.s[start..].iter().position(|&c| c == quote)?;
        self.i = end + 1;
        String::from_utf8(self.s[start..end].to_vec()).ok()
    }
    fn value(&mut self) -> Option<PyValue> {
        match self.peek()? {
            b'\'' | b'"' => self.string().map(PyValue::Str),
            b'T' if self.s[self.i..].starts_with(b"True") => {
                self.i += 4;
                Some(PyValue::Bool(true))
            }
            b'F' if self.s[self.i..].starts_with(b"False") => {
                self.i += 5;
                Some(PyValue::Bool(false))
            }
            b'(' => {
                self.i += 1;
                let mut dims = Vec::new();
                loop {
                    self.ws();
                    if self.eat(b')') {
                        return Some(PyValue::Tuple(dims));
                    }
                    let start = self.i;
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                    let digits = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                    dims.push(digits.parse().ok()?);
                    self.eat(b'L'); // Python 2 long suffix
                    self.ws();
                    if !self.eat(b',') {
                        self.ws();
                        return self.eat(b')').then_some(PyValue::Tuple(dims));
                    }
                }
            }
            open @ (b'[' | b'{') => {
                let close = if open == b'[' { b']' } else { b'}' };
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    self.i += 1;
                    if c == open {
                        depth += 1;
                    } else if c == close {
                        depth -= 1;
                        if depth == 0 {
                            return Some(PyValue::Nested);
                        }
                    }
                }
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_parses_what_numpy_writes() {
        let d = PyDict::parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0, 5), }")
            .unwrap();
        assert_eq!(d.get("descr"), Some(&PyValue::Str("<f4".into())));
        assert_eq!(d.get("fortran_order"), Some(&PyValue::Bool(false)));
        assert_eq!(d.get("shape"), Some(&PyValue::Tuple(vec![3, 0, 5])));
        let d = PyDict::parse("{'descr':'|b1','fortran_order':True,'shape':(7L,)}  ").unwrap();
        assert_eq!(d.get("shape"), Some(&PyValue::Tuple(vec![7])));
        let d = PyDict::parse("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': ()}")
            .unwrap();
        assert_eq!(d.get("descr"), Some(&PyValue::Nested));
        assert_eq!(d.get("shape"), Some(&PyValue::Tuple(vec![])));
        for bad in ["", "{", "{'a' 1}", "{'shape': (1,2}", "{'x': 'y'} z"] {
            assert!(PyDict::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn written_npy_headers_parse_back_and_align() {
        for shape in [vec![], vec![4], vec![3, 0, 5], vec![1; 40]] {
            let h = header("<f8", &shape);
            assert_eq!(h.len() % 64, 0);
            let (parsed, start) = parse(&h).unwrap();
            assert_eq!(start, h.len());
            assert_eq!(parsed.shape, shape);
            assert_eq!(parsed.dtype, ElementType::Float64);
            assert!(!parsed.big_endian && !parsed.fortran_order);
        }
    }

    #[test]
    fn numpy_types_come_from_the_schema_table() {
        for t in ElementType::ALL {
            if let Some(n) = t.numpy_dtype() {
                assert_eq!(numpy_type(n).unwrap(), (t, false));
                if t.bits() > 8 {
                    let be = format!(">{}", &n[1..]);
                    assert_eq!(numpy_type(&be).unwrap(), (t, true));
                }
            }
        }
        assert!(numpy_type("<V2").is_err());
    }

    fn dense(dtype: ElementType, shape: &[u64]) -> Entry<'static> {
        Entry::new("a".into(), dtype, shape.to_vec(), Data::None)
    }

    #[test]
    fn refuses_what_numpy_refuses() {
        // Each case checked against numpy 2.4's `numpy.empty` and `numpy.load`.
        let f4 = ElementType::Float32;
        let u1 = ElementType::UInt8;
        assert_eq!(refuses(&dense(f4, &[3, 0, 5])), None);
        assert_eq!(refuses(&dense(u1, &[(1 << 62), 0])), None);
        assert_eq!(refuses(&dense(u1, &[i64::MAX as u64, 0])), None);
        assert!(refuses(&dense(f4, &[1 << 40, 1 << 40, 0])).is_some());
        assert!(refuses(&dense(f4, &[1 << 61, 0])).is_some());
        assert!(refuses(&dense(f4, &[0, 1 << 62, 1 << 62])).is_some());
        assert!(
            refuses(&dense(u1, &[0, 1 << 63]))
                .unwrap()
                .contains("largest dimension")
        );
    }
}
