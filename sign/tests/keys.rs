//! Keys as OpenSSL writes them, and signature files that are not what they
//! claim.

use hurray_sign::{Error, PrivateKey, PublicKey, Signature};
use std::process::Command;

fn openssl(args: &[&str]) {
    let status = Command::new("openssl").args(args).status().unwrap();
    assert!(status.success(), "openssl {args:?}");
}

#[test]
fn keys_openssl_writes_are_read_and_ours_are_read_by_openssl() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public) = (dir.path().join("k.pem"), dir.path().join("k.pub"));
    let (p, q) = (private.to_str().unwrap(), public.to_str().unwrap());
    openssl(&["genpkey", "-algorithm", "ed25519", "-out", p]);
    openssl(&["pkey", "-in", p, "-pubout", "-out", q]);
    let key = PrivateKey::from_pem_file(&private).unwrap();
    assert_eq!(PublicKey::from_pem_file(&public).unwrap(), key.public_key());
    assert_eq!(
        std::fs::read_to_string(&public).unwrap(),
        key.public_key().to_pem()
    );

    // A key of ours, read back by OpenSSL, gives the same public key.
    let ours = PrivateKey::from_seed([9; 32]);
    let path = dir.path().join("ours.pem");
    std::fs::write(&path, ours.to_pem()).unwrap();
    let out = Command::new("openssl")
        .args(["pkey", "-in", path.to_str().unwrap(), "-pubout"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        ours.public_key().to_pem()
    );

    // The message signed is what OpenSSL verifies with the public key.
    let mut bytes = Vec::new();
    let mut w = hurray::Writer::new(&mut bytes).unwrap();
    w.set_digests(Some(hurray::integrity::DigestAlgorithm::Blake3))
        .unwrap();
    w.finish().unwrap();
    let s = Signature::sign(&hurray::File::from_bytes(&bytes).unwrap(), &key).unwrap();
    let (msg, sig) = (dir.path().join("msg"), dir.path().join("sig"));
    std::fs::write(&msg, s.message()).unwrap();
    std::fs::write(&sig, s.signature).unwrap();
    openssl(&[
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        q,
        "-rawin",
        "-in",
        msg.to_str().unwrap(),
        "-sigfile",
        sig.to_str().unwrap(),
    ]);
}

#[test]
fn keys_of_other_kinds_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ec.pem");
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        path.to_str().unwrap(),
    ]);
    let e = PrivateKey::from_pem_file(&path).unwrap_err();
    assert!(matches!(e, Error::Key { .. }), "{e}");
    assert!(
        e.to_string().contains("ec.pem") && e.to_string().contains("ed25519"),
        "{e}"
    );
    // A public key given where a private one is wanted, and the reverse.
    let key = PrivateKey::from_seed([1; 32]);
    assert!(PrivateKey::from_pem(&key.public_key().to_pem()).is_err());
    assert!(PublicKey::from_pem(&key.to_pem()).is_err());
    // Not text, and too long to be a key.
    std::fs::write(&path, [0xFFu8; 100]).unwrap();
    assert!(
        PrivateKey::from_pem_file(&path)
            .unwrap_err()
            .to_string()
            .contains("not PEM text")
    );
    std::fs::write(&path, vec![b'A'; 1 << 20]).unwrap();
    assert!(
        PublicKey::from_pem_file(&path)
            .unwrap_err()
            .to_string()
            .contains("over 16384 bytes")
    );
    // A device that claims no length is read no further than the limit.
    let e = PrivateKey::from_pem_file("/dev/zero").unwrap_err();
    assert!(e.to_string().contains("over 16384 bytes"), "{e}");
}

#[test]
fn signature_files_that_are_not_signatures_are_refused_by_field() {
    let key = PrivateKey::from_seed([1; 32]);
    let mut bytes = Vec::new();
    let mut w = hurray::Writer::new(&mut bytes).unwrap();
    w.set_digests(Some(hurray::integrity::DigestAlgorithm::Blake3))
        .unwrap();
    w.finish().unwrap();
    let good = Signature::sign(&hurray::File::from_bytes(&bytes).unwrap(), &key)
        .unwrap()
        .to_json();
    assert!(Signature::from_json(good.as_bytes(), "s").is_ok());
    let field_of = |json: &str| match Signature::from_json(json.as_bytes(), "s") {
        Err(Error::Format { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let edit = |from: &str, to: &str| {
        assert!(good.contains(from));
        good.replacen(from, to, 1)
    };
    assert_eq!(field_of("not json"), "json");
    assert_eq!(
        field_of(&edit("hurray-signature/1", "hurray-signature/2")),
        "format"
    );
    assert_eq!(
        field_of(&edit("\"ed25519\"", "\"rsa\"")),
        "signature_algorithm"
    );
    assert_eq!(field_of(&edit("\"blake3\"", "\"md5\"")), "digest_algorithm");
    assert_eq!(field_of(&edit("\"file\"", "\"directory\"")), "json");
    assert_eq!(
        field_of(&edit("\"format\"", "\"extra\": 1, \"format\"")),
        "json"
    );
    let public = key.public_key().to_hex();
    assert_eq!(field_of(&edit(&public, &public[2..])), "public_key");
    let long = format!("{{\"format\": \"{}\"}}", "x".repeat(70_000));
    assert_eq!(field_of(&long), "length");
}
