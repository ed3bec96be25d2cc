//! ed25519 keys in the PEM forms OpenSSL writes: PKCS#8 private keys
//! (`openssl genpkey -algorithm ed25519`) and SubjectPublicKeyInfo public
//! keys (`openssl pkey -pubout`).

use crate::error::{Error, Result};
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use std::path::Path;

/// The largest key file read: PEM ed25519 keys take about 120 bytes.
const MAX_KEY_FILE_BYTES: u64 = 16 << 10;

/// An ed25519 private key.
pub struct PrivateKey(pub(crate) ed25519_dalek::SigningKey);

/// An ed25519 public key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey(pub(crate) ed25519_dalek::VerifyingKey);

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        write!(f, "PrivateKey(public {})", self.public_key().to_hex())
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.to_hex())
    }
}

/// Reads a key file, bounded, as text.
fn read_pem(path: &Path, what: &str) -> Result<String> {
    let bytes = crate::read::read_at_most(path, MAX_KEY_FILE_BYTES)?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(Error::Key {
            what: format!("{what} {}", path.display()),
            reason: format!("over {MAX_KEY_FILE_BYTES} bytes: not a PEM ed25519 key"),
        });
    }
    String::from_utf8(bytes).map_err(|_| Error::Key {
        what: format!("{what} {}", path.display()),
        reason: "not PEM text".into(),
    })
}

/// The key `parse` makes of the PEM file at `path` (a `what`), its errors
/// naming the file.
fn from_pem_file<K>(path: &Path, what: &str, parse: fn(&str) -> Result<K>) -> Result<K> {
    parse(&read_pem(path, what)?).map_err(|e| match e {
        Error::Key { reason, .. } => Error::Key {
            what: format!("{what} {}", path.display()),
            reason,
        },
        other => other,
    })
}

impl PrivateKey {
    /// The key in `pem` (PKCS#8, `-----BEGIN PRIVATE KEY-----`).
    pub fn from_pem(pem: &str) -> Result<Self> {
        ed25519_dalek::SigningKey::from_pkcs8_pem(pem)
            .map(PrivateKey)
            .map_err(|e| Error::Key {
                what: "private key".into(),
                reason: format!("not a PKCS#8 PEM ed25519 private key ({e})"),
            })
    }

    /// The key in the PEM file at `path`.
    pub fn from_pem_file(path: impl AsRef<Path>) -> Result<Self> {
        from_pem_file(path.as_ref(), "private key", Self::from_pem)
    }

    /// The key whose 32-byte seed is `seed` (RFC 8032's private key).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        PrivateKey(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    /// The key as PKCS#8 PEM, as `openssl genpkey` writes it: version 1,
    /// the seed alone (OpenSSL 3.0 does not read version 2's public key).
    pub fn to_pem(&self) -> String {
        let v1 = ed25519_dalek::pkcs8::KeypairBytes {
            secret_key: self.0.to_bytes(),
            public_key: None,
        };
        match v1.to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF) {
            Ok(pem) => pem.to_string(),
            Err(e) => unreachable!("a 32-byte seed always encodes: {e}"),
        }
    }

    /// Its public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }
}

impl PublicKey {
    /// The key in `pem` (SubjectPublicKeyInfo, `-----BEGIN PUBLIC KEY-----`).
    pub fn from_pem(pem: &str) -> Result<Self> {
        ed25519_dalek::VerifyingKey::from_public_key_pem(pem)
            .map(PublicKey)
            .map_err(|e| Error::Key {
                what: "public key".into(),
                reason: format!("not a SubjectPublicKeyInfo PEM ed25519 public key ({e})"),
            })
    }

    /// The key in the PEM file at `path`.
    pub fn from_pem_file(path: impl AsRef<Path>) -> Result<Self> {
        from_pem_file(path.as_ref(), "public key", Self::from_pem)
    }

    /// The key as SubjectPublicKeyInfo PEM, as `openssl pkey -pubout`
    /// writes it.
    pub fn to_pem(&self) -> String {
        match self
            .0
            .to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
        {
            Ok(pem) => pem,
            Err(e) => unreachable!("a 32-byte key always encodes: {e}"),
        }
    }

    /// The key's 32 bytes (RFC 8032's encoding), in hexadecimal: how
    /// signatures and messages name it.
    pub fn to_hex(&self) -> String {
        hex(self.0.as_bytes())
    }

    /// The key of 32 bytes spelled in hexadecimal, if it is one.
    pub(crate) fn from_hex(s: &str) -> Option<Self> {
        let bytes: [u8; 32] = unhex(s)?.try_into().ok()?;
        ed25519_dalek::VerifyingKey::from_bytes(&bytes)
            .ok()
            .map(PublicKey)
    }
}

/// Lower-case hexadecimal.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes spelled in hexadecimal, if `s` is an even number of hex digits.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks_exact(2)
        .map(|p| {
            let d = |c: u8| (c as char).to_digit(16);
            Some((d(p[0])? * 16 + d(p[1])?) as u8)
        })
        .collect()
}
