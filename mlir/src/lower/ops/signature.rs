//! Function signatures and `tensor.empty`: descriptor-only tensors of ranked
//! tensor types (dynamic dimensions kept dynamic).

use crate::error::{Error, Result};
use crate::ffi;
use crate::lower::{Collector, NAME_ATTR, attr, dims};
use crate::typed;
use crate::types;
use hurray::TensorDescriptor;
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationLike;
use melior::ir::{Attribute, OperationRef, RegionLike, Type, ValueLike};

/// The argument attribute in which JAX records an argument's Python path.
pub(crate) const JAX_ARG_INFO: &str = "jax.arg_info";
/// The result attribute in which JAX records a result's path (`result[0]`).
pub(crate) const JAX_RESULT_INFO: &str = "jax.result_info";

/// The function attribute in which TensorFlow and TFLite's importer record
/// the graph's input and output names: `{inputs = "x,y", outputs = "z"}`.
pub(crate) const TF_ENTRY_FUNCTION: &str = "tf.entry_function";

/// The input and output names of `tf.entry_function`, if present.
fn tf_entry_function(op: &OperationRef<'_, '_>) -> (Vec<String>, Vec<String>) {
    let entries = attr(op, TF_ENTRY_FUNCTION)
        .and_then(ffi::dictionary_attr)
        .unwrap_or_default();
    let names = |key: &str| {
        string_entry(&entries, key)
            .map(|s| s.split(',').map(|n| n.trim().to_owned()).collect())
            .unwrap_or_default()
    };
    (names("inputs"), names("outputs"))
}

/// The string value of `key` among a dictionary attribute's entries.
fn string_entry(entries: &[(String, Attribute<'_>)], key: &str) -> Option<String> {
    entries
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, a)| ffi::string_attr(*a))
}

/// The bare named location of argument `i` of the function `op`'s body.
fn argument_location_name(op: &OperationRef<'_, '_>, i: usize) -> Option<String> {
    let block = op.region(0).ok()?.first_block()?;
    let argument = block.argument(i).ok()?;
    ffi::bare_location_name(ffi::value_location(&argument))
}

impl<'c> Collector<'c> {
    pub(crate) fn signatures(
        &mut self,
        op: &OperationRef<'c, '_>,
        fname: &str,
        desc: &str,
    ) -> Result<()> {
        let Some((inputs, results)) = attr(op, "function_type")
            .and_then(typed::type_attr_value)
            .and_then(typed::function_type)
        else {
            return Ok(());
        };
        let entry_names = tf_entry_function(op);
        let arg_attrs = attr(op, "arg_attrs").and_then(typed::array_attr);
        let res_attrs = attr(op, "res_attrs").and_then(typed::array_attr);
        let all = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| ("arg", i, *t))
            .chain(results.iter().enumerate().map(|(i, t)| ("result", i, *t)));
        for (kind, i, ty) in all {
            let attrs = if kind == "arg" {
                &arg_attrs
            } else {
                &res_attrs
            };
            let attrs = attrs
                .as_ref()
                .and_then(|v| v.get(i).copied())
                .and_then(ffi::dictionary_attr)
                .unwrap_or_default();
            let string = |key: &str| string_entry(&attrs, key);
            // `{hurray.name = "x"}` names the tensor; JAX's
            // `jax.arg_info` / `jax.result_info` (the Python argument path,
            // `result[0]`) names it within the function.
            let jax_key = if kind == "arg" {
                JAX_ARG_INFO
            } else {
                JAX_RESULT_INFO
            };
            let (inputs, outputs) = &entry_names;
            let tf_name = if kind == "arg" { inputs } else { outputs }
                .get(i)
                .filter(|n| !n.is_empty());
            let named = string(NAME_ATTR)
                .or_else(|| string(jax_key).map(|info| format!("{fname}/{info}")))
                .or_else(|| tf_name.map(|n| format!("{fname}/{n}")));
            if typed::is_unranked_shaped(ty) {
                self.skipped.push(format!(
                    "{desc}: {kind} {i} of @{fname} has unranked type {}, which no Hurray descriptor can hold",
                    ffi::type_str(ty)
                ));
                continue;
            }
            let Some(tensor) = types::tensor_type(ty) else {
                continue;
            };
            let name = named
                .clone()
                .unwrap_or_else(|| format!("{fname}/{kind}{i}"));
            if let Some(d) =
                self.signature_descriptor(&name, tensor, desc, &format!("{kind} {i} of @{fname}"))?
            {
                let d = d
                    .with_metadata(
                        "mlir.role",
                        if kind == "arg" { "argument" } else { "result" },
                    )
                    .with_metadata("mlir.type", ffi::type_str(ty));
                self.add_descriptor_only(d, desc)?;
                // An argument's bare named location (`loc("x")`, as JAX
                // attaches the Python parameter name).
                if named.is_none()
                    && kind == "arg"
                    && let Some(located) = argument_location_name(op, i)
                {
                    self.propose_name(format!("{fname}/{located}"));
                }
            }
        }
        Ok(())
    }

    /// `tensor.empty`: at most a descriptor-only tensor (its contents are
    /// uninitialised), and only with [`LowerOptions::tensor_empty`].
    pub(crate) fn tensor_empty(
        &mut self,
        op: &OperationRef<'c, '_>,
        desc: &str,
        name: &str,
    ) -> Result<()> {
        if !self.options.tensor_empty {
            return Ok(());
        }
        let ty = op.result(0).map(|r| r.r#type())?;
        let d = self.signature_descriptor(name, ty, desc, "tensor.empty result")?;
        if let Some(d) = d {
            let d = d.with_metadata("mlir.op", "tensor.empty");
            self.add_descriptor_only(d, desc)?;
        }
        Ok(())
    }

    /// type, `tensor.empty`); `None` for other types.
    pub(crate) fn signature_descriptor(
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
}
