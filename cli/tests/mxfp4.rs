//! transformers' MXFP4 convention through `hurray convert`, on a file saved
//! by `safetensors.torch` (`fixtures/mxfp4/make_fixtures.py`): each
//! `W_blocks` / `W_scales` pair becomes one `f4e2m1fn` tensor with E8M0 block
//! scales that dequantizes exactly as transformers dequantizes the pair, the
//! other tensors pass through, and converting back gives the same tensors
//! and metadata, byte for byte.

mod common;

use common::convert;
use hurray::{
    ElementType, File,
    descriptor::{BufferRole, QuantizationScheme},
};
use safetensors::SafeTensors;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mxfp4")
}

const WEIGHTS: [(&str, &[u64]); 2] = [
    ("model.layers.0.mlp.experts.gate_up_proj", &[2, 3, 128]),
    ("model.layers.0.mlp.experts.down_proj", &[2, 5, 32]),
];

#[test]
fn an_mxfp4_pair_is_one_tensor_that_dequantizes_as_transformers_does() {
    let dir = tempfile::tempdir().unwrap();
    let hurray_path = dir.path().join("model.hurray");
    convert(&fixtures().join("pair.safetensors"), &hurray_path);
    let expected_path = dir.path().join("expected.hurray");
    convert(&fixtures().join("pair.expected.npz"), &expected_path);
    let file = File::open(&hurray_path).unwrap();
    let expected = File::open(&expected_path).unwrap();
    let original = std::fs::read(fixtures().join("pair.safetensors")).unwrap();
    let original = SafeTensors::deserialize(&original).unwrap();

    for (name, shape) in WEIGHTS {
        let t = file.tensor(name).unwrap();
        assert_eq!(t.element_type(), ElementType::Float4E2M1FN, "{name}");
        assert_eq!(t.shape().to_wire(), shape, "{name}");
        let q = t.quantization().unwrap();
        assert_eq!(
            q.scheme,
            QuantizationScheme::PerBlock {
                axis: 2,
                block_size: 32
            }
        );
        assert_eq!(q.scale_type, ElementType::Float8E8M0FNU);
        // No bit moved: the values are the blocks' bytes, the scales the scales'.
        let blocks = original.tensor(&format!("{name}_blocks")).unwrap();
        let scales = original.tensor(&format!("{name}_scales")).unwrap();
        assert_eq!(t.data().unwrap(), blocks.data(), "{name} values");
        assert_eq!(t.buffer(BufferRole::Scales).unwrap(), scales.data());
        let got = t.quantized().unwrap().dequantize();
        let want = expected.tensor(name).unwrap();
        let want = want.as_slice::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{name}[{i}]: {g} != {w}");
        }
        assert!(file.get(&format!("{name}_blocks")).is_none());
    }
    for plain in [
        "model.layers.0.mlp.experts.gate_up_proj_bias",
        "model.embed_tokens.weight",
        "lonely_blocks",
    ] {
        let t = file.tensor(plain).unwrap();
        assert!(t.quantization().is_none(), "{plain}");
        assert_eq!(t.data().unwrap(), original.tensor(plain).unwrap().data());
    }
    assert_eq!(file.len(), 5);
}

#[test]
fn converting_back_gives_the_same_tensors_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let hurray_path = dir.path().join("model.hurray");
    let back_path = dir.path().join("back.safetensors");
    convert(&fixtures().join("pair.safetensors"), &hurray_path);
    convert(&hurray_path, &back_path);
    let original_bytes = std::fs::read(fixtures().join("pair.safetensors")).unwrap();
    let back_bytes = std::fs::read(&back_path).unwrap();
    let original = SafeTensors::deserialize(&original_bytes).unwrap();
    let back = SafeTensors::deserialize(&back_bytes).unwrap();
    let mut names = original.names();
    names.sort();
    let mut back_names = back.names();
    back_names.sort();
    assert_eq!(names, back_names);
    for name in names {
        let (a, b) = (original.tensor(name).unwrap(), back.tensor(name).unwrap());
        assert_eq!(a.dtype(), b.dtype(), "{name}");
        assert_eq!(a.shape(), b.shape(), "{name}");
        assert_eq!(a.data(), b.data(), "{name}");
    }
    let metadata = |bytes: &[u8]| {
        SafeTensors::read_metadata(bytes)
            .unwrap()
            .1
            .metadata()
            .clone()
    };
    assert_eq!(metadata(&original_bytes), metadata(&back_bytes));
}

#[test]
fn an_unfolded_name_that_exists_already_is_refused_before_writing() {
    use hurray::{Quantization, TensorDescriptor, Writer, shape};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("collide.hurray");
    let mut w = Writer::create(&path).unwrap();
    let q = Quantization::new(
        QuantizationScheme::PerBlock {
            axis: 0,
            block_size: 32,
        },
        ElementType::BFloat16,
        ElementType::Float8E8M0FNU,
    );
    let mx =
        TensorDescriptor::new("w", ElementType::Float4E2M1FN, shape(&[32])).with_quantization(q);
    w.add_tensor(&mx, &[&[0x21; 16], &[127], &[]]).unwrap();
    let plain = TensorDescriptor::new("w_blocks", ElementType::UInt8, shape(&[2]));
    w.add_tensor(&plain, &[&[1, 2]]).unwrap();
    w.finish().unwrap();
    for out in ["collide.safetensors", "collide.npz"] {
        let err = common::convert_err(&path, &dir.path().join(out));
        assert!(
            err.contains("\"w_blocks\" would be written twice"),
            "{out}: {err}"
        );
    }
}
