//! Slices of one tensor and of a sharded checkpoint's tensors, against a
//! reference that indexes the whole array element by element.

use hurray::pack::pack_codes;
use hurray::sharded::AdoptedChunk;
use hurray::{
    ElementType, Error, File, Layout, ShardedFile, ShardedWriter, TensorDescriptor, Writer, shape,
    slice::{SliceRange, parse_slice},
};

/// `full[ranges]` by plain index arithmetic over a row-major array.
fn reference<T: Copy>(full: &[T], dims: &[u64], ranges: &[SliceRange]) -> Vec<T> {
    let mut out = Vec::new();
    let counts: Vec<u64> = ranges.iter().map(SliceRange::len).collect();
    if counts.contains(&0) {
        return out;
    }
    let total: u64 = counts.iter().product();
    for n in 0..total {
        let (mut rest, mut flat, mut stride) = (n, 0u64, 1u64);
        for d in (0..dims.len()).rev() {
            let k = rest % counts[d];
            rest /= counts[d];
            flat += (ranges[d].start + k * ranges[d].step) * stride;
            stride *= dims[d];
        }
        out.push(full[flat as usize]);
    }
    out
}

fn file_with(desc: &TensorDescriptor, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.add_tensor(desc, &[bytes]).unwrap();
    w.finish().unwrap();
    out
}

fn some_ranges(dims: &[u64]) -> Vec<Vec<SliceRange>> {
    let mut cases = vec![
        dims.iter().map(|&d| SliceRange::full(d)).collect(),
        dims.iter()
            .map(|&d| SliceRange::new(d / 3, d - d / 4, 1))
            .collect(),
        dims.iter()
            .map(|&d| SliceRange::new(1.min(d), d, 2))
            .collect(),
        dims.iter().map(|&d| SliceRange::new(0, d, 3)).collect(),
    ];
    // One index in the first dimension, a step in the last.
    let mut mixed: Vec<SliceRange> = dims.iter().map(|&d| SliceRange::full(d)).collect();
    mixed[0] = SliceRange::index(dims[0] - 1);
    *mixed.last_mut().unwrap() = SliceRange::new(0, *dims.last().unwrap(), 4);
    cases.push(mixed);
    cases
}

#[test]
fn dense_slices_match_the_reference() {
    let dims = [4u64, 5, 6];
    let full: Vec<f32> = (0..120).map(|i| i as f32 * 0.5).collect();
    let bytes = file_with(
        &TensorDescriptor::new("x", ElementType::Float32, shape(&dims)),
        bytemuck::cast_slice(&full),
    );
    let file = File::from_bytes(&bytes).unwrap();
    let t = file.tensor("x").unwrap();
    for ranges in some_ranges(&dims) {
        let s = t.read_slice(&ranges).unwrap();
        let want = reference(&full, &dims, &ranges);
        assert_eq!(
            s.shape,
            ranges.iter().map(SliceRange::len).collect::<Vec<_>>()
        );
        assert_eq!(
            bytemuck::cast_slice::<u8, f32>(&s.bytes),
            want.as_slice(),
            "{ranges:?}"
        );
    }
    // An empty range reads nothing and gives an empty slice.
    let s = t
        .read_slice(&[
            SliceRange::new(2, 2, 1),
            SliceRange::full(5),
            SliceRange::full(6),
        ])
        .unwrap();
    assert_eq!((s.shape, s.bytes.len()), (vec![0, 5, 6], 0));
}

#[test]
fn strided_tensors_slice_in_logical_order() {
    // Logical [3, 4], stored column-major.
    let logical: Vec<i16> = (0..12).collect();
    let mut stored = vec![0i16; 12];
    for r in 0..3 {
        for c in 0..4 {
            stored[c * 3 + r] = logical[r * 4 + c];
        }
    }
    let desc = TensorDescriptor::new("cm", ElementType::Int16, shape(&[3, 4]))
        .with_layout(Layout::Strided(vec![1, 3]));
    let bytes = file_with(&desc, bytemuck::cast_slice(&stored));
    let file = File::from_bytes(&bytes).unwrap();
    let t = file.tensor("cm").unwrap();
    for ranges in some_ranges(&[3, 4]) {
        let s = t.read_slice(&ranges).unwrap();
        assert_eq!(
            bytemuck::cast_slice::<u8, i16>(&s.bytes),
            reference(&logical, &[3, 4], &ranges).as_slice()
        );
    }
}

#[test]
fn sub_byte_slices_are_packed_from_element_boundaries() {
    for (et, bits) in [
        (ElementType::Bool, 1),
        (ElementType::UInt2, 2),
        (ElementType::Int4, 4),
        (ElementType::Float6E2M3FN, 6),
    ] {
        let dims = [5u64, 7];
        let codes: Vec<u8> = (0..35u32)
            .map(|i| ((i * 7 + 3) % (1 << bits)) as u8)
            .collect();
        let desc = TensorDescriptor::new("q", et, shape(&dims));
        let bytes = file_with(&desc, &pack_codes(codes.iter().copied(), bits));
        let file = File::from_bytes(&bytes).unwrap();
        let t = file.tensor("q").unwrap();
        for ranges in some_ranges(&dims) {
            let s = t.read_slice(&ranges).unwrap();
            let want = reference(&codes, &dims, &ranges);
            assert_eq!(s.bytes, pack_codes(want, bits), "{et:?} {ranges:?}");
        }
    }
}

#[test]
fn bad_ranges_and_layouts_are_refused_by_name() {
    let full = [1.0f64; 6];
    let bytes = file_with(
        &TensorDescriptor::new("w", ElementType::Float64, shape(&[2, 3])),
        bytemuck::cast_slice(&full),
    );
    let file = File::from_bytes(&bytes).unwrap();
    let t = file.tensor("w").unwrap();
    let e = t
        .read_slice(&[SliceRange::full(2), SliceRange::new(1, 4, 1)])
        .unwrap_err();
    assert_eq!(e.kind(), "InvalidSlice");
    assert!(e.to_string().contains("dimension 1"), "{e}");
    assert_eq!(
        t.read_slice(&[SliceRange::full(2)]).unwrap_err().kind(),
        "InvalidSlice"
    );
    let e = t
        .read_slice(&[SliceRange::full(2), SliceRange::new(0, 3, 0)])
        .unwrap_err();
    assert_eq!(e.kind(), "InvalidSlice");
}

#[test]
fn slice_text_parses_as_python_does() {
    let r = parse_slice("t", "0:2, :, -1, ::2", &[4, 5, 6, 7]).unwrap();
    assert_eq!(
        r,
        [
            SliceRange::new(0, 2, 1),
            SliceRange::full(5),
            SliceRange::index(5),
            SliceRange::new(0, 7, 2)
        ]
    );
    // Bounds clamp as Python's do; omitted dimensions are whole.
    assert_eq!(
        parse_slice("t", "-100:100", &[3, 2]).unwrap(),
        [SliceRange::full(3), SliceRange::full(2)]
    );
    for bad in ["3", "0:1:0", "a", "1,2,3", "0:1:-1"] {
        let e = parse_slice("t", bad, &[3, 2]).unwrap_err();
        assert_eq!(e.kind(), "InvalidSlice", "{bad}");
    }
}

/// A [10, 7] f32 tensor as three chunks of rows (0..3, 3..7, 7..10), each in
/// its own member, plus a whole tensor.
fn chunked_checkpoint(dir: &std::path::Path) -> (std::path::PathBuf, Vec<f32>) {
    let full: Vec<f32> = (0..70).map(|i| i as f32 - 20.0).collect();
    let mut w = ShardedWriter::create(dir.join("model.hurray")).unwrap();
    w.set_metadata("format", "pt");
    for (n, (lo, hi)) in [(0u64, 3u64), (3, 7), (7, 10)].into_iter().enumerate() {
        w.start_member(&format!("rank-{n}.hurray")).unwrap();
        let rows = &full[(lo * 7) as usize..(hi * 7) as usize];
        let desc = TensorDescriptor::new("w", ElementType::Float32, shape(&[hi - lo, 7]));
        w.add_chunk(&[10, 7], &[lo, 0], &desc, &[bytemuck::cast_slice(rows)])
            .unwrap();
    }
    let bias = [0.5f32, 1.5];
    w.add_tensor(
        &TensorDescriptor::new("b", ElementType::Float32, shape(&[2])),
        &[bytemuck::cast_slice(&bias)],
    )
    .unwrap();
    (w.finish().unwrap(), full)
}

#[test]
fn a_tensor_chunked_across_three_files_slices_across_the_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let (index, full) = chunked_checkpoint(dir.path());
    let ck = ShardedFile::open(&index).unwrap();
    assert_eq!(ck.members().len(), 3);
    assert_eq!(ck.metadata().get("format").map(String::as_str), Some("pt"));
    let t = ck.tensor("w").unwrap();
    assert_eq!((t.shape.as_slice(), t.pieces.len()), (&[10u64, 7][..], 3));
    let mut cases = some_ranges(&[10, 7]);
    // Rows 2..8 cross both boundaries; a step of 3 lands in every chunk.
    cases.push(vec![SliceRange::new(2, 8, 1), SliceRange::new(1, 6, 1)]);
    cases.push(vec![SliceRange::new(0, 10, 3), SliceRange::index(6)]);
    cases.push(vec![SliceRange::new(3, 7, 1), SliceRange::full(7)]);
    for ranges in cases {
        let s = ck.slice("w", &ranges).unwrap();
        assert_eq!(
            bytemuck::cast_slice::<u8, f32>(&s.bytes),
            reference(&full, &[10, 7], &ranges).as_slice(),
            "{ranges:?}"
        );
    }
    assert_eq!(
        bytemuck::cast_slice::<u8, f32>(&ck.assemble("w").unwrap().bytes),
        full.as_slice()
    );
    let e = ck.get("w").unwrap_err();
    assert!(matches!(e, Error::Chunked { pieces: 3, .. }), "{e}");
    // A whole tensor comes back without a copy.
    assert_eq!(ck.get("b").unwrap().as_slice::<f32>().unwrap(), &[0.5, 1.5]);
    ck.verify_members().unwrap();
}

#[test]
fn a_changed_member_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = chunked_checkpoint(dir.path());
    let path = dir.path().join("rank-1.hurray");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 0x40; // a data byte of the chunk
    std::fs::write(&path, &bytes).unwrap();
    let ck = ShardedFile::open(&index).unwrap();
    let e = ck.verify_members().unwrap_err();
    assert!(
        matches!(
            e,
            Error::MemberMismatch {
                field: "crc32c",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("rank-1.hurray"), "{e}");
    // A truncated member is refused before it is mapped.
    bytes.truncate(bytes.len() - 1);
    std::fs::write(&path, &bytes).unwrap();
    let ck = ShardedFile::open(&index).unwrap();
    let e = ck
        .slice("w", &[SliceRange::new(4, 5, 1), SliceRange::full(7)])
        .unwrap_err();
    assert!(
        matches!(e, Error::MemberMismatch { field: "size", .. }),
        "{e}"
    );
    // Rows of the other members still read.
    ck.slice("w", &[SliceRange::new(0, 3, 1), SliceRange::full(7)])
        .unwrap();
}

#[test]
fn the_checksum_report_names_each_member_and_buffer_that_differs() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = chunked_checkpoint(dir.path());
    let report = ShardedFile::open(&index).unwrap().checksum_report();
    assert!(report.is_ok(), "{report:?}");
    // Three chunks of `w` and `b`.
    assert_eq!(report.verified, 4);
    let path = dir.path().join("rank-1.hurray");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 0x40; // a data byte of the chunk
    std::fs::write(&path, &bytes).unwrap();
    let report = ShardedFile::open(&index).unwrap().checksum_report();
    assert!(
        matches!(
            report.members.as_slice(),
            [Error::MemberMismatch { member, field: "crc32c", .. }] if member == "rank-1.hurray"
        ),
        "{report:?}"
    );
    assert!(
        matches!(
            report.buffers.as_slice(),
            [(member, Error::ChecksumMismatch { tensor, .. })]
                if member == "rank-1.hurray" && tensor == "w"
        ),
        "{report:?}"
    );
    assert_eq!(report.verified, 3);
    // As one error: the member, the file to replace.
    let e = report.into_result().unwrap_err();
    assert!(
        matches!(
            e,
            Error::MemberMismatch {
                field: "crc32c",
                ..
            }
        ),
        "{e}"
    );
}

/// Two "ranks" write files of their own (a distributed save); the
/// coordinator adopts them, naming which tensors are chunks of what.
#[test]
fn members_written_elsewhere_are_adopted_with_their_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let full: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let bias = [7.0f32, 8.0];
    for (rank, (lo, hi)) in [(0u64, 2u64), (2, 4)].into_iter().enumerate() {
        let mut w = Writer::create(dir.path().join(format!("rank-{rank}.hurray"))).unwrap();
        let rows = &full[(lo * 6) as usize..(hi * 6) as usize];
        let d = TensorDescriptor::new(
            format!("w@{lo},0"),
            ElementType::Float32,
            shape(&[hi - lo, 6]),
        );
        w.add_tensor(&d, &[bytemuck::cast_slice(rows)]).unwrap();
        if rank == 1 {
            // A replicated tensor, saved once, whole.
            let d = TensorDescriptor::new("b", ElementType::Float32, shape(&[2]));
            w.add_tensor(&d, &[bytemuck::cast_slice(&bias)]).unwrap();
        }
        w.finish().unwrap();
    }
    let chunk = |lo: u64| AdoptedChunk {
        tensor: format!("w@{lo},0"),
        name: "w".into(),
        shape: vec![4, 6],
        offset: vec![lo, 0],
    };
    let index = dir.path().join("ckpt.hurray");
    let mut w = ShardedWriter::create(&index).unwrap();
    w.adopt_member_chunks("rank-0.hurray", &[chunk(0)]).unwrap();
    w.adopt_member_chunks("rank-1.hurray", &[chunk(2)]).unwrap();
    w.finish().unwrap();
    let ck = ShardedFile::open(&index).unwrap();
    assert_eq!(ck.tensor("w").unwrap().pieces.len(), 2);
    assert_eq!(
        bytemuck::cast_slice::<u8, f32>(&ck.assemble("w").unwrap().bytes),
        full.as_slice()
    );
    assert_eq!(ck.get("b").unwrap().as_slice::<f32>().unwrap(), &bias);
    ck.verify_members().unwrap();

    // Refused: a chunk the member does not hold, one that does not fit the
    // logical tensor earlier chunks described, and a gap (no index written).
    let mut w = ShardedWriter::create(dir.path().join("bad.hurray")).unwrap();
    let e = w
        .adopt_member_chunks(
            "rank-0.hurray",
            &[AdoptedChunk {
                tensor: "nope".into(),
                ..chunk(0)
            }],
        )
        .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    let mut w = ShardedWriter::create(dir.path().join("bad.hurray")).unwrap();
    w.adopt_member_chunks("rank-0.hurray", &[chunk(0)]).unwrap();
    let e = w
        .adopt_member_chunks(
            "rank-1.hurray",
            &[AdoptedChunk {
                shape: vec![5, 6],
                ..chunk(2)
            }],
        )
        .unwrap_err();
    assert!(e.to_string().contains("earlier chunks said"), "{e}");
    let mut w = ShardedWriter::create(dir.path().join("bad.hurray")).unwrap();
    w.adopt_member_chunks("rank-0.hurray", &[chunk(0)]).unwrap();
    assert!(w.finish().unwrap_err().to_string().contains("cover"));
    assert!(!dir.path().join("bad.hurray").exists());

    // A refused member changes nothing: the writer goes on as before it.
    let mut w = ShardedWriter::create(&index).unwrap();
    w.adopt_member_chunks("rank-0.hurray", &[chunk(0)]).unwrap();
    let bad = [
        chunk(2),
        AdoptedChunk {
            tensor: "nope".into(),
            ..chunk(2)
        },
    ];
    assert!(w.adopt_member_chunks("rank-1.hurray", &bad).is_err());
    w.adopt_member_chunks("rank-1.hurray", &[chunk(2)]).unwrap();
    w.finish().unwrap();
    let ck = ShardedFile::open(&index).unwrap();
    assert_eq!(ck.members().len(), 2);
    assert_eq!(
        bytemuck::cast_slice::<u8, f32>(&ck.assemble("w").unwrap().bytes),
        full.as_slice()
    );
}

#[test]
fn chunks_that_overlap_or_leave_a_gap_write_no_index() {
    for (second, reason) in [((2u64, 4u64), "overlaps"), ((5, 5), "cover")] {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("m.hurray");
        let mut w = ShardedWriter::create(&index).unwrap();
        for (lo, hi) in [(0u64, 3u64), second] {
            let rows = vec![0u8; ((hi - lo) * 4 * 2) as usize];
            let desc = TensorDescriptor::new("w", ElementType::Int16, shape(&[hi - lo, 4]));
            w.add_chunk(&[5, 4], &[lo, 0], &desc, &[&rows]).unwrap();
        }
        let e = w.finish().unwrap_err();
        assert!(e.to_string().contains(reason), "{e}");
        assert!(!index.exists());
    }
}

#[test]
fn max_shard_size_splits_as_save_pretrained_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = ShardedWriter::create(dir.path().join("model.hurray")).unwrap();
    w.set_max_shard_size(2500);
    let data = vec![7u8; 1000];
    for name in ["a", "b", "c", "d"] {
        w.add_tensor(
            &TensorDescriptor::new(name, ElementType::UInt8, shape(&[1000])),
            &[&data],
        )
        .unwrap();
    }
    // Bigger than the limit: a member of its own.
    let big = vec![1u8; 4000];
    w.add_tensor(
        &TensorDescriptor::new("e", ElementType::UInt8, shape(&[4000])),
        &[&big],
    )
    .unwrap();
    let ck = ShardedFile::open(w.finish().unwrap()).unwrap();
    let paths: Vec<&str> = ck.members().iter().map(|m| m.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "model-00001.hurray",
            "model-00002.hurray",
            "model-00003.hurray"
        ]
    );
    let member_of = |n: &str| ck.tensor(n).unwrap().pieces[0].member;
    assert_eq!(["a", "b", "c", "d", "e"].map(member_of), [0, 0, 1, 1, 2]);
    for m in ck.members() {
        assert_eq!(
            std::fs::metadata(dir.path().join(&m.path)).unwrap().len(),
            m.size
        );
    }
    // A member is an ordinary Hurray file.
    let member = File::open(dir.path().join("model-00002.hurray")).unwrap();
    assert_eq!(
        member.tensor("c").unwrap().as_slice::<u8>().unwrap(),
        &data[..]
    );
}

#[test]
fn an_index_is_not_a_plain_file_and_a_plain_file_is_not_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = chunked_checkpoint(dir.path());
    // Opened as a plain file, an index holds no tensors and says what it is.
    let f = File::open(&index).unwrap();
    assert!(f.is_empty());
    let e = ShardedFile::open(dir.path().join("rank-0.hurray")).unwrap_err();
    assert!(e.to_string().contains("not the index"), "{e}");
}

/// A member may not take the index's own name: the index, put in place
/// last, would be renamed over it.
#[test]
fn a_member_named_as_its_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = ShardedWriter::create(dir.path().join("model.hurray")).unwrap();
    for e in [
        w.start_member("model.hurray").unwrap_err(),
        w.member_path("model.hurray").unwrap_err(),
    ] {
        assert!(e.to_string().contains("the index's own name"), "{e}");
    }
    assert!(!dir.path().join("model.hurray").exists());
}
