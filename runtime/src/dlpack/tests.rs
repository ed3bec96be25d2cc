//! The export's rules, one test each.

use super::*;
use crate::{Dim, Layout, TensorDescriptor, Writer, shape};

fn file() -> Arc<File> {
    let mut bytes = Vec::new();
    let mut w = Writer::new(&mut bytes).unwrap();
    let v = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    w.add_tensor(
        &TensorDescriptor::new("w", ElementType::Float32, shape(&[2, 3])),
        &[crate::as_bytes(&v)],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("empty", ElementType::Float32, shape(&[3, 0, 5])),
        &[&[]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("i4", ElementType::Int4, shape(&[3])),
        &[&[0x21, 0x03]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("s", ElementType::Int32, shape(&[2, 2]))
            .with_layout(Layout::Strided(vec![1, 2])),
        &[crate::as_bytes(&[1i32, 2, 3, 4])],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new(
            "dyn",
            ElementType::Float32,
            vec![Dim::Dynamic, Dim::Fixed(3)],
        )
        .into_descriptor_only(),
        &[],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("scalar", ElementType::Float64, vec![]),
        &[crate::as_bytes(&[2.5f64])],
    )
    .unwrap();
    w.finish().unwrap();
    Arc::new(File::from_bytes(&bytes).unwrap())
}

#[test]
fn dense_export_points_into_the_file_and_keeps_it_alive() {
    let f = file();
    let expected = f.tensor("w").unwrap().data().unwrap().as_ptr();
    let m = ManagedTensor::by_name(f.clone(), "w").unwrap();
    drop(f); // the export alone keeps the bytes alive
    let mt = m.as_managed();
    assert_eq!(mt.version, DLPackVersion { major: 1, minor: 1 });
    assert_eq!(
        mt.flags & DLPACK_FLAG_BITMASK_READ_ONLY,
        DLPACK_FLAG_BITMASK_READ_ONLY
    );
    assert_eq!(mt.dl_tensor.data.cast::<u8>().cast_const(), expected);
    assert_eq!(
        mt.dl_tensor.dtype,
        DLDataType {
            code: 2,
            bits: 32,
            lanes: 1
        }
    );
    assert_eq!(mt.dl_tensor.device.device_type, KDL_CPU);
    assert_eq!(m.shape(), &[2, 3]);
    assert_eq!(m.strides(), &[3, 1]);
    // SAFETY: data points at 6 f32 of the still-alive file.
    let values = unsafe { std::slice::from_raw_parts(mt.dl_tensor.data.cast::<f32>(), 6) };
    assert_eq!(values, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn empty_tensor_has_null_data() {
    let m = ManagedTensor::by_name(file(), "empty").unwrap();
    assert!(m.as_managed().dl_tensor.data.is_null());
    assert_eq!(m.shape(), &[3, 0, 5]);
    assert_eq!(m.as_managed().dl_tensor.ndim, 3);
}

#[test]
fn sub_byte_is_packed_with_true_bits() {
    let m = ManagedTensor::by_name(file(), "i4").unwrap();
    let mt = m.as_managed();
    assert_eq!(
        mt.dl_tensor.dtype,
        DLDataType {
            code: 0,
            bits: 4,
            lanes: 1
        }
    );
    assert_eq!(mt.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, 0);
    assert!(!mt.dl_tensor.data.is_null());
}

#[test]
fn strided_and_scalar() {
    let m = ManagedTensor::by_name(file(), "s").unwrap();
    assert_eq!(m.strides(), &[1, 2]);
    let m = ManagedTensor::by_name(file(), "scalar").unwrap();
    assert_eq!(m.as_managed().dl_tensor.ndim, 0);
    assert!(m.shape().is_empty());
    assert!(!m.as_managed().dl_tensor.shape.is_null());
    assert!(!m.as_managed().dl_tensor.strides.is_null());
}

#[test]
fn refusals() {
    assert!(matches!(
        ManagedTensor::by_name(file(), "dyn"),
        Err(Error::NoData { .. })
    ));
    assert!(matches!(
        ManagedTensor::by_name(file(), "nope"),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn raw_round_trip_through_the_deleter() {
    let f = file();
    let raw = ManagedTensor::by_name(f.clone(), "w").unwrap().into_raw();
    assert_eq!(Arc::strong_count(&f), 2);
    // SAFETY: `raw` is a live export.
    let deleter = unsafe { (*raw).deleter }.unwrap();
    // SAFETY: its deleter is called exactly once.
    unsafe { deleter(raw) };
    assert_eq!(Arc::strong_count(&f), 1);

    let legacy = export_legacy(f.clone(), |f| f.tensor("empty")).unwrap();
    assert_eq!(Arc::strong_count(&f), 2);
    // SAFETY: `legacy` is a live export.
    let l = unsafe { legacy.as_ref() };
    assert!(l.dl_tensor.data.is_null());
    // SAFETY: `shape` points at `ndim` = 3 sizes owned by the export.
    let dims = unsafe { std::slice::from_raw_parts(l.dl_tensor.shape, 3) };
    assert_eq!(dims, &[3, 0, 5]);
    let deleter = l.deleter.unwrap();
    // SAFETY: the deleter is called exactly once.
    unsafe { deleter(legacy.as_ptr()) };
    assert_eq!(Arc::strong_count(&f), 1);
}

fn bools_file() -> Arc<File> {
    let mut bytes = Vec::new();
    let mut w = Writer::new(&mut bytes).unwrap();
    // 10 bools: 1,0,1,1,0,0,0,1 | 1,0 (LSB first).
    w.add_tensor(
        &TensorDescriptor::new("b", ElementType::Bool, shape(&[2, 5])),
        &[&[0b1000_1101, 0b0000_0001]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("h", ElementType::BFloat16, shape(&[2])),
        &[&[0x80, 0x3f, 0x00, 0xc0]],
    )
    .unwrap();
    w.finish().unwrap();
    Arc::new(File::from_bytes(&bytes).unwrap())
}

fn data_of(m: &ManagedTensor, len: usize) -> Vec<u8> {
    let t = &m.as_managed().dl_tensor;
    // SAFETY: the caller names a length within the export's data.
    unsafe { std::slice::from_raw_parts(t.data.cast::<u8>(), len) }.to_vec()
}

#[test]
fn bools_leave_as_one_byte_each_flagged_copied() {
    let m = ManagedTensor::by_name(bools_file(), "b").unwrap();
    let mt = m.as_managed();
    assert_eq!(
        mt.dl_tensor.dtype,
        DLDataType {
            code: 6,
            bits: 8,
            lanes: 1
        }
    );
    assert_eq!(mt.flags, DLPACK_FLAG_BITMASK_IS_COPIED);
    assert_eq!(m.shape(), &[2, 5]);
    assert_eq!(m.strides(), &[5, 1]);
    assert_eq!(data_of(&m, 10), [1, 0, 1, 1, 0, 0, 0, 1, 1, 0]);
    let never = ExportOptions {
        copy: CopyMode::Never,
        ..ExportOptions::default()
    };
    let e = ManagedTensor::export_with(bools_file(), |f| f.tensor("b"), never).unwrap_err();
    assert!(
        matches!(e, Error::CopyRequired { ref tensor, .. } if tensor == "b"),
        "{e}"
    );
}

#[test]
fn copy_always_hands_over_a_writable_copy() {
    let f = file();
    let always = ExportOptions {
        copy: CopyMode::Always,
        ..ExportOptions::default()
    };
    let m = ManagedTensor::export_with(f.clone(), |f| f.tensor("w"), always).unwrap();
    let mt = m.as_managed();
    assert_eq!(mt.flags, DLPACK_FLAG_BITMASK_IS_COPIED);
    let in_file = f.tensor("w").unwrap().data().unwrap();
    assert_ne!(
        mt.dl_tensor.data.cast::<u8>().cast_const(),
        in_file.as_ptr()
    );
    assert_eq!(data_of(&m, 24), in_file);
}

#[test]
fn stored_bits_reinterpret_without_copying() {
    let f = bools_file();
    let bits = ExportOptions {
        as_stored_bits: true,
        ..ExportOptions::default()
    };
    let m = ManagedTensor::export_with(f.clone(), |f| f.tensor("h"), bits).unwrap();
    let mt = m.as_managed();
    assert_eq!(
        mt.dl_tensor.dtype,
        DLDataType {
            code: 1,
            bits: 16,
            lanes: 1
        }
    );
    assert_eq!(mt.flags, DLPACK_FLAG_BITMASK_READ_ONLY);
    let in_file = f.tensor("h").unwrap().data().unwrap().as_ptr();
    assert_eq!(mt.dl_tensor.data.cast::<u8>().cast_const(), in_file);
    let e = ManagedTensor::export_with(file(), |f| f.tensor("i4"), bits).unwrap_err();
    assert!(matches!(e, Error::InvalidField { .. }), "{e}");
}

#[test]
#[cfg_attr(miri, ignore = "Miri cannot map files")]
fn copy_on_write_exports_are_writable_and_never_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.hurray");
    let mut w = Writer::create(&path).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("w", ElementType::Float32, shape(&[2])),
        &[crate::as_bytes(&[1.0f32, 2.0])],
    )
    .unwrap();
    w.finish().unwrap();
    let before = std::fs::read(&path).unwrap();

    let ro = Arc::new(File::open(&path).unwrap());
    assert!(!ro.is_writable());
    let m = ManagedTensor::by_name(ro, "w").unwrap();
    assert_eq!(m.as_managed().flags, DLPACK_FLAG_BITMASK_READ_ONLY);

    // SAFETY: the one write below happens while no reference to the bytes is
    // in use; the reads before and after it are sequential.
    let cow =
        Arc::new(unsafe { File::open_with(&path, crate::reader::MapMode::CopyOnWrite) }.unwrap());
    assert!(cow.is_writable());
    let m = ManagedTensor::by_name(cow.clone(), "w").unwrap();
    assert_eq!(m.as_managed().flags, 0);
    let data = m.as_managed().dl_tensor.data.cast::<f32>();
    // SAFETY: a writable export of two f32; the map is private, so the
    // write stays in this process (what the test checks).
    unsafe { data.write(7.0) };
    assert_eq!(
        cow.tensor("w").unwrap().as_slice::<f32>().unwrap(),
        [7.0, 2.0]
    );
    drop(m);
    drop(cow);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let again = File::open(&path).unwrap();
    assert_eq!(
        again.tensor("w").unwrap().as_slice::<f32>().unwrap(),
        [1.0, 2.0]
    );
}

/// The bytes of [`file`], as a source would serve them.
fn file_bytes() -> Vec<u8> {
    file().bytes().unwrap().to_vec()
}

#[test]
fn exports_of_a_file_read_through_a_source_are_writable_only_when_opened_so() {
    use crate::source::MemorySource;
    let bytes = file_bytes();
    let source = Arc::new(MemorySource::new(bytes.clone(), "memory"));

    let ro = Arc::new(File::open_source(source.clone()).unwrap());
    assert!(!ro.is_writable());
    let m = ManagedTensor::by_name(ro, "w").unwrap();
    assert_eq!(m.as_managed().flags, DLPACK_FLAG_BITMASK_READ_ONLY);

    // SAFETY: the one write below happens while no reference to the bytes is
    // in use; the reads before and after it are sequential.
    let rw = Arc::new(
        unsafe { File::open_source_with(source.clone(), crate::reader::MapMode::CopyOnWrite) }
            .unwrap(),
    );
    assert!(rw.is_writable());
    let m = ManagedTensor::by_name(rw.clone(), "w").unwrap();
    assert_eq!(m.as_managed().flags, 0);
    let data = m.as_managed().dl_tensor.data.cast::<f32>();
    assert_eq!(
        data.cast_const(),
        rw.tensor("w")
            .unwrap()
            .data()
            .unwrap()
            .as_ptr()
            .cast::<f32>(),
        "in place: the tensor's own memory, no copy"
    );
    // The second element: in bounds of the six, so `wrapping_add` is `add`.
    let second = data.wrapping_add(1);
    // SAFETY: a writable export of six f32, in memory this file read the
    // tensor into; no reference to it is in use.
    unsafe { second.write(7.0) };
    assert_eq!(
        rw.tensor("w").unwrap().as_slice::<f32>().unwrap(),
        [1.0, 7.0, 3.0, 4.0, 5.0, 6.0]
    );
    // The write is this process's: the source, and a file opened on it
    // again, are unchanged.
    drop(m);
    let again = File::open_source(source).unwrap();
    assert_eq!(
        again.tensor("w").unwrap().as_slice::<f32>().unwrap(),
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    // An empty tensor of a writable file exports NULL, writable.
    let e = ManagedTensor::by_name(rw, "empty").unwrap();
    assert!(e.as_managed().dl_tensor.data.is_null());
    assert_eq!(e.as_managed().flags, 0);
}

#[test]
fn dtype_comes_from_the_generated_table() {
    for t in ElementType::ALL {
        let d = DLDataType::of(t);
        assert_eq!((d.code, d.bits), t.dlpack());
        assert_eq!(u32::from(d.bits), t.bits());
    }
}
