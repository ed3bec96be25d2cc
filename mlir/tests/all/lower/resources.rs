//! `dense_resource` blobs: lowered byte-exact, and the errors for data that
//! is elided, missing or of the wrong size.

use super::*;

#[test]
fn dense_resource_blobs_are_lowered_byte_exact() {
    let (_, file) = lower_text_with(
        r#"func.func @f() {
  %a = arith.constant dense_resource<weights> : tensor<2x2xf32>
  %b = arith.constant dense_resource<nibbles> : tensor<3xi4>
  %c = arith.constant dense_resource<packed> : tensor<3xi4>
  %d = arith.constant dense_resource<bools> : tensor<3xi1>
  return
}
{-#
  dialect_resources: { builtin: {
    weights: "0x040000000000803F000000400000404000008040",
    nibbles: "0x01000000010E07",
    packed: "0x01000000E107",
    bools: "0x01000000010001"
  } }
#-}"#,
        constants_only(),
    );
    let w = file.tensor("f/0").unwrap();
    assert_eq!(w.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    // One byte per element (MLIR style) and already packed give the same bytes.
    assert_eq!(values(&file, "f/1"), [0xE1, 0x07]);
    assert_eq!(values(&file, "f/2"), [0xE1, 0x07]);
    assert_eq!(values(&file, "f/3"), [0b101]);
}

#[test]
fn elided_resource_data_is_a_clear_error() {
    let e = lower_err(
        "func.func @f() -> tensor<4xf32> {\n %a = arith.constant dense_resource<__elided__> : tensor<4xf32>\n return %a : tensor<4xf32>\n}",
    );
    assert!(matches!(e, Error::MissingResourceData { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("__elided__") && msg.contains("arith.constant"),
        "{msg}"
    );
    assert!(msg.contains("f/0"), "{msg}");
}

#[test]
fn resource_missing_from_the_file_is_a_clear_error() {
    let e = lower_err(
        "ml_program.global private @w(dense_resource<nowhere> : tensor<2xi32>) : tensor<2xi32>",
    );
    assert!(
        matches!(e, Error::MissingResourceData { ref resource, ref tensor, .. }
        if resource == "nowhere" && tensor == "w"),
        "{e:?}"
    );
}

#[test]
fn resource_of_the_wrong_size_is_an_error() {
    let e = lower_err(
        r#"ml_program.global private @w(dense_resource<short> : tensor<4xf32>) : tensor<4xf32>
{-#
  dialect_resources: { builtin: { short: "0x040000000000803F" } }
#-}"#,
    );
    assert!(e.to_string().contains("holds 4 bytes"), "{e}");
}
