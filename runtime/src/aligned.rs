//! Owned bytes aligned to the format's minimum buffer alignment (64), so a
//! copy of a file (or of any aligned payload, such as MLIR bytecode, whose
//! resource blobs need alignment) keeps every buffer where typed views and
//! parsers expect it.

use crate::error::{Error, Result};
use crate::format::MIN_ALIGNMENT;

#[derive(Debug, Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(64))]
struct Block([u8; MIN_ALIGNMENT as usize]);

/// A copy of some bytes whose first byte is 64-byte aligned.
#[derive(Debug, Clone, Default)]
pub struct AlignedBytes {
    blocks: Vec<Block>,
    len: usize,
}

impl AlignedBytes {
    /// Copies `bytes` into aligned storage.
    pub fn copy_from(bytes: &[u8]) -> Self {
        let mut blocks = vec![Block([0; MIN_ALIGNMENT as usize]); bytes.len().div_ceil(64)];
        bytemuck::cast_slice_mut::<Block, u8>(&mut blocks)[..bytes.len()].copy_from_slice(bytes);
        AlignedBytes {
            blocks,
            len: bytes.len(),
        }
    }

    /// `len` zero bytes, or `None` when that much memory cannot be had (the
    /// allocation is fallible: sizes may come from a file). The allocator
    /// zeroes them (with 64-byte alignment it writes them, touching every
    /// page).
    pub fn try_zeroed(len: usize) -> Option<Self> {
        let n = len.div_ceil(MIN_ALIGNMENT as usize);
        let blocks = bytemuck::allocation::try_zeroed_vec::<Block>(n).ok()?;
        Some(AlignedBytes { blocks, len })
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
        &bytemuck::cast_slice::<Block, u8>(&self.blocks)[..self.len]
    }

    /// The bytes, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut::<Block, u8>(&mut self.blocks)[..self.len]
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
    }
}
