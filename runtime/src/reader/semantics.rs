//! The semantic checks of `Reader::new`, after the FlatBuffers verifier:
//! every descriptor through [`validate::plan`], every buffer against the
//! data region, alignment and the other buffers, names, metadata and the
//! name index. Nothing here allocates in proportion to what a header claims.

use super::Reader;
use crate::buffer::BufferRole;
use crate::error::{Error, Result};
use crate::format::{self, PREFIX_LEN};
use crate::generated::fb;
use crate::validate::{self, LayoutParams, Plan, QuantParams};

impl Reader<'_> {
    pub(super) fn check_semantics(&self, data_end: u64, flags: u64) -> Result<()> {
        let file_alignment = self.header.alignment();
        if !format::valid_alignment(file_alignment) {
            return Err(Error::InvalidAlignment {
                owner: "file".into(),
                value: file_alignment,
            });
        }
        check_metadata("file", self.header.metadata())?;
        check_shard_index_flag(&self.header, flags)?;
        let Some(tensors) = self.header.tensors() else {
            return check_name_index(&self.header, 0);
        };
        let mut ranges: Vec<(u64, u64, u32, &'static str)> = Vec::with_capacity(tensors.len());
        // Checksums need an algorithm (an unknown one is refused only when
        // they are verified: reading the data does not need them).
        let checksums_in_file = self.header.checksum_algorithm() != fb::ChecksumAlgorithm::None;
        let mut previous: Option<&str> = None;
        for (index, t) in tensors.iter().enumerate() {
            let name = t.name();
            if name.is_empty() {
                return Err(Error::EmptyName { index });
            }
            if let Some(p) = previous
                && p >= name
            {
                return Err(Error::NamesNotSorted {
                    previous: p.to_owned(),
                    name: name.to_owned(),
                });
            }
            previous = Some(name);
            let alignment = match t.alignment() {
                0 => file_alignment,
                a if format::valid_alignment(a) => a,
                a => {
                    return Err(Error::InvalidAlignment {
                        owner: format!("tensor {name:?}"),
                        value: a,
                    });
                }
            };
            let plan = plan_of(&t)?;
            let quant = t.quantization();
            let listed = t.buffers().map_or(0, |b| b.len());
            let layout_buffers = if t.descriptor_only() {
                0
            } else {
                plan.roles.len()
            };
            if listed != layout_buffers {
                if t.descriptor_only() {
                    return Err(Error::DescriptorOnlyWithData {
                        tensor: name.to_owned(),
                        field: "buffers".into(),
                        value: listed as u64,
                    });
                }
                return Err(Error::BufferCount {
                    tensor: name.to_owned(),
                    layout: plan.layout,
                    expected: layout_buffers,
                    found: listed,
                });
            }
            let mut check =
                |role: BufferRole, expected_len: u64, b: Option<&fb::Buffer>| -> Result<()> {
                    let role = role.name();
                    let (offset, length) = b.map_or((0, 0), |b| (b.offset(), b.length()));
                    if length != expected_len {
                        return Err(Error::BufferLength {
                            tensor: name.to_owned(),
                            buffer: role,
                            expected: expected_len,
                            found: length,
                        });
                    }
                    if length == 0 {
                        // ADR-007: a zero-length buffer has no alignment and no position
                        // that matters; it is never dereferenced.
                        return Ok(());
                    }
                    let end = offset.checked_add(length);
                    if offset < PREFIX_LEN || end.is_none_or(|e| e > data_end) {
                        return Err(Error::BufferOutOfBounds {
                            tensor: name.to_owned(),
                            buffer: role,
                            offset,
                            length,
                            start: PREFIX_LEN,
                            end: data_end,
                        });
                    }
                    if offset % alignment != 0 {
                        return Err(Error::BufferMisaligned {
                            tensor: name.to_owned(),
                            buffer: role,
                            offset,
                            alignment,
                        });
                    }
                    ranges.push((offset, offset + length, index as u32, role));
                    Ok(())
                };
            if let Some(buffers) = t.buffers() {
                for (i, b) in buffers.iter().enumerate() {
                    check(plan.roles[i], plan.lengths[i], Some(b))?;
                }
            }
            if let Some(q) = quant {
                check(BufferRole::Scales, plan.scales, q.scales())?;
                check(BufferRole::ZeroPoints, plan.zero_points, q.zero_points())?;
                check(BufferRole::Offsets, plan.offsets.unwrap_or(0), q.offsets())?;
                let params = quant_params(&q);
                if params.is_extended() && flags & format::FLAG_EXTENDED_QUANTIZATION == 0 {
                    // A 1.1 reader would ignore the field and misread every value.
                    let field = if params.offset_type != 0 {
                        "quantization.offset_type"
                    } else {
                        "quantization.tensor_scale"
                    };
                    return Err(Error::InvalidField {
                        tensor: name.to_owned(),
                        field: field.into(),
                        value: if params.offset_type != 0 {
                            params.offset_type.to_string()
                        } else {
                            params.tensor_scale.to_string()
                        },
                        reason: "a file using it sets footer flag bit 0 (extended quantization)"
                            .into(),
                    });
                }
            }
            check_checksums(&t, &plan, checksums_in_file)?;
            check_metadata(name, t.metadata())?;
        }
        check_name_index(&self.header, tensors.len())?;
        // The whole tuple, so the reported pair is deterministic.
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(Error::BuffersOverlap {
                    first: tensors.get(w[0].2 as usize).name().to_owned(),
                    first_buffer: w[0].3,
                    second: tensors.get(w[1].2 as usize).name().to_owned(),
                    second_buffer: w[1].3,
                });
            }
        }
        Ok(())
    }
}

/// The name index is only a hint (a miss falls back to binary search), but
/// its shape must be sound: a power-of-two length and entries that name tensors.
fn check_name_index(header: &fb::Header<'_>, tensors: usize) -> Result<()> {
    let Some(index) = header.name_index() else {
        return Ok(());
    };
    let bad = |value: String, reason: &str| Error::InvalidField {
        tensor: String::new(),
        field: "name_index".into(),
        value,
        reason: reason.into(),
    };
    if index.is_empty() && tensors == 0 {
        return Ok(());
    }
    if !index.len().is_power_of_two() || index.len() < tensors {
        return Err(bad(
            format!("{} slots", index.len()),
            "the length must be a power of two of at least the tensor count",
        ));
    }
    if let Some((slot, e)) = index
        .iter()
        .enumerate()
        .find(|&(_, e)| e as usize > tensors)
    {
        return Err(bad(
            format!("slot {slot} = {e}"),
            "an entry names a tensor that does not exist",
        ));
    }
    Ok(())
}

fn check_metadata(
    owner: &str,
    kv: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::KeyValue<'_>>>>,
) -> Result<()> {
    let Some(kv) = kv else { return Ok(()) };
    let mut previous: Option<&str> = None;
    for entry in kv.iter() {
        if let Some(p) = previous
            && p >= entry.key()
        {
            return Err(Error::MetadataNotSorted {
                owner: owner.to_owned(),
                previous: p.to_owned(),
                key: entry.key().to_owned(),
            });
        }
        previous = Some(entry.key());
    }
    Ok(())
}

pub(crate) fn layout_params<'a>(t: &fb::Tensor<'a>) -> LayoutParams<flatbuffers::Vector<'a, i64>> {
    match t.layout_type() {
        fb::Layout::NONE => LayoutParams::Dense { strides: None },
        fb::Layout::Dense => LayoutParams::Dense {
            strides: t.layout_as_dense().and_then(|d| d.strides()),
        },
        fb::Layout::Coo => {
            t.layout_as_coo()
                .map_or(LayoutParams::Unknown(2), |c| LayoutParams::Coo {
                    nnz: c.nnz(),
                    index_type: c.index_type().0,
                })
        }
        fb::Layout::Csr => {
            t.layout_as_csr()
                .map_or(LayoutParams::Unknown(3), |c| LayoutParams::Csr {
                    nnz: c.nnz(),
                    index_type: c.index_type().0,
                })
        }
        fb::Layout::Csc => {
            t.layout_as_csc()
                .map_or(LayoutParams::Unknown(4), |c| LayoutParams::Csc {
                    nnz: c.nnz(),
                    index_type: c.index_type().0,
                })
        }
        other => LayoutParams::Unknown(other.0),
    }
}

/// A tensor's checksums, if any, are one per buffer it has (format 1.2).
fn check_checksums(t: &fb::Tensor<'_>, plan: &Plan, in_file: bool) -> Result<()> {
    let Some(sums) = t.checksums() else {
        return Ok(());
    };
    let name = t.name();
    if !in_file {
        return Err(Error::InvalidField {
            tensor: name.to_owned(),
            field: "checksums".into(),
            value: sums.len().to_string(),
            reason: "the header names no checksum algorithm".into(),
        });
    }
    let buffers = if t.descriptor_only() {
        0
    } else {
        plan.buffers().len()
    };
    if sums.len() != buffers {
        return Err(Error::InvalidField {
            tensor: name.to_owned(),
            field: "checksums".into(),
            value: sums.len().to_string(),
            reason: format!("one checksum per buffer: the tensor has {buffers}"),
        });
    }
    Ok(())
}

fn quant_params(q: &fb::Quantization<'_>) -> QuantParams {
    QuantParams {
        scheme: q.scheme().0,
        expressed_type: q.expressed_type().0,
        scale_type: q.scale_type().0,
        zero_point_type: q.zero_point_type().0,
        axis: q.axis(),
        block_size: q.block_size(),
        tensor_scale: q.tensor_scale(),
        offset_type: q.offset_type().0,
    }
}

pub(super) fn plan_of(t: &fb::Tensor<'_>) -> Result<Plan> {
    validate::plan(
        t.name(),
        t.element_type().0,
        &t.shape(),
        layout_params(t),
        t.descriptor_only(),
        t.quantization().as_ref().map(quant_params),
    )
}

/// Format 1.3: footer flag bit 1 is set exactly when the header holds a shard
/// index, and an index file holds no tensors of its own (ADR-0010). What the
/// index says is checked by `ShardedFile::open`, which is what reads it.
fn check_shard_index_flag(header: &fb::Header<'_>, flags: u64) -> Result<()> {
    let flagged = flags & format::FLAG_SHARD_INDEX != 0;
    let bad = |value: &str, reason: &str| {
        Err(Error::InvalidField {
            tensor: String::new(),
            field: "shard_index".into(),
            value: value.into(),
            reason: reason.into(),
        })
    };
    match (header.shard_index().is_some(), flagged) {
        (true, false) => bad(
            "present",
            "an index file sets footer flag bit 1, so that a 1.2 reader refuses it",
        ),
        (false, true) => bad(
            "absent",
            "footer flag bit 1 marks an index file, which has one",
        ),
        (true, true) if header.tensors().is_some_and(|t| !t.is_empty()) => bad(
            "present",
            "an index file holds no tensors of its own; they live in its members",
        ),
        _ => Ok(()),
    }
}
