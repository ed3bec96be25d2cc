//! `hurray_file_open_url` against a real S3-compatible server (s3s-fs on
//! 127.0.0.1), endpoint and credentials from the environment as the AWS
//! tools read them. Built with the crate's `remote` feature (`cargo xtask
//! test` turns it on).
#![cfg(feature = "remote")]

use hurray_ffi::*;
use hurray_s3_test_server::Server;
use std::ffi::{CStr, CString};

#[test]
fn a_url_opens_as_a_file_handle_and_failures_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let bucket = server.bucket("models").unwrap();
    let values: Vec<f32> = (0..24).map(|i| i as f32 * 0.5).collect();
    let mut w = hurray::Writer::create(bucket.join("m.hurray")).unwrap();
    w.add_tensor(
        &hurray::TensorDescriptor::new("w", hurray::ElementType::Float32, hurray::shape(&[4, 6])),
        &[hurray::as_bytes(&values)],
    )
    .unwrap();
    w.finish().unwrap();
    // The environment is the process's: this test binary holds no other test.
    for (k, v) in server.env() {
        // SAFETY: no other thread of this test binary reads the environment now.
        unsafe { std::env::set_var(k, v) };
    }

    let gets = || {
        let requests = server.take_requests();
        requests.iter().filter(|r| r.method == "GET").count()
    };
    gets();
    let url = CString::new("s3://models/m.hurray").unwrap();
    let mut file = std::ptr::null_mut();
    // SAFETY: a NUL-terminated string and a writable out-pointer.
    let status = unsafe { hurray_file_open_url(url.as_ptr(), &mut file) };
    assert_eq!(status, HurrayStatus::HURRAY_OK);
    // Opening reads the two ends: the prefix, and the footer with the header.
    assert_eq!(gets(), 2);
    let name = CString::new("w").unwrap();
    let mut tensor = std::ptr::null();
    // SAFETY: a live handle, a NUL-terminated name, a writable out-pointer.
    let status = unsafe { hurray_file_lookup(file, name.as_ptr(), &mut tensor) };
    assert_eq!(status, HurrayStatus::HURRAY_OK);
    assert_eq!(gets(), 0, "a look-up reads the header alone");
    for expected_gets in [1, 0] {
        let (mut data, mut len) = (std::ptr::null(), 0usize);
        // SAFETY: a live tensor handle and writable out-pointers.
        let status = unsafe { hurray_tensor_data(tensor, &mut data, &mut len) };
        assert_eq!(status, HurrayStatus::HURRAY_OK);
        // SAFETY: the API returned `len` readable bytes at `data`, valid until close.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
        assert_eq!(bytes, hurray::as_bytes(&values));
        // The tensor is read on first use, then kept.
        assert_eq!(gets(), expected_gets);
    }
    // SAFETY: the handle from `hurray_file_open_url`, not used afterwards.
    unsafe { hurray_file_close(file) };

    let missing = CString::new("s3://models/missing.hurray").unwrap();
    let mut file = std::ptr::null_mut();
    // SAFETY: as above.
    let status = unsafe { hurray_file_open_url(missing.as_ptr(), &mut file) };
    assert_eq!(status, HurrayStatus::HURRAY_ERR_IO);
    assert!(file.is_null());
    // SAFETY: the message is a NUL-terminated string valid until the next call.
    let message = unsafe { CStr::from_ptr(hurray_last_error_message()) };
    assert!(
        message
            .to_str()
            .unwrap()
            .contains("s3://models/missing.hurray"),
        "{message:?}"
    );
}
