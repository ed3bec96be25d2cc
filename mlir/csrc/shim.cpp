// The two things the MLIR C API lacks for Hurray: the bytes of a
// `dense_resource` blob, and the properties of an operation of an
// unregistered dialect read from bytecode. Everything else goes through the
// C API (mlir-sys).
//
// Compiled by build.rs against the same LLVM/MLIR 22 headers mlir-sys binds,
// and linked statically with the MLIR libraries mlir-sys links.

#include "mlir/CAPI/IR.h"
#include "mlir/IR/BuiltinAttributes.h"
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

} // extern "C"
