//! `libhurray_mlir_plugin.so`: the passes of [`hurray_mlir::passes`] for
//! stock MLIR tools.
//!
//! ```text
//! mlir-opt-22 --load-pass-plugin=target/release/libhurray_mlir_plugin.so \
//!   --pass-pipeline='builtin.module(hurray-export-constants{file=w.hurray threshold=256})' \
//!   model.mlir -o model.ref.mlir
//! ```
//!
//! The whole plugin is this entry point; the passes are `hurray-mlir`'s.
//! `build.rs` links it against the process's shared MLIR (see there).

use std::ffi::c_char;

/// MLIR's `mlir::PassPluginLibraryInfo` (mlir/Tools/Plugins/PassPlugin.h),
/// a C struct.
#[repr(C)]
#[derive(Debug)]
pub struct PassPluginLibraryInfo {
    api_version: u32,
    plugin_name: *const c_char,
    plugin_version: *const c_char,
    register_pass_registry_callbacks: extern "C" fn(),
}

unsafe extern "C" {
    // Exported by libMLIR.so and libLLVM.so respectively (any symbol each
    // exports would do): referencing them from this crate's own object makes
    // the linker, which runs with --as-needed, keep both libraries; they come
    // before the static archives on the link line, so every MLIR and LLVM
    // symbol binds to the shared copies (see build.rs).
    fn mlirDebuggerSetControl(enable: bool);
    fn LLVMGetVersion(major: *mut u32, minor: *mut u32, patch: *mut u32);
}

#[used]
static SHARED_LIBRARY_ANCHORS: (
    unsafe extern "C" fn(bool),
    unsafe extern "C" fn(*mut u32, *mut u32, *mut u32),
) = (mlirDebuggerSetControl, LLVMGetVersion);

/// `MLIR_PLUGIN_API_VERSION` of MLIR 22.
const MLIR_PLUGIN_API_VERSION: u32 = 1;

extern "C" fn register() {
    hurray_mlir::passes::register();
}

/// The entry point `mlir-opt --load-pass-plugin` looks up.
#[unsafe(no_mangle)]
pub extern "C" fn mlirGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: MLIR_PLUGIN_API_VERSION,
        plugin_name: c"hurray".as_ptr(),
        plugin_version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast(),
        register_pass_registry_callbacks: register,
    }
}
