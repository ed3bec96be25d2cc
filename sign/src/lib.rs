//! Signed Hurray files and sharded checkpoints (ADR-0012).
//!
//! A file written with digests (format 1.4) records a BLAKE3 digest of each
//! buffer in its header, so its *header digest* commits to every byte of it;
//! an index of a sharded checkpoint records each member's header digest, so
//! its own header digest commits to the whole checkpoint. A signature signs
//! that one digest with ed25519 and is kept beside the file, in
//! `FILE.sig` (docs/spec/signatures.md). Checking a signature reads only
//! the header; each tensor's digest is checked when its data is read, so a
//! reader that loads one tensor never hashes the others.
//!
//! ```
//! use hurray::{ElementType, File, TensorDescriptor, Writer, integrity::DigestAlgorithm, shape};
//! use hurray_sign::{PrivateKey, Signature};
//!
//! let mut bytes = Vec::new();
//! let mut w = Writer::new(&mut bytes)?;
//! w.set_digests(Some(DigestAlgorithm::Blake3))?;
//! let desc = TensorDescriptor::new("w", ElementType::UInt8, shape(&[3]));
//! w.add_tensor(&desc, &[&[1, 2, 3]])?;
//! w.finish()?;
//! let file = File::from_bytes(&bytes)?;
//!
//! let key = PrivateKey::from_seed([7; 32]);
//! let signature = Signature::sign(&file, &key)?;
//! signature.verify(&file, &key.public_key())?;
//! file.tensor("w")?.verify_checksum()?; // each tensor's digest, when read
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod key;
mod read;
mod signature;
mod verify;

pub use error::{Error, Result};
pub use key::{PrivateKey, PublicKey};
pub use signature::{MAX_SIGNATURE_FILE_BYTES, Signature, SignedKind, signature_path};
pub use verify::{Verified, verify_checkpoint, verify_file};
