//! The formats `convert` reads and writes, each chosen by its extension,
//! and what each can hold.

use super::{Entry, irpa, npy, npz, ptd, safetensors_format};
use anyhow::{Result, bail};
use hurray::ElementType;
use std::path::Path;

/// A file format, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Hurray,
    Safetensors,
    Npy,
    Npz,
    /// llama.cpp's model format: read, and written from a Hurray file.
    Gguf,
    /// IREE's parameter archive: named blobs, typed by NumPy-style metadata.
    Irpa,
    /// ExecuTorch's external-data file (FlatTensor).
    Ptd,
}

impl Format {
    pub(super) fn of(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        Ok(match ext.as_deref() {
            Some("hurray") => Format::Hurray,
            Some("safetensors") => Format::Safetensors,
            Some("npy") => Format::Npy,
            Some("npz") => Format::Npz,
            Some("gguf") => Format::Gguf,
            Some("irpa") => Format::Irpa,
            Some("ptd") => Format::Ptd,
            _ => bail!(
                "{}: unknown format: the extension must be .hurray, .safetensors, .npy, .npz, \
                 .gguf, .irpa, .ptd or (to read) .onnx",
                path.display()
            ),
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Format::Hurray => "Hurray",
            Format::Safetensors => "safetensors",
            Format::Npy => ".npy",
            Format::Npz => ".npz",
            Format::Gguf => "GGUF",
            Format::Irpa => "IRPA",
            Format::Ptd => "ExecuTorch .ptd",
        }
    }

    /// What the format calls `t`, from the schema's tables; `None` where it has no such type.
    pub(super) fn dtype(self, t: ElementType) -> Option<&'static str> {
        match self {
            Format::Hurray => Some(t.name()),
            Format::Safetensors => t.safetensors_dtype(),
            Format::Npy | Format::Npz => t.numpy_dtype(),
            Format::Gguf => None,
            Format::Irpa => irpa::dtype_name(t),
            Format::Ptd => ptd::scalar_type(t).map(|(_, name)| name),
        }
    }

    /// What the format's type is called, for messages.
    pub(super) fn dtype_kind(self) -> &'static str {
        match self {
            Format::Hurray => "Hurray element type",
            Format::Safetensors => "safetensors dtype",
            Format::Npy | Format::Npz => "NumPy dtype",
            Format::Gguf => "GGUF type",
            Format::Irpa => "IRPA (NumPy) dtype",
            Format::Ptd => "ExecuTorch scalar type",
        }
    }

    /// Why this format's readers would refuse `e` (a dense tensor of a type it
    /// has), if they would: checked before anything is written.
    pub(super) fn refuses(self, e: &Entry<'_>) -> Option<String> {
        match self {
            Format::Hurray => None,
            Format::Safetensors => safetensors_format::refuses(e),
            Format::Npy => npy::refuses(e),
            Format::Npz => npz::refuses_name(&e.name).or_else(|| npy::refuses(e)),
            Format::Gguf => Some("GGUF is written from a .hurray file only".into()),
            Format::Irpa | Format::Ptd => None,
        }
    }
}
