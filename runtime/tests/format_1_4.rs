//! Format 1.4's group index is data, not structure: the verifier checks its
//! length at open, and every entry is checked when a quantized view is made,
//! before any value is computed with it. An entry naming no block of the
//! axis is a typed error naming the tensor, the entry and its value.

use hurray::pack::pack_codes;
use hurray::{
    ElementType, Error, File, Quantization, TensorDescriptor, Writer,
    descriptor::QuantizationScheme,
};

/// GPTQ's activation order: u4 codes [2, 8] in blocks of 4 along axis 1
/// (two groups a row), f32 scales [2, 2], column `c` in group `g_idx[c]`.
fn gptq(g_idx: [i32; 8]) -> Vec<u8> {
    let mut q = Quantization::new(
        QuantizationScheme::PerBlock {
            axis: 1,
            block_size: 4,
        },
        ElementType::Float32,
        ElementType::Float32,
    );
    q.group_index_type = Some(ElementType::Int32);
    let d = TensorDescriptor::new("gptq", ElementType::UInt4, hurray::shape(&[2, 8]))
        .with_quantization(q);
    let codes = pack_codes((0..16u8).map(|i| i % 16), 4);
    let scales: Vec<u8> = [1.0f32, 2.0, 4.0, 8.0]
        .iter()
        .flat_map(|s| s.to_le_bytes())
        .collect();
    let g_idx: Vec<u8> = g_idx.iter().flat_map(|g| g.to_le_bytes()).collect();
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.add_tensor(&d, &[&codes, &scales, &[], &g_idx]).unwrap();
    w.finish().unwrap();
    out
}

#[test]
fn a_group_index_picks_each_columns_scale() {
    let bytes = gptq([1, 0, 1, 0, 0, 1, 1, 0]);
    let file = File::from_bytes(&bytes).unwrap();
    let values = file
        .tensor("gptq")
        .unwrap()
        .quantized()
        .unwrap()
        .dequantize();
    let want: Vec<f32> = (0..16u8)
        .map(|i| {
            let (row, col) = (usize::from(i / 8), usize::from(i % 8));
            let group = [1, 0, 1, 0, 0, 1, 1, 0][col];
            f32::from(i) * [1.0, 2.0, 4.0, 8.0][row * 2 + group]
        })
        .collect();
    assert_eq!(values, want);
}

#[test]
fn a_group_index_entry_naming_no_block_is_refused_before_use() {
    for (at, bad) in [(5, 2), (0, -1), (7, i32::MAX)] {
        let mut g_idx = [0, 1, 0, 1, 0, 1, 0, 1];
        g_idx[at] = bad;
        let bytes = gptq(g_idx);
        // Opening checks structure; the entries are data.
        let file = File::from_bytes(&bytes).unwrap();
        let t = file.tensor("gptq").unwrap();
        match t.quantized().map(|_| ()) {
            Err(Error::InvalidField {
                tensor,
                field,
                value,
                ..
            }) => {
                assert_eq!(tensor, "gptq");
                assert_eq!(field, format!("group_index[{at}]"));
                assert_eq!(value, bad.to_string());
            }
            other => panic!("g_idx[{at}] = {bad}: {other:?}"),
        }
    }
}
