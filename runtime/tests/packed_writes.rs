//! `TensorWriter::write_packed`: codes one per byte, packed by the runtime
//! straight into the output. The bytes must be exactly what `pack_codes`
//! gives (the format's one packing rule), the checksums must be those of
//! the packed bytes, whether the writer stages (`Writer::new`) or writes in
//! place (`Writer::in_memory`), however the codes are split across calls;
//! and codes that do not fit their buffer are a typed error.

use hurray::pack::pack_codes;
use hurray::{
    Dim, ElementType, Error, File, TensorDescriptor, Writer, descriptor::BufferRole,
    elements::packed_len,
};
use proptest::prelude::*;

fn element(bits: u32) -> ElementType {
    match bits {
        1 => ElementType::Bool,
        2 => ElementType::Int2,
        4 => ElementType::UInt4,
        6 => ElementType::Float6E2M3FN,
        _ => ElementType::UInt8,
    }
}

fn codes(n: usize, seed: u32) -> Vec<u8> {
    // High bits set too: the packer must ignore them.
    (0..n)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed)
                .rotate_left(7) as u8
        })
        .collect()
}

/// Writes `codes` as one tensor of `bits`-bit elements, split into calls at
/// `splits` (indices into `codes`), plus a byte tensor after it.
fn write_split(
    mut w: Writer<impl std::io::Write>,
    bits: u32,
    codes: &[u8],
    splits: &[usize],
) -> Result<(), Error> {
    let desc = TensorDescriptor::new("p", element(bits), vec![Dim::Fixed(codes.len() as u64)]);
    let mut t = w.begin_tensor(&desc)?;
    let mut at = 0;
    for &s in splits.iter().chain([&codes.len()]) {
        t.write_packed(&codes[at..s], bits)?;
        at = s;
    }
    t.finish()?;
    let after = TensorDescriptor::new("q", ElementType::UInt8, vec![Dim::Fixed(3)]);
    w.add_tensor(&after, &[&[1, 2, 3]])?;
    w.finish()?;
    Ok(())
}

fn check_file(bytes: &[u8], bits: u32, codes: &[u8]) {
    let file = File::from_bytes(bytes).unwrap();
    let p = file.tensor("p").unwrap();
    let want = pack_codes(codes.iter().copied(), bits);
    assert_eq!(p.buffer(BufferRole::Values).unwrap(), want.as_slice());
    assert!(
        p.verify_checksum().unwrap(),
        "the checksum is the packed bytes'"
    );
    assert_eq!(file.tensor("q").unwrap().data().unwrap(), [1, 2, 3]);
}

/// Every width, counts that cross the writer's packing pieces (48 KiB of
/// output) and end inside a byte, staged and in place: the same file.
#[test]
fn every_width_packs_as_pack_codes_staged_and_in_place() {
    for bits in [1, 2, 4, 6, 8] {
        let piece_codes = (48 << 10) * 8 / bits as usize;
        for n in [
            0,
            1,
            7,
            9,
            piece_codes - 1,
            piece_codes,
            3 * piece_codes + 5,
        ] {
            let c = codes(n, bits);
            let mut staged = Vec::new();
            write_split(Writer::new(&mut staged).unwrap(), bits, &c, &[]).unwrap();
            let mut in_place = b"already here".to_vec();
            write_split(Writer::in_memory(&mut in_place).unwrap(), bits, &c, &[]).unwrap();
            assert_eq!(&in_place[..12], b"already here", "in place appends");
            assert_eq!(staged, in_place[12..], "{bits} bits, {n} codes");
            check_file(&staged, bits, &c);
        }
    }
}

/// A stream bigger than the staging buffer goes through it in order.
#[test]
fn a_packed_tensor_larger_than_the_staging_buffer_is_streamed_in_order() {
    let c = codes(5 << 20, 9); // 2.5 MiB of 4-bit output
    let mut staged = Vec::new();
    write_split(
        Writer::new(&mut staged).unwrap(),
        4,
        &c,
        &[1 << 20, 3 << 20],
    )
    .unwrap();
    check_file(&staged, 4, &c);
}

/// Calls may split a buffer where a byte ends; one that ends inside a
/// byte before the end of the buffer, or runs past it, is refused.
#[test]
fn splits_must_fall_on_byte_boundaries_and_fit_the_buffer() {
    let c = codes(100, 3);
    let mut out = Vec::new();
    write_split(Writer::new(&mut out).unwrap(), 4, &c, &[2, 50, 98]).unwrap();
    check_file(&out, 4, &c);
    let mut out = Vec::new();
    write_split(Writer::new(&mut out).unwrap(), 6, &c, &[4, 8, 96]).unwrap();
    check_file(&out, 6, &c);

    let mut out = Vec::new();
    let e = write_split(Writer::new(&mut out).unwrap(), 4, &c, &[3]).unwrap_err();
    let Error::WriteMismatch { tensor, reason } = e else {
        panic!("{e}")
    };
    assert_eq!(tensor, "p");
    assert!(reason.contains("inside a byte"), "{reason}");

    let mut w = Writer::new(Vec::new()).unwrap();
    let desc = TensorDescriptor::new("p", ElementType::UInt4, vec![Dim::Fixed(4)]);
    let mut t = w.begin_tensor(&desc).unwrap();
    let e = t.write_packed(&codes(6, 1), 4).unwrap_err();
    let Error::WriteMismatch { tensor, reason } = e else {
        panic!("{e}")
    };
    assert_eq!(tensor, "p");
    assert_eq!(
        reason,
        "6 4-bit code(s) pack into 3 byte(s), buffer values has 2 left"
    );
}

/// Widths the format does not pack are refused, not guessed.
#[test]
fn an_unpackable_width_is_refused() {
    let mut w = Writer::new(Vec::new()).unwrap();
    let desc = TensorDescriptor::new("p", ElementType::UInt4, vec![Dim::Fixed(4)]);
    let mut t = w.begin_tensor(&desc).unwrap();
    for bits in [0, 9] {
        let e = t.write_packed(&[1, 2, 3, 4], bits).unwrap_err();
        assert!(e.to_string().contains(&format!("{bits}-bit codes")), "{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any width, count and byte-aligned split points: the bytes of
    /// `pack_codes`, staged and in place alike.
    #[test]
    fn any_split_packs_as_pack_codes(
        bits in prop::sample::select(vec![1u32, 2, 4, 6]),
        n in 0usize..200_000,
        cuts in prop::collection::vec(0usize..200_000, 0..5),
        seed in any::<u32>(),
    ) {
        let c = codes(n, seed);
        // Split points on byte boundaries: multiples of 8 codes.
        let mut splits: Vec<usize> = cuts.into_iter().map(|s| (s.min(n)) / 8 * 8).collect();
        splits.sort_unstable();
        let mut staged = Vec::new();
        write_split(Writer::new(&mut staged).unwrap(), bits, &c, &splits).unwrap();
        let mut in_place = Vec::new();
        write_split(Writer::in_memory(&mut in_place).unwrap(), bits, &c, &splits).unwrap();
        prop_assert_eq!(&staged, &in_place);
        let file = File::from_bytes(&staged).unwrap();
        let p = file.tensor("p").unwrap();
        prop_assert_eq!(
            p.buffer(BufferRole::Values).unwrap().len() as u64,
            packed_len(n as u64, bits).unwrap()
        );
        let want = pack_codes(c.iter().copied(), bits);
        prop_assert_eq!(p.buffer(BufferRole::Values).unwrap(), want.as_slice());
        prop_assert!(p.verify_checksum().unwrap());
    }
}
