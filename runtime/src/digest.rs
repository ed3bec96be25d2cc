//! Cryptographic digests (format 1.4, ADR-0012): one per buffer, so that a
//! header that records them commits to every byte of the data, and one of
//! the header itself, which a signature or a sharded checkpoint's index
//! commits to (docs/spec/signatures.md). Checked only on demand, as
//! checksums are: opening a file never reads its data.

use crate::generated::fb;

/// Length of a digest in bytes (every algorithm so far gives 32).
pub const DIGEST_LEN: usize = 32;

/// A digest's bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest(pub [u8; DIGEST_LEN]);

impl Digest {
    /// Lower-case hexadecimal, as `b3sum` prints it.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The digest spelled in `hex` (64 hexadecimal digits), or `None`.
    pub fn from_hex(hex: &str) -> Option<Digest> {
        let hex = hex.as_bytes();
        if hex.len() != 2 * DIGEST_LEN {
            return None;
        }
        let mut out = [0u8; DIGEST_LEN];
        for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
            let digit = |c: u8| (c as char).to_digit(16);
            *o = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
        }
        Some(Digest(out))
    }

    /// The digest in `bytes`, which must be exactly [`DIGEST_LEN`] long.
    pub(crate) fn from_slice(bytes: &[u8]) -> Option<Digest> {
        Some(Digest(bytes.try_into().ok()?))
    }
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// How a file's digests are computed (`Header.digest_algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DigestAlgorithm {
    /// BLAKE3, 32-byte output: measured 1.2-1.3x SHA-256 with SHA-NI on one
    /// core and about 2.5x on two (docs/performance.md).
    Blake3,
}

impl DigestAlgorithm {
    /// The name used in the CLI, JSON, signatures and messages.
    pub const fn name(self) -> &'static str {
        match self {
            DigestAlgorithm::Blake3 => "blake3",
        }
    }

    /// The algorithm called `name` (as [`name`](Self::name) spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "blake3" => Some(DigestAlgorithm::Blake3),
            _ => None,
        }
    }

    pub(crate) fn to_wire(self) -> fb::DigestAlgorithm {
        match self {
            DigestAlgorithm::Blake3 => fb::DigestAlgorithm::Blake3,
        }
    }

    /// The algorithm of a wire value: `Ok(None)` for `None`, `Err(value)`
    /// for a value this build does not know.
    pub(crate) fn from_wire(value: fb::DigestAlgorithm) -> Result<Option<Self>, u8> {
        match value {
            fb::DigestAlgorithm::None => Ok(None),
            fb::DigestAlgorithm::Blake3 => Ok(Some(DigestAlgorithm::Blake3)),
            other => Err(other.0),
        }
    }

    /// The digest of `bytes`.
    pub fn of(self, bytes: &[u8]) -> Digest {
        let mut r = RunningDigest::new(self);
        r.update(bytes);
        r.finish()
    }
}

/// A digest computed over bytes that arrive in pieces.
#[derive(Clone)]
pub(crate) struct RunningDigest {
    hasher: blake3::Hasher,
}

impl std::fmt::Debug for RunningDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningDigest").finish_non_exhaustive()
    }
}

impl RunningDigest {
    pub(crate) fn new(algorithm: DigestAlgorithm) -> Self {
        match algorithm {
            DigestAlgorithm::Blake3 => RunningDigest {
                hasher: blake3::Hasher::new(),
            },
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
    }

    pub(crate) fn finish(self) -> Digest {
        Digest(*self.hasher.finalize().as_bytes())
    }
}

/// What a header digest covers: every byte outside the data region that a
/// reader interprets (docs/spec/signatures.md §2).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeaderFacts<'a> {
    pub(crate) version: (u16, u16),
    pub(crate) header_offset: u64,
    pub(crate) flags: u64,
    pub(crate) file_len: u64,
    pub(crate) header: &'a [u8],
}

/// The domain separator that starts a header digest's input, so that no
/// other BLAKE3 input of the project can be taken for one.
const HEADER_DIGEST_DOMAIN: &[u8] = b"hurray header digest v1\0";

/// A file's header digest: `algorithm` over the domain separator, the
/// version, the footer's fields, the file's length and the header's bytes
/// (docs/spec/signatures.md §2). The header records each buffer's digest, so
/// this one digest commits to the whole file.
pub(crate) fn header_digest(algorithm: DigestAlgorithm, facts: HeaderFacts<'_>) -> Digest {
    let mut r = RunningDigest::new(algorithm);
    r.update(HEADER_DIGEST_DOMAIN);
    r.update(&facts.version.0.to_le_bytes());
    r.update(&facts.version.1.to_le_bytes());
    r.update(&facts.header_offset.to_le_bytes());
    r.update(&(facts.header.len() as u64).to_le_bytes());
    r.update(&facts.flags.to_le_bytes());
    r.update(&facts.file_len.to_le_bytes());
    r.update(facts.header);
    r.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blake3_matches_the_reference_vectors() {
        // BLAKE3's published test vectors (test_vectors.json): the input of
        // length n is the bytes 0, 1, ..., 250, 0, 1, ... repeated.
        let input = |n: usize| (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>();
        let b = DigestAlgorithm::Blake3;
        assert_eq!(
            b.of(&input(0)).to_hex(),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        assert_eq!(
            b.of(&input(1)).to_hex(),
            "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"
        );
        assert_eq!(
            b.of(&input(1024)).to_hex(),
            "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"
        );
        // Pieces give the digest of the whole.
        let mut r = RunningDigest::new(b);
        r.update(&input(1024)[..100]);
        r.update(&[]);
        r.update(&input(1024)[100..]);
        assert_eq!(r.finish(), b.of(&input(1024)));
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_a_digest() {
        let d = DigestAlgorithm::Blake3.of(b"x");
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Digest::from_hex(&d.to_hex().to_uppercase()), Some(d));
        assert_eq!(Digest::from_hex(&d.to_hex()[1..]), None);
        assert_eq!(Digest::from_hex(&"g".repeat(64)), None);
        assert_eq!(Digest::from_hex(&"é".repeat(32)), None);
    }

    #[test]
    fn a_header_digest_changes_with_every_field_it_covers() {
        let base = HeaderFacts {
            version: (1, 4),
            header_offset: 128,
            flags: 0,
            file_len: 1000,
            header: b"0123456789abcdef",
        };
        let d = |f: HeaderFacts<'_>| header_digest(DigestAlgorithm::Blake3, f);
        let all = [
            d(base),
            d(HeaderFacts {
                version: (1, 3),
                ..base
            }),
            d(HeaderFacts {
                header_offset: 136,
                ..base
            }),
            d(HeaderFacts { flags: 2, ..base }),
            d(HeaderFacts {
                file_len: 1001,
                ..base
            }),
            d(HeaderFacts {
                header: b"0123456789abcdeF",
                ..base
            }),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
