#![doc = include_str!("../../docs/impl/derive.md")]

mod ast;
mod attr;
mod ctxt;
mod dtype;
mod expand;
mod valid;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Implements `hurray::derive::TensorSet` for a struct whose fields are tensors, and
/// generates `descriptors`, `save`, `write_to`, `load` and `from_reader`.
#[proc_macro_derive(Tensors, attributes(hurray))]
pub fn derive_tensors(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::tensors::derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Implements `hurray::Element` for a `#[repr(transparent)]` newtype of an element type.
#[proc_macro_derive(Element, attributes(hurray))]
pub fn derive_element(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::element::derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Implements `hurray::derive::StaticDescriptor` for a unit struct that declares a
/// tensor descriptor at compile time.
#[proc_macro_derive(Descriptor, attributes(hurray))]
pub fn derive_descriptor(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::descriptor::derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

#[cfg(test)]
mod output_tests;
