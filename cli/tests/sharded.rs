//! Sharded checkpoints through the command: a tiny GPT-2 saved as four
//! shards by transformers' own `save_pretrained`
//! (`fixtures/sharded/make_fixtures.py`) converts to a Hurray index and back
//! byte for byte; `cat` slices across members; `validate --checksums`
//! catches a changed member; a conversion killed mid-way leaves no index.

mod common;

use common::{convert, hurray};
use hurray::{ElementType, File, ShardedFile, ShardedWriter, TensorDescriptor, shape};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sharded/gpt2-4-shards")
}

fn run(args: &[&str]) -> (bool, String) {
    let args: Vec<&Path> = args.iter().map(Path::new).collect();
    let out = hurray(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn files_of(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn transformers_shards_convert_to_an_index_and_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("hurray/model.hurray");
    std::fs::create_dir(index.parent().unwrap()).unwrap();
    // The directory stands for its one model.safetensors.index.json.
    convert(&fixture(), &index);
    assert_eq!(
        files_of(index.parent().unwrap()),
        [
            "model-00001-of-00004.hurray",
            "model-00002-of-00004.hurray",
            "model-00003-of-00004.hurray",
            "model-00004-of-00004.hurray",
            "model.hurray"
        ]
    );
    // The index maps each tensor to the member of its shard, as weight_map
    // did, and holds the same bytes as the shard.
    let weight_map: serde_json::Value = serde_json::from_slice(
        &std::fs::read(fixture().join("model.safetensors.index.json")).unwrap(),
    )
    .unwrap();
    let checkpoint = ShardedFile::open(&index).unwrap();
    let weight_map = weight_map["weight_map"].as_object().unwrap();
    assert_eq!(checkpoint.tensors().len(), weight_map.len());
    for (name, shard) in weight_map {
        let t = checkpoint.tensor(name).unwrap();
        let member = &checkpoint.members()[t.pieces[0].member].path;
        assert_eq!(
            member.strip_suffix(".hurray"),
            shard.as_str().unwrap().strip_suffix(".safetensors")
        );
        let bytes = std::fs::read(fixture().join(shard.as_str().unwrap())).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(
            checkpoint.get(name).unwrap().data().unwrap(),
            st.tensor(name).unwrap().data()
        );
    }
    assert_eq!(
        checkpoint
            .metadata()
            .get("safetensors.index.metadata.total_size")
            .map(String::as_str),
        Some("31488")
    );
    let (ok, text) = run(&["validate", "--checksums", index.to_str().unwrap()]);
    assert!(ok, "{text}");

    // And back: the same shards and the same index, every byte.
    let back = dir.path().join("back");
    std::fs::create_dir(&back).unwrap();
    convert(&index, &back.join("model.safetensors.index.json"));
    assert_eq!(files_of(&back), files_of(&fixture()));
    for name in files_of(&fixture()) {
        assert!(
            std::fs::read(back.join(&name)).unwrap()
                == std::fs::read(fixture().join(&name)).unwrap(),
            "{name} differs after the round trip"
        );
    }
}

/// A [10, 7] i32 tensor chunked by rows across three members (0..3, 3..7,
/// 7..10), as three tensor-parallel ranks would save it.
fn chunked(dir: &Path) -> PathBuf {
    let mut w = ShardedWriter::create(dir.join("tp.hurray")).unwrap();
    for (rank, (lo, hi)) in [(0u64, 3u64), (3, 7), (7, 10)].into_iter().enumerate() {
        w.start_member(&format!("rank{rank}.hurray")).unwrap();
        let rows: Vec<i32> = (lo * 7..hi * 7).map(|i| i as i32).collect();
        let desc = TensorDescriptor::new("w", ElementType::Int32, shape(&[hi - lo, 7]));
        w.add_chunk(&[10, 7], &[lo, 0], &desc, &[hurray::as_bytes(&rows)])
            .unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn cat_slices_a_chunked_tensor_across_members() {
    let dir = tempfile::tempdir().unwrap();
    let index = chunked(dir.path());
    // Rows 2 and 5 and 8: one from each member.
    let (ok, text) = run(&["cat", index.to_str().unwrap(), "w[2:9:3, -2:]"]);
    assert!(ok, "{text}");
    assert_eq!(
        text,
        "w[2:9:3, -2:]: i32 [3, 2]\n[\n [19, 20]\n [40, 41]\n [61, 62]\n]\n"
    );
    let (ok, text) = run(&["inspect", index.to_str().unwrap()]);
    assert!(ok && text.contains("w  i32  [10,7]  3 pieces"), "{text}");
    // A safetensors index can't hold a tensor in pieces: refused by name.
    let (ok, text) = run(&[
        "convert",
        index.to_str().unwrap(),
        dir.path()
            .join("x.safetensors.index.json")
            .to_str()
            .unwrap(),
    ]);
    assert!(
        !ok && text.contains("tensor \"w\" is stored in 3 pieces"),
        "{text}"
    );
}

#[test]
fn cat_prints_slices_of_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.hurray");
    let mut w = hurray::Writer::create(&path).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("q", ElementType::Int4, shape(&[2, 3])),
        &[&hurray::pack::pack_codes([1, 2, 3, 0xf, 0x8, 7], 4)],
    )
    .unwrap();
    let h: Vec<u16> = [1.5f32, -0.25, 65504.0]
        .iter()
        .map(|&v| half_bits(v))
        .collect();
    w.add_tensor(
        &TensorDescriptor::new("h", ElementType::Float16, shape(&[3])),
        &[hurray::as_bytes(&h)],
    )
    .unwrap();
    w.finish().unwrap();
    let p = path.to_str().unwrap();
    assert_eq!(
        run(&["cat", p, "q[1]"]),
        (true, "q[1]: i4 [1, 3]\n[\n [-1, -8, 7]\n]\n".into())
    );
    assert_eq!(
        run(&["cat", p, "h[::2]"]),
        (true, "h[::2]: f16 [2]\n[1.5, 65504]\n".into())
    );
    let (ok, text) = run(&["cat", p, "q[0:1:0]"]);
    assert!(
        !ok && text.contains("the step must be a positive integer"),
        "{text}"
    );
    let (ok, text) = run(&["cat", p, "nope"]);
    assert!(!ok && text.contains("no tensor named \"nope\""), "{text}");
}

/// f16 bits of the few exact values the test uses.
fn half_bits(v: f32) -> u16 {
    match v {
        1.5 => 0x3e00,
        -0.25 => 0xb400,
        65504.0 => 0x7bff,
        _ => unreachable!(),
    }
}

#[test]
fn validate_checksums_names_a_changed_member() {
    let dir = tempfile::tempdir().unwrap();
    let index = chunked(dir.path());
    let idx = index.to_str().unwrap();
    assert!(run(&["validate", idx]).0);
    let member = dir.path().join("rank1.hurray");
    let mut bytes = std::fs::read(&member).unwrap();
    bytes[64] ^= 1; // the chunk's first data byte
    std::fs::write(&member, &bytes).unwrap();
    // Without --checksums only headers are read: still ok.
    assert!(run(&["validate", idx]).0);
    let (ok, text) = run(&["validate", "--checksums", idx]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("member rank1.hurray") && text.contains("tensor \"w\""),
        "{text}"
    );
}

/// Four 32 MiB shards in transformers' layout, written with the safetensors
/// crate: big enough that converting them takes a while.
fn big_safetensors_checkpoint(dir: &Path) -> PathBuf {
    let mut weight_map = serde_json::Map::new();
    let data = vec![0x3cu8; 32 << 20];
    for i in 1..=4 {
        let shard = format!("model-{i:05}-of-00004.safetensors");
        let name = format!("layer{i}.weight");
        let view =
            safetensors::tensor::TensorView::new(safetensors::Dtype::F16, vec![16 << 20], &data)
                .unwrap();
        safetensors::serialize_to_file([(name.as_str(), view)], None, &dir.join(&shard)).unwrap();
        weight_map.insert(name, shard.into());
    }
    let index = dir.join("model.safetensors.index.json");
    let doc =
        serde_json::json!({ "metadata": { "total_size": 4u64 << 25 }, "weight_map": weight_map });
    std::fs::write(&index, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    index
}

/// Runs `hurray convert input index` and kills it (SIGKILL) as soon as
/// `member` exists.
fn convert_until(input: &Path, index: &Path, member: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args([Path::new("convert"), input, index])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    // In place: a whole member, renamed there.
    while !member.metadata().is_ok_and(|m| m.len() > 0) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the conversion ended before it was killed"
        );
        assert!(start.elapsed().as_secs() < 60, "no member appeared");
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A big transformers checkpoint (in `dir/st`) and where its conversion's
/// index goes (in `dir/out`).
fn big_conversion(dir: &Path) -> (PathBuf, PathBuf) {
    let source = dir.join("st");
    std::fs::create_dir(&source).unwrap();
    let input = big_safetensors_checkpoint(&source);
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    (input, out_dir.join("model.hurray"))
}

#[test]
fn killing_a_sharded_conversion_leaves_no_index() {
    let dir = tempfile::tempdir().unwrap();
    let (input, index) = big_conversion(dir.path());
    let out_dir = index.parent().unwrap();
    // Killed as soon as the first member is in place.
    let first = out_dir.join("model-00001-of-00004.hurray");
    convert_until(&input, &index, &first);
    assert!(!index.exists(), "a killed conversion left an index");
    // What is there is whole: the finished member reads, nothing else is
    // under a member's name (the member in progress is a temporary file;
    // the names it claimed are markers beside them).
    let member = File::open(&first).unwrap();
    assert_eq!(
        member.tensor("layer1.weight").unwrap().byte_length(),
        32 << 20
    );
    let members: Vec<String> = files_of(out_dir)
        .into_iter()
        .filter(|n| n.ends_with(".hurray"))
        .collect();
    for m in &members {
        File::open(out_dir.join(m)).unwrap();
    }
    assert!(members.len() < 4, "{members:?}");
    // Run to the end, the same conversion gives an index that validates.
    convert(&input, &index);
    let (ok, text) = run(&["validate", "--checksums", index.to_str().unwrap()]);
    assert!(ok, "{text}");
}

#[test]
fn a_conversion_over_an_earlier_checkpoint_never_damages_it() {
    let dir = tempfile::tempdir().unwrap();
    let (input, index) = big_conversion(dir.path());
    let out_dir = index.parent().unwrap();
    convert(&input, &index);
    let earlier = files_of(out_dir);
    // Again, killed once its first member is in place: that member went
    // beside the earlier checkpoint's, which still validates.
    convert_until(
        &input,
        &index,
        &out_dir.join("model-00001-of-00004.1.hurray"),
    );
    let (ok, text) = run(&["validate", "--checksums", index.to_str().unwrap()]);
    assert!(
        ok,
        "the earlier checkpoint after a killed conversion: {text}"
    );
    let checkpoint = ShardedFile::open(&index).unwrap();
    let listed: Vec<&str> = checkpoint
        .members()
        .iter()
        .map(|m| m.path.as_str())
        .collect();
    assert_eq!(
        listed,
        [
            "model-00001-of-00004.hurray",
            "model-00002-of-00004.hurray",
            "model-00003-of-00004.hurray",
            "model-00004-of-00004.hurray"
        ]
    );
    // What the killed conversion claimed stays: no save can tell a dead
    // save's names from a running one's, so none takes them over.
    let killed: BTreeSet<String> = files_of(out_dir)
        .into_iter()
        .filter(|n| n.ends_with(".hurray") && !earlier.contains(n))
        .collect();
    assert!(killed.contains("model-00001-of-00004.1.hurray"));
    // Run to the end, the conversion replaces it and removes its members.
    convert(&input, &index);
    let (ok, text) = run(&["validate", "--checksums", index.to_str().unwrap()]);
    assert!(ok, "{text}");
    let now = files_of(out_dir);
    let checkpoint = ShardedFile::open(&index).unwrap();
    let mut expected: BTreeSet<String> = checkpoint
        .members()
        .iter()
        .map(|m| m.path.clone())
        .collect();
    assert!(expected.is_disjoint(&killed));
    expected.insert("model.hurray".into());
    expected.extend(killed);
    let members: BTreeSet<String> = now
        .iter()
        .filter(|n| n.ends_with(".hurray"))
        .cloned()
        .collect();
    assert_eq!(members, expected);
    assert!(
        earlier
            .iter()
            .all(|n| n == "model.hurray" || !now.contains(n))
    );
}
