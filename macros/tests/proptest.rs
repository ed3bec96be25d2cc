//! Property: any value of a derived struct survives save and load unchanged,
//! empty tensors, odd sub-byte lengths, empty sparse matrices, absent
//! optional structs and any metadata included.

use hurray::derive::{Compressed, Coo, Packed};
use hurray::elements::{Int4, UInt2};
use hurray::{File, Tensors};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Tensors, Debug, PartialEq)]
struct Inner<'a> {
    #[hurray(shape = [?, 2])]
    pairs: &'a [i32],
}

#[derive(Tensors, Debug, PartialEq)]
struct Everything<'a> {
    dense: &'a [f32],
    nibbles: Packed<'a, Int4>,
    crumbs: Option<Packed<'a, UInt2>>,
    sparse: Compressed<'a, f64, i32>,
    owned: Vec<u16>,
    inner: Inner<'a>,
    maybe: Option<Inner<'a>>,
    points: Coo<'a, f64>,
    #[hurray(metadata_of = "dense")]
    dense_meta: BTreeMap<String, String>,
    #[hurray(metadata)]
    file_meta: BTreeMap<String, String>,
}

/// The same matrix as COO coordinates (sorted: canonical).
fn coo(rows: usize, cols: usize, dense: &[f64]) -> Coo<'static, f64> {
    let (mut indices, mut values) = (vec![], vec![]);
    for r in 0..rows {
        for c in 0..cols {
            let v = dense[r * cols + c];
            if v != 0.0 {
                indices.extend([r as i64, c as i64]);
                values.push(v);
            }
        }
    }
    Coo::new(vec![rows as u64, cols as u64], indices, values)
}

fn metadata() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[a-z][a-z0-9._]{0,8}", ".{0,12}", 0..4)
}

/// A CSR matrix from a dense one (row-major, 0.0 = not stored). An empty
/// matrix (a 0 dimension) has no pointers at all (ADR-007 section 4).
fn csr(rows: usize, cols: usize, dense: &[f64]) -> Compressed<'static, f64, i32> {
    let (mut pointers, mut indices, mut values) = (vec![], vec![], vec![]);
    if rows * cols > 0 {
        pointers.push(0);
        for r in 0..rows {
            for c in 0..cols {
                let v = dense[r * cols + c];
                if v != 0.0 {
                    indices.push(c as i32);
                    values.push(v);
                }
            }
            pointers.push(values.len() as i32);
        }
    }
    Compressed::new([rows as u64, cols as u64], pointers, indices, values)
}

fn matrix() -> impl Strategy<Value = (usize, usize, Vec<f64>)> {
    (0usize..5, 0usize..5).prop_flat_map(|(r, c)| {
        (
            Just(r),
            Just(c),
            prop::collection::vec(prop_oneof![Just(0.0), -8.0f64..8.0], r * c),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn save_then_load_is_identity(
        dense in prop::collection::vec(any::<f32>().prop_filter("NaN != NaN", |v| !v.is_nan()), 0..40),
        nibbles in prop::collection::vec(-8i16..8, 0..40),
        crumbs in prop::option::of(prop::collection::vec(0i16..4, 0..13)),
        (rows, cols, m) in matrix(),
        owned in prop::collection::vec(any::<u16>(), 0..10),
        pairs in prop::collection::vec(any::<i32>(), 0..6).prop_map(|mut v| { v.truncate(v.len() / 2 * 2); v }),
        maybe in prop::option::of(prop::collection::vec(any::<i32>(), 1..3).prop_map(|v| [v.clone(), v].concat())),
        dense_meta in metadata(),
        file_meta in metadata(),
    ) {
        let value = Everything {
            dense: &dense,
            nibbles: Packed::from_values(nibbles.iter().copied()).unwrap(),
            crumbs: crumbs.map(|c| Packed::from_values(c).unwrap()),
            sparse: csr(rows, cols, &m),
            owned,
            inner: Inner { pairs: &pairs },
            maybe: maybe.as_deref().map(|pairs| Inner { pairs }),
            points: coo(rows, cols, &m),
            dense_meta,
            file_meta,
        };
        prop_assert!(value.points.canonical);
        let mut bytes = Vec::new();
        value.write_to(&mut bytes).unwrap();
        let file = File::from_bytes(&bytes).unwrap();
        let back = Everything::load(&file).unwrap();
        prop_assert_eq!(&back, &value);
        prop_assert_eq!(back.nibbles.values().collect::<Vec<_>>(), nibbles);
        prop_assert_eq!(file.tensor("inner.pairs").unwrap().dims()[0], hurray::Dim::Fixed(pairs.len() as u64 / 2));
    }
}
