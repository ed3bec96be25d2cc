//! What the `signature` fuzz target does, on 3,000 fixed mutants of a real
//! signature file and of PEM keys, in the tests: every input parses or is
//! refused with an error; none panics, and no mutant of the signature
//! verifies except the untouched one (and changes of case in its hex).

use hurray::{ElementType, File, TensorDescriptor, Writer, integrity::DigestAlgorithm, shape};
use hurray_sign::{PrivateKey, PublicKey, Signature};

/// xorshift64*: fixed mutants, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut m = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if m.is_empty() {
            m.push(rng.next() as u8);
            continue;
        }
        let at = rng.below(m.len());
        match rng.below(5) {
            0 => m[at] ^= 1 << rng.below(8),
            1 => m[at] = b"0aF\"{}:,\\ \n\x00\xff"[rng.below(13)],
            2 => {
                m.remove(at);
            }
            3 => m.insert(at, rng.next() as u8),
            _ => m.truncate(at),
        }
    }
    m
}

#[test]
fn mutated_signatures_and_keys_are_refused_without_a_panic() {
    let mut bytes = Vec::new();
    let mut w = Writer::new(&mut bytes).unwrap();
    w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
    let desc = TensorDescriptor::new("w", ElementType::UInt8, shape(&[4]));
    w.add_tensor(&desc, &[&[1, 2, 3, 4]]).unwrap();
    w.finish().unwrap();
    let file = File::from_bytes(&bytes).unwrap();
    let key = PrivateKey::from_seed([5; 32]);
    let good = Signature::sign(&file, &key).unwrap();
    let json = good.to_json();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut parsed, mut verified) = (0, 0);
    for _ in 0..3000 {
        let m = mutate(&mut rng, json.as_bytes());
        if let Ok(s) = Signature::from_json(&m, "mutant") {
            parsed += 1;
            if s.verify(&file, &key.public_key()).is_ok() {
                verified += 1;
                assert_eq!(s, good, "a changed signature verified");
            }
        }
    }
    // Some mutants still parse (whitespace, hex case), and few verify.
    assert!(
        parsed > 0 && verified < parsed,
        "{parsed} parsed, {verified} verified"
    );
    for pem in [key.to_pem(), key.public_key().to_pem()] {
        for _ in 0..500 {
            let m = mutate(&mut rng, pem.as_bytes());
            if let Ok(text) = std::str::from_utf8(&m) {
                let _ = PrivateKey::from_pem(text);
                let _ = PublicKey::from_pem(text);
            }
        }
    }
}
