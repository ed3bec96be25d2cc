//! A save that fails, runs out of space, is killed at any moment, races
//! readers or races another save never costs the file or checkpoint it
//! replaces, and leaves nothing partial that opens; two saves at once end
//! as one of them, whole.
//!
//! Every checkpoint here is a "generation": each tensor's bytes are the
//! generation's number, so a reader can tell one save from another and a
//! mix of two saves from either.
//!
//! The out-of-space, kill and two-saver tests re-run this test binary as a
//! child process (selected by an environment variable): under a private
//! mount namespace with a small tmpfs (`unshare`, as root or in a user
//! namespace), to be killed with SIGKILL at a random moment of a save, or
//! to save beside another process.

use hurray::{
    ElementType, Error, File, ShardedFile, ShardedWriter, TensorDescriptor, atomic::Durability,
};
use hurray::{Writer, shape};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const CHILD: &str = "HURRAY_FAULTS_CHILD";
const MIB: usize = 1 << 20;

/// The byte every tensor of generation `generation` is filled with.
fn fill(generation: u32) -> u8 {
    generation.to_le_bytes()[0]
}

/// Saves generation `generation` as a sharded checkpoint at `index`:
/// `tensors` tensors of `bytes` bytes, one member each.
fn save_generation(
    index: &Path,
    generation: u32,
    tensors: usize,
    bytes: usize,
) -> hurray::Result<()> {
    save_generation_as(index, generation, tensors, bytes, Durability::Synced)
}

fn save_generation_as(
    index: &Path,
    generation: u32,
    tensors: usize,
    bytes: usize,
    durability: Durability,
) -> hurray::Result<()> {
    let mut w = ShardedWriter::create(index)?;
    w.set_durability(durability);
    w.set_max_shard_size(bytes as u64);
    w.set_metadata("generation", generation.to_string());
    for_each_tensor(fill(generation), tensors, bytes, |d, b| w.add_tensor(d, b))?;
    w.finish().map(drop)
}

/// Calls `add` with each of `tensors` tensors (`t0`, `t1`, ...) of `bytes`
/// bytes, every byte `byte`.
fn for_each_tensor(
    byte: u8,
    tensors: usize,
    bytes: usize,
    mut add: impl FnMut(&TensorDescriptor, &[&[u8]]) -> hurray::Result<()>,
) -> hurray::Result<()> {
    let data = vec![byte; bytes];
    for t in 0..tensors {
        let desc =
            TensorDescriptor::new(format!("t{t}"), ElementType::UInt8, shape(&[bytes as u64]));
        add(&desc, &[&data])?;
    }
    Ok(())
}

/// The generation the checkpoint at `index` holds, after checking every
/// member's CRC-32C and that every byte of every tensor is that generation's.
fn checkpoint_generation(index: &Path) -> hurray::Result<u32> {
    let c = ShardedFile::open(index)?;
    c.verify_members()?;
    let generation: u32 = c.metadata()["generation"].parse().unwrap();
    for t in c.tensors() {
        let data = c.assemble(&t.name)?;
        let mixed = data.bytes.iter().position(|&b| b != fill(generation));
        assert_eq!(
            mixed, None,
            "{}: a byte of another save in generation {generation}",
            t.name
        );
    }
    Ok(generation)
}

/// A single file of generation `generation`: `tensors` tensors of `bytes` bytes.
fn save_file(path: &Path, generation: u8, tensors: usize, bytes: usize) -> hurray::Result<()> {
    let mut w = Writer::create(path)?;
    for_each_tensor(generation, tensors, bytes, |d, b| w.add_tensor(d, b))?;
    w.finish().map(drop)
}

/// The generation of the single file at `path`, every byte checked.
fn file_generation(path: &Path) -> hurray::Result<u8> {
    let f = File::open(path)?;
    let first = f.tensors().next().expect("a tensor").data()?[0];
    for t in f.tensors() {
        assert!(t.verify_checksum()?);
        assert!(
            t.data()?.iter().all(|&b| b == first),
            "{}: a mix of two saves",
            t.name()
        );
    }
    Ok(first)
}

fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_save_over_a_checkpoint_writes_beside_it_then_removes_the_old_members() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("model.hurray");
    save_generation(&index, 1, 3, 4096).unwrap();
    let first = names(&[
        "model.hurray",
        "model-00001.hurray",
        "model-00002.hurray",
        "model-00003.hurray",
    ]);
    assert_eq!(listing(dir.path()), first);
    // The second save cannot use the names the first one's index lists.
    save_generation(&index, 2, 3, 4096).unwrap();
    assert_eq!(checkpoint_generation(&index).unwrap(), 2);
    let second = names(&[
        "model.hurray",
        "model-00001.1.hurray",
        "model-00002.1.hurray",
        "model-00003.1.hurray",
    ]);
    assert_eq!(
        listing(dir.path()),
        second,
        "the first save's members are gone"
    );
    // The third takes the preferred names back; a smaller one leaves no
    // member of the second behind.
    save_generation(&index, 3, 2, 4096).unwrap();
    assert_eq!(checkpoint_generation(&index).unwrap(), 3);
    let third = names(&["model.hurray", "model-00001.hurray", "model-00002.hurray"]);
    assert_eq!(listing(dir.path()), third);
}

#[test]
fn named_members_and_adopted_ones_avoid_the_replaced_checkpoints_names() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("checkpoint.hurray");
    let save = |generation: u32| {
        let mut w = ShardedWriter::create(&index).unwrap();
        w.set_metadata("generation", generation.to_string());
        // Rank 0 written by the writer, rank 1 as another process would:
        // at the path the writer gives it, then adopted.
        w.start_member("rank-0.hurray").unwrap();
        let desc = TensorDescriptor::new("a", ElementType::UInt8, shape(&[8]));
        w.add_tensor(&desc, &[&[fill(generation); 8]]).unwrap();
        let rank1 = w.member_path("rank-1.hurray").unwrap();
        save_file(&dir.path().join(&rank1), fill(generation), 1, 8).unwrap();
        // A name asked for twice is refused, as writing it twice would be.
        assert!(w.member_path("rank-1.hurray").is_err());
        w.adopt_member(&rank1).unwrap();
        w.finish().unwrap();
        rank1
    };
    assert_eq!(save(1), "rank-1.hurray");
    assert_eq!(save(2), "rank-1.1.hurray");
    assert_eq!(checkpoint_generation(&index).unwrap(), 2);
    assert_eq!(
        listing(dir.path()),
        names(&["checkpoint.hurray", "rank-0.1.hurray", "rank-1.1.hurray"])
    );
}

#[test]
fn a_failed_save_leaves_the_old_checkpoint_and_nothing_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("model.hurray");
    save_generation(&index, 1, 2, 4096).unwrap();
    let before = listing(dir.path());
    // Two members written, then chunks that leave a gap: no index.
    let mut w = ShardedWriter::create(&index).unwrap();
    w.set_max_shard_size(4096);
    let data = vec![2u8; 4096];
    w.add_tensor(
        &TensorDescriptor::new("t0", ElementType::UInt8, shape(&[4096])),
        &[&data],
    )
    .unwrap();
    let chunk = TensorDescriptor::new("gappy", ElementType::UInt8, shape(&[4096]));
    w.add_chunk(&[3 * 4096], &[0], &chunk, &[&data]).unwrap();
    let err = w.finish().unwrap_err();
    assert!(matches!(err, Error::InvalidField { .. }), "{err}");
    assert_eq!(checkpoint_generation(&index).unwrap(), 1);
    assert_eq!(
        listing(dir.path()),
        before,
        "the failed save removed its members"
    );
    // A writer dropped without finishing does the same.
    let mut w = ShardedWriter::create(&index).unwrap();
    w.set_max_shard_size(1);
    for t in 0..3 {
        w.add_tensor(
            &TensorDescriptor::new(format!("t{t}"), ElementType::UInt8, shape(&[8])),
            &[&[2; 8]],
        )
        .unwrap();
    }
    drop(w);
    assert_eq!(listing(dir.path()), before);
    assert_eq!(checkpoint_generation(&index).unwrap(), 1);
}

/// Whether every byte of member 0's tensor `t0` is `byte`.
fn first_member_is(c: &ShardedFile, byte: u8) -> bool {
    let t = c.member(0).unwrap().tensor("t0").unwrap();
    t.data().unwrap().iter().all(|&b| b == byte)
}

#[test]
fn a_reader_of_a_replaced_checkpoint_reads_the_one_it_opened_or_fails() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("model.hurray");
    save_generation(&index, 1, 2, 4096).unwrap();
    let opened = ShardedFile::open(&index).unwrap();
    // As the command line opens it: the index mapped once, then read.
    let index_file = File::open(&index).unwrap();
    let opened_at = ShardedFile::from_index_at(&index_file, &index).unwrap();
    drop(index_file);
    // Member 0 is mapped before the replacements; member 1 is not.
    assert!(first_member_is(&opened, 1));
    save_generation(&index, 2, 2, 4096).unwrap();
    // Two saves later the preferred names are back, the same size, with
    // other bytes: only the index being another file tells them apart.
    save_generation(&index, 3, 2, 4096).unwrap();
    assert!(first_member_is(&opened, 1));
    for c in [&opened, &opened_at] {
        match c.member(1) {
            Err(Error::MemberMismatch {
                field: "index",
                member,
                ..
            }) => {
                assert_eq!(member, "model-00002.hurray");
            }
            other => panic!("member 1 of a replaced checkpoint: {other:?}"),
        }
    }
    assert_eq!(checkpoint_generation(&index).unwrap(), 3);
}

#[test]
fn readers_racing_a_replaced_file_see_the_old_or_the_new_never_a_mix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.hurray");
    save_file(&path, 0, 4, 64 << 10).unwrap();
    let saves = 60u8;
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let (mut last, mut reads) = (0u8, 0u32);
                    while last < saves {
                        let g = file_generation(&path).unwrap();
                        assert!(g >= last, "generation {g} after {last}");
                        (last, reads) = (g, reads + 1);
                    }
                    reads
                })
            })
            .collect();
        for g in 1..=saves {
            save_file(&path, g, 4, 64 << 10).unwrap();
        }
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    });
}

#[test]
fn readers_racing_a_replaced_checkpoint_read_one_save_or_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("model.hurray");
    save_generation(&index, 0, 3, 64 << 10).unwrap();
    let saves = 40u32;
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let (mut last, mut whole, mut refused) = (0u32, 0u32, 0u32);
                    while last < saves {
                        match checkpoint_generation(&index) {
                            Ok(g) => {
                                assert!(g >= last, "generation {g} after {last}");
                                (last, whole) = (g, whole + 1);
                            }
                            // The members it lists were replaced between
                            // opening the index and opening them.
                            Err(Error::MemberMismatch { field: "index", .. }) => refused += 1,
                            Err(Error::Io { cause, .. })
                                if cause.kind() == std::io::ErrorKind::NotFound =>
                            {
                                refused += 1
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    (whole, refused)
                })
            })
            .collect();
        for g in 1..=saves {
            save_generation(&index, g, 3, 64 << 10).unwrap();
        }
        for r in readers {
            let (whole, refused) = r.join().unwrap();
            eprintln!("reader: {whole} whole checkpoints, {refused} refused as replaced");
            assert!(whole > 0);
        }
    });
}

/// Runs this test binary's `test` as a child process with `CHILD` set to
/// `arg`; with `tmpfs_mib`, in a private mount namespace with a tmpfs of
/// that size mounted on `arg`'s directory.
fn child(test: &str, arg: &Path, tmpfs_mib: Option<u32>) -> Command {
    let exe = std::env::current_exe().unwrap();
    let args = ["--exact", test, "--nocapture", "--test-threads=1"];
    let mut c = match tmpfs_mib {
        None => {
            let mut c = Command::new(exe);
            c.args(args);
            c
        }
        Some(mib) => {
            // A user namespace too when not root, so that mount is allowed.
            let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
            let mut c = Command::new("unshare");
            c.arg(if root { "--mount" } else { "--map-root-user" })
                .args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg(r#"mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@""#)
                .arg("sh")
                .arg(format!("{mib}m"))
                .arg(arg)
                .arg(exe)
                .args(args);
            c
        }
    };
    c.env(CHILD, arg);
    c
}

fn child_arg() -> Option<PathBuf> {
    std::env::var_os(CHILD).map(PathBuf::from)
}

fn is_out_of_space(e: &Error) -> bool {
    match e {
        Error::Io { cause, .. } | Error::Stream(cause) => {
            cause.kind() == std::io::ErrorKind::StorageFull
        }
        _ => false,
    }
}

#[test]
fn out_of_space_on_a_small_tmpfs_loses_nothing() {
    let test = "out_of_space_on_a_small_tmpfs_loses_nothing";
    if let Some(dir) = child_arg() {
        return out_of_space_in(&dir);
    }
    let dir = tempfile::tempdir().unwrap();
    let out = child(test, dir.path(), Some(8)).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the child on an 8 MiB tmpfs failed:\n{text}"
    );
    assert!(text.contains("ran out of space 2 times"), "{text}");
}

/// In the child, on an 8 MiB tmpfs at `dir`.
fn out_of_space_in(dir: &Path) {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let on = dir.to_str().unwrap();
    assert!(
        mounts
            .lines()
            .any(|l| l.starts_with("tmpfs ") && l.split(' ').nth(1) == Some(on))
    );
    // One file: 2 MiB in place, then a save of 12 MiB.
    let single = dir.join("single.hurray");
    save_file(&single, 1, 2, MIB).unwrap();
    let err = save_file(&single, 2, 12, MIB).unwrap_err();
    assert!(is_out_of_space(&err), "{err}");
    assert!(
        err.to_string().contains(on),
        "the error names the file: {err}"
    );
    assert_eq!(file_generation(&single).unwrap(), 1);
    assert_eq!(
        listing(dir),
        names(&["single.hurray"]),
        "no temporary file left"
    );
    std::fs::remove_file(&single).unwrap();

    // A checkpoint: three 1 MiB members, then a save of three 3 MiB ones,
    // which fills the disk after its first member.
    let ckpt = dir.join("ckpt");
    std::fs::create_dir(&ckpt).unwrap();
    let index = ckpt.join("model.hurray");
    save_generation(&index, 1, 3, MIB).unwrap();
    let before = listing(&ckpt);
    let err = save_generation(&index, 2, 3, 3 * MIB).unwrap_err();
    assert!(is_out_of_space(&err), "{err}");
    assert!(
        err.to_string().contains("model-00002.1.hurray"),
        "the error names the member: {err}"
    );
    assert_eq!(checkpoint_generation(&index).unwrap(), 1);
    assert_eq!(listing(&ckpt), before, "nothing of the failed save remains");
    // With room again the next save replaces it.
    save_generation(&index, 3, 2, 2 * MIB).unwrap();
    assert_eq!(checkpoint_generation(&index).unwrap(), 3);
    println!("ran out of space 2 times; each time the previous save read whole");
}

#[test]
fn a_sharded_save_killed_at_random_moments_leaves_the_old_or_the_new_checkpoint() {
    let test = "a_sharded_save_killed_at_random_moments_leaves_the_old_or_the_new_checkpoint";
    if let Some(index) = child_arg() {
        return keep_saving(&index);
    }
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("model.hurray");
    save_generation(&index, 0, 4, 256 << 10).unwrap();
    // A seed from the clock, printed so a failure can be replayed.
    let seed = std::env::var("HURRAY_FAULTS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("HURRAY_FAULTS_SEED={seed}");
    let mut rng = seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut last = 0u32;
    let mut changed = 0;
    for kill in 0..20 {
        let mut c = child(test, &index, None)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(c.stdout.take().unwrap());
        let mut line = String::new();
        // After libtest's "test NAME ... ", on the same line.
        while !line.trim_end().ends_with("saving") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the child ended before saving"
            );
        }
        // Up to 60 ms into its saves (each takes a few ms).
        std::thread::sleep(Duration::from_micros(next() % 60_000));
        c.kill().unwrap();
        c.wait().unwrap();
        let g = checkpoint_generation(&index)
            .unwrap_or_else(|e| panic!("kill {kill}: the checkpoint no longer reads: {e}"));
        assert!(g >= last, "kill {kill}: generation {g} after {last}");
        changed += usize::from(g != last);
        last = g;
        // Only the index and its members, and what a killed save left: its
        // unlisted members and temporary files, which no index lists.
        let c = ShardedFile::open(&index).unwrap();
        for m in c.members() {
            assert!(dir.path().join(&m.path).exists());
        }
    }
    eprintln!("20 kills: the checkpoint moved on after {changed}, read whole after all");
}

/// In the child: saves generation after generation over `index` until killed.
fn keep_saving(index: &Path) {
    let start = checkpoint_generation(index).unwrap();
    println!("saving");
    for g in start + 1.. {
        // Half the saves fsync, half only rename: a killed process loses
        // nothing either way.
        let durability = if g % 2 == 0 {
            Durability::RenameOnly
        } else {
            Durability::Synced
        };
        save_generation_as(index, g, 4, 256 << 10, durability).unwrap();
    }
}

const GENERATION: &str = "HURRAY_FAULTS_GENERATION";

/// Two processes save one checkpoint at the same moment (a job restarted
/// while the old one still runs; two ranks that both think they are rank
/// 0), ten rounds: each round ends as one of the two saves, whole, every
/// member's CRC-32C right and every byte that save's, and with no file in
/// the directory that its index does not list (the other save's members
/// removed, no placeholder, lock or temporary file left).
#[test]
fn two_processes_saving_one_checkpoint_leave_one_whole_save() {
    let test = "two_processes_saving_one_checkpoint_leave_one_whole_save";
    if let Some(index) = child_arg() {
        let generation: u32 = std::env::var(GENERATION).unwrap().parse().unwrap();
        // Both wait for the go, so that their saves overlap.
        let go = index.with_extension("go");
        while !go.exists() {
            std::thread::sleep(Duration::from_micros(200));
        }
        // 16 tensors of 256 KiB, a member each.
        return save_generation_as(&index, generation, 16, 256 << 10, Durability::RenameOnly)
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("model.hurray");
    save_generation(&index, 1, 16, 256 << 10).unwrap();
    let mut won = [0; 2];
    for round in 1..=10u32 {
        let go = dir.path().join("model.go");
        // Who starts first alternates from round to round.
        let generations = if round % 2 == 0 {
            [2 * round, 2 * round + 1]
        } else {
            [2 * round + 1, 2 * round]
        };
        let mut savers: Vec<_> = generations
            .iter()
            .map(|g| {
                child(test, &index, None)
                    .env(GENERATION, g.to_string())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::fs::write(&go, b"").unwrap();
        for s in &mut savers {
            assert!(s.wait().unwrap().success(), "round {round}: a save failed");
        }
        std::fs::remove_file(&go).unwrap();
        let g = checkpoint_generation(&index)
            .unwrap_or_else(|e| panic!("round {round}: the checkpoint does not read: {e}"));
        let winner = generations
            .iter()
            .position(|&w| w == g)
            .unwrap_or_else(|| panic!("round {round}: generation {g}, neither save's"));
        won[winner] += 1;
        let c = ShardedFile::open(&index).unwrap();
        assert_eq!(c.members().len(), 16);
        let mut listed: BTreeSet<String> = c.members().iter().map(|m| m.path.clone()).collect();
        listed.insert("model.hurray".into());
        assert_eq!(
            listing(dir.path()),
            listed,
            "round {round}: files no index lists"
        );
    }
    eprintln!("10 rounds of two saves at once: the first started won {won:?} times");
}

/// A member of another save put at a member's path, the same size (the
/// same tensors, other values), is refused by a plain load, before any of
/// its values is read: its identity is not the one the index records.
#[test]
fn a_member_of_another_save_is_refused_by_a_plain_load() {
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (
        dir.path().join("a/model.hurray"),
        dir.path().join("b/model.hurray"),
    );
    for (index, generation) in [(&ours, 1), (&theirs, 2)] {
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        save_generation(index, generation, 2, 4096).unwrap();
    }
    let member = "model-00002.hurray";
    std::fs::copy(
        theirs.parent().unwrap().join(member),
        ours.parent().unwrap().join(member),
    )
    .unwrap();
    let c = ShardedFile::open(&ours).unwrap();
    assert!(first_member_is(&c, 1));
    match c.assemble("t1") {
        Err(Error::MemberMismatch {
            field: "file_id",
            member: m,
            ..
        }) => assert_eq!(m, member),
        other => panic!("a member of another save: {other:?}"),
    }
    // What the index records of it: an identity per member, each its own.
    let ids: BTreeSet<_> = c.members().iter().map(|m| m.file_id.unwrap()).collect();
    assert_eq!(ids.len(), 2);
}

/// A rank reports the member it wrote (size, CRC-32C, identity); another
/// save then writes the same path with a file of the same size (two saves
/// that name their members alike, as Orbax's processes do). The index
/// writer refuses to adopt it: its identity is not the one reported, so the
/// first save's size and CRC-32C are never recorded over the second one's
/// file.
#[test]
fn a_member_written_over_after_its_report_is_not_adopted() {
    use hurray::sharded::{Crc32cWriter, FileId};
    let dir = tempfile::tempdir().unwrap();
    let write = |generation: u8| {
        let path = dir.path().join("process-0.hurray");
        let id = FileId::random().unwrap();
        let file = hurray::atomic::AtomicFile::create(&path).unwrap();
        let mut w = Writer::to_file_at(Crc32cWriter::new(file), &path).unwrap();
        w.set_file_id(Some(id));
        for_each_tensor(generation, 2, 4096, |d, b| w.add_tensor(d, b)).unwrap();
        let (_, sink) = w.finish_into_inner().unwrap();
        let (file, written) = sink.finish();
        file.commit().unwrap();
        hurray::sharded::WrittenMember {
            file_id: Some(id),
            ..written
        }
    };
    let ours = write(1);
    let theirs = write(2);
    assert_eq!(ours.size, theirs.size);
    let mut w = ShardedWriter::create(dir.path().join("model.hurray")).unwrap();
    match w.adopt_written_member("process-0.hurray", &[], ours) {
        Err(Error::MemberMismatch {
            field: "file_id", ..
        }) => {}
        other => panic!("a member another save wrote over: {other:?}"),
    }
    w.adopt_written_member("process-0.hurray", &[], theirs)
        .unwrap();
    let index = w.finish().unwrap();
    let c = ShardedFile::open(index).unwrap();
    c.verify_members().unwrap();
    assert!(c.assemble("t1").unwrap().bytes.iter().all(|&b| b == 2));
}
