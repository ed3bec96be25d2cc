//! Items used by generated code (`hurray::__private`). Not public API: no
//! stability promise. The derive macros' output calls only what is here, by
//! absolute path, so it needs no imports in the user's crate.
//!
//! - this module: the field declarations (`FieldSpec`), and the per-field
//!   operations the generated code calls (`FieldOps`, `NestedOps`);
//! - `check`: shape inference and the checks of a stored tensor against a field;
//! - `impls`: `TensorField` for every field type.

mod check;
mod impls;

pub use super::{StaticDescriptor, TensorSet, TensorSink};
pub use crate::{
    Dim, Element, ElementType, Error, File, Layout, Quantization, Result, TensorDescriptor, Writer,
    quantization::QuantizationScheme, reader::Reader,
};
pub use check::{check, infer_shape};
pub use impls::{assert_same_size, static_descriptor};
pub use std::{
    collections::BTreeMap,
    convert::AsRef,
    io::Write,
    iter::{IntoIterator, Iterator},
    option::Option,
    path::Path,
    primitive::{str, u64},
    string::String,
    vec::Vec,
};

use crate::reader::TensorRef;
use std::fmt;

/// Metadata entries a derived struct declares with `#[hurray(metadata(...))]`.
pub type StaticMetadata = &'static [(&'static str, &'static str)];

/// The sparse layout a field declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutKind {
    Dense,
    Csr,
    Csc,
    Coo,
}

/// The quantization a field declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantSpec {
    pub scheme: QuantizationScheme,
    pub expressed_type: ElementType,
}

/// What the attributes of one field declare.
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    /// The field's tensor name, without prefix.
    pub name: &'static str,
    /// The declared shape, if any.
    pub shape: Option<&'static [Dim]>,
    pub layout: LayoutKind,
    pub quantization: Option<QuantSpec>,
    /// The tensor's declared metadata (`#[hurray(metadata(key = "value"))]`).
    pub metadata: StaticMetadata,
}

/// A type a derived struct's field may have.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor field type",
    label = "not a tensor field type",
    note = "tensor fields are `&'a [T]` or `Vec<T>` with `T: hurray::Element`, `Packed`, `Compressed`, `Coo` or `Quantized`"
)]
pub trait TensorField<'a>: Sized {
    /// The descriptor of this value, named `name`.
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor>;
    /// The bytes of every buffer, in on-wire order.
    fn buffers(&self) -> Vec<&[u8]>;
    /// Reads the field from `t`, checking it against `spec`.
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self>;
}

/// `prefix` + `name`.
pub fn join(prefix: &str, name: &str) -> String {
    let mut s = String::with_capacity(prefix.len() + name.len());
    s.push_str(prefix);
    s.push_str(name);
    s
}

/// The prefix of a nested struct's tensors: `prefix` + `name` + `.`.
pub fn nested(prefix: &str, name: &str) -> String {
    let mut s = join(prefix, name);
    s.push('.');
    s
}

/// The operations of one field type, as function pointers: built once per
/// field (where an unsatisfied bound is reported, once), then called
/// without further bounds.
pub struct FieldOps<'a, F> {
    descriptor: fn(&F, &str, &FieldSpec) -> Result<TensorDescriptor>,
    buffers: fn(&F) -> Vec<&[u8]>,
    load: fn(TensorRef<'a>, &FieldSpec) -> Result<F>,
}

impl<F> Clone for FieldOps<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for FieldOps<'_, F> {}

impl<F> fmt::Debug for FieldOps<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FieldOps").finish_non_exhaustive()
    }
}

/// The operations of field type `F`.
pub fn field_ops<'a, F: TensorField<'a>>() -> FieldOps<'a, F> {
    FieldOps {
        descriptor: F::descriptor,
        buffers: F::buffers,
        load: F::load,
    }
}

impl<'a, F> FieldOps<'a, F> {
    /// The field's descriptor with its metadata: the declared entries, then
    /// the runtime ones of its `metadata_of` field (`extra`), which win.
    fn full_descriptor(
        self,
        value: &F,
        prefix: &str,
        spec: &FieldSpec,
        extra: Option<&BTreeMap<String, String>>,
    ) -> Result<TensorDescriptor> {
        let mut desc = (self.descriptor)(value, &join(prefix, spec.name), spec)?;
        for (k, v) in spec.metadata {
            desc.metadata.insert((*k).to_owned(), (*v).to_owned());
        }
        if let Some(extra) = extra {
            desc.metadata
                .extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Ok(desc)
    }

    pub fn describe(
        self,
        value: &F,
        prefix: &str,
        spec: &FieldSpec,
        extra: Option<&BTreeMap<String, String>>,
        out: &mut Vec<TensorDescriptor>,
    ) -> Result<()> {
        out.push(self.full_descriptor(value, prefix, spec, extra)?);
        Ok(())
    }

    pub fn describe_optional(
        self,
        value: &Option<F>,
        prefix: &str,
        spec: &FieldSpec,
        extra: Option<&BTreeMap<String, String>>,
        out: &mut Vec<TensorDescriptor>,
    ) -> Result<()> {
        match value {
            Some(v) => self.describe(v, prefix, spec, extra, out),
            None => Ok(()),
        }
    }

    pub fn write(
        self,
        value: &F,
        prefix: &str,
        spec: &FieldSpec,
        extra: Option<&BTreeMap<String, String>>,
        sink: &mut dyn TensorSink,
    ) -> Result<()> {
        let desc = self.full_descriptor(value, prefix, spec, extra)?;
        sink.add_tensor(&desc, &(self.buffers)(value))
    }

    pub fn write_optional(
        self,
        value: &Option<F>,
        prefix: &str,
        spec: &FieldSpec,
        extra: Option<&BTreeMap<String, String>>,
        sink: &mut dyn TensorSink,
    ) -> Result<()> {
        match value {
            Some(v) => self.write(v, prefix, spec, extra, sink),
            None => Ok(()),
        }
    }

    pub fn read(self, reader: &Reader<'a>, prefix: &str, spec: &FieldSpec) -> Result<F> {
        (self.load)(reader.tensor(&join(prefix, spec.name))?, spec)
    }

    pub fn read_optional(
        self,
        reader: &Reader<'a>,
        prefix: &str,
        spec: &FieldSpec,
    ) -> Result<Option<F>> {
        match reader.get(&join(prefix, spec.name)) {
            Some(t) => (self.load)(t, spec).map(Some),
            None => Ok(None),
        }
    }
}

/// The operations of a nested struct, as function pointers (see [`FieldOps`]).
pub struct NestedOps<'a, T> {
    describe: fn(&T, &str, &mut Vec<TensorDescriptor>) -> Result<()>,
    write: fn(&T, &str, &mut dyn TensorSink) -> Result<()>,
    read: fn(&Reader<'a>, &str) -> Result<T>,
}

impl<T> Clone for NestedOps<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for NestedOps<'_, T> {}

impl<T> fmt::Debug for NestedOps<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NestedOps").finish_non_exhaustive()
    }
}

/// The operations of nested struct type `T`.
pub fn nested_ops<'a, T: TensorSet<'a>>() -> NestedOps<'a, T> {
    NestedOps {
        describe: T::describe_tensors,
        write: T::write_tensors,
        read: T::read_tensors,
    }
}

impl<'a, T> NestedOps<'a, T> {
    pub fn describe(
        self,
        value: &T,
        prefix: &str,
        name: &str,
        out: &mut Vec<TensorDescriptor>,
    ) -> Result<()> {
        (self.describe)(value, &nested(prefix, name), out)
    }

    pub fn write(
        self,
        value: &T,
        prefix: &str,
        name: &str,
        sink: &mut dyn TensorSink,
    ) -> Result<()> {
        (self.write)(value, &nested(prefix, name), sink)
    }

    pub fn read(self, reader: &Reader<'a>, prefix: &str, name: &str) -> Result<T> {
        (self.read)(reader, &nested(prefix, name))
    }

    pub fn describe_optional(
        self,
        value: &Option<T>,
        prefix: &str,
        name: &str,
        out: &mut Vec<TensorDescriptor>,
    ) -> Result<()> {
        match value {
            Some(v) => self.describe(v, prefix, name, out),
            None => Ok(()),
        }
    }

    pub fn write_optional(
        self,
        value: &Option<T>,
        prefix: &str,
        name: &str,
        sink: &mut dyn TensorSink,
    ) -> Result<()> {
        match value {
            Some(v) => self.write(v, prefix, name, sink),
            None => Ok(()),
        }
    }

    /// `None` when no tensor of the file is under the struct's prefix;
    /// otherwise the struct, whose missing required tensors are errors
    /// naming them (a partly present struct is not absent).
    pub fn read_optional(self, reader: &Reader<'a>, prefix: &str, name: &str) -> Result<Option<T>> {
        let prefix = nested(prefix, name);
        if !reader.has_prefix(&prefix) {
            return Ok(None);
        }
        (self.read)(reader, &prefix).map(Some)
    }
}

/// Writes file metadata entries: a struct's declared ones, or its
/// `#[hurray(metadata)]` field's (any map of strings).
pub fn write_file_metadata<K: AsRef<str>, V: AsRef<str>>(
    sink: &mut dyn TensorSink,
    entries: impl IntoIterator<Item = (K, V)>,
) -> Result<()> {
    for (k, v) in entries {
        sink.set_metadata(k.as_ref(), v.as_ref())?;
    }
    Ok(())
}

/// A metadata field's entries (a `BTreeMap<String, String>`, a `HashMap`,
/// ...) as the sorted map descriptors hold.
pub fn metadata_map<'m>(
    entries: impl IntoIterator<Item = (&'m String, &'m String)>,
) -> BTreeMap<String, String> {
    entries
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The file's metadata, for a `#[hurray(metadata)]` field.
pub fn read_file_metadata(reader: &Reader<'_>) -> BTreeMap<String, String> {
    reader.metadata().to_map()
}

/// The metadata of tensor `prefix` + `name`, for a `#[hurray(metadata_of)]`
/// field; empty when the tensor is absent (its own field reports a missing
/// required tensor).
pub fn read_tensor_metadata(
    reader: &Reader<'_>,
    prefix: &str,
    name: &str,
) -> BTreeMap<String, String> {
    reader
        .get(&join(prefix, name))
        .map(|t| t.metadata().to_map())
        .unwrap_or_default()
}
