//! Any bytes as an ONNX model for `hurray convert model.onnx` and
//! `onnx-externalize`: parsed, every initializer's values read, every
//! initializer rewritten as external data and the result parsed again. It
//! must never panic, and a rewrite must keep every initializer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hurray_onnx::exercise(data);
});
