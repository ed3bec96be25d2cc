//! Owned bytes aligned to the format's minimum buffer alignment (64), so a
//! copy of a file (or of any aligned payload, such as MLIR bytecode, whose
//! resource blobs need alignment) keeps every buffer where typed views and
//! parsers expect it.

use crate::error::{Error, Result};
use crate::format::MIN_ALIGNMENT;
use std::ptr::NonNull;

const ALIGN: usize = MIN_ALIGNMENT as usize;

/// A copy of some bytes whose first byte is 64-byte aligned.
///
/// The bytes live in an allocation `ALIGN - 1` bytes longer than they are,
/// from its first 64-byte aligned address on. It is allocated zeroed as
/// bytes, by `calloc`, which hands out the fresh pages of a large
/// allocation untouched (the kernel's zero pages): the first write to each
/// page is the one that fills it. (Allocated as 64-byte aligned blocks, it
/// was zeroed by the allocator writing every byte, so a buffer read from a
/// source was touched twice, its page faults all taken on one thread
/// before the first read began.)
///
/// The allocation is held as a raw pointer, not a `Vec`, so that a pointer
/// consumers of an export may write through (`writable_ptr`) can be had
/// from a shared borrow: every access goes through that one pointer.
pub struct AlignedBytes {
    /// The allocation: a `Vec<u8>` of `capacity` bytes, taken apart.
    alloc: NonNull<u8>,
    capacity: usize,
    /// Where the aligned bytes start in the allocation.
    start: usize,
    len: usize,
}

// SAFETY: `AlignedBytes` owns its allocation as a `Vec<u8>` does, and hands
// out references to it only through `&self` (shared) and `&mut self`
// (exclusive), so sending or sharing it is as safe as a `Vec<u8>`'s.
unsafe impl Send for AlignedBytes {}
// SAFETY: as for `Send`.
unsafe impl Sync for AlignedBytes {}

impl AlignedBytes {
    /// Copies `bytes` into aligned storage.
    pub fn copy_from(bytes: &[u8]) -> Self {
        let mut copy = Self::try_zeroed(bytes.len()).unwrap_or_else(|| {
            // What `vec!` does when memory cannot be had.
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(bytes.len(), ALIGN)
                    .unwrap_or(std::alloc::Layout::new::<u8>()),
            )
        });
        copy.as_mut_slice().copy_from_slice(bytes);
        copy
    }

    /// `len` zero bytes, or `None` when that much memory cannot be had (the
    /// allocation is fallible: sizes may come from a file). Pages of a large
    /// allocation come untouched from the kernel, zero.
    pub fn try_zeroed(len: usize) -> Option<Self> {
        let bytes = bytemuck::allocation::try_zeroed_vec::<u8>(len.checked_add(ALIGN - 1)?).ok()?;
        let mut bytes = std::mem::ManuallyDrop::new(bytes);
        let (capacity, base) = (bytes.capacity(), bytes.as_mut_ptr());
        let start = base.align_offset(ALIGN);
        let alloc = NonNull::new(base)?;
        if start >= ALIGN {
            // `align_offset` of a `u8` pointer is always computable; were it
            // not, the allocation goes back rather than leaking.
            drop(std::mem::ManuallyDrop::into_inner(bytes));
            return None;
        }
        Some(AlignedBytes {
            alloc,
            capacity,
            start,
            len,
        })
    }

    /// `length` zero bytes for a buffer a file places (`buffer` of `tensor`,
    /// which the error names): [`Error::OutOfMemory`] when they cannot be
    /// had, never an abort.
    pub(crate) fn for_buffer(length: u64, tensor: &str, buffer: &'static str) -> Result<Self> {
        usize::try_from(length)
            .ok()
            .and_then(AlignedBytes::try_zeroed)
            .ok_or_else(|| Error::OutOfMemory {
                tensor: tensor.to_owned(),
                buffer,
                bytes: length,
            })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `start + len <= capacity` (`try_zeroed` allocates `len +
        // ALIGN - 1` bytes and `start < ALIGN`), every byte is initialized
        // (allocated zeroed), and the allocation lives as long as `self`.
        // Writes happen through `&mut self`, which this borrow excludes, or
        // through `writable_ptr` under the contract of the export that
        // handed it out (no reference in use while a consumer writes).
        unsafe { std::slice::from_raw_parts(self.first(), self.len) }
    }

    /// The bytes, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only
        // reference to the bytes.
        unsafe { std::slice::from_raw_parts_mut(self.first(), self.len) }
    }

    /// A pointer to the first byte, derived from the allocation itself
    /// rather than from a reference, for the consumers of an export that
    /// may write to these bytes (a file whose exports are writable: see
    /// [`File::open_source_with`](crate::File::open_source_with)). Writing
    /// through it is the exporter's contract to keep: no reference to the
    /// bytes may be in use meanwhile.
    pub(crate) fn writable_ptr(&self) -> NonNull<u8> {
        NonNull::new(self.first()).unwrap_or(self.alloc)
    }

    /// The first aligned byte: in bounds (`start < ALIGN <= capacity`), so
    /// `wrapping_add` computes what `add` would, in safe code.
    fn first(&self) -> *mut u8 {
        self.alloc.as_ptr().wrapping_add(self.start)
    }
}

impl Drop for AlignedBytes {
    fn drop(&mut self) {
        // SAFETY: `alloc` and `capacity` are the pointer and capacity of the
        // `Vec<u8>` taken apart in `try_zeroed`, given back once; a length
        // of 0 claims no initialized bytes (dropping `u8`s reads none).
        drop(unsafe { Vec::from_raw_parts(self.alloc.as_ptr(), 0, self.capacity) });
    }
}

impl Clone for AlignedBytes {
    /// A copy in an allocation of its own, aligned in turn (a copy of the
    /// vector would keep the offset, not the alignment).
    fn clone(&self) -> Self {
        AlignedBytes::copy_from(self.as_slice())
    }
}

impl Default for AlignedBytes {
    fn default() -> Self {
        AlignedBytes::copy_from(&[])
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBytes")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_copy() {
        for n in [0, 1, 63, 64, 65, 200] {
            let src: Vec<u8> = (0..n as u8).collect();
            let a = AlignedBytes::copy_from(&src);
            assert_eq!(a.as_slice(), &src[..]);
            assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
            let mut z = AlignedBytes::try_zeroed(n).unwrap();
            assert!(z.as_slice().iter().all(|b| *b == 0) && z.as_slice().len() == n);
            z.as_mut_slice().copy_from_slice(&src);
            assert_eq!(z.as_slice(), &src[..]);
            assert_eq!(z.as_slice().as_ptr() as usize % 64, 0);
        }
        assert!(AlignedBytes::try_zeroed(usize::MAX).is_none());
        assert!(AlignedBytes::try_zeroed(usize::MAX - 62).is_none());
    }

    #[test]
    fn clones_and_defaults_are_aligned() {
        let a = AlignedBytes::copy_from(&[7; 100]);
        let b = a.clone();
        assert_eq!(b.as_slice(), a.as_slice());
        assert_eq!(b.as_slice().as_ptr() as usize % 64, 0);
        let d = AlignedBytes::default();
        assert!(d.as_slice().is_empty());
        assert_eq!(d.as_slice().as_ptr() as usize % 64, 0);
    }
}
