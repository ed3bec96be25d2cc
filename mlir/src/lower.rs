//! Lowering an MLIR module to a Hurray file.
//!
//! One pass over the IR collects an [`Entry`] per tensor (descriptor plus
//! borrowed payload); a second pass streams them into a [`hurray::Writer`].
//! Payload bytes are read in place from MLIR's storage (dense raw data,
//! `dense_resource` blobs) and written without an intermediate copy, except
//! where the encodings differ (2- and 4-bit types are packed, splats expanded,
//! sparse coordinates converted).

use crate::error::{Error, Result};
use crate::ffi::{self, Blob, QuantKind, RawDim, SparseLevel};
use crate::types::{self, Storage};
use hurray::{
    Dim, ElementClass, ElementType, Layout, Quantization, QuantizationScheme, TensorDescriptor,
    TensorWriter, Writer,
};
use melior::ir::operation::OperationLike;
use melior::ir::{Attribute, BlockLike, Module, OperationRef, RegionLike, Type, ValueLike};
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
}

impl Default for LowerOptions {
    fn default() -> Self {
        Self {
            signatures: true,
            tensor_empty: false,
            index_as_i64: false,
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

/// Lowers `module` into a Hurray file written to `out`.
pub fn lower_module<W: Write>(
    module: &Module<'_>,
    out: W,
    options: LowerOptions,
) -> Result<Lowered> {
    let collected = collect(module, options)?;
    write_all(Writer::new(out)?, collected)
}

/// Lowers `module` into the Hurray file at `path`, atomically (nothing appears
/// at `path` unless the whole lowering succeeds).
pub fn lower_module_to_path(
    module: &Module<'_>,
    path: &Path,
    options: LowerOptions,
) -> Result<Lowered> {
    let collected = collect(module, options)?;
    write_all(Writer::create(path)?, collected)
}

fn write_all<W: Write>(mut writer: Writer<W>, collected: Collected<'_>) -> Result<Lowered> {
    let Collected {
        mut entries,
        skipped,
        file,
    } = collected;
    // Data in name order, the header's order: the same tensors always give
    // the same bytes, so lower(import(file)) reproduces a lowered file exactly.
    entries.sort_by(|a, b| a.desc.name.cmp(&b.desc.name));
    if let Some(f) = &file {
        if let Some(a) = f.alignment {
            writer.set_alignment(a)?;
        }
        for (k, v) in &f.metadata {
            writer.set_metadata(k.clone(), v.clone());
        }
    }
    let mut tensors = Vec::with_capacity(entries.len());
    for e in entries {
        let bytes = write_entry(&mut writer, &e)?;
        tensors.push(LoweredTensor {
            op: e.op,
            descriptor: e.desc,
            bytes,
        });
    }
    let file_len = writer.finish()?;
    Ok(Lowered {
        tensors,
        skipped,
        file_len,
    })
}

/// Storage element type, descriptor, and the scale / zero-point bytes.
type QuantParts = (ElementType, Quantization, (Vec<u8>, Vec<u8>));

/// A tensor entry waiting to be written.
#[derive(Debug)]
struct Entry<'c> {
    desc: TensorDescriptor,
    op: String,
    /// Layout buffers, then scales and zero points; empty when descriptor-only.
    buffers: Vec<Buf<'c>>,
}

/// One buffer's bytes, as MLIR holds them.
#[derive(Debug)]
enum Buf<'c> {
    /// Exactly the bytes to write.
    Raw(&'c [u8]),
    Owned(Vec<u8>),
    /// `count` elements of `bits` bits, packed LSB-first, except that the
    /// unused high bits of the last byte may be garbage.
    Packed {
        data: &'c [u8],
        count: u64,
        bits: u32,
    },
    /// `count` elements stored one per byte (value in the low `bits` bits).
    Unpacked {
        data: &'c [u8],
        bits: u32,
    },
    /// One element (MLIR storage) repeated `count` times.
    Splat {
        element: &'c [u8],
        storage: Storage,
        count: u64,
    },
}

const CHUNK: usize = 1 << 20;

fn mask_last(byte: u8, count: u64, bits: u32) -> u8 {
    let used = (count * u64::from(bits)) % 8;
    if used == 0 {
        byte
    } else {
        byte & ((1u16 << used) - 1) as u8
    }
}

impl Buf<'_> {
    /// The number of bytes this buffer writes.
    fn out_len(&self) -> u64 {
        match self {
            Buf::Raw(d) => d.len() as u64,
            Buf::Owned(d) => d.len() as u64,
            Buf::Packed { data, .. } => data.len() as u64,
            Buf::Unpacked { data, bits } => {
                hurray::packed_len(data.len() as u64, *bits).unwrap_or(u64::MAX)
            }
            Buf::Splat { storage, count, .. } => match storage {
                Storage::Same { bytes } => count.saturating_mul(*bytes as u64),
                Storage::Bits => count.div_ceil(8),
                Storage::BytePerElement { bits } => {
                    hurray::packed_len(*count, *bits).unwrap_or(u64::MAX)
                }
            },
        }
    }

    fn write<W: Write>(&self, tw: &mut TensorWriter<'_, W>) -> hurray::Result<()> {
        match self {
            Buf::Raw(d) => tw.write_all(d),
            Buf::Owned(d) => tw.write_all(d),
            Buf::Packed { data, count, bits } => {
                if let Some((last, head)) = data.split_last() {
                    tw.write_all(head)?;
                    tw.write_all(&[mask_last(*last, *count, *bits)])?;
                }
                Ok(())
            }
            Buf::Unpacked { data, bits } => {
                // Chunks of a multiple of 8 elements start on a byte boundary.
                let mut packed = Vec::with_capacity(CHUNK);
                for chunk in data.chunks(CHUNK) {
                    packed.clear();
                    pack_into(chunk, *bits, &mut packed);
                    tw.write_all(&packed)?;
                }
                Ok(())
            }
            Buf::Splat {
                element,
                storage,
                count,
            } => write_splat(tw, element, *storage, *count),
        }
    }
}

/// Packs one-per-byte codes (value in the low `bits` bits) LSB-first, as
/// `hurray::pack_codes` does, a byte at a time.
fn pack_into(src: &[u8], bits: u32, out: &mut Vec<u8>) {
    let per = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    let pack = |c: &[u8]| {
        c.iter()
            .enumerate()
            .fold(0u8, |acc, (i, v)| acc | ((v & mask) << (i * bits as usize)))
    };
    match bits {
        4 => out.extend(
            src.chunks_exact(2)
                .map(|c| (c[0] & 0x0F) | ((c[1] & 0x0F) << 4)),
        ),
        2 => out.extend(
            src.chunks_exact(4)
                .map(|c| (c[0] & 3) | ((c[1] & 3) << 2) | ((c[2] & 3) << 4) | ((c[3] & 3) << 6)),
        ),
        _ => out.extend(src.chunks_exact(per).map(pack)),
    }
    let rest = src.chunks_exact(per).remainder();
    if !rest.is_empty() {
        out.push(pack(rest));
    }
}

fn write_splat<W: Write>(
    tw: &mut TensorWriter<'_, W>,
    element: &[u8],
    storage: Storage,
    count: u64,
) -> hurray::Result<()> {
    if count == 0 {
        return Ok(());
    }
    let (pattern, total, bits): (Vec<u8>, u64, u32) = match storage {
        Storage::Same { bytes } => (
            element[..bytes.min(element.len())].to_vec(),
            count * bytes as u64,
            8,
        ),
        Storage::Bits => {
            let on = element.first().is_some_and(|b| b & 1 == 1);
            (vec![if on { 0xFF } else { 0 }], count.div_ceil(8), 1)
        }
        Storage::BytePerElement { bits } => {
            let code = element.first().copied().unwrap_or(0);
            let per_byte = 8 / bits;
            (
                hurray::pack_codes(std::iter::repeat_n(code, per_byte as usize), bits),
                hurray::packed_len(count, bits).unwrap_or(0),
                bits,
            )
        }
    };
    if pattern.is_empty() {
        return Ok(());
    }
    let reps = (CHUNK / pattern.len()).max(1);
    let chunk: Vec<u8> = pattern.repeat(reps);
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        if left == n as u64 && bits < 8 {
            // The last byte keeps only the bits of real elements.
            let mut tail = chunk[..n].to_vec();
            if let Some(last) = tail.last_mut() {
                *last = mask_last(*last, count, bits);
            }
            tw.write_all(&tail)?;
        } else {
            tw.write_all(&chunk[..n])?;
        }
        left -= n as u64;
    }
    Ok(())
}

fn write_entry<W: Write>(writer: &mut Writer<W>, e: &Entry<'_>) -> Result<u64> {
    let tensor_err = |source| Error::Tensor {
        tensor: e.desc.name.clone(),
        op: e.op.clone(),
        error: Box::new(source),
    };
    let plan = e.desc.buffer_plan().map_err(tensor_err)?;
    let expected = plan.buffers();
    if !e.desc.descriptor_only {
        if expected.len() != e.buffers.len() {
            return Err(Error::Malformed {
                op: e.op.clone(),
                reason: format!(
                    "tensor {:?} needs {} buffer(s) ({:?}), the IR gives {}",
                    e.desc.name,
                    expected.len(),
                    expected.iter().map(|x| x.0.name()).collect::<Vec<_>>(),
                    e.buffers.len()
                ),
            });
        }
        for ((role, len), b) in expected.iter().zip(&e.buffers) {
            if b.out_len() != *len {
                return Err(Error::Malformed {
                    op: e.op.clone(),
                    reason: format!(
                        "tensor {:?}: buffer {role} holds {} bytes, its descriptor needs {len}",
                        e.desc.name,
                        b.out_len()
                    ),
                });
            }
        }
    }
    let mut tw = writer.begin_tensor(&e.desc).map_err(tensor_err)?;
    if !e.desc.descriptor_only {
        for b in &e.buffers {
            b.write(&mut tw).map_err(tensor_err)?;
        }
    }
    tw.finish().map_err(tensor_err)?;
    Ok(if e.desc.descriptor_only {
        0
    } else {
        plan.total()
    })
}

// ---------------------------------------------------------------------------
// Collecting entries from the IR.

#[derive(Debug, Default)]
struct FileAttrs {
    alignment: Option<u64>,
    metadata: BTreeMap<String, String>,
}

#[derive(Debug)]
struct Collected<'c> {
    entries: Vec<Entry<'c>>,
    skipped: Vec<String>,
    file: Option<FileAttrs>,
}

struct Collector<'c> {
    options: LowerOptions,
    entries: Vec<Entry<'c>>,
    names: BTreeMap<String, String>,
    skipped: Vec<String>,
    file: Option<(FileAttrs, String)>,
}

/// The naming scope of generated names: a function (or other symbol with a
/// body), with its own pre-order operation counter.
struct Scope {
    name: String,
    counter: usize,
}

fn op_name(op: &OperationRef<'_, '_>) -> String {
    op.name()
        .as_string_ref()
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|_| "<non-UTF-8 op name>".to_owned())
}

fn describe_op(op: &OperationRef<'_, '_>) -> String {
    format!("'{}' at {}", op_name(op), ffi::location_str(op.location()))
}

fn attr<'c>(op: &OperationRef<'c, '_>, name: &str) -> Option<Attribute<'c>> {
    op.attribute(name).ok()
}

fn sym_name(op: &OperationRef<'_, '_>) -> Option<String> {
    attr(op, "sym_name").and_then(ffi::string_attr)
}

fn collect<'c>(module: &Module<'c>, options: LowerOptions) -> Result<Collected<'c>> {
    let mut c = Collector {
        options,
        entries: Vec::new(),
        names: BTreeMap::new(),
        skipped: Vec::new(),
        file: None,
    };
    let mut scope = Scope {
        name: "module".to_owned(),
        counter: 0,
    };
    c.visit_regions(&module.as_operation(), &mut scope, "")?;
    Ok(Collected {
        entries: c.entries,
        skipped: c.skipped,
        file: c.file.map(|(f, _)| f),
    })
}

impl<'c> Collector<'c> {
    fn add(&mut self, entry: Entry<'c>) -> Result<()> {
        if let Some(first) = self.names.get(&entry.desc.name) {
            return Err(Error::DuplicateName {
                name: entry.desc.name.clone(),
                first: first.clone(),
                second: entry.op.clone(),
            });
        }
        self.names.insert(entry.desc.name.clone(), entry.op.clone());
        self.entries.push(entry);
        Ok(())
    }

    fn visit_regions(
        &mut self,
        op: &OperationRef<'c, '_>,
        scope: &mut Scope,
        prefix: &str,
    ) -> Result<()> {
        for region in op.regions() {
            let mut block = region.first_block();
            while let Some(b) = block {
                let mut next = b.first_operation();
                while let Some(child) = next {
                    self.visit(&child, scope, prefix)?;
                    next = child.next_in_block();
                }
                block = b.next_in_region();
            }
        }
        Ok(())
    }

    fn element(&self, ty: Type<'c>, op: &str, context: &str) -> Result<ElementType> {
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

    fn visit(&mut self, op: &OperationRef<'c, '_>, scope: &mut Scope, prefix: &str) -> Result<()> {
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
            "hurray.file" => return self.hurray_file(op, &desc),
            "hurray.tensor" => return self.hurray_tensor(op, &desc),
            "ml_program.global" => return self.ml_program_global(op, &desc, prefix),
            "memref.global" => return self.memref_global(op, &desc, prefix),
            "sparse_tensor.assemble" => {
                let name = attr(op, NAME_ATTR)
                    .and_then(ffi::string_attr)
                    .unwrap_or_else(|| format!("{}/{index}", scope.name));
                return self.assemble(op, &desc, &name);
            }
            "tensor.empty" => {
                if self.options.tensor_empty {
                    let ty = op.result(0).map(|r| r.r#type())?;
                    let n = format!("{}/{index}", scope.name);
                    let d = self.signature_descriptor(&n, ty, &desc, "tensor.empty result")?;
                    if let Some(d) = d {
                        let d = d.with_metadata("mlir.op", "tensor.empty");
                        self.add(Entry {
                            desc: d,
                            op: desc,
                            buffers: Vec::new(),
                        })?;
                    }
                }
                return Ok(());
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
        if op.operand_count() == 0 && op.result_count() > 0 {
            self.constant(op, &desc, &format!("{}/{index}", scope.name))?;
        }
        self.visit_regions(op, scope, prefix)
    }

    /// A constant-like op: no operands, a result, and an elements attribute.
    fn constant(&mut self, op: &OperationRef<'c, '_>, desc: &str, name: &str) -> Result<()> {
        let preferred = ["value", "values"];
        let mut found = None;
        for p in preferred {
            if let Some(a) = attr(op, p).filter(|a| ffi::is_elements(*a)) {
                found = Some(a);
                break;
            }
        }
        if found.is_none() {
            found = op
                .attributes()
                .map(|(_, a)| a)
                .find(|a| ffi::is_elements(*a));
        }
        let Some(value) = found else { return Ok(()) };
        let result_ty = op.result(0).map(|r| r.r#type())?;
        // A tensor constant produces a ranked tensor from a tensor attribute;
        // vector constants and e.g. `tosa.const_shape` (`!tosa.shape`) are not
        // tensor values.
        if !ffi::is_ranked_tensor(ffi::attr_type(value)) || !ffi::is_ranked_tensor(result_ty) {
            return Ok(());
        }
        // `quant.scast` of a plain integer constant to a quantized type: the
        // constant holds the stored values of that quantized tensor.
        let mut declared = result_ty;
        if let Ok(result) = op.result(0) {
            let users = ffi::user_results(result.into());
            // Positions, coordinates and values of a `sparse_tensor.assemble`
            // are buffers of that sparse tensor, lowered with it.
            if !users.is_empty() && users.iter().all(|(u, _)| u == "sparse_tensor.assemble") {
                return Ok(());
            }
            if let [(user, types)] = users.as_slice()
                && user == "quant.scast"
                && let [t] = types.as_slice()
                && ffi::element_type(*t).and_then(ffi::quant_type).is_some()
            {
                declared = *t;
            }
        }
        let name = attr(op, NAME_ATTR)
            .and_then(ffi::string_attr)
            .or_else(|| sym_name(op))
            .unwrap_or_else(|| name.to_owned());
        let entry = self.elements_entry(&name, desc, value, Some(declared))?;
        self.add(entry)
    }

    fn ml_program_global(
        &mut self,
        op: &OperationRef<'c, '_>,
        desc: &str,
        prefix: &str,
    ) -> Result<()> {
        let Some(sym) = sym_name(op) else {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: "a global without sym_name".into(),
            });
        };
        let name = format!("{prefix}{sym}");
        let declared = attr(op, "type").and_then(ffi::type_attr_value);
        match attr(op, "value").filter(|a| ffi::is_elements(*a)) {
            Some(value) => {
                let entry = self.elements_entry(&name, desc, value, declared)?;
                self.add(entry)
            }
            None => {
                let Some(ty) = declared else {
                    return Err(Error::Malformed {
                        op: desc.to_owned(),
                        reason: "a global without a type".into(),
                    });
                };
                match self.signature_descriptor(&name, ty, desc, "global type")? {
                    Some(d) => self.add(Entry {
                        desc: d,
                        op: desc.to_owned(),
                        buffers: Vec::new(),
                    }),
                    None => {
                        self.skipped.push(format!(
                            "{desc}: global @{sym} of type {} is not a ranked tensor",
                            ffi::type_str(ty)
                        ));
                        Ok(())
                    }
                }
            }
        }
    }

    fn memref_global(&mut self, op: &OperationRef<'c, '_>, desc: &str, prefix: &str) -> Result<()> {
        let Some(sym) = sym_name(op) else {
            return Ok(());
        };
        let name = format!("{prefix}{sym}");
        match attr(op, "initial_value") {
            Some(v) if ffi::is_elements(v) => {
                let entry = self.elements_entry(&name, desc, v, None)?;
                self.add(entry)
            }
            Some(v) if ffi::is_unit(v) => {
                let Some(ty) = attr(op, "type").and_then(ffi::type_attr_value) else {
                    return Ok(());
                };
                match self.signature_descriptor(&name, ty, desc, "uninitialized memref.global")? {
                    Some(d) => self.add(Entry {
                        desc: d.with_metadata("mlir.op", "memref.global"),
                        op: desc.to_owned(),
                        buffers: Vec::new(),
                    }),
                    None => Ok(()),
                }
            }
            _ => {
                self.skipped.push(format!(
                    "{desc}: external memref.global @{sym} has no value"
                ));
                Ok(())
            }
        }
    }

    fn signatures(&mut self, op: &OperationRef<'c, '_>, fname: &str, desc: &str) -> Result<()> {
        let Some((inputs, results)) = attr(op, "function_type")
            .and_then(ffi::type_attr_value)
            .and_then(ffi::function_type)
        else {
            return Ok(());
        };
        let arg_attrs = attr(op, "arg_attrs").and_then(ffi::array_attr);
        let res_attrs = attr(op, "res_attrs").and_then(ffi::array_attr);
        let all = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| ("arg", i, *t))
            .chain(results.iter().enumerate().map(|(i, t)| ("result", i, *t)));
        for (kind, i, ty) in all {
            // An explicit name: `{hurray.name = "..."}` in the argument or
            // result attributes.
            let attrs = if kind == "arg" {
                &arg_attrs
            } else {
                &res_attrs
            };
            let explicit = attrs
                .as_ref()
                .and_then(|v| v.get(i).copied())
                .and_then(ffi::dictionary_attr)
                .and_then(|d| {
                    d.into_iter()
                        .find(|(k, _)| k == NAME_ATTR)
                        .and_then(|(_, a)| ffi::string_attr(a))
                });
            let name = explicit.unwrap_or_else(|| format!("{fname}/{kind}{i}"));
            if ffi::is_unranked_shaped(ty) {
                self.skipped.push(format!(
                    "{desc}: {kind} {i} of @{fname} has unranked type {}, which no Hurray descriptor can hold",
                    ffi::type_str(ty)
                ));
                continue;
            }
            if !ffi::is_ranked_tensor(ty) {
                continue;
            }
            if let Some(d) =
                self.signature_descriptor(&name, ty, desc, &format!("{kind} {i} of @{fname}"))?
            {
                let d = d
                    .with_metadata(
                        "mlir.role",
                        if kind == "arg" { "argument" } else { "result" },
                    )
                    .with_metadata("mlir.type", ffi::type_str(ty));
                self.add(Entry {
                    desc: d,
                    op: desc.to_owned(),
                    buffers: Vec::new(),
                })?;
            }
        }
        Ok(())
    }

    /// A descriptor-only tensor for a ranked shaped type (signature, global
    /// type, `tensor.empty`); `None` for other types.
    fn signature_descriptor(
        &self,
        name: &str,
        ty: Type<'c>,
        desc: &str,
        context: &str,
    ) -> Result<Option<TensorDescriptor>> {
        let Some(raw) = ffi::ranked_shape(ty) else {
            return Ok(None);
        };
        let shape = dims(&raw, desc, ty)?;
        let el = ffi::element_type(ty).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!("{} has no element type", ffi::type_str(ty)),
        })?;
        let (et, quant) = match ffi::quant_type(el) {
            Some(q) => {
                let (et, quant, _) = self.quantization(&q, el, &shape, desc, context)?;
                (et, Some(quant))
            }
            None => (self.element(el, desc, context)?, None),
        };
        let mut d = TensorDescriptor::new(name, et, shape).into_descriptor_only();
        d.quantization = quant;
        Ok(Some(d))
    }

    /// The quantization descriptor of `q` (on a tensor of `shape`): storage
    /// element type, descriptor, and the scale / zero-point bytes.
    fn quantization(
        &self,
        q: &ffi::QuantType<'c>,
        el: Type<'c>,
        shape: &[Dim],
        desc: &str,
        context: &str,
    ) -> Result<QuantParts> {
        let unsupported = |reason: String| Error::Unsupported {
            op: desc.to_owned(),
            what: format!("quantized type {}", ffi::type_str(el)),
            reason,
        };
        let storage = self.storage_type(q, el, desc, context)?;
        let expressed = self.element(q.expressed, desc, &format!("{context}, expressed type"))?;
        if expressed.class() != ElementClass::Float {
            return Err(unsupported(format!(
                "expressed type {} is not a float",
                ffi::type_str(q.expressed)
            )));
        }
        let (scheme, scales, zps): (QuantizationScheme, Vec<f64>, Vec<i64>) = match &q.kind {
            QuantKind::PerTensor { scale, zero_point } => (
                QuantizationScheme::PerTensor,
                vec![*scale],
                vec![*zero_point],
            ),
            QuantKind::PerAxis {
                axis,
                scales,
                zero_points,
            } => {
                let axis = u32::try_from(*axis)
                    .map_err(|_| unsupported(format!("negative quantized dimension {axis}")))?;
                (
                    QuantizationScheme::PerAxis { axis },
                    scales.clone(),
                    zero_points.clone(),
                )
            }
            QuantKind::SubChannel {
                dims,
                scale_values,
                zero_point_values,
                ..
            } => {
                let blocked: Vec<_> = dims.iter().filter(|(_, b)| *b != 1).collect();
                let [(axis, block)] = blocked.as_slice() else {
                    return Err(unsupported(format!(
                        "sub-channel quantization with block sizes {dims:?}: Hurray's per-block \
                         scheme blocks exactly one axis"
                    )));
                };
                let axis = u32::try_from(*axis)
                    .map_err(|_| unsupported(format!("negative quantized dimension {axis}")))?;
                let block_size = u64::try_from(*block)
                    .ok()
                    .filter(|b| *b > 0)
                    .ok_or_else(|| unsupported(format!("block size {block}")))?;
                (
                    QuantizationScheme::PerBlock { axis, block_size },
                    scale_values.clone(),
                    zero_point_values.clone(),
                )
            }
            QuantKind::Other => {
                return Err(unsupported(
                    "only !quant.uniform (per-tensor, per-axis, sub-channel) has a Hurray descriptor"
                        .into(),
                ));
            }
        };
        let _ = shape;
        let symmetric = zps.iter().all(|z| *z == 0);
        let quant = Quantization {
            scheme,
            expressed_type: expressed,
            scale_type: ElementType::Float64,
            zero_point_type: (!symmetric).then_some(ElementType::Int64),
            storage_min: q.storage_min,
            storage_max: q.storage_max,
        };
        let scale_bytes: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
        let zp_bytes: Vec<u8> = if symmetric {
            Vec::new()
        } else {
            zps.iter().flat_map(|z| z.to_le_bytes()).collect()
        };
        Ok((storage, quant, (scale_bytes, zp_bytes)))
    }

    fn storage_type(
        &self,
        q: &ffi::QuantType<'c>,
        el: Type<'c>,
        desc: &str,
        context: &str,
    ) -> Result<ElementType> {
        let st = q.storage;
        let spelled = ffi::type_str(st);
        // Integer storage is signless in MLIR, with a signedness flag.
        if let Some(width) = spelled
            .strip_prefix('i')
            .filter(|w| w.parse::<u32>().is_ok())
        {
            let name = if ffi::quant_is_signed(el) {
                format!("i{width}")
            } else {
                format!("ui{width}")
            };
            return ElementType::from_mlir_name(&name).ok_or_else(|| Error::UnsupportedType {
                op: desc.to_owned(),
                ty: format!("{name} (storage of {})", ffi::type_str(el)),
                context: context.to_owned(),
                hint: "",
            });
        }
        self.element(st, desc, &format!("{context}, storage type"))
    }

    /// A tensor entry from an elements attribute; `declared` is the type the
    /// op gives the value (a result type, a global's type), which may add a
    /// quantized element type or a sparse encoding.
    fn elements_entry(
        &self,
        name: &str,
        desc: &str,
        value: Attribute<'c>,
        declared: Option<Type<'c>>,
    ) -> Result<Entry<'c>> {
        let attr_ty = ffi::attr_type(value);
        let raw = ffi::ranked_shape(attr_ty).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "constant of type {} is not a ranked tensor",
                ffi::type_str(attr_ty)
            ),
        })?;
        let shape = dims(&raw, desc, attr_ty)?;
        let count = static_count(&shape).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "constant of type {} has no static element count",
                ffi::type_str(attr_ty)
            ),
        })?;
        let declared = declared
            .filter(|t| ffi::is_ranked_tensor(*t) && ffi::ranked_shape(*t).as_deref() == Some(&raw))
            .unwrap_or(attr_ty);
        let data_el = ffi::element_type(attr_ty).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!("{} has no element type", ffi::type_str(attr_ty)),
        })?;
        let declared_el = ffi::element_type(declared).unwrap_or(data_el);
        let context = format!("tensor {name:?}");
        let (et, quant) = match ffi::quant_type(declared_el) {
            Some(q) => {
                let (et, quant, bytes) =
                    self.quantization(&q, declared_el, &shape, desc, &context)?;
                (et, Some((quant, bytes)))
            }
            None => (self.element(declared_el, desc, &context)?, None),
        };
        if quant.is_none() && declared_el != data_el {
            let data_et = self.element(data_el, desc, &context)?;
            if data_et != et {
                return Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!(
                        "value of element type {} declared as {}",
                        ffi::type_str(data_el),
                        ffi::type_str(declared_el)
                    ),
                });
            }
        }
        let storage = types::storage(et);
        check_storage(data_el, storage, desc)?;

        let encoding = ffi::tensor_encoding(declared).or_else(|| ffi::tensor_encoding(attr_ty));
        let sparse = encoding.and_then(ffi::sparse_encoding);
        if let (Some(enc), None) = (encoding, &sparse) {
            return Err(Error::Unsupported {
                op: desc.to_owned(),
                what: format!("tensor encoding {}", ffi::attr_str(enc)),
                reason: "only #sparse_tensor.encoding encodings map to Hurray layouts".into(),
            });
        }

        let mut d = TensorDescriptor::new(name, et, shape.clone());
        let mut buffers = Vec::new();
        if ffi::is_sparse_elements(value) {
            let (layout, bufs) =
                self.sparse_entry(value, &shape, storage, sparse.as_ref(), desc, name)?;
            d.layout = layout;
            buffers = bufs;
        } else {
            let values = self.values_buf(value, storage, count, desc, name)?;
            match &sparse {
                None => buffers.push(values),
                Some(enc) if enc.levels.iter().all(|l| *l == SparseLevel::Dense) => {
                    buffers.push(values)
                }
                Some(enc) => {
                    let (layout, bufs) =
                        dense_to_sparse(values, &shape, storage, enc, desc, name, et)?;
                    d.layout = layout;
                    buffers = bufs;
                }
            }
        }
        if let Some((q, (scales, zps))) = quant {
            d.quantization = Some(q);
            if count == 0 {
                // An empty tensor has no bytes at all, scales included
                // (ADR-007; the runtime's rule): the scheme and types remain.
                buffers.push(Buf::Raw(&[]));
                buffers.push(Buf::Raw(&[]));
            } else {
                buffers.push(Buf::Owned(scales));
                buffers.push(Buf::Owned(zps));
            }
        }
        Ok(Entry {
            desc: d,
            op: desc.to_owned(),
            buffers,
        })
    }

    /// The values of a dense or dense_resource attribute, `count` elements.
    fn values_buf(
        &self,
        value: Attribute<'c>,
        storage: Storage,
        count: u64,
        desc: &str,
        name: &str,
    ) -> Result<Buf<'c>> {
        if count == 0 {
            // ADR-007: an empty tensor has a 0-byte buffer, whatever MLIR stores.
            return Ok(Buf::Raw(&[]));
        }
        if ffi::is_dense_resource(value) {
            return match ffi::resource_blob(value) {
                Blob::Data(key, bytes) => blob_buf(bytes, storage, count, desc, name, &key),
                Blob::Missing(key) => Err(Error::MissingResourceData {
                    op: desc.to_owned(),
                    tensor: name.to_owned(),
                    resource: key,
                }),
                Blob::NotResource => Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: "dense_resource attribute without a resource handle".into(),
                }),
            };
        }
        if !ffi::is_dense_elements(value) {
            return Err(Error::Unsupported {
                op: desc.to_owned(),
                what: format!("elements attribute {}", short(&ffi::attr_str(value))),
                reason: "not a dense, dense_resource or sparse elements attribute".into(),
            });
        }
        let splat = ffi::dense_is_splat(value);
        let per = match storage {
            Storage::Same { bytes } => bytes as u64,
            Storage::Bits | Storage::BytePerElement { .. } => 1,
        };
        let len = if splat {
            per
        } else {
            match storage {
                Storage::Bits => count.div_ceil(8),
                _ => count.checked_mul(per).ok_or_else(|| Error::Malformed {
                    op: desc.to_owned(),
                    reason: "constant size overflows".into(),
                })?,
            }
        };
        let len = usize::try_from(len).map_err(|_| Error::Malformed {
            op: desc.to_owned(),
            reason: "constant larger than the address space".into(),
        })?;
        // SAFETY: `value` is a dense int/float/complex elements attribute
        // (string elements were rejected by the element type mapping), and
        // `len` is exactly its storage size: one element for a splat, else
        // `count` elements at MLIR's storage width (bit-packed for i1, one
        // byte for 2/4-bit types), as `check_storage` confirmed.
        let data = unsafe { ffi::dense_raw(value, len) };
        Ok(if splat {
            Buf::Splat {
                element: data,
                storage,
                count,
            }
        } else {
            match storage {
                Storage::Same { .. } => Buf::Raw(data),
                Storage::Bits => Buf::Packed {
                    data,
                    count,
                    bits: 1,
                },
                Storage::BytePerElement { bits } => Buf::Unpacked { data, bits },
            }
        })
    }

    fn sparse_entry(
        &self,
        value: Attribute<'c>,
        shape: &[Dim],
        storage: Storage,
        encoding: Option<&ffi::SparseEncoding>,
        desc: &str,
        name: &str,
    ) -> Result<(Layout, Vec<Buf<'c>>)> {
        let (indices, values) = ffi::sparse_parts(value);
        let idx_ty = ffi::attr_type(indices);
        let idx_shape = ffi::ranked_shape(idx_ty).unwrap_or_default();
        let rank = shape.len();
        let nnz = match idx_shape.as_slice() {
            // `sparse<>`: no stored element, whatever shape the indices have.
            s if s.contains(&RawDim::Static(0)) => 0,
            [RawDim::Static(n), RawDim::Static(r)] if *r as usize == rank => *n,
            [RawDim::Static(n)] if rank == 1 => *n,
            [] if rank == 0 => 0,
            _ => {
                return Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!("sparse indices of type {idx_ty} for a rank-{rank} tensor"),
                });
            }
        };
        let coords = read_i64s(indices, nnz * rank as u64, desc)?;
        let vals = self.values_buf(values, storage, nnz, desc, name)?;
        let entries: Vec<&[i64]> = if rank == 0 {
            Vec::new()
        } else {
            coords.chunks(rank).collect()
        };
        for c in &entries {
            for (i, (&x, d)) in c.iter().zip(shape).enumerate() {
                let inside = matches!(d, Dim::Fixed(n) if x >= 0 && (x as u64) < *n);
                if !inside {
                    return Err(Error::Malformed {
                        op: desc.to_owned(),
                        reason: format!("sparse coordinate {x} outside dimension {i} ({d})"),
                    });
                }
            }
        }
        let coo = |index_type: ElementType| -> Result<(Layout, Vec<Buf<'c>>)> {
            let canonical = entries.windows(2).all(|w| w[0] < w[1]);
            let idx = encode_indices(&coords, index_type);
            Ok((
                Layout::Coo {
                    nnz,
                    index_type,
                    canonical,
                },
                vec![Buf::Owned(idx), vals_owned(&vals)],
            ))
        };
        let Some(enc) = encoding else {
            return coo(ElementType::Int64);
        };
        let index_type = index_type_for(enc);
        match classify(enc, rank) {
            Some(SparseKind::Coo) => coo(index_type),
            Some(SparseKind::Compressed { by_column }) => compress(
                &entries, vals, shape, storage, by_column, index_type, nnz, desc,
            ),
            None => Err(unsupported_encoding(desc, enc)),
        }
    }

    /// `sparse_tensor.assemble` of constant positions, coordinates and values
    /// into a CSR, CSC or COO tensor.
    fn assemble(&mut self, op: &OperationRef<'c, '_>, desc: &str, name: &str) -> Result<()> {
        let bad = |reason: String| Error::Malformed {
            op: desc.to_owned(),
            reason,
        };
        let ty = op.result(0).map(|r| r.r#type())?;
        let raw = ffi::ranked_shape(ty)
            .ok_or_else(|| bad(format!("result {} is not ranked", ffi::type_str(ty))))?;
        let shape = dims(&raw, desc, ty)?;
        let enc = ffi::tensor_encoding(ty)
            .and_then(ffi::sparse_encoding)
            .ok_or_else(|| bad("assemble without a sparse encoding".into()))?;
        let rank = shape.len();
        let kind = classify(&enc, rank).ok_or_else(|| unsupported_encoding(desc, &enc))?;
        if op.operand_count() != 3 {
            return Err(Error::Unsupported {
                op: desc.to_owned(),
                what: format!(
                    "sparse_tensor.assemble with {} operands",
                    op.operand_count()
                ),
                reason: "Hurray lowers (positions, coordinates), values".into(),
            });
        }
        // Each operand must come from a constant; otherwise the tensor is a
        // run-time value, not data to store.
        let mut attrs = Vec::new();
        for i in 0..3 {
            let constant = op.operand(i).ok().and_then(ffi::defining_op).and_then(|d| {
                ["value", "values"]
                    .iter()
                    .find_map(|k| attr(&d, k).filter(|a| ffi::is_elements(*a)))
            });
            match constant {
                Some(a) => attrs.push(a),
                None => {
                    self.skipped.push(format!(
                        "{desc}: tensor {name:?} assembles run-time values, not constants"
                    ));
                    return Ok(());
                }
            }
        }
        let el = ffi::element_type(ty).ok_or_else(|| bad("no element type".into()))?;
        let et = self.element(el, desc, &format!("tensor {name:?}"))?;
        let storage = types::storage(et);
        check_storage(
            ffi::element_type(ffi::attr_type(attrs[2])).unwrap_or(el),
            storage,
            desc,
        )?;
        let nnz = elements_of(ffi::attr_type(attrs[2]))
            .ok_or_else(|| bad("values of non-static size".into()))?;
        let n_pos = elements_of(ffi::attr_type(attrs[0])).unwrap_or(0);
        let n_crd = elements_of(ffi::attr_type(attrs[1])).unwrap_or(0);
        let (pos, pos_bits) = read_ints(attrs[0], n_pos, desc, "positions")?;
        let (crd, crd_bits) = read_ints(attrs[1], n_crd, desc, "coordinates")?;
        let index_type = if pos_bits.max(crd_bits) == 32 {
            ElementType::Int32
        } else {
            ElementType::Int64
        };
        let values = self.values_buf(attrs[2], storage, nnz, desc, name)?;
        let fixed = |i: usize| match shape.get(i) {
            Some(Dim::Fixed(n)) => Ok(*n),
            _ => Err(bad("a sparse constant needs static dimensions".into())),
        };
        let empty = shape.contains(&Dim::Fixed(0));
        let (layout, buffers) = match kind {
            SparseKind::Compressed { by_column } => {
                let (major, minor) = if by_column {
                    (fixed(1)?, fixed(0)?)
                } else {
                    (fixed(0)?, fixed(1)?)
                };
                let ok_pos = pos.len() as u64 == major + 1
                    && pos.first() == Some(&0)
                    && pos.windows(2).all(|w| w[0] <= w[1])
                    && pos.last().is_some_and(|l| *l as u64 == nnz);
                if !ok_pos {
                    return Err(bad(format!(
                        "positions {pos:?} are not {} non-decreasing offsets from 0 to nnz = {nnz}",
                        major + 1
                    )));
                }
                if crd.len() as u64 != nnz || crd.iter().any(|c| *c < 0 || *c as u64 >= minor) {
                    return Err(bad(format!(
                        "coordinates must be {nnz} values below {minor}"
                    )));
                }
                let layout = if by_column {
                    Layout::Csc { nnz, index_type }
                } else {
                    Layout::Csr { nnz, index_type }
                };
                // An empty tensor has no bytes at all, pointers included.
                let pointers = if empty {
                    Vec::new()
                } else {
                    encode_indices(&pos, index_type)
                };
                (
                    layout,
                    vec![
                        Buf::Owned(pointers),
                        Buf::Owned(encode_indices(&crd, index_type)),
                        values,
                    ],
                )
            }
            SparseKind::Coo => {
                if pos != [0, nnz as i64] && !(nnz == 0 && pos.iter().all(|p| *p == 0)) {
                    return Err(bad(format!("COO positions {pos:?} are not [0, {nnz}]")));
                }
                if crd.len() as u64 != nnz * rank as u64 {
                    return Err(bad(format!(
                        "COO coordinates hold {} values, not nnz x rank = {}",
                        crd.len(),
                        nnz * rank as u64
                    )));
                }
                for c in crd.chunks(rank.max(1)) {
                    for (i, x) in c.iter().enumerate() {
                        if *x < 0 || *x as u64 >= fixed(i)? {
                            return Err(bad(format!("coordinate {c:?} outside the shape")));
                        }
                    }
                }
                let canonical = crd
                    .chunks(rank.max(1))
                    .collect::<Vec<_>>()
                    .windows(2)
                    .all(|w| w[0] < w[1]);
                (
                    Layout::Coo {
                        nnz,
                        index_type,
                        canonical,
                    },
                    vec![Buf::Owned(encode_indices(&crd, index_type)), values],
                )
            }
        };
        let d = TensorDescriptor::new(name, et, shape).with_layout(layout);
        self.add(Entry {
            desc: d,
            op: desc.to_owned(),
            buffers,
        })
    }

    fn hurray_file(&mut self, op: &OperationRef<'c, '_>, desc: &str) -> Result<()> {
        if let Some((_, first)) = &self.file {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: format!("a second hurray.file (the first is {first})"),
            });
        }
        let alignment = attr(op, "alignment")
            .and_then(ffi::integer_attr)
            .map(|a| {
                u64::try_from(a).map_err(|_| Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!("alignment {a}"),
                })
            })
            .transpose()?;
        let metadata = string_dict(attr(op, "metadata"), desc, "metadata")?;
        self.file = Some((
            FileAttrs {
                alignment,
                metadata,
            },
            desc.to_owned(),
        ));
        Ok(())
    }

    fn hurray_tensor(&mut self, op: &OperationRef<'c, '_>, desc: &str) -> Result<()> {
        let bad = |reason: String| Error::Malformed {
            op: desc.to_owned(),
            reason,
        };
        let name = attr(op, "name")
            .and_then(ffi::string_attr)
            .ok_or_else(|| bad("hurray.tensor needs a string `name`".into()))?;
        let et_ty = attr(op, "element_type")
            .and_then(ffi::type_attr_value)
            .ok_or_else(|| bad("hurray.tensor needs a type `element_type`".into()))?;
        let context = format!("tensor {name:?}");
        let et = self.element(et_ty, desc, &context)?;
        let shape: Vec<Dim> = attr(op, "shape")
            .and_then(ffi::i64_array_attr)
            .ok_or_else(|| bad("hurray.tensor needs `shape = array<i64: ...>`".into()))?
            .into_iter()
            .map(|d| match d {
                -1 => Ok(Dim::Dynamic),
                d if d >= 0 => Ok(Dim::Fixed(d as u64)),
                d => Err(bad(format!(
                    "shape holds {d}; sizes are >= 0, and -1 is dynamic"
                ))),
            })
            .collect::<Result<_>>()?;
        let params: BTreeMap<String, Attribute<'c>> = attr(op, "params")
            .and_then(ffi::dictionary_attr)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let int = |k: &str| params.get(k).and_then(|a| ffi::integer_attr(*a));
        let ty_param = |k: &str| -> Result<Option<ElementType>> {
            match params.get(k).and_then(|a| ffi::type_attr_value(*a)) {
                Some(t) => self
                    .element(t, desc, &format!("{context}, params.{k}"))
                    .map(Some),
                None => Ok(None),
            }
        };
        let nnz = || -> Result<u64> {
            int("nnz")
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| bad("a sparse hurray.tensor needs params.nnz >= 0".into()))
        };
        let layout_name = attr(op, "layout")
            .and_then(ffi::string_attr)
            .ok_or_else(|| bad("hurray.tensor needs a string `layout`".into()))?;
        let index_type = ty_param("index_type")?.unwrap_or(ElementType::Int64);
        let layout = match layout_name.as_str() {
            "dense" => match params.get("strides").and_then(|a| ffi::i64_array_attr(*a)) {
                Some(s) => Layout::Strided(s),
                None => Layout::Dense,
            },
            "coo" => Layout::Coo {
                nnz: nnz()?,
                index_type,
                canonical: params
                    .get("canonical")
                    .and_then(|a| ffi::bool_attr(*a))
                    .unwrap_or(false),
            },
            "csr" => Layout::Csr {
                nnz: nnz()?,
                index_type,
            },
            "csc" => Layout::Csc {
                nnz: nnz()?,
                index_type,
            },
            other => {
                return Err(Error::Unsupported {
                    op: desc.to_owned(),
                    what: format!("layout {other:?}"),
                    reason: "this build lowers dense, coo, csr and csc".into(),
                });
            }
        };
        let mut d = TensorDescriptor::new(name.clone(), et, shape).with_layout(layout);
        d.descriptor_only = params
            .get("descriptor_only")
            .and_then(|a| ffi::bool_attr(*a))
            .unwrap_or(false);
        if let Some(a) = int("alignment") {
            d.alignment = Some(u64::try_from(a).map_err(|_| bad(format!("alignment {a}")))?);
        }
        d.metadata = string_dict(attr(op, "metadata"), desc, "metadata")?;
        if let Some(q) = attr(op, "quantization").and_then(ffi::dictionary_attr) {
            let q: BTreeMap<String, Attribute<'c>> = q.into_iter().collect();
            let qi = |k: &str| q.get(k).and_then(|a| ffi::integer_attr(*a));
            let qt = |k: &str| -> Result<Option<ElementType>> {
                match q.get(k).and_then(|a| ffi::type_attr_value(*a)) {
                    Some(t) => self
                        .element(t, desc, &format!("{context}, quantization.{k}"))
                        .map(Some),
                    None => Ok(None),
                }
            };
            let axis = || -> Result<u32> {
                qi("axis")
                    .and_then(|a| u32::try_from(a).ok())
                    .ok_or_else(|| bad("quantization.axis must be a non-negative integer".into()))
            };
            let scheme_name = q
                .get("scheme")
                .and_then(|a| ffi::string_attr(*a))
                .unwrap_or_default();
            let scheme = match scheme_name.as_str() {
                "per_tensor" => QuantizationScheme::PerTensor,
                "per_axis" => QuantizationScheme::PerAxis { axis: axis()? },
                "per_block" => QuantizationScheme::PerBlock {
                    axis: axis()?,
                    block_size: qi("block_size")
                        .and_then(|b| u64::try_from(b).ok())
                        .ok_or_else(|| bad("quantization.block_size must be >= 0".into()))?,
                },
                other => {
                    return Err(bad(format!("unknown quantization scheme {other:?}")));
                }
            };
            d.quantization = Some(Quantization {
                scheme,
                expressed_type: qt("expressed_type")?
                    .ok_or_else(|| bad("quantization.expressed_type is required".into()))?,
                scale_type: qt("scale_type")?.unwrap_or(ElementType::Float32),
                zero_point_type: qt("zero_point_type")?,
                storage_min: qi("storage_min").unwrap_or(0),
                storage_max: qi("storage_max").unwrap_or(0),
            });
        }
        let mut buffers = Vec::new();
        for (i, b) in attr(op, "buffers")
            .and_then(ffi::array_attr)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            buffers.push(raw_bytes(b, desc, &name, i)?);
        }
        if d.descriptor_only && !buffers.is_empty() {
            return Err(bad(format!(
                "tensor {name:?} is descriptor-only but lists {} buffer(s)",
                buffers.len()
            )));
        }
        self.add(Entry {
            desc: d,
            op: desc.to_owned(),
            buffers,
        })
    }
}

/// Bytes of a `hurray.tensor` buffer: a `dense_resource` blob, or a dense
/// attribute of 8-bit integers (Hurray's wire bytes, verbatim).
fn raw_bytes<'c>(b: Attribute<'c>, desc: &str, name: &str, i: usize) -> Result<Buf<'c>> {
    match ffi::resource_blob(b) {
        Blob::Data(_, bytes) => return Ok(Buf::Raw(bytes)),
        Blob::Missing(key) => {
            return Err(Error::MissingResourceData {
                op: desc.to_owned(),
                tensor: name.to_owned(),
                resource: key,
            });
        }
        Blob::NotResource => {}
    }
    let ty = ffi::attr_type(b);
    let bits = ffi::element_type(ty).and_then(ffi::dense_storage_bits);
    let count = ffi::ranked_shape(ty).and_then(|s| match s.as_slice() {
        [RawDim::Static(n)] => Some(*n),
        _ => None,
    });
    match (ffi::is_dense_elements(b), bits, count) {
        (true, Some(8), Some(0)) => Ok(Buf::Raw(&[])),
        (true, Some(8), Some(n)) => {
            let n = usize::try_from(n).map_err(|_| Error::Malformed {
                op: desc.to_owned(),
                reason: "buffer larger than the address space".into(),
            })?;
            if ffi::dense_is_splat(b) {
                // SAFETY: a dense attribute of 8-bit elements; a splat stores one byte.
                let one = unsafe { ffi::dense_raw(b, 1) };
                Ok(Buf::Splat {
                    element: one,
                    storage: Storage::Same { bytes: 1 },
                    count: n as u64,
                })
            } else {
                // SAFETY: a dense attribute of `n` 8-bit elements stores `n` bytes.
                Ok(Buf::Raw(unsafe { ffi::dense_raw(b, n) }))
            }
        }
        _ => Err(Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "tensor {name:?}: buffers[{i}] is {}; expected dense_resource<...> or dense<...> \
                 of a rank-1 tensor of 8-bit integers",
                short(&ffi::attr_str(b))
            ),
        }),
    }
}

fn string_dict(
    a: Option<Attribute<'_>>,
    desc: &str,
    what: &str,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let Some(a) = a else { return Ok(out) };
    let Some(entries) = ffi::dictionary_attr(a) else {
        return Err(Error::Malformed {
            op: desc.to_owned(),
            reason: format!("{what} must be a dictionary of strings"),
        });
    };
    for (k, v) in entries {
        let v = ffi::string_attr(v).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!("{what}.{k} is not a string"),
        })?;
        out.insert(k, v);
    }
    Ok(out)
}

fn short(s: &str) -> String {
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

fn dims(raw: &[RawDim], desc: &str, ty: Type<'_>) -> Result<Vec<Dim>> {
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

fn static_count(shape: &[Dim]) -> Option<u64> {
    shape.iter().try_fold(1u64, |acc, d| match d {
        Dim::Fixed(n) => acc.checked_mul(*n),
        Dim::Dynamic => None,
    })
}

/// Checks that MLIR stores elements of `data_el` the way `storage` expects.
fn check_storage(data_el: Type<'_>, storage: Storage, desc: &str) -> Result<()> {
    let bits = ffi::dense_storage_bits(data_el);
    let ok = match storage {
        Storage::Same { bytes } => bits == Some(bytes as u64 * 8),
        Storage::Bits => bits == Some(1),
        Storage::BytePerElement { .. } => bits == Some(8),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "values of element type {} do not match the declared type",
                ffi::type_str(data_el)
            ),
        })
    }
}

/// A buffer from a `dense_resource` blob: byte-aligned types verbatim
/// (zero-copy); sub-byte types either already packed or one byte per element.
fn blob_buf<'c>(
    bytes: &'c [u8],
    storage: Storage,
    count: u64,
    desc: &str,
    name: &str,
    key: &str,
) -> Result<Buf<'c>> {
    let len = bytes.len() as u64;
    let bad = |expected: String| Error::Malformed {
        op: desc.to_owned(),
        reason: format!(
            "tensor {name:?}: dense_resource<{key}> holds {len} bytes, expected {expected}"
        ),
    };
    match storage {
        Storage::Same { bytes: per } => {
            if Some(len) == count.checked_mul(per as u64) {
                Ok(Buf::Raw(bytes))
            } else {
                Err(bad(format!("{count} x {per}")))
            }
        }
        Storage::Bits | Storage::BytePerElement { .. } => {
            let bits = match storage {
                Storage::BytePerElement { bits } => bits,
                _ => 1,
            };
            let packed = hurray::packed_len(count, bits).unwrap_or(u64::MAX);
            if len == packed {
                Ok(Buf::Packed {
                    data: bytes,
                    count,
                    bits,
                })
            } else if len == count {
                if bits == 1 {
                    // Bools one per byte: any non-zero byte is true.
                    let b: Vec<u8> = bytes.iter().map(|&b| u8::from(b != 0)).collect();
                    Ok(Buf::Owned(hurray::pack_codes(b, 1)))
                } else {
                    Ok(Buf::Unpacked { data: bytes, bits })
                }
            } else {
                Err(bad(format!(
                    "{packed} (packed) or {count} (one per element)"
                )))
            }
        }
    }
}

fn read_i64s(indices: Attribute<'_>, n: u64, desc: &str) -> Result<Vec<i64>> {
    read_ints(indices, n, desc, "sparse indices").map(|(v, _)| v)
}

/// `n` integers of a dense 32- or 64-bit integer (or index) attribute, and
/// their width in bits.
fn read_ints(a: Attribute<'_>, n: u64, desc: &str, what: &str) -> Result<(Vec<i64>, u64)> {
    let el = ffi::element_type(ffi::attr_type(a));
    let bits = el.and_then(ffi::dense_storage_bits);
    let is_int = el.is_some_and(|t| {
        let s = ffi::type_str(t);
        s == "index" || s.starts_with('i') || s.starts_with("ui") || s.starts_with("si")
    });
    let width = match bits {
        Some(b @ (32 | 64)) if ffi::is_dense_elements(a) && is_int => b,
        _ => {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: format!("{what} must be dense 32- or 64-bit integers"),
            });
        }
    };
    if n == 0 {
        return Ok((Vec::new(), width));
    }
    let per = (width / 8) as usize;
    let splat = ffi::dense_is_splat(a);
    let count = usize::try_from(n).map_err(|_| Error::Malformed {
        op: desc.to_owned(),
        reason: format!("{what}: too many elements"),
    })?;
    let len = if splat { per } else { count * per };
    // SAFETY: a dense attribute of `width`-bit integers holding `n` elements:
    // one element's bytes for a splat, else `per` bytes per element.
    let raw = unsafe { ffi::dense_raw(a, len) };
    let mut v: Vec<i64> = raw
        .chunks_exact(per)
        .map(|c| {
            if per == 8 {
                i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))
            } else {
                i64::from(i32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
            }
        })
        .collect();
    if splat {
        v = vec![v.first().copied().unwrap_or(0); count];
    }
    Ok((v, width))
}

/// The number of elements of a rank-1 (or `nnz x rank`) static tensor type.
fn elements_of(ty: Type<'_>) -> Option<u64> {
    ffi::ranked_shape(ty)?
        .iter()
        .try_fold(1u64, |acc, d| match d {
            RawDim::Static(n) => acc.checked_mul(*n),
            _ => None,
        })
}

fn encode_indices(coords: &[i64], index_type: ElementType) -> Vec<u8> {
    match index_type {
        ElementType::Int32 => coords
            .iter()
            .flat_map(|&c| (c as i32).to_le_bytes())
            .collect(),
        _ => coords.iter().flat_map(|&c| c.to_le_bytes()).collect(),
    }
}

fn vals_owned<'c>(b: &Buf<'c>) -> Buf<'c> {
    match b {
        Buf::Raw(d) => Buf::Raw(d),
        Buf::Owned(d) => Buf::Owned(d.clone()),
        Buf::Packed { data, count, bits } => Buf::Packed {
            data,
            count: *count,
            bits: *bits,
        },
        Buf::Unpacked { data, bits } => Buf::Unpacked { data, bits: *bits },
        Buf::Splat {
            element,
            storage,
            count,
        } => Buf::Splat {
            element,
            storage: *storage,
            count: *count,
        },
    }
}

enum SparseKind {
    Coo,
    Compressed { by_column: bool },
}

fn classify(enc: &ffi::SparseEncoding, rank: usize) -> Option<SparseKind> {
    let identity = enc.dim_of_level.as_deref() == Some(&(0..rank).collect::<Vec<_>>()[..]);
    match enc.levels.as_slice() {
        [SparseLevel::Dense, SparseLevel::Compressed { unique: true }] if rank == 2 => {
            match enc.dim_of_level.as_deref() {
                Some([0, 1]) => Some(SparseKind::Compressed { by_column: false }),
                Some([1, 0]) => Some(SparseKind::Compressed { by_column: true }),
                _ => None,
            }
        }
        [SparseLevel::Compressed { .. }, rest @ ..]
            if identity
                && rest
                    .iter()
                    .all(|l| matches!(l, SparseLevel::Singleton { .. })) =>
        {
            Some(SparseKind::Coo)
        }
        _ => None,
    }
}

fn index_type_for(enc: &ffi::SparseEncoding) -> ElementType {
    let w = enc.pos_width.max(enc.crd_width);
    if w != 0 && w <= 32 {
        ElementType::Int32
    } else {
        ElementType::Int64
    }
}

fn unsupported_encoding(desc: &str, enc: &ffi::SparseEncoding) -> Error {
    Error::Unsupported {
        op: desc.to_owned(),
        what: format!("sparse encoding with levels {:?}", enc.levels),
        reason: "Hurray lowers COO (compressed + singleton levels), CSR and CSC \
                 ((i, j) -> (i : dense, j : compressed) and its transpose)"
            .into(),
    }
}

/// CSR (or CSC with `by_column`) buffers from coordinates and values.
#[allow(clippy::too_many_arguments)]
fn compress<'c>(
    entries: &[&[i64]],
    vals: Buf<'c>,
    shape: &[Dim],
    storage: Storage,
    by_column: bool,
    index_type: ElementType,
    nnz: u64,
    desc: &str,
) -> Result<(Layout, Vec<Buf<'c>>)> {
    let (major, minor) = if by_column { (1, 0) } else { (0, 1) };
    let majors = match shape.get(major) {
        Some(Dim::Fixed(n)) => *n as usize,
        _ => {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: "a compressed sparse tensor needs static dimensions".into(),
            });
        }
    };
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (entries[i][major], entries[i][minor]));
    for w in order.windows(2) {
        let (a, b) = (entries[w[0]], entries[w[1]]);
        if a[major] == b[major] && a[minor] == b[minor] {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: format!("duplicate sparse coordinate {a:?}"),
            });
        }
    }
    // An empty tensor has no bytes at all, pointers included (ADR-007).
    let empty = shape.contains(&Dim::Fixed(0));
    let mut pointers = vec![0i64; if empty { 0 } else { majors + 1 }];
    for e in entries {
        pointers[e[major] as usize + 1] += 1;
    }
    for i in 0..pointers.len().saturating_sub(1) {
        pointers[i + 1] += pointers[i];
    }
    let indices: Vec<i64> = order.iter().map(|&i| entries[i][minor]).collect();
    let sorted = order.iter().enumerate().all(|(k, &i)| k == i);
    let values = if sorted {
        vals
    } else {
        permute(vals, &order, storage, desc)?
    };
    let layout = if by_column {
        Layout::Csc { nnz, index_type }
    } else {
        Layout::Csr { nnz, index_type }
    };
    Ok((
        layout,
        vec![
            Buf::Owned(encode_indices(&pointers, index_type)),
            Buf::Owned(encode_indices(&indices, index_type)),
            values,
        ],
    ))
}

fn permute<'c>(vals: Buf<'c>, order: &[usize], storage: Storage, desc: &str) -> Result<Buf<'c>> {
    match (vals, storage) {
        (Buf::Raw(d), Storage::Same { bytes }) => Ok(Buf::Owned(
            order
                .iter()
                .flat_map(|&i| d[i * bytes..(i + 1) * bytes].iter().copied())
                .collect(),
        )),
        (v @ Buf::Splat { .. }, _) => Ok(v),
        _ => Err(Error::Unsupported {
            op: desc.to_owned(),
            what: "unsorted sparse coordinates of a sub-byte element type".into(),
            reason: "sort the coordinates in the IR".into(),
        }),
    }
}

/// A dense constant with a sparse encoding: its non-zero elements (any
/// non-zero byte) become the stored entries.
fn dense_to_sparse<'c>(
    values: Buf<'c>,
    shape: &[Dim],
    storage: Storage,
    enc: &ffi::SparseEncoding,
    desc: &str,
    _name: &str,
    _et: ElementType,
) -> Result<(Layout, Vec<Buf<'c>>)> {
    let Storage::Same { bytes } = storage else {
        return Err(Error::Unsupported {
            op: desc.to_owned(),
            what: "a dense constant of a sub-byte type with a sparse encoding".into(),
            reason: "write it as sparse<...>".into(),
        });
    };
    let dense: Vec<u8> = match &values {
        Buf::Raw(d) => d.to_vec(),
        Buf::Splat { element, count, .. } => element[..bytes].repeat(*count as usize),
        _ => Vec::new(),
    };
    let dims: Vec<u64> = shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) => *n,
            Dim::Dynamic => 0,
        })
        .collect();
    let rank = dims.len();
    let mut coords = Vec::new();
    let mut vals = Vec::new();
    for (i, e) in dense.chunks_exact(bytes).enumerate() {
        if e.iter().any(|b| *b != 0) {
            let mut rem = i as u64;
            let mut c = vec![0i64; rank];
            for k in (0..rank).rev() {
                c[k] = (rem % dims[k].max(1)) as i64;
                rem /= dims[k].max(1);
            }
            coords.extend(c);
            vals.extend_from_slice(e);
        }
    }
    let nnz = (vals.len() / bytes) as u64;
    let entries: Vec<&[i64]> = if rank == 0 {
        Vec::new()
    } else {
        coords.chunks(rank).collect()
    };
    let index_type = index_type_for(enc);
    match classify(enc, rank) {
        Some(SparseKind::Coo) => Ok((
            Layout::Coo {
                nnz,
                index_type,
                canonical: true,
            },
            vec![
                Buf::Owned(encode_indices(&coords, index_type)),
                Buf::Owned(vals),
            ],
        )),
        Some(SparseKind::Compressed { by_column }) => compress(
            &entries,
            Buf::Owned(vals),
            shape,
            storage,
            by_column,
            index_type,
            nnz,
            desc,
        ),
        None => Err(unsupported_encoding(desc, enc)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_into_matches_the_runtime_packing() {
        for bits in [1u32, 2, 4] {
            for len in 0..40usize {
                let codes: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let mut out = Vec::new();
                pack_into(&codes, bits, &mut out);
                assert_eq!(
                    out,
                    hurray::pack_codes(codes.iter().copied(), bits),
                    "{bits} {len}"
                );
            }
        }
    }

    #[test]
    fn dense_resource_and_dense_payloads_are_borrowed_not_copied() {
        let mlir = crate::Mlir::new().unwrap();
        let module = mlir
            .parse_text(
                r#"ml_program.global private @r(dense_resource<blob> : tensor<2xf32>) : tensor<2xf32>
ml_program.global private @d(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>
{-#
  dialect_resources: { builtin: { blob: "0x040000000000803F00000040" } }
#-}"#,
            )
            .unwrap();
        let collected = collect(&module, LowerOptions::default()).unwrap();
        let body = module.body();
        let ops: Vec<_> =
            std::iter::successors(body.first_operation(), |o| o.next_in_block()).collect();
        let value = |i: usize| ops[i].attribute("value").unwrap();
        let Blob::Data(_, blob) = ffi::resource_blob(value(0)) else {
            panic!("resource without data")
        };
        // SAFETY: a dense f32 attribute of 2 elements stores 8 bytes.
        let dense = unsafe { ffi::dense_raw(value(1), 8) };
        for (entry, source) in collected.entries.iter().zip([blob, dense]) {
            let [Buf::Raw(bytes)] = entry.buffers.as_slice() else {
                panic!("{:?}", entry.buffers)
            };
            assert_eq!(bytes.as_ptr(), source.as_ptr(), "{}", entry.desc.name);
            assert_eq!(bytes.len(), 8);
        }
    }

    #[test]
    fn mask_last_keeps_only_real_elements() {
        assert_eq!(mask_last(0xFF, 3, 1), 0b111);
        assert_eq!(mask_last(0xFF, 3, 4), 0x0F);
        assert_eq!(mask_last(0xFF, 4, 2), 0xFF);
    }
}
