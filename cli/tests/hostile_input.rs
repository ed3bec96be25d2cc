//! Small hostile inputs at the command's front doors (convert, inspect): each
//! is refused with exit status 1 and a message naming the tensor or the
//! limit, leaves no file behind, and runs under a 1 GiB address-space limit
//! (docs/spec/resource-limits.md). Every input is made here, by the test.

mod common;

use common::{assert_ok, assert_refused, convert_bounded, hurray_bounded};
use hurray::{ElementType, Layout, TensorDescriptor, Writer, shape};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A `.npy` (version 1.0) header for `descr` and `dims`, padded as NumPy pads it.
fn npy_header(descr: &str, dims: &[u64]) -> Vec<u8> {
    let dims: String = dims.iter().map(|d| format!("{d}, ")).collect();
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h
}

/// Replaces every little-endian occurrence of `from` in `bytes` by `to`,
/// returning how many there were.
fn patch_u64(bytes: &mut [u8], from: u64, to: u64) -> usize {
    let (from, to) = (from.to_le_bytes(), to.to_le_bytes());
    let mut n = 0;
    for i in 0..bytes.len().saturating_sub(7) {
        if bytes[i..i + 8] == from {
            bytes[i..i + 8].copy_from_slice(&to);
            n += 1;
        }
    }
    n
}

/// A deflated `.npz` whose one member, `big.npy`, declares (in its `.npy`
/// header and in the zip's own size fields) a 1 TiB array, and holds 4 KiB.
fn npz_declaring_a_tebibyte(dir: &Path) -> PathBuf {
    let declared: u64 = 1 << 40;
    let header = npy_header("|u1", &[declared]);
    let mut bytes = Vec::new();
    {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .large_file(true);
        zip.start_file("big.npy", options).unwrap();
        zip.write_all(&header).unwrap();
        zip.write_all(&[0u8; 4096]).unwrap();
        zip.finish().unwrap();
    }
    let real = header.len() as u64 + 4096;
    let patched = patch_u64(&mut bytes, real, header.len() as u64 + declared);
    assert!(patched >= 1, "no zip64 size field to patch");
    let path = dir.join("bomb.npz");
    std::fs::write(&path, &bytes).unwrap();
    assert!(bytes.len() < 1024, "{} bytes", bytes.len());
    path
}

#[test]
fn npz_member_declaring_a_tebibyte_is_refused_without_allocating_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = npz_declaring_a_tebibyte(dir.path());
    let output = dir.path().join("out.hurray");
    let out = convert_bounded(&input, &output, &[]);
    assert_refused(
        &out,
        &["\"big\"", "1099511627776 bytes", "--allow-expansion"],
        dir.path(),
        &[&input],
    );
    // Opted in, the member inflates to what it really holds and no more.
    let out = convert_bounded(&input, &output, &["--allow-expansion"]);
    assert_refused(
        &out,
        &["\"big\"", "4096 data bytes, 1099511627776 expected"],
        dir.path(),
        &[&input],
    );
}

/// A Hurray file holding `name`: a broadcast i32 tensor (strides `[0, 1]`)
/// of shape `[rows, 2]` that stores one row.
fn broadcast_file(dir: &Path, rows: u64) -> PathBuf {
    let path = dir.join("broadcast.hurray");
    let mut w = Writer::create(&path).unwrap();
    let row = hurray::as_bytes(&[7i32, -8]);
    w.add_tensor(
        &TensorDescriptor::new("broadcast", ElementType::Int32, shape(&[rows, 2]))
            .with_layout(Layout::Strided(vec![0, 1])),
        &[row],
    )
    .unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn broadcast_tensors_do_not_expand_without_an_opt_in() {
    let dir = tempfile::tempdir().unwrap();
    let input = broadcast_file(dir.path(), 1 << 40);
    assert!(std::fs::metadata(&input).unwrap().len() < 1024);
    for ext in ["safetensors", "npy", "npz"] {
        let output = dir.path().join(format!("out.{ext}"));
        let out = convert_bounded(&input, &output, &[]);
        assert_refused(
            &out,
            &["\"broadcast\"", "8796093022208 bytes", "--allow-expansion"],
            dir.path(),
            &[&input],
        );
    }
    // To Hurray the strides are kept: nothing expands.
    let output = dir.path().join("copy.hurray");
    let out = convert_bounded(&input, &output, &[]);
    assert_ok(&out);
}

#[test]
fn a_mutated_released_vector_does_not_expand_either() {
    // tests/vectors/layout_strided.hurray with the broadcast's leading
    // dimension (3) turned into 2^40 by changing one byte.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut bytes = std::fs::read(root.join("tests/vectors/layout_strided.hurray")).unwrap();
    let dims = [3u64.to_le_bytes(), 2u64.to_le_bytes()].concat();
    let at = bytes
        .windows(16)
        .position(|w| w == dims)
        .expect("the broadcast's shape");
    bytes[at + 5] = 1; // 3 -> 3 + 2^40
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mutated.hurray");
    std::fs::write(&input, &bytes).unwrap();
    let output = dir.path().join("out.safetensors");
    let out = convert_bounded(&input, &output, &[]);
    assert_refused(&out, &["\"broadcast\"", "over the"], dir.path(), &[&input]);
}

#[test]
fn an_opted_in_expansion_is_written_in_full() {
    let dir = tempfile::tempdir().unwrap();
    // 8 stored bytes to 64 MiB + 8: just over the allowance.
    let rows = (hurray::limits::EXPANSION_ALLOWANCE / 8) + 1;
    let input = broadcast_file(dir.path(), rows);
    let output = dir.path().join("out.npy");
    let refused = convert_bounded(&input, &output, &[]);
    assert_refused(
        &refused,
        &["\"broadcast\"", "67108872 bytes"],
        dir.path(),
        &[&input],
    );
    let out = convert_bounded(&input, &output, &["--allow-expansion"]);
    assert_ok(&out);
    let written = std::fs::read(&output).unwrap();
    let data = &written[written.len() - rows as usize * 8..];
    assert!(
        data.chunks_exact(8)
            .all(|c| c == hurray::as_bytes(&[7i32, -8]))
    );
}

#[test]
fn a_safetensors_header_over_its_limit_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("meta.hurray");
    let mut w = Writer::create(&input).unwrap();
    let value = "x".repeat(hurray_cli::limits::SAFETENSORS_MAX_HEADER as usize);
    w.set_metadata("note", value);
    w.add_tensor(
        &TensorDescriptor::new("w", ElementType::Float32, shape(&[1])),
        &[hurray::as_bytes(&[1.0f32])],
    )
    .unwrap();
    w.finish().unwrap();
    let output = dir.path().join("out.safetensors");
    let out = convert_bounded(&input, &output, &[]);
    assert_refused(
        &out,
        &["safetensors header", "100000000-byte limit"],
        dir.path(),
        &[&input],
    );
}

fn named_file(dir: &Path, names: &[&str]) -> PathBuf {
    let path = dir.join("names.hurray");
    let mut w = Writer::create(&path).unwrap();
    for name in names {
        w.add_tensor(
            &TensorDescriptor::new(*name, ElementType::Float32, shape(&[1])),
            &[hurray::as_bytes(&[1.0f32])],
        )
        .unwrap();
    }
    w.finish().unwrap();
    path
}

#[test]
fn inspect_shows_control_characters_in_names_visibly() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "\u{1b}]0;retitled\u{7}",
        "a\n  fake  f32  [1]  dense  4 bytes",
        "rtl\u{202e}gnp.exe",
    ];
    let path = named_file(dir.path(), &names);
    let out = hurray_bounded(&["inspect".as_ref(), path.as_os_str()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(!text.contains('\u{202e}'), "{text:?}");
    assert_eq!(
        text.lines().count(),
        1 + names.len(),
        "one line per tensor:\n{text}"
    );
    assert!(text.contains("\\u{1b}]0;retitled\\u{7}"), "{text}");
    assert!(text.contains("a\\n  fake"), "{text}");
    assert!(text.contains("rtl\\u{202e}gnp.exe"), "{text}");
    // JSON escapes by its own rules, and stays one tensor per name.
    let out = hurray_bounded(&["inspect".as_ref(), "--json".as_ref(), path.as_os_str()]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["tensors"].as_array().unwrap().len(), names.len());
    // Errors quote names with Rust's escapes.
    let output = dir.path().join("out.npy");
    let out = convert_bounded(&path, &output, &[]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

#[test]
fn a_closed_output_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..20_000).map(|i| format!("tensor.{i:05}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let path = named_file(dir.path(), &refs);
    let mut child = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .arg("inspect")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("20000 tensor(s)"), "{first}");
    // The reader is gone (`| head -1`); more than a pipe buffer was left to print.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "128 + SIGPIPE");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn missing_and_wrong_kind_inputs_say_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.hurray");
    let out = hurray_bounded(&["inspect".as_ref(), missing.as_os_str()]);
    let text = assert_refused(&out, &["No such file or directory"], dir.path(), &[]);
    assert_eq!(text.matches("No such file").count(), 1, "{text}");
    assert_eq!(text.matches("nope.hurray").count(), 1, "{text}");
    let npy_dir = dir.path().join("d.npy");
    std::fs::create_dir(&npy_dir).unwrap();
    for out in [
        hurray_bounded(&["inspect".as_ref(), npy_dir.as_os_str()]),
        convert_bounded(&npy_dir, &dir.path().join("x.hurray"), &[]),
    ] {
        let text = assert_refused(&out, &["is a directory"], dir.path(), &[&npy_dir]);
        assert!(!text.contains("No such device"), "{text}");
    }
}
