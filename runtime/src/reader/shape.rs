//! A tensor's dimensions, read in place.

use crate::descriptor::Dim;

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
