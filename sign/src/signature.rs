//! A signature file (docs/spec/signatures.md §3): what it records, the
//! message it signs, and its JSON form.

use crate::error::{Error, Result};
use crate::key::{PrivateKey, PublicKey, hex, unhex};
use ed25519_dalek::Signer;
use hurray::{
    File,
    integrity::{Digest, DigestAlgorithm},
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The largest signature file read: one is about 400 bytes.
pub const MAX_SIGNATURE_FILE_BYTES: u64 = 64 << 10;

/// The `format` of every signature file.
const FORMAT: &str = "hurray-signature/1";

/// The start of every signed message: no other message the key signs can
/// be taken for a Hurray header's.
const MESSAGE_DOMAIN: &[u8] = b"hurray signature v1\0";

/// What a signature signs: a file of tensors, or the index of a sharded
/// checkpoint (which commits to its members' headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignedKind {
    /// A Hurray file of tensors.
    File,
    /// The index of a sharded checkpoint.
    ShardIndex,
}

impl SignedKind {
    fn of(file: &File) -> SignedKind {
        if file.is_shard_index() {
            SignedKind::ShardIndex
        } else {
            SignedKind::File
        }
    }

    fn describe(self) -> &'static str {
        match self {
            SignedKind::File => "a file of tensors",
            SignedKind::ShardIndex => "a sharded checkpoint's index",
        }
    }

    fn byte(self) -> u8 {
        match self {
            SignedKind::File => 0,
            SignedKind::ShardIndex => 1,
        }
    }
}

/// A signature of one file's header digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// What was signed.
    pub kind: SignedKind,
    /// The algorithm of the header digest (and of the file's digests).
    pub digest_algorithm: DigestAlgorithm,
    /// The header digest signed.
    pub header_digest: Digest,
    /// The key that signed it.
    pub public_key: PublicKey,
    /// The ed25519 signature of [`message`](Self::message).
    pub signature: [u8; 64],
}

/// The signature file's JSON.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    format: String,
    kind: SignedKind,
    signature_algorithm: String,
    public_key: String,
    digest_algorithm: String,
    header_digest: String,
    signature: String,
}

/// Where the signature of the file at `path` is kept: `path` with `.sig`
/// appended (`model.hurray.sig`).
pub fn signature_path(path: impl AsRef<Path>) -> PathBuf {
    let mut p = path.as_ref().as_os_str().to_owned();
    p.push(".sig");
    PathBuf::from(p)
}

impl Signature {
    /// Signs `file`'s header digest with `key`. The file must record
    /// digests (format 1.4): they make its header commit to its data.
    pub fn sign(file: &File, key: &PrivateKey) -> Result<Signature> {
        let algorithm = digested(file)?;
        let header_digest = file.header_digest(algorithm);
        let kind = SignedKind::of(file);
        let message = message(kind, algorithm, &header_digest);
        Ok(Signature {
            kind,
            digest_algorithm: algorithm,
            header_digest,
            public_key: key.public_key(),
            signature: key.0.sign(&message).to_bytes(),
        })
    }

    /// The message an ed25519 signature signs: a domain separator, the
    /// kind, the digest algorithm's name and the header digest.
    pub fn message(&self) -> Vec<u8> {
        message(self.kind, self.digest_algorithm, &self.header_digest)
    }

    /// Checks that `key` signed this signature and that it signs `file`'s
    /// header as it is now. Reads only the header the `File` holds: each
    /// tensor's digests are checked when its data is read
    /// ([`hurray::TensorRef::verify_checksum`]).
    pub fn verify(&self, file: &File, key: &PublicKey) -> Result<()> {
        let location = file.location().to_owned();
        if *key != self.public_key {
            return Err(Error::WrongKey {
                location,
                signed_by: self.public_key.to_hex(),
                given: key.to_hex(),
            });
        }
        let signature = ed25519_dalek::Signature::from_bytes(&self.signature);
        // `verify_strict` refuses the weak keys and non-canonical
        // signatures that `verify` lets through (RFC 8032 leaves it open).
        if key.0.verify_strict(&self.message(), &signature).is_err() {
            return Err(Error::BadSignature {
                location,
                key: key.to_hex(),
            });
        }
        let kind = SignedKind::of(file);
        if kind != self.kind {
            return Err(Error::KindMismatch {
                location,
                signed: self.kind.describe(),
                found: kind.describe(),
            });
        }
        if digested(file)? != self.digest_algorithm {
            return Err(Error::HeaderChanged {
                location,
                algorithm: self.digest_algorithm.name(),
                expected: self.header_digest.to_hex(),
                found: "of another algorithm".into(),
            });
        }
        let found = file.header_digest(self.digest_algorithm);
        if found != self.header_digest {
            return Err(Error::HeaderChanged {
                location,
                algorithm: self.digest_algorithm.name(),
                expected: self.header_digest.to_hex(),
                found: found.to_hex(),
            });
        }
        Ok(())
    }

    /// The signature file's JSON.
    pub fn to_json(&self) -> String {
        let wire = Wire {
            format: FORMAT.into(),
            kind: self.kind,
            signature_algorithm: "ed25519".into(),
            public_key: self.public_key.to_hex(),
            digest_algorithm: self.digest_algorithm.name().into(),
            header_digest: self.header_digest.to_hex(),
            signature: hex(&self.signature),
        };
        match serde_json::to_string_pretty(&wire) {
            Ok(json) => json + "\n",
            Err(e) => unreachable!("strings and an enum always serialize: {e}"),
        }
    }

    /// The signature in `json`, the text of the signature file at
    /// `location` (named in errors).
    pub fn from_json(json: &[u8], location: &str) -> Result<Signature> {
        let bad = |field, reason: String| Error::Format {
            location: location.to_owned(),
            field,
            reason,
        };
        if json.len() as u64 > MAX_SIGNATURE_FILE_BYTES {
            return Err(bad(
                "length",
                format!(
                    "{} bytes, a signature file has at most {MAX_SIGNATURE_FILE_BYTES}",
                    json.len()
                ),
            ));
        }
        let wire: Wire = serde_json::from_slice(json)
            .map_err(|e| bad("json", format!("not a signature ({e})")))?;
        if wire.format != FORMAT {
            return Err(bad(
                "format",
                format!("{:?}, this reader knows {FORMAT:?}", wire.format),
            ));
        }
        if wire.signature_algorithm != "ed25519" {
            return Err(bad(
                "signature_algorithm",
                format!(
                    "{:?}, this reader knows \"ed25519\"",
                    wire.signature_algorithm
                ),
            ));
        }
        let digest_algorithm =
            DigestAlgorithm::from_name(&wire.digest_algorithm).ok_or_else(|| {
                bad(
                    "digest_algorithm",
                    format!("{:?}, this reader knows \"blake3\"", wire.digest_algorithm),
                )
            })?;
        let public_key = PublicKey::from_hex(&wire.public_key)
            .ok_or_else(|| bad("public_key", "not 32 bytes of an ed25519 key in hex".into()))?;
        let header_digest = Digest::from_hex(&wire.header_digest)
            .ok_or_else(|| bad("header_digest", "not a 32-byte digest in hex".into()))?;
        let signature: [u8; 64] = unhex(&wire.signature)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| bad("signature", "not 64 bytes in hex".into()))?;
        Ok(Signature {
            kind: wire.kind,
            digest_algorithm,
            header_digest,
            public_key,
            signature,
        })
    }

    /// Writes the signature file at `path`, atomically.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let mut file = hurray::atomic::AtomicFile::create(path)?;
        std::io::Write::write_all(&mut file, self.to_json().as_bytes()).map_err(|source| {
            Error::Io {
                action: "writing",
                path: path.display().to_string(),
                source,
            }
        })?;
        Ok(file.commit()?)
    }

    /// Reads the signature `source` holds (an object beside a file in an
    /// object store), in one read of at most [`MAX_SIGNATURE_FILE_BYTES`].
    pub fn read_source(source: &dyn hurray::source::Source) -> Result<Signature> {
        let location = source.location().to_owned();
        let ends = source
            .read_ends(MAX_SIGNATURE_FILE_BYTES + 1, 0)
            .map_err(|source| Error::Io {
                action: "reading",
                path: location.clone(),
                source,
            })?;
        Signature::from_json(&ends.prefix, &location)
    }

    /// Reads the signature file at `path` (at most
    /// [`MAX_SIGNATURE_FILE_BYTES`]).
    pub fn read(path: impl AsRef<Path>) -> Result<Signature> {
        let path = path.as_ref();
        let bytes = crate::read::read_at_most(path, MAX_SIGNATURE_FILE_BYTES)?;
        Signature::from_json(&bytes, &path.display().to_string())
    }
}

/// The message signed for a header digest.
fn message(kind: SignedKind, algorithm: DigestAlgorithm, digest: &Digest) -> Vec<u8> {
    let mut m = MESSAGE_DOMAIN.to_vec();
    m.push(kind.byte());
    m.extend_from_slice(algorithm.name().as_bytes());
    m.push(0);
    m.extend_from_slice(&digest.0);
    m
}

/// The file's digest algorithm; [`Error::NoDigests`] when it has none.
fn digested(file: &File) -> Result<DigestAlgorithm> {
    file.digest_algorithm()?.ok_or_else(|| Error::NoDigests {
        location: file.location().to_owned(),
    })
}
