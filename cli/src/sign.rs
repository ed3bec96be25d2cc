//! `hurray sign` and `hurray verify`: an ed25519 signature over a file's or
//! a sharded checkpoint's header digest, kept beside it in `FILE.sig`
//! (ADR-0012, docs/spec/signatures.md).

use crate::convert::sharded::open_index;
use crate::input;
use anyhow::{Context, Result, bail};
use hurray::File;
use hurray_sign::{PrivateKey, PublicKey, Signature, signature_path};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Signs the file (or index) at `path` with the private key in `key`,
/// writing the signature to `out` (`PATH.sig` by default).
pub fn sign(path: &Path, key: &Path, out: Option<&Path>) -> Result<()> {
    if input::is_url(path) {
        // The signature is written beside the file: a URL is refused, not
        // taken for a local name.
        bail!(
            "{}: sign writes FILE.sig beside a local file; sign it before uploading it",
            path.display()
        );
    }
    let key = PrivateKey::from_pem_file(key)?;
    let file = File::open(path)?;
    if file.is_shard_index() {
        // Every member's header is checked against the index now (each is
        // opened), so a checkpoint whose members no longer match it is not
        // signed.
        let checkpoint = open_index(&file, path)?;
        for i in 0..checkpoint.members().len() {
            checkpoint.member(i)?;
        }
    }
    let signature = Signature::sign(&file, &key)?;
    let out = out.map_or_else(|| signature_path(path), Path::to_path_buf);
    signature.write(&out)?;
    println!(
        "{}: signed {} ({} header digest {}) with ed25519 key {}",
        out.display(),
        path.display(),
        signature.digest_algorithm.name(),
        signature.header_digest,
        signature.public_key.to_hex()
    );
    Ok(())
}

/// Checks the signature of the file (or index) at `path` with the public
/// key in `key`, then every byte it commits to; exit 1, naming what failed,
/// on any difference.
pub fn verify(path: &Path, key: &Path, signature: Option<&Path>) -> Result<ExitCode> {
    let key = PublicKey::from_pem_file(key)?;
    let signature = read_signature(path, signature)?;
    let file = input::open(path)?;
    let result = if file.is_shard_index() {
        let checkpoint = open_index(&file, path)?;
        hurray_sign::verify_checkpoint(&file, &checkpoint, &signature, &key)
    } else {
        hurray_sign::verify_file(&file, &signature, &key)
    };
    match result {
        Ok(v) => {
            println!(
                "{}: verified: signed by ed25519 key {}; {} file(s), {} tensor(s) match their digests",
                path.display(),
                key.to_hex(),
                v.files,
                v.tensors
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // `hurray_sign`'s errors name the file; a member's name it.
            eprintln!("hurray: {}: not verified: {e}", path.display());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The signature of `path`: the file `given`, or the one beside `path`
/// (for a URL, the object `URL.sig`).
fn read_signature(path: &Path, given: Option<&Path>) -> Result<Signature> {
    let at: PathBuf = given.map_or_else(|| signature_path(path), Path::to_path_buf);
    if input::is_url(&at) {
        return remote_signature(&at);
    }
    Signature::read(&at).with_context(|| "reading the signature".to_owned())
}

#[cfg(feature = "remote")]
fn remote_signature(url: &Path) -> Result<Signature> {
    let Some(url) = url.to_str() else {
        bail!("{}: not a URL", url.display())
    };
    let source = hurray_object_store::source_for(url, &[])?;
    Ok(Signature::read_source(source.as_ref())?)
}

#[cfg(not(feature = "remote"))]
fn remote_signature(url: &Path) -> Result<Signature> {
    input::open(url).map(drop)?;
    unreachable!("without the `remote` feature a URL does not open")
}
