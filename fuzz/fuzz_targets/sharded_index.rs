//! Any bytes as a sharded checkpoint's index: open it (the index checked
//! whole: member paths, pieces inside their tensors, tiling), then slice
//! every tensor. The members are absent, so each read must fail cleanly.
#![no_main]

use hurray::{File, ShardedFile, slice::SliceRange};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = File::from_bytes(data) else {
        return;
    };
    let Ok(checkpoint) = ShardedFile::from_index(&file, "/nonexistent-hurray-fuzz") else {
        return;
    };
    for t in checkpoint.tensors() {
        let ranges: Vec<SliceRange> = t.shape.iter().map(|&d| SliceRange::new(d / 2, d, 1)).collect();
        assert!(checkpoint.slice(&t.name, &ranges).is_err() || t.shape.contains(&0));
    }
});
