//! Just enough navigation of a Hurray file's FlatBuffer to find the byte an
//! invalid vector corrupts, and [`patch`] to overwrite it. The runtime's
//! flatc-generated module is crate-private and its accessors verify; a
//! corruptor needs raw positions instead, so these few lines walk vtables
//! by hand. Field ids follow the schema's declaration order.

use anyhow::{Context, Result};

/// Minimal navigation of a Hurray file's FlatBuffer, to find the byte to patch.
/// Positions are absolute file offsets.
pub(super) struct Nav<'a> {
    pub(super) b: &'a [u8],
}

// Field ids (vtable slots) of the schema tables, in declaration order.
pub(crate) mod field {
    pub(crate) mod header {
        pub(crate) const TENSORS: usize = 0;
        pub(crate) const METADATA: usize = 1;
        pub(crate) const ALIGNMENT: usize = 2;
        pub(crate) const NAME_INDEX: usize = 3;
        pub(crate) const FILE_ID: usize = 7;
    }
    pub(crate) mod tensor {
        pub(crate) const NAME: usize = 0;
        pub(crate) const ELEMENT_TYPE: usize = 1;
        pub(crate) const SHAPE: usize = 2;
        pub(crate) const LAYOUT_TYPE: usize = 3;
        pub(crate) const LAYOUT: usize = 4;
        pub(crate) const BUFFERS: usize = 5;
        pub(crate) const ALIGNMENT: usize = 7;
        pub(crate) const QUANTIZATION: usize = 8;
        pub(crate) const DIGESTS: usize = 11;
    }
    pub(crate) mod layout {
        /// Dense.strides
        pub(crate) const STRIDES: usize = 0;
        /// Coo/Csr/Csc.nnz
        pub(crate) const NNZ: usize = 0;
        pub(crate) const INDEX_TYPE: usize = 1;
    }
    pub(crate) mod quant {
        pub(crate) const SCHEME: usize = 0;
        pub(crate) const EXPRESSED_TYPE: usize = 1;
        pub(crate) const AXIS: usize = 4;
        pub(crate) const BLOCK_SIZE: usize = 5;
        pub(crate) const SCALES: usize = 6;
        pub(crate) const CODE_TABLE_TYPE: usize = 13;
        pub(crate) const CODE_TABLE: usize = 14;
        pub(crate) const SCALE_QUANTIZATION: usize = 15;
        pub(crate) const GROUP_INDEX: usize = 19;
        pub(crate) const BLOCK_FORMAT: usize = 20;
    }
    pub(crate) mod kv {
        pub(crate) const KEY: usize = 0;
    }
}

impl<'a> Nav<'a> {
    pub(super) fn u16(&self, at: usize) -> usize {
        u16::from_le_bytes([self.b[at], self.b[at + 1]]) as usize
    }
    pub(super) fn u32(&self, at: usize) -> usize {
        u32::from_le_bytes(self.b[at..at + 4].try_into().unwrap_or_default()) as usize
    }
    pub(super) fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.b[at..at + 8].try_into().unwrap_or_default())
    }
    pub(super) fn footer(&self) -> usize {
        self.b.len() - hurray::format::FOOTER_LEN as usize
    }
    pub(super) fn header_start(&self) -> usize {
        self.u64(self.footer()) as usize
    }
    pub(super) fn root(&self) -> usize {
        let h = self.header_start();
        h + self.u32(h)
    }
    /// Position of field `id` of the table at `table`, if present.
    pub(super) fn field(&self, table: usize, id: usize) -> Option<usize> {
        let soffset = i32::from_le_bytes(self.b[table..table + 4].try_into().ok()?);
        let vt = (table as i64 - i64::from(soffset)) as usize;
        let vt_len = self.u16(vt);
        let slot = 4 + 2 * id;
        if slot + 2 > vt_len {
            return None;
        }
        match self.u16(vt + slot) {
            0 => None,
            off => Some(table + off),
        }
    }
    pub(super) fn req(&self, table: usize, id: usize) -> Result<usize> {
        self.field(table, id)
            .with_context(|| format!("field {id} absent from the table at {table}"))
    }
    /// Position of the vtable slot of field `id` of the table at `table`
    /// (writing 0 there makes the field absent).
    pub(super) fn vtable_slot(&self, table: usize, id: usize) -> Result<usize> {
        let soffset = i32::from_le_bytes(self.b[table..table + 4].try_into()?);
        let vt = (table as i64 - i64::from(soffset)) as usize;
        anyhow::ensure!(
            4 + 2 * id + 2 <= self.u16(vt),
            "field {id} beyond the vtable at {vt}"
        );
        Ok(vt + 4 + 2 * id)
    }
    /// The target of the uoffset stored at `at`.
    pub(super) fn follow(&self, at: usize) -> usize {
        at + self.u32(at)
    }
    /// Element `i` of the vector of tables whose uoffset is at `at`.
    pub(super) fn table_at(&self, at: usize, i: usize) -> usize {
        let v = self.follow(at);
        self.follow(v + 4 + 4 * i)
    }
    /// The tensor table at index `i`.
    pub(super) fn tensor(&self, i: usize) -> Result<usize> {
        Ok(self.table_at(self.req(self.root(), field::header::TENSORS)?, i))
    }
    /// The position of struct element `i` (of `size` bytes) of the vector whose uoffset is at `at`.
    pub(super) fn struct_at(&self, at: usize, i: usize, size: usize) -> usize {
        self.follow(at) + 4 + size * i
    }
    /// The first byte of the string whose uoffset is at `at`.
    pub(super) fn string(&self, at: usize) -> usize {
        self.follow(at) + 4
    }
    /// Field `id` of the tensor at index `tensor`.
    pub(super) fn tensor_field(&self, tensor: usize, id: usize) -> Result<usize> {
        self.req(self.tensor(tensor)?, id)
    }
    /// Field `id` of the layout table of the tensor at index `tensor`.
    pub(super) fn layout_field(&self, tensor: usize, id: usize) -> Result<usize> {
        let layout = self.follow(self.tensor_field(tensor, field::tensor::LAYOUT)?);
        self.req(layout, id)
    }
    /// Field `id` of the quantization table of the tensor at index `tensor`.
    pub(super) fn quant_field(&self, tensor: usize, id: usize) -> Result<usize> {
        let q = self.follow(self.tensor_field(tensor, field::tensor::QUANTIZATION)?);
        self.req(q, id)
    }
    /// Field `id` of the scales' own quantization (format 1.4) of the tensor at index `tensor`.
    pub(super) fn scale_level_field(&self, tensor: usize, id: usize) -> Result<usize> {
        let level = self.follow(self.quant_field(tensor, field::quant::SCALE_QUANTIZATION)?);
        self.req(level, id)
    }
    /// The first byte of the name of the tensor at index `tensor`.
    pub(super) fn name(&self, tensor: usize) -> Result<usize> {
        Ok(self.string(self.tensor_field(tensor, field::tensor::NAME)?))
    }
    /// Dimension `i` (a u64) of the shape of the tensor at index `tensor`.
    pub(super) fn dim(&self, tensor: usize, i: usize) -> Result<usize> {
        Ok(self.struct_at(self.tensor_field(tensor, field::tensor::SHAPE)?, i, 8))
    }
    /// The offset (a u64) of buffer `i` of the tensor at index `tensor`.
    pub(super) fn buffer_offset(&self, tensor: usize, i: usize) -> Result<usize> {
        Ok(self.struct_at(self.tensor_field(tensor, field::tensor::BUFFERS)?, i, 16))
    }
    /// The length (a u64) of buffer `i` of the tensor at index `tensor`.
    pub(super) fn buffer_length(&self, tensor: usize, i: usize) -> Result<usize> {
        Ok(self.buffer_offset(tensor, i)? + 8)
    }
    /// The first data byte of buffer `i` of the tensor at index `tensor`.
    pub(super) fn buffer_data(&self, tensor: usize, i: usize) -> Result<usize> {
        Ok(self.u64(self.buffer_offset(tensor, i)?) as usize)
    }
    /// The length (a u64) of the scales buffer of the tensor at index `tensor`.
    pub(super) fn scales_length(&self, tensor: usize) -> Result<usize> {
        Ok(self.quant_field(tensor, field::quant::SCALES)? + 8)
    }
}

/// A number [`patch`] writes, little-endian, in as many bytes as its type has.
pub(super) trait LeBytes {
    fn le_bytes(self) -> Vec<u8>;
}

macro_rules! impl_le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            fn le_bytes(self) -> Vec<u8> {
                self.to_le_bytes().to_vec()
            }
        }
    )*};
}
impl_le_bytes!(u8, u16, u32, u64, i32, i64);

/// Overwrites the file with `v` at the position `place` finds in it.
pub(super) fn patch(
    b: &mut [u8],
    place: impl FnOnce(&Nav<'_>) -> Result<usize>,
    v: impl LeBytes,
) -> Result<()> {
    let at = place(&Nav { b })?;
    let bytes = v.le_bytes();
    b[at..at + bytes.len()].copy_from_slice(&bytes);
    Ok(())
}
