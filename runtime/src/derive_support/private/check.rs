//! Shape inference for a value being saved, and the checks of a stored
//! tensor against what a field declares (element type, rank, fixed
//! dimensions, quantization) before it is loaded.

use super::FieldSpec;
use crate::ElementType;
use crate::count::{ElementCount, element_count_of};
use crate::descriptor::Dim;
use crate::error::{Error, Result};
use crate::reader::TensorRef;

pub(super) fn invalid(
    tensor: &str,
    field: impl Into<String>,
    value: String,
    reason: String,
) -> Error {
    Error::InvalidField {
        tensor: tensor.to_owned(),
        field: field.into(),
        value,
        reason,
    }
}

fn dims_text(dims: &[Dim]) -> String {
    let d: Vec<String> = dims.iter().map(Dim::to_string).collect();
    format!("[{}]", d.join(", "))
}

/// The shape of `len` elements under the declared shape: `[len]` without
/// one; else the declared shape with its one dynamic dimension (if any)
/// inferred from `len`.
pub fn infer_shape(name: &str, spec: &FieldSpec, len: u64) -> Result<Vec<Dim>> {
    let Some(declared) = spec.shape else {
        return Ok(vec![Dim::Fixed(len)]);
    };
    // ADR-0007 order: a fixed 0 makes the product 0 before anything is
    // multiplied, so `[2^40, 2^40, 0]` is an empty shape, not an overflow.
    let fixed = declared.iter().filter_map(|d| match d {
        Dim::Fixed(n) => Some(*n),
        Dim::Dynamic => None,
    });
    let fixed = match element_count_of(fixed) {
        ElementCount::Known(n) => n,
        ElementCount::Dynamic | ElementCount::Overflow => {
            return Err(Error::SizeOverflow {
                tensor: name.to_owned(),
                field: "shape",
            });
        }
    };
    let dynamic = declared.iter().filter(|d| **d == Dim::Dynamic).count();
    let wrong = |reason: String| {
        invalid(
            name,
            "shape",
            format!("{len} element(s)"),
            format!("the field declares shape {}: {reason}", dims_text(declared)),
        )
    };
    let resolved = match dynamic {
        0 if fixed == len => None,
        0 => return Err(wrong(format!("that holds {fixed}"))),
        1 if fixed != 0 && len.is_multiple_of(fixed) => Some(len / fixed),
        1 if fixed == 0 => {
            return Err(wrong(
                "a dynamic dimension beside an empty one cannot be inferred".into(),
            ));
        }
        1 => return Err(wrong(format!("not a multiple of {fixed}"))),
        _ => {
            return Err(wrong(
                "only one dynamic dimension can be inferred from the data".into(),
            ));
        }
    };
    Ok(declared
        .iter()
        .map(|d| match d {
            Dim::Dynamic => Dim::Fixed(resolved.unwrap_or(0)),
            fixed => *fixed,
        })
        .collect())
}

/// Checks a stored tensor against the field: element type, rank, fixed
/// dimensions (a declared `?` accepts any size), and quantization.
pub fn check(
    t: &TensorRef<'_>,
    spec: &FieldSpec,
    element_type: ElementType,
    default_rank: usize,
) -> Result<()> {
    let name = t.name();
    if t.element_type() != element_type {
        return Err(Error::TypeMismatch {
            tensor: name.to_owned(),
            requested: element_type,
            found: t.element_type(),
        });
    }
    let shape = t.shape();
    let declared_rank = spec.shape.map_or(default_rank, <[Dim]>::len);
    if shape.rank() != declared_rank {
        return Err(invalid(
            name,
            "rank",
            shape.rank().to_string(),
            format!("the field declares rank {declared_rank}"),
        ));
    }
    if let Some(declared) = spec.shape {
        for (i, (want, got)) in declared.iter().zip(shape.iter()).enumerate() {
            if let Dim::Fixed(w) = want
                && got != Dim::Fixed(*w)
            {
                return Err(invalid(
                    name,
                    format!("shape[{i}]"),
                    got.to_string(),
                    format!("the field declares shape {}", dims_text(declared)),
                ));
            }
        }
    }
    let expected = spec.quantization;
    match (t.quantization(), expected) {
        (None, None) => {}
        (Some(found), Some(want))
            if found.scheme == want.scheme && found.expressed_type == want.expressed_type => {}
        (found, want) => {
            return Err(invalid(
                name,
                "quantization",
                found.map_or("absent".into(), |q| format!("{:?}", q.scheme)),
                match want {
                    Some(w) => format!(
                        "the field declares {:?} expressed as {}",
                        w.scheme,
                        w.expressed_type.name()
                    ),
                    None => "the field is not quantized".into(),
                },
            ));
        }
    }
    Ok(())
}

/// Checks a value's own shape against the declared one (rank and fixed dims).
pub(super) fn check_declared(name: &str, spec: &FieldSpec, shape: &[Dim]) -> Result<()> {
    let Some(declared) = spec.shape else {
        return Ok(());
    };
    if declared.len() != shape.len() {
        return Err(invalid(
            name,
            "rank",
            shape.len().to_string(),
            format!("the field declares shape {}", dims_text(declared)),
        ));
    }
    for (i, (want, got)) in declared.iter().zip(shape).enumerate() {
        if matches!(want, Dim::Fixed(_)) && want != got {
            return Err(invalid(
                name,
                format!("shape[{i}]"),
                got.to_string(),
                format!("the field declares shape {}", dims_text(declared)),
            ));
        }
    }
    Ok(())
}
