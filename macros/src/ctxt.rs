//! Collects every error of one derive so they are reported together.

use std::fmt::Display;

/// An error sink; [`Ctxt::check`] turns it into one combined `syn::Error`.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Records an error pointing at `tokens`.
    pub(crate) fn error_spanned_by<T: quote::ToTokens, M: Display>(&mut self, tokens: T, msg: M) {
        self.errors.push(syn::Error::new_spanned(tokens, msg));
    }

    /// Records an existing error.
    pub(crate) fn syn_error(&mut self, err: syn::Error) {
        self.errors.push(err);
    }

    /// All errors combined, or `Ok` when there were none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            combined.combine(e);
        }
        Err(combined)
    }
}
