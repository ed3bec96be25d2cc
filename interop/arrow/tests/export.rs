//! Export of Hurray tensors as `arrow.fixed_shape_tensor` arrays: zero-copy
//! (the Arrow values buffer is the mapped file's bytes), empty tensors,
//! permuted layouts, and the refusals.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int16Type, UInt8Type};
use arrow_array::{Array, FixedSizeListArray};
use arrow_schema::DataType;
use hurray::pack::pack_codes;
use hurray::{
    ElementType, File, Layout, Quantization, TensorDescriptor, Writer,
    descriptor::QuantizationScheme, shape,
};
use hurray_arrow::{EXTENSION_NAME, Error, export, export_batch};
use std::sync::Arc;

fn write(dir: &std::path::Path) -> Arc<File> {
    let path = dir.join("t.hurray");
    let mut w = Writer::create(&path).unwrap();
    let f32s: Vec<f32> = (0..12).map(|i| i as f32).collect();
    w.add_tensor(
        &TensorDescriptor::new("w", ElementType::Float32, shape(&[4, 3]))
            .with_metadata("role", "weight"),
        &[hurray::as_bytes(&f32s)],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("empty", ElementType::Float32, shape(&[3, 0, 5])),
        &[&[]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("rows0", ElementType::UInt8, shape(&[0, 4])),
        &[&[]],
    )
    .unwrap();
    let bools = [1u8, 0, 1, 1, 0, 0, 0, 1, 1, 0];
    w.add_tensor(
        &TensorDescriptor::new("mask", ElementType::Bool, shape(&[2, 5])),
        &[&pack_codes(bools, 1)],
    )
    .unwrap();
    // Logical [2, 3] stored column-major (strides 1, 2): [[0, 1, 2], [3, 4, 5]].
    let stored: [i16; 6] = [0, 3, 1, 4, 2, 5];
    w.add_tensor(
        &TensorDescriptor::new("colmajor", ElementType::Int16, shape(&[2, 3]))
            .with_layout(Layout::Strided(vec![1, 2])),
        &[hurray::as_bytes(&stored)],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("broadcast", ElementType::Int16, shape(&[2, 3]))
            .with_layout(Layout::Strided(vec![0, 1])),
        &[hurray::as_bytes(&stored[..3])],
    )
    .unwrap();
    // Row-major with a size-1 dimension of arbitrary stride: no permutation.
    w.add_tensor(
        &TensorDescriptor::new("unit", ElementType::Int16, shape(&[3, 1, 2]))
            .with_layout(Layout::Strided(vec![2, 99, 1])),
        &[hurray::as_bytes(&stored)],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("bf16", ElementType::BFloat16, shape(&[1])),
        &[&[0, 0x3f]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("i4", ElementType::Int4, shape(&[2])),
        &[&[0x21]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("sparse", ElementType::Float32, shape(&[3, 4])).with_layout(
            Layout::Csr {
                nnz: 0,
                index_type: ElementType::Int64,
            },
        ),
        &[&[0u8; 32], &[], &[]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("q", ElementType::Int8, shape(&[2])).with_quantization(
            Quantization {
                scheme: QuantizationScheme::PerTensor,
                expressed_type: ElementType::Float32,
                scale_type: ElementType::Float32,
                zero_point_type: None,
                storage_min: 0,
                storage_max: 0,
                tensor_scale: 1.0,
                offset_type: None,
                ..Default::default()
            },
        ),
        &[&[1, 2], &0.5f32.to_le_bytes(), &[]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("sig", ElementType::Float32, vec![hurray::Dim::Dynamic])
            .into_descriptor_only(),
        &[],
    )
    .unwrap();
    w.finish().unwrap();
    Arc::new(File::open(&path).unwrap())
}

fn extension(field: &arrow_schema::Field) -> serde_json::Value {
    let m = field.metadata();
    assert_eq!(
        m.get("ARROW:extension:name").map(String::as_str),
        Some(EXTENSION_NAME)
    );
    serde_json::from_str(&m["ARROW:extension:metadata"]).unwrap()
}

fn values_ptr(a: &FixedSizeListArray) -> *const u8 {
    a.values().to_data().buffers()[0].as_ptr()
}

#[test]
fn dense_tensor_is_exported_without_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let data_ptr = file.tensor("w").unwrap().data().unwrap().as_ptr();
    let e = export(&file, "w").unwrap();
    assert_eq!(extension(&e.field), serde_json::json!({"shape": [4, 3]}));
    assert_eq!(e.field.metadata()["role"], "weight");
    assert_eq!(e.field.name(), "w");
    assert_eq!(e.array.len(), 1);
    assert_eq!(e.array.value_length(), 12);
    assert_eq!(
        e.field.data_type(),
        &DataType::new_fixed_size_list(DataType::Float32, 12, false)
    );
    // The values buffer is the file's bytes.
    assert_eq!(values_ptr(&e.array), data_ptr);
    let values = e.array.values().as_primitive::<Float32Type>();
    assert_eq!(values.values().as_ptr().cast::<u8>(), data_ptr);
    let expected: Vec<f32> = (0..12).map(|i| i as f32).collect();
    assert_eq!(values.values().as_ref(), expected.as_slice());
    e.array.to_data().validate_full().unwrap();

    // The array keeps the file alive after every other handle is gone.
    let batch = e.into_record_batch().unwrap();
    assert_eq!(Arc::strong_count(&file), 2, "the array holds the file");
    drop(file);
    let col = batch.column(0).as_fixed_size_list();
    assert_eq!(col.values().as_primitive::<Float32Type>().value(11), 11.0);
}

#[test]
fn batch_export_makes_the_first_dimension_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let data_ptr = file.tensor("w").unwrap().data().unwrap().as_ptr();
    let e = export_batch(&file, "w").unwrap();
    assert_eq!(extension(&e.field), serde_json::json!({"shape": [3]}));
    assert_eq!(e.array.len(), 4);
    assert_eq!(e.array.value_length(), 3);
    assert_eq!(values_ptr(&e.array), data_ptr);
    let row2 = e.array.value(2);
    assert_eq!(
        row2.as_primitive::<Float32Type>().values().as_ref(),
        [6.0, 7.0, 8.0]
    );
}

#[test]
fn empty_tensors_export_as_valid_empty_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    // [3, 0, 5]: one tensor of no values.
    let e = export(&file, "empty").unwrap();
    assert_eq!(extension(&e.field), serde_json::json!({"shape": [3, 0, 5]}));
    assert_eq!(e.array.len(), 1);
    assert_eq!(e.array.value_length(), 0);
    assert_eq!(e.array.values().len(), 0);
    e.array.to_data().validate_full().unwrap();
    // Batched: three tensors of shape [0, 5].
    let e = export_batch(&file, "empty").unwrap();
    assert_eq!(extension(&e.field), serde_json::json!({"shape": [0, 5]}));
    assert_eq!(e.array.len(), 3);
    assert_eq!(e.array.value_length(), 0);
    e.array.to_data().validate_full().unwrap();
    // [0, 4] batched: no rows at all.
    let e = export_batch(&file, "rows0").unwrap();
    assert_eq!(e.array.len(), 0);
    assert_eq!(e.array.value_length(), 4);
    assert_eq!(
        e.array.values().as_primitive::<UInt8Type>().len(),
        0,
        "no values"
    );
    e.array.to_data().validate_full().unwrap();
    e.into_record_batch().unwrap();
}

#[test]
fn bools_share_the_packed_bits() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let data_ptr = file.tensor("mask").unwrap().data().unwrap().as_ptr();
    let e = export(&file, "mask").unwrap();
    assert_eq!(values_ptr(&e.array), data_ptr);
    let bits: Vec<bool> = e
        .array
        .values()
        .as_boolean()
        .iter()
        .map(Option::unwrap)
        .collect();
    let expected = [
        true, false, true, true, false, false, false, true, true, false,
    ];
    assert_eq!(bits, expected);
}

#[test]
fn column_major_exports_with_a_permutation() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let data_ptr = file.tensor("colmajor").unwrap().data().unwrap().as_ptr();
    let e = export(&file, "colmajor").unwrap();
    // Physical (memory) shape [3, 2]; logical dimension i is physical permutation[i].
    assert_eq!(
        extension(&e.field),
        serde_json::json!({"shape": [3, 2], "permutation": [1, 0]})
    );
    assert_eq!(values_ptr(&e.array), data_ptr);
    let v = e.array.values().as_primitive::<Int16Type>();
    // Logical element [i, j] sits at physical [j, i] = j * 2 + i.
    for i in 0..2 {
        for j in 0..3 {
            assert_eq!(v.value(j * 2 + i) as usize, i * 3 + j);
        }
    }
    let e = export(&file, "unit").unwrap();
    assert_eq!(extension(&e.field), serde_json::json!({"shape": [3, 1, 2]}));
    // The batch dimension must be outermost in memory.
    assert!(matches!(
        export_batch(&file, "colmajor"),
        Err(Error::NotContiguous { .. })
    ));
}

#[test]
fn what_arrow_cannot_hold_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let err = |name| export(&file, name).unwrap_err().to_string();
    assert!(err("bf16").contains("element type bf16 has no Arrow type"));
    assert!(err("i4").contains("element type i4 has no Arrow type"));
    assert!(err("sparse").contains("it is sparse (csr)"));
    assert!(err("q").contains("it is quantized"));
    assert!(err("sig").contains("descriptor-only"));
    assert!(err("broadcast").contains("no permutation of a contiguous layout"));
    assert!(matches!(
        export(&file, "nope"),
        Err(Error::Hurray(hurray::Error::NotFound { .. }))
    ));
}

#[test]
fn in_memory_files_export_too() {
    let dir = tempfile::tempdir().unwrap();
    drop(write(dir.path()));
    let bytes = std::fs::read(dir.path().join("t.hurray")).unwrap();
    let file = Arc::new(File::from_bytes(&bytes).unwrap());
    let data_ptr = file.tensor("w").unwrap().data().unwrap().as_ptr();
    let e = export(&file, "w").unwrap();
    assert_eq!(values_ptr(&e.array), data_ptr);
}

#[test]
fn empty_tensors_with_huge_dimensions_are_refused_not_overflowed() {
    // [0, 2^40, 2^40] as a batch: 0 rows of lists of 2^80 elements. The list
    // size is counted by the runtime (it used to overflow a plain product).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.hurray");
    let mut w = Writer::create(&path).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("e", ElementType::Float32, shape(&[0, 1 << 40, 1 << 40])),
        &[&[]],
    )
    .unwrap();
    w.finish().unwrap();
    let file = Arc::new(File::open(&path).unwrap());
    let err = export_batch(&file, "e").unwrap_err().to_string();
    assert!(err.contains("the list size"), "{err}");
}
