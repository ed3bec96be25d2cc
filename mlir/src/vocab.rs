//! The `hurray` dialect's vocabulary: its op names and the names of their
//! attributes, spelled once for the lowering (which reads them) and the
//! import (which writes them). The dialect itself is generated from the
//! schema (`gen/hurray.irdl.mlir`); a test holds these names to it.

/// `hurray.file`: the file-wide attributes.
pub(crate) const FILE_OP: &str = "hurray.file";
/// `hurray.tensor`: one tensor, its descriptor in attributes.
pub(crate) const TENSOR_OP: &str = "hurray.tensor";

// Attributes of `hurray.file` and `hurray.tensor`.
pub(crate) const ALIGNMENT: &str = "alignment";
pub(crate) const METADATA: &str = "metadata";
pub(crate) const NAME: &str = "name";
pub(crate) const ELEMENT_TYPE: &str = "element_type";
pub(crate) const SHAPE: &str = "shape";
pub(crate) const LAYOUT: &str = "layout";
pub(crate) const PARAMS: &str = "params";
pub(crate) const QUANTIZATION: &str = "quantization";
pub(crate) const BUFFERS: &str = "buffers";

// Keys of a tensor's `params` dictionary.
pub(crate) const STRIDES: &str = "strides";
pub(crate) const NNZ: &str = "nnz";
pub(crate) const INDEX_TYPE: &str = "index_type";
pub(crate) const CANONICAL: &str = "canonical";
pub(crate) const DESCRIPTOR_ONLY: &str = "descriptor_only";

// Keys of a tensor's `quantization` dictionary.
pub(crate) const SCHEME: &str = "scheme";
pub(crate) const AXIS: &str = "axis";
pub(crate) const BLOCK_SIZE: &str = "block_size";
pub(crate) const EXPRESSED_TYPE: &str = "expressed_type";
pub(crate) const SCALE_TYPE: &str = "scale_type";
pub(crate) const ZERO_POINT_TYPE: &str = "zero_point_type";
pub(crate) const STORAGE_MIN: &str = "storage_min";
pub(crate) const STORAGE_MAX: &str = "storage_max";
/// Format 1.2: the factor every element is multiplied by (absent when 1.0).
pub(crate) const TENSOR_SCALE: &str = "tensor_scale";
/// Format 1.2: the type of the additive offsets (absent when there are none).
pub(crate) const OFFSET_TYPE: &str = "offset_type";

#[cfg(test)]
mod tests {
    use super::*;

    /// The attributes the generated dialect declares for `op`, in order.
    fn declared(op: &str) -> Vec<String> {
        let irdl = crate::HURRAY_IRDL;
        let start = irdl
            .find(&format!("irdl.operation @{op} {{"))
            .unwrap_or_else(|| panic!("no operation {op} in the dialect"));
        let line = irdl[start..]
            .lines()
            .find(|l| l.trim_start().starts_with("irdl.attributes"))
            .expect("the operation declares attributes");
        line.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn op_and_attribute_names_are_the_dialects() {
        assert_eq!(FILE_OP.strip_prefix("hurray."), Some("file"));
        assert_eq!(TENSOR_OP.strip_prefix("hurray."), Some("tensor"));
        assert_eq!(declared("file"), [ALIGNMENT, METADATA]);
        assert_eq!(
            declared("tensor"),
            [
                NAME,
                ELEMENT_TYPE,
                SHAPE,
                LAYOUT,
                PARAMS,
                QUANTIZATION,
                BUFFERS,
                METADATA
            ]
        );
    }
}
