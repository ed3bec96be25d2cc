//! Links the plugin against the shared `libMLIR.so` and `libLLVM.so` that
//! `mlir-opt-22` itself loads, ahead of the static MLIR libraries mlir-sys
//! brings: every MLIR symbol the plugin uses then binds to the one MLIR in
//! the process (one set of TypeIDs, one context, one pass registry), and
//! only the C API wrappers, which `libMLIR.so` does not export, come from
//! the static libraries.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    let prefix = std::env::var_os("MLIR_SYS_220_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/llvm-22"));
    let libdir = match Command::new(prefix.join("bin/llvm-config"))
        .arg("--libdir")
        .output()
    {
        Ok(out) if out.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        _ => prefix.join("lib"),
    };
    println!("cargo:rustc-link-search=native={}", libdir.display());
    // Local libraries precede the upstream crates' (and their bundled static
    // archives) on the link line; `src/lib.rs`'s anchors make the linker
    // keep both under --as-needed.
    println!("cargo:rustc-link-lib=dylib=MLIR");
    println!("cargo:rustc-link-lib=dylib=LLVM");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,-rpath,{}",
        libdir.display()
    );
}
