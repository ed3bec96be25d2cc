//! Sharded saves, the way a training loop repeats them: 64 members of
//! 4 MiB (256 MiB) saved over the previous checkpoint at one index, not
//! synced and synced; medians of 9 saves each (docs/performance.md,
//! "Sharded saves"). What it measures is the cost of keeping two saves at
//! once apart (claims, each member's identity, the index swap), against
//! the same program built on an earlier runtime.
//!
//!     cargo bench -p hurray --bench sharded_save [-- DIR]

use hurray::{ElementType, ShardedWriter, TensorDescriptor, atomic::Durability, shape};
use std::time::Instant;

const MEMBERS: usize = 64;
const MEMBER_BYTES: usize = 4 << 20;
const SAVES: usize = 9;

fn main() {
    // `cargo bench` passes `--bench`; a directory may follow.
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map(std::path::PathBuf::from);
    let temp = tempfile::tempdir_in(dir.unwrap_or_else(std::env::temp_dir)).unwrap();
    let index = temp.path().join("model.hurray");
    let data = vec![7u8; MEMBER_BYTES];
    for durability in [Durability::RenameOnly, Durability::Synced] {
        let mut ms = Vec::with_capacity(SAVES);
        for _ in 0..SAVES {
            let start = Instant::now();
            let mut w = ShardedWriter::create(&index).unwrap();
            w.set_durability(durability);
            w.set_max_shard_size(MEMBER_BYTES as u64);
            for i in 0..MEMBERS {
                let desc = TensorDescriptor::new(
                    format!("t{i:02}"),
                    ElementType::UInt8,
                    shape(&[MEMBER_BYTES as u64]),
                );
                w.add_tensor(&desc, &[&data]).unwrap();
            }
            w.finish().unwrap();
            ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "{durability:?}: median {:.1} ms (min {:.1}, max {:.1}) for {MEMBERS} members of {} MiB",
            ms[SAVES / 2],
            ms[0],
            ms[SAVES - 1],
            MEMBER_BYTES >> 20
        );
    }
}
