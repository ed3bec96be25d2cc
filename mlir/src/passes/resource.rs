//! The shim's `dense_resource` handles (`csrc/shim.cpp`): a reference without
//! data, and filling it with bytes MLIR borrows; and putting an attribute
//! back where an op holds it.

use crate::lower::Slot;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRefMut};
use melior::ir::{Attribute, AttributeLike, Type, TypeLike};
use mlir_sys::{MlirAttribute, MlirOperation, MlirStringRef, MlirType};
use std::ffi::{c_char, c_void};

unsafe extern "C" {
    fn hurray_mlir_set_properties(op: MlirOperation, attr: MlirAttribute) -> i32;
    fn hurray_mlir_resource_reference(ty: MlirType, key: MlirStringRef) -> MlirAttribute;
    fn hurray_mlir_resource_fill(
        attr: MlirAttribute,
        data: *const c_char,
        len: usize,
        alignment: usize,
        release: unsafe extern "C" fn(*mut c_void),
        owner: *mut c_void,
    ) -> i32;
}

/// `dense_resource<key> : ty` without data; `None` when `key` already holds
/// data in this context.
pub(crate) fn reference<'c>(ty: Type<'c>, key: &str) -> Option<Attribute<'c>> {
    // SAFETY: `ty` is a valid shaped type (the type of an elements
    // attribute); MLIR copies the key.
    let raw = unsafe {
        hurray_mlir_resource_reference(ty.to_raw(), melior::StringRef::new(key).to_raw())
    };
    // SAFETY: an attribute of `ty`'s context, or null (checked).
    unsafe { Attribute::from_option_raw(raw) }
}

/// How filling a reference went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    Done,
    NotResource,
    AlreadyHasData,
}

/// The owner of the bytes a blob borrows, kept alive until MLIR drops the blob.
pub(crate) type Owner = Box<dyn Send + Sync>;

unsafe extern "C" fn release(owner: *mut c_void) {
    // SAFETY: `owner` is the `Box<Owner>` leaked by `fill`, released exactly
    // once: MLIR calls the blob's deleter once, and `fill` takes it back
    // itself when MLIR did not take the blob.
    drop(unsafe { Box::from_raw(owner.cast::<Owner>()) });
}

/// Gives the resource behind `attr` the bytes `data`, which `owner` keeps
/// alive (MLIR drops `owner` with the blob). The blob declares `element`
/// bytes of alignment (what MLIR prints in its header, and what producers
/// write: an element's size) when the address has it, else 1.
pub(crate) fn fill(attr: Attribute<'_>, data: &[u8], element: usize, owner: Owner) -> Fill {
    let alignment = if element.is_power_of_two() && (data.as_ptr() as usize).is_multiple_of(element)
    {
        element
    } else {
        1
    };
    let owner = Box::into_raw(Box::new(owner));
    // SAFETY: `data` stays valid while `owner` lives (the caller's contract:
    // `owner` owns or keeps alive the memory), and MLIR never writes it
    // (`dataIsMutable = false`); `release` frees `owner` when MLIR drops the
    // blob. The alignment is the address's own.
    let status = unsafe {
        hurray_mlir_resource_fill(
            attr.to_raw(),
            data.as_ptr().cast(),
            data.len(),
            alignment,
            release,
            owner.cast(),
        )
    };
    match status {
        0 => Fill::Done,
        other => {
            // SAFETY: MLIR did not take the blob, so `owner` is still ours.
            unsafe { release(owner.cast()) };
            if other == 1 {
                Fill::NotResource
            } else {
                Fill::AlreadyHasData
            }
        }
    }
}

/// Gives the resource behind `attr` the bytes of `bytes`, which MLIR then owns.
pub(crate) fn fill_owned(attr: Attribute<'_>, bytes: Vec<u8>) -> Fill {
    let (ptr, len) = (bytes.as_ptr(), bytes.len());
    // SAFETY: the view is of `bytes`' heap buffer, which moving the Vec into
    // the owner box does not move; the owner keeps it until MLIR drops the
    // blob, and nothing writes it.
    let view = unsafe { std::slice::from_raw_parts(ptr, len) };
    fill(attr, view, 1, Box::new(bytes))
}

/// Puts `value` where `slot` says `op` holds its elements attribute; whether
/// the op now holds it there.
pub(crate) fn set<'c>(mut op: OperationRefMut<'c, '_>, slot: &Slot, value: Attribute<'c>) -> bool {
    match slot {
        Slot::Named(name) => {
            op.set_attribute(name, value);
            op.attribute(name).ok() == Some(value)
        }
        Slot::Properties => {
            // SAFETY: a live operation and an attribute of its context; the
            // shim refuses a registered op.
            unsafe { hurray_mlir_set_properties(op.to_raw(), value.to_raw()) == 0 }
        }
    }
}
