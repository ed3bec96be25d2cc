//! A `File` read through a `Source` (positioned reads: `pread`, memory, a
//! counting source) against a `File` over the memory map, on every
//! compliance vector and golden file: the same verdict, the same
//! descriptors, the same bytes; and what opening and reading cost.

use hurray::source::{Ends, MemorySource, PreadSource, ReadRequest, Source};
use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Every `.hurray` file of the compliance vectors and golden files.
fn every_file() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![root().join("tests")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "hurray") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 100, "{}", files.len());
    files
}

/// The file at `path` read by `pread` rather than mapped.
fn open_pread(path: &Path) -> hurray::Result<File> {
    File::open_source(Arc::new(PreadSource::open(path)?))
}

/// A source that counts what it is asked.
#[derive(Debug)]
struct Counting {
    inner: MemorySource,
    ends: AtomicUsize,
    batches: AtomicUsize,
}

impl Counting {
    fn new(bytes: Vec<u8>) -> Arc<Counting> {
        Arc::new(Counting {
            inner: MemorySource::new(bytes, "memory"),
            ends: AtomicUsize::new(0),
            batches: AtomicUsize::new(0),
        })
    }
}

impl Source for Counting {
    fn location(&self) -> &str {
        self.inner.location()
    }
    fn read_ends(&self, prefix: u64, suffix: u64) -> std::io::Result<Ends> {
        self.ends.fetch_add(1, Ordering::SeqCst);
        self.inner.read_ends(prefix, suffix)
    }
    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> std::io::Result<()> {
        self.batches.fetch_add(1, Ordering::SeqCst);
        self.inner.read_many(requests)
    }
}

#[test]
fn every_file_reads_as_the_map_reads_it() {
    for path in every_file() {
        let mapped = File::open(&path);
        let ranged = open_pread(&path);
        let (mapped, ranged) = match (mapped, ranged) {
            (Ok(m), Ok(r)) => (m, r),
            (Err(m), Err(r)) => {
                // An invalid vector: the same error, found without the data.
                assert_eq!(m.to_string(), r.to_string(), "{}", path.display());
                continue;
            }
            (m, r) => panic!("{}: map {m:?}, ranged {r:?}", path.display()),
        };
        let reader = mapped.reader();
        assert_eq!(ranged.version(), reader.version());
        assert_eq!(ranged.is_shard_index(), reader.is_shard_index());
        assert_eq!(ranged.file_len(), mapped.bytes().unwrap().len() as u64);
        assert_eq!(ranged.bytes(), None);
        assert_eq!(
            ranged.metadata().collect::<Vec<_>>(),
            reader.metadata().collect::<Vec<_>>()
        );
        let descriptors: Vec<_> = mapped.tensors().map(|t| t.descriptor()).collect();
        let from_header: Vec<_> = ranged.tensors().map(|t| t.descriptor()).collect();
        assert_eq!(from_header, descriptors, "{}", path.display());
        let fetched = ranged.fetch_all().unwrap();
        for (f, t) in fetched.iter().zip(mapped.tensors()) {
            let got = f.tensor();
            // Memory is the tensor's bytes, nothing between them.
            let stored: usize = t.buffers().iter().map(|(_, b)| b.len()).sum();
            assert_eq!(f.byte_len(), stored);
            assert_eq!(got.descriptor(), t.descriptor());
            assert_eq!(
                got.buffers(),
                t.buffers(),
                "{}: {}",
                path.display(),
                t.name()
            );
            for (_, bytes) in got.buffers() {
                if !bytes.is_empty() {
                    assert_eq!(bytes.as_ptr() as usize % 64, 0, "aligned as in the map");
                }
            }
            // The views and checks a mapped tensor has.
            assert_eq!(
                got.verify_checksum().map_err(|e| e.to_string()),
                t.verify_checksum().map_err(|e| e.to_string())
            );
            assert_eq!(
                got.check_sparse_index().map_err(|e| e.to_string()),
                t.check_sparse_index().map_err(|e| e.to_string())
            );
        }
    }
}

fn sample(tensors: usize, len: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut w = Writer::new(&mut bytes).unwrap();
    for i in 0..tensors {
        let data: Vec<f32> = (0..len).map(|j| (i * 31 + j) as f32).collect();
        let name = format!("layer.{i:05}.weight.with.a.long.name.as.models.have");
        w.add_tensor(
            &TensorDescriptor::new(name, ElementType::Float32, shape(&[len as u64])),
            &[hurray::as_bytes(&data)],
        )
        .unwrap();
    }
    w.finish().unwrap();
    bytes
}

#[test]
fn opening_asks_for_the_two_ends_once_and_a_large_header_once_more() {
    let small = Counting::new(sample(10, 100_000));
    let file = File::open_source(small.clone()).unwrap();
    assert_eq!(
        (
            small.ends.load(Ordering::SeqCst),
            small.batches.load(Ordering::SeqCst)
        ),
        (1, 0)
    );
    // One tensor: one batch; all tensors: one batch.
    let t = file
        .fetch("layer.00003.weight.with.a.long.name.as.models.have")
        .unwrap();
    assert_eq!(
        t.tensor().as_slice::<f32>().unwrap()[5],
        (3 * 31 + 5) as f32
    );
    file.fetch_all().unwrap();
    assert_eq!(small.batches.load(Ordering::SeqCst), 2);

    // 5000 tensors: a header larger than the suffix opening reads.
    let large = Counting::new(sample(5000, 1));
    let file = File::open_source(large.clone()).unwrap();
    assert_eq!(file.len(), 5000);
    assert_eq!(
        (
            large.ends.load(Ordering::SeqCst),
            large.batches.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}

#[test]
fn hostile_ends_are_errors_before_any_read_of_data() {
    let good = sample(2, 10);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "TooShort"),
        (good[..50].to_vec(), "TooShort"),
        (good[..good.len() - 1].to_vec(), "BadFooterMagic"),
        (
            {
                let mut b = good.clone();
                b[0] ^= 1;
                b
            },
            "BadMagic",
        ),
        (
            {
                // The header length claims the whole file and more.
                let mut b = good.clone();
                let at = b.len() - 24;
                b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
                b
            },
            "BadFooter",
        ),
    ];
    for (bytes, kind) in cases {
        let source = Counting::new(bytes.clone());
        let e = File::open_source(source.clone()).unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        assert_eq!(source.batches.load(Ordering::SeqCst), 0);
        assert_eq!(File::from_bytes(&bytes).unwrap_err().kind(), kind);
    }
}

/// Cuts the file at `path` to `len` bytes, as another process might.
fn shrink(path: &Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(len).unwrap();
}

/// Reading in a mapped file that shrank since it was opened is an error
/// of the read-in (the kernel refuses to populate pages past the end),
/// not a fault.
#[test]
#[cfg(target_os = "linux")]
fn reading_in_a_map_that_shrank_is_an_error_not_a_fault() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.hurray");
    std::fs::write(&path, sample(3, 1 << 20)).unwrap();
    let file = File::open(&path).unwrap();
    shrink(&path, 1000);
    let e = file.read_all().unwrap_err();
    assert_eq!(e.kind(), "Io", "{e}");
    assert!(e.to_string().contains("reading in"), "{e}");
}

#[test]
fn an_object_that_shrank_since_opening_is_an_error_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.hurray");
    std::fs::write(&path, sample(3, 1 << 16)).unwrap();
    for file in [open_pread(&path).unwrap(), File::open(&path).unwrap()] {
        shrink(&path, 1000);
        // Owned reads go through the file, not a map: an error, not SIGBUS.
        match file.fetch_all().unwrap_err() {
            hurray::Error::Truncated {
                tensor, file_len, ..
            } => {
                assert_eq!(file_len, 1000);
                assert!(tensor.starts_with("layer.00000"), "{tensor}");
            }
            e => panic!("{e}"),
        }
        std::fs::write(&path, sample(3, 1 << 16)).unwrap();
    }
}

#[test]
fn a_tensor_is_read_once_on_first_use_and_kept() {
    let bytes = sample(4, 1000);
    let source = Counting::new(bytes.clone());
    let file = File::open_source(source.clone()).unwrap();
    let mapped = File::from_bytes(&bytes).unwrap();
    let name = "layer.00002.weight.with.a.long.name.as.models.have";
    // Before any read: the header's facts, and no data.
    let unread = file.get(name).unwrap();
    assert!(!unread.is_read());
    assert_eq!(
        unread.descriptor(),
        mapped.tensor(name).unwrap().descriptor()
    );
    assert_eq!(unread.data().unwrap_err().kind(), "NotRead");
    assert_eq!(unread.verify_checksum().unwrap_err().kind(), "NotRead");
    assert_eq!(source.batches.load(Ordering::SeqCst), 0);
    // The first use reads it; the second reads nothing.
    for _ in 0..2 {
        let t = file.tensor(name).unwrap();
        assert_eq!(
            t.data().unwrap(),
            mapped.tensor(name).unwrap().data().unwrap()
        );
        assert!(t.verify_checksum().unwrap());
        assert_eq!(t.data().unwrap().as_ptr() as usize % 64, 0);
    }
    assert_eq!(source.batches.load(Ordering::SeqCst), 1);
    assert!(file.get(name).unwrap().is_read());
    // The rest in one batch, then every tensor has data without reading.
    file.read_all().unwrap();
    assert_eq!(source.batches.load(Ordering::SeqCst), 2);
    for (t, m) in file.tensors().zip(mapped.tensors()) {
        assert_eq!(t.buffers(), m.buffers());
    }
    file.read_all().unwrap();
    assert_eq!(source.batches.load(Ordering::SeqCst), 2);
    assert_eq!(file.tensor("absent").unwrap_err().kind(), "NotFound");
}

#[test]
fn a_corrupt_byte_read_through_a_source_fails_its_checksum() {
    let mut bytes = sample(2, 64);
    bytes[100] ^= 1;
    let file = File::open_source(Counting::new(bytes)).unwrap();
    file.read_all().unwrap();
    let errors: Vec<_> = file
        .tensors()
        .filter_map(|t| t.verify_checksum().err())
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind(), "ChecksumMismatch");
}

/// A source whose ends disagree with the length it reports.
#[derive(Debug)]
struct Lying(Ends);

impl Source for Lying {
    fn location(&self) -> &str {
        "lying"
    }
    fn read_ends(&self, _: u64, _: u64) -> std::io::Result<Ends> {
        Ok(self.0.clone())
    }
    fn read_many(&self, _: &mut [ReadRequest<'_>]) -> std::io::Result<()> {
        Err(std::io::ErrorKind::UnexpectedEof.into())
    }
}

#[test]
fn a_source_whose_ends_do_not_add_up_is_an_error_not_a_panic() {
    let good = sample(5000, 1);
    let len = good.len() as u64;
    let cases = [
        // A suffix longer than the object.
        Ends {
            len: 100,
            prefix: good[..64].to_vec(),
            suffix: good.clone(),
        },
        // A length far beyond the bytes given: the header is not in the
        // suffix, and reading the rest fails.
        Ends {
            len: len * 2,
            prefix: good[..64].to_vec(),
            suffix: good[good.len() - 4096..].to_vec(),
        },
        // A short prefix.
        Ends {
            len,
            prefix: good[..3].to_vec(),
            suffix: good.clone(),
        },
        // Nothing at all.
        Ends {
            len: 0,
            prefix: Vec::new(),
            suffix: Vec::new(),
        },
    ];
    for ends in cases {
        let e = File::open_source(Arc::new(Lying(ends.clone()))).unwrap_err();
        assert!(
            ["TooShort", "BadFooterMagic", "BadFooter", "Io"].contains(&e.kind()),
            "{e}"
        );
    }
}
