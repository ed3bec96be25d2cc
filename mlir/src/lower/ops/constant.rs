//! The one rule for tensor constants, whatever their dialect: an operation
//! with no operands whose attributes hold a builtin elements attribute
//! (`dense`, `dense_resource`, sparse, splat) of ranked tensor type.
//!
//! - With a result that is a tensor (builtin, or torch-mlir's
//!   `!torch.vtensor`, see [`types::tensor_type`]): a constant
//!   (`arith.constant`, `stablehlo.constant`, `mhlo.constant`, `tosa.const`,
//!   `tfl.pseudo_const`, `torch.vtensor.literal`, ...). Results of another
//!   kind (`vector`, `!tosa.shape`) are not tensor values and are left alone.
//! - Without results but with a `sym_name`: a global (IREE's `util.global`,
//!   ...), named by its symbol. Without an elements attribute, a global-like
//!   op with a tensor `type` is a descriptor-only tensor
//!   ([`Collector::valueless_global`]: IREE's externalized parameters).
//!   (`ml_program.global` and `memref.global` have their own module.)
//!
//! The elements attribute is `value` or `values` if present, else the first
//! one. An unregistered op read from bytecode may hold its properties as one
//! attribute of its dialect's encoding; if that is an elements attribute, it
//! is the value (see [`ffi::unregistered_properties`]).

use crate::error::Result;
use crate::ffi;
use crate::lower::{Collector, NAME_ATTR, Origin, Slot, all_attributes, attr, sym_name};
use crate::typed;
use crate::types;
use melior::ir::operation::OperationLike;
use melior::ir::{Attribute, OperationRef, Type, ValueLike};

impl<'c> Collector<'c> {
    /// An op with no operands: a constant or a global-like op if it holds
    /// an elements attribute, else nothing.
    pub(crate) fn constant(
        &mut self,
        op: &OperationRef<'c, '_>,
        desc: &str,
        prefix: &str,
        fallback: &str,
    ) -> Result<()> {
        let Some((attribute, value)) = elements_attribute(op) else {
            return self.valueless_global(op, desc, prefix);
        };
        if !typed::is_ranked_tensor(typed::attr_type(value)) {
            return Ok(());
        }
        let global = sym_name(op).map(|s| format!("{prefix}{s}"));
        let declared = if op.result_count() > 0 {
            let result_ty = op.result(0).map(|r| r.r#type())?;
            let Some(tensor) = types::tensor_type(result_ty) else {
                return Ok(());
            };
            // A builtin result type may carry what the attribute does not
            // (`!quant.uniform`); a foreign one stands for the attribute's.
            let declared = (tensor == result_ty).then_some(result_ty);
            match self.constant_use(op, declared) {
                Some(declared) => declared,
                None => return Ok(()),
            }
        } else if global.is_some() {
            None
        } else {
            return Ok(());
        };
        let explicit = attr(op, NAME_ATTR).and_then(ffi::string_attr).or(global);
        let name = explicit.clone().unwrap_or_else(|| fallback.to_owned());
        let mut entry = self.elements_entry(&name, desc, value, declared)?;
        let slot = attribute.map_or(Slot::Properties, Slot::Named);
        entry.origin = Some(Origin::new(op, slot, value));
        self.add(entry)?;
        if explicit.is_none()
            && let Some(located) = ffi::bare_location_name(op.location())
        {
            self.propose_name(located);
        }
        Ok(())
    }

    /// What the users of a constant's result say about it: `None` when it is
    /// a buffer of a `sparse_tensor.assemble` (lowered with that tensor);
    /// the quantized type of its single `quant.scast` user (the constant
    /// holds the stored values of that quantized tensor); else `declared`.
    fn constant_use(
        &self,
        op: &OperationRef<'c, '_>,
        declared: Option<Type<'c>>,
    ) -> Option<Option<Type<'c>>> {
        let Ok(result) = op.result(0) else {
            return Some(declared);
        };
        let users = ffi::user_results(result.into());
        if !users.is_empty() && users.iter().all(|(u, _)| u == "sparse_tensor.assemble") {
            return None;
        }
        if let [(user, types)] = users.as_slice()
            && user == "quant.scast"
            && let [t] = types.as_slice()
            && ffi::element_type(*t).and_then(ffi::quant_type).is_some()
        {
            return Some(Some(*t));
        }
        Some(declared)
    }
}

/// The elements attribute an op holds, with its name (`None`: it is the
/// whole properties): `value` / `values` first, then any attribute, then the
/// properties of an unregistered op (a dictionary when parsed from text,
/// whose entries the C API's attribute list leaves out; one attribute when
/// read from bytecode).
fn elements_attribute<'c>(op: &OperationRef<'c, '_>) -> Option<(Option<String>, Attribute<'c>)> {
    let by_name = ["value", "values"]
        .into_iter()
        .filter_map(|name| attr(op, name).map(|a| (Some(name.to_owned()), a)));
    by_name
        .chain(all_attributes(op))
        .find(|(_, a)| typed::is_elements(*a))
}
