//! `hurray-import-constants`: the references `hurray-export-constants` left,
//! resolved back to constants from the Hurray file.

use super::resource::{self, Fill};
use crate::error::{Error, Result};
use crate::ffi::{self, Blob};
use crate::lower::{Slot, all_attributes, describe_op, dims, for_each_child};
use crate::reference::{self, FILE_ATTR, Form};
use crate::typed;
use crate::types::{self, Storage};
use hurray::{File, Layout, TensorRef, descriptor::BufferRole};
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRefMut};
use melior::ir::{Attribute, OperationRef};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The options of `hurray-import-constants`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The Hurray file to read; `None`: the module's [`FILE_ATTR`].
    pub file: Option<PathBuf>,
}

impl ImportOptions {
    /// Reads the file the module names.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `file` instead of the one the module names.
    pub fn file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    /// The file read.
    pub file: PathBuf,
    /// The tensors restored, in the order the IR references them.
    pub tensors: Vec<String>,
}

/// Resolves every reference in `module` (a `builtin.module`) from the Hurray
/// file, checking each against the tensor it names, and removes
/// [`FILE_ATTR`]. A `resource` reference of a byte-aligned type borrows the
/// file's memory (the map lives until MLIR drops the blob); others are
/// copied into the form MLIR holds. On error, references already resolved
/// stay resolved and the rest stay references.
pub fn import_constants(
    module: OperationRefMut<'_, '_>,
    options: &ImportOptions,
) -> Result<Imported> {
    let named = module
        .attribute(FILE_ATTR)
        .ok()
        .and_then(ffi::string_attr)
        .map(PathBuf::from);
    let path = options
        .file
        .clone()
        .or(named)
        .ok_or_else(|| Error::Unsupported {
            op: describe_op(&super::read_only(module)),
            what: "importing constants".into(),
            reason: format!("no file: pass file=PATH, or give the module a {FILE_ATTR} attribute"),
        })?;
    let file = Arc::new(File::open(&path)?);
    let mut resolver = Resolver {
        file,
        path: path.clone(),
        dense: BTreeMap::new(),
        filled: BTreeSet::new(),
        tensors: Vec::new(),
    };
    resolver.visit(&super::read_only(module))?;
    let mut module = module;
    module.remove_attribute(FILE_ATTR).ok();
    Ok(Imported {
        file: path,
        tensors: resolver.tensors,
    })
}

struct Resolver<'c> {
    file: Arc<File>,
    path: PathBuf,
    /// `dense` attributes made so far, by key (one constant may be used by
    /// several ops).
    dense: BTreeMap<String, Attribute<'c>>,
    /// Keys of `resource` references this import gave data.
    filled: BTreeSet<String>,
    tensors: Vec<String>,
}

impl<'c> Resolver<'c> {
    fn visit(&mut self, op: &OperationRef<'c, '_>) -> Result<()> {
        for (name, value) in all_attributes(op) {
            if !ffi::is_dense_resource(value) {
                continue;
            }
            match ffi::resource_blob(value) {
                Blob::Missing(key) => {
                    if let Some((form, tensor)) = reference::parse_key(&key) {
                        let slot = name.map_or(Slot::Properties, Slot::Named);
                        self.resolve(op, slot, value, &key, form, tensor)?;
                    }
                }
                // A reference that already has data, which this import did
                // not give it: another module of this context referred to the
                // same key and was imported from its own file. Its bytes are
                // not this file's, so they are not taken on trust.
                Blob::Data(key, _) if !self.filled.contains(&key) => {
                    if let Some((_, tensor)) = reference::parse_key(&key) {
                        return Err(Error::Reference {
                            op: describe_op(op),
                            tensor: tensor.to_owned(),
                            file: self.path.clone(),
                            reason: format!(
                                "resource {key:?} already holds data from another import in \
                                 this context; export and import each module in a context of \
                                 its own"
                            ),
                        });
                    }
                }
                _ => {}
            }
        }
        for_each_child(op, |child| self.visit(child))
    }

    fn resolve(
        &mut self,
        op: &OperationRef<'c, '_>,
        slot: Slot,
        value: Attribute<'c>,
        key: &str,
        form: Form,
        tensor: &str,
    ) -> Result<()> {
        let bad = |reason: String| Error::Reference {
            op: describe_op(op),
            tensor: tensor.to_owned(),
            file: self.path.clone(),
            reason,
        };
        let ty = typed::attr_type(value);
        let t = self
            .file
            .tensor(tensor)
            .map_err(|_| bad("the file has no tensor of that name".into()))?;
        let storage = check(&t, ty).map_err(bad)?;
        let count = t.element_count().unwrap_or(0);
        let bytes = t.buffer(BufferRole::Values).unwrap_or(&[]);
        match form {
            Form::Resource => {
                let filled = match storage {
                    Storage::Same { bytes: element } => {
                        // The bytes stay in the file's map; the blob keeps the
                        // map alive.
                        let owner: resource::Owner = Box::new(Arc::clone(&self.file));
                        resource::fill(value, bytes, element, owner)
                    }
                    Storage::Bits | Storage::BytePerElement { .. } => {
                        // MLIR holds these one element per byte.
                        let codes: Vec<u8> =
                            hurray::pack::unpack_codes(bytes, storage.bits(), count).collect();
                        resource::fill_owned(value, codes)
                    }
                };
                if filled != Fill::Done {
                    return Err(bad(format!("MLIR refused the bytes ({filled:?})")));
                }
                self.filled.insert(key.to_owned());
            }
            Form::Dense => {
                let dense = match self.dense.get(key) {
                    Some(d) => *d,
                    None => {
                        let raw = types::dense_raw(storage, bytes, count);
                        let d = ffi::dense_from_raw(ty, &raw).ok_or_else(|| {
                            bad(format!(
                                "MLIR rejects {} bytes for {}",
                                raw.len(),
                                ffi::type_str(ty)
                            ))
                        })?;
                        self.dense.insert(key.to_owned(), d);
                        d
                    }
                };
                // SAFETY: `op` is an op of the module `import_constants` holds
                // mutably borrowed; only this attribute changes.
                let target = unsafe { OperationRefMut::from_raw(op.to_raw()) };
                if !resource::set(target, &slot, dense) {
                    return Err(bad("MLIR did not take the restored attribute".into()));
                }
            }
        }
        self.tensors.push(tensor.to_owned());
        Ok(())
    }
}

/// The storage of `t`'s elements if a reference of type `ty` may take its
/// values: a dense tensor with data, of the same element type and shape.
fn check(t: &TensorRef<'_>, ty: melior::ir::Type<'_>) -> std::result::Result<Storage, String> {
    let d = t.descriptor();
    if d.descriptor_only {
        return Err("the file's tensor is descriptor-only (it has no data)".into());
    }
    if d.layout != Layout::Dense {
        return Err(format!(
            "the file's tensor has layout {}, not dense",
            d.layout.name()
        ));
    }
    let element = ffi::element_type(ty).and_then(types::hurray_type);
    if element != Some(d.element_type) {
        return Err(format!(
            "the IR expects {} but the file's tensor is {}",
            ffi::type_str(ty),
            d.element_type.name()
        ));
    }
    // The lowering's reading of an MLIR shape (a malformed one is none).
    let shape = ffi::ranked_shape(ty).and_then(|raw| dims(&raw, "", ty).ok());
    if shape.as_ref() != Some(&d.shape) {
        return Err(format!(
            "the IR expects {} but the file's tensor has shape {:?}",
            ffi::type_str(ty),
            d.shape
        ));
    }
    Ok(types::storage(d.element_type))
}
