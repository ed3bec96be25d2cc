//! A file truncated by another process after `File::open`: metadata calls
//! read the header copy taken at open, never the map, so they keep working;
//! `File::read_buffer` (pread) reports the truncation as an error instead of
//! the SIGBUS any access to the lost mapped pages would raise.

use hurray::{ElementType, Error, File, TensorDescriptor, Writer, descriptor::BufferRole, shape};

fn write(path: &std::path::Path) -> Vec<u8> {
    let values: Vec<u8> = (0..=255u8).cycle().take(1 << 16).collect();
    let mut w = Writer::create(path).unwrap();
    w.set_metadata("producer", "truncation test");
    w.add_tensor(
        &TensorDescriptor::new("big", ElementType::UInt8, shape(&[256, 256])),
        &[&values],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("small", ElementType::Float32, shape(&[2])),
        &[hurray::as_bytes(&[1.0f32, 2.0])],
    )
    .unwrap();
    w.finish().unwrap();
    values
}

#[test]
fn read_buffer_copies_what_the_view_borrows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hurray");
    let values = write(&path);
    let file = File::open(&path).unwrap();
    assert_eq!(
        file.read_buffer("big", BufferRole::Values)
            .unwrap()
            .as_slice(),
        values
    );
    let small = file.read_buffer("small", BufferRole::Values).unwrap();
    assert_eq!(
        small.as_slice(),
        file.tensor("small").unwrap().data().unwrap()
    );
    let err = file.read_buffer("small", BufferRole::Scales).unwrap_err();
    assert!(matches!(err, Error::NoBuffer { .. }), "{err}");
    let err = file.read_buffer("nope", BufferRole::Values).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    // In memory too.
    let mem = File::from_bytes(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        mem.read_buffer("big", BufferRole::Values)
            .unwrap()
            .as_slice(),
        values
    );
}

#[test]
fn metadata_survives_truncation_and_reads_report_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hurray");
    write(&path);
    let file = File::open(&path).unwrap();
    // Another writer cuts the file to its prefix, in place.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(64)
        .unwrap();
    // None of these touch the mapped pages that are gone.
    assert_eq!(file.len(), 2);
    let names: Vec<&str> = file.tensors().map(|t| t.name()).collect();
    assert_eq!(names, ["big", "small"]);
    let big = file.tensor("big").unwrap();
    assert_eq!(big.descriptor().shape, shape(&[256, 256]));
    assert_eq!(big.byte_length(), 1 << 16);
    assert!(big.buffer_range(BufferRole::Values).unwrap().0 >= 64);
    let meta: Vec<(&str, &str)> = file.reader().metadata().collect();
    assert_eq!(meta, [("producer", "truncation test")]);
    // Reading data through pread is an error naming the tensor and the sizes.
    let err = file.read_buffer("big", BufferRole::Values).unwrap_err();
    match &err {
        Error::Truncated {
            tensor, file_len, ..
        } => {
            assert_eq!(tensor, "big");
            assert_eq!(*file_len, 64);
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
    assert_eq!(err.kind(), "Truncated");
}
