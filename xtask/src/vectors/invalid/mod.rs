//! The invalid vectors: a valid vector corrupted in one targeted place each
//! (found with [`Nav`]), and the error, tensor and field a reader must report
//! for it, at open or when the sparse data is checked.

mod buffers;
mod container;
mod descriptors;
mod names;
mod quantization;
mod sparse;

use super::Vector;
use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

// In scope for the link in this module's documentation.
#[cfg(doc)]
use super::nav::Nav;

/// What an invalid vector must be reported as.
struct Expect {
    variant: &'static str,
    /// `open` (File::open / Reader::new) or `view` (the sparse views and `hurray validate`).
    stage: &'static str,
    tensor: Option<&'static str>,
    field: Option<&'static str>,
    /// For `BuffersOverlap`: the other buffer of the pair, (tensor, role).
    /// Which of the two is `tensor`/`field` and which is `with` is unspecified.
    with: Option<(&'static str, &'static str)>,
}

const fn at_open(variant: &'static str) -> Expect {
    Expect {
        variant,
        stage: "open",
        tensor: None,
        field: None,
        with: None,
    }
}

const fn err(variant: &'static str, tensor: &'static str, field: &'static str) -> Expect {
    Expect {
        variant,
        stage: "open",
        tensor: Some(tensor),
        field: Some(field),
        with: None,
    }
}

const fn in_view(variant: &'static str, tensor: &'static str, field: &'static str) -> Expect {
    Expect {
        variant,
        stage: "view",
        tensor: Some(tensor),
        field: Some(field),
        with: None,
    }
}

fn invalid(
    name: &str,
    description: &str,
    base: &Vector,
    expect: Expect,
    patch: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<Vector> {
    let mut bytes = base.bytes.clone();
    patch(&mut bytes).with_context(|| format!("crafting invalid vector {name}"))?;
    ensure!(bytes != base.bytes, "invalid vector {name} is unchanged");
    let mut e = json!({
        "variant": expect.variant,
        "stage": expect.stage,
    });
    e["tensor"] = expect.tensor.map_or(Value::Null, |t| json!(t));
    e["field"] = expect.field.map_or(Value::Null, |f| json!(f));
    if let Some((t, f)) = expect.with {
        e["with"] = json!({ "tensor": t, "field": f });
    }
    Ok(Vector {
        name: format!("invalid_{name}"),
        description: format!("{description} (from {})", base.name),
        bytes,
        json: json!({ "valid": false, "derived_from": base.name, "error": e }),
    })
}

/// The valid vectors the invalid ones are patches of.
struct Bases<'v> {
    /// Every valid vector, for the bases only one invalid vector patches.
    valid: &'v [Vector],
    /// Tensors a (f32 \[2,3\], offset 64), b (i16 \[2,2,2\], offset 128).
    dense: &'v Vector,
    coo: &'v Vector,
    csr: &'v Vector,
    csc: &'v Vector,
    strided: &'v Vector,
    meta: &'v Vector,
    q_axis: &'v Vector,
    q_block: &'v Vector,
    q_tensor: &'v Vector,
    align: &'v Vector,
    align_t: &'v Vector,
    empty: &'v Vector,
    empty_csr: &'v Vector,
    q_empty: &'v Vector,
}

/// The valid vector named `name`.
pub(super) fn find<'v>(valid: &'v [Vector], name: &str) -> Result<&'v Vector> {
    valid
        .iter()
        .find(|v| v.name == name)
        .with_context(|| format!("no valid vector {name}"))
}

/// The invalid vectors, each a patch of one of the `valid` ones.
pub(super) fn vectors(valid: &[Vector]) -> Result<Vec<Vector>> {
    let bases = Bases {
        valid,
        dense: find(valid, "layout_dense")?,
        coo: find(valid, "layout_coo")?,
        csr: find(valid, "layout_csr")?,
        csc: find(valid, "layout_csc")?,
        strided: find(valid, "layout_strided")?,
        meta: find(valid, "metadata")?,
        q_axis: find(valid, "quant_per_axis")?,
        q_block: find(valid, "quant_per_block")?,
        q_tensor: find(valid, "quant_per_tensor")?,
        align: find(valid, "alignment_4096")?,
        align_t: find(valid, "alignment_per_tensor")?,
        empty: find(valid, "empty_shape_3_0_5")?,
        empty_csr: find(valid, "empty_csr_nnz_0")?,
        q_empty: find(valid, "quant_empty")?,
    };
    let mut out = Vec::new();
    container::vectors(&bases, &mut out)?;
    // --- semantic rules --------------------------------------------------------
    names::vectors(&bases, &mut out)?;
    descriptors::vectors(&bases, &mut out)?;
    buffers::vectors(&bases, &mut out)?;
    quantization::vectors(&bases, &mut out)?;
    sparse::vectors(&bases, &mut out)?;
    Ok(out)
}
