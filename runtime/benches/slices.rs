//! Slices against memcpy and the safetensors crate, measured in one run.
//!
//! `cargo bench -p hurray --bench slices` prints Markdown tables of medians
//! and ratios (docs/performance.md, "Slices"): slices of a 1 GiB f32 tensor
//! by `TensorRef::read_slice`, by safetensors' `sliced_data` (collected into
//! one buffer, as its Python `get_slice` does) and a memcpy of the same
//! number of output bytes; then a sharded checkpoint of the same tensor in
//! eight row chunks, sliced across pieces and assembled whole.

mod common;

use common::median;
use hurray::{
    ElementType, File, ShardedFile, ShardedWriter, TensorDescriptor, Writer, shape,
    slice::SliceRange,
};
use safetensors::slice::TensorIndexer;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::hint::black_box;
use std::num::NonZeroUsize;
use std::ops::Bound;
use std::time::Duration;

const SIDE: u64 = 16384;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn narrow(r: SliceRange) -> TensorIndexer {
    TensorIndexer::Narrow(
        Bound::Included(r.start as usize),
        Bound::Excluded(r.stop as usize),
        NonZeroUsize::new(r.step as usize).unwrap(),
    )
}

fn single_file(values: &[u8]) {
    let desc = TensorDescriptor::new("w", ElementType::Float32, shape(&[SIDE, SIDE]));
    let mut hurray_bytes = Vec::with_capacity(values.len() + 4096);
    let mut w = Writer::new(&mut hurray_bytes).unwrap();
    w.add_tensor(&desc, &[values]).unwrap();
    w.finish().unwrap();
    let aligned = hurray::reader::AlignedBytes::copy_from(&hurray_bytes);
    drop(hurray_bytes);
    let file = File::from_bytes(aligned.as_slice()).unwrap();
    let t = file.tensor("w").unwrap();
    let view = TensorView::new(Dtype::F32, vec![SIDE as usize; 2], values).unwrap();
    let st_bytes = safetensors::serialize([("w", view)], None).unwrap();
    let st = SafeTensors::deserialize(&st_bytes).unwrap();
    let st_view = st.tensor("w").unwrap();

    println!("\n### Slices of one 1 GiB f32 tensor [16384, 16384], in memory\n");
    println!(
        "| slice | output | memcpy | new buffer + memcpy | Hurray `read_slice` | safetensors `sliced_data` | new buffer + memcpy / Hurray | safetensors / Hurray |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let full = SliceRange::full(SIDE);
    let cases = [
        ("[4096:8192, :]", [SliceRange::new(4096, 8192, 1), full]),
        ("[:, 0:4096]", [full, SliceRange::new(0, 4096, 1)]),
        ("[:, ::2]", [full, SliceRange::new(0, SIDE, 2)]),
        (
            "[::4, ::4]",
            [SliceRange::new(0, SIDE, 4), SliceRange::new(0, SIDE, 4)],
        ),
    ];
    for (label, ranges) in cases {
        let out_len = (ranges[0].len() * ranges[1].len() * 4) as usize;
        let mut dst = vec![0u8; out_len];
        let tm = median(5, || {
            dst.copy_from_slice(black_box(&values[..out_len]));
            black_box(&dst);
        });
        // What any slice that returns new memory costs at least: a fresh
        // buffer (its pages faulted in as it is written) and the copy.
        let tn = median(5, || {
            black_box(black_box(&values[..out_len]).to_vec());
        });
        let th = median(5, || {
            black_box(t.read_slice(black_box(&ranges)).unwrap());
        });
        let ts = median(5, || {
            let it = st_view
                .sliced_data(&[narrow(ranges[0]), narrow(ranges[1])])
                .unwrap();
            let mut out = Vec::with_capacity(it.remaining_byte_len());
            for chunk in it {
                out.extend_from_slice(chunk);
            }
            black_box(out);
        });
        // Both give the same bytes.
        let ours = t.read_slice(&ranges).unwrap().bytes;
        let theirs: Vec<u8> = st_view
            .sliced_data(&[narrow(ranges[0]), narrow(ranges[1])])
            .unwrap()
            .flatten()
            .copied()
            .collect();
        assert!(ours == theirs, "{label}");
        println!(
            "| `{label}` | {} MiB | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {:.2} | {:.2} |",
            out_len >> 20,
            ms(tm),
            ms(tn),
            ms(th),
            ms(ts),
            tn.as_secs_f64() / th.as_secs_f64(),
            ts.as_secs_f64() / th.as_secs_f64(),
        );
    }
}

fn sharded(values: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let rows_per = SIDE / 8;
    let row_bytes = (SIDE * 4) as usize;
    let mut w = ShardedWriter::create(dir.path().join("model.hurray")).unwrap();
    w.set_durability(hurray::atomic::Durability::RenameOnly);
    for rank in 0..8u64 {
        w.start_member(&format!("rank{rank}.hurray")).unwrap();
        let lo = rank * rows_per;
        let chunk = &values[lo as usize * row_bytes..(lo + rows_per) as usize * row_bytes];
        let desc = TensorDescriptor::new("w", ElementType::Float32, shape(&[rows_per, SIDE]));
        w.add_chunk(&[SIDE, SIDE], &[lo, 0], &desc, &[chunk])
            .unwrap();
    }
    let index = w.finish().unwrap();
    let mut whole = Writer::create_with(
        dir.path().join("one.hurray"),
        hurray::atomic::Durability::RenameOnly,
    )
    .unwrap();
    whole
        .add_tensor(
            &TensorDescriptor::new("w", ElementType::Float32, shape(&[SIDE, SIDE])),
            &[values],
        )
        .unwrap();
    whole.finish().unwrap();
    let checkpoint = ShardedFile::open(&index).unwrap();
    let one = File::open(dir.path().join("one.hurray")).unwrap();
    let t = one.tensor("w").unwrap();

    println!(
        "\n### A sharded checkpoint: the same tensor as 8 row chunks in 8 files (page cache)\n"
    );
    println!("| read | output | one file | 8 members | one file / 8 members |");
    println!("|---|---:|---:|---:|---:|");
    let full = SliceRange::full(SIDE);
    let cases = [
        (
            "slice [3000:9000, :] (4 pieces)",
            [SliceRange::new(3000, 9000, 1), full],
        ),
        (
            "slice [:, 100:200] (8 pieces)",
            [full, SliceRange::new(100, 200, 1)],
        ),
        ("assemble (whole tensor)", [full, full]),
    ];
    for (label, ranges) in cases {
        let out = (ranges[0].len() * ranges[1].len() * 4) as usize;
        let t1 = median(5, || {
            black_box(t.read_slice(&ranges).unwrap());
        });
        let t8 = median(5, || {
            black_box(checkpoint.slice("w", &ranges).unwrap());
        });
        assert!(t.read_slice(&ranges).unwrap() == checkpoint.slice("w", &ranges).unwrap());
        println!(
            "| {label} | {} MiB | {:.0} ms | {:.0} ms | {:.2} |",
            out >> 20,
            ms(t1),
            ms(t8),
            t1.as_secs_f64() / t8.as_secs_f64()
        );
    }
}

fn main() {
    // `cargo test --benches` runs bench binaries without `--bench`: keep that fast.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let values: Vec<u8> = (0..SIDE * SIDE)
        .flat_map(|i| ((i % 1000) as f32).to_le_bytes())
        .collect();
    single_file(&values);
    sharded(&values);
}
