//! `File::punch_hole`: the operating system's frees the whole pages inside the range
//! (st_blocks drop, the length stays, they read back as zeros, the bytes around them are
//! untouched); the simulated disk's zeros them like a pending write, counts them, and
//! counts as a mutation for crash injection.

use std::path::Path;
use storage::sim::{is_crash, Faults};
use storage::{is_unsupported, Open, RealStorage, SimStorage, Storage};

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7) | 1).collect()
}

#[test]
fn real_punch_frees_whole_pages_inside_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let st = RealStorage;
    let f = st.open(&path, Open::CreateNew).unwrap();
    let data = pattern(1 << 20);
    f.write_all_at(&data, 0).unwrap();
    f.sync_data().unwrap();
    let before = f.allocated().unwrap().expect("the OS knows st_blocks");
    assert!(before >= 1 << 20, "{before}");
    // Not page-aligned: only the whole pages inside 1000..900_000 go.
    match f.punch_hole(1000, 899_000) {
        Err(e) if is_unsupported(&e) => {
            eprintln!("this file system cannot punch holes: {e}");
            return;
        }
        r => r.unwrap(),
    }
    let after = f.allocated().unwrap().unwrap();
    assert!(
        after + 800_000 <= before,
        "st_blocks did not drop: {before} -> {after}"
    );
    assert_eq!(f.len().unwrap(), 1 << 20, "the length changed");
    let back = std::fs::read(&path).unwrap();
    let (start, end) = (4096, 900_000 / 4096 * 4096);
    assert!(
        back[start..end].iter().all(|&b| b == 0),
        "a punched byte reads"
    );
    assert_eq!(
        &back[..start],
        &data[..start],
        "bytes before the hole changed"
    );
    assert_eq!(&back[end..], &data[end..], "bytes after the hole changed");
    // A range without a whole page frees nothing and is no error.
    f.punch_hole(100, 4000).unwrap();
}

#[test]
fn sim_punch_zeros_counts_and_is_a_mutation() {
    let sim = SimStorage::new(1);
    let d = Path::new("/db");
    sim.create_dir_all(d).unwrap();
    let p = d.join("log");
    let f = sim.open(&p, Open::CreateNew).unwrap();
    let data = pattern(40_000);
    f.write_all_at(&data, 0).unwrap();
    f.sync_data().unwrap();
    sim.sync_dir(d).unwrap();
    let m0 = sim.stats().mutations;
    f.punch_hole(10, 20_000).unwrap();
    assert_eq!(sim.stats().mutations, m0 + 1, "a punch is a mutation");
    assert_eq!(sim.stats().punched_bytes, 16_384 - 4096);
    let mut back = vec![0u8; 40_000];
    f.read_full_at(&mut back, 0).unwrap();
    assert!(back[4096..16_384].iter().all(|&b| b == 0));
    assert_eq!(&back[..4096], &data[..4096]);
    assert_eq!(&back[16_384..], &data[16_384..]);
    assert_eq!(f.len().unwrap(), 40_000);
    // Unsynced, a crash keeps the old bytes or zeros, never anything else, and the
    // bytes outside the hole always.
    drop(f);
    sim.crash();
    let after = sim.read_file(&p).unwrap();
    assert_eq!(after.len(), 40_000);
    for (i, (&a, &b)) in after.iter().zip(&data).enumerate() {
        assert!(
            a == b || ((4096..16_384).contains(&i) && a == 0),
            "byte {i}: {a} (was {b})"
        );
    }
    // Crash injection counts it: the punch at the crash point fails.
    let f = sim.open(&p, Open::ReadWrite).unwrap();
    sim.set_faults(Faults {
        crash_after_writes: Some(0),
        ..Faults::default()
    });
    let e = f.punch_hole(0, 40_000).unwrap_err();
    assert!(is_crash(&e), "{e}");
}
