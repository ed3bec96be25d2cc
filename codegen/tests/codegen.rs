//! The generator's own guarantees: generated files are current, a schema edit
//! makes them stale, only the pinned flatc runs, incompatible schema edits are
//! caught, and no hand-written element-type table exists outside generated code.

use hurray_codegen::{Generator, evolution, flatc::Flatc};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn flatc() -> Flatc {
    Flatc::locate(&workspace()).expect("the pinned flatc (cargo xtask install-flatc)")
}

fn schema_text() -> String {
    std::fs::read_to_string(workspace().join("schema/hurray.fbs")).unwrap()
}

/// Writes `text` as a temporary schema and returns (dir guard, path).
fn temp_schema(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hurray.fbs");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn generated_files_are_current() {
    let stale = Generator::new(&workspace(), flatc()).check().unwrap();
    assert!(stale.is_empty(), "stale generated files: {stale:#?}");
}

#[test]
fn a_one_character_schema_edit_makes_generated_code_stale() {
    // One character: a doc comment letter, which flows into every generated file.
    let text = schema_text().replacen(
        "/// One bit, 0 = false, 1 = true.",
        "/// One bit, 0 = false, 1 = True.",
        1,
    );
    assert_ne!(text, schema_text());
    let (_dir, path) = temp_schema(&text);
    let stale = Generator::new(&workspace(), flatc())
        .with_schema(path)
        .check()
        .unwrap();
    let paths: Vec<_> = stale
        .iter()
        .map(|s| s.path.to_string_lossy().into_owned())
        .collect();
    assert!(
        paths.contains(&"runtime/src/gen/hurray_generated.rs".to_owned()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"runtime/src/gen/element_type.rs".to_owned()),
        "{paths:?}"
    );
    assert!(
        stale.iter().all(|s| s.summary.contains("line")),
        "diff summaries: {stale:#?}"
    );
}

#[test]
fn a_new_field_changes_the_generated_verifier() {
    // A field appended to `Tensor`: the verifier must check it, in order.
    let text = schema_text().replacen(
        "  digests: [ubyte];\n}",
        "  digests: [ubyte];\n  /// Test only.\n  notes: [string];\n}",
        1,
    );
    assert_ne!(text, schema_text());
    let (_dir, path) = temp_schema(&text);
    let files = Generator::new(&workspace(), flatc())
        .with_schema(path)
        .generate()
        .unwrap();
    let verifier = files
        .iter()
        .find(|f| f.path.ends_with("runtime/src/gen/verifier.rs"))
        .expect("the verifier is generated");
    let text = String::from_utf8(verifier.contents.clone()).unwrap();
    let tensor = &text[text.find("fn verify_tensor<").unwrap()..];
    let tensor = &tensor[..tensor.find("\n}\n").unwrap()];
    let checksums = tensor.find("// checksums").unwrap();
    let notes = tensor.find("// notes").expect("the new field is verified");
    assert!(checksums < notes, "fields in declaration order");
    assert!(
        tensor[notes..].contains("c.string(at)?"),
        "{}",
        &tensor[notes..]
    );
}

#[test]
fn an_element_type_attribute_edit_changes_the_tables() {
    let text = schema_text().replacen("hurray_mlir: \"bf16\"", "hurray_mlir: \"bf16x\"", 1);
    let (_dir, path) = temp_schema(&text);
    let facts = Generator::new(&workspace(), flatc())
        .with_schema(path)
        .element_types()
        .unwrap();
    let bf16 = facts.iter().find(|f| f.name == "bf16").unwrap();
    assert_eq!(bf16.mlir, "bf16x");
}

#[test]
fn a_missing_attribute_is_an_error() {
    let text = schema_text().replacen(
        "hurray_bits: 16, hurray_name: \"bf16\", ",
        "hurray_name: \"bf16\", ",
        1,
    );
    let (_dir, path) = temp_schema(&text);
    let err = Generator::new(&workspace(), flatc())
        .with_schema(path)
        .generate()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("BFloat16 lacks attribute hurray_bits"),
        "{err:#}"
    );
}

#[test]
fn a_flatc_of_another_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("flatc");
    std::fs::write(&fake, "#!/bin/sh\necho 'flatc version 2.0.8'\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let err = Flatc::at(fake).unwrap_err().to_string();
    assert!(err.contains("\"2.0.8\""), "{err}");
    assert!(err.contains("must come from flatc 25.12.19"), "{err}");
    assert!(err.contains("refusing to run it"), "{err}");
}

fn conform(text: &str) -> anyhow::Result<()> {
    let (_dir, path) = temp_schema(text);
    let released = evolution::released_schemas(&workspace().join("schema")).unwrap();
    evolution::check_conforms(&flatc(), &path, &released)
}

#[test]
fn the_current_schema_conforms_to_every_release() {
    conform(&schema_text()).unwrap();
}

#[test]
fn appending_a_field_conforms() {
    let text = schema_text().replacen(
        // Tensor's last field, whatever tables follow the table.
        "  digests: [ubyte];\n}\n",
        "  digests: [ubyte];\n  /// A new optional field.\n  producer_id: ulong;\n}\n",
        1,
    );
    assert_ne!(text, schema_text());
    conform(&text).unwrap();
}

#[test]
fn removing_a_field_is_caught() {
    let text = schema_text().replacen("  descriptor_only: bool = false;\n", "", 1);
    assert_ne!(text, schema_text());
    let err = conform(&text).unwrap_err().to_string();
    assert!(err.contains("not a compatible evolution"), "{err}");
}

#[test]
fn inserting_a_field_in_the_middle_is_caught() {
    let text = schema_text().replacen(
        "  element_type: ElementType;\n",
        "  element_type: ElementType;\n  inserted: uint;\n",
        1,
    );
    assert_ne!(text, schema_text());
    let err = conform(&text).unwrap_err().to_string();
    assert!(err.contains("Tensor"), "{err}");
}

/// Every float type declares its bit layout, and the layout's widths add up.
#[test]
fn float_layouts_are_required_and_checked() {
    let errors = |from: &str, to: &str| {
        let text = schema_text().replacen(from, to, 1);
        assert_ne!(text, schema_text(), "{from}");
        let (_dir, path) = temp_schema(&text);
        Generator::new(&workspace(), flatc())
            .with_schema(path)
            .generate()
            .unwrap_err()
            .to_string()
    };
    let layout = "hurray_float: \"exponent=2 mantissa=3 bias=1 specials=finite\", ";
    let err = errors(layout, "");
    assert!(
        err.contains("Float6E2M3FN lacks attribute hurray_float"),
        "{err}"
    );
    let err = errors(
        layout,
        "hurray_float: \"exponent=3 mantissa=3 bias=1 specials=finite\", ",
    );
    assert!(
        err.contains("describes 7 bits, hurray_bits says 6"),
        "{err}"
    );
    let err = errors(
        layout,
        "hurray_float: \"exponent=2 mantissa=3 bias=1 specials=odd\", ",
    );
    assert!(
        err.contains("unknown hurray_float specials \"odd\""),
        "{err}"
    );
}

#[test]
fn renumbering_an_element_type_is_caught() {
    let text = schema_text().replacen("Float4E2M1FN = 20", "Float4E2M1FN = 30", 1);
    assert_ne!(text, schema_text());
    let err = conform(&text).unwrap_err().to_string();
    assert!(err.contains("Float4E2M1FN"), "{err}");
}

/// Source files (outside generated code and tests) that spell at least half
/// of the element-type short names as string literals: a hand-written table.
/// (Fewer is a rule about a few types, such as "scales are f16, bf16, f32 or
/// f64", or Rust's own primitive type names.)
#[test]
fn no_hand_written_element_type_table() {
    let facts = Generator::new(&workspace(), flatc())
        .element_types()
        .unwrap();
    let mut offenders = Vec::new();
    let mut stack = vec![workspace()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(workspace())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                let skip = [
                    "target",
                    ".git",
                    ".tools",
                    "gen",
                    "tests",
                    "benches",
                    "fuzz",
                    "node_modules",
                    "__pycache__",
                ];
                if !skip.iter().any(|s| path.file_name().unwrap() == *s) {
                    stack.push(path);
                }
                continue;
            }
            let is_source = ["rs", "py", "c", "h"]
                .iter()
                .any(|e| path.extension().is_some_and(|x| x == *e));
            if !is_source
                || rel.ends_with("hurray_generated.py")
                || rel.ends_with("element_types.py")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let spelled: Vec<_> = facts
                .iter()
                .filter(|f| {
                    f.name.len() > 2
                        && (text.contains(&format!("\"{}\"", f.name))
                            || text.contains(&format!("'{}'", f.name)))
                })
                .map(|f| f.name.clone())
                .collect();
            if spelled.len() * 2 >= facts.len() {
                offenders.push(format!("{rel}: {spelled:?}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "hand-written element-type tables: {offenders:#?}"
    );
}

#[test]
fn released_schemas_are_frozen_and_an_edit_to_one_is_caught() {
    let released = evolution::released_schemas(&workspace().join("schema")).unwrap();
    evolution::check_frozen(&released).unwrap();
    // A copy of the releases with one comment changed in the newest.
    let dir = tempfile::tempdir().unwrap();
    let copies: Vec<PathBuf> = released
        .iter()
        .map(|p| {
            let to = dir.path().join(p.file_name().unwrap());
            std::fs::copy(p, &to).unwrap();
            to
        })
        .collect();
    std::fs::copy(
        workspace()
            .join("schema/released")
            .join(evolution::FROZEN_SUMS),
        dir.path().join(evolution::FROZEN_SUMS),
    )
    .unwrap();
    let newest = copies.last().unwrap();
    let text = std::fs::read_to_string(newest).unwrap();
    std::fs::write(newest, text.replacen("///", "//// ", 1)).unwrap();
    let err = evolution::check_frozen(&copies).unwrap_err().to_string();
    let name = newest.file_name().unwrap().to_string_lossy();
    assert!(
        err.contains(&*name) && err.contains("edited after its release"),
        "{err}"
    );
}
