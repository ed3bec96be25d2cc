use super::before;

#[test]
fn before_is_the_byte_order_of_str() {
    let words = [
        "",
        "a",
        "b",
        "ab",
        "aa",
        "model.layers.1.weight",
        "model.layers.10.weight",
        "model.layers.2.weight",
        "model.layers.1.weighu",
        "é",
        "e",
        "model.layers.1.weight.",
        "abcdefgh",
        "abcdefgi",
        "abcdefgh0",
        "abcdefg",
    ];
    for a in words {
        for b in words {
            assert_eq!(before(a.as_bytes(), b.as_bytes()), a < b, "{a:?} {b:?}");
        }
    }
    // Every length to 20, one byte lower or higher at every position,
    // against each other: the words and the overlapping last one.
    let mut many: Vec<Vec<u8>> = Vec::new();
    // Fewer under Miri, which runs each comparison a thousand times slower.
    for n in 0..if cfg!(miri) { 10 } else { 20 } {
        many.push(vec![b'm'; n]);
        for at in 0..n {
            for c in [b'a', b'z'] {
                let mut v = vec![b'm'; n];
                v[at] = c;
                many.push(v);
            }
        }
    }
    for a in &many {
        for b in &many {
            assert_eq!(before(a, b), a < b, "{a:?} {b:?}");
        }
    }
}
