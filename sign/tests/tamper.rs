//! Every way of changing a signed file or checkpoint is refused, naming
//! what failed; an untouched one verifies.

use hurray::{
    ElementType, File, ShardedFile, ShardedWriter, Writer, integrity::DigestAlgorithm, shape,
};
use hurray_sign::{Error, PrivateKey, PublicKey, Signature, verify_checkpoint, verify_file};
use std::path::{Path, PathBuf};

fn key(seed: u8) -> PrivateKey {
    PrivateKey::from_seed([seed; 32])
}

fn desc(name: &str, n: u64) -> hurray::TensorDescriptor {
    hurray::TensorDescriptor::new(name, ElementType::Float32, shape(&[n]))
}

fn values(seed: u32, n: usize) -> Vec<f32> {
    (0..n).map(|i| (seed * 1000 + i as u32) as f32).collect()
}

/// A file of three tensors with digests, and metadata to change.
fn write_file(path: &Path, seed: u32) {
    let mut w = Writer::create(path).unwrap();
    w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
    w.set_metadata("note", "original");
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        let v = values(seed + i as u32, 1000);
        w.add_tensor(&desc(name, 1000), &[hurray::as_bytes(&v)])
            .unwrap();
    }
    w.finish().unwrap();
}

/// A checkpoint of 6 tensors in 3 members, with digests.
fn write_checkpoint(index: &Path, seed: u32) {
    let mut w = ShardedWriter::create(index).unwrap();
    w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
    w.set_max_shard_size(9000);
    w.set_metadata("note", "original");
    for i in 0..6u32 {
        let v = values(seed + i, 1000);
        w.add_tensor(&desc(&format!("t{i}"), 1000), &[hurray::as_bytes(&v)])
            .unwrap();
    }
    w.finish().unwrap();
}

fn sign(path: &Path, k: &PrivateKey) -> Signature {
    let s = Signature::sign(&File::open(path).unwrap(), k).unwrap();
    s.write(hurray_sign::signature_path(path)).unwrap();
    s
}

fn check_file(path: &Path, public: &PublicKey) -> Result<(), Error> {
    let file = File::open(path)?;
    let signature = Signature::read(hurray_sign::signature_path(path))?;
    verify_file(&file, &signature, public).map(drop)
}

fn check_checkpoint(index: &Path, public: &PublicKey) -> Result<(), Error> {
    let file = File::open(index)?;
    let checkpoint = ShardedFile::open(index)?;
    let signature = Signature::read(hurray_sign::signature_path(index))?;
    verify_checkpoint(&file, &checkpoint, &signature, public).map(drop)
}

/// Flips one byte of `path` at `at`.
fn flip(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

/// Replaces the first `from` in `path` with `to` (same length).
fn replace(path: &Path, from: &[u8], to: &[u8]) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
    bytes[at..at + from.len()].copy_from_slice(to);
    std::fs::write(path, bytes).unwrap();
}

fn data_offset(path: &Path, tensor: &str) -> u64 {
    let f = File::open(path).unwrap();
    let t = f.tensor(tensor).unwrap();
    t.buffer_range(hurray::descriptor::BufferRole::Values)
        .unwrap()
        .0
        + 17
}

fn fresh_file(dir: &Path, k: &PrivateKey) -> PathBuf {
    let path = dir.join("m.hurray");
    write_file(&path, 1);
    sign(&path, k);
    path
}

#[test]
fn an_untouched_signed_file_and_checkpoint_verify() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let path = fresh_file(dir.path(), &k);
    let file = File::open(&path).unwrap();
    let signature = Signature::read(hurray_sign::signature_path(&path)).unwrap();
    let v = verify_file(&file, &signature, &k.public_key()).unwrap();
    assert_eq!((v.files, v.tensors), (1, 3));

    let index = dir.path().join("ckpt.hurray");
    write_checkpoint(&index, 1);
    sign(&index, &k);
    let checkpoint = ShardedFile::open(&index).unwrap();
    assert_eq!(checkpoint.members().len(), 3);
    let signature = Signature::read(hurray_sign::signature_path(&index)).unwrap();
    let v = verify_checkpoint(
        &File::open(&index).unwrap(),
        &checkpoint,
        &signature,
        &k.public_key(),
    )
    .unwrap();
    assert_eq!((v.files, v.tensors), (3, 6));
}

#[test]
fn a_changed_data_byte_is_refused_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let path = fresh_file(dir.path(), &k);
    flip(&path, data_offset(&path, "b"));
    // The signature still holds: the header is unchanged ...
    let file = File::open(&path).unwrap();
    let signature = Signature::read(hurray_sign::signature_path(&path)).unwrap();
    signature.verify(&file, &k.public_key()).unwrap();
    // ... but the tensor's digest does not, when it is read.
    file.tensor("a").unwrap().verify_checksum().unwrap();
    let e = file.tensor("b").unwrap().verify_checksum().unwrap_err();
    assert!(
        matches!(e, hurray::Error::DigestMismatch { ref tensor, .. } if tensor == "b"),
        "{e}"
    );
    let e = check_file(&path, &k.public_key()).unwrap_err();
    assert!(
        e.to_string()
            .contains("tensor \"b\": buffer values has blake3 digest"),
        "{e}"
    );
}

#[test]
fn a_changed_header_or_metadata_byte_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let path = fresh_file(dir.path(), &k);
    replace(&path, b"original", b"Original");
    let e = check_file(&path, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "HeaderChanged", "{e}");
    assert!(
        e.to_string()
            .contains("the file was changed after it was signed"),
        "{e}"
    );

    // A recorded digest changed to match changed data: the header changed.
    let path = fresh_file(dir.path(), &k);
    let file = File::open(&path).unwrap();
    let (_, digests) = file.tensor("c").unwrap().digests().unwrap();
    drop(file);
    replace(&path, &digests[0].1.0[..8], &[0u8; 8]);
    let e = check_file(&path, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "HeaderChanged", "{e}");

    // The footer's flags, outside the FlatBuffer, are covered too (bit 0
    // is a flag readers know, so the file still opens).
    let path = fresh_file(dir.path(), &k);
    let len = std::fs::metadata(&path).unwrap().len();
    flip(&path, len - 16);
    let e = check_file(&path, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "HeaderChanged", "{e}");
}

#[test]
fn a_signature_from_another_key_or_changed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (k, other) = (key(1), key(2));
    let path = fresh_file(dir.path(), &k);
    // Checked with a key that did not sign.
    let e = check_file(&path, &other.public_key()).unwrap_err();
    assert_eq!(e.kind(), "WrongKey", "{e}");
    assert!(e.to_string().contains(&k.public_key().to_hex()), "{e}");
    // Signed by another key that claims to be the expected one.
    let forged = Signature {
        public_key: k.public_key(),
        ..Signature::sign(&File::open(&path).unwrap(), &other).unwrap()
    };
    forged.write(hurray_sign::signature_path(&path)).unwrap();
    let e = check_file(&path, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "BadSignature", "{e}");
    // A signature byte changed.
    let mut s = sign(&path, &k);
    s.signature[5] ^= 1;
    s.write(hurray_sign::signature_path(&path)).unwrap();
    assert_eq!(
        check_file(&path, &k.public_key()).unwrap_err().kind(),
        "BadSignature"
    );
    // The signed digest changed (to the digest of a changed file).
    let mut s = sign(&path, &k);
    s.header_digest.0[0] ^= 1;
    s.write(hurray_sign::signature_path(&path)).unwrap();
    assert_eq!(
        check_file(&path, &k.public_key()).unwrap_err().kind(),
        "BadSignature"
    );
    // No signature at all.
    std::fs::remove_file(hurray_sign::signature_path(&path)).unwrap();
    assert_eq!(check_file(&path, &k.public_key()).unwrap_err().kind(), "Io");
}

#[test]
fn a_changed_index_or_member_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let index = dir.path().join("ckpt.hurray");
    let fresh = || {
        write_checkpoint(&index, 1);
        sign(&index, &k);
        ShardedFile::open(&index).unwrap()
    };
    // The index's metadata.
    fresh();
    replace(&index, b"original", b"0riginal");
    assert_eq!(
        check_checkpoint(&index, &k.public_key())
            .unwrap_err()
            .kind(),
        "HeaderChanged"
    );

    // A member's data byte: that tensor's digest, when read.
    let c = fresh();
    let member = dir.path().join(&c.members()[1].path);
    let first = File::open(&member)
        .unwrap()
        .tensors()
        .next()
        .unwrap()
        .name()
        .to_owned();
    flip(&member, data_offset(&member, &first));
    let e = check_checkpoint(&index, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "DigestMismatch", "{e}");
    assert!(e.to_string().contains(&format!("tensor {first:?}")), "{e}");

    // A member's header (its metadata is none, so a recorded digest).
    let c = fresh();
    let member = dir.path().join(&c.members()[2].path);
    let file = File::open(&member).unwrap();
    let d = file.tensors().next().unwrap().digests().unwrap().1[0].1;
    drop(file);
    replace(&member, &d.0[..8], &[0u8; 8]);
    let e = check_checkpoint(&index, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "MemberMismatch", "{e}");
    assert!(e.to_string().contains("header digest"), "{e}");
}

#[test]
fn a_member_swapped_with_one_of_another_checkpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    write_checkpoint(&a.join("ckpt.hurray"), 1);
    // Same names, shapes and sizes; other values.
    write_checkpoint(&b.join("ckpt.hurray"), 7);
    sign(&a.join("ckpt.hurray"), &k);
    let c = ShardedFile::open(a.join("ckpt.hurray")).unwrap();
    let member = &c.members()[0].path;
    assert_eq!(
        std::fs::metadata(a.join(member)).unwrap().len(),
        std::fs::metadata(b.join(member)).unwrap().len()
    );
    std::fs::copy(b.join(member), a.join(member)).unwrap();
    let e = check_checkpoint(&a.join("ckpt.hurray"), &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "MemberMismatch", "{e}");
    assert!(e.to_string().contains(member.as_str()), "{e}");
    // Reading any tensor of it refuses it too: the check is on open.
    let c = ShardedFile::open(a.join("ckpt.hurray")).unwrap();
    let t = c.tensor("t0").unwrap().clone();
    assert!(c.piece(&t, &t.pieces[0]).is_err());
}

#[test]
fn a_file_without_digests_is_not_signed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.hurray");
    let mut w = Writer::create(&path).unwrap();
    let v = values(1, 10);
    w.add_tensor(&desc("a", 10), &[hurray::as_bytes(&v)])
        .unwrap();
    w.finish().unwrap();
    let e = Signature::sign(&File::open(&path).unwrap(), &key(1)).unwrap_err();
    assert_eq!(e.kind(), "NoDigests", "{e}");
    assert!(e.to_string().contains("plain.hurray"), "{e}");
}

#[test]
fn a_single_files_signature_does_not_pass_for_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let path = fresh_file(dir.path(), &k);
    let index = dir.path().join("ckpt.hurray");
    write_checkpoint(&index, 1);
    let s = Signature::sign(&File::open(&path).unwrap(), &k).unwrap();
    s.write(hurray_sign::signature_path(&index)).unwrap();
    let e = check_checkpoint(&index, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "KindMismatch", "{e}");
}

#[test]
fn a_file_with_digests_and_no_checksums_is_checked_all_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let path = dir.path().join("m.hurray");
    let mut w = Writer::create(&path).unwrap();
    w.set_checksums(None).unwrap();
    w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
    for name in ["a", "b"] {
        let v = values(3, 1000);
        w.add_tensor(&desc(name, 1000), &[hurray::as_bytes(&v)])
            .unwrap();
    }
    w.finish().unwrap();
    sign(&path, &k);
    let file = File::open(&path).unwrap();
    let signature = Signature::read(hurray_sign::signature_path(&path)).unwrap();
    let v = verify_file(&file, &signature, &k.public_key()).unwrap();
    assert_eq!(v.tensors, 2);
    drop(file);
    flip(&path, data_offset(&path, "b"));
    let e = check_file(&path, &k.public_key()).unwrap_err();
    assert_eq!(e.kind(), "DigestMismatch", "{e}");
    assert!(File::open(&path).unwrap().verify_checksums().is_err());
}
