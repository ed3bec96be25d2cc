//! The checked-in `include/hurray.h` is what cbindgen generates from the
//! current sources. Regenerate with `cargo xtask cbindgen`.

#[path = "../header_gen.rs"]
mod header_gen;

use std::path::Path;

#[test]
fn header_is_fresh() {
    let ffi = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fresh = header_gen::generate_header(ffi).expect("cbindgen runs");
    let current = std::fs::read_to_string(ffi.join("include/hurray.h")).unwrap_or_default();
    assert!(
        current == fresh,
        "ffi/include/hurray.h is stale: run `cargo xtask cbindgen`"
    );
    // Nothing of the runtime's generated FlatBuffers code leaks into the C API.
    assert!(!fresh.contains("_VT_"));
    for needle in [
        "hurray_file_open",
        "hurray_tensor_to_dlpack",
        "DLManagedTensorVersioned",
        "HURRAY_DYNAMIC_DIM",
    ] {
        assert!(fresh.contains(needle), "{needle} missing from the header");
    }
}
