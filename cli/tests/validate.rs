//! `hurray validate` exits 0 on valid files and 1 with one line per problem
//! otherwise — never 101 (a panic) or a signal, whatever the bytes.

use std::process::Command;

fn validate(paths: &[&std::path::Path]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .arg("validate")
        .args(paths)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn valid_and_invalid_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.hurray");
    let st = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .arg("example")
        .arg(&good)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(validate(&[&good]).0, Some(0));

    let bytes = std::fs::read(&good).unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), vec![]),
        ("truncated".into(), bytes[..bytes.len() / 2].to_vec()),
        (
            "text".into(),
            b"hello, this is not a tensor file at all, not even close".to_vec(),
        ),
    ];
    // Every single-byte corruption of the header and footer region.
    let header_start = bytes.len() - 400;
    for i in (header_start..bytes.len()).step_by(7) {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        cases.push((format!("flip{i}"), b));
    }
    let mut paths = Vec::new();
    for (name, b) in &cases {
        let p = dir.path().join(name);
        std::fs::write(&p, b).unwrap();
        paths.push(p);
    }
    let refs: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();
    let (code, stdout) = validate(&refs);
    assert_eq!(code, Some(1), "{stdout}");
    for name in ["empty", "truncated", "text"] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("/{name}:")))
            .unwrap();
        assert!(!line.ends_with(": ok"), "{line}");
    }
    assert!(stdout.contains("shorter than the 96 bytes"), "{stdout}");
    assert!(stdout.contains("not a Hurray file"), "{stdout}");
    let missing = dir.path().join("missing.hurray");
    let (code, stdout) = validate(&[&missing]);
    assert_eq!(code, Some(1));
    assert!(stdout.contains("opening"), "{stdout}");
}

/// Format 1.2 checksums: flip one data byte and `validate --checksums`
/// exits 1 naming the tensor and the buffer; plain `validate` reads no data
/// and still passes; a file written before 1.2 says it has none.
#[test]
fn checksums_catch_a_flipped_data_byte_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.hurray");
    let st = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .arg("example")
        .arg(&good)
        .status()
        .unwrap();
    assert!(st.success());
    let run = validate;
    let flag = std::path::Path::new("--checksums");
    let (code, text) = run(&[flag, &good]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("tensor(s) match their checksums"), "{text}");

    // "dense.weight" holds 0.0, 0.5, ... 5.5 as f32: flip a bit of 5.5.
    let file = hurray::File::open(&good).unwrap();
    let (offset, length) = file
        .tensor("dense.weight")
        .unwrap()
        .buffer_range(hurray::descriptor::BufferRole::Values)
        .unwrap();
    drop(file);
    let mut bytes = std::fs::read(&good).unwrap();
    bytes[(offset + length - 1) as usize] ^= 0x01;
    let bad = dir.path().join("bad.hurray");
    std::fs::write(&bad, &bytes).unwrap();
    let (code, text) = run(&[&bad]);
    assert_eq!(
        code,
        Some(0),
        "without --checksums the data is not read: {text}"
    );
    let (code, text) = run(&[flag, &bad]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("tensor \"dense.weight\": buffer values has crc32c checksum"),
        "{text}"
    );

    let old = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden/v1.1/example.hurray");
    let (code, text) = run(&[flag, &old]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("records no checksums"), "{text}");
}
