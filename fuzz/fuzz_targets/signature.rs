//! Any bytes as a signature file and as PEM keys: parsed, and a signature
//! that parses is checked against a signed file with digests. Every failure
//! must be an error, never a panic.
#![no_main]

use hurray::{ElementType, File, TensorDescriptor, Writer, shape, integrity::DigestAlgorithm};
use hurray_sign::{PrivateKey, PublicKey, Signature};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn file() -> &'static File {
    static FILE: OnceLock<File> = OnceLock::new();
    FILE.get_or_init(|| {
        let mut bytes = Vec::new();
        let mut w = Writer::new(&mut bytes).unwrap();
        w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
        let desc = TensorDescriptor::new("w", ElementType::UInt8, shape(&[4]));
        w.add_tensor(&desc, &[&[1, 2, 3, 4]]).unwrap();
        w.finish().unwrap();
        File::from_bytes(&bytes).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = Signature::from_json(data, "fuzz") {
        let key = PrivateKey::from_seed([1; 32]).public_key();
        let _ = s.verify(file(), &key);
        let _ = s.verify(file(), &s.public_key);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = PrivateKey::from_pem(text);
        let _ = PublicKey::from_pem(text);
    }
});
