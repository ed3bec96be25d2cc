//! Operations, values and locations: an unregistered operation's
//! properties, the name of a bare named location, and a value's location,
//! users and defining operation.

use super::{hurray_mlir_properties, string_ref};
use melior::ir::{Attribute, Type};
use mlir_sys as sys;

/// The properties of an operation of an unregistered dialect, as the one
/// attribute MLIR holds them in: a dictionary when parsed from generic text,
/// whatever single attribute MLIR 22's bytecode reader decoded when the
/// producer wrote them with its dialect's own encoding. `None` for a
/// registered operation or one without properties.
pub(crate) fn unregistered_properties<'c>(
    op: &melior::ir::OperationRef<'c, '_>,
) -> Option<Attribute<'c>> {
    use melior::ir::operation::OperationLike;
    // SAFETY: `op` is a live operation; the shim only reads its properties
    // storage, an attribute owned by the context (null when absent), which
    // `from_option_raw` null-checks.
    unsafe { Attribute::from_option_raw(hurray_mlir_properties(op.to_raw())) }
}

/// The name of a bare named location `loc("name")` (a name given to a value,
/// with no source position under it); `None` for any other location,
/// including a name wrapping a position (`loc("jit(f)/add"(...))`, the
/// scope-path names JAX attaches to every op).
pub(crate) fn bare_location_name(loc: melior::ir::Location<'_>) -> Option<String> {
    // SAFETY: kind query on a live location, then the accessors of a name
    // location; the unknown location of the same context is uniqued, so
    // `mlirLocationEqual` tells whether the child is unknown.
    unsafe {
        if !sys::mlirLocationIsAName(loc.to_raw()) {
            return None;
        }
        let child = sys::mlirLocationNameGetChildLoc(loc.to_raw());
        let unknown = sys::mlirLocationUnknownGet(sys::mlirLocationGetContext(loc.to_raw()));
        if !sys::mlirLocationEqual(child, unknown) {
            return None;
        }
        let name = string_ref(sys::mlirIdentifierStr(sys::mlirLocationNameGetName(
            loc.to_raw(),
        )));
        (!name.is_empty()).then_some(name)
    }
}

/// The location of a value (a block argument's, or its defining op's).
pub(crate) fn value_location<'c>(
    value: &impl melior::ir::ValueLike<'c>,
) -> melior::ir::Location<'c> {
    // SAFETY: a live value; MLIR returns its (context-owned, non-null) location.
    unsafe { melior::ir::Location::from_raw(sys::mlirValueGetLocation(value.to_raw())) }
}

/// The result types of the operations using `value`, with their op names.
pub(crate) fn user_results<'c>(value: melior::ir::Value<'c, '_>) -> Vec<(String, Vec<Type<'c>>)> {
    use melior::ir::ValueLike;
    let mut out = Vec::new();
    // SAFETY: `value` is a live SSA value; the use list is walked with the C
    // API's own null checks, and each owner is a live operation of the same
    // context whose name and result types are read only.
    unsafe {
        let mut use_ = sys::mlirValueGetFirstUse(value.to_raw());
        while !sys::mlirOpOperandIsNull(use_) {
            let owner = sys::mlirOpOperandGetOwner(use_);
            let name = sys::mlirIdentifierStr(sys::mlirOperationGetName(owner));
            let results = (0..sys::mlirOperationGetNumResults(owner))
                .map(|i| {
                    Type::from_raw(sys::mlirValueGetType(sys::mlirOperationGetResult(owner, i)))
                })
                .collect();
            out.push((string_ref(name), results));
            use_ = sys::mlirOpOperandGetNextUse(use_);
        }
    }
    out
}

/// The operation defining `value`, if it is an operation result (not a block
/// argument).
pub(crate) fn defining_op<'c, 'a>(
    value: melior::ir::Value<'c, 'a>,
) -> Option<melior::ir::OperationRef<'c, 'a>> {
    use melior::ir::ValueLike;
    // SAFETY: a kind query on a live value, then its owner, a live operation
    // of the same context (null-checked by `from_option_raw`).
    unsafe {
        if !sys::mlirValueIsAOpResult(value.to_raw()) {
            return None;
        }
        melior::ir::OperationRef::from_option_raw(sys::mlirOpResultGetOwner(value.to_raw()))
    }
}
