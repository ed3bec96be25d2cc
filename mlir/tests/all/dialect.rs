//! The `hurray` dialect is generated from the schema: regenerating from an
//! edited schema changes what MLIR's verifier accepts.

use hurray_codegen::Generator;
use hurray_codegen::flatc::Flatc;
use hurray_codegen::generator::MLIR_DIALECT;
use hurray_mlir::{Error, HURRAY_IRDL, Mlir};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn generator() -> Generator {
    let root = workspace();
    let flatc = Flatc::locate(&root).expect("the pinned flatc (cargo xtask install-flatc)");
    Generator::new(&root, flatc)
}

/// The dialect generated from the schema text `schema`.
fn dialect_for(schema: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hurray.fbs");
    std::fs::write(&path, schema).unwrap();
    let files = generator().with_schema(path).generate().unwrap();
    let f = files
        .into_iter()
        .find(|f| f.path == Path::new(MLIR_DIALECT))
        .expect("the generator emits the MLIR dialect");
    String::from_utf8(f.contents).unwrap()
}

fn schema() -> String {
    std::fs::read_to_string(workspace().join("schema/hurray.fbs")).unwrap()
}

/// A `hurray.tensor` of element type `et`, as text.
fn tensor_of(et: &str) -> String {
    format!(
        r#"%f = "hurray.file"() {{alignment = 64 : i64, metadata = {{}}}} : () -> !hurray.file_handle
"hurray.tensor"(%f) {{name = "t", element_type = {et}, shape = array<i64: 0>, layout = "dense", params = {{}}, quantization, buffers = [dense<> : tensor<0xi8>], metadata = {{}}}} : (!hurray.file_handle) -> ()"#
    )
}

fn accepts(mlir: &Mlir, et: &str) -> bool {
    match mlir.parse_text(&tensor_of(et)) {
        Ok(_) => true,
        Err(Error::Parse { diagnostics, .. }) => {
            assert!(
                diagnostics.contains("does not satisfy the constraint"),
                "{diagnostics}"
            );
            false
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_loaded_dialect_is_the_generated_one() {
    assert_eq!(
        dialect_for(&schema()),
        HURRAY_IRDL,
        "run `cargo xtask codegen`"
    );
    for et in hurray::ElementType::ALL {
        assert!(
            HURRAY_IRDL.contains(&format!("irdl.is {}\n", et.mlir_name())),
            "{}",
            et.mlir_name()
        );
    }
}

#[test]
fn changing_an_element_type_in_the_schema_changes_the_dialect() {
    // `tf32` is an MLIR type the schema does not have.
    let edited = schema().replacen("hurray_mlir: \"f4E2M1FN\"", "hurray_mlir: \"tf32\"", 1);
    assert_ne!(edited, schema());
    let new = dialect_for(&edited);
    assert_ne!(new, HURRAY_IRDL);
    assert!(new.contains("irdl.is tf32") && !new.contains("irdl.is f4E2M1FN"));

    let current = Mlir::new().unwrap();
    let regenerated = Mlir::with_dialect(&new).unwrap();
    assert!(accepts(&current, "f4E2M1FN") && !accepts(&current, "tf32"));
    assert!(accepts(&regenerated, "tf32") && !accepts(&regenerated, "f4E2M1FN"));
    // Untouched types are still accepted by both.
    assert!(accepts(&current, "bf16") && accepts(&regenerated, "bf16"));
}

#[test]
fn adding_an_element_type_to_the_schema_extends_the_dialect() {
    // A 7-bit integer (MLIR's `i7`, which the schema does not have), added
    // as the enum's last value.
    let schema = schema();
    let start = schema
        .find("enum ElementType")
        .expect("the ElementType enum");
    let end = start + schema[start..].find("\n}").expect("the end of the enum");
    let mut edited = schema.clone();
    edited.insert_str(
        end,
        "\n  /// Two's-complement 7-bit integer.\n  Int7 = 200 (hurray_bits: 7, hurray_name: \"i7\", hurray_mlir: \"i7\", hurray_dlpack_code: 0, hurray_dlpack_bits: 7, hurray_class: \"int\"),",
    );
    let new = dialect_for(&edited);
    let regenerated = Mlir::with_dialect(&new).unwrap();
    assert!(!accepts(&Mlir::new().unwrap(), "i7"));
    assert!(accepts(&regenerated, "i7"));
}

#[test]
fn a_broken_dialect_is_an_error_not_a_panic() {
    let e = Mlir::with_dialect("irdl.dialect @hurray { irdl.operation @t { %0 = irdl.is } }")
        .unwrap_err();
    assert!(matches!(e, Error::Dialect { .. }), "{e:?}");
}
