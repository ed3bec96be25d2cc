//! Checks that need the whole input: attribute combinations, ranks,
//! lifetimes, duplicate names. Every problem is recorded, none stops the others.

use crate::ast::{Input, Kind};
use crate::attr::{Attrs, LayoutKind, Scheme};
use crate::ctxt::Ctxt;
use std::collections::BTreeMap;

/// Validates a `#[derive(Tensors)]` input.
pub(crate) fn tensors(cx: &mut Ctxt, input: &Input<'_>) {
    let lifetime = struct_lifetime(cx, input.generics, "Tensors", true);
    metadata_fields(cx, input);
    let mut names: BTreeMap<String, &syn::Ident> = BTreeMap::new();
    for f in input.fields.iter().filter(|f| !f.is_metadata()) {
        let a = &f.attrs;
        let name = f.name();
        match names.get(&name) {
            Some(first) => {
                let ident = f.ident;
                let at = a
                    .rename
                    .as_ref()
                    .map_or_else(|| quote::quote!(#ident), |r| r.tokens.clone());
                cx.error_spanned_by(
                    at,
                    format!("tensor name `{name}` is already used by field `{first}`"),
                );
            }
            None => {
                names.insert(name.clone(), f.ident);
            }
        }
        if name.contains('.')
            && f.kind == Kind::Nested
            && let Some(r) = &a.rename
        {
            cx.error_spanned_by(&r.tokens, "a nested struct's prefix cannot contain `.`");
        }

        if f.kind == Kind::Nested {
            for (key, tokens) in tensor_only_attrs(a) {
                cx.error_spanned_by(
                    tokens,
                    format!(
                        "`{key}` applies to tensor fields, but `{}` has a nested struct type (hint: only `rename` applies to it)",
                        f.ident
                    ),
                );
            }
            continue;
        }

        // Layout: each sparse type has its own; dense types take only "dense".
        if let Some(l) = &a.layout {
            let fits = match f.kind {
                Kind::Compressed => matches!(l.value, LayoutKind::Csr | LayoutKind::Csc),
                Kind::Coo => l.value == LayoutKind::Coo,
                _ => l.value == LayoutKind::Dense,
            };
            if !fits {
                let message = match (f.kind, l.value) {
                    (Kind::Compressed, v) => format!(
                        "a `Compressed` field is stored as \"csr\" or \"csc\", not \"{}\"",
                        v.name()
                    ),
                    (Kind::Coo, v) => {
                        format!("a `Coo` field is stored as \"coo\", not \"{}\"", v.name())
                    }
                    (k, LayoutKind::Coo) => format!(
                        "the \"coo\" layout needs a `hurray::derive::Coo<'a, T>` field, but `{}` is {}",
                        f.ident,
                        k.describe()
                    ),
                    (k, _) => format!(
                        "a sparse layout needs a `hurray::derive::Compressed<'a, T>` field, but `{}` is {}",
                        f.ident,
                        k.describe()
                    ),
                };
                cx.error_spanned_by(&l.tokens, message);
            }
        }

        // Shape and rank.
        let rank = match (&a.shape, f.type_rank) {
            (Some(s), Some(r)) if s.dims.len() != r => {
                let what = if f.kind == Kind::Compressed {
                    "a `Compressed` field is a rank-2 matrix".to_owned()
                } else {
                    format!("the field's type has rank {r}")
                };
                cx.error_spanned_by(
                    &s.tokens,
                    format!(
                        "rank mismatch: {what}, but the shape has rank {}",
                        s.dims.len()
                    ),
                );
                r
            }
            (Some(s), _) => s.dims.len(),
            (None, Some(r)) => r,
            (None, None) => 1,
        };

        // Quantization.
        if f.kind == Kind::Quantized {
            quantization(cx, a, rank, Some(f.inner));
        } else {
            for (key, tokens) in quant_attrs(a) {
                cx.error_spanned_by(
                    tokens,
                    format!(
                        "`{key}` needs a `hurray::derive::Quantized<'a, T>` field, but `{}` is {}",
                        f.ident,
                        f.kind.describe()
                    ),
                );
            }
        }

        // Lifetimes.
        if f.borrows() {
            match (&lifetime, f.lifetime) {
                (None, _) => cx.error_spanned_by(
                    f.inner,
                    format!(
                        "`{}` borrows from the file, so the struct needs a lifetime parameter (`struct {}<'a>`) used here",
                        f.ident, input.ident
                    ),
                ),
                (Some(want), Some(got)) if want != got => cx.error_spanned_by(
                    got,
                    format!(
                        "`{}` must borrow with the struct's lifetime `{want}`, not `{got}`",
                        f.ident
                    ),
                ),
                _ => {}
            }
        }
    }
}

/// Checks the metadata fields (`#[hurray(metadata)]`, `metadata_of`): at most
/// one for the file and one per tensor field, each naming a tensor field of
/// this struct, with no tensor attribute; and that declared entries
/// (`metadata(...)`) sit on tensor fields.
fn metadata_fields(cx: &mut Ctxt, input: &Input<'_>) {
    if let Some(tokens) = &input.attrs.file_metadata {
        cx.error_spanned_by(
            tokens,
            "on the struct, `metadata` declares file metadata: `metadata(key = \"value\", ...)`; a field holds the file's metadata at run time with a bare `#[hurray(metadata)]`",
        );
    }
    let mut file_field: Option<&syn::Ident> = None;
    let mut targets: BTreeMap<String, &syn::Ident> = BTreeMap::new();
    for f in &input.fields {
        let a = &f.attrs;
        if !f.is_metadata() {
            if f.kind == Kind::Nested
                && let Some(first) = a.metadata.first()
            {
                cx.error_spanned_by(
                    &first.tokens,
                    format!(
                        "`metadata(...)` declares a tensor's metadata, but `{}` is a nested struct (declare it on that struct's fields, or on the struct for the file)",
                        f.ident
                    ),
                );
            }
            continue;
        }
        let mut stray: Vec<(&str, proc_macro2::TokenStream)> = tensor_only_attrs(a);
        if let Some(r) = &a.rename {
            stray.push(("rename", r.tokens.clone()));
        }
        if let Some(first) = a.metadata.first() {
            stray.push(("metadata(...)", first.tokens.clone()));
        }
        for (key, tokens) in stray {
            cx.error_spanned_by(
                tokens,
                format!(
                    "`{key}` applies to tensor fields, but `{}` holds metadata",
                    f.ident
                ),
            );
        }
        match (&a.file_metadata, &a.metadata_of) {
            (Some(_), Some(of)) => cx.error_spanned_by(
                &of.tokens,
                "a field holds either the file's metadata (`metadata`) or a tensor's (`metadata_of`), not both",
            ),
            (Some(tokens), None) => {
                if let Some(first) = file_field {
                    cx.error_spanned_by(
                        tokens,
                        format!("the file's metadata is already held by field `{first}`"),
                    );
                }
                file_field.get_or_insert(f.ident);
            }
            (None, Some(of)) => {
                match input.field(&of.value) {
                    None => cx.error_spanned_by(
                        &of.tokens,
                        format!("no field `{}` in `{}`", of.value, input.ident),
                    ),
                    Some(t) if t.kind == Kind::Nested || t.is_metadata() => cx.error_spanned_by(
                        &of.tokens,
                        format!(
                            "`{}` is {}, not a tensor field: only a tensor has metadata of its own",
                            of.value,
                            t.kind.describe()
                        ),
                    ),
                    Some(_) => {
                        if let Some(first) = targets.get(&of.value) {
                            cx.error_spanned_by(
                                &of.tokens,
                                format!("the metadata of `{}` is already held by field `{first}`", of.value),
                            );
                        }
                        targets.entry(of.value.clone()).or_insert(f.ident);
                    }
                }
            }
            (None, None) => unreachable!("a metadata field has one of the two attributes"),
        }
    }
}

/// The struct's one lifetime parameter; further lifetimes are errors, and so
/// are type and const parameters unless `type_params`.
pub(crate) fn struct_lifetime(
    cx: &mut Ctxt,
    generics: &syn::Generics,
    derive: &str,
    type_params: bool,
) -> Option<syn::Lifetime> {
    let mut lifetime = None;
    for p in &generics.params {
        match p {
            syn::GenericParam::Lifetime(l) if lifetime.is_none() => {
                lifetime = Some(l.lifetime.clone());
            }
            syn::GenericParam::Lifetime(l) => cx.error_spanned_by(
                l,
                format!(
                    "#[derive({derive})] supports one lifetime parameter (the file's), found a second"
                ),
            ),
            syn::GenericParam::Type(_) | syn::GenericParam::Const(_) if type_params => {}
            syn::GenericParam::Type(t) => cx.error_spanned_by(
                &t.ident,
                format!("#[derive({derive})] does not support type parameters"),
            ),
            syn::GenericParam::Const(c) => cx.error_spanned_by(
                &c.ident,
                format!("#[derive({derive})] does not support const parameters"),
            ),
        }
    }
    lifetime
}

/// Checks the quantization keys; `at` is what to blame for a missing scheme.
pub(crate) fn quantization(cx: &mut Ctxt, a: &Attrs, rank: usize, at: Option<&syn::Type>) {
    let Some(q) = &a.quantization else {
        match at {
            // A scheme was written but is invalid: already reported.
            _ if a.has("quantization") => {}
            Some(ty) => cx.error_spanned_by(
                ty,
                "a `Quantized` field needs `#[hurray(quantization = \"per_tensor\" | \"per_axis\" | \"per_block\" | \"per_flat_block\")]`",
            ),
            None => {
                for (key, tokens) in quant_attrs(a) {
                    cx.error_spanned_by(tokens, format!("`{key}` needs `quantization = \"...\"`"));
                }
            }
        }
        return;
    };
    match (q.value, &a.axis) {
        (Scheme::Tensor, Some(axis)) => {
            cx.error_spanned_by(&axis.tokens, "per-tensor quantization has no `axis`")
        }
        (Scheme::FlatBlock, Some(axis)) => cx.error_spanned_by(
            &axis.tokens,
            "per-flat-block quantization has no `axis` (its blocks run over the whole tensor)",
        ),
        (Scheme::Axis | Scheme::Block, None) => {
            cx.error_spanned_by(&q.tokens, "this scheme needs `axis = N`")
        }
        (_, Some(axis)) if axis.value as usize >= rank => cx.error_spanned_by(
            &axis.tokens,
            format!(
                "quantization axis {} is out of range for a tensor of rank {rank}",
                axis.value
            ),
        ),
        _ => {}
    }
    match (q.value, &a.block_size) {
        (Scheme::Block | Scheme::FlatBlock, None) => {
            cx.error_spanned_by(&q.tokens, "per-block quantization needs `block_size = N`")
        }
        (Scheme::Tensor | Scheme::Axis, Some(b)) => cx.error_spanned_by(
            &b.tokens,
            "`block_size` applies to per-block quantization only",
        ),
        _ => {}
    }
}

fn quant_attrs(a: &Attrs) -> Vec<(&'static str, proc_macro2::TokenStream)> {
    let mut v = Vec::new();
    if let Some(x) = &a.quantization {
        v.push(("quantization", x.tokens.clone()));
    }
    if let Some(x) = &a.axis {
        v.push(("axis", x.tokens.clone()));
    }
    if let Some(x) = &a.block_size {
        v.push(("block_size", x.tokens.clone()));
    }
    if let Some(x) = &a.expressed {
        v.push(("expressed", x.tokens.clone()));
    }
    v
}

fn tensor_only_attrs(a: &Attrs) -> Vec<(&'static str, proc_macro2::TokenStream)> {
    let mut v = Vec::new();
    if let Some(x) = &a.shape {
        v.push(("shape", x.tokens.clone()));
    }
    if let Some(x) = &a.layout {
        v.push(("layout", x.tokens.clone()));
    }
    v.extend(quant_attrs(a));
    v
}
