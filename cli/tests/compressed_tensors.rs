//! compressed-tensors' pack-quantized layers through `hurray convert`, on a
//! checkpoint compressed by the `compressed-tensors` library itself
//! (`fixtures/compressed_tensors/make_fixture.py`: int4 symmetric and
//! asymmetric per group of 32, int8 per channel, int4 asymmetric per channel
//! with padded rows): each layer's `weight_packed` / `weight_scale` /
//! `weight_shape` / `weight_zero_point` become one typed tensor whose values,
//! rounded to the layer's bf16 as the library rounds them, equal the
//! library's own decompression bit for bit; converting back writes the same
//! file.

mod common;

use common::{convert, convert_err};
use hurray::{ElementType, File, QuantizationScheme};
use safetensors::SafeTensors;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compressed_tensors")
}

#[test]
fn layers_fold_dequantize_as_the_library_does_and_unfold_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.hurray");
    convert(&fixtures().join("model.safetensors"), &out);
    let file = File::open(&out).unwrap();
    let expected = std::fs::read(fixtures().join("expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&expected).unwrap();
    let layers = [
        ("sym4_g32", ElementType::UInt4, [48, 128], Some(32)),
        ("asym4_g32", ElementType::UInt4, [36, 128], Some(32)),
        ("sym8_ch", ElementType::UInt8, [24, 64], None),
        ("asym4_ch", ElementType::UInt4, [20, 44], None),
    ];
    assert_eq!(file.len(), layers.len());
    for (layer, codes, shape, group) in layers {
        let name = format!("layers.{layer}.weight");
        let t = file.tensor(&name).unwrap();
        assert_eq!(
            (t.element_type(), t.shape().to_wire()),
            (codes, shape.to_vec()),
            "{name}"
        );
        let q = t.quantization().unwrap();
        let scheme = match group {
            Some(block_size) => QuantizationScheme::PerBlock {
                axis: 1,
                block_size,
            },
            None => QuantizationScheme::PerAxis { axis: 0 },
        };
        assert_eq!(q.scheme, scheme, "{name}");
        assert_eq!(
            (q.expressed_type, q.zero_point_type),
            (ElementType::BFloat16, Some(codes))
        );
        let got = t.quantized().unwrap().dequantize();
        let want = expected.tensor(&name).unwrap();
        let want: Vec<f32> = want
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            // The library multiplies in bf16: one rounding of the exact product.
            let g = half::bf16::from_f32(*g).to_f32();
            assert_eq!(g.to_bits(), w.to_bits(), "{name}[{i}]: {g} != {w}");
        }
    }
    let back = dir.path().join("back.safetensors");
    convert(&out, &back);
    assert_eq!(
        std::fs::read(back).unwrap(),
        std::fs::read(fixtures().join("model.safetensors")).unwrap()
    );
}

#[test]
fn a_layer_no_config_group_fits_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures().join("model.safetensors"),
        dir.path().join("model.safetensors"),
    )
    .unwrap();
    // The config says the int8 layer has 4 bits: its 16 words per row of 64
    // columns no longer fit, so the layer is refused, not misread.
    let config = std::fs::read_to_string(fixtures().join("config.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&config).unwrap();
    json["quantization_config"]["config_groups"]["group_2"]["weights"]["num_bits"] = 4.into();
    std::fs::write(dir.path().join("config.json"), json.to_string()).unwrap();
    let out = dir.path().join("out.hurray");
    let err = convert_err(&dir.path().join("model.safetensors"), &out);
    assert!(
        err.contains("layers.sym8_ch") && err.contains("no pack-quantized config group fits"),
        "{err}"
    );
    assert!(!out.exists());
    // Without a config, the entries stay as they are: plain tensors.
    std::fs::remove_file(dir.path().join("config.json")).unwrap();
    convert(&dir.path().join("model.safetensors"), &out);
    let file = File::open(&out).unwrap();
    assert!(file.tensor("layers.sym8_ch.weight_packed").is_ok());
}
