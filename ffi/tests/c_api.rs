//! Compiles the C test programs of `tests/c/` against `include/hurray.h`
//! and the static library of this crate with the system C compiler (`$CC`,
//! default `cc`), then runs them: `test_hurray` once on files it writes
//! itself, once on every compliance vector of `tests/vectors/` (facts from
//! each NAME.json passed in a spec file), which it must read exactly or
//! reject with the expected error; `test_slices` on slices of files it
//! writes and of a sharded checkpoint this harness writes.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>`, where cargo put `libhurray_ffi.a` for this test run.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/c_api-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_owned()
}

/// The static library cargo built for this test run: `cargo test` leaves the
/// fresh one in `deps/` (only `cargo build` copies it up a level), so take
/// the newer of the two.
fn static_lib() -> PathBuf {
    let dir = profile_dir();
    let candidates = [
        dir.join("deps/libhurray_ffi.a"),
        dir.join("libhurray_ffi.a"),
    ];
    candidates
        .into_iter()
        .filter_map(|p| {
            let modified = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((modified, p))
        })
        .max()
        .map(|(_, p)| p)
        .expect("libhurray_ffi.a was not built (crate-type staticlib)")
}

/// Builds the C test program `tests/c/NAME.c` once per test run.
fn program(name: &'static str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<&'static str, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    built
        .entry(name)
        .or_insert_with(|| {
            let lib = static_lib();
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
            let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
            let status = Command::new(&cc)
                .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"])
                .arg("-I")
                .arg(manifest().join("include"))
                .arg(manifest().join(format!("tests/c/{name}.c")))
                .arg(&lib)
                .args(["-lpthread", "-ldl", "-lm"])
                .arg("-o")
                .arg(&out)
                .status()
                .unwrap_or_else(|e| panic!("running {cc}: {e}"));
            assert!(status.success(), "compiling {name}.c failed");
            out
        })
        .clone()
}

fn run_program(name: &'static str, args: &[&Path]) {
    let out = Command::new(program(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

fn run(args: &[&Path]) {
    run_program("test_hurray", args);
}

#[test]
fn c_program_writes_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    run(&[Path::new("selftest"), dir.path()]);
}

/// The sharded checkpoint `test_slices.c` reads, in `dir/ckpt/` (the C
/// program documents the formulas and checks every value against them).
fn write_checkpoint(dir: &Path) {
    use hurray::pack::pack_codes;
    use hurray::{ElementType, ShardedWriter, TensorDescriptor, shape};
    let ckpt = dir.join("ckpt");
    std::fs::create_dir(&ckpt).unwrap();
    let w: Vec<u8> = (0..70)
        .flat_map(|i| (i as f32 - 20.0).to_le_bytes())
        .collect();
    let q: Vec<u8> = (0..24u32).map(|i| (5 * i % 16) as u8).collect();
    let q_cols = |lo: usize, hi: usize| -> Vec<u8> {
        let codes: Vec<u8> = (0..4)
            .flat_map(|r| q[r * 6 + lo..r * 6 + hi].to_vec())
            .collect();
        pack_codes(codes, 4)
    };
    let mut writer = ShardedWriter::create(ckpt.join("model.hurray")).unwrap();
    writer.set_metadata("format", "pt");
    for (rank, (lo, hi)) in [(0u64, 3u64), (3, 7), (7, 10)].into_iter().enumerate() {
        writer.start_member(&format!("rank-{rank}.hurray")).unwrap();
        let rows = &w[(lo * 28) as usize..(hi * 28) as usize];
        let desc = TensorDescriptor::new("w", ElementType::Float32, shape(&[hi - lo, 7]));
        writer
            .add_chunk(&[10, 7], &[lo, 0], &desc, &[rows])
            .unwrap();
        if rank < 2 {
            let col = 3 * rank as u64;
            let desc = TensorDescriptor::new("q", ElementType::Int4, shape(&[4, 3]));
            let packed = q_cols(col as usize, col as usize + 3);
            writer
                .add_chunk(&[4, 6], &[0, col], &desc, &[&packed])
                .unwrap();
        }
    }
    let b: Vec<u8> = [0.5f32, 1.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    writer
        .add_tensor(
            &TensorDescriptor::new("b", ElementType::Float32, shape(&[2])),
            &[&b],
        )
        .unwrap();
    writer.finish().unwrap();
}

#[test]
fn c_program_reads_slices_and_a_sharded_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    write_checkpoint(dir.path());
    run_program("test_slices", &[dir.path()]);
}

/// A program that includes an official-style `dlpack.h` (>= 1.0) before
/// `hurray.h` compiles: the header then uses the dlpack.h definitions.
#[test]
fn header_works_after_an_official_dlpack_h() {
    let dir = tempfile::tempdir().unwrap();
    // A stand-in with the DLPack 1.x layout, as dlpack.h declares it.
    std::fs::write(
        dir.path().join("dlpack.h"),
        r#"#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#include <stdint.h>
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef enum { kDLCPU = 1, kDLCUDA = 2 } DLDeviceType;
typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t *shape; int64_t *strides; uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor; void *manager_ctx; void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
typedef struct DLManagedTensorVersioned {
  DLPackVersion version; void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags; DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif
"#,
    )
    .unwrap();
    let main = dir.path().join("main.c");
    std::fs::write(
        &main,
        r#"#include "dlpack.h"
#include "hurray.h"
_Static_assert(HURRAY_DLPACK_FLAG_READ_ONLY == DLPACK_FLAG_BITMASK_READ_ONLY, "flag");
_Static_assert(HURRAY_DLPACK_CPU == kDLCPU, "device");
int export_one(const HurrayTensor *t) {
  DLManagedTensorVersioned *m = 0;
  if (hurray_tensor_to_dlpack(t, &m) != HURRAY_OK) return -1;
  int ndim = m->dl_tensor.ndim;
  m->deleter(m);
  return ndim;
}
"#,
    )
    .unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
        .arg("-I")
        .arg(dir.path())
        .arg("-I")
        .arg(manifest().join("include"))
        .arg(&main)
        .status()
        .unwrap();
    assert!(status.success());
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".to_owned();
    }
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

/// One spec line for a valid tensor, then one per buffer.
fn tensor_spec(t: &Value, spec: &mut String) {
    let dtype = str_field(t, "dtype");
    let (dl_code, dl_bits) = hurray::ElementType::from_name(dtype)
        .unwrap_or_else(|| panic!("unknown dtype {dtype}"))
        .dlpack();
    let shape = t["shape"].as_array().expect("shape");
    let dims: Vec<String> = shape
        .iter()
        .map(|d| match d {
            Value::Number(n) => n.to_string(),
            _ => "?".to_owned(),
        })
        .collect();
    let elements = match &t["element_count"] {
        Value::Number(n) => n.to_string(),
        _ => "?".to_owned(),
    };
    let buffers = t["buffers"].as_array().expect("buffers");
    let meta = t["metadata"].as_object().map_or(0, |m| m.len());
    let sparse = match t.get("nnz").and_then(Value::as_u64) {
        Some(nnz) => format!(
            "{nnz}:{}:{}",
            str_field(t, "index_type"),
            u8::from(t.get("canonical") == Some(&Value::Bool(true)))
        ),
        None => "-".to_owned(),
    };
    let quant = match &t["quantization"] {
        Value::Null => "-".to_owned(),
        q => format!(
            "{}:{}:{}:{}:{}:{}:{}:{}:{:016x}:{}",
            str_field(q, "scheme"),
            q["axis"].as_u64().expect("axis"),
            q["block_size"].as_u64().expect("block_size"),
            str_field(q, "expressed_type"),
            str_field(q, "scale_type"),
            q["zero_point_type"].as_str().unwrap_or("-"),
            q["storage_min"].as_i64().expect("storage_min"),
            q["storage_max"].as_i64().expect("storage_max"),
            q["tensor_scale"].as_f64().expect("tensor_scale").to_bits(),
            q["offset_type"].as_str().unwrap_or("-"),
        ),
    };
    let _ = writeln!(
        spec,
        "tensor {} {dtype} {} {} {} {} {elements} {} {} {meta} {dl_code} {dl_bits} {sparse} {quant}",
        hex(str_field(t, "name").as_bytes()),
        dims.len(),
        if dims.is_empty() {
            String::new()
        } else {
            dims.join(" ")
        },
        str_field(t, "layout"),
        u8::from(t["descriptor_only"] == Value::Bool(true)),
        u8::from(!t["quantization"].is_null()),
        buffers.len(),
    );
    for b in buffers {
        let _ = writeln!(
            spec,
            "buffer {} {} {}",
            str_field(b, "role"),
            b["length"].as_u64().expect("length"),
            if str_field(b, "hex").is_empty() {
                "-"
            } else {
                str_field(b, "hex")
            },
        );
    }
    // The dequantized values of a quantized tensor with data: each an f32's
    // bits in hex, or `nan`.
    if let Some(values) = t["quantization"]["dequantized"].as_array()
        && t["descriptor_only"] != Value::Bool(true)
    {
        let _ = write!(spec, "dequantized {}", values.len());
        for v in values {
            let token = match v {
                Value::Number(n) => {
                    format!("{:08x}", (n.as_f64().expect("a number") as f32).to_bits())
                }
                Value::String(s) if s == "nan" => "nan".to_owned(),
                Value::String(s) if s == "inf" => format!("{:08x}", f32::INFINITY.to_bits()),
                Value::String(s) if s == "-inf" => format!("{:08x}", f32::NEG_INFINITY.to_bits()),
                other => panic!("dequantized value {other}"),
            };
            let _ = write!(spec, " {token}");
        }
        let _ = writeln!(spec);
    }
}

#[test]
fn c_program_reads_every_compliance_vector() {
    let dir = manifest().join("../tests/vectors");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hurray"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no vectors in {}", dir.display());
    let mut spec = String::new();
    let (mut valid, mut invalid) = (0, 0);
    for path in &names {
        let json_path = path.with_extension("json");
        let json: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", json_path.display()));
        let path_str = path.to_str().expect("UTF-8 path");
        assert!(
            !path_str.contains(' '),
            "vector paths must not contain spaces"
        );
        if json["valid"] == Value::Bool(true) {
            valid += 1;
            let tensors = json["tensors"].as_array().expect("tensors");
            let meta = json["metadata"].as_object().map_or(0, |m| m.len());
            let _ = writeln!(spec, "valid {path_str} {} {meta}", tensors.len());
            for t in tensors {
                tensor_spec(t, &mut spec);
            }
        } else {
            invalid += 1;
            let e = &json["error"];
            let tensor = e["tensor"]
                .as_str()
                .map_or("-".to_owned(), |t| hex(t.as_bytes()));
            let _ = writeln!(
                spec,
                "invalid {path_str} {} {} {tensor}",
                str_field(e, "stage"),
                str_field(e, "variant"),
            );
        }
    }
    assert!(valid > 0 && invalid > 0);
    let tmp = tempfile::tempdir().unwrap();
    let spec_path = tmp.path().join("vectors.spec");
    std::fs::write(&spec_path, spec).unwrap();
    run(&[Path::new("vectors"), &spec_path]);
}

/// The files `test_signed.c` opens (see its header).
#[test]
fn c_program_opens_signed_files() {
    use hurray::{ElementType, File, TensorDescriptor, Writer, integrity::DigestAlgorithm, shape};
    use hurray_sign::{PrivateKey, Signature, signature_path};
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.hurray");
    let mut w = Writer::create(&good).unwrap();
    w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
    w.set_metadata("note", "original");
    let values: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let desc = TensorDescriptor::new("w", ElementType::Float32, shape(&[256]));
    w.add_tensor(&desc, &[hurray::as_bytes(&values)]).unwrap();
    let desc = TensorDescriptor::new("b", ElementType::Float32, shape(&[16]));
    w.add_tensor(&desc, &[hurray::as_bytes(&values[..16])])
        .unwrap();
    w.finish().unwrap();
    let key = PrivateKey::from_seed([3; 32]);
    std::fs::write(dir.path().join("key.pub"), key.public_key().to_pem()).unwrap();
    let sign = |path: &Path| {
        let s = Signature::sign(&File::open(path).unwrap(), &key).unwrap();
        s.write(signature_path(path)).unwrap();
    };
    sign(&good);
    let bytes = std::fs::read(&good).unwrap();
    let at = File::open(&good)
        .unwrap()
        .tensor("w")
        .unwrap()
        .buffer_range(hurray::descriptor::BufferRole::Values)
        .unwrap()
        .0 as usize;
    let mut data = bytes.clone();
    data[at + 100] ^= 1;
    std::fs::write(dir.path().join("data.hurray"), data).unwrap();
    std::fs::copy(signature_path(&good), dir.path().join("data.hurray.sig")).unwrap();
    let mut changed = bytes.clone();
    let pos = bytes.windows(8).position(|w| w == b"original").unwrap();
    changed[pos] = b'0';
    std::fs::write(dir.path().join("header.hurray"), changed).unwrap();
    std::fs::copy(signature_path(&good), dir.path().join("header.hurray.sig")).unwrap();
    let other =
        Signature::sign(&File::open(&good).unwrap(), &PrivateKey::from_seed([4; 32])).unwrap();
    other.write(dir.path().join("other.sig")).unwrap();
    // Three copies of a signed checkpoint: as written, a byte of t3 changed,
    // its second member taken from a save of other values.
    let checkpoint = |sub: &str, base: u32| {
        let index = dir.path().join(sub).join("model.hurray");
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        let mut w = hurray::ShardedWriter::create(&index).unwrap();
        w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
        w.set_max_shard_size(9000);
        for i in 0..4u32 {
            let v: Vec<u32> = (0..1000).map(|j| base + i * 1000 + j).collect();
            let d = TensorDescriptor::new(format!("t{i}"), ElementType::UInt32, shape(&[1000]));
            w.add_tensor(&d, &[hurray::as_bytes(&v)]).unwrap();
        }
        w.finish().unwrap();
        index
    };
    for sub in ["ckpt", "bad", "swap"] {
        sign(&checkpoint(sub, 0));
    }
    let other_save = checkpoint("other", 7);
    let member = |sub: &str| dir.path().join(sub).join("model-00002.hurray");
    std::fs::copy(
        other_save.with_file_name("model-00002.hurray"),
        member("swap"),
    )
    .unwrap();
    let at = File::open(member("bad"))
        .unwrap()
        .tensor("t3")
        .unwrap()
        .buffer_range(hurray::descriptor::BufferRole::Values)
        .unwrap()
        .0 as usize;
    let mut bytes = std::fs::read(member("bad")).unwrap();
    bytes[at + 7] ^= 1;
    std::fs::write(member("bad"), bytes).unwrap();
    run_program("test_signed", &[dir.path()]);
}
