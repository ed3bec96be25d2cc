//! Globals: `ml_program.global` and `memref.global`, with a value (a tensor
//! entry) or without (a descriptor-only tensor of the declared type).

use crate::error::{Error, Result};
use crate::ffi;
use crate::lower::{Collector, Entry, attr, sym_name};
use crate::typed;
use melior::ir::OperationRef;

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
                let entry = self.elements_entry(&name, desc, v, None)?;
                self.add(entry)
            }
            Some(v) if typed::is_unit(v) => {
                let Some(ty) = attr(op, "type").and_then(typed::type_attr_value) else {
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
}
