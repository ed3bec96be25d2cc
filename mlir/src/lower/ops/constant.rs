//! Constant-like ops (`arith.constant`, `stablehlo.constant`, `tosa.const`,
//! ...): no operands, a ranked tensor result, an elements attribute.

use crate::error::Result;
use crate::ffi;
use crate::lower::{Collector, NAME_ATTR, attr, sym_name};
use crate::typed;
use melior::ir::operation::OperationLike;
use melior::ir::{OperationRef, ValueLike};

impl<'c> Collector<'c> {
    /// A constant-like op: no operands, a result, and an elements attribute.
    pub(crate) fn constant(
        &mut self,
        op: &OperationRef<'c, '_>,
        desc: &str,
        name: &str,
    ) -> Result<()> {
        let preferred = ["value", "values"];
        let mut found = None;
        for p in preferred {
            if let Some(a) = attr(op, p).filter(|a| typed::is_elements(*a)) {
                found = Some(a);
                break;
            }
        }
        if found.is_none() {
            found = op
                .attributes()
                .map(|(_, a)| a)
                .find(|a| typed::is_elements(*a));
        }
        let Some(value) = found else { return Ok(()) };
        let result_ty = op.result(0).map(|r| r.r#type())?;
        // A tensor constant produces a ranked tensor from a tensor attribute;
        // vector constants and e.g. `tosa.const_shape` (`!tosa.shape`) are not
        // tensor values.
        if !typed::is_ranked_tensor(typed::attr_type(value)) || !typed::is_ranked_tensor(result_ty)
        {
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
}
