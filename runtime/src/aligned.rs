//! Owned bytes aligned to the format's minimum buffer alignment (64), so a
//! copy of a file (or of any aligned payload, such as MLIR bytecode, whose
//! resource blobs need alignment) keeps every buffer where typed views and
//! parsers expect it.

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

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &bytemuck::cast_slice::<Block, u8>(&self.blocks)[..self.len]
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
        }
    }
}
