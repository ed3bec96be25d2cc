//! Where shapes and strides are read from: slices the writer holds, or
//! FlatBuffers vectors the reader checks in place.

/// A random-access sequence: a slice, or a FlatBuffers vector read in place.
pub(crate) trait Seq<T> {
    fn len(&self) -> usize;
    fn at(&self, i: usize) -> T;
}

impl<T: Copy> Seq<T> for [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn at(&self, i: usize) -> T {
        self[i]
    }
}

impl<T, S: Seq<T> + ?Sized> Seq<T> for &S {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn at(&self, i: usize) -> T {
        (**self).at(i)
    }
}

impl<'a, T: flatbuffers::Follow<'a, Inner = T> + 'a> Seq<T> for flatbuffers::Vector<'a, T> {
    fn len(&self) -> usize {
        flatbuffers::Vector::len(self)
    }
    fn at(&self, i: usize) -> T {
        self.get(i)
    }
}
