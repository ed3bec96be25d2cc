//! The generated verifier against the reference (the generic FlatBuffers
//! verifier plus the semantic checks), input by input: both must reach the
//! same verdict (valid; the same structural failure kind; or the same rule
//! failure, message for message). `hurray::verifiers` holds both.
//!
//! Inputs: every compliance vector, golden file, fuzz seed and fuzz crash
//! input in the tree; every single-byte mutation of every valid vector's
//! header; headers crafted to pass the table-count and apparent-size limits;
//! and, as properties, random valid files and random mutations of them.
//! `fuzz/fuzz_targets/verifier.rs` does the same on whatever libFuzzer finds.

mod common;

use common::*;
use hurray::verifiers::{self, Structural, Verdict};
use hurray::{Dim, ElementType, File, TensorDescriptor, format};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Both verdicts on `bytes`, asserting they agree; returns the generated one.
fn agree(bytes: &[u8], what: &str) -> Verdict {
    let generated = verifiers::generated(bytes);
    let reference = verifiers::reference(bytes);
    assert!(
        generated.agrees_with(&reference),
        "{what}: generated {generated:?}, reference {reference:?}"
    );
    // What `Reader::new` returns is the reference's verdict, error and all.
    let opened = hurray::reader::Reader::new(bytes);
    match (&reference, &opened) {
        (Verdict::Valid, Ok(_)) => {}
        (Verdict::Overlap | Verdict::Unexpected(_), _) => {
            unreachable!("the reference gives neither")
        }
        (Verdict::Structure(kind), Err(hurray::Error::InvalidHeader(e))) => {
            assert_eq!(*kind, Structural::of(e), "{what}")
        }
        (Verdict::Rule(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
        _ => panic!("{what}: Reader::new gave {opened:?}, the reference {reference:?}"),
    }
    generated
}

/// Every `.hurray` file under `dir`, recursively.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "hurray") || dir.ends_with("reader") {
            out.push(p);
        }
    }
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut paths = Vec::new();
    for d in [
        "tests/vectors",
        "tests/golden",
        "fuzz/seeds",
        "fuzz/artifacts/reader",
    ] {
        files_under(&root().join(d), &mut paths);
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn every_file_in_the_tree_gets_the_same_verdict() {
    let all = corpus();
    assert!(all.len() > 100, "only {} files", all.len());
    let (mut valid, mut invalid) = (0, 0);
    for (name, bytes) in &all {
        match agree(bytes, name) {
            Verdict::Valid => valid += 1,
            _ => invalid += 1,
        }
    }
    // Both kinds are there: the vectors hold dozens of invalid files.
    assert!(
        valid > 50 && invalid > 30,
        "{valid} valid, {invalid} invalid"
    );
}

/// The header's byte range, from the footer.
fn header_range(bytes: &[u8]) -> std::ops::Range<usize> {
    let f = bytes.len() - 32;
    let at = u64::from_le_bytes(bytes[f..f + 8].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(bytes[f + 8..f + 16].try_into().unwrap()) as usize;
    at..at + len
}

#[test]
fn every_single_byte_mutation_of_every_valid_header_gets_the_same_verdict() {
    let mut kinds = BTreeSet::new();
    let mut rules = 0usize;
    let mut cases = 0usize;
    for (name, bytes) in corpus() {
        if !matches!(verifiers::reference(&bytes), Verdict::Valid) {
            continue;
        }
        let range = header_range(&bytes);
        let mut m = bytes.clone();
        for i in range {
            for v in [
                bytes[i] ^ 0xff,
                bytes[i] ^ 0x01,
                bytes[i] ^ 0x80,
                0x00,
                0x7f,
            ] {
                if v == bytes[i] {
                    continue;
                }
                m[i] = v;
                match agree(&m, &format!("{name}, byte {i} = {v:#04x}")) {
                    Verdict::Structure(k) => {
                        kinds.insert(format!("{k:?}"));
                    }
                    Verdict::Rule(_) | Verdict::Overlap => rules += 1,
                    Verdict::Valid => {}
                    Verdict::Unexpected(why) => panic!("{why}"),
                }
                cases += 1;
            }
            m[i] = bytes[i];
        }
    }
    // The mutations reach most ways a header can fail (a depth failure
    // needs more nesting than the schema has; the two limits need the
    // crafted headers below).
    for k in [
        "MissingRequiredField",
        "InconsistentUnion",
        "Utf8Error",
        "MissingNullTerminator",
        "Unaligned",
        "RangeOutOfBounds",
        "SignedOffsetOutOfBounds",
    ] {
        assert!(kinds.contains(k), "no mutation gave {k}: {kinds:?}");
    }
    assert!(rules > 1000, "{rules} rule failures in {cases} mutations");
}

/// A file around `header` (a finished FlatBuffer), with no data.
fn wrap(header: &[u8]) -> Vec<u8> {
    format::frame(&[], header, 0)
}

/// A header whose tensor list names one tensor `copies` times: the walk
/// visits that tensor (and its quantization table) once per copy, though
/// the bytes hold it once. `name_len` sets the name's length.
fn shared_tensor_header(copies: usize, name_len: usize) -> Vec<u8> {
    let mut b = flatbuffers::FlatBufferBuilder::new();
    let name = b.create_string(&"n".repeat(name_len));
    let shape = b.create_vector(&[4u64]);
    let q = b.start_table();
    b.push_slot::<u8>(4, 1, 0); // scheme: PerTensor
    let q = b.end_table(q);
    let t = b.start_table();
    b.push_slot_always(4, name); // name
    b.push_slot::<u8>(6, 16, 0); // element_type: Float32
    b.push_slot_always(8, shape); // shape
    b.push_slot_always(20, q); // quantization
    let t = b.end_table(t);
    let list = b.create_vector(&vec![t; copies]);
    let h = b.start_table();
    b.push_slot_always(4, list); // tensors
    let h = b.end_table(h);
    b.finish(h, Some("HRRY"));
    b.finished_data().to_vec()
}

#[test]
fn headers_that_reuse_one_table_meet_the_same_limits() {
    // Two tables a copy, four bytes of offset each: past one table per 4
    // bytes, while the apparent size is still under its 64 KiB floor.
    let file = wrap(&shared_tensor_header(1000, 1));
    assert!(matches!(
        agree(&file, "1,000 copies"),
        Verdict::Structure(Structural::TooManyTables)
    ));
    // A long name read once per copy: past twice the header's size.
    let file = wrap(&shared_tensor_header(64, 8000));
    assert!(matches!(
        agree(&file, "64 copies of a long name"),
        Verdict::Structure(Structural::ApparentSizeTooLarge)
    ));
    // A 1 MiB name named 20,000 times: refused at the third reading, as the
    // generic verifier refuses it; a walk that read every copy would
    // validate 20 GB of UTF-8 first.
    let file = wrap(&shared_tensor_header(20_000, 1 << 20));
    assert!(matches!(
        agree(&file, "20,000 copies of a 1 MiB name"),
        Verdict::Structure(Structural::ApparentSizeTooLarge)
    ));
    // Few copies: structurally sound, refused by a rule (names repeat).
    let file = wrap(&shared_tensor_header(3, 4));
    assert!(matches!(agree(&file, "3 copies"), Verdict::Rule(_)));
    // Every length in between, at the edges of both limits.
    for copies in (0..40).chain([511, 512, 513, 1023, 1024, 1025]) {
        for name_len in [0, 1, 7, 300, 3000] {
            let file = wrap(&shared_tensor_header(copies, name_len));
            agree(&file, &format!("{copies} copies, name of {name_len}"));
        }
    }
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,3}",
        "model\\.layers\\.[0-9]{1,4}\\.(weight|bias)",
        "[a-zé\\.]{1,12}",
    ]
}

/// A valid file of 0 to 12 dense tensors, in random order of writing.
fn valid_file() -> impl Strategy<Value = Vec<u8>> {
    let tensor = (
        name(),
        proptest::sample::select(ElementType::ALL.to_vec()),
        proptest::collection::vec(0u64..4, 0..3),
    );
    (proptest::collection::vec(tensor, 0..12), any::<bool>()).prop_map(|(ts, checksums)| {
        let mut seen = BTreeSet::new();
        let mut tensors = Vec::new();
        for (n, et, dims) in ts {
            if !seen.insert(n.clone()) {
                continue;
            }
            let d = TensorDescriptor::new(n, et, dims.iter().map(|&d| Dim::Fixed(d)).collect());
            let b = dense_buffers(&d);
            tensors.push((d, b));
        }
        let mut bytes = write(&tensors);
        if !checksums {
            // Same tensors, written again without checksums.
            let mut out = Vec::new();
            let mut w = hurray::Writer::new(&mut out).unwrap();
            w.set_checksums(None).unwrap();
            for (d, b) in &tensors {
                let b: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
                w.add_tensor(d, &b).unwrap();
            }
            w.finish().unwrap();
            bytes = out;
        }
        bytes
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_valid_files_are_valid_to_both(bytes in valid_file()) {
        prop_assert!(matches!(agree(&bytes, "valid file"), Verdict::Valid));
        // Look-ups through the index of names built while verifying find
        // every tensor, and nothing else.
        let file = File::from_bytes(&bytes).unwrap();
        let reader = hurray::reader::Reader::new(&bytes).unwrap();
        for t in file.tensors() {
            prop_assert_eq!(file.get(t.name()).map(|x| x.name()), Some(t.name()));
            prop_assert_eq!(reader.get(t.name()).map(|x| x.name()), Some(t.name()));
            // The values' range the index keeps is the tensor's own.
            let found = reader.get(t.name()).unwrap();
            prop_assert_eq!(found.data().ok(), t.data().ok());
            prop_assert_eq!(found.descriptor(), t.descriptor());
            let absent = format!("{}#", t.name());
            prop_assert!(file.get(&absent).is_none() && reader.get(&absent).is_none());
        }
    }

    #[test]
    fn random_mutations_get_the_same_verdict(
        bytes in valid_file(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        in_header in any::<bool>(),
    ) {
        let mut m = bytes.clone();
        let range = if in_header { header_range(&bytes) } else { 0..bytes.len() };
        for (at, v) in edits {
            let i = range.start + at.index(range.len());
            m[i] = v;
        }
        agree(&m, "mutated file");
    }

    #[test]
    fn any_bytes_get_the_same_verdict(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        agree(&bytes, "random bytes");
        // Random bytes behind a valid prefix and footer reach the header walk.
        agree(&wrap(&bytes), "random header");
    }
}
