//! External data: where an initializer's bytes lie outside the model (a
//! file relative to the model's directory, an offset, a length), checked
//! to stay inside that directory and that file, and read in pieces.

use super::{Data, Initializer, PIECE};
use crate::error::{Error, Result};
use crate::wire::{Fields, Value};
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

impl Initializer {
    /// The external data file this initializer names, if it is external.
    pub(crate) fn external_path(&self, base_dir: &Path) -> Option<PathBuf> {
        match &self.data {
            Data::External { location, .. } => relative_location(&self.name, location)
                .ok()
                .map(|p| base_dir.join(p)),
            _ => None,
        }
    }

    /// The external file, offset and length, checked to lie inside the file
    /// and to hold exactly the tensor's bytes.
    pub(super) fn external_range(&self, base_dir: &Path) -> Result<(PathBuf, u64, u64)> {
        let Data::External {
            location,
            offset,
            length,
        } = &self.data
        else {
            return Err(Error::tensor(
                &self.name,
                "data_location",
                "DEFAULT",
                "not external",
            ));
        };
        let path = base_dir.join(relative_location(&self.name, location)?);
        let size = std::fs::metadata(&path).map_err(Error::io(&path))?.len();
        let length = length.unwrap_or(size.saturating_sub(*offset));
        if offset.checked_add(length).is_none_or(|end| end > size) {
            return Err(Error::tensor(
                &self.name,
                "external_data",
                format!("offset {offset}, length {length}"),
                format!("outside {} ({size} bytes)", path.display()),
            ));
        }
        self.check_len("external_data.length", length, self.onnx_len()?)?;
        Ok((path, *offset, length))
    }

    /// Hands the external data to `sink` in pieces of [`PIECE`] bytes.
    pub(super) fn read_external(
        &self,
        base_dir: &Path,
        sink: &mut impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let (path, offset, length) = self.external_range(base_dir)?;
        let file = std::fs::File::open(&path).map_err(Error::io(&path))?;
        let mut buf = vec![0u8; PIECE.min(length) as usize];
        let mut done = 0u64;
        while done < length {
            let n = PIECE.min(length - done) as usize;
            file.read_exact_at(&mut buf[..n], offset + done)
                .map_err(Error::io(&path))?;
            sink(&buf[..n])?;
            done += n as u64;
        }
        Ok(())
    }
}

/// One `StringStringEntryProto` (key 1, value 2).
pub(super) fn entry(bytes: &[u8]) -> Result<(String, String)> {
    let (mut key, mut value) = (String::new(), String::new());
    for f in Fields::new(bytes, "StringStringEntryProto") {
        let f = f?;
        if let Value::Bytes(s, e) = f.value {
            let text = std::str::from_utf8(&bytes[s..e])
                .map_err(|_| Error::Malformed {
                    message: "StringStringEntryProto",
                    at: s,
                    reason: "an external data entry is not UTF-8",
                })?
                .to_owned();
            match f.number {
                1 => key = text,
                2 => value = text,
                _ => {}
            }
        }
    }
    Ok((key, value))
}

pub(super) fn external_data(name: &str, entries: Vec<(String, String)>) -> Result<Data> {
    let (mut location, mut offset, mut length) = (None, 0, None);
    for (k, v) in entries {
        let number = |v: &str| {
            v.parse::<u64>().map_err(|_| {
                Error::tensor(name, "external_data", format!("{k}={v}"), "not a number")
            })
        };
        match k.as_str() {
            "location" => location = Some(v),
            "offset" => offset = number(&v)?,
            "length" => length = Some(number(&v)?),
            // "checksum" (SHA-1) and keys of later versions are not needed to read.
            _ => {}
        }
    }
    let location = location.ok_or_else(|| {
        Error::tensor(
            name,
            "external_data",
            "no location",
            "external data needs a location",
        )
    })?;
    Ok(Data::External {
        location,
        offset,
        length,
    })
}

/// `location` as a relative path that stays inside the model's directory
/// (ONNX Runtime's rule too): no root, no `..`.
pub(crate) fn relative_location(name: &str, location: &str) -> Result<PathBuf> {
    let path = Path::new(location);
    let inside = !location.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(Error::tensor(
            name,
            "external_data.location",
            format!("{location:?}"),
            "external data must be a relative path inside the model's directory",
        ));
    }
    Ok(path.to_owned())
}
