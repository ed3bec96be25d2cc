//! A file's or a tensor's metadata entries, read in place.
//!
//! Its own module (not the tensor iterator's) so that `tensor`, which hands
//! these out, and `iter`, which hands out tensors, depend one way only.

use crate::generated::fb;

/// Iterator over metadata entries `(key, value)`.
#[derive(Clone)]
pub struct Metadata<'a> {
    pub(super) inner:
        Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::KeyValue<'a>>>>,
    pub(super) next: usize,
}

impl std::fmt::Debug for Metadata<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

impl Metadata<'_> {
    /// The entries as an owned map (as descriptors hold them).
    pub fn to_map(self) -> std::collections::BTreeMap<String, String> {
        self.map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }
}

impl<'a> Iterator for Metadata<'a> {
    type Item = (&'a str, &'a str);
    fn next(&mut self) -> Option<Self::Item> {
        let v = self.inner?;
        if self.next >= v.len() {
            return None;
        }
        let kv = v.get(self.next);
        self.next += 1;
        Some((kv.key(), kv.value()))
    }
}
