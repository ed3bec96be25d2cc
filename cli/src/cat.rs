//! `hurray cat FILE 'NAME[0:2, :]'`: a tensor's values, or a slice of them,
//! printed as nested rows. FILE may be a sharded checkpoint's index: the
//! slice then reads only the pieces, and the bytes in them, it covers (of a
//! member in a bucket, the whole tensor of each piece). With the `remote`
//! feature FILE may be a URL: the header and the one tensor are read by
//! range GETs.
//!
//! The runtime owns the slicing (`TensorRef::read_slice`,
//! `ShardedFile::slice`) and the decoding of every element type
//! (`minifloat`, `pack`); this module only prints.

use crate::convert::sharded::open_index;
use crate::input;
use crate::output::{Shown, stdout};
use anyhow::Result;
use hurray::{
    ElementType, File,
    elements::ElementClass,
    minifloat, pack,
    slice::{SliceData, parse_slice},
};
use std::io::Write;
use std::path::Path;

/// `NAME[...]` split into the name and the slice text; a name with no
/// trailing `[...]` is the whole tensor.
fn split_spec(spec: &str) -> (&str, &str) {
    match spec
        .strip_suffix(']')
        .and_then(|s| s.rfind('[').map(|i| (&s[..i], &s[i + 1..])))
    {
        Some((name, slice)) if !name.is_empty() => (name, slice),
        _ => (spec, ""),
    }
}

/// Prints `spec` (`NAME` or `NAME[slice]`) of the file or index at `path`.
pub fn cat(path: &Path, spec: &str) -> Result<()> {
    let (name, slice_text) = split_spec(spec);
    // For a URL: the header (two range GETs), then the bytes the slice
    // covers (one more); an index's members each the same way.
    let file = input::open(path)?;
    let data = if file.is_shard_index() {
        slice_of_index(&file, path, name, slice_text)?
    } else {
        let t = file.get(name).ok_or_else(|| hurray::Error::NotFound {
            name: name.to_owned(),
        })?;
        let ranges = parse_slice(name, slice_text, &t.shape().to_wire())?;
        file.read_slice(name, &ranges)?
    };
    let mut out = stdout();
    let dims: Vec<String> = data.shape.iter().map(u64::to_string).collect();
    writeln!(
        out,
        "{}: {} [{}]",
        Shown(spec),
        data.element_type.name(),
        dims.join(", ")
    )?;
    let values = element_texts(&data);
    print_nested(&mut out, &data.shape, &mut values.into_iter(), 0)?;
    Ok(())
}

/// `name[slice_text]` of the sharded checkpoint whose index is `index`.
fn slice_of_index(index: &File, path: &Path, name: &str, slice_text: &str) -> Result<SliceData> {
    let checkpoint = open_index(index, path)?;
    let t = checkpoint.tensor(name)?;
    let ranges = parse_slice(name, slice_text, &t.shape)?;
    Ok(checkpoint.slice(name, &ranges)?)
}

/// Every element of `data` as text, in row-major order.
fn element_texts(data: &SliceData) -> Vec<String> {
    let t = data.element_type;
    let bits = t.bits();
    let count: u64 = data.shape.iter().product();
    if bits < 8 {
        return pack::unpack_codes(&data.bytes, bits, count)
            .map(|c| code_text(t, u64::from(c)))
            .collect();
    }
    let width = (bits / 8) as usize;
    data.bytes
        .chunks_exact(width)
        .map(|c| {
            if t.class() == ElementClass::Complex {
                // (real, imaginary), each an f32 or f64.
                let (re, im) = c.split_at(width / 2);
                let part = |b: &[u8]| {
                    if width == 8 {
                        f32::from_bits(le(b) as u32).to_string()
                    } else {
                        f64::from_bits(le(b)).to_string()
                    }
                };
                format!("({}, {})", part(re), part(im))
            } else {
                code_text(t, le(c))
            }
        })
        .collect()
}

fn le(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// One stored code of type `t` as text: integers exactly, floats as the
/// shortest text that reads back to the same value of their width.
fn code_text(t: ElementType, code: u64) -> String {
    let bits = t.bits();
    match t.class() {
        ElementClass::Bool => (code != 0).to_string(),
        ElementClass::SignedInt if bits < 8 => pack::int_value(t, code as u8).to_string(),
        ElementClass::SignedInt => {
            let shift = 64 - bits;
            (((code << shift) as i64) >> shift).to_string()
        }
        ElementClass::UnsignedInt => code.to_string(),
        ElementClass::Float if bits == 64 => f64::from_bits(code).to_string(),
        // Every float type of 32 bits or fewer is exact in f32.
        ElementClass::Float => minifloat::to_f64(t, code)
            .map_or_else(|| format!("{code:#x}"), |v| (v as f32).to_string()),
        ElementClass::Complex => format!("{code:#x}"),
    }
}

/// Prints `shape`'s rows, numpy style: `[a, b]` innermost, one row a line.
fn print_nested(
    out: &mut dyn Write,
    shape: &[u64],
    values: &mut dyn Iterator<Item = String>,
    depth: usize,
) -> std::io::Result<()> {
    let indent = " ".repeat(depth);
    match shape {
        [] => writeln!(out, "{indent}{}", values.next().unwrap_or_default()),
        [n] => {
            let row: Vec<String> = values.take(*n as usize).collect();
            writeln!(out, "{indent}[{}]", row.join(", "))
        }
        [n, rest @ ..] => {
            writeln!(out, "{indent}[")?;
            for _ in 0..*n {
                print_nested(out, rest, values, depth + 1)?;
            }
            writeln!(out, "{indent}]")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_split_at_the_last_bracket() {
        assert_eq!(split_spec("w[0:2, :]"), ("w", "0:2, :"));
        assert_eq!(split_spec("w"), ("w", ""));
        assert_eq!(split_spec("a[b][1]"), ("a[b]", "1"));
        assert_eq!(split_spec("[1]"), ("[1]", ""));
    }

    #[test]
    fn codes_print_as_their_values() {
        assert_eq!(code_text(ElementType::Int4, 0xf), "-1");
        assert_eq!(code_text(ElementType::Int16, 0xfffe), "-2");
        assert_eq!(
            code_text(ElementType::UInt64, u64::MAX),
            u64::MAX.to_string()
        );
        assert_eq!(
            code_text(ElementType::Float32, 0.1f32.to_bits().into()),
            "0.1"
        );
        assert_eq!(code_text(ElementType::BFloat16, 0x3fc0), "1.5");
        assert_eq!(code_text(ElementType::Float8E8M0FNU, 0xff), "NaN");
        assert_eq!(code_text(ElementType::Bool, 1), "true");
    }
}
