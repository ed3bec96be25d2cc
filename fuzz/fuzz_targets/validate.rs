//! Any bytes through what `hurray validate` runs: the verifying open, then
//! every sparse index check. Must return errors, never panic.
#![no_main]

use hurray::reader::Reader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(reader) = Reader::new(data) {
        let _ = reader.check_sparse_indices();
        for t in reader.tensors() {
            let _ = t.as_slice::<f32>();
            let _ = t.as_strided::<u8>();
            let _ = t.byte_length();
        }
    }
});
