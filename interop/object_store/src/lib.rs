//! Hurray files in object stores: S3 (and S3-compatible servers), Google
//! Cloud Storage, Azure Blob Storage and plain HTTP(S), read by range GETs
//! through the Apache Arrow `object_store` crate.
//!
//! [`ObjectSource`] is a [`hurray::source::Source`]: [`hurray::File::open_source`]
//! opens a file from it with two range GETs issued together (the 64-byte
//! prefix and the last [`hurray::source::OPEN_SUFFIX`] bytes, which hold the footer
//! and the header), and reads tensors with range GETs that
//! [`hurray::source::coalesce`] plans, at most
//! [`hurray::limits::REQUESTS_IN_FLIGHT`] at a time. Every read after the
//! first asks for the version opening saw (`If-Match` on its ETag), so an
//! object replaced while it is read is an error, never a mix of two files.
//!
//! Credentials and endpoints come from the environment as each store's own
//! tools read them (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT`, `AWS_REGION`,
//! `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...), and may be
//! given as options (the `object_store` configuration keys).
//!
//! The calls block: they run on a small runtime of this crate's own, so
//! they must not be made from inside an async task.

mod location;
mod source;
mod store;

pub use location::{is_url, member_sources, open, open_sharded, open_with_options, source_for};
pub use source::ObjectSource;
pub use store::{create, sharded_writer};
