//! ONNX models and Hurray files: an ONNX model's initializers written to a
//! Hurray file, and a model whose initializers are ONNX external data at
//! their bytes inside a Hurray file, so ONNX Runtime maps the same file
//! every Hurray reader opens.
//!
//! The model is read and rewritten at the protobuf wire level: only the
//! initializers' data fields change; every other field (unknown ones
//! included) is copied byte for byte. No protobuf compiler is needed.

mod error;
mod externalize;
mod initializer;
mod model;
mod wire;

pub use error::{Error, Result};
pub use externalize::{Options, Report, externalize, write_weights};
pub use initializer::Initializer;
pub use model::Model;

/// Fuzzing's entry (`fuzz/fuzz_targets/convert_onnx.rs`): parses `bytes` as
/// a model, reads every initializer's values, rewrites every initializer as
/// external data and parses the result again, which must hold the same
/// initializers. Any error is fine; a panic or a changed model is not.
#[doc(hidden)]
pub fn exercise(bytes: &[u8]) -> Result<()> {
    let model = Model::from_bytes(bytes.to_vec(), std::path::PathBuf::from("/nonexistent"))?;
    for init in model.initializers() {
        let _ = model.values(init);
    }
    let rewritten = model.rewrite(|i| {
        let proto = &model.bytes[model.initializers()[i].proto.clone()];
        Some(externalize::external_proto(
            proto,
            "w.hurray",
            4096 * i as u64,
            64,
        ))
    })?;
    let again = Model::from_bytes(rewritten, std::path::PathBuf::new())?;
    let names = |m: &Model| {
        m.initializers()
            .iter()
            .map(|i| i.name().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&model),
        names(&again),
        "a rewrite changed the initializers"
    );
    assert!(again.initializers().iter().all(Initializer::is_external));
    Ok(())
}
