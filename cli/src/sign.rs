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
/// writing the signature to `out` (`PATH.sig` by default). A file written
/// without digests is refused, naming the command that adds them; with
/// `add_digests` it is first rewritten with them, atomically.
pub fn sign(path: &Path, key: &Path, out: Option<&Path>, add_digests: bool) -> Result<()> {
    if input::is_url(path) {
        // The signature is written beside the file: a URL is refused, not
        // taken for a local name.
        bail!(
            "{}: sign writes FILE.sig beside a local file; sign it before uploading it",
            path.display()
        );
    }
    let private = PrivateKey::from_pem_file(key)?;
    let mut file = File::open(path)?;
    if file.digest_algorithm()?.is_none() {
        digests_missing(&file, path, key, add_digests)?;
        // A new file at `path`, with digests (written atomically).
        crate::convert::convert(
            path,
            path,
            crate::convert::Options {
                digests: true,
                ..Default::default()
            },
        )?;
        file = File::open(path)?;
        println!("{}: rewritten with BLAKE3 digests", path.display());
    }
    if file.is_shard_index() {
        // Every member's header is checked against the index now (each is
        // opened), so a checkpoint whose members no longer match it is not
        // signed.
        let checkpoint = open_index(&file, path)?;
        for i in 0..checkpoint.members().len() {
            checkpoint.member(i)?;
        }
    }
    let signature = Signature::sign(&file, &private)?;
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

/// `Ok` when the file at `path`, which records no digests, may be
/// rewritten with them (`add_digests`, a plain file); otherwise the error
/// that names the way to digests.
fn digests_missing(file: &File, path: &Path, key: &Path, add_digests: bool) -> Result<()> {
    let p = shell_word(&path.display().to_string());
    let why = format!(
        "{}: the file records no digests, so a signature over its header would not cover its data",
        path.display()
    );
    if file.is_shard_index() {
        bail!(
            "{why}. A sharded checkpoint gets digests when it is saved: `hurray convert \
             MODEL.safetensors.index.json {p} --digests`, or in Python \
             `hurray.save_sharded(..., digests=True)` (a ShardedWriter with digests=True)"
        );
    }
    if let Some(id) = file.file_id() {
        bail!(
            "{why}. It is a member of a sharded checkpoint (identity {id}), whose index records its \
             length and checksum, so it is not rewritten alone: save the checkpoint with digests"
        );
    }
    if !add_digests {
        let k = shell_word(&key.display().to_string());
        bail!(
            "{why}. `hurray sign {p} --key {k} --add-digests` rewrites it with digests \
             (atomically, its tensors and metadata unchanged) and signs it; `hurray convert {p} \
             COPY.hurray --digests` writes a copy with them; in Python, save with digests=True"
        );
    }
    Ok(())
}

/// `word` as one word of a POSIX shell command line: quoted when it holds
/// anything but letters, digits and `/._-+:@%,=`.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
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
