//! Compiles the C++ the MLIR C API leaves to us against Debian's LLVM/MLIR 22
//! headers: `csrc/shim.cpp` (`dense_resource` blobs and handles, unregistered
//! properties) and `csrc/passes.cpp` (the two passes' registry entries).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=csrc/shim.cpp");
    println!("cargo:rerun-if-changed=csrc/passes.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    let prefix = std::env::var_os("MLIR_SYS_220_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/llvm-22"));
    let llvm_config = prefix.join("bin/llvm-config");
    let include = match Command::new(&llvm_config).arg("--includedir").output() {
        Ok(out) if out.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        _ => prefix.join("include"),
    };
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .include(&include)
        .flag_if_supported("-fno-exceptions")
        .flag_if_supported("-Wno-unused-parameter")
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .file("csrc/shim.cpp")
        .file("csrc/passes.cpp")
        .compile("hurray_mlir_shim");
}
