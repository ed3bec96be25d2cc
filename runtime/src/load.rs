//! Loading every tensor of a file into owned memory with positioned reads
//! (`pread`), on several threads: for file systems where a memory map is
//! slow or faults (network file systems, FUSE), for consumers that want
//! memory the file does not back, and to read at the device's bandwidth.
//!
//! The file is opened and verified as always ([`File::open`] reads only the
//! prefix, footer and header); [`load_all`] then reads the data region with
//! `pread` into 64-byte aligned buffers ([`AlignedBytes`]). The buffers are
//! cut into pieces of at most [`PIECE`] bytes, laid out in file order and
//! split into one contiguous run of about equal bytes per thread, so each
//! thread reads sequentially (the kernel's readahead works for it) and one
//! large tensor is shared among all threads.
//!
//! Nothing is allocated or read that the verified header does not describe,
//! and the file's current length is checked first: a file truncated after it
//! was opened gives [`Error::Truncated`], never a fault.

use crate::aligned::AlignedBytes;
use crate::buffer::BufferRole;
use crate::descriptor::TensorDescriptor;
use crate::error::{Error, Result};
use crate::reader::File;

/// The most bytes one positioned read asks for.
pub const PIECE: usize = 8 << 20;

/// A tensor read into memory of its own.
#[derive(Debug, Clone)]
pub struct LoadedTensor {
    pub descriptor: TensorDescriptor,
    /// Every buffer with its role, in wire order (as
    /// [`TensorRef::buffers`](crate::TensorRef::buffers)); empty for a
    /// descriptor-only tensor.
    pub buffers: Vec<(BufferRole, AlignedBytes)>,
}

impl LoadedTensor {
    /// The bytes of the buffer of `role`.
    pub fn buffer(&self, role: BufferRole) -> Option<&[u8]> {
        self.buffers
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, b)| b.as_slice())
    }
}

/// One positioned read: `out.len()` bytes at `offset` into a piece of a
/// buffer (of `buffer` of `tensor`, for errors).
struct Piece<'b> {
    offset: u64,
    out: &'b mut [u8],
    tensor: &'b str,
    buffer: &'static str,
}

/// Reads every tensor of `file` into owned memory with `threads` threads
/// (at least 1), in file order (sorted by name).
pub fn load_all(file: &File, threads: usize) -> Result<Vec<LoadedTensor>> {
    let file_len = file.current_len()?;
    let mut loaded = Vec::with_capacity(file.len());
    let mut ranges = Vec::new();
    for t in file.tensors() {
        let descriptor = t.descriptor();
        let mut buffers = Vec::new();
        for (role, bytes) in t.buffers() {
            let (offset, length) = t.buffer_range(role).unwrap_or((0, 0));
            debug_assert_eq!(length as usize, bytes.len());
            let end = offset + length; // within the file as opened (verified)
            if end > file_len {
                return Err(Error::Truncated {
                    tensor: descriptor.name.clone(),
                    buffer: role.name(),
                    end,
                    file_len,
                });
            }
            let buffer = AlignedBytes::for_buffer(length, &descriptor.name, role.name())?;
            ranges.push(offset);
            buffers.push((role, buffer));
        }
        loaded.push(LoadedTensor {
            descriptor,
            buffers,
        });
    }
    let mut pieces = Vec::new();
    let mut offsets = ranges.into_iter();
    for t in &mut loaded {
        let tensor = t.descriptor.name.as_str();
        for (role, buffer) in &mut t.buffers {
            let mut offset = offsets.next().unwrap_or(0);
            for out in buffer.as_mut_slice().chunks_mut(PIECE) {
                let len = out.len() as u64;
                pieces.push(Piece {
                    offset,
                    out,
                    tensor,
                    buffer: role.name(),
                });
                offset += len;
            }
        }
    }
    read_pieces(file, pieces, threads.max(1))?;
    Ok(loaded)
}

/// Reads `pieces`, in file order, split into `threads` contiguous runs of
/// about equal bytes.
fn read_pieces(file: &File, pieces: Vec<Piece<'_>>, threads: usize) -> Result<()> {
    on_threads(pieces, threads, |p| {
        file.read_exact_at(p.out, p.offset, p.tensor, p.buffer)
    })
}

/// A read at a position of a file, as [`on_threads`] splits them.
pub(crate) trait Positioned {
    fn offset(&self) -> u64;
    fn len(&self) -> usize;
}

impl Positioned for Piece<'_> {
    fn offset(&self) -> u64 {
        self.offset
    }
    fn len(&self) -> usize {
        self.out.len()
    }
}

impl Positioned for crate::source::ReadRequest<'_> {
    fn offset(&self) -> u64 {
        self.offset
    }
    fn len(&self) -> usize {
        self.buf.len()
    }
}

/// Runs `read` on every piece, sorted by offset and split into `threads`
/// contiguous runs of about equal bytes, one thread each: each thread reads
/// sequentially (the kernel's readahead works for it), and one large buffer
/// is shared among all threads. The first error wins.
pub(crate) fn on_threads<P: Positioned + Send, E: Send>(
    mut pieces: Vec<P>,
    threads: usize,
    read: impl Fn(P) -> std::result::Result<(), E> + Sync,
) -> std::result::Result<(), E> {
    pieces.sort_by_key(|p| p.offset());
    // No more threads than pieces (and a bound on a caller's wild count).
    let threads = threads.clamp(1, pieces.len().max(1));
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let share = total.div_ceil(threads).max(1);
    let mut runs: Vec<Vec<P>> = Vec::with_capacity(threads);
    let mut current = Vec::new();
    let mut filled = 0;
    for p in pieces {
        filled += p.len();
        current.push(p);
        if filled >= share * (runs.len() + 1) && runs.len() + 1 < threads {
            runs.push(std::mem::take(&mut current));
        }
    }
    runs.push(current);
    let read = &read;
    let read_run = move |run: Vec<P>| run.into_iter().try_for_each(read);
    if runs.len() == 1 {
        return read_run(runs.pop().unwrap_or_default());
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .into_iter()
            .map(|run| scope.spawn(move || read_run(run)))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}

/// The threads a loader uses unless told otherwise: one per core, at most 8
/// (more only queue at the device).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Fills `buf` with the bytes of `f` at `offset` (`pread`, retried until
/// done); a file that ends first is [`std::io::ErrorKind::UnexpectedEof`].
#[cfg(unix)]
pub(crate) fn pread(f: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(windows)]
pub(crate) fn pread(f: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(f, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ElementType, TensorDescriptor, Writer, shape};

    fn sample(path: &std::path::Path) {
        let mut w = Writer::create(path).unwrap();
        // Buffers of many sizes: empty, tiny, one spanning several pieces.
        for (i, n) in [0usize, 1, 7, 1000, PIECE / 4 * 3 + 5]
            .into_iter()
            .enumerate()
        {
            let data: Vec<f32> = (0..n).map(|j| (i * 1_000_003 + j) as f32).collect();
            w.add_tensor(
                &TensorDescriptor::new(format!("t{i}"), ElementType::Float32, shape(&[n as u64])),
                &[crate::as_bytes(&data)],
            )
            .unwrap();
        }
        let mut d = TensorDescriptor::new("shape_only", ElementType::Float32, shape(&[2]));
        d.descriptor_only = true;
        w.add_tensor(&d, &[]).unwrap();
        w.finish().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "real files, threads and 25 MB buffers")]
    fn every_thread_count_loads_what_the_map_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.hurray");
        sample(&path);
        let file = File::open(&path).unwrap();
        for threads in [1, 2, 3, 8, 64] {
            let loaded = load_all(&file, threads).unwrap();
            assert_eq!(loaded.len(), file.len());
            for (l, t) in loaded.iter().zip(file.tensors()) {
                assert_eq!(l.descriptor, t.descriptor());
                let mapped = t.buffers();
                assert_eq!(l.buffers.len(), mapped.len());
                for ((lr, lb), (mr, mb)) in l.buffers.iter().zip(mapped) {
                    assert_eq!((*lr, lb.as_slice()), (mr, mb));
                    assert_eq!(lb.as_slice().as_ptr() as usize % 64, 0);
                }
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "real files")]
    fn a_file_truncated_after_opening_is_an_error_not_a_fault() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.hurray");
        sample(&path);
        let file = File::open(&path).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(4096).unwrap();
        match load_all(&file, 2) {
            Err(Error::Truncated {
                tensor, file_len, ..
            }) => {
                assert_eq!(file_len, 4096);
                assert!(tensor.starts_with('t'), "{tensor}");
            }
            other => panic!("{other:?}"),
        }
    }
}
