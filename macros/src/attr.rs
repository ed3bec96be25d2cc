//! Parsing of `#[hurray(...)]` attributes into plain values, with every
//! unknown, duplicate or malformed key recorded in the [`Ctxt`].

use crate::ctxt::Ctxt;
use crate::dtype;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::parse::ParseStream;
use syn::{LitInt, LitStr, Token};

/// One dimension of a `shape = [...]` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShapeDim {
    Fixed(u64),
    Dynamic,
}

/// A `shape = [3, ?, 5]` attribute: the dimensions and the tokens to point errors at.
#[derive(Clone)]
pub(crate) struct Shape {
    pub(crate) dims: Vec<ShapeDim>,
    pub(crate) tokens: TokenStream,
}

/// `layout = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LayoutKind {
    Dense,
    Csr,
    Csc,
    Coo,
}

impl LayoutKind {
    /// The attribute's spelling.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LayoutKind::Dense => "dense",
            LayoutKind::Csr => "csr",
            LayoutKind::Csc => "csc",
            LayoutKind::Coo => "coo",
        }
    }
}

/// `quantization = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Tensor,
    Axis,
    Block,
    /// Format 1.4: blocks of the whole tensor, row-major.
    FlatBlock,
}

impl Scheme {
    /// Each scheme under the runtime's name for it (`QuantizationKind::name`;
    /// a proc-macro crate cannot depend on the runtime, so a test holds the
    /// two together).
    pub(crate) const NAMED: [(&'static str, Scheme); 4] = [
        ("per_tensor", Scheme::Tensor),
        ("per_axis", Scheme::Axis),
        ("per_block", Scheme::Block),
        ("per_flat_block", Scheme::FlatBlock),
    ];

    fn named(name: &str) -> Option<Scheme> {
        Scheme::NAMED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, s)| s)
    }
}

/// One `key = "value"` of `metadata(...)`.
#[derive(Clone)]
pub(crate) struct MetadataEntry {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) tokens: TokenStream,
}

/// A value with the tokens it came from.
#[derive(Clone)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) tokens: TokenStream,
}

impl<T> Spanned<T> {
    fn new(value: T, tokens: impl ToTokens) -> Self {
        Spanned {
            value,
            tokens: tokens.into_token_stream(),
        }
    }
}

/// Every key any `#[hurray(...)]` attribute may hold; which ones a given
/// position accepts is decided by the `allowed` list passed to [`parse`].
#[derive(Default, Clone)]
pub(crate) struct Attrs {
    pub(crate) krate: Option<syn::Path>,
    pub(crate) rename: Option<Spanned<String>>,
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) shape: Option<Shape>,
    pub(crate) layout: Option<Spanned<LayoutKind>>,
    pub(crate) dtype: Option<Spanned<&'static str>>,
    pub(crate) quantization: Option<Spanned<Scheme>>,
    pub(crate) axis: Option<Spanned<u32>>,
    pub(crate) block_size: Option<Spanned<u64>>,
    /// Expressed type variant.
    pub(crate) expressed: Option<Spanned<&'static str>>,
    /// Scale type variant (`#[derive(Descriptor)]` only).
    pub(crate) scale: Option<Spanned<&'static str>>,
    /// `metadata(key = "value", ...)`: declared entries, in order.
    pub(crate) metadata: Vec<MetadataEntry>,
    /// A bare `metadata`: the field holds the file's metadata at run time.
    pub(crate) file_metadata: Option<TokenStream>,
    /// `metadata_of = "field"`: the field holds that tensor field's metadata.
    pub(crate) metadata_of: Option<Spanned<String>>,
    /// Every accepted key that was written, valid value or not, so a bad
    /// value is not reported a second time as a missing key.
    pub(crate) seen: Vec<&'static str>,
}

impl Attrs {
    /// Whether `key` was written.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.seen.contains(&key)
    }
}

/// Keys accepted on a `#[derive(Tensors)]` struct.
pub(crate) const TENSORS_CONTAINER: &[&str] = &["crate", "metadata"];
/// Keys accepted on a `#[derive(Tensors)]` field.
pub(crate) const TENSORS_FIELD: &[&str] = &[
    "rename",
    "shape",
    "layout",
    "quantization",
    "axis",
    "block_size",
    "expressed",
    "metadata",
    "metadata_of",
];
/// Keys accepted on a `#[derive(Element)]` type.
pub(crate) const ELEMENT_CONTAINER: &[&str] = &["crate"];
/// Keys accepted on a `#[derive(Descriptor)]` type.
pub(crate) const DESCRIPTOR_CONTAINER: &[&str] = &[
    "crate",
    "name",
    "dtype",
    "shape",
    "quantization",
    "axis",
    "block_size",
    "expressed",
    "scale",
];

/// Parses every `#[hurray(...)]` among `attrs`, accepting only `allowed` keys.
pub(crate) fn parse(cx: &mut Ctxt, attrs: &[syn::Attribute], allowed: &[&'static str]) -> Attrs {
    let mut out = Attrs::default();
    for attr in attrs {
        if !attr.path().is_ident("hurray") {
            continue;
        }
        if let Err(e) = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let key = key.as_str();
            if !allowed.contains(&key) {
                let path = &meta.path;
                let shown = quote!(#path).to_string().replace(' ', "");
                cx.error_spanned_by(
                    path,
                    format!(
                        "unknown hurray attribute `{shown}` here; expected one of: {}",
                        allowed.join(", ")
                    ),
                );
                // Skip the value (`= ...` or `(...)`), whatever its tokens,
                // so the other keys are still checked.
                while !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                    meta.input.parse::<proc_macro2::TokenTree>()?;
                }
                return Ok(());
            }
            if let Some(k) = allowed.iter().find(|k| **k == key) {
                out.seen.push(k);
            }
            let path = meta.path.clone();
            let dup = |cx: &mut Ctxt, present: bool| {
                if present {
                    cx.error_spanned_by(&path, format!("duplicate hurray attribute `{key}`"));
                }
            };
            match key {
                "crate" => {
                    let s: LitStr = meta.value()?.parse()?;
                    dup(cx, out.krate.is_some());
                    match s.parse::<syn::Path>() {
                        Ok(p) => out.krate = Some(p),
                        Err(_) => cx.error_spanned_by(&s, "`crate` must be a path to the hurray crate"),
                    }
                }
                "rename" | "name" => {
                    let s: LitStr = meta.value()?.parse()?;
                    if s.value().is_empty() {
                        cx.error_spanned_by(&s, "a tensor name cannot be empty");
                    }
                    let slot = if key == "rename" { &mut out.rename } else { &mut out.name };
                    dup(cx, slot.is_some());
                    *slot = Some(Spanned::new(s.value(), &s));
                }
                "shape" => {
                    let shape = parse_shape(cx, meta.value()?)?;
                    dup(cx, out.shape.is_some());
                    out.shape = Some(shape);
                }
                "layout" => {
                    let s: LitStr = meta.value()?.parse()?;
                    dup(cx, out.layout.is_some());
                    let kind = match s.value().as_str() {
                        "dense" => Some(LayoutKind::Dense),
                        "csr" => Some(LayoutKind::Csr),
                        "csc" => Some(LayoutKind::Csc),
                        "coo" => Some(LayoutKind::Coo),
                        other => {
                            cx.error_spanned_by(
                                &s,
                                format!("unknown layout `{other}`; expected \"dense\", \"csr\", \"csc\" or \"coo\""),
                            );
                            None
                        }
                    };
                    out.layout = kind.map(|k| Spanned::new(k, &s));
                }
                "dtype" => {
                    let s: LitStr = meta.value()?.parse()?;
                    dup(cx, out.dtype.is_some());
                    out.dtype = element_type(cx, &s, None);
                }
                "expressed" | "scale" => {
                    let s: LitStr = meta.value()?.parse()?;
                    let slot = if key == "expressed" { &mut out.expressed } else { &mut out.scale };
                    dup(cx, slot.is_some());
                    let allowed = if key == "expressed" {
                        dtype::expressed_types()
                    } else {
                        dtype::SCALE_TYPES.to_vec()
                    };
                    *slot = element_type(cx, &s, Some(&allowed));
                }
                "quantization" => {
                    let s: LitStr = meta.value()?.parse()?;
                    dup(cx, out.quantization.is_some());
                    let scheme = Scheme::named(&s.value());
                    if scheme.is_none() {
                        let names: Vec<String> =
                            Scheme::NAMED.iter().map(|(n, _)| format!("{n:?}")).collect();
                        let (last, rest) = names.split_last().expect("schemes exist");
                        cx.error_spanned_by(
                            &s,
                            format!(
                                "unknown quantization scheme `{}`; expected {} or {last}",
                                s.value(),
                                rest.join(", ")
                            ),
                        );
                    }
                    out.quantization = scheme.map(|k| Spanned::new(k, &s));
                }
                "axis" => {
                    let n: LitInt = meta.value()?.parse()?;
                    dup(cx, out.axis.is_some());
                    out.axis = Some(Spanned::new(n.base10_parse()?, &n));
                }
                "block_size" => {
                    let n: LitInt = meta.value()?.parse()?;
                    dup(cx, out.block_size.is_some());
                    let v: u64 = n.base10_parse()?;
                    if v == 0 {
                        cx.error_spanned_by(&n, "`block_size` must be at least 1");
                    }
                    out.block_size = Some(Spanned::new(v, &n));
                }
                "metadata" if meta.input.peek(syn::token::Paren) => {
                    dup(cx, !out.metadata.is_empty());
                    meta.parse_nested_meta(|entry| {
                        let Some(ident) = entry.path.get_ident() else {
                            let path = &entry.path;
                            cx.error_spanned_by(path, "a metadata key is an identifier (`key = \"value\"`)");
                            return Ok(());
                        };
                        let key = ident.to_string();
                        let key = key.strip_prefix("r#").unwrap_or(&key).to_owned();
                        let value: LitStr = entry.value()?.parse()?;
                        if out.metadata.iter().any(|e| e.key == key) {
                            cx.error_spanned_by(ident, format!("metadata key `{key}` is given twice"));
                        }
                        out.metadata.push(MetadataEntry {
                            key,
                            value: value.value(),
                            tokens: quote!(#ident = #value),
                        });
                        Ok(())
                    })?;
                }
                "metadata" => {
                    dup(cx, out.file_metadata.is_some());
                    if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                        return Err(meta.error(
                            "expected `metadata` (a field holding the file's metadata) or `metadata(key = \"value\", ...)`",
                        ));
                    }
                    out.file_metadata = Some(quote!(#path));
                }
                "metadata_of" => {
                    let s: LitStr = meta.value()?.parse()?;
                    dup(cx, out.metadata_of.is_some());
                    out.metadata_of = Some(Spanned::new(s.value(), &s));
                }
                _ => unreachable!("every allowed key is handled"),
            }
            Ok(())
        }) {
            cx.syn_error(e);
        }
    }
    out
}

fn element_type(cx: &mut Ctxt, s: &LitStr, only: Option<&[&str]>) -> Option<Spanned<&'static str>> {
    let name = s.value();
    match (dtype::lookup(&name), only) {
        (Some(_), Some(allowed)) if !allowed.contains(&name.as_str()) => {
            cx.error_spanned_by(
                s,
                format!(
                    "`{name}` is not allowed here; expected one of: {}",
                    allowed.join(", ")
                ),
            );
            None
        }
        (Some((variant, _)), _) => Some(Spanned::new(variant, s)),
        (None, _) => {
            cx.error_spanned_by(
                s,
                format!(
                    "unknown element type `{name}`; expected one of: {}",
                    dtype::names()
                ),
            );
            None
        }
    }
}

/// `[3, 0, 5]`, `[?, 4]`, `[]`.
fn parse_shape(cx: &mut Ctxt, input: ParseStream<'_>) -> syn::Result<Shape> {
    let content;
    let bracket = syn::bracketed!(content in input);
    let mut dims = Vec::new();
    let mut tokens = TokenStream::new();
    bracket.surround(&mut tokens, |t| {
        t.extend(content.fork().parse::<TokenStream>().unwrap_or_default());
    });
    while !content.is_empty() {
        if content.peek(Token![?]) {
            content.parse::<Token![?]>()?;
            dims.push(ShapeDim::Dynamic);
        } else if content.peek(LitInt) {
            let n: LitInt = content.parse()?;
            match n.base10_parse::<u64>() {
                Ok(v) if v != u64::MAX => dims.push(ShapeDim::Fixed(v)),
                _ => {
                    cx.error_spanned_by(
                        &n,
                        "a dimension is a size below 2^64 - 1, or `?` for a dynamic one",
                    );
                    dims.push(ShapeDim::Dynamic);
                }
            }
        } else {
            let tt: proc_macro2::TokenTree = content.parse()?;
            return Err(syn::Error::new(
                tt.span(),
                "expected a dimension: an integer size (0 for an empty dimension) or `?` for a dynamic one",
            ));
        }
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    if tokens.is_empty() {
        tokens = quote::quote_spanned!(Span::call_site()=> []);
    }
    Ok(Shape { dims, tokens })
}
