//! `#[derive(Element)]` for `#[repr(transparent)]` newtypes.

use super::krate;
use crate::attr;
use crate::ctxt::Ctxt;
use crate::valid;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// Parses, validates and expands.
pub(crate) fn derive(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let mut cx = Ctxt::default();
    let attrs = attr::parse(&mut cx, &input.attrs, attr::ELEMENT_CONTAINER);
    valid::struct_lifetime(&mut cx, &input.generics, "Element", false);
    if let Some(l) = input.generics.lifetimes().next() {
        cx.error_spanned_by(l, "#[derive(Element)] is for plain values: no lifetimes");
    }
    if !is_transparent(&input.attrs) {
        cx.error_spanned_by(
            &input.ident,
            "#[derive(Element)] needs `#[repr(transparent)]`: the newtype must be stored exactly as its field",
        );
    }
    let field = match &input.data {
        syn::Data::Struct(s) if s.fields.len() == 1 => s.fields.iter().next(),
        syn::Data::Struct(s) => {
            cx.error_spanned_by(
                &s.fields,
                format!(
                    "#[derive(Element)] needs exactly one field (the stored element), found {}",
                    s.fields.len()
                ),
            );
            None
        }
        _ => {
            cx.error_spanned_by(
                &input.ident,
                "#[derive(Element)] is for a newtype struct such as `struct Meters(f32);`",
            );
            None
        }
    };
    cx.check()?;
    let Some(field) = field else {
        unreachable!("a missing field was reported")
    };
    let p = {
        let k = krate(&attrs);
        quote!(#k::__private)
    };
    let ident = &input.ident;
    let inner = &field.ty;
    let bound = quote_spanned!(inner.span()=> <#inner as #p::Element>::TYPE);
    Ok(quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::Element for #ident {
                const TYPE: #p::ElementType = #bound;
            }
            #p::assert_same_size::<#ident, #inner>();
        };
    })
}

fn is_transparent(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.parse_nested_meta(|m| {
                if m.path.is_ident("transparent") {
                    Err(m.error("found"))
                } else {
                    Ok(())
                }
            })
            .is_err()
    })
}
