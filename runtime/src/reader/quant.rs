//! A verified header's quantization table, read three ways: as the fields
//! the rules check ([`params`]), as an owned [`Quantization`]
//! ([`descriptor`]), and buffer by buffer ([`buffer`]).

use crate::ElementType;
use crate::block_format::BlockFormat;
use crate::buffer::BufferRole;
use crate::generated::fb;
use crate::quantization::{LevelParams, QuantParams, Quantization, QuantizationScheme};

/// The fields the rules (`validate::plan`) check.
pub(crate) fn params(q: &fb::Quantization<'_>) -> QuantParams {
    QuantParams {
        scheme: q.scheme().0,
        expressed_type: q.expressed_type().0,
        scale_type: q.scale_type().0,
        zero_point_type: q.zero_point_type().0,
        axis: q.axis(),
        block_size: q.block_size(),
        tensor_scale: q.tensor_scale(),
        offset_type: q.offset_type().0,
        code_table_type: q.code_table_type().0,
        tensor_offset: q.tensor_offset(),
        group_index_type: q.group_index_type().0,
        block_format: q.block_format().0,
        scale_level: q.scale_quantization().map(|l| level(&l)),
        offset_level: q.offset_quantization().map(|l| level(&l)),
    }
}

/// A second level's fields, and the first it may not have.
fn level(q: &fb::Quantization<'_>) -> LevelParams {
    let forbidden = [
        ("zero_point_type", q.zero_point_type().0 != 0),
        (
            "zero_points",
            q.zero_points().is_some_and(|b| b.length() > 0),
        ),
        ("offset_type", q.offset_type().0 != 0),
        ("offsets", q.offsets().is_some_and(|b| b.length() > 0)),
        ("scale_quantization", q.scale_quantization().is_some()),
        ("offset_quantization", q.offset_quantization().is_some()),
        ("group_index_type", q.group_index_type().0 != 0),
        (
            "group_index",
            q.group_index().is_some_and(|b| b.length() > 0),
        ),
        ("block_format", q.block_format().0 != 0),
    ]
    .into_iter()
    .find_map(|(field, set)| set.then_some(field));
    LevelParams {
        scheme: q.scheme().0,
        axis: q.axis(),
        block_size: q.block_size(),
        expressed_type: q.expressed_type().0,
        scale_type: q.scale_type().0,
        code_table_type: q.code_table_type().0,
        tensor_scale: q.tensor_scale(),
        tensor_offset: q.tensor_offset(),
        forbidden,
    }
}

/// The owned descriptor of a verified quantization.
pub(crate) fn descriptor(q: &fb::Quantization<'_>) -> Quantization {
    let scheme = match q.scheme() {
        fb::QuantizationScheme::PerTensor => QuantizationScheme::PerTensor,
        fb::QuantizationScheme::PerAxis => QuantizationScheme::PerAxis { axis: q.axis() },
        fb::QuantizationScheme::PerFlatBlock => QuantizationScheme::PerFlatBlock {
            block_size: q.block_size(),
        },
        _ => QuantizationScheme::PerBlock {
            axis: q.axis(),
            block_size: q.block_size(),
        },
    };
    let known = |v: fb::ElementType| ElementType::from_wire(v.0);
    Quantization {
        scheme,
        expressed_type: known(q.expressed_type()).unwrap_or(ElementType::Float32),
        scale_type: known(q.scale_type()).unwrap_or(ElementType::Float32),
        zero_point_type: known(q.zero_point_type()),
        storage_min: q.storage_min(),
        storage_max: q.storage_max(),
        tensor_scale: q.tensor_scale(),
        offset_type: known(q.offset_type()),
        code_table_type: known(q.code_table_type()),
        scale_quantization: q.scale_quantization().map(|l| Box::new(descriptor(&l))),
        offset_quantization: q.offset_quantization().map(|l| Box::new(descriptor(&l))),
        tensor_offset: q.tensor_offset(),
        group_index_type: known(q.group_index_type()),
        block_format: BlockFormat::from_wire(q.block_format().0),
    }
}

/// Where the header records the quantization buffer of `role`; `None` when
/// the field is absent (or `role` is a layout role). Whether the tensor
/// has such a buffer at all is its plan's to say.
pub(crate) fn buffer<'a>(q: &fb::Quantization<'a>, role: BufferRole) -> Option<&'a fb::Buffer> {
    match role {
        BufferRole::Scales => q.scales(),
        BufferRole::ZeroPoints => q.zero_points(),
        BufferRole::Offsets => q.offsets(),
        BufferRole::CodeTable => q.code_table(),
        BufferRole::GroupIndex => q.group_index(),
        BufferRole::ScaleScales => q.scale_quantization()?.scales(),
        BufferRole::ScaleCodeTable => q.scale_quantization()?.code_table(),
        BufferRole::OffsetScales => q.offset_quantization()?.scales(),
        BufferRole::OffsetCodeTable => q.offset_quantization()?.code_table(),
        BufferRole::Pointers | BufferRole::Indices | BufferRole::Values => None,
    }
}
