//! Files written by released versions of the format still read, with the
//! same descriptors and bytes (docs/spec/schema-evolution.md).

use hurray::{Dim, ElementType, File, Layout};
use std::path::Path;

fn golden(version: &str, name: &str) -> File {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden")
        .join(version)
        .join(name);
    File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn v1_0_example_reads_with_current_code() {
    check_example(&golden("v1.0", "example.hurray"), (1, 0));
}

#[test]
fn v1_1_example_reads_with_current_code() {
    check_example(&golden("v1.1", "example.hurray"), (1, 1));
}

/// Both releases wrote the same example tensors; 1.1 adds the name index.
fn check_example(file: &File, version: (u16, u16)) {
    assert_eq!(file.reader().version(), version);
    let names: Vec<_> = file.tensors().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "dense.weight",
            "empty.slice",
            "packed.int4",
            "signature.input",
            "sparse.csr_empty"
        ]
    );
    let w = file.tensor("dense.weight").unwrap();
    let want: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    assert_eq!(w.as_slice::<f32>().unwrap(), &want[..]);
    let e = file.tensor("empty.slice").unwrap();
    assert_eq!(e.dims(), vec![Dim::Fixed(3), Dim::Fixed(0), Dim::Fixed(5)]);
    assert_eq!(e.data().unwrap().len(), 0);
    let p: Vec<i16> = file
        .tensor("packed.int4")
        .unwrap()
        .packed()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(p, vec![1, 2, 3, -1, -8]);
    let s = file.tensor("signature.input").unwrap();
    assert!(s.is_descriptor_only());
    assert_eq!(s.dims(), vec![Dim::Dynamic, Dim::Fixed(784)]);
    let c = file.tensor("sparse.csr_empty").unwrap();
    assert_eq!(
        c.layout(),
        Layout::Csr {
            nnz: 0,
            index_type: ElementType::Int64
        }
    );
    assert_eq!(c.csr().unwrap().nnz, 0);
    assert_eq!(
        file.reader().metadata().collect::<Vec<_>>(),
        vec![("producer", "hurray example")]
    );
}
