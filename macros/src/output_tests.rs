//! Expansion snapshots: each case is expanded in-process, pretty-printed with
//! prettyplease and compared with `tests/expand/<case>.expanded.rs`. After an
//! intended change to the generated code, refresh them with
//! `HURRAY_BLESS=1 cargo test -p hurray-derive --lib` and review the diff.

use crate::expand;
use proc_macro2::TokenStream;
use std::path::PathBuf;

type Derive = fn(&syn::DeriveInput) -> syn::Result<TokenStream>;

fn render(derive: Derive, src: &str) -> String {
    let input: syn::DeriveInput = syn::parse_str(src).expect("case parses");
    let tokens = derive(&input).unwrap_or_else(syn::Error::into_compile_error);
    let file: syn::File = syn::parse2(tokens).expect("expansion is a valid file");
    prettyplease::unparse(&file)
}

fn check(case: &str, derive: Derive, src: &str) {
    let actual = render(derive, src);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/expand")
        .join(format!("{case}.expanded.rs"));
    if std::env::var_os("HURRAY_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with HURRAY_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "expansion of `{case}` differs from {} at line {}:\n--- expected\n{}\n+++ actual\n{}\n\
             (run with HURRAY_BLESS=1 to accept the new expansion)",
            path.display(),
            first + 1,
            expected.lines().nth(first).unwrap_or("<end>"),
            actual.lines().nth(first).unwrap_or("<end>"),
        );
    }
}

#[test]
fn tensors_borrowed() {
    check(
        "tensors_borrowed",
        expand::tensors::derive,
        r#"
        struct Model<'a> {
            #[hurray(shape = [3, 0, 5])]
            empty: &'a [f32],
            #[hurray(shape = [?, 4])]
            nibbles: Packed<'a, Int4>,
            #[hurray(layout = "csc")]
            sparse: Compressed<'a, f32, i32>,
            #[hurray(quantization = "per_block", axis = 0, block_size = 32, expressed = "bf16")]
            quant: Quantized<'a, i8>,
            encoder: Encoder<'a>,
            #[hurray(rename = "extra.mask")]
            mask: Option<&'a [u8]>,
        }
        "#,
    );
}

#[test]
fn tensors_owned_generic_with_crate_path() {
    check(
        "tensors_owned",
        expand::tensors::derive,
        r#"
        #[hurray(crate = "crate::facade")]
        struct Owned<T> where T: Element {
            #[hurray(shape = [2, 2])]
            grid: Vec<T>,
            r#type: Option<Vec<f64>>,
        }
        "#,
    );
}

#[test]
fn tensors_optional_nested_coo_and_metadata() {
    check(
        "tensors_sparse_metadata",
        expand::tensors::derive,
        r#"
        #[hurray(metadata(format = "hurray"))]
        struct Graph<'a> {
            #[hurray(layout = "coo", metadata(role = "edges"))]
            edges: Coo<'a, f32, i32>,
            #[hurray(metadata_of = "edges")]
            edges_meta: BTreeMap<String, String>,
            #[hurray(rename = "adapter")]
            lora: Option<Adapter<'a>>,
            #[hurray(metadata)]
            file: BTreeMap<String, String>,
        }
        "#,
    );
}

#[test]
fn tensors_error_keeps_a_stub() {
    check(
        "tensors_error",
        expand::tensors::derive,
        r#"
        struct Broken<'a> {
            #[hurray(bogus)]
            w: &'a [f32],
            name: String,
        }
        "#,
    );
}

#[test]
fn element_newtype() {
    check(
        "element",
        expand::element::derive,
        "#[repr(transparent)] struct Meters(f32);",
    );
}

#[test]
fn descriptor_marker() {
    check(
        "descriptor",
        expand::descriptor::derive,
        r#"
        #[hurray(name = "logits", dtype = "i4", shape = [?, 0, 8],
                 quantization = "per_axis", axis = 2, scale = "f16")]
        struct Logits;
        "#,
    );
}

#[test]
fn dtype_table_matches_the_runtime() {
    let all = hurray::ElementType::ALL;
    assert_eq!(crate::dtype::TABLE.len(), all.len());
    for et in all {
        let (variant, _) = crate::dtype::lookup(et.name())
            .unwrap_or_else(|| panic!("{} missing from the macro's table", et.name()));
        assert_eq!(variant, format!("{et:?}"), "variant of {}", et.name());
    }
}

#[test]
fn scheme_names_are_the_runtimes() {
    let names: Vec<&str> = hurray::descriptor::QuantizationKind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    let ours: Vec<&str> = crate::attr::Scheme::NAMED.iter().map(|(n, _)| *n).collect();
    assert_eq!(ours, names);
}

/// The runtime accepts any floating-point expressed type, and no other.
#[test]
fn expressed_types_are_the_runtimes() {
    let runtime: Vec<&str> = hurray::ElementType::ALL
        .iter()
        .filter(|t| t.class() == hurray::elements::ElementClass::Float)
        .map(|t| t.name())
        .collect();
    assert_eq!(crate::dtype::expressed_types(), runtime);
}

#[test]
fn scale_types_are_the_runtimes() {
    let runtime: Vec<&str> = hurray::Quantization::SCALE_TYPES
        .iter()
        .map(|t| t.name())
        .collect();
    assert_eq!(crate::dtype::SCALE_TYPES, runtime);
}
