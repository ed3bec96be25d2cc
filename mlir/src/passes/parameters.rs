//! `hurray-export-constants{parameters=SCOPE}`: each exported constant
//! becomes an IREE parameter named by its tensor, so `iree-compile` builds
//! the module with its weights left outside, and IREE reads them from the
//! Hurray file at run time (`hurray.iree.parameter_index`).
//!
//! A constant op with a result is replaced by `util.global.load @hurray.NAME`
//! of a module-level `util.global private @hurray.NAME =
//! #flow.parameter.named<"SCOPE"::"NAME"> : T` (what iree-turbine writes for
//! externalized parameters); a global that holds the value itself (IREE's
//! `util.global @w = dense<...>`) gets the parameter as its value. MLIR 22
//! has neither dialect: the ops are unregistered and the attribute opaque,
//! printed as IREE parses them, so the context must allow unregistered
//! dialects (`hurray opt` and `Mlir::new` do; `mlir-opt-22` with
//! `--allow-unregistered-dialect`).

use crate::error::{Error, Result};
use crate::lower;
use melior::ContextRef;
use melior::ir::attribute::{FlatSymbolRefAttribute, StringAttribute, TypeAttribute};
use melior::ir::block::BlockLike;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRefMut};
use melior::ir::{Attribute, Identifier, Location, RegionLike, Type, ValueLike};
use std::collections::HashSet;

/// The prefix of the globals' symbols (a tensor's name is not a symbol of
/// the module, and must not clash with one).
const SYMBOL_PREFIX: &str = "hurray.";

/// `#flow.parameter.named<"scope"::"key"> : ty`; `None` when the context
/// cannot hold it (unregistered dialects not allowed).
pub(crate) fn attribute<'c>(
    ctx: ContextRef<'c>,
    scope: &str,
    key: &str,
    ty: Type<'c>,
) -> Option<Attribute<'c>> {
    // SAFETY: the context outlives the attribute it makes.
    let ctx = unsafe { ctx.to_ref() };
    if !ctx.allow_unregistered_dialects() {
        return None;
    }
    let text = format!(
        "#flow.parameter.named<{}::{}> : {ty}",
        quoted(scope),
        quoted(key)
    );
    Attribute::parse(ctx, &text)
}

/// `s` as an MLIR string literal.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:02X}")),
        }
    }
    out.push('"');
    out
}

/// The `sym_name`s of the module's top-level ops.
pub(crate) fn top_level_symbols(module: &melior::ir::OperationRef<'_, '_>) -> HashSet<String> {
    let mut out = HashSet::new();
    let Some(body) = module.region(0).ok().and_then(|r| r.first_block()) else {
        return out;
    };
    let mut next = body.first_operation();
    while let Some(op) = next {
        out.extend(lower::sym_name(&op));
        next = op.next_in_block();
    }
    out
}

/// Whether `constant` can become a parameter: an empty scope, a constant
/// with more than one result, one in a nested module (its global would be
/// out of reach) or a symbol already taken are refused, before anything is
/// written.
pub(crate) fn check(
    constant: &melior::ir::OperationRef<'_, '_>,
    module: mlir_sys::MlirOperation,
    scope: &str,
    name: &str,
    symbols: &HashSet<String>,
) -> Result<()> {
    let refuse = |reason: String| {
        Err(Error::Unsupported {
            op: lower::describe_op(constant),
            what: format!("making tensor {name:?} an IREE parameter"),
            reason,
        })
    };
    if scope.is_empty() {
        return refuse("the parameter scope is empty".into());
    }
    if constant.result_count() > 1 {
        return refuse(format!("the op has {} results", constant.result_count()));
    }
    if constant.result_count() == 1 {
        let mut parent = constant.parent_operation();
        while let Some(p) = parent {
            if p.name().as_string_ref().as_str() == Ok("builtin.module") {
                if p.to_raw().ptr != module.ptr {
                    return refuse("it is inside a nested module".into());
                }
                break;
            }
            parent = p.parent_operation();
        }
        let symbol = format!("{SYMBOL_PREFIX}{name}");
        if symbols.contains(&symbol) {
            return refuse(format!("the module already has a symbol {symbol:?}"));
        }
    }
    Ok(())
}

/// Replaces the constant `op` (one result, of `parameter`'s type) by a load
/// of a new global, placed `position`-th in `module`'s body, whose value is
/// `parameter`.
pub(crate) fn replace(
    module: &mut OperationRefMut<'_, '_>,
    position: usize,
    op: mlir_sys::MlirOperation,
    name: &str,
    parameter: Attribute<'_>,
) -> Result<()> {
    // SAFETY: `op` was collected from `module`, which the caller holds
    // mutably borrowed; nothing has erased it.
    let constant = unsafe { melior::ir::OperationRef::from_raw(op) };
    let unsupported = |reason: &str| Error::Unsupported {
        op: lower::describe_op(&constant),
        what: format!("making tensor {name:?} an IREE parameter"),
        reason: reason.to_owned(),
    };
    let result = constant
        .result(0)
        .map_err(|_| unsupported("the op has no result"))?;
    let ty = result.r#type();
    let ctx = module.context();
    // SAFETY: the module's own context, alive while the module is.
    let ctx = unsafe { ctx.to_ref() };
    let location: Location<'_> = constant.location();
    let symbol = format!("{SYMBOL_PREFIX}{name}");
    let id = |s: &str| Identifier::new(ctx, s);
    let global = OperationBuilder::new("util.global", location)
        .add_attributes(&[
            (id("sym_name"), StringAttribute::new(ctx, &symbol).into()),
            (
                id("sym_visibility"),
                StringAttribute::new(ctx, "private").into(),
            ),
            (id("type"), TypeAttribute::new(ty).into()),
            (id("initial_value"), parameter),
        ])
        .build()
        .map_err(|_| unsupported("MLIR did not build util.global"))?;
    let load = OperationBuilder::new("util.global.load", location)
        .add_attributes(&[(
            id("global"),
            FlatSymbolRefAttribute::new(ctx, &symbol).into(),
        )])
        .add_results(&[ty])
        .build()
        .map_err(|_| unsupported("MLIR did not build util.global.load"))?;
    let block = constant
        .block()
        .ok_or_else(|| unsupported("the op is in no block"))?;
    let body = module
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| unsupported("the module has no body"))?;
    body.insert_operation(position, global);
    let load = block.insert_operation_before(constant, load);
    let loaded = load
        .result(0)
        .map_err(|_| unsupported("util.global.load has no result"))?;
    // SAFETY: two live values of one type in the same region: every use of
    // the constant's result now reads the load's.
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(result.to_raw(), loaded.to_raw()) };
    // SAFETY: the constant has no uses left; destroying it removes it from
    // its block and frees it. Nothing holds it afterwards: `constant` and
    // `result` are not used again, and the caller's handle is consumed.
    unsafe { mlir_sys::mlirOperationDestroy(op) };
    Ok(())
}
