//! A model the onnx package wrote (`fixtures/make_fixtures.py`): every data
//! type Hurray has, once in the typed field onnx's `make_tensor` picks and
//! once as `raw_data` from its `numpy_helper`; and an `If` whose branches
//! hold initializers. Both forms give the same Hurray bytes, which are
//! `raw_data` byte for byte (BOOL: packed to bits).

use hurray::{ElementType, File, descriptor::BufferRole};
use hurray_onnx::{Model, write_weights};
use std::path::Path;

fn fixture() -> Model {
    Model::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/types.onnx")).unwrap()
}

#[test]
fn typed_fields_and_raw_data_give_the_same_tensors() {
    let model = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.hurray");
    write_weights(&model, &path, 64).unwrap();
    let file = File::open(&path).unwrap();
    let mut types = 0;
    for init in model.initializers() {
        let Some(base) = init.name().strip_suffix(".raw") else {
            continue;
        };
        types += 1;
        let raw = file.tensor(init.name()).unwrap();
        let typed = file.tensor(&format!("{base}.typed")).unwrap();
        assert_eq!(raw.element_type(), typed.element_type(), "{base}");
        assert_eq!(raw.dims(), typed.dims(), "{base}");
        assert_eq!(
            raw.buffer(BufferRole::Values),
            typed.buffer(BufferRole::Values),
            "{base}"
        );
        // And both are the raw_data onnx wrote (bools packed to bits).
        let stored = model.values(init).unwrap();
        assert_eq!(
            raw.buffer(BufferRole::Values).unwrap(),
            &stored[..],
            "{base}"
        );
        if raw.element_type() == ElementType::Bool {
            assert_eq!(stored.len(), 1, "six bools pack into one byte");
        }
    }
    // Every type onnx has but STRING: 27 of them.
    assert_eq!(
        types,
        ElementType::ALL
            .iter()
            .filter(|t| t.onnx_data_type().is_some())
            .count()
    );
    // The If's branches' initializers are found.
    assert_eq!(
        file.tensor("then.w")
            .unwrap()
            .buffer(BufferRole::Values)
            .unwrap(),
        &[0, 0, 0xc0, 0x3f, 0, 0, 0x20, 0xc0]
    );
    assert!(file.tensor("else.w").is_ok());
}
