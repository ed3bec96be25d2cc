//! ndarray fields: round trips that borrow from the file, and the rank,
//! shape and memory layout checks.

use super::*;
use ndarray::{Array, ArrayView2, ArrayViewD, IxDyn};

#[derive(Tensors, Debug, PartialEq)]
pub(super) struct Arrays<'a> {
    #[hurray(shape = [?, 3])]
    pub(super) view: ArrayView2<'a, f32>,
    pub(super) any_rank: ArrayViewD<'a, i16>,
    pub(super) owned: Array<f64, IxDyn>,
}

#[derive(Tensors, Debug)]
pub(super) struct WrongRank<'a> {
    #[hurray(rename = "view")]
    pub(super) view: ndarray::ArrayView3<'a, f32>,
}

#[derive(Tensors, Debug)]
pub(super) struct Fixed<'a> {
    #[hurray(shape = [2, 4])]
    pub(super) view: ArrayView2<'a, f32>,
}

#[test]
fn ndarray_fields_round_trip_and_borrow() {
    use ndarray::{Array, ArrayView2, ArrayViewD, IxDyn};
    let grid = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let cube = [1i16, 2, 3, 4, 5, 6, 7, 8];
    let a = nd::Arrays {
        view: ArrayView2::from_shape((2, 3), &grid).unwrap(),
        any_rank: ArrayViewD::from_shape(IxDyn(&[2, 2, 2]), &cube).unwrap(),
        owned: Array::zeros(IxDyn(&[3, 0, 5])),
    };
    let (_dir, path) = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arrays.hurray");
        a.save(&path).unwrap();
        (dir, path)
    };
    let file = File::open(&path).unwrap();
    assert_eq!(file.tensor("any_rank").unwrap().dims(), shape(&[2, 2, 2]));
    assert_eq!(file.tensor("owned").unwrap().dims(), shape(&[3, 0, 5]));
    let back = nd::Arrays::load(&file).unwrap();
    assert_eq!(back, a);
    assert!(inside(&file, back.view.as_ptr().cast(), 24));
    assert!(inside(&file, back.any_rank.as_ptr().cast(), 16));

    let e = nd::WrongRank::load(&file).unwrap_err().to_string();
    assert!(e.contains("\"view\"") && e.contains("rank"), "{e}");
    let e = nd::Fixed::load(&file).unwrap_err().to_string();
    assert!(e.contains("\"view\"") && e.contains("shape[1]"), "{e}");
    // Writing checks the declared shape against the array's.
    let e = nd::Fixed {
        view: ArrayView2::from_shape((2, 3), &grid).unwrap(),
    }
    .descriptors()
    .unwrap_err()
    .to_string();
    assert!(e.contains("shape[1]"), "{e}");
    // A transposed (non-standard) view is refused rather than silently copied.
    let transposed = ArrayView2::from_shape((3, 2), &grid)
        .unwrap()
        .reversed_axes();
    let e = nd::Fixed { view: transposed }
        .descriptors()
        .unwrap_err()
        .to_string();
    assert!(e.contains("standard"), "{e}");
}
