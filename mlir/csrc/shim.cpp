// What the MLIR C API lacks for Hurray: the bytes of a `dense_resource`
// blob, a `dense_resource` handle without data (a reference the import pass
// fills later) and filling it, and the properties of an operation of an
// unregistered dialect read from bytecode. Everything else goes through the
// C API (mlir-sys).
//
// Compiled by build.rs against the same LLVM/MLIR 22 headers mlir-sys binds,
// and linked statically with the MLIR libraries mlir-sys links.

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Operation.h"

#include <cstddef>
#include <cstdint>

extern "C" {

// Status codes of hurray_mlir_resource_blob.
// 0: `data`/`len` hold the blob's bytes (borrowed from the context).
// 1: `attr` is not a dense_resource elements attribute.
// 2: the resource has no data (elided, or missing from the file).
int hurray_mlir_resource_blob(MlirAttribute attr, const char **data,
                              size_t *len, MlirStringRef *key) {
  *data = nullptr;
  *len = 0;
  key->data = nullptr;
  key->length = 0;
  auto resource =
      llvm::dyn_cast_or_null<mlir::DenseResourceElementsAttr>(unwrap(attr));
  if (!resource)
    return 1;
  mlir::DenseResourceElementsHandle handle = resource.getRawHandle();
  llvm::StringRef k = handle.getKey();
  key->data = k.data();
  key->length = k.size();
  mlir::AsmResourceBlob *blob = handle.getBlob();
  if (!blob)
    return 2;
  llvm::ArrayRef<char> bytes = blob->getData();
  *data = bytes.data();
  *len = bytes.size();
  return 0;
}

// The properties of `op` as one attribute, or null. For an operation of an
// unregistered dialect this is the attribute MLIR keeps for it: a dictionary
// when parsed from generic text (then also visible through the C API's
// attribute accessors), but whatever single attribute the bytecode reader
// decoded when the producer wrote the properties with its own encoding
// (for `stablehlo.constant` that is the `value` elements attribute).
MlirAttribute hurray_mlir_properties(MlirOperation op) {
  mlir::Operation *operation = unwrap(op);
  if (operation->isRegistered())
    return wrap(mlir::Attribute());
  return wrap(operation->getPropertiesAsAttribute());
}

// A `dense_resource<key>` attribute of `type` whose resource has no data:
// the builtin dialect's entry `key`, inserted if absent. Null when `key`
// already holds data (a reference never aliases bytes) or MLIR chose another
// name for it.
MlirAttribute hurray_mlir_resource_reference(MlirType type, MlirStringRef key) {
  auto shaped = llvm::cast<mlir::ShapedType>(unwrap(type));
  auto &manager =
      mlir::DenseResourceElementsHandle::getManagerInterface(shaped.getContext());
  llvm::StringRef name = unwrap(key);
  if (auto *entry = manager.getBlobManager().lookup(name)) {
    if (entry->getBlob())
      return wrap(mlir::Attribute());
    auto *dialect = llvm::cast<mlir::BuiltinDialect>(manager.getDialect());
    return wrap(mlir::DenseResourceElementsAttr::get(
        shaped, mlir::DenseResourceElementsHandle(entry, dialect)));
  }
  mlir::DenseResourceElementsHandle handle = manager.insert(name);
  if (handle.getKey() != name)
    return wrap(mlir::Attribute());
  return wrap(mlir::DenseResourceElementsAttr::get(shaped, handle));
}

// Gives the resource behind the dense_resource attribute `attr` the bytes
// `data[0..len)` (aligned to `alignment`, never written), for every attribute
// that names it. `release(owner)` runs when MLIR drops the bytes (the
// context is destroyed, or the resource replaced; at once for no bytes). 0: done; 1: `attr` is not
// a dense_resource; 2: the resource already has data (nothing changed, and
// `release` is not called).
int hurray_mlir_resource_fill(MlirAttribute attr, const char *data, size_t len,
                              size_t alignment, void (*release)(void *),
                              void *owner) {
  auto resource =
      llvm::dyn_cast_or_null<mlir::DenseResourceElementsAttr>(unwrap(attr));
  if (!resource)
    return 1;
  auto *entry = resource.getRawHandle().getResource();
  if (entry->getBlob())
    return 2;
  if (len == 0) {
    // What MLIR's parser makes of an empty blob (printed "0x00000000").
    entry->setBlob(mlir::AsmResourceBlob());
    release(owner);
    return 0;
  }
  entry->setBlob(mlir::AsmResourceBlob(
      llvm::ArrayRef<char>(data, len), alignment,
      [release, owner](void *, size_t, size_t) { release(owner); },
      /*dataIsMutable=*/false));
  return 0;
}

// Replaces the properties of an unregistered operation (the one attribute
// hurray_mlir_properties returns) with `attr`. 0: done; 1: `op` is
// registered (its properties are typed storage, set through attributes).
int hurray_mlir_set_properties(MlirOperation op, MlirAttribute attr) {
  mlir::Operation *operation = unwrap(op);
  if (operation->isRegistered())
    return 1;
  return mlir::failed(operation->setPropertiesFromAttribute(
             unwrap(attr), /*emitError=*/nullptr))
             ? 1
             : 0;
}

} // extern "C"
