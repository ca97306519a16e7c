//! The simulated disk against its model: what a crash keeps, what each fault does, and
//! that the durable-write helpers of `storage` hold up at every crash point. Several
//! tests pair a property with a control that breaks the protocol, so a model too kind
//! to catch a missing fsync would fail here.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use storage::sim::{is_crash, Faults};
use storage::{create_durable, is_no_space, write_atomic, Open, SimStorage, Storage};

fn p(s: &str) -> &Path {
    Path::new(s)
}

fn disk(seed: u64) -> SimStorage {
    let sim = SimStorage::new(seed);
    sim.create_dir_all(p("/db")).unwrap();
    sim
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64).wrapping_mul(31).wrapping_add(seed) as u8 | 1)
        .collect()
}

#[test]
fn synced_data_survives_every_crash() {
    for seed in 0..1000 {
        let sim = disk(seed);
        let a = create_durable(&sim, p("/db/a")).unwrap();
        let synced = pattern(seed, 3000);
        a.write_all_at(&synced, 0).unwrap();
        a.sync_data().unwrap();
        write_atomic(&sim, p("/db"), "cfg", b"v1").unwrap();
        // Unsynced changes everywhere else.
        a.write_all_at(&pattern(seed + 1, 2000), 3000).unwrap();
        a.set_len(6000).unwrap();
        let b = sim.open(p("/db/b"), Open::CreateNew).unwrap();
        b.write_all_at(b"unsynced", 0).unwrap();
        sim.rename(p("/db/b"), p("/db/c")).unwrap();
        sim.crash();
        let got = sim.read(p("/db/a")).unwrap();
        assert_eq!(&got[..3000], &synced[..], "seed {seed}");
        assert_eq!(sim.read(p("/db/cfg")).unwrap(), b"v1", "seed {seed}");
    }
}

#[test]
fn unsynced_data_sometimes_survives_sometimes_not() {
    let (mut kept, mut lost, mut file_kept, mut file_lost) = (0, 0, 0, 0);
    for seed in 0..200 {
        let sim = disk(seed);
        let a = create_durable(&sim, p("/db/a")).unwrap();
        a.write_all_at(b"hello", 0).unwrap();
        let n = sim.open(p("/db/new"), Open::CreateNew).unwrap();
        n.write_all_at(b"x", 0).unwrap();
        n.sync_data().unwrap(); // content synced, directory entry not
        sim.crash();
        match sim.read(p("/db/a")).unwrap().as_slice() {
            b"hello" => kept += 1,
            b"" => lost += 1,
            _ => {}
        }
        if sim.exists(p("/db/new")).unwrap() {
            assert_eq!(sim.read(p("/db/new")).unwrap(), b"x");
            file_kept += 1;
        } else {
            file_lost += 1;
        }
    }
    assert!(kept > 10 && lost > 10, "kept {kept} lost {lost}");
    assert!(
        file_kept > 10 && file_lost > 10,
        "kept {file_kept} lost {file_lost}"
    );
}

#[test]
fn torn_writes_mix_sectors() {
    const S: usize = 512;
    let (mut sector_mix, mut byte_tear, mut all_new, mut all_old) = (false, false, false, false);
    for seed in 0..300 {
        let sim = disk(seed);
        let a = create_durable(&sim, p("/db/a")).unwrap();
        a.write_all_at(&[0u8; 8 * S], 0).unwrap();
        a.sync_data().unwrap();
        a.write_all_at(&[0xffu8; 8 * S], 0).unwrap();
        sim.crash();
        let got = sim.read(p("/db/a")).unwrap();
        assert_eq!(got.len(), 8 * S);
        let kinds: Vec<u8> = got
            .chunks(S)
            .map(
                |c| match (c.iter().all(|&b| b == 0), c.iter().all(|&b| b == 0xff)) {
                    (true, _) => 0,
                    (_, true) => 1,
                    _ => 2,
                },
            )
            .collect();
        if kinds.contains(&2) {
            byte_tear = true;
            // A byte tear is a prefix: new bytes then old, never the reverse.
            let first_old = got.iter().position(|&b| b == 0).unwrap();
            assert!(got[first_old..].iter().all(|&b| b == 0), "seed {seed}");
        } else if kinds.windows(2).any(|w| w == [0, 1]) {
            sector_mix = true; // an old sector before a new one: not a prefix
        } else if kinds.iter().all(|&k| k == 1) {
            all_new = true;
        } else if kinds.iter().all(|&k| k == 0) {
            all_old = true;
        }
    }
    assert!(sector_mix && byte_tear && all_new && all_old);
}

#[test]
fn no_space_at_the_limit_then_writes_continue() {
    let sim = disk(1);
    let f = sim.open(p("/db/a"), Open::CreateNew).unwrap();
    let g = sim.open(p("/db/b"), Open::CreateNew).unwrap();
    g.write_all_at(&[2u8; 200], 0).unwrap();
    sim.set_faults(Faults {
        no_space_after: Some(1000),
        ..Faults::default()
    });
    let data = pattern(7, 1500);
    let e = f.write_all_at(&data, 0).unwrap_err();
    assert!(is_no_space(&e), "{e}");
    assert!(e.to_string().contains("/db/a"), "{e}");
    assert_eq!(f.len().unwrap(), 800, "wrote what fit");
    assert!(is_no_space(&f.set_len(900).unwrap_err()));
    assert!(is_no_space(&g.write_at(b"x", 200).unwrap_err()));
    assert_eq!(f.write_at(b"", 800).unwrap(), 0);
    // Overwriting in place needs no room.
    f.write_all_at(b"zz", 0).unwrap();
    // Removing a file frees its space once no handle holds it.
    drop(g);
    sim.remove(p("/db/b")).unwrap();
    f.write_all_at(&data[800..1000], 800).unwrap();
    assert!(is_no_space(
        &f.write_all_at(&data[1000..], 1000).unwrap_err()
    ));
    sim.set_faults(Faults::default());
    f.write_all_at(&data[1000..], 1000).unwrap();
    let mut want = data.clone();
    want[..2].copy_from_slice(b"zz");
    assert_eq!(sim.read_file(p("/db/a")).unwrap(), want);
    assert!(sim.stats().no_space_errors >= 4);
}

#[test]
fn short_writes_are_handled_by_write_all_at() {
    let sim = disk(3);
    sim.set_faults(Faults {
        short_write: 0.7,
        ..Faults::default()
    });
    let f = sim.open(p("/db/a"), Open::CreateNew).unwrap();
    let data = pattern(3, 10_000);
    let mut saw_short = false;
    for _ in 0..20 {
        saw_short |= f.write_at(&data, 0).unwrap() < data.len();
    }
    assert!(saw_short);
    f.write_all_at(&data, 20_000).unwrap();
    let mut back = vec![0u8; data.len()];
    assert_eq!(f.read_full_at(&mut back, 20_000).unwrap(), data.len());
    assert_eq!(back, data);
    assert!(sim.stats().short_writes > 0);
    assert_eq!(sim.stats().faults_injected(), sim.stats().short_writes);
}

#[test]
fn write_and_sync_errors_are_eio() {
    let sim = disk(4);
    let f = sim.open(p("/db/a"), Open::CreateNew).unwrap();
    sim.set_faults(Faults {
        write_error: 1.0,
        sync_error: 1.0,
        ..Faults::default()
    });
    let e = f.write_at(b"abc", 0).unwrap_err();
    assert_eq!(e.raw_os_error(), None); // wrapped with the path, like real.rs
    assert!(
        e.to_string().contains("/db/a") && e.to_string().contains("os error 5"),
        "{e}"
    );
    assert_eq!(f.len().unwrap(), 0, "a failed write writes nothing");
    assert!(f
        .sync_data()
        .unwrap_err()
        .to_string()
        .contains("os error 5"));
    assert!(sim.sync_dir(p("/db")).is_err());
    let st = sim.stats();
    assert_eq!((st.write_errors, st.sync_errors), (1, 2));
}

#[test]
fn a_failed_fsync_may_drop_writes_for_good() {
    let (mut lost, mut kept) = (0, 0);
    for seed in 0..100 {
        let sim = disk(seed);
        let f = create_durable(&sim, p("/db/a")).unwrap();
        f.write_all_at(b"old", 0).unwrap();
        f.sync_data().unwrap();
        f.write_all_at(b"new", 0).unwrap();
        sim.set_faults(Faults {
            sync_error: 1.0,
            ..Faults::default()
        });
        let e = f.sync_data().unwrap_err();
        assert!(!is_crash(&e));
        assert_eq!(
            sim.read_file(p("/db/a")).unwrap(),
            b"new",
            "reads still see it"
        );
        sim.set_faults(Faults::default());
        f.sync_data().unwrap(); // succeeds, yet does not rewrite what was dropped
        sim.crash();
        if sim.read(p("/db/a")).unwrap() == b"new" {
            kept += 1;
        } else {
            lost += 1;
        }
    }
    assert!(lost > 10 && kept > 10, "lost {lost} kept {kept}");
}

#[test]
fn crash_after_writes_stops_everything() {
    let sim = disk(5);
    sim.set_faults(Faults {
        crash_after_writes: Some(2),
        ..Faults::default()
    });
    let f = sim.open(p("/db/a"), Open::CreateNew).unwrap(); // mutation 0
    f.write_all_at(b"data", 0).unwrap(); // mutation 1
    let e = f.sync_data().unwrap_err(); // mutation 2: the crash
    assert!(is_crash(&e) && e.to_string().contains("/db/a"), "{e}");
    assert!(sim.is_crashed());
    assert!(is_crash(&f.read_at(&mut [0u8; 4], 0).unwrap_err()));
    assert!(is_crash(&f.write_at(b"x", 0).unwrap_err()));
    assert!(is_crash(&f.len().unwrap_err()));
    assert!(is_crash(&sim.open(p("/db/a"), Open::Read).unwrap_err()));
    assert!(is_crash(
        &sim.open(p("/db/z"), Open::CreateNew).unwrap_err()
    ));
    assert!(is_crash(&sim.list(p("/db")).unwrap_err()));
    assert!(is_crash(&sim.exists(p("/db")).unwrap_err()));
    assert!(is_crash(&sim.sync_dir(p("/db")).unwrap_err()));
    assert_eq!(sim.stats().injected_crashes, 1);
    sim.crash();
    assert!(!sim.is_crashed());
    assert_eq!(sim.faults().crash_after_writes, None, "one-shot");
    assert!(is_crash(&f.read_at(&mut [0u8; 4], 0).unwrap_err()));
    // The storage works again.
    let g = sim.open(p("/db/b"), Open::CreateNew).unwrap();
    g.write_all_at(b"ok", 0).unwrap();
    g.sync_data().unwrap();
}

/// A run with every fault on, then a crash: everything the seed decides.
fn scenario(
    seed: u64,
) -> (
    std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
    storage::sim::SimStats,
) {
    let sim = disk(seed);
    sim.set_faults(Faults {
        short_write: 0.3,
        write_error: 0.1,
        sync_error: 0.1,
        ..Faults::default()
    });
    for i in 0..6u64 {
        let path = format!("/db/f{}", i % 3);
        let f = match sim.open(p(&path), Open::CreateNew) {
            Ok(f) => f,
            Err(_) => sim.open(p(&path), Open::ReadWrite).unwrap(),
        };
        let _ = f.write_all_at(&pattern(i, 1500), i * 700);
        if i % 2 == 0 {
            let _ = f.sync_data();
        }
        if i == 3 {
            let _ = sim.rename(p("/db/f0"), p("/db/g"));
            let _ = sim.sync_dir(p("/db"));
        }
    }
    sim.crash();
    (sim.snapshot(), sim.stats())
}

#[test]
fn same_seed_same_bytes_different_seeds_differ() {
    let mut distinct = BTreeSet::new();
    for seed in 0..20 {
        let a = scenario(seed);
        assert_eq!(a, scenario(seed), "seed {seed}");
        distinct.insert(format!("{:?}", a.0));
    }
    assert!(distinct.len() > 10, "{} distinct outcomes", distinct.len());
}

/// Replace `/db/f` (holding `old`) through `replace` with a crash at
/// mutation `k`, then return what the file holds after the crash (`None`: missing).
fn replace_and_crash(
    seed: u64,
    k: u64,
    old: &[u8],
    replace: impl Fn(&SimStorage) -> io::Result<()>,
) -> Option<Vec<u8>> {
    let sim = disk(seed);
    write_atomic(&sim, p("/db"), "f", old).unwrap();
    sim.set_faults(Faults {
        short_write: 0.3,
        crash_after_writes: Some(k),
        ..Faults::default()
    });
    match replace(&sim) {
        Ok(()) => assert!(!sim.is_crashed()),
        Err(e) => assert!(is_crash(&e), "{e}"),
    }
    sim.crash();
    sim.exists(p("/db/f"))
        .unwrap()
        .then(|| sim.read(p("/db/f")).unwrap())
}

#[test]
fn write_atomic_leaves_old_or_new_at_every_crash_point() {
    let old = pattern(1, 1200);
    let new = pattern(2, 3000);
    let (mut saw_old, mut saw_new) = (false, false);
    for k in 0..24 {
        for seed in 0..120 {
            let got = replace_and_crash(seed, k, &old, |s| write_atomic(s, p("/db"), "f", &new));
            match got {
                Some(v) if v == old => saw_old = true,
                Some(v) if v == new => saw_new = true,
                other => panic!(
                    "k {k} seed {seed}: neither old nor new: {:?}",
                    other.map(|v| v.len())
                ),
            }
        }
    }
    assert!(saw_old && saw_new);
}

/// The control: the same replacement without fsyncing the temporary file is caught.
#[test]
fn replace_without_fsync_is_caught() {
    let old = pattern(1, 1200);
    let new = pattern(2, 3000);
    let careless = |s: &SimStorage| -> io::Result<()> {
        let f = s.open(p("/db/f.tmp"), Open::CreateNew)?;
        f.write_all_at(&new, 0)?;
        s.rename(p("/db/f.tmp"), p("/db/f"))?;
        s.sync_dir(p("/db"))
    };
    let caught = (0..8)
        .flat_map(|k| (0..50).map(move |seed| (k, seed)))
        .any(|(k, seed)| {
            let got = replace_and_crash(seed, k, &old, careless);
            got.as_deref() != Some(&old[..]) && got.as_deref() != Some(&new[..])
        });
    assert!(caught);
}

#[test]
fn create_durable_survives_a_crash_and_plain_create_may_not() {
    let (mut vanished, mut stayed) = (0, 0);
    for seed in 0..200 {
        let sim = disk(seed);
        create_durable(&sim, p("/db/durable")).unwrap();
        sim.open(p("/db/plain"), Open::CreateNew)
            .unwrap()
            .sync_data()
            .unwrap();
        sim.crash();
        assert!(sim.exists(p("/db/durable")).unwrap(), "seed {seed}");
        assert_eq!(sim.list(p("/db")).unwrap()[0], "durable");
        if sim.exists(p("/db/plain")).unwrap() {
            stayed += 1;
        } else {
            vanished += 1;
        }
    }
    assert!(vanished > 10 && stayed > 10);
}

#[test]
fn an_unsynced_rename_is_atomic() {
    let (mut before, mut after) = (0, 0);
    for seed in 0..200 {
        let sim = disk(seed);
        sim.write_file(p("/db/a"), b"A");
        sim.write_file(p("/db/b"), b"B");
        sim.rename(p("/db/a"), p("/db/b")).unwrap();
        sim.remove(p("/db/b.unrelated")).unwrap_err();
        sim.crash();
        let snap = sim.snapshot();
        let names: Vec<_> = snap.keys().map(|k| k.to_str().unwrap()).collect();
        match (
            names.as_slice(),
            snap.values()
                .map(Vec::as_slice)
                .collect::<Vec<_>>()
                .as_slice(),
        ) {
            (["/db/a", "/db/b"], [b"A", b"B"]) => before += 1,
            (["/db/b"], [b"A"]) => after += 1,
            other => panic!("seed {seed}: {other:?}"),
        }
    }
    assert!(before > 10 && after > 10);
}

#[test]
fn an_unsynced_remove_may_be_undone() {
    let (mut gone, mut back) = (0, 0);
    for seed in 0..100 {
        let sim = disk(seed);
        sim.write_file(p("/db/a"), b"A");
        sim.remove(p("/db/a")).unwrap();
        assert!(!sim.exists(p("/db/a")).unwrap());
        sim.crash();
        match sim.read_file(p("/db/a")) {
            None => gone += 1,
            Some(v) => {
                assert_eq!(v, b"A");
                back += 1
            }
        }
    }
    assert!(gone > 10 && back > 10);
}

#[test]
fn handles_from_before_a_crash_or_kill_fail() {
    let sim = disk(6);
    let f = create_durable(&sim, p("/db/a")).unwrap();
    sim.crash();
    let e = f.read_at(&mut [0u8; 1], 0).unwrap_err();
    assert!(is_crash(&e) && e.to_string().contains("/db/a"), "{e}");
    assert!(is_crash(&f.sync_data().unwrap_err()));
    assert!(is_crash(&f.set_len(3).unwrap_err()));
    let g = sim.open(p("/db/a"), Open::ReadWrite).unwrap();
    g.write_all_at(b"abc", 0).unwrap();
    sim.kill();
    assert!(is_crash(&g.write_at(b"x", 0).unwrap_err()));
    assert_eq!(sim.stats().kills, 1);
}

#[test]
fn kill_keeps_the_page_cache_and_a_later_crash_may_still_lose_it() {
    let (mut lost, mut kept) = (0, 0);
    for seed in 0..100 {
        let sim = disk(seed);
        let f = create_durable(&sim, p("/db/a")).unwrap();
        f.write_all_at(b"unsynced", 0).unwrap();
        sim.open(p("/db/b"), Open::CreateNew).unwrap();
        sim.kill();
        assert_eq!(sim.read(p("/db/a")).unwrap(), b"unsynced");
        assert!(sim.exists(p("/db/b")).unwrap());
        sim.crash();
        if sim.read(p("/db/a")).unwrap() == b"unsynced" {
            kept += 1;
        } else {
            lost += 1;
        }
    }
    assert!(lost > 10 && kept > 10);
}

#[test]
fn open_errors_name_the_file() {
    let sim = disk(7);
    let e = sim.open(p("/db/none"), Open::Read).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    assert!(e.to_string().contains("/db/none"), "{e}");
    assert_eq!(
        sim.open(p("/nodir/x"), Open::CreateNew).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    sim.open(p("/db/x"), Open::CreateNew).unwrap();
    let e = sim.open(p("/db/x"), Open::CreateNew).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(
        sim.remove(p("/db/none")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        sim.rename(p("/db/none"), p("/db/y")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        sim.list(p("/nodir")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
}

#[test]
#[should_panic(expected = "opened with Open::Read")]
fn writing_through_a_read_handle_is_a_programmer_error() {
    let sim = disk(8);
    sim.write_file(p("/db/a"), b"A");
    let f = sim.open(p("/db/a"), Open::Read).unwrap();
    let _ = f.write_at(b"x", 0);
}

#[test]
fn list_and_exists_show_the_current_state() {
    let sim = disk(9);
    sim.create_dir_all(p("/db/sub/deeper")).unwrap();
    sim.open(p("/db/b"), Open::CreateNew).unwrap();
    sim.open(p("/db/a"), Open::CreateNew).unwrap();
    sim.rename(p("/db/b"), p("/db/c")).unwrap();
    assert_eq!(sim.list(p("/db")).unwrap(), ["a", "c", "sub"]);
    assert!(sim.exists(p("/db/sub/deeper")).unwrap());
    assert!(sim.exists(p("/db/./a")).unwrap());
    assert!(!sim.exists(p("/db/b")).unwrap());
    sim.create_dir_all(p("rel")).unwrap();
    sim.open(p("rel/x"), Open::CreateNew).unwrap();
    assert_eq!(sim.list(p("./rel")).unwrap(), ["x"]);
    assert!(sim.create_dir_all(p("/db/a/z")).is_err(), "a is a file");
}

#[test]
fn damage_helpers_edit_the_disk_durably() {
    let sim = disk(10);
    sim.write_file(p("/other/dir/f"), b"abcdef");
    sim.flip_byte(p("/other/dir/f"), 1);
    sim.truncate(p("/other/dir/f"), 4);
    sim.write_file(p("/db/gone"), b"x");
    assert!(sim.delete(p("/db/gone")));
    assert!(!sim.delete(p("/db/gone")));
    sim.crash();
    assert_eq!(
        sim.read(p("/other/dir/f")).unwrap(),
        [b'a', !b'b', b'c', b'd']
    );
    assert_eq!(sim.read_file(p("/db/gone")), None);
    assert_eq!(sim.list(p("/other")).unwrap(), ["dir"]);
}

#[test]
fn unsynced_set_len_may_or_may_not_persist() {
    let mut lens = BTreeSet::new();
    for seed in 0..60 {
        let sim = disk(seed);
        let f = create_durable(&sim, p("/db/a")).unwrap();
        f.write_all_at(&[1u8; 100], 0).unwrap();
        f.sync_data().unwrap();
        f.set_len(40).unwrap();
        assert_eq!(f.len().unwrap(), 40);
        sim.crash();
        lens.insert(sim.read(p("/db/a")).unwrap().len());
    }
    assert_eq!(lens, BTreeSet::from([40, 100]));
}
