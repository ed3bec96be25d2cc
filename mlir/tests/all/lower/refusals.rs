//! What lowering refuses, naming the op and the type: unsupported element
//! types and encodings, `index` unless asked to store it as i64; a refused
//! lowering to a path leaves no file.

use super::*;
use hurray::Layout;
use hurray_mlir::Mlir;

#[test]
fn unsupported_element_types_name_the_op_and_the_type() {
    for (ty, lit) in [
        ("f80", "1.0"),
        ("i7", "1"),
        ("i128", "1"),
        ("index", "1"),
        ("f128", "1.0"),
        ("tf32", "1.0"),
    ] {
        let e = lower_err(&format!(
            "func.func @f() {{\n %a = arith.constant dense<{lit}> : tensor<2x{ty}>\n return\n}}"
        ));
        let Error::UnsupportedType { op, ty: t, .. } = &e else {
            panic!("{ty}: {e:?}")
        };
        assert!(op.contains("arith.constant") && op.contains(":2:"), "{e}");
        assert_eq!(t, ty);
        assert!(e.to_string().contains(ty), "{e}");
    }
}

#[test]
fn index_can_be_stored_as_i64_on_request() {
    let text = "func.func @f() {\n %a = arith.constant dense<[1, 2]> : tensor<2xindex>\n return\n}";
    let e = lower_err_with(text, constants_only());
    assert!(e.to_string().contains("index-as-i64"), "{e}");
    let mut o = constants_only();
    o.index_as_i64 = true;
    let (_, file) = lower_text_with(text, o);
    let t = file.tensor("f/0").unwrap();
    assert_eq!(t.element_type(), ElementType::Int64);
    assert_eq!(t.as_slice::<i64>().unwrap(), &[1, 2]);
}

#[test]
fn signature_with_an_unsupported_type_is_an_error() {
    let e = lower_err("func.func @f(%a: tensor<?xtf32>) {\n return\n}");
    let Error::UnsupportedType { op, context, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(op.contains("func.func") && context.contains("arg 0"), "{e}");
}

#[test]
fn string_tensors_and_other_encodings_are_errors() {
    let e = lower_err(
        "func.func @f() {\n %a = arith.constant dense<[1.0, 2.0]> : tensor<2xf32, \"enc\">\n return\n}",
    );
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
}

#[test]
fn lowering_to_a_path_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.hurray");
    let mlir = Mlir::new().unwrap();
    let bad = mlir
        .parse_text("func.func @f() {\n %a = arith.constant dense<1> : tensor<2xi7>\n return\n}")
        .unwrap();
    assert!(hurray_mlir::lower_module_to_path(&bad, &path, Default::default()).is_err());
    assert!(!path.exists());
    let good = mlir
        .parse_text("func.func @f() {\n %a = arith.constant dense<1> : tensor<2xi8>\n return\n}")
        .unwrap();
    let l = hurray_mlir::lower_module_to_path(&good, &path, Default::default()).unwrap();
    assert_eq!(l.file_len, std::fs::metadata(&path).unwrap().len());
    let f = hurray::File::open(&path).unwrap();
    assert_eq!(f.tensor("f/0").unwrap().layout(), Layout::Dense);
}
