//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use hurray::{ElementType, TensorDescriptor, Writer, descriptor::BufferRole};

/// Deterministic bytes for a buffer of `len` bytes, with the unused high bits
/// of a packed last byte cleared as the format requires.
pub fn pattern(len: u64, seed: u8, elements: u64, bits: u32) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    let used_bits = elements * u64::from(bits);
    if !used_bits.is_multiple_of(8)
        && let Some(last) = v.last_mut()
    {
        *last &= (1u8 << (used_bits % 8)) - 1;
    }
    v
}

/// Writes `tensors` (descriptor + buffers) to memory and returns the bytes.
pub fn write(tensors: &[(TensorDescriptor, Vec<Vec<u8>>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    for (d, bufs) in tensors {
        let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
        w.add_tensor(d, &refs).unwrap();
    }
    w.finish().unwrap();
    out
}

/// Pattern bytes for every buffer of a dense descriptor (values, then
/// scales and zero points when quantized).
pub fn dense_buffers(d: &TensorDescriptor) -> Vec<Vec<u8>> {
    let plan = d.buffer_plan().unwrap();
    let elements = plan.elements.unwrap_or(0);
    plan.buffers()
        .into_iter()
        .enumerate()
        .map(|(i, (role, len))| match role {
            BufferRole::Values => pattern(len, i as u8 + 1, elements, d.element_type.bits()),
            _ => pattern(len, i as u8 + 1, len, 8),
        })
        .collect()
}

/// i64 little-endian bytes.
pub fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// i32 little-endian bytes.
pub fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub const ALL: &[ElementType] = &ElementType::ALL;
