//! `#[derive(Tensors)]`.

use super::{dims, krate, quant_spec};
use crate::ast::{Input, Kind};
use crate::attr::LayoutKind;
use crate::ctxt::Ctxt;
use crate::valid;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// Parses, validates and expands.
pub(crate) fn derive(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let mut cx = Ctxt::default();
    let parsed = Input::from_syn(&mut cx, input);
    if let Some(parsed) = &parsed {
        valid::tensors(&mut cx, parsed);
    }
    cx.check()?;
    let Some(parsed) = parsed else {
        unreachable!("no input means an error was recorded")
    };
    Ok(expand(&parsed))
}

fn expand(input: &Input<'_>) -> TokenStream {
    let krate = krate(&input.attrs);
    let p = quote!(#krate::__private);
    let ident = input.ident;
    let (_, ty_generics, where_clause) = input.generics.split_for_impl();

    // The file lifetime: the struct's own, or a fresh one for owned structs.
    let own = input.generics.lifetimes().next().map(|l| l.lifetime.clone());
    let lt = own
        .clone()
        .unwrap_or_else(|| syn::Lifetime::new("'__hurray", Span::call_site()));
    let mut impl_generics = input.generics.clone();
    if own.is_none() {
        impl_generics
            .params
            .push(syn::GenericParam::Lifetime(syn::LifetimeParam::new(lt.clone())));
    }
    let (trait_impl_generics, _, _) = impl_generics.split_for_impl();
    let (inherent_generics, _, _) = input.generics.split_for_impl();
    // Owned structs take the file lifetime per method.
    let method_lt = if own.is_none() { quote!(<#lt>) } else { quote!() };

    let mut specs = Vec::new();
    let mut describe = Vec::new();
    let mut write = Vec::new();
    let mut read = Vec::new();
    for (i, f) in input.fields.iter().enumerate() {
        let field = f.ident;
        let name = f.name();
        let ty = f.ty;
        if f.kind == Kind::Nested {
            let span = ty.span();
            let tr = quote_spanned!(span=> <#ty as #p::TensorSet<#lt>>);
            describe.push(quote! {
                #tr::describe_tensors(&self.#field, &#p::nested(prefix, #name), out)?;
            });
            write.push(quote! {
                #tr::write_tensors(&self.#field, &#p::nested(prefix, #name), writer)?;
            });
            read.push(quote! {
                #field: #tr::read_tensors(reader, &#p::nested(prefix, #name))?,
            });
            continue;
        }
        let spec = format_ident!("__SPEC_{}", i);
        let shape = match &f.attrs.shape {
            Some(s) => {
                let d = dims(&p, s);
                quote!(#p::Option::Some(#d))
            }
            None => quote!(#p::Option::None),
        };
        let layout = match f.attrs.layout.as_ref().map(|l| l.value) {
            Some(LayoutKind::Csc) => quote!(#p::LayoutKind::Csc),
            Some(LayoutKind::Csr) => quote!(#p::LayoutKind::Csr),
            _ if f.kind == Kind::Compressed => quote!(#p::LayoutKind::Csr),
            _ => quote!(#p::LayoutKind::Dense),
        };
        let quant = quant_spec(&p, &f.attrs);
        specs.push(quote! {
            const #spec: #p::FieldSpec = #p::FieldSpec {
                name: #name,
                shape: #shape,
                layout: #layout,
                quantization: #quant,
            };
        });
        let (d, w, r) = if f.optional {
            (
                quote!(describe_optional),
                quote!(write_optional),
                quote!(read_optional),
            )
        } else {
            (quote!(describe), quote!(write), quote!(read))
        };
        // Spanned at the field type, so an unsatisfied bound points there.
        let inner = f.inner;
        let span = inner.span();
        let tf = quote_spanned!(span=> #inner);
        let wty = quote_spanned!(span=> __W);
        describe.push(quote! {
            #p::#d::<#tf>(&self.#field, prefix, &#spec, out)?;
        });
        write.push(quote! {
            #p::#w::<#tf, #wty>(&self.#field, prefix, &#spec, writer)?;
        });
        read.push(quote! {
            #field: #p::#r::<#tf>(reader, prefix, &#spec)?,
        });
    }

    quote! {
        const _: () = {
            #(#specs)*

            #[automatically_derived]
            impl #trait_impl_generics #p::TensorSet<#lt> for #ident #ty_generics #where_clause {
                fn describe_tensors(
                    &self,
                    prefix: &#p::str,
                    out: &mut #p::Vec<#p::TensorDescriptor>,
                ) -> #p::Result<()> {
                    #(#describe)*
                    #p::Result::Ok(())
                }

                fn write_tensors<__W: #p::Write>(
                    &self,
                    prefix: &#p::str,
                    writer: &mut #p::Writer<__W>,
                ) -> #p::Result<()> {
                    #(#write)*
                    #p::Result::Ok(())
                }

                fn read_tensors(reader: #p::Reader<#lt>, prefix: &#p::str) -> #p::Result<Self> {
                    #p::Result::Ok(Self {
                        #(#read)*
                    })
                }
            }

            #[automatically_derived]
            impl #inherent_generics #ident #ty_generics #where_clause {
                /// The descriptor of every tensor of this value.
                pub fn descriptors(&self) -> #p::Result<#p::Vec<#p::TensorDescriptor>> {
                    #p::TensorSet::tensor_descriptors(self)
                }

                /// Writes every tensor to `path` atomically; returns the file length.
                pub fn save(&self, path: impl #p::AsRef<#p::Path>) -> #p::Result<u64> {
                    #p::TensorSet::save_file(self, #p::AsRef::as_ref(&path))
                }

                /// Writes every tensor as a Hurray file to `out`; returns its length.
                pub fn write_to<__W: #p::Write>(&self, out: __W) -> #p::Result<u64> {
                    #p::TensorSet::write_file(self, out)
                }

                /// Reads every tensor from a verified file, borrowing its bytes,
                /// each checked against its field's declaration.
                pub fn load #method_lt (file: &#lt #p::File) -> #p::Result<Self> {
                    <Self as #p::TensorSet<#lt>>::load_file(file)
                }

                /// Like [`load`](Self::load), from a reader.
                pub fn from_reader #method_lt (reader: #p::Reader<#lt>) -> #p::Result<Self> {
                    <Self as #p::TensorSet<#lt>>::read_tensors(reader, "")
                }
            }
        };
    }
}
