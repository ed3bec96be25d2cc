//! Files and single tensors past 4 GiB: offsets and lengths need 64 bits.
//! The data is streamed through the real writer into a sparse file, so the
//! test costs almost no disk.

use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
use std::io::{Seek, SeekFrom, Write};

/// A `Write` that turns chunks of the shared zero buffer into holes.
struct SparseFile {
    file: std::fs::File,
    zeros: *const u8,
}

impl Write for SparseFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.as_ptr() == self.zeros {
            self.file.seek(SeekFrom::Current(buf.len() as i64))?;
            Ok(buf.len())
        } else {
            self.file.write(buf)
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[test]
fn tensor_larger_than_4_gib() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.hurray");
    let zeros = vec![0u8; 64 << 20];
    let big_len: u64 = (5 << 30) + 64; // 5 GiB + 64 bytes, one tensor
    {
        let file = std::fs::File::create(&path).unwrap();
        let mut w = Writer::new(SparseFile {
            file,
            zeros: zeros.as_ptr(),
        })
        .unwrap();
        let mut t = w
            .begin_tensor(&TensorDescriptor::new(
                "big",
                ElementType::UInt8,
                shape(&[big_len]),
            ))
            .unwrap();
        let mut left = big_len;
        while left >= zeros.len() as u64 {
            t.write_all(&zeros).unwrap();
            left -= zeros.len() as u64;
        }
        t.write_all(&vec![0xEE; left as usize]).unwrap();
        t.finish().unwrap();
        let tail: Vec<u8> = (0..16).collect();
        w.add_tensor(
            &TensorDescriptor::new("tail", ElementType::UInt8, shape(&[16])),
            &[&tail],
        )
        .unwrap();
        let len = w.finish().unwrap();
        assert!(len > big_len);
    }
    let file = File::open(&path).unwrap();
    let big = file.tensor("big").unwrap();
    assert_eq!(big.byte_length(), big_len);
    let data = big.data().unwrap();
    assert_eq!(data.len() as u64, big_len);
    assert_eq!(data[0], 0);
    assert_eq!(data[data.len() - 1], 0xEE);
    let tail = file.tensor("tail").unwrap().data().unwrap();
    let offset = tail.as_ptr() as usize - file.bytes().unwrap().as_ptr() as usize;
    assert!(
        offset as u64 > u64::from(u32::MAX),
        "offset {offset} is past 2^32"
    );
    assert_eq!(tail, (0..16).collect::<Vec<u8>>().as_slice());
}
