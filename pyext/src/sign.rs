//! `sign`, `verify` and `check_signature`: ed25519 signatures over a file's
//! or a sharded checkpoint's header digest (`hurray-sign`, ADR-0012).

use crate::error::{SignatureError, sign_err};
use crate::file::PyFile;
use hurray::{File, ShardedFile};
use hurray_sign::{PrivateKey, PublicKey, Signature, signature_path};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A key argument: `bytes` hold the PEM text, a `str` or path-like names
/// the PEM file.
enum KeyArg {
    Pem(String),
    Path(PathBuf),
}

impl KeyArg {
    fn extract(key: &Bound<'_, PyAny>) -> PyResult<KeyArg> {
        if let Ok(bytes) = key.cast::<PyBytes>() {
            let pem = String::from_utf8(bytes.as_bytes().to_vec())
                .map_err(|_| PyTypeError::new_err("a key given as bytes is PEM text"))?;
            return Ok(KeyArg::Pem(pem));
        }
        key.extract::<PathBuf>().map(KeyArg::Path).map_err(|_| {
            PyTypeError::new_err("a key is the path of a PEM file, or the PEM text as bytes")
        })
    }

    fn private(self) -> hurray_sign::Result<PrivateKey> {
        match self {
            KeyArg::Pem(pem) => PrivateKey::from_pem(&pem),
            KeyArg::Path(path) => PrivateKey::from_pem_file(path),
        }
    }

    fn public(self) -> hurray_sign::Result<PublicKey> {
        match self {
            KeyArg::Pem(pem) => PublicKey::from_pem(&pem),
            KeyArg::Path(path) => PublicKey::from_pem_file(path),
        }
    }
}

fn is_url(location: &str) -> bool {
    hurray_object_store::is_url(location)
}

/// The signature at `given`, or beside `location` (`LOCATION.sig`, an
/// object next to it for a URL).
fn read_signature(
    location: &str,
    given: Option<String>,
    options: &[(&str, &str)],
) -> hurray_sign::Result<Signature> {
    let at = given.unwrap_or_else(|| format!("{location}.sig"));
    if is_url(&at) {
        let source = hurray_object_store::source_for(&at, options)?;
        return Signature::read_source(source.as_ref());
    }
    Signature::read(&at)
}

fn options_of(options: &Option<BTreeMap<String, String>>) -> Vec<(&str, &str)> {
    options
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// Signs the file (or sharded checkpoint index) at `path` with
/// `private_key`; writes the signature to `output` (`PATH.sig` by default)
/// and returns its path.
#[pyfunction]
#[pyo3(signature = (path, private_key, output=None))]
pub(crate) fn sign(
    py: Python<'_>,
    path: PathBuf,
    private_key: &Bound<'_, PyAny>,
    output: Option<PathBuf>,
) -> PyResult<PathBuf> {
    let key = KeyArg::extract(private_key)?;
    if path.to_str().is_some_and(is_url) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{}: sign writes PATH.sig beside a local file; sign it before uploading it",
            path.display()
        )));
    }
    py.detach(|| -> hurray_sign::Result<PathBuf> {
        let key = key.private()?;
        let file = File::open(&path)?;
        if file.is_shard_index() {
            let checkpoint = ShardedFile::from_index_at(&file, &path)?;
            for i in 0..checkpoint.members().len() {
                checkpoint.member(i)?;
            }
        }
        let signature = Signature::sign(&file, &key)?;
        let out = output.unwrap_or_else(|| signature_path(&path));
        signature.write(&out)?;
        Ok(out)
    })
    .map_err(|e| match e {
        hurray_sign::Error::NoDigests { location } => SignatureError::new_err(format!(
            "{location}: the file records no digests, so a signature over its header would not \
             cover its data; save it with digests=True (hurray.save, the framework modules' \
             save_file, save_sharded), or rewrite it with them: `hurray sign {location} --key KEY \
             --add-digests`"
        )),
        e => sign_err(e),
    })
}

/// Checks the signature of the file (or index) at `path` with
/// `public_key`, then every member's header and every buffer's digest;
/// returns `(files, tensors)` checked.
#[pyfunction]
#[pyo3(signature = (path, public_key, *, signature=None, storage_options=None))]
pub(crate) fn verify(
    py: Python<'_>,
    path: String,
    public_key: &Bound<'_, PyAny>,
    signature: Option<String>,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<(usize, usize)> {
    let key = KeyArg::extract(public_key)?;
    crate::url::check_options_apply(&path, &storage_options)?;
    let (url, options) = (is_url(&path), storage_options);
    py.detach(|| -> hurray_sign::Result<(usize, usize)> {
        let key = key.public()?;
        let options = options_of(&options);
        let signature = read_signature(&path, signature, &options)?;
        let file = if url {
            hurray_object_store::open_with_options(&path, &options)?
        } else {
            File::open(&path)?
        };
        let verified = if file.is_shard_index() {
            let checkpoint = if url {
                ShardedFile::from_index_with_sources(
                    &file,
                    hurray_object_store::member_sources(&path, &options),
                )?
            } else {
                ShardedFile::from_index_at(&file, std::path::Path::new(&path))?
            };
            hurray_sign::verify_checkpoint(&file, &checkpoint, &signature, &key)?
        } else {
            hurray_sign::verify_file(&file, &signature, &key)?
        };
        Ok((verified.files, verified.tensors))
    })
    .map_err(sign_err)
}

/// Checks the signature of an open file (or index) with `public_key`: the
/// header only, so that a loader refuses a file whose signature fails
/// before it reads anything; each tensor's digests are checked when read.
#[pyfunction]
#[pyo3(signature = (file, public_key, *, signature=None, storage_options=None))]
pub(crate) fn check_signature(
    py: Python<'_>,
    file: PyRef<'_, PyFile>,
    public_key: &Bound<'_, PyAny>,
    signature: Option<String>,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<()> {
    let key = KeyArg::extract(public_key)?;
    let (inner, location) = (file.file(), file.location().to_owned());
    py.detach(|| -> hurray_sign::Result<()> {
        let key = key.public()?;
        let signature = read_signature(&location, signature, &options_of(&storage_options))?;
        signature.verify(&inner, &key)
    })
    .map_err(sign_err)
}
