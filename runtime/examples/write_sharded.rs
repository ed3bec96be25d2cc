//! Writes a small sharded checkpoint, as three tensor-parallel ranks would
//! save one: `embed` [8, 6] f32 split by rows across the ranks' member files,
//! plus whole tensors (a packed `i4`, an empty `[3, 0, 5]`) in rank 0's.
//! Then reads a slice across all three members back.
//!
//!     cargo run -p hurray --example write_sharded -- DIR
//!
//! `tests/golden/v1.3/sharded/` is this program's output with the 1.3
//! writer, `tests/golden/v1.5/sharded/` with the 1.5 writer (each member's
//! identity in the index).

use hurray::{ElementType, ShardedFile, ShardedWriter, TensorDescriptor, shape, slice::SliceRange};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: write_sharded DIR")?;
    std::fs::create_dir_all(&dir)?;
    let index = std::path::Path::new(&dir).join("model.hurray");
    let mut w = ShardedWriter::create(&index)?;
    w.set_metadata("producer", "hurray write_sharded example");
    for (rank, rows) in [(0u64, 0..3u64), (1, 3..6), (2, 6..8)] {
        w.start_member(&format!("rank{rank}.hurray"))?;
        let values: Vec<f32> = (rows.start * 6..rows.end * 6)
            .map(|i| i as f32 * 0.25 - 4.0)
            .collect();
        let chunk = TensorDescriptor::new(
            "embed",
            ElementType::Float32,
            shape(&[rows.end - rows.start, 6]),
        );
        w.add_chunk(
            &[8, 6],
            &[rows.start, 0],
            &chunk,
            &[hurray::as_bytes(&values)],
        )?;
        if rank == 0 {
            let codes = hurray::pack::pack_codes((0..24u8).map(|i| i % 16), 4);
            w.add_tensor(
                &TensorDescriptor::new("proj.int4", ElementType::Int4, shape(&[4, 6])),
                &[&codes],
            )?;
            w.add_tensor(
                &TensorDescriptor::new("empty", ElementType::Float32, shape(&[3, 0, 5])),
                &[&[]],
            )?;
        }
    }
    let index = w.finish()?;

    let checkpoint = ShardedFile::open(&index)?;
    // Rows 2..7, every other column: rows from all three ranks.
    let part = checkpoint.slice(
        "embed",
        &[SliceRange::new(2, 7, 1), SliceRange::new(0, 6, 2)],
    )?;
    let values: Vec<f32> = part
        .bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    println!(
        "wrote {} ({} members); embed[2:7, ::2] = {values:?}",
        index.display(),
        checkpoint.members().len()
    );
    Ok(())
}
