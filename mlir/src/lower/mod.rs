//! Lowering an MLIR module to a Hurray file.
//!
//! One pass over the IR collects an [`Entry`] per tensor (descriptor plus
//! borrowed payload); a second pass streams them into a [`hurray::Writer`].
//! Payload bytes are read in place from MLIR's storage (dense raw data,
//! `dense_resource` blobs) and written without an intermediate copy, except
//! where the encodings differ (2-, 4- and 6-bit types are packed, splats expanded,
//! sparse coordinates converted).
//!
//! The lowering reads as a table of contents: [`Collector::visit`] is the one
//! dispatch from an op name to the module lowering that construct.
//!
//! - [`ops`]: one module per lowered construct (`constant`, `global`,
//!   `signature`, `assemble`, `hurray_dialect`);
//! - [`elements`]: a tensor entry from an elements attribute;
//! - [`quant`]: `!quant` types to Hurray quantization descriptors;
//! - [`sparse`]: sparse elements and encodings to COO / CSR / CSC buffers;
//! - [`payload`]: buffers as MLIR holds them, and writing them to the file.

mod elements;
mod ops;
mod payload;
mod quant;
mod sparse;

use crate::error::{Error, Result};
use crate::ffi::{self, RawDim};
use crate::types;
use crate::vocab;
use hurray::elements::ElementCount;
use hurray::{Dim, ElementType, TensorDescriptor, Writer};
use melior::ir::operation::OperationLike;
use melior::ir::{Attribute, BlockLike, Module, OperationRef, RegionLike, Type};
pub(crate) use payload::{Buf, write_all};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The discardable attribute that names a tensor explicitly: on a constant op,
/// or in a function's argument / result attributes.
pub const NAME_ATTR: &str = "hurray.name";

/// What to lower besides tensor constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LowerOptions {
    /// Record the ranked tensor arguments and results of every function as
    /// descriptor-only tensors `<func>/arg<i>`, `<func>/result<i>` (dynamic
    /// dimensions as the dynamic sentinel). Default: on.
    pub signatures: bool,
    /// Record each `tensor.empty` result as a descriptor-only tensor (it is
    /// uninitialised, so never data). Default: off.
    pub tensor_empty: bool,
    /// Store `index` elements as `i64` instead of failing. Default: off.
    pub index_as_i64: bool,
    /// Write tensors far larger than the IR bytes they come from (a splat
    /// of a huge shape, a dense constant with a sparse encoding); otherwise
    /// refused by [`hurray::limits::check_expansion`] before anything is
    /// written or built. Default: off.
    pub allow_expansion: bool,
}

impl Default for LowerOptions {
    fn default() -> Self {
        Self {
            signatures: true,
            tensor_empty: false,
            index_as_i64: false,
            allow_expansion: false,
        }
    }
}

/// One tensor the lowering wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoweredTensor {
    /// The operation it came from, with its location.
    pub op: String,
    pub descriptor: TensorDescriptor,
    /// Bytes of all its buffers.
    pub bytes: u64,
}

/// What a lowering did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lowered {
    /// Every tensor written, in file order (sorted by name).
    pub tensors: Vec<LoweredTensor>,
    /// Things seen and deliberately not lowered, one sentence each (an
    /// unranked signature type, an external global, ...).
    pub skipped: Vec<String>,
    /// The file's length in bytes.
    pub file_len: u64,
}

/// Lowers `module` into a Hurray file appended to `out`, written straight
/// into its memory ([`Writer::in_memory`]).
pub fn lower_module(
    module: &Module<'_>,
    out: &mut Vec<u8>,
    options: LowerOptions,
) -> Result<Lowered> {
    let collected = collect(&module.as_operation(), options)?;
    write_all(Writer::in_memory(out)?, collected)
}

/// Lowers `module` into a Hurray file streamed to `out` (a socket, a pipe):
/// through the writer's staging buffer, which costs a copy that
/// [`lower_module`] into a vector does not.
pub fn lower_module_to_writer<W: Write>(
    module: &Module<'_>,
    out: W,
    options: LowerOptions,
) -> Result<Lowered> {
    let collected = collect(&module.as_operation(), options)?;
    write_all(Writer::new(out)?, collected)
}

/// Lowers `module` into the Hurray file at `path`, atomically (nothing appears
/// at `path` unless the whole lowering succeeds).
pub fn lower_module_to_path(
    module: &Module<'_>,
    path: &Path,
    options: LowerOptions,
) -> Result<Lowered> {
    let collected = collect(&module.as_operation(), options)?;
    write_all(Writer::create(path)?, collected)
}

/// A tensor entry waiting to be written.
#[derive(Debug)]
pub(crate) struct Entry<'c> {
    pub(crate) desc: TensorDescriptor,
    pub(crate) op: String,
    /// Layout buffers, then scales and zero points; empty when descriptor-only.
    pub(crate) buffers: Vec<Buf<'c>>,
    /// Where the values came from, when they are one elements attribute
    /// that the op holds by name (what `hurray-export-constants` replaces).
    pub(crate) origin: Option<Origin<'c>>,
}

/// The op attribute a tensor entry's values were read from.
#[derive(Debug, Clone)]
pub(crate) struct Origin<'c> {
    /// The op, raw (an `OperationRef` would borrow the visitor's parent):
    /// valid while the module it was collected from is, which whoever
    /// collected holds borrowed (see `passes::export`).
    pub(crate) op: mlir_sys::MlirOperation,
    /// Where the op holds it.
    pub(crate) slot: Slot,
    /// The elements attribute itself.
    pub(crate) value: Attribute<'c>,
}

/// Where an op holds an attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    /// By name (`value`, `values`, `initial_value`; an entry of the
    /// properties dictionary of an unregistered op parsed from text).
    Named(String),
    /// As the whole properties of an unregistered op read from bytecode.
    Properties,
}

impl<'c> Origin<'c> {
    pub(crate) fn new(op: &OperationRef<'c, '_>, slot: Slot, value: Attribute<'c>) -> Self {
        Self {
            op: op.to_raw(),
            slot,
            value,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct FileAttrs {
    pub(crate) alignment: Option<u64>,
    pub(crate) metadata: BTreeMap<String, String>,
}

#[derive(Debug)]
pub(crate) struct Collected<'c> {
    pub(crate) entries: Vec<Entry<'c>>,
    pub(crate) skipped: Vec<String>,
    pub(crate) file: Option<FileAttrs>,
}

pub(crate) struct Collector<'c> {
    pub(crate) options: LowerOptions,
    pub(crate) entries: Vec<Entry<'c>>,
    pub(crate) names: BTreeMap<String, String>,
    pub(crate) skipped: Vec<String>,
    pub(crate) file: Option<(FileAttrs, String)>,
    /// Names proposed by bare named locations, per entry index; taken by
    /// [`Collector::take_proposed_names`] where unambiguous.
    pub(crate) proposed: Vec<(usize, String)>,
}

/// The resource policy for one tensor of the lowering: unless expansion was
/// allowed, `output` bytes may be made from `input` bytes of IR only within
/// [`hurray::limits::check_expansion`]. Checked before a buffer is built
/// (sparse conversions) and once more for the whole entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget<'a> {
    pub(crate) tensor: &'a str,
    pub(crate) allow_expansion: bool,
}

impl Budget<'_> {
    pub(crate) fn check(&self, op: &str, input: u64, output: u64) -> Result<()> {
        if self.allow_expansion {
            return Ok(());
        }
        hurray::limits::check_expansion(self.tensor, input, output).map_err(|e| Error::Tensor {
            tensor: self.tensor.to_owned(),
            op: op.to_owned(),
            error: Box::new(e),
        })
    }
}

/// The naming scope of generated names: a function (or other symbol with a
/// body), with its own pre-order operation counter.
pub(crate) struct Scope {
    pub(crate) name: String,
    pub(crate) counter: usize,
}

pub(crate) fn op_name(op: &OperationRef<'_, '_>) -> String {
    op.name()
        .as_string_ref()
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|_| "<non-UTF-8 op name>".to_owned())
}

pub(crate) fn describe_op(op: &OperationRef<'_, '_>) -> String {
    format!("'{}' at {}", op_name(op), ffi::location_str(op.location()))
}

pub(crate) fn attr<'c>(op: &OperationRef<'c, '_>, name: &str) -> Option<Attribute<'c>> {
    op.attribute(name).ok()
}

/// Every attribute `op` holds, with its name (`None`: the attribute is the
/// whole properties): its attribute list, then the properties of an
/// unregistered op (a dictionary when parsed from text, whose entries the C
/// API's attribute list leaves out; one attribute when read from bytecode).
pub(crate) fn all_attributes<'c>(
    op: &OperationRef<'c, '_>,
) -> Vec<(Option<String>, Attribute<'c>)> {
    let mut all: Vec<(Option<String>, Attribute<'c>)> = op
        .attributes()
        .map(|(n, a)| (n.as_string_ref().as_str().ok().map(str::to_owned), a))
        .collect();
    if let Some(p) = ffi::unregistered_properties(op) {
        match ffi::dictionary_attr(p) {
            Some(entries) => all.extend(entries.into_iter().map(|(n, a)| (Some(n), a))),
            None => all.push((None, p)),
        }
    }
    all
}

/// Calls `f` on every operation directly inside `op`'s regions, in order.
pub(crate) fn for_each_child<'c>(
    op: &OperationRef<'c, '_>,
    mut f: impl FnMut(&OperationRef<'c, '_>) -> Result<()>,
) -> Result<()> {
    for region in op.regions() {
        let mut block = region.first_block();
        while let Some(b) = block {
            let mut next = b.first_operation();
            while let Some(child) = next {
                f(&child)?;
                next = child.next_in_block();
            }
            block = b.next_in_region();
        }
    }
    Ok(())
}

pub(crate) fn sym_name(op: &OperationRef<'_, '_>) -> Option<String> {
    attr(op, "sym_name").and_then(ffi::string_attr)
}

/// Every tensor entry of `module` (a `builtin.module` op), names settled.
pub(crate) fn collect<'c>(
    module: &OperationRef<'c, '_>,
    options: LowerOptions,
) -> Result<Collected<'c>> {
    let mut c = Collector {
        options,
        entries: Vec::new(),
        names: BTreeMap::new(),
        skipped: Vec::new(),
        file: None,
        proposed: Vec::new(),
    };
    let mut scope = Scope {
        name: "module".to_owned(),
        counter: 0,
    };
    c.visit_regions(module, &mut scope, "")?;
    c.take_proposed_names();
    Ok(Collected {
        entries: c.entries,
        skipped: c.skipped,
        file: c.file.map(|(f, _)| f),
    })
}

impl<'c> Collector<'c> {
    /// The resource policy for tensor `name`.
    pub(crate) fn budget<'a>(&self, tensor: &'a str) -> Budget<'a> {
        Budget {
            tensor,
            allow_expansion: self.options.allow_expansion,
        }
    }

    pub(crate) fn add(&mut self, entry: Entry<'c>) -> Result<()> {
        if let Some(first) = self.names.get(&entry.desc.name) {
            return Err(Error::DuplicateName {
                name: entry.desc.name.clone(),
                first: first.clone(),
                second: entry.op.clone(),
            });
        }
        let input: u64 = entry.buffers.iter().map(Buf::in_len).sum();
        let output = entry
            .buffers
            .iter()
            .fold(0u64, |sum, b| sum.saturating_add(b.out_len()));
        self.budget(&entry.desc.name)
            .check(&entry.op, input, output)?;
        self.names.insert(entry.desc.name.clone(), entry.op.clone());
        self.entries.push(entry);
        Ok(())
    }

    /// Adds a descriptor-only tensor (no buffers) made from `op`.
    pub(crate) fn add_descriptor_only(&mut self, desc: TensorDescriptor, op: &str) -> Result<()> {
        self.add(Entry {
            desc,
            op: op.to_owned(),
            buffers: Vec::new(),
            origin: None,
        })
    }

    /// Proposes `name` (from a bare named location) for the entry added last.
    pub(crate) fn propose_name(&mut self, name: String) {
        if let Some(last) = self.entries.len().checked_sub(1) {
            self.proposed.push((last, name));
        }
    }

    /// Renames the entries whose proposed name is unambiguous: proposed for
    /// exactly one entry, and not the name of any entry. A name many values
    /// share (a location reused across ops) names none of them.
    fn take_proposed_names(&mut self) {
        let mut count = BTreeMap::<&str, usize>::new();
        for (_, name) in &self.proposed {
            *count.entry(name).or_default() += 1;
        }
        let taken: Vec<(usize, String)> = self
            .proposed
            .iter()
            .filter(|(_, name)| count[name.as_str()] == 1 && !self.names.contains_key(name))
            .cloned()
            .collect();
        for (index, name) in taken {
            let entry = &mut self.entries[index];
            let old = std::mem::replace(&mut entry.desc.name, name.clone());
            if let Some(op) = self.names.remove(&old) {
                self.names.insert(name, op);
            }
        }
        self.proposed.clear();
    }

    pub(crate) fn visit_regions(
        &mut self,
        op: &OperationRef<'c, '_>,
        scope: &mut Scope,
        prefix: &str,
    ) -> Result<()> {
        for_each_child(op, |child| self.visit(child, scope, prefix))
    }

    pub(crate) fn element(&self, ty: Type<'c>, op: &str, context: &str) -> Result<ElementType> {
        if let Some(et) = types::hurray_type(ty) {
            return Ok(et);
        }
        let is_index = ffi::type_str(ty) == "index";
        if is_index && self.options.index_as_i64 {
            return Ok(ElementType::Int64);
        }
        Err(Error::UnsupportedType {
            op: op.to_owned(),
            ty: ffi::describe(ty),
            context: context.to_owned(),
            hint: if is_index {
                " (`index` has no fixed width; lower with index-as-i64 to store it as i64)"
            } else {
                ""
            },
        })
    }

    pub(crate) fn visit(
        &mut self,
        op: &OperationRef<'c, '_>,
        scope: &mut Scope,
        prefix: &str,
    ) -> Result<()> {
        let index = scope.counter;
        scope.counter += 1;
        let name = op_name(op);
        let desc = describe_op(op);
        match name.as_str() {
            "builtin.module" => {
                let p = match sym_name(op) {
                    Some(s) => format!("{prefix}{s}/"),
                    None => prefix.to_owned(),
                };
                let mut inner = Scope {
                    name: format!("{p}module"),
                    counter: 0,
                };
                return self.visit_regions(op, &mut inner, &p);
            }
            vocab::FILE_OP => return self.hurray_file(op, &desc),
            vocab::TENSOR_OP => return self.hurray_tensor(op, &desc),
            "ml_program.global" => return self.ml_program_global(op, &desc, prefix),
            "memref.global" => return self.memref_global(op, &desc, prefix),
            "sparse_tensor.assemble" => {
                let name = attr(op, NAME_ATTR)
                    .and_then(ffi::string_attr)
                    .unwrap_or_else(|| format!("{}/{index}", scope.name));
                return self.assemble(op, &desc, &name);
            }
            "tensor.empty" => {
                return self.tensor_empty(op, &desc, &format!("{}/{index}", scope.name));
            }
            _ => {}
        }
        // A symbol with a body (func.func, ml_program.func, ...) opens a scope.
        if op.region_count() > 0 {
            if let Some(sym) = sym_name(op) {
                let fname = format!("{prefix}{sym}");
                if self.options.signatures {
                    self.signatures(op, &fname, &desc)?;
                }
                let mut inner = Scope {
                    name: fname,
                    counter: 0,
                };
                return self.visit_regions(op, &mut inner, prefix);
            }
        } else if self.options.signatures && sym_name(op).is_some() {
            // A body-less function declaration still has a signature.
            if let Some(sym) = sym_name(op) {
                self.signatures(op, &format!("{prefix}{sym}"), &desc)?;
            }
        }
        if op.operand_count() == 0 {
            self.constant(op, &desc, prefix, &format!("{}/{index}", scope.name))?;
        }
        self.visit_regions(op, scope, prefix)
    }
}

pub(crate) fn short(s: &str) -> String {
    if s.len() > 80 {
        let mut end = 77;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s.to_owned()
    }
}

pub(crate) fn dims(raw: &[RawDim], desc: &str, ty: Type<'_>) -> Result<Vec<Dim>> {
    raw.iter()
        .map(|d| match d {
            RawDim::Static(n) => Ok(Dim::Fixed(*n)),
            // MLIR's kDynamic becomes Hurray's dynamic sentinel, never 0.
            RawDim::Dynamic => Ok(Dim::Dynamic),
            RawDim::Invalid(v) => Err(Error::Malformed {
                op: desc.to_owned(),
                reason: format!("{} has dimension size {v}", ffi::type_str(ty)),
            }),
        })
        .collect()
}

/// The element count of `shape` by the runtime's rule
/// ([`hurray::elements::element_count`], ADR-0007: a 0 dimension makes the tensor empty
/// before anything is multiplied, so `[2^40, 2^40, 0]` is empty).
pub(crate) fn element_count(shape: &[Dim]) -> ElementCount {
    let wire: Vec<u64> = shape.iter().map(|d| d.to_wire()).collect();
    hurray::elements::element_count(&wire)
}
