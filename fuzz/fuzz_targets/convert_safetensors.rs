//! Any bytes as a `.safetensors` input of `hurray convert`: parsed and every tensor
//! streamed in canonical form, with every check a conversion makes (MXFP4
//! pairs and bitsandbytes 4-bit weights folded). It must never panic, and
//! what it accepts streams exactly its declared length. The same bytes are
//! also folded as compressed-tensors layers under a config of 4- and 8-bit
//! groups targeting every layer, and, split at their first NUL byte, as a
//! `config.json` and the weights beside it.
#![no_main]

use libfuzzer_sys::fuzz_target;

const CONFIG: &str = r#"{"quantization_config": {"quant_method": "compressed-tensors",
  "format": "pack-quantized", "config_groups": {
  "a": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}},
  "b": {"targets": ["re:.*8$"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}}}"#;

fuzz_target!(|data: &[u8]| {
    let _ = hurray_cli::convert::read_all("safetensors", data);
    let _ = hurray_cli::convert::fold_compressed_tensors(CONFIG, data);
    let _ = hurray_cli::convert::fold_compressed_tensors_split(data);
});
