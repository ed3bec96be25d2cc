//! `#[derive(Descriptor)]`: a marker type declaring one tensor descriptor.

use super::{dims, element_type, krate, quant_spec_value};
use crate::attr;
use crate::ctxt::Ctxt;
use crate::dtype::{self, Class};
use crate::valid;
use proc_macro2::TokenStream;
use quote::quote;

/// Parses, validates and expands.
pub(crate) fn derive(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let mut cx = Ctxt::default();
    let a = attr::parse(&mut cx, &input.attrs, attr::DESCRIPTOR_CONTAINER);
    valid::struct_lifetime(&mut cx, &input.generics, "Descriptor", false);
    match &input.data {
        syn::Data::Struct(s) if s.fields.is_empty() => {}
        _ => cx.error_spanned_by(
            &input.ident,
            "#[derive(Descriptor)] is for a unit struct (a marker) such as `struct Logits;`",
        ),
    }
    if !a.has("dtype") {
        cx.error_spanned_by(
            &input.ident,
            "#[derive(Descriptor)] needs `#[hurray(dtype = \"...\")]`, e.g. `dtype = \"f32\"`",
        );
    }
    let rank = a.shape.as_ref().map_or(0, |s| s.dims.len());
    if a.quantization.is_some() || a.axis.is_some() || a.block_size.is_some() {
        valid::quantization(&mut cx, &a, rank, None);
        if let Some(d) = &a.dtype {
            let class = dtype::TABLE
                .iter()
                .find(|(_, v, _)| *v == d.value)
                .map(|(_, _, c)| *c);
            if matches!(class, Some(Class::Bool | Class::Complex)) {
                cx.error_spanned_by(
                    &d.tokens,
                    "a quantized tensor stores integers or small floats, not bool or complex",
                );
            }
        }
    } else if let Some(x) = a.expressed.as_ref().or(a.scale.as_ref()) {
        cx.error_spanned_by(
            &x.tokens,
            "`expressed` and `scale` need `quantization = \"...\"`",
        );
    }
    if let Err(e) = cx.check() {
        return Ok(fallback(input, &a, e));
    }

    let p = {
        let k = krate(&a);
        quote!(#k::__private)
    };
    let ident = &input.ident;
    let name = a
        .name
        .as_ref()
        .map_or_else(|| ident.to_string(), |n| n.value.clone());
    let et = element_type(&p, a.dtype.as_ref().map_or("Float32", |d| d.value));
    let shape = match &a.shape {
        Some(s) => dims(&p, s),
        None => quote!(&[]),
    };
    let quant = match quant_spec_value(&p, &a) {
        Some(spec) => {
            let scale = element_type(&p, a.scale.as_ref().map_or("Float32", |s| s.value));
            quote!(#p::Option::Some((#spec, #scale)))
        }
        None => quote!(#p::Option::None),
    };
    Ok(quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::StaticDescriptor for #ident {
                const NAME: &'static #p::str = #name;
                const ELEMENT_TYPE: #p::ElementType = #et;
                const SHAPE: &'static [#p::Dim] = #shape;

                fn descriptor() -> #p::TensorDescriptor {
                    #p::static_descriptor(Self::NAME, Self::ELEMENT_TYPE, Self::SHAPE, #quant)
                }
            }
        };
    })
}

/// The errors plus a stub impl, so uses of `Self::descriptor()` do not add
/// errors of their own.
fn fallback(input: &syn::DeriveInput, a: &attr::Attrs, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    if !input.generics.params.is_empty() {
        return errors;
    }
    let p = {
        let k = krate(a);
        quote!(#k::__private)
    };
    let ident = &input.ident;
    quote! {
        #errors
        const _: () = {
            #[automatically_derived]
            impl #p::StaticDescriptor for #ident {
                const NAME: &'static #p::str = "";
                const ELEMENT_TYPE: #p::ElementType = #p::ElementType::UInt8;
                const SHAPE: &'static [#p::Dim] = &[];

                fn descriptor() -> #p::TensorDescriptor {
                    ::core::unreachable!("#[derive(Descriptor)] failed")
                }
            }
        };
    }
}
