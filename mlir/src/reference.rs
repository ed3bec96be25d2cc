//! What `hurray-export-constants` leaves in the IR and
//! `hurray-import-constants` reads: a data-less `dense_resource` whose key
//! names the tensor and the attribute form to restore, and the module
//! attribute naming the file.

/// The module attribute naming the Hurray file the references point into.
pub const FILE_ATTR: &str = "hurray.file";

/// The elements attribute a constant held before it was exported, which the
/// import restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `dense<...>`: restored as a `dense` attribute (MLIR copies it).
    Dense,
    /// `dense_resource<...>`: restored as a resource whose blob is the file's
    /// bytes in place.
    Resource,
}

impl Form {
    fn prefix(self) -> &'static str {
        match self {
            Form::Dense => "hurray.dense:",
            Form::Resource => "hurray.resource:",
        }
    }
}

/// The resource key that refers to `tensor`.
pub(crate) fn key(form: Form, tensor: &str) -> String {
    format!("{}{tensor}", form.prefix())
}

/// The form and tensor name a resource key refers to; `None` for a key that
/// is not a reference.
pub(crate) fn parse_key(key: &str) -> Option<(Form, &str)> {
    [Form::Dense, Form::Resource]
        .into_iter()
        .find_map(|form| key.strip_prefix(form.prefix()).map(|name| (form, name)))
}

/// The tensor a resource key refers to, if it is a reference
/// `hurray-export-constants` left.
pub(crate) fn target(key: &str) -> Option<&str> {
    parse_key(key).map(|(_, tensor)| tensor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_other_keys_are_not_references() {
        for form in [Form::Dense, Form::Resource] {
            for name in ["w", "f/0", "a:b", ""] {
                assert_eq!(parse_key(&key(form, name)), Some((form, name)));
            }
        }
        assert_eq!(parse_key("torch_tensor_2_4_torch.bfloat16"), None);
        assert_eq!(parse_key("hurray.other:w"), None);
    }
}
