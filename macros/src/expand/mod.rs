//! Code generation, one module per derive. All output sits in
//! `const _: () = { ... };` and names the runtime only through
//! `<crate>::__private`.

pub(crate) mod descriptor;
pub(crate) mod element;
pub(crate) mod tensors;

use crate::attr::{Attrs, Scheme, Shape, ShapeDim};
use proc_macro2::TokenStream;
use quote::quote;

/// The path of the facade crate: `#[hurray(crate = "...")]` or `::hurray`.
pub(crate) fn krate(attrs: &Attrs) -> syn::Path {
    attrs
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::hurray))
}

/// `&[Dim::Fixed(3), Dim::Dynamic]`.
pub(crate) fn dims(p: &TokenStream, shape: &Shape) -> TokenStream {
    let dims = shape.dims.iter().map(|d| match d {
        ShapeDim::Fixed(n) => quote!(#p::Dim::Fixed(#n)),
        ShapeDim::Dynamic => quote!(#p::Dim::Dynamic),
    });
    quote!(&[#(#dims),*])
}

/// `ElementType::Variant`.
pub(crate) fn element_type(p: &TokenStream, variant: &str) -> TokenStream {
    let v = syn::Ident::new(variant, proc_macro2::Span::call_site());
    quote!(#p::ElementType::#v)
}

/// The `QuantSpec` of the attributes as an `Option`.
pub(crate) fn quant_spec(p: &TokenStream, a: &Attrs) -> TokenStream {
    match quant_spec_value(p, a) {
        Some(spec) => quote!(#p::Option::Some(#spec)),
        None => quote!(#p::Option::None),
    }
}

/// The `QuantSpec` of the attributes, if they declare a scheme.
pub(crate) fn quant_spec_value(p: &TokenStream, a: &Attrs) -> Option<TokenStream> {
    let q = a.quantization.as_ref()?;
    let axis = a.axis.as_ref().map_or(0, |x| x.value);
    let block = a.block_size.as_ref().map_or(1, |x| x.value);
    let scheme = match q.value {
        Scheme::Tensor => quote!(#p::QuantizationScheme::PerTensor),
        Scheme::Axis => quote!(#p::QuantizationScheme::PerAxis { axis: #axis }),
        Scheme::Block => {
            quote!(#p::QuantizationScheme::PerBlock { axis: #axis, block_size: #block })
        }
        Scheme::FlatBlock => quote!(#p::QuantizationScheme::PerFlatBlock { block_size: #block }),
    };
    let expressed = element_type(p, a.expressed.as_ref().map_or("Float32", |e| e.value));
    Some(quote!(#p::QuantSpec { scheme: #scheme, expressed_type: #expressed }))
}
