//! `hurray-export-constants`: the module's tensor constants to a Hurray
//! file, references in their place.

use super::{parameters, resource};
use crate::error::{Error, Result};
use crate::ffi;
use crate::lower::{self, Collected, Entry, LowerOptions, Lowered, Origin};
use crate::reference::{self, FILE_ATTR, Form};
use crate::typed;
use hurray::Writer;
use melior::ir::attribute::StringAttribute;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRefMut};
use melior::ir::{Attribute, ValueLike};
use std::io::Write;
use std::path::PathBuf;

/// The options of `hurray-export-constants`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportOptions {
    /// The Hurray file to write (atomically: nothing appears there unless
    /// the whole export succeeds). Recorded in the module as given.
    pub file: PathBuf,
    /// Constants holding at least this many bytes of IR are exported.
    /// Default: 256.
    pub threshold: u64,
    /// Keep constants under the threshold inline (default); `false` exports
    /// every constant that can be referenced, empty ones included.
    pub inline_small: bool,
    /// Record a CRC-32C of every buffer (default), computed in the same pass
    /// as the write; `hurray validate --checksums` checks them.
    pub checksums: bool,
    /// Make each exported constant an IREE parameter of this scope
    /// (`#flow.parameter.named<"SCOPE"::"NAME">`, see `passes/parameters.rs`)
    /// instead of a `dense_resource` reference; `None` (default): references.
    pub parameters: Option<String>,
}

impl ExportOptions {
    /// Exports to `file` with the default threshold (256 bytes).
    pub fn new(file: impl Into<PathBuf>) -> Self {
        Self {
            file: file.into(),
            threshold: 256,
            inline_small: true,
            checksums: true,
            parameters: None,
        }
    }

    /// Sets [`ExportOptions::threshold`].
    pub fn threshold(mut self, bytes: u64) -> Self {
        self.threshold = bytes;
        self
    }

    /// Sets [`ExportOptions::inline_small`].
    pub fn inline_small(mut self, inline_small: bool) -> Self {
        self.inline_small = inline_small;
        self
    }

    /// Sets [`ExportOptions::checksums`].
    pub fn checksums(mut self, checksums: bool) -> Self {
        self.checksums = checksums;
        self
    }

    /// Sets [`ExportOptions::parameters`]: exported constants become IREE
    /// parameters of `scope`.
    pub fn parameters(mut self, scope: impl Into<String>) -> Self {
        self.parameters = Some(scope.into());
        self
    }
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// The file written: every exported constant and every signature
    /// (descriptor-only), in file order.
    pub lowered: Lowered,
    /// The tensors whose constants now hold references, in file order.
    pub references: Vec<String>,
    /// Constants left inline: under the threshold, splats, sparse, or held
    /// where a reference cannot go (properties an unregistered op read from
    /// bytecode keeps in its own encoding).
    pub inline: usize,
}

/// Exports the tensor constants of `module` (a `builtin.module`) by
/// `options`: writes the file, then replaces each exported constant's
/// elements attribute with its reference and sets [`FILE_ATTR`]. On error
/// the IR is unchanged and no file is written.
pub fn export_constants(
    module: OperationRefMut<'_, '_>,
    options: &ExportOptions,
) -> Result<Exported> {
    export_with(module, options, || Ok(Writer::create(&options.file)?))
}

/// As [`export_constants`], but the file's bytes go to `out` (a buffer, a
/// socket, an object store upload); the module still names
/// [`ExportOptions::file`], where the bytes are expected to end up.
pub fn export_constants_into<W: Write>(
    module: OperationRefMut<'_, '_>,
    out: W,
    options: &ExportOptions,
) -> Result<Exported> {
    export_with(module, options, || Ok(Writer::new(out)?))
}

fn export_with<W: Write>(
    module: OperationRefMut<'_, '_>,
    options: &ExportOptions,
    writer: impl FnOnce() -> Result<Writer<W>>,
) -> Result<Exported> {
    let op = super::read_only(module);
    let collected = lower::collect(&op, LowerOptions::default())?;
    let symbols = if options.parameters.is_some() {
        parameters::top_level_symbols(&op)
    } else {
        Default::default()
    };
    let mut written = Vec::new();
    let mut references = Vec::new();
    let mut inline = 0usize;
    for entry in collected.entries {
        if entry.desc.descriptor_only {
            written.push(entry);
            continue;
        }
        match reference_for(&entry, options, &symbols, op.to_raw())? {
            Some(reference) => {
                references.push((entry.desc.name.clone(), reference));
                written.push(entry);
            }
            None => inline += 1,
        }
    }
    let kept = Collected {
        entries: written,
        skipped: collected.skipped,
        file: collected.file,
    };
    let mut writer = writer()?;
    if !options.checksums {
        writer.set_checksums(None)?;
    }
    let lowered = lower::write_all(writer, kept)?;
    let mut names = Vec::with_capacity(references.len());
    let mut module = module;
    let mut globals = 0;
    for (name, (origin, reference)) in references {
        // SAFETY: `origin.op` was collected from `module`, which this
        // function holds mutably borrowed; nothing has erased ops since.
        let target = unsafe { OperationRefMut::from_raw(origin.op) };
        if options.parameters.is_some() && target.result_count() > 0 {
            // The new globals come first in the module, in the order their
            // constants were found.
            parameters::replace(&mut module, globals, origin.op, &name, reference)?;
            globals += 1;
            names.push(name);
            continue;
        }
        if !resource::set(target, &origin.slot, reference) {
            return Err(Error::Unsupported {
                op: lower::describe_op(&super::read_only(target)),
                what: format!("replacing the value of tensor {name:?}"),
                reason: "MLIR did not take the reference (the file is written; constants \
                         before this one hold references already)"
                    .into(),
            });
        }
        names.push(name);
    }
    let path = options.file.to_string_lossy();
    let ctx = module.context();
    // SAFETY: the module's own context, alive while the module is.
    let ctx = unsafe { ctx.to_ref() };
    module.set_attribute(FILE_ATTR, StringAttribute::new(ctx, &path).into());
    Ok(Exported {
        lowered,
        references: names,
        inline,
    })
}

/// The reference that replaces `entry`'s constant, if it is exported:
/// `None` when it stays inline.
fn reference_for<'c>(
    entry: &Entry<'c>,
    options: &ExportOptions,
    symbols: &std::collections::HashSet<String>,
    module: mlir_sys::MlirOperation,
) -> Result<Option<(Origin<'c>, Attribute<'c>)>> {
    let Some(origin) = &entry.origin else {
        return Ok(None);
    };
    let value = origin.value;
    if typed::is_sparse_elements(value)
        || (typed::is_dense_elements(value) && ffi::dense_is_splat(value))
    {
        return Ok(None);
    }
    let bytes: u64 = entry.buffers.iter().map(|b| b.in_len()).sum();
    if options.inline_small && bytes < options.threshold {
        return Ok(None);
    }
    let form = if ffi::is_dense_resource(value) {
        Form::Resource
    } else {
        Form::Dense
    };
    if let Some(scope) = &options.parameters {
        // A bool is a bit in Hurray and a byte in IREE's i1 buffers: it
        // stays inline rather than be misread.
        if entry.desc.element_type == hurray::ElementType::Bool {
            return Ok(None);
        }
        let op = entry.op.clone();
        let ty = typed::attr_type(value);
        // SAFETY: the collected op is alive (see `export_with`).
        let constant = unsafe { melior::ir::OperationRef::from_raw(origin.op) };
        parameters::check(&constant, module, scope, &entry.desc.name, symbols)?;
        if let Ok(result) = constant.result(0)
            && result.r#type() != ty
        {
            return Err(Error::Unsupported {
                op,
                what: format!("making tensor {:?} an IREE parameter", entry.desc.name),
                reason: format!(
                    "the op's result type {} is not its value's type {ty}",
                    result.r#type()
                ),
            });
        }
        let parameter = parameters::attribute(constant.context(), scope, &entry.desc.name, ty)
            .ok_or_else(|| Error::Unsupported {
                op,
                what: format!("making tensor {:?} an IREE parameter", entry.desc.name),
                reason: "the context does not allow unregistered dialects (IREE's util and \
                         flow), which the parameters are written in (mlir-opt-22: \
                         --allow-unregistered-dialect)"
                    .into(),
            })?;
        return Ok(Some((origin.clone(), parameter)));
    }
    let key = reference::key(form, &entry.desc.name);
    let reference =
        resource::reference(typed::attr_type(value), &key).ok_or_else(|| Error::Unsupported {
            op: entry.op.clone(),
            what: format!("a reference to tensor {:?}", entry.desc.name),
            reason: format!(
                "the context already holds data under resource key {key:?} (export each \
                 module into a context of its own, or import it first)"
            ),
        })?;
    Ok(Some((origin.clone(), reference)))
}
