//! Any bytes: open, read every tensor through every view and a strided
//! slice, and for a file that opens, write its tensors again and check the
//! copy reads back identically.
#![no_main]

use hurray::{File, Layout, Writer, slice::SliceRange};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = File::from_bytes(data) else {
        return;
    };
    let mut copy = Vec::new();
    let mut w = Writer::new(&mut copy).expect("writing to memory");
    let mut descriptors = Vec::new();
    for t in file.tensors() {
        let d = t.descriptor();
        let _ = t.packed().map(|p| p.iter().count());
        let _ = t.quantized().map(|q| q.dequantize().len());
        if !t.is_descriptor_only() {
            // The back half of every dimension, every other index.
            let ranges: Vec<SliceRange> =
                t.shape().to_wire().iter().map(|&d| SliceRange::new(d / 2, d, 2)).collect();
            let _ = t.read_slice(&ranges);
        }
        let sparse_ok = match t.layout() {
            Layout::Coo { .. } => t.coo().is_ok(),
            Layout::Csr { .. } => t.csr().is_ok(),
            Layout::Csc { .. } => t.csc().is_ok(),
            _ => true,
        };
        let buffers: Vec<&[u8]> = t.buffers().iter().map(|(_, b)| *b).collect();
        // Only files whose sparse indices are valid must round-trip; the
        // writer refuses nothing the reader accepted.
        if sparse_ok {
            w.add_tensor(&d, &buffers)
                .expect("a verified descriptor is writable");
            descriptors.push((d, buffers.concat()));
        }
    }
    w.finish().expect("finishing to memory");
    let again = File::from_bytes(&copy).expect("our own output verifies");
    for (d, bytes) in descriptors {
        let t = again.tensor(&d.name).expect("every tensor was written");
        assert_eq!(t.descriptor(), d);
        let buffers: Vec<&[u8]> = t.buffers().iter().map(|(_, b)| *b).collect();
        assert_eq!(buffers.concat(), bytes);
    }
});
