// The two Hurray passes as MLIR C++ passes, which is what MLIR's pass
// registry, textual pipelines (`hurray-export-constants{file=w.hurray}`) and
// pass plugins understand; the C API's external passes have no options.
//
// Each pass is a shell: it declares its options and hands the module to the
// Rust implementation (src/passes/entry.rs), which reports its own
// diagnostics on the module and returns whether it succeeded. Nothing about
// Hurray is decided here.

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

extern "C" {
// Implemented in Rust (src/passes/entry.rs). `true` on success; on failure
// the diagnostics are already emitted on `module`.
bool hurray_mlir_export_constants_run(MlirOperation module, MlirStringRef file,
                                      uint64_t threshold, bool inline_small,
                                      bool checksums, MlirStringRef parameters);
bool hurray_mlir_import_constants_run(MlirOperation module, MlirStringRef file);
}

namespace {

struct ExportConstants
    : public mlir::PassWrapper<ExportConstants,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExportConstants)

  ExportConstants() = default;
  ExportConstants(const ExportConstants &other) : PassWrapper(other) {}

  llvm::StringRef getArgument() const final {
    return "hurray-export-constants";
  }
  llvm::StringRef getDescription() const final {
    return "Write the module's tensor constants to a Hurray file and leave "
           "typed dense_resource references to it in the IR";
  }

  Option<std::string> file{
      *this, "file",
      llvm::cl::desc("The Hurray file to write (replaced atomically)")};
  Option<uint64_t> threshold{
      *this, "threshold",
      llvm::cl::desc("Constants holding at least this many bytes of IR are "
                     "exported"),
      llvm::cl::init(256)};
  Option<bool> inlineSmall{
      *this, "inline-small",
      llvm::cl::desc("Keep constants under the threshold inline (false: "
                     "export every constant, empty ones included)"),
      llvm::cl::init(true)};
  Option<bool> checksums{
      *this, "checksums",
      llvm::cl::desc("Record a CRC-32C of every buffer in the file"),
      llvm::cl::init(true)};
  Option<std::string> parameters{
      *this, "parameters",
      llvm::cl::desc("Make each exported constant an IREE parameter of this "
                     "scope (util.global @hurray.NAME = "
                     "#flow.parameter.named<\"SCOPE\"::\"NAME\"> and a "
                     "util.global.load in its place) instead of a reference")};

  void runOnOperation() final {
    if (!hurray_mlir_export_constants_run(
            wrap(getOperation().getOperation()), wrap(llvm::StringRef(file)),
            threshold, inlineSmall, checksums,
            wrap(llvm::StringRef(parameters))))
      signalPassFailure();
  }
};

struct ImportConstants
    : public mlir::PassWrapper<ImportConstants,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ImportConstants)

  ImportConstants() = default;
  ImportConstants(const ImportConstants &other) : PassWrapper(other) {}

  llvm::StringRef getArgument() const final {
    return "hurray-import-constants";
  }
  llvm::StringRef getDescription() const final {
    return "Resolve the references hurray-export-constants left back to the "
           "constants, read from the Hurray file";
  }

  Option<std::string> file{
      *this, "file",
      llvm::cl::desc("The Hurray file to read (default: the module's "
                     "hurray.file attribute)")};

  void runOnOperation() final {
    if (!hurray_mlir_import_constants_run(wrap(getOperation().getOperation()),
                                          wrap(llvm::StringRef(file))))
      signalPassFailure();
  }
};

} // namespace

extern "C" {

// Registers both passes in MLIR's global registry (once per process), so
// textual pipelines and `mlir-opt --load-pass-plugin` find them.
void hurray_mlir_register_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::PassRegistration<ExportConstants>();
    mlir::PassRegistration<ImportConstants>();
  });
}

MlirPass hurray_mlir_create_export_constants(MlirStringRef file,
                                             uint64_t threshold,
                                             bool inline_small,
                                             bool checksums,
                                             MlirStringRef parameters) {
  auto pass = std::make_unique<ExportConstants>();
  pass->file = unwrap(file).str();
  pass->parameters = unwrap(parameters).str();
  pass->threshold = threshold;
  pass->inlineSmall = inline_small;
  pass->checksums = checksums;
  return wrap(static_cast<mlir::Pass *>(pass.release()));
}

MlirPass hurray_mlir_create_import_constants(MlirStringRef file) {
  auto pass = std::make_unique<ImportConstants>();
  pass->file = unwrap(file).str();
  return wrap(static_cast<mlir::Pass *>(pass.release()));
}

} // extern "C"
