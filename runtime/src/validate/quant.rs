//! The rules of a tensor's quantization and the byte lengths of its
//! buffers: the scheme, the types, and (format 1.4) the code table, the
//! group index, the block format and the scales' and offsets' own
//! quantization, a second level checked by the same rules against the shape
//! of the array it quantizes.

use super::{Seq, ShapeFacts, element_type, invalid, one_of};
use crate::block_format::BlockFormat;
use crate::error::{Error, Result};
use crate::format::DYNAMIC_DIM;
use crate::quantization::QuantizationScheme;
use crate::quantization::{
    CODE_TABLE_TYPES, GROUP_INDEX_TYPES, OFFSET_TYPES, QuantizationKind, SCALE_TYPES,
};
use crate::quantization::{LevelParams, QuantParams};
use crate::{ElementType, elements::ElementClass};

/// The byte lengths a quantization implies.
#[derive(Debug, Default)]
pub(super) struct Lengths {
    pub(super) scales: u64,
    pub(super) zero_points: u64,
    pub(super) offsets: Option<u64>,
    /// In the order of `BufferRole::QUANTIZATION_1_4`.
    pub(super) tail: [Option<u64>; 6],
    /// A block format's values length, which replaces the layout's.
    pub(super) block_values: Option<u64>,
}

impl Lengths {
    /// Every length 0, the buffers kept (an empty or descriptor-only tensor).
    pub(super) fn clear(&mut self) {
        self.scales = 0;
        self.zero_points = 0;
        self.offsets = self.offsets.map(|_| 0);
        for t in self.tail.iter_mut().flatten() {
            *t = 0;
        }
    }
}

/// The names of one level's fields, for errors.
struct Fields {
    scheme: &'static str,
    axis: &'static str,
    block_size: &'static str,
    expressed_type: &'static str,
    scale_type: &'static str,
    code_table_type: &'static str,
    tensor_scale: &'static str,
    tensor_offset: &'static str,
    scales: &'static str,
    code_table: &'static str,
}

const TOP: Fields = Fields {
    scheme: "quantization.scheme",
    axis: "quantization.axis",
    block_size: "quantization.block_size",
    expressed_type: "quantization.expressed_type",
    scale_type: "quantization.scale_type",
    code_table_type: "quantization.code_table_type",
    tensor_scale: "quantization.tensor_scale",
    tensor_offset: "quantization.tensor_offset",
    scales: "scales",
    code_table: "code_table",
};

const SCALE_LEVEL: Fields = Fields {
    scheme: "quantization.scale_quantization.scheme",
    axis: "quantization.scale_quantization.axis",
    block_size: "quantization.scale_quantization.block_size",
    expressed_type: "quantization.scale_quantization.expressed_type",
    scale_type: "quantization.scale_quantization.scale_type",
    code_table_type: "quantization.scale_quantization.code_table_type",
    tensor_scale: "quantization.scale_quantization.tensor_scale",
    tensor_offset: "quantization.scale_quantization.tensor_offset",
    scales: "scale_scales",
    code_table: "scale_code_table",
};

const OFFSET_LEVEL: Fields = Fields {
    scheme: "quantization.offset_quantization.scheme",
    axis: "quantization.offset_quantization.axis",
    block_size: "quantization.offset_quantization.block_size",
    expressed_type: "quantization.offset_quantization.expressed_type",
    scale_type: "quantization.offset_quantization.scale_type",
    code_table_type: "quantization.offset_quantization.code_table_type",
    tensor_scale: "quantization.offset_quantization.tensor_scale",
    tensor_offset: "quantization.offset_quantization.tensor_offset",
    scales: "offset_scales",
    code_table: "offset_code_table",
};

/// The scheme, its axis and block size, as stored.
#[derive(Clone, Copy)]
struct Scheme {
    wire: u8,
    axis: u32,
    block_size: u64,
}

/// Checks a quantization and computes its buffers' byte lengths.
pub(super) fn lengths<D: Seq<u64> + ?Sized>(
    f: &ShapeFacts<'_, D>,
    et: ElementType,
    layout: &str,
    q: QuantParams,
) -> Result<Lengths> {
    let name = f.name;
    if matches!(et.class(), ElementClass::Bool | ElementClass::Complex) {
        return Err(invalid(
            name,
            "element_type",
            et.name(),
            "a quantized tensor stores integers or small floats",
        ));
    }
    let scheme = Scheme {
        wire: q.scheme,
        axis: q.axis,
        block_size: q.block_size,
    };
    if q.block_format != 0 {
        return block_format(f, et, layout, q, scheme);
    }
    expressed(name, &TOP, q.expressed_type)?;
    let scale_type = match q.scale_level {
        None => one_of(name, "quantization.scale_type", q.scale_type, SCALE_TYPES)?,
        Some(_) => integer(
            name,
            "quantization.scale_type",
            q.scale_type,
            "quantized scales",
        )?,
    };
    let zp_type = match q.zero_point_type {
        0 => None,
        v => Some(integer(
            name,
            "quantization.zero_point_type",
            v,
            "zero points",
        )?),
    };
    finite(name, TOP.tensor_scale, q.tensor_scale)?;
    finite(name, TOP.tensor_offset, q.tensor_offset)?;
    let offset_type = match (q.offset_type, q.offset_level) {
        (0, None) => None,
        (0, Some(_)) => {
            return Err(invalid(
                name,
                "quantization.offset_quantization",
                "present",
                "quantized offsets need an offset_type",
            ));
        }
        (v, None) => Some(one_of(name, "quantization.offset_type", v, OFFSET_TYPES)?),
        (v, Some(_)) => Some(integer(
            name,
            "quantization.offset_type",
            v,
            "quantized offsets",
        )?),
    };
    let code_table = code_table(f, &TOP, et, q.code_table_type)?;
    if code_table.is_some() && zp_type.is_some() {
        return Err(invalid(
            name,
            "quantization.zero_point_type",
            q.zero_point_type,
            "a code table's codes have no zero point",
        ));
    }
    let count = scale_count(f, &TOP, scheme)?;
    let mut out = Lengths {
        scales: f.bytes(count, scale_type, "scales")?,
        zero_points: match zp_type {
            Some(t) => f.bytes(count, t, "zero_points")?,
            None => 0,
        },
        offsets: match offset_type {
            Some(t) => Some(f.bytes(count, t, "offsets")?),
            None => None,
        },
        tail: [None; 6],
        block_values: None,
    };
    out.tail[0] = code_table;
    out.tail[1] = group_index(f, scheme, q.group_index_type)?;
    if let Some(level) = q.scale_level {
        let (scales, table) = second_level(f, scheme, &SCALE_LEVEL, level, scale_type)?;
        out.tail[2] = Some(scales);
        out.tail[3] = table;
    }
    if let Some(level) = q.offset_level {
        let t = offset_type.unwrap_or(ElementType::Int8);
        let (scales, table) = second_level(f, scheme, &OFFSET_LEVEL, level, t)?;
        out.tail[4] = Some(scales);
        out.tail[5] = table;
    }
    Ok(out)
}

fn expressed(name: &str, fields: &Fields, v: u8) -> Result<ElementType> {
    let t = element_type(name, fields.expressed_type, v)?;
    if t.class() != ElementClass::Float {
        return Err(invalid(
            name,
            fields.expressed_type,
            t.name(),
            "the expressed type is a floating-point type",
        ));
    }
    Ok(t)
}

fn integer(name: &str, field: &'static str, v: u8, what: &str) -> Result<ElementType> {
    let t = element_type(name, field, v)?;
    if !matches!(
        t.class(),
        ElementClass::SignedInt | ElementClass::UnsignedInt
    ) {
        return Err(invalid(
            name,
            field,
            t.name(),
            format!("{what} are integers"),
        ));
    }
    Ok(t)
}

fn finite(name: &str, field: &'static str, v: f64) -> Result<()> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(invalid(name, field, v, "a finite number"))
    }
}

/// The code table's byte length, `None` without one; the codes it
/// indexes are unsigned integers of at most 8 bits.
fn code_table<D: Seq<u64> + ?Sized>(
    f: &ShapeFacts<'_, D>,
    fields: &Fields,
    code_type: ElementType,
    v: u8,
) -> Result<Option<u64>> {
    if v == 0 {
        return Ok(None);
    }
    let t = one_of(f.name, fields.code_table_type, v, CODE_TABLE_TYPES)?;
    if code_type.class() != ElementClass::UnsignedInt || code_type.bits() > 8 {
        return Err(invalid(
            f.name,
            fields.code_table_type,
            t.name(),
            format!(
                "a code table indexes unsigned codes of at most 8 bits, not {}",
                code_type.name()
            ),
        ));
    }
    Ok(Some(f.bytes(
        1 << code_type.bits(),
        t,
        fields.code_table,
    )?))
}

/// The number of scales `scheme` needs over the shape `f`.
fn scale_count<D: Seq<u64> + ?Sized>(
    f: &ShapeFacts<'_, D>,
    fields: &Fields,
    scheme: Scheme,
) -> Result<u64> {
    let (name, rank) = (f.name, f.rank);
    let kind = match QuantizationKind::from_wire(scheme.wire) {
        Some(k) => k,
        None if scheme.wire == 0 => {
            return Err(invalid(
                name,
                fields.scheme,
                "Invalid (0)",
                "a quantization names its scheme",
            ));
        }
        None => {
            return Err(Error::UnsupportedQuantization {
                tensor: name.to_owned(),
                value: scheme.wire,
            });
        }
    };
    let what = match kind {
        QuantizationKind::PerBlock => "per-block",
        _ => "per-axis",
    };
    if kind == QuantizationKind::PerFlatBlock {
        if scheme.block_size == 0 {
            return Err(invalid(
                name,
                fields.block_size,
                0,
                "per-flat-block quantization needs a block size > 0",
            ));
        }
        // Blocks of the whole tensor, row-major: the axis plays no part.
        let count = f.elements.map(|e| e.div_ceil(scheme.block_size));
        return Ok(if f.empty { 0 } else { count.unwrap_or(0) });
    }
    let axis_dim = || -> Result<u64> {
        let axis = scheme.axis as usize;
        if axis >= rank {
            return Err(invalid(
                name,
                fields.axis,
                scheme.axis,
                format!("{what} quantization needs an axis below the rank {rank}"),
            ));
        }
        Ok(f.shape.at(axis))
    };
    // The number of scales; `None` when a dynamic dimension leaves it unknown.
    let count = match kind {
        QuantizationKind::PerTensor => Some(1),
        QuantizationKind::PerFlatBlock => unreachable!("answered above"),
        QuantizationKind::PerAxis => {
            let d = axis_dim()?;
            (d != DYNAMIC_DIM).then_some(d)
        }
        QuantizationKind::PerBlock => {
            let d = axis_dim()?;
            if scheme.block_size == 0 {
                return Err(invalid(
                    name,
                    fields.block_size,
                    0,
                    "per-block quantization needs a block size > 0",
                ));
            }
            match f.elements {
                None => None,
                // An empty axis has no blocks, so no scales (ADR-007 section 8).
                Some(_) if d == 0 => Some(0),
                Some(e) => (e / d).checked_mul(d.div_ceil(scheme.block_size)),
            }
        }
    };
    // An empty tensor has no scales; don't size them.
    Ok(if f.empty { 0 } else { count.unwrap_or(0) })
}

/// The shape of the scale array `scheme` gives the shape `f`
/// ([`QuantizationScheme::scale_shape`]). Called after [`scale_count`]
/// accepted the scheme.
fn scale_shape<D: Seq<u64> + ?Sized>(f: &ShapeFacts<'_, D>, scheme: Scheme) -> Vec<u64> {
    let dims: Vec<u64> = (0..f.rank).map(|i| f.shape.at(i)).collect();
    QuantizationKind::from_wire(scheme.wire).map_or_else(Vec::new, |kind| {
        QuantizationScheme::from_parts(kind, scheme.axis, scheme.block_size).scale_shape(&dims)
    })
}

/// The group index's byte length (one `Int32` per index of the axis),
/// `None` without one. Its entries are data, checked when they are used.
fn group_index<D: Seq<u64> + ?Sized>(
    f: &ShapeFacts<'_, D>,
    scheme: Scheme,
    v: u8,
) -> Result<Option<u64>> {
    if v == 0 {
        return Ok(None);
    }
    let t = one_of(
        f.name,
        "quantization.group_index_type",
        v,
        GROUP_INDEX_TYPES,
    )?;
    if QuantizationKind::from_wire(scheme.wire) != Some(QuantizationKind::PerBlock) {
        return Err(invalid(
            f.name,
            "quantization.group_index_type",
            t.name(),
            "a group index belongs to per-block quantization",
        ));
    }
    let d = f.shape.at(scheme.axis as usize);
    let n = if f.empty || d == DYNAMIC_DIM { 0 } else { d };
    Ok(Some(f.bytes(n, t, "group_index")?))
}

/// Checks a second level, the quantization of the scale (or offset) array
/// of `outer`, stored in `code_type`; returns its scales' and code table's
/// byte lengths.
fn second_level<D: Seq<u64> + ?Sized>(
    f: &ShapeFacts<'_, D>,
    outer: Scheme,
    fields: &Fields,
    level: LevelParams,
    code_type: ElementType,
) -> Result<(u64, Option<u64>)> {
    let name = f.name;
    if let Some(field) = level.forbidden {
        return Err(invalid(
            name,
            format!("{}.{field}", fields.scheme.trim_end_matches(".scheme")),
            "present",
            "a second level has scales, a code table, a tensor scale and a tensor offset only",
        ));
    }
    expressed(name, fields, level.expressed_type)?;
    let scale_type = one_of(name, fields.scale_type, level.scale_type, SCALE_TYPES)?;
    finite(name, fields.tensor_scale, level.tensor_scale)?;
    finite(name, fields.tensor_offset, level.tensor_offset)?;
    let shape = scale_shape(f, outer);
    let inner = ShapeFacts {
        name,
        shape: &shape[..],
        rank: shape.len(),
        empty: f.empty,
        elements: if f.empty {
            Some(0)
        } else {
            f.elements.map(|_| shape.iter().product())
        },
    };
    let count = scale_count(
        &inner,
        fields,
        Scheme {
            wire: level.scheme,
            axis: level.axis,
            block_size: level.block_size,
        },
    )?;
    let table = code_table(&inner, fields, code_type, level.code_table_type)?;
    Ok((inner.bytes(count, scale_type, fields.scales)?, table))
}

/// A block format's rules (the schema's `Quantization.block_format`): a
/// dense `u8` tensor whose last dimension is whole blocks, per block along
/// it, and nothing else set. Its values are the blocks.
fn block_format<D: Seq<u64> + ?Sized>(
    f: &ShapeFacts<'_, D>,
    et: ElementType,
    layout: &str,
    q: QuantParams,
    scheme: Scheme,
) -> Result<Lengths> {
    let name = f.name;
    let Some(format) = BlockFormat::from_wire(q.block_format) else {
        return Err(invalid(
            name,
            "quantization.block_format",
            q.block_format,
            "not a block format this reader knows",
        ));
    };
    let refuse = |field: &str, value: String, reason: &str| {
        Err(invalid(name, field, value, format!("{format}: {reason}")))
    };
    if et != ElementType::UInt8 {
        return refuse(
            "element_type",
            et.name().into(),
            "the blocks are stored as u8",
        );
    }
    if layout != "dense" {
        return refuse(
            "layout",
            layout.into(),
            "the blocks are dense and contiguous",
        );
    }
    let last = f.rank.checked_sub(1);
    let whole = QuantizationKind::from_wire(scheme.wire) == Some(QuantizationKind::PerBlock)
        && last == Some(scheme.axis as usize)
        && scheme.block_size == format.elements();
    if !whole {
        return refuse(
            "quantization.block_size",
            scheme.block_size.to_string(),
            &format!("per block of {} along the last axis", format.elements()),
        );
    }
    if let Some(field) = q
        .composite_field()
        .map(|(f, _)| f)
        .filter(|f| *f != "block_format")
    {
        return refuse(
            &format!("quantization.{field}"),
            "present".into(),
            "nothing else is set",
        );
    }
    if q.zero_point_type != 0 || q.offset_type != 0 || q.tensor_scale != 1.0 {
        return refuse(
            "quantization.zero_point_type",
            q.zero_point_type.to_string(),
            "the blocks hold their own scales: no zero points, offsets or tensor scale",
        );
    }
    expressed(name, &TOP, q.expressed_type)?;
    let d = f.shape.at(f.rank - 1);
    if d != DYNAMIC_DIM && !d.is_multiple_of(format.elements()) {
        return refuse(
            &format!("shape[{}]", f.rank - 1),
            d.to_string(),
            &format!("rows are whole blocks of {}", format.elements()),
        );
    }
    let blocks = f.elements.unwrap_or(0) / format.elements();
    let values = blocks
        .checked_mul(format.bytes())
        .ok_or_else(|| f.overflow("values"))?;
    Ok(Lengths {
        block_values: Some(values),
        ..Lengths::default()
    })
}
