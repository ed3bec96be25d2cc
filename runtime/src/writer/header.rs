//! The header a finished writer builds: every written tensor's table and
//! the file's metadata, as FlatBuffers.

use super::Written;
use crate::ElementType;
use crate::block_format::BlockFormat;
use crate::buffer::BufferRole;
use crate::descriptor::Layout;
use crate::generated::fb;
use crate::quantization::{Quantization, QuantizationScheme};
use flatbuffers::{FlatBufferBuilder, WIPOffset};
use std::collections::BTreeMap;

pub(super) fn build_metadata<'b>(
    fbb: &mut flatbuffers::FlatBufferBuilder<'b>,
    m: &BTreeMap<String, String>,
) -> Option<
    flatbuffers::WIPOffset<flatbuffers::Vector<'b, flatbuffers::ForwardsUOffset<fb::KeyValue<'b>>>>,
> {
    if m.is_empty() {
        return None;
    }
    let entries: Vec<_> = m
        .iter()
        .map(|(k, v)| {
            let key = fbb.create_string(k);
            let value = fbb.create_string(v);
            fb::KeyValue::create(
                fbb,
                &fb::KeyValueArgs {
                    key: Some(key),
                    value: Some(value),
                },
            )
        })
        .collect();
    Some(fbb.create_vector(&entries))
}

pub(super) fn build_tensor<'b>(
    fbb: &mut flatbuffers::FlatBufferBuilder<'b>,
    w: &Written,
) -> flatbuffers::WIPOffset<fb::Tensor<'b>> {
    let d = &w.desc;
    let name = fbb.create_string(&d.name);
    let shape = fbb.create_vector(&d.wire_shape());
    let (layout_type, layout) = match &d.layout {
        Layout::Dense => (fb::Layout::NONE, None),
        Layout::Strided(s) => {
            let strides = fbb.create_vector(s);
            let t = fb::Dense::create(
                fbb,
                &fb::DenseArgs {
                    strides: Some(strides),
                },
            );
            (fb::Layout::Dense, Some(t.as_union_value()))
        }
        Layout::Coo {
            nnz,
            index_type,
            canonical,
        } => {
            let t = fb::Coo::create(
                fbb,
                &fb::CooArgs {
                    nnz: *nnz,
                    index_type: fb::ElementType(index_type.to_wire()),
                    canonical: *canonical,
                },
            );
            (fb::Layout::Coo, Some(t.as_union_value()))
        }
        Layout::Csr { nnz, index_type } => {
            let t = fb::Csr::create(
                fbb,
                &fb::CsrArgs {
                    nnz: *nnz,
                    index_type: fb::ElementType(index_type.to_wire()),
                },
            );
            (fb::Layout::Csr, Some(t.as_union_value()))
        }
        Layout::Csc { nnz, index_type } => {
            let t = fb::Csc::create(
                fbb,
                &fb::CscArgs {
                    nnz: *nnz,
                    index_type: fb::ElementType(index_type.to_wire()),
                },
            );
            (fb::Layout::Csc, Some(t.as_union_value()))
        }
    };
    // Layout buffers come first, then scales, zero points and (when the
    // quantization has them) offsets; a descriptor-only tensor has none at all.
    let quantization_buffers = d
        .quantization
        .as_ref()
        .map_or(0, Quantization::buffer_count);
    let n_layout = w.buffers.len().saturating_sub(quantization_buffers);
    let buffers: Vec<fb::Buffer> = w.buffers[..n_layout]
        .iter()
        .map(|&(o, l)| fb::Buffer::new(o, l))
        .collect();
    let buffers = fbb.create_vector(&buffers);
    let quantization = d.quantization.as_ref().map(|q| {
        // The quantization's buffers follow the layout's, in its roles' order.
        let roles = q.buffer_roles();
        let at = |role: BufferRole| {
            let i = roles.iter().position(|r| *r == role)?;
            w.buffers
                .get(n_layout + i)
                .map(|&(o, l)| fb::Buffer::new(o, l))
        };
        let level = |fbb: &mut FlatBufferBuilder<'b>,
                     l: &Quantization,
                     scales: BufferRole,
                     table: BufferRole| {
            build_quantization(fbb, l, at(scales), None, Levels::default(), &|r| {
                if r == BufferRole::CodeTable {
                    at(table)
                } else {
                    None
                }
            })
        };
        let levels = Levels {
            scales: q
                .scale_quantization
                .as_deref()
                .map(|l| level(fbb, l, BufferRole::ScaleScales, BufferRole::ScaleCodeTable)),
            offsets: q.offset_quantization.as_deref().map(|l| {
                level(
                    fbb,
                    l,
                    BufferRole::OffsetScales,
                    BufferRole::OffsetCodeTable,
                )
            }),
        };
        build_quantization(
            fbb,
            q,
            at(BufferRole::Scales),
            at(BufferRole::ZeroPoints),
            levels,
            &at,
        )
    });
    let metadata = build_metadata(fbb, &d.metadata);
    // A descriptor-only tensor has no buffers, so no checksums either.
    let checksums = (!w.sums.checksums.is_empty()).then(|| fbb.create_vector(&w.sums.checksums));
    let digests = (!w.sums.digests.is_empty()).then(|| {
        let bytes: Vec<u8> = w.sums.digests.iter().flat_map(|d| d.0).collect();
        fbb.create_vector(&bytes)
    });
    fb::Tensor::create(
        fbb,
        &fb::TensorArgs {
            name: Some(name),
            element_type: fb::ElementType(d.element_type.to_wire()),
            shape: Some(shape),
            layout_type,
            layout,
            buffers: (!d.descriptor_only).then_some(buffers),
            descriptor_only: d.descriptor_only,
            alignment: d.alignment.unwrap_or(0),
            quantization,
            metadata,
            checksums,
            digests,
        },
    )
}

/// The second levels of a quantization, already built.
#[derive(Default)]
struct Levels<'a> {
    scales: Option<WIPOffset<fb::Quantization<'a>>>,
    offsets: Option<WIPOffset<fb::Quantization<'a>>>,
}

/// One quantization table; `at` locates its buffers by role.
fn build_quantization<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    q: &Quantization,
    scales: Option<fb::Buffer>,
    zero_points: Option<fb::Buffer>,
    levels: Levels<'a>,
    at: &dyn Fn(BufferRole) -> Option<fb::Buffer>,
) -> WIPOffset<fb::Quantization<'a>> {
    let (scheme, axis, block_size) = match q.scheme {
        QuantizationScheme::PerTensor => (fb::QuantizationScheme::PerTensor, 0, 0),
        QuantizationScheme::PerAxis { axis } => (fb::QuantizationScheme::PerAxis, axis, 0),
        QuantizationScheme::PerBlock { axis, block_size } => {
            (fb::QuantizationScheme::PerBlock, axis, block_size)
        }
        QuantizationScheme::PerFlatBlock { block_size } => {
            (fb::QuantizationScheme::PerFlatBlock, 0, block_size)
        }
    };
    let wire = |t: Option<ElementType>| fb::ElementType(t.map_or(0, ElementType::to_wire));
    let offsets = q.offset_type.and_then(|_| at(BufferRole::Offsets));
    let code_table = at(BufferRole::CodeTable);
    let group_index = at(BufferRole::GroupIndex);
    fb::Quantization::create(
        fbb,
        &fb::QuantizationArgs {
            scheme,
            expressed_type: fb::ElementType(q.expressed_type.to_wire()),
            scale_type: fb::ElementType(q.scale_type.to_wire()),
            zero_point_type: wire(q.zero_point_type),
            axis,
            block_size,
            scales: scales.as_ref(),
            zero_points: zero_points.as_ref(),
            storage_min: q.storage_min,
            storage_max: q.storage_max,
            tensor_scale: q.tensor_scale,
            offset_type: wire(q.offset_type),
            offsets: offsets.as_ref(),
            code_table_type: wire(q.code_table_type),
            code_table: code_table.as_ref(),
            scale_quantization: levels.scales,
            offset_quantization: levels.offsets,
            tensor_offset: q.tensor_offset,
            group_index_type: wire(q.group_index_type),
            group_index: group_index.as_ref(),
            block_format: fb::BlockFormat(q.block_format.map_or(0, BlockFormat::to_wire)),
        },
    )
}
