//! The iterator over a file's tensors, each read in place.

use super::tensor::{FileData, TensorRef};
use crate::checksum::Algorithms;
use crate::generated::fb;

/// Iterator over a file's tensors.
#[derive(Clone)]
pub struct Tensors<'a> {
    pub(super) data: FileData<'a>,
    pub(super) inner: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::Tensor<'a>>>>,
    pub(super) file_alignment: u64,
    pub(super) sums: Algorithms,
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
        Some(TensorRef::new(data, t, self.file_alignment, self.sums))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.inner.map_or(0, |v| v.len()) - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Tensors<'_> {}
