//! compressed-tensors' pack-quantized layers through `hurray convert`, on a
//! checkpoint compressed by the `compressed-tensors` library itself
//! (`fixtures/compressed_tensors/make_fixture.py`: int4 symmetric and
//! asymmetric per group of 32, int8 per channel, int4 asymmetric per channel
//! with padded rows): each layer's `weight_packed` / `weight_scale` /
//! `weight_shape` / `weight_zero_point` become one typed tensor whose values,
//! rounded to the layer's bf16 as the library rounds them, equal the
//! library's own decompression bit for bit; converting back writes the same
//! file. The same for the unpacked formats (`fixtures/compressed_tensors/
//! unpacked/make_fixture.py`: int-quantized W8A8 per channel,
//! naive-quantized asymmetric int8 per group of 32, float-quantized FP8 per
//! channel and per tensor).

mod common;

use common::{convert, convert_err};
use hurray::{ElementType, File, descriptor::QuantizationScheme};
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
        // The library multiplies in bf16: one rounding of the exact product.
        assert_library_values(&file, &expected, &name);
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

/// The fixture's directory with its config's `group_0` (the 128-column
/// int4 layer, 4 scales a row) given `group_size`.
fn with_group_size(dir: &Path, group_size: u64) -> PathBuf {
    let input = dir.join("model.safetensors");
    std::fs::copy(fixtures().join("model.safetensors"), &input).unwrap();
    let config = std::fs::read_to_string(fixtures().join("config.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&config).unwrap();
    json["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] =
        group_size.into();
    std::fs::write(dir.join("config.json"), json.to_string()).unwrap();
    input
}

#[test]
fn the_group_size_is_the_configs_never_one_guessed_from_the_scales() {
    let dir = tempfile::tempdir().unwrap();
    // 128 columns in groups of 40 have 4 scales a row, as groups of 32
    // would: the config decides, and the layer is grouped by 40.
    let input = with_group_size(dir.path(), 40);
    let out = dir.path().join("out.hurray");
    convert(&input, &out);
    let file = File::open(&out).unwrap();
    let q = file
        .tensor("layers.sym4_g32.weight")
        .unwrap()
        .quantization()
        .unwrap();
    assert_eq!(
        q.scheme,
        QuantizationScheme::PerBlock {
            axis: 1,
            block_size: 40
        }
    );
    // Groups of 64 would make 2 scales a row, and the layer has 4: refused.
    let input = with_group_size(dir.path(), 64);
    std::fs::remove_file(&out).unwrap();
    let err = convert_err(&input, &out);
    assert!(
        err.contains("layers.sym4_g32") && err.contains("4 scales a row for 128 columns"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn an_edited_zero_point_record_is_refused_on_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.hurray");
    convert(&fixtures().join("model.safetensors"), &out);
    // The record of whether a layer stored zero points is what unfolds it
    // byte for byte; one no writer makes (same length, so the header stays
    // well-formed) is refused by name, and nothing is written.
    let bytes = std::fs::read(&out).unwrap();
    let at = bytes
        .windows(4)
        .position(|w| w == b"none")
        .expect("a symmetric layer's record");
    let mut edited = bytes.clone();
    edited[at..at + 4].copy_from_slice(b"nope");
    let edited_path = dir.path().join("edited.hurray");
    std::fs::write(&edited_path, edited).unwrap();
    let back = dir.path().join("back.safetensors");
    let err = convert_err(&edited_path, &back);
    assert!(
        err.contains("compressed_tensors.zero_point") && err.contains("\"nope\""),
        "{err}"
    );
    assert!(!back.exists());
}

/// Every value of `file`'s tensor `name`, dequantized and rounded to bf16,
/// against the library's decompression in `expected`.
fn assert_library_values(file: &File, expected: &SafeTensors<'_>, name: &str) {
    let got = file.tensor(name).unwrap().quantized().unwrap().dequantize();
    let want: Vec<f32> = expected
        .tensor(name)
        .unwrap()
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got.len(), want.len(), "{name}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let g = half::bf16::from_f32(*g).to_f32();
        assert_eq!(g.to_bits(), w.to_bits(), "{name}[{i}]: {g} != {w}");
    }
}

#[test]
fn unpacked_int8_and_fp8_layers_fold_dequantize_as_the_library_does_and_unfold() {
    let fixtures = fixtures().join("unpacked");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.hurray");
    convert(&fixtures.join("model.safetensors"), &out);
    let file = File::open(&out).unwrap();
    let expected = std::fs::read(fixtures.join("expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&expected).unwrap();
    let layers = [
        (
            "int8_ch",
            ElementType::Int8,
            QuantizationScheme::PerAxis { axis: 0 },
            false,
        ),
        (
            "int8_g32",
            ElementType::Int8,
            QuantizationScheme::PerBlock {
                axis: 1,
                block_size: 32,
            },
            true,
        ),
        (
            "fp8_ch",
            ElementType::Float8E4M3FN,
            QuantizationScheme::PerAxis { axis: 0 },
            false,
        ),
        (
            "fp8_tensor",
            ElementType::Float8E4M3FN,
            QuantizationScheme::PerTensor,
            false,
        ),
    ];
    assert_eq!(file.len(), layers.len(), "one tensor a layer");
    for (layer, codes, scheme, zero_points) in layers {
        let name = format!("layers.{layer}.weight");
        let t = file.tensor(&name).unwrap();
        let q = t.quantization().unwrap();
        assert_eq!(
            (
                t.element_type(),
                q.scheme,
                q.expressed_type,
                q.zero_point_type
            ),
            (
                codes,
                scheme,
                ElementType::BFloat16,
                zero_points.then_some(ElementType::Int8)
            ),
            "{name}"
        );
        assert_library_values(&file, &expected, &name);
    }
    let back = dir.path().join("back.safetensors");
    convert(&out, &back);
    assert_eq!(
        std::fs::read(back).unwrap(),
        std::fs::read(fixtures.join("model.safetensors")).unwrap()
    );
}

#[test]
fn a_strategy_with_no_hurray_form_is_carried_as_saved_with_a_warning() {
    // FP8 per 2-D block (as DeepSeek-V3 and Qwen3's FP8 checkpoints are
    // saved) has no one-axis Hurray scheme: that layer stays as its saved
    // entries, the others fold, and the file converts back as it was.
    let fixtures = fixtures().join("unpacked");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    std::fs::copy(fixtures.join("model.safetensors"), &input).unwrap();
    let config = std::fs::read_to_string(fixtures.join("config.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&config).unwrap();
    let weights = &mut json["quantization_config"]["config_groups"]["group_3"]["weights"];
    weights["strategy"] = "block".into();
    weights["block_structure"] = serde_json::json!([128, 128]);
    std::fs::write(dir.path().join("config.json"), json.to_string()).unwrap();
    convert_carrying(
        &input,
        &["group_3", "\"block\"", "carried"],
        "layers.fp8_tensor",
        "layers.fp8_tensor.weight_scale",
        "layers.fp8_ch",
    );
}

#[test]
fn a_layer_with_an_entry_its_format_does_not_name_is_carried() {
    // `layers.int8_ch.weight_global_scale` is no part of an int-quantized
    // layer: folding would leave it behind, meaning nothing. The layer stays
    // as saved, with a warning; the others fold.
    let fixtures = fixtures().join("unpacked");
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixtures.join("model.safetensors")).unwrap();
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let extra = 2.0f32.to_le_bytes();
    let mut tensors: Vec<(String, safetensors::tensor::TensorView<'_>)> = file.tensors();
    tensors.push((
        "layers.int8_ch.weight_global_scale".to_owned(),
        safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![1], &extra).unwrap(),
    ));
    let input = dir.path().join("model.safetensors");
    let metadata = Some(std::collections::HashMap::from([(
        "format".to_owned(),
        "pt".to_owned(),
    )]));
    safetensors::serialize_to_file(tensors, metadata, &input).unwrap();
    std::fs::copy(fixtures.join("config.json"), dir.path().join("config.json")).unwrap();
    convert_carrying(
        &input,
        &["weight_global_scale", "carried"],
        "layers.int8_ch",
        "layers.int8_ch.weight_global_scale",
        "layers.int8_g32",
    );
}

/// Converts `input` (beside its config) to Hurray, which must warn with
/// every one of `warned`: layer `carried` stays as saved (its weight not
/// quantized, its entry `kept` beside it), layer `folded` folds, and the
/// file converts back to the same bytes.
fn convert_carrying(input: &Path, warned: &[&str], carried: &str, kept: &str, folded: &str) {
    let out = input.with_file_name("model.hurray");
    let run = common::hurray(&[Path::new("convert"), input, &out]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(warned.iter().all(|w| stderr.contains(w)), "{stderr}");
    let file = File::open(&out).unwrap();
    let weight = |layer: &str| file.tensor(&format!("{layer}.weight")).unwrap();
    assert!(weight(carried).quantization().is_none());
    assert!(file.tensor(kept).is_ok());
    assert!(weight(folded).quantization().is_some());
    let back = input.with_file_name("back.safetensors");
    convert(&out, &back);
    assert_eq!(std::fs::read(back).unwrap(), std::fs::read(input).unwrap());
}
