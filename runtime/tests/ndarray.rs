//! `ndarray` views (the `ndarray` feature) borrow the file's bytes.
#![cfg(feature = "ndarray")]

use hurray::{ElementType, File, Layout, TensorDescriptor, Writer, shape};

#[test]
fn dense_and_strided_views() {
    let vals: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("rm", ElementType::Float32, shape(&[2, 3])),
        &[hurray::as_bytes(&vals)],
    )
    .unwrap();
    let t = TensorDescriptor::new("cm", ElementType::Float32, shape(&[2, 3]))
        .with_layout(Layout::Strided(vec![1, 2]));
    w.add_tensor(&t, &[hurray::as_bytes(&vals)]).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("e", ElementType::Float32, shape(&[3, 0, 5])),
        &[&[]],
    )
    .unwrap();
    w.finish().unwrap();
    let file = File::from_bytes(&out).unwrap();
    let rm = file.tensor("rm").unwrap().as_ndarray::<f32>().unwrap();
    assert_eq!(rm.shape(), &[2, 3]);
    assert_eq!(rm[[1, 2]], 5.0);
    assert!(
        file.bytes()
            .unwrap()
            .as_ptr_range()
            .contains(&(rm.as_ptr() as *const u8))
    );
    let cm = file.tensor("cm").unwrap().as_ndarray::<f32>().unwrap();
    assert_eq!(cm[[1, 0]], 1.0);
    assert_eq!(cm[[0, 2]], 4.0);
    let e = file.tensor("e").unwrap().as_ndarray::<f32>().unwrap();
    assert_eq!(e.shape(), &[3, 0, 5]);
    assert_eq!(e.len(), 0);
}
