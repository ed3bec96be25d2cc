//! What a reader hands out besides tensors: the iterator over a file's
//! tensors, metadata entries and a tensor's shape, all read in place.

use super::tensor::{FileData, TensorRef};
use crate::descriptor::Dim;
use crate::generated::fb;

/// Iterator over a file's tensors.
#[derive(Clone)]
pub struct Tensors<'a> {
    pub(super) data: FileData<'a>,
    pub(super) inner: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::Tensor<'a>>>>,
    pub(super) file_alignment: u64,
    pub(super) checksum: fb::ChecksumAlgorithm,
    pub(super) next: usize,
}

impl std::fmt::Debug for Tensors<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensors").field("next", &self.next).finish()
    }
}

impl<'a> Iterator for Tensors<'a> {
    type Item = TensorRef<'a>;
    fn next(&mut self) -> Option<TensorRef<'a>> {
        let v = self.inner?;
        if self.next >= v.len() {
            return None;
        }
        let t = v.get(self.next);
        let data = self.data.of(self.next);
        self.next += 1;
        Some(TensorRef::new(data, t, self.file_alignment, self.checksum))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.inner.map_or(0, |v| v.len()) - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Tensors<'_> {}

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

/// The dimensions of a tensor, read in place.
#[derive(Clone, Copy)]
pub struct Shape<'a>(pub(super) flatbuffers::Vector<'a, u64>);

impl<'a> Shape<'a> {
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }
    /// Dimension `i`, if `i < rank`.
    pub fn get(&self, i: usize) -> Option<Dim> {
        (i < self.0.len()).then(|| Dim::from_wire(self.0.get(i)))
    }
    /// All dimensions.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Dim> + 'a {
        self.0.iter().map(Dim::from_wire)
    }
    /// The on-wire values (dynamic as `u64::MAX`).
    pub fn to_wire(&self) -> Vec<u64> {
        self.0.iter().collect()
    }
}

impl std::fmt::Debug for Shape<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
