//! Globals: `ml_program.global` and `memref.global`, with a value (a tensor
//! entry) or without (a descriptor-only tensor of the declared type); and
//! global-like ops of any dialect without a value Hurray can read.

use crate::error::{Error, Result};
use crate::ffi;
use crate::lower::{Collector, Origin, Slot, attr, sym_name};
use crate::typed;
use melior::ir::OperationRef;
use melior::ir::operation::OperationLike;

impl<'c> Collector<'c> {
    pub(crate) fn ml_program_global(
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
        let declared = attr(op, "type").and_then(typed::type_attr_value);
        match attr(op, "value").filter(|a| typed::is_elements(*a)) {
            Some(value) => {
                let mut entry = self.elements_entry(&name, desc, value, declared)?;
                entry.origin = Some(Origin::new(op, Slot::Named("value".into()), value));
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
                    Some(d) => self.add_descriptor_only(d, desc),
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

    pub(crate) fn memref_global(
        &mut self,
        op: &OperationRef<'c, '_>,
        desc: &str,
        prefix: &str,
    ) -> Result<()> {
        let Some(sym) = sym_name(op) else {
            return Ok(());
        };
        let name = format!("{prefix}{sym}");
        match attr(op, "initial_value") {
            Some(v) if typed::is_elements(v) => {
                let mut entry = self.elements_entry(&name, desc, v, None)?;
                entry.origin = Some(Origin::new(op, Slot::Named("initial_value".into()), v));
                self.add(entry)
            }
            Some(v) if typed::is_unit(v) => {
                let Some(ty) = attr(op, "type").and_then(typed::type_attr_value) else {
                    return Ok(());
                };
                match self.signature_descriptor(&name, ty, desc, "uninitialized memref.global")? {
                    Some(d) => {
                        self.add_descriptor_only(d.with_metadata("mlir.op", "memref.global"), desc)
                    }
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

    /// A global-like op (a symbol without regions, operands or results)
    /// whose value is absent or not an elements attribute, with a ranked
    /// tensor `type`: a descriptor-only tensor named by its symbol. IREE's
    /// externalized parameters (`util.global @w = #flow.parameter.named<...>
    /// : tensor<4x3xf32>`) keep their shape and type this way; the value
    /// attribute, which says where the data lives, is kept as metadata
    /// `mlir.initial_value`.
    pub(crate) fn valueless_global(
        &mut self,
        op: &OperationRef<'c, '_>,
        desc: &str,
        prefix: &str,
    ) -> Result<()> {
        let Some(sym) = sym_name(op) else {
            return Ok(());
        };
        if op.result_count() > 0 || op.region_count() > 0 {
            return Ok(());
        }
        let Some(ty) = attr(op, "type")
            .and_then(typed::type_attr_value)
            .filter(|t| typed::is_ranked_tensor(*t))
        else {
            return Ok(());
        };
        let name = format!("{prefix}{sym}");
        let Some(mut d) = self.signature_descriptor(&name, ty, desc, "global type")? else {
            return Ok(());
        };
        d = d.with_metadata("mlir.op", crate::lower::op_name(op));
        if let Some(value) = attr(op, "initial_value").or_else(|| attr(op, "value")) {
            d = d.with_metadata("mlir.initial_value", ffi::attr_str(value));
        }
        self.add_descriptor_only(d, desc)
    }
}
