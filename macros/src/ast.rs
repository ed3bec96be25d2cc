//! The derive input as the expansion sees it: a struct with named fields,
//! each classified by its type.

use crate::attr::{self, Attrs};
use crate::ctxt::Ctxt;
use syn::{GenericArgument, PathArguments, Type};

/// What a field holds, judged from its type's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `&'a [T]`.
    Slice,
    /// `Vec<T>`.
    Vec,
    /// `Packed<'a, P>`.
    Packed,
    /// `Compressed<'a, T, I>`.
    Compressed,
    /// `Coo<'a, T, I>`.
    Coo,
    /// `Quantized<'a, T, S>`.
    Quantized,
    /// `ndarray::ArrayView<'a, T, D>` and its aliases (`ArrayView2<'a, T>`, ...).
    NdView,
    /// `ndarray::Array<T, D>` and its aliases (`Array2<T>`, `ArrayD<T>`, ...).
    NdArray,
    /// Another struct deriving `Tensors`.
    Nested,
    /// `#[hurray(metadata)]`: the file's metadata, a `BTreeMap<String, String>`.
    FileMetadata,
    /// `#[hurray(metadata_of = "field")]`: a tensor field's metadata.
    TensorMetadata,
}

impl Kind {
    /// The user-facing name of the kind, for error messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Kind::Slice => "a borrowed slice",
            Kind::Vec => "a `Vec`",
            Kind::Packed => "a `Packed` field",
            Kind::Compressed => "a `Compressed` field",
            Kind::Coo => "a `Coo` field",
            Kind::Quantized => "a `Quantized` field",
            Kind::NdView => "an ndarray view",
            Kind::NdArray => "an ndarray array",
            Kind::Nested => "a nested struct",
            Kind::FileMetadata => "the file's metadata",
            Kind::TensorMetadata => "a tensor's metadata",
        }
    }
}

/// One field of a `#[derive(Tensors)]` struct.
pub(crate) struct Field<'a> {
    pub(crate) ident: &'a syn::Ident,
    /// The type inside `Option<...>`, or the whole type.
    pub(crate) inner: &'a Type,
    pub(crate) optional: bool,
    pub(crate) kind: Kind,
    /// The lifetime a borrowed kind is declared with, if written.
    pub(crate) lifetime: Option<&'a syn::Lifetime>,
    /// The rank the type itself fixes (`Array2` is 2, `Compressed` 2), if any.
    pub(crate) type_rank: Option<usize>,
    pub(crate) attrs: Attrs,
}

impl Field<'_> {
    /// The tensor name (without prefix): `rename` or the field's name.
    pub(crate) fn name(&self) -> String {
        match &self.attrs.rename {
            Some(r) => r.value.clone(),
            None => self.field_name(),
        }
    }

    /// The field's own name, without `r#` (what `metadata_of` names).
    pub(crate) fn field_name(&self) -> String {
        let s = self.ident.to_string();
        s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
    }

    /// Whether the field holds metadata rather than a tensor.
    pub(crate) fn is_metadata(&self) -> bool {
        matches!(self.kind, Kind::FileMetadata | Kind::TensorMetadata)
    }

    /// Whether the field borrows from the file.
    pub(crate) fn borrows(&self) -> bool {
        matches!(
            self.kind,
            Kind::Slice
                | Kind::Packed
                | Kind::Compressed
                | Kind::Coo
                | Kind::Quantized
                | Kind::NdView
        )
    }
}

/// A parsed `#[derive(Tensors)]` input.
pub(crate) struct Input<'a> {
    pub(crate) ident: &'a syn::Ident,
    pub(crate) generics: &'a syn::Generics,
    pub(crate) attrs: Attrs,
    pub(crate) fields: Vec<Field<'a>>,
}

impl<'a> Input<'a> {
    /// The field called `name` (without `r#`), as `metadata_of` names one.
    pub(crate) fn field(&self, name: &str) -> Option<&Field<'a>> {
        self.fields.iter().find(|f| f.field_name() == name)
    }

    /// The field holding the run-time metadata of field `target`, if any.
    pub(crate) fn metadata_holder(&self, target: &Field<'_>) -> Option<&Field<'a>> {
        let name = target.field_name();
        self.fields.iter().find(|m| {
            m.attrs
                .metadata_of
                .as_ref()
                .is_some_and(|of| of.value == name)
        })
    }

    /// Parses a struct with named fields; other shapes are errors.
    pub(crate) fn from_syn(cx: &mut Ctxt, input: &'a syn::DeriveInput) -> Option<Self> {
        let attrs = attr::parse(cx, &input.attrs, attr::TENSORS_CONTAINER);
        let named = match &input.data {
            syn::Data::Struct(syn::DataStruct {
                fields: syn::Fields::Named(named),
                ..
            }) => named,
            syn::Data::Struct(s) => {
                let what = match s.fields {
                    syn::Fields::Unit => "a unit struct",
                    _ => "a tuple struct",
                };
                cx.error_spanned_by(
                    input.ident.clone(),
                    format!(
                        "#[derive(Tensors)] needs a struct with named fields, not {what}: each field names a tensor"
                    ),
                );
                return None;
            }
            syn::Data::Enum(e) => {
                cx.error_spanned_by(
                    e.enum_token,
                    "#[derive(Tensors)] is for structs whose fields are tensors, not enums",
                );
                return None;
            }
            syn::Data::Union(u) => {
                cx.error_spanned_by(
                    u.union_token,
                    "#[derive(Tensors)] is for structs whose fields are tensors, not unions",
                );
                return None;
            }
        };
        let mut fields = Vec::new();
        for f in &named.named {
            let attrs = attr::parse(cx, &f.attrs, attr::TENSORS_FIELD);
            let Some(ident) = f.ident.as_ref() else {
                continue;
            };
            let (inner, optional) = match option_inner(&f.ty) {
                Some(inner) => (inner, true),
                None => (&f.ty, false),
            };
            // A metadata field is one by its attribute; its type is checked
            // by the compiler against what the generated code assigns.
            let metadata_kind = match (&attrs.file_metadata, &attrs.metadata_of) {
                (Some(_), _) => Some(Kind::FileMetadata),
                (None, Some(_)) => Some(Kind::TensorMetadata),
                (None, None) => None,
            };
            if let Some(kind) = metadata_kind {
                if optional {
                    cx.error_spanned_by(
                        &f.ty,
                        "a metadata field is a `BTreeMap<String, String>` (empty when there is none), not an `Option`",
                    );
                }
                fields.push(Field {
                    ident,
                    inner,
                    optional: false,
                    kind,
                    lifetime: None,
                    type_rank: None,
                    attrs,
                });
                continue;
            }
            match classify(inner) {
                Ok((kind, lifetime)) => fields.push(Field {
                    ident,
                    inner,
                    optional,
                    kind,
                    lifetime,
                    type_rank: type_rank(kind, inner),
                    attrs,
                }),
                Err(msg) => cx.error_spanned_by(inner, msg),
            }
        }
        Some(Input {
            ident: &input.ident,
            generics: &input.generics,
            attrs,
            fields,
        })
    }
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn generic_args(seg: &syn::PathSegment) -> Vec<&GenericArgument> {
    match &seg.arguments {
        PathArguments::AngleBracketed(a) => a.args.iter().collect(),
        _ => Vec::new(),
    }
}

/// `T` of `Option<T>`.
fn option_inner(ty: &Type) -> Option<&Type> {
    let seg = last_segment(ty)?;
    if seg.ident != "Option" {
        return None;
    }
    match generic_args(seg).as_slice() {
        [GenericArgument::Type(t)] => Some(t),
        _ => None,
    }
}

const NOT_TENSORS: &[&str] = &[
    "bool",
    "char",
    "str",
    "String",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "f32",
    "f64",
    "Box",
    "Rc",
    "Arc",
    "HashMap",
    "BTreeMap",
    "Cow",
    "PhantomData",
];

const SUPPORTED: &str = "expected `&'a [T]`, `Vec<T>`, `hurray::derive::Packed<'a, P>`, `hurray::derive::Compressed<'a, T>`, `hurray::derive::Coo<'a, T>`, `hurray::derive::Quantized<'a, T>`, an ndarray `ArrayView`/`Array`, an `Option` of one of them, or a struct deriving `Tensors`";

fn classify(ty: &Type) -> Result<(Kind, Option<&syn::Lifetime>), String> {
    match ty {
        Type::Reference(r) => match &*r.elem {
            Type::Slice(_) if r.mutability.is_none() => Ok((Kind::Slice, r.lifetime.as_ref())),
            Type::Slice(_) => Err("a tensor field borrows immutably: use `&'a [T]`".into()),
            _ => Err(format!("unsupported tensor field type: {SUPPORTED}")),
        },
        Type::Group(g) => classify(&g.elem),
        Type::Paren(p) => classify(&p.elem),
        Type::Path(_) => {
            let Some(seg) = last_segment(ty) else {
                return Err(format!("unsupported tensor field type: {SUPPORTED}"));
            };
            let lifetime = generic_args(seg).into_iter().find_map(|a| match a {
                GenericArgument::Lifetime(l) => Some(l),
                _ => None,
            });
            let name = seg.ident.to_string();
            match name.as_str() {
                "Vec" => Ok((Kind::Vec, None)),
                "Packed" => Ok((Kind::Packed, lifetime)),
                "Compressed" => Ok((Kind::Compressed, lifetime)),
                "Coo" => Ok((Kind::Coo, lifetime)),
                "Quantized" | "PackedQuantized" => Ok((Kind::Quantized, lifetime)),
                n if n.starts_with("ArrayView") => Ok((Kind::NdView, lifetime)),
                n if n == "Array" || is_array_alias(n) => Ok((Kind::NdArray, None)),
                "Option" => Err("an optional tensor is `Option<F>` of a tensor field type, not of another `Option`".into()),
                n if NOT_TENSORS.contains(&n) => Err(format!(
                    "`{n}` is not a tensor field type: {SUPPORTED}"
                )),
                _ => Ok((Kind::Nested, None)),
            }
        }
        _ => Err(format!("unsupported tensor field type: {SUPPORTED}")),
    }
}

/// `Array0` ... `Array6`, `ArrayD`.
fn is_array_alias(name: &str) -> bool {
    name.strip_prefix("Array")
        .is_some_and(|rest| rest == "D" || (rest.len() == 1 && rest.as_bytes()[0].is_ascii_digit()))
}

/// The rank an ndarray type name or its dimension argument fixes
/// (`Array2`, `ArrayView<'a, T, Ix3>`), or 2 for `Compressed`.
fn type_rank(kind: Kind, ty: &Type) -> Option<usize> {
    let seg = last_segment(ty)?;
    match kind {
        Kind::Compressed => Some(2),
        Kind::NdView | Kind::NdArray => {
            let name = seg.ident.to_string();
            let suffix = name
                .trim_start_matches("ArrayView")
                .trim_start_matches("Array");
            if let Ok(n) = suffix.parse::<usize>() {
                return Some(n);
            }
            generic_args(seg).into_iter().find_map(|a| match a {
                GenericArgument::Type(t) => {
                    let s = last_segment(t)?.ident.to_string();
                    s.strip_prefix("Ix")?.parse().ok()
                }
                _ => None,
            })
        }
        _ => None,
    }
}
