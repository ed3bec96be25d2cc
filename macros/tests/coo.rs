//! COO fields: any rank, sorted or not, i32 or i64 coordinates, nnz = 0,
//! loaded zero-copy with the canonical flag checked.

use hurray::derive::Coo;
use hurray::{Error, File, Layout, Tensors};
use proptest::prelude::*;

#[derive(Tensors, Debug, PartialEq)]
struct Graph<'a> {
    /// A rank-3 COO tensor with i64 coordinates.
    #[hurray(layout = "coo")]
    edges: Coo<'a, f32>,
    /// i32 coordinates, its shape declared (a `?` accepts any size).
    #[hurray(shape = [?, 4])]
    small: Coo<'a, i8, i32>,
    empty: Option<Coo<'a, f64>>,
}

fn file_of(g: &Graph<'_>) -> (Vec<u8>, Vec<hurray::TensorDescriptor>) {
    let mut bytes = Vec::new();
    g.write_to(&mut bytes).unwrap();
    (bytes, g.descriptors().unwrap())
}

fn layout_of(file: &File, name: &str) -> Layout {
    file.tensor(name).unwrap().layout()
}

#[test]
fn sorted_unsorted_empty_round_trip_zero_copy() {
    let g = Graph {
        // Sorted and unique: stored canonical.
        edges: Coo::new(
            vec![2, 3, 4],
            vec![0i64, 0, 1, 0, 2, 3, 1, 1, 0],
            vec![1.0f32, 2.0, 3.0],
        ),
        // Out of order: stored, not canonical.
        small: Coo::new(vec![5, 4], vec![3i32, 1, 0, 2], vec![7i8, -7]),
        // nnz = 0 in a non-empty shape.
        empty: Some(Coo::new(vec![10, 10], Vec::<i64>::new(), Vec::<f64>::new())),
    };
    assert!(g.edges.canonical && !g.small.canonical);
    let (bytes, _) = file_of(&g);
    let file = File::from_bytes(&bytes).unwrap();
    assert_eq!(
        layout_of(&file, "edges"),
        Layout::Coo {
            nnz: 3,
            index_type: hurray::ElementType::Int64,
            canonical: true
        }
    );
    assert_eq!(
        layout_of(&file, "small"),
        Layout::Coo {
            nnz: 2,
            index_type: hurray::ElementType::Int32,
            canonical: false
        }
    );
    let loaded = Graph::load(&file).unwrap();
    assert_eq!(loaded, g);
    // Zero-copy: the coordinates and values are the file's bytes.
    let range = file.bytes().unwrap().as_ptr_range();
    assert!(range.contains(&loaded.edges.indices.as_ptr().cast()));
    assert!(range.contains(&loaded.edges.values.as_ptr().cast()));
    assert!(matches!(
        loaded.small.indices,
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn a_false_canonical_claim_never_reaches_a_file() {
    // The value says canonical but its rows are not sorted: the flag is
    // recomputed on save, so the file is honest.
    let mut g = Graph {
        edges: Coo::new(vec![2, 2, 2], vec![1i64, 1, 1, 0, 0, 0], vec![1.0f32, 2.0]),
        small: Coo::new(vec![1, 4], Vec::<i32>::new(), Vec::<i8>::new()),
        empty: None,
    };
    g.edges.canonical = true;
    let (bytes, _) = file_of(&g);
    let file = File::from_bytes(&bytes).unwrap();
    assert!(matches!(
        layout_of(&file, "edges"),
        Layout::Coo {
            canonical: false,
            ..
        }
    ));
    assert!(!Graph::load(&file).unwrap().edges.canonical);
}

#[test]
fn out_of_range_coordinates_are_refused_on_save_and_on_load() {
    let g = Graph {
        edges: Coo::new(vec![2, 2, 2], vec![0i64, 0, 2], vec![1.0f32]),
        small: Coo::new(vec![1, 4], Vec::<i32>::new(), Vec::<i8>::new()),
        empty: None,
    };
    let e = g.write_to(Vec::new()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidSparseIndex { ref tensor, position: 2, value: 2, .. } if tensor == "edges"),
        "{e}"
    );
}

#[test]
fn declared_shapes_and_index_types_are_checked_on_load() {
    #[derive(Tensors, Debug)]
    struct Wide<'a> {
        #[hurray(shape = [?, 5])]
        small: Coo<'a, i8, i32>,
    }
    #[derive(Tensors, Debug)]
    struct Narrow<'a> {
        small: Coo<'a, i8, i64>,
    }
    let g = Graph {
        edges: Coo::new(vec![1, 1, 1], vec![0i64, 0, 0], vec![1.0f32]),
        small: Coo::new(vec![5, 4], vec![3i32, 1], vec![7i8]),
        empty: None,
    };
    let (bytes, _) = file_of(&g);
    let file = File::from_bytes(&bytes).unwrap();
    let e = Wide::load(&file).unwrap_err();
    assert!(
        matches!(e, Error::InvalidField { ref field, .. } if field == "shape[1]"),
        "{e}"
    );
    let e = Narrow::load(&file).unwrap_err();
    assert!(
        matches!(e, Error::TypeMismatch { ref tensor, .. } if tensor == "small"),
        "{e}"
    );
}

fn coo_strategy() -> impl Strategy<Value = (Vec<u64>, Vec<i64>, Vec<f32>)> {
    prop::collection::vec(1u64..5, 1..4).prop_flat_map(|shape| {
        let rank = shape.len();
        let coordinate = shape
            .iter()
            .map(|&d| (0..d as i64).boxed())
            .collect::<Vec<_>>();
        let rows = prop::collection::vec(coordinate, 0..12);
        (Just(shape), rows).prop_map(move |(shape, mut rows)| {
            // Duplicates are allowed (not canonical), but no more stored
            // elements than the shape holds: the format's rule.
            rows.truncate(shape.iter().product::<u64>() as usize);
            let indices: Vec<i64> = rows.iter().flatten().copied().collect();
            let values: Vec<f32> = (0..rows.len()).map(|i| i as f32 * 0.5 - 1.0).collect();
            debug_assert_eq!(indices.len(), rows.len() * rank);
            (shape, indices, values)
        })
    })
}

proptest! {
    #[test]
    fn any_coo_round_trips_with_an_honest_flag((shape, indices, values) in coo_strategy()) {
        let rank = shape.len();
        let rows: Vec<&[i64]> = indices.chunks(rank).collect();
        let sorted_unique = rows.windows(2).all(|w| w[0] < w[1]);
        let g = Graph {
            edges: Coo::new(shape.clone(), indices.clone(), values.clone()),
            small: Coo::new(vec![1, 4], Vec::<i32>::new(), Vec::<i8>::new()),
            empty: None,
        };
        prop_assert_eq!(g.edges.canonical, sorted_unique);
        let (bytes, _) = file_of(&g);
        let file = File::from_bytes(&bytes).unwrap();
        let loaded = Graph::load(&file).unwrap();
        prop_assert_eq!(&loaded.edges.shape, &shape);
        prop_assert_eq!(&*loaded.edges.indices, &indices[..]);
        prop_assert_eq!(&*loaded.edges.values, &values[..]);
        prop_assert_eq!(loaded.edges.canonical, sorted_unique);
    }
}
