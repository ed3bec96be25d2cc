//! `#[derive(Tensors)]`.

use super::{dims, krate, quant_spec};
use crate::ast::{Input, Kind};
use crate::attr::LayoutKind;
use crate::ctxt::Ctxt;
use crate::valid;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// Parses, validates and expands. On error the output is the errors plus a
/// stub implementation (when the struct's generics allow one), so the user
/// sees the real errors rather than a cascade of "no method `load`".
pub(crate) fn derive(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let mut cx = Ctxt::default();
    let parsed = Input::from_syn(&mut cx, input);
    if let Some(parsed) = &parsed {
        valid::tensors(&mut cx, parsed);
    }
    match (cx.check(), parsed) {
        (Ok(()), Some(parsed)) => Ok(expand(&parsed)),
        (Err(e), _) => Ok(fallback(input, e)),
        (Ok(()), None) => unreachable!("no input means an error was recorded"),
    }
}

/// The impl headers shared by the real expansion and the fallback.
struct Frame {
    p: TokenStream,
    lt: syn::Lifetime,
    trait_header: TokenStream,
    inherent_header: TokenStream,
    method_lt: TokenStream,
    /// `<'a, T: Bound>` and the where clause, for the per-field functions.
    fn_generics: TokenStream,
    where_clause: TokenStream,
    /// `::<'a, T>`: the per-field functions' parameters are explicit, as
    /// they need not appear in the field's type.
    turbofish: TokenStream,
}

impl Frame {
    fn new(krate: &syn::Path, ident: &syn::Ident, generics: &syn::Generics) -> Self {
        let p = quote!(#krate::__private);
        let (_, ty_generics, where_clause) = generics.split_for_impl();
        // The file lifetime: the struct's own, or a fresh one for owned structs.
        let own = generics.lifetimes().next().map(|l| l.lifetime.clone());
        let lt = own
            .clone()
            .unwrap_or_else(|| syn::Lifetime::new("'__hurray", Span::call_site()));
        let mut with_lt = generics.clone();
        if own.is_none() {
            // Lifetimes come first.
            with_lt.params.insert(
                0,
                syn::GenericParam::Lifetime(syn::LifetimeParam::new(lt.clone())),
            );
        }
        let (trait_generics, with_lt_ty, _) = with_lt.split_for_impl();
        let turbofish = with_lt_ty.as_turbofish();
        let (inherent_generics, _, _) = generics.split_for_impl();
        Frame {
            trait_header: quote! {
                impl #trait_generics #p::TensorSet<#lt> for #ident #ty_generics #where_clause
            },
            inherent_header: quote!(impl #inherent_generics #ident #ty_generics #where_clause),
            // Owned structs take the file lifetime per method.
            method_lt: if own.is_none() {
                quote!(<#lt>)
            } else {
                quote!()
            },
            fn_generics: quote!(#trait_generics),
            turbofish: quote!(#turbofish),
            where_clause: quote!(#where_clause),
            p,
            lt,
        }
    }

    /// `const _: () = { impl TensorSet ..; impl S { load, save, .. } };`
    fn render(
        &self,
        specs: &[TokenStream],
        describe: TokenStream,
        write: TokenStream,
        read: TokenStream,
    ) -> TokenStream {
        let Frame {
            p,
            lt,
            trait_header,
            inherent_header,
            method_lt,
            ..
        } = self;
        quote! {
            const _: () = {
                #(#specs)*

                #[automatically_derived]
                #trait_header {
                    fn describe_tensors(
                        &self,
                        prefix: &#p::str,
                        out: &mut #p::Vec<#p::TensorDescriptor>,
                    ) -> #p::Result<()> {
                        #describe
                    }

                    fn write_tensors(
                        &self,
                        prefix: &#p::str,
                        sink: &mut dyn #p::TensorSink,
                    ) -> #p::Result<()> {
                        #write
                    }

                    fn read_tensors(
                        reader: &#p::Reader<#lt>,
                        prefix: &#p::str,
                    ) -> #p::Result<Self> {
                        #read
                    }
                }

                #[automatically_derived]
                #inherent_header {
                    /// The descriptor of every tensor of this value.
                    pub fn descriptors(&self) -> #p::Result<#p::Vec<#p::TensorDescriptor>> {
                        #p::TensorSet::tensor_descriptors(self)
                    }

                    /// Writes every tensor to `path` atomically; returns the file length.
                    pub fn save(&self, path: impl #p::AsRef<#p::Path>) -> #p::Result<#p::u64> {
                        #p::TensorSet::save_file(self, #p::AsRef::as_ref(&path))
                    }

                    /// Writes every tensor as a Hurray file to `out`; returns its length.
                    pub fn write_to<__W: #p::Write>(&self, out: __W) -> #p::Result<#p::u64> {
                        #p::TensorSet::write_file(self, out)
                    }

                    /// Reads every tensor from a verified file, borrowing its bytes,
                    /// each checked against its field's declaration.
                    pub fn load #method_lt (file: &#lt #p::File) -> #p::Result<Self> {
                        <Self as #p::TensorSet<#lt>>::load_file(file)
                    }

                    /// Like [`load`](Self::load), from a reader.
                    pub fn from_reader #method_lt (reader: #p::Reader<#lt>) -> #p::Result<Self> {
                        <Self as #p::TensorSet<#lt>>::read_tensors(&reader, "")
                    }
                }
            };
        }
    }
}

/// The errors, plus a stub implementation for structs whose generics are
/// supported (else the stub itself would add errors).
fn fallback(input: &syn::DeriveInput, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    let g = &input.generics;
    let simple = g.lifetimes().count() <= 1 && matches!(input.data, syn::Data::Struct(_));
    if !simple {
        return errors;
    }
    let attrs = crate::attr::parse(
        &mut Ctxt::default(),
        &input.attrs,
        crate::attr::TENSORS_CONTAINER,
    );
    let frame = Frame::new(&krate(&attrs), &input.ident, g);
    let stub = quote!(::core::unreachable!("#[derive(Tensors)] failed"));
    let out = frame.render(&[], stub.clone(), stub.clone(), stub);
    quote!(#errors #out)
}

/// `&[("key", "value"), ...]` of a field's `metadata(...)`.
fn static_metadata(attrs: &crate::attr::Attrs) -> TokenStream {
    let entries = attrs.metadata.iter().map(|e| {
        let (k, v) = (&e.key, &e.value);
        quote!((#k, #v))
    });
    quote!(&[#(#entries),*])
}

/// How a metadata field is filled on load: the file's metadata, or that of
/// the tensor its `metadata_of` names, collected into the field's map type.
fn read_metadata(p: &TokenStream, f: &crate::ast::Field<'_>, input: &Input<'_>) -> TokenStream {
    let field = f.ident;
    let span = f.inner.span();
    match &f.attrs.metadata_of {
        Some(of) => {
            let name = input
                .field(&of.value)
                .map_or_else(|| of.value.clone(), |t| t.name());
            quote_spanned! {span=>
                #field: #p::IntoIterator::into_iter(#p::read_tensor_metadata(reader, prefix, #name)).collect(),
            }
        }
        None => quote_spanned! {span=>
            #field: #p::IntoIterator::into_iter(#p::read_file_metadata(reader)).collect(),
        },
    }
}

/// The `FieldOps` / `NestedOps` methods for a field, optional or not.
fn method_names(optional: bool) -> (TokenStream, TokenStream, TokenStream) {
    if optional {
        (
            quote!(describe_optional),
            quote!(write_optional),
            quote!(read_optional),
        )
    } else {
        (quote!(describe), quote!(write), quote!(read))
    }
}

fn expand(input: &Input<'_>) -> TokenStream {
    let frame = Frame::new(&krate(&input.attrs), input.ident, input.generics);
    let p = frame.p.clone();
    let lt = frame.lt.clone();
    let fn_generics = &frame.fn_generics;
    let where_clause = &frame.where_clause;
    let tf = &frame.turbofish;

    let mut specs = Vec::new();
    let mut describe = Vec::new();
    let mut write = Vec::new();
    let mut read = Vec::new();
    for (i, f) in input.fields.iter().enumerate() {
        let field = f.ident;
        let name = f.name();
        if f.is_metadata() {
            read.push(read_metadata(&p, f, input));
            continue;
        }
        // One function per field builds its operations: the only place the
        // field type's bound is required, so a bad type is reported once,
        // at the type (the turbofish carries its span).
        let ops = format_ident!("__ops_{}", i);
        let inner = f.inner;
        if f.kind == Kind::Nested {
            let build = quote_spanned!(inner.span()=> #p::nested_ops::<#lt, #inner>());
            specs.push(quote! {
                fn #ops #fn_generics () -> #p::NestedOps<#lt, #inner> #where_clause {
                    #build
                }
            });
            let (d, w, r) = method_names(f.optional);
            describe.push(quote! {
                #ops #tf ().#d(&self.#field, prefix, #name, out)?;
            });
            write.push(quote! {
                #ops #tf ().#w(&self.#field, prefix, #name, sink)?;
            });
            read.push(quote! {
                #field: #ops #tf ().#r(reader, prefix, #name)?,
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
            _ if f.kind == Kind::Coo => quote!(#p::LayoutKind::Coo),
            _ => quote!(#p::LayoutKind::Dense),
        };
        let quant = quant_spec(&p, &f.attrs);
        let metadata = static_metadata(&f.attrs);
        let build = quote_spanned!(inner.span()=> #p::field_ops::<#lt, #inner>());
        specs.push(quote! {
            const #spec: #p::FieldSpec = #p::FieldSpec {
                name: #name,
                shape: #shape,
                layout: #layout,
                quantization: #quant,
                metadata: #metadata,
            };
            fn #ops #fn_generics () -> #p::FieldOps<#lt, #inner> #where_clause {
                #build
            }
        });
        let (d, w, r) = method_names(f.optional);
        // The runtime metadata of a `metadata_of` field naming this one.
        let extra = match input.metadata_holder(f) {
            Some(m) => {
                let holder = m.ident;
                quote_spanned!(m.inner.span()=> #p::Option::Some(&#p::metadata_map(&self.#holder)))
            }
            None => quote!(#p::Option::None),
        };
        describe.push(quote! {
            #ops #tf ().#d(&self.#field, prefix, &#spec, #extra, out)?;
        });
        write.push(quote! {
            #ops #tf ().#w(&self.#field, prefix, &#spec, #extra, sink)?;
        });
        read.push(quote! {
            #field: #ops #tf ().#r(reader, prefix, &#spec)?,
        });
    }

    // File metadata after the fields, so an outer struct's entries win over
    // a nested one's: the declared entries, then the run-time field's.
    let declared = input.attrs.metadata.iter().map(|e| {
        let (k, v) = (&e.key, &e.value);
        quote!((#k, #v))
    });
    if !input.attrs.metadata.is_empty() {
        write.push(quote! {
            #p::write_file_metadata(sink, [#(#declared),*])?;
        });
    }
    if let Some(m) = input.fields.iter().find(|f| f.kind == Kind::FileMetadata) {
        let holder = m.ident;
        write.push(quote_spanned! {m.inner.span()=>
            #p::write_file_metadata(sink, &self.#holder)?;
        });
    }

    frame.render(
        &specs,
        quote! {
            #(#describe)*
            #p::Result::Ok(())
        },
        quote! {
            #(#write)*
            #p::Result::Ok(())
        },
        quote! {
            #p::Result::Ok(Self {
                #(#read)*
            })
        },
    )
}
