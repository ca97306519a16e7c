//! Attribution to components: a Rust program with functions in modules `btree` and
//! `lock` is traced with lackey; its misses must be charged to those components through
//! the ELF/DWARF symbolizer.
//!
//! Lackey writes no MAP records, so the test announces the executable itself. The program
//! is a PIE; valgrind (amd64) loads a PIE main executable at the fixed base 0x108000, so
//! runtime address = ELF address + 0x108000 (the load bias). The assertions below fail if
//! that bias is wrong (nothing would resolve to `btree` or `lock`).

use crate::common;

use cachesim::{Config, Simulator};
use object::{Object, ObjectSegment};
use std::process::Command;

use cachesim::lackey::VALGRIND_PIE_BASE;

const PROGRAM: &str = r#"
mod btree {
    // 2 MB walked twice with a 64-byte stride: ~65536 L1-D misses.
    #[inline(never)]
    pub fn work(v: &mut [u64]) -> u64 {
        let mut s = 0u64;
        for _ in 0..2 {
            for i in (0..v.len()).step_by(8) {
                s = s.wrapping_add(v[i]);
                v[i] = s;
            }
        }
        s
    }
    // Inlined into `session::get`: found through DWARF inlined frames. 1 MB once: ~16384.
    #[inline(always)]
    pub fn probe_inlined(v: &[u64]) -> u64 {
        let mut s = 0u64;
        for i in (0..v.len()).step_by(8) {
            s = s.wrapping_add(v[i].rotate_left(3));
        }
        s
    }
}
mod session {
    #[inline(never)]
    pub fn get(v: &[u64]) -> u64 {
        crate::btree::probe_inlined(v) + 1
    }
}
mod lock {
    // 256 KB walked once with a 64-byte stride: ~4096 L1-D misses.
    #[inline(never)]
    pub fn work(v: &mut [u64]) -> u64 {
        let mut s = 0u64;
        for i in (0..v.len()).step_by(8) {
            s = s.wrapping_add(v[i]);
            v[i] = s ^ 1;
        }
        s
    }
}
fn main() {
    let mut big = vec![1u64; 1 << 18];
    let mut small = vec![2u64; 1 << 15];
    let mid = vec![3u64; 1 << 17];
    let s = btree::work(&mut big) ^ lock::work(&mut small) ^ session::get(&mid);
    println!("{s}");
}
"#;

#[test]
fn misses_are_charged_to_the_modules_that_made_them() {
    if !common::have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("attrib.rs");
    let prog = dir.path().join("attrib");
    std::fs::write(&src, PROGRAM).unwrap();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    common::run_ok(
        Command::new(rustc)
            .args([
                "--edition=2021",
                "-C",
                "opt-level=2",
                "-C",
                // What the workspace's release profile gives (`debug = 1`): enough
                // DWARF for inlined frames.
                "debuginfo=1",
                "-o",
            ])
            .arg(&prog)
            .arg(&src),
    );
    // The executable text segment, as valgrind maps it.
    let bytes = std::fs::read(&prog).unwrap();
    let elf = object::File::parse(&*bytes).unwrap();
    assert_eq!(
        elf.kind(),
        object::ObjectKind::Dynamic,
        "rustc builds a PIE by default"
    );
    let text = elf
        .segments()
        .find(|s| s.flags() == object::SegmentFlags::Elf { p_flags: 5 })
        .expect("an R+X segment");

    let mut sim = Simulator::new(Config::preset("xeon-e5-2660").unwrap()).unwrap();
    sim.add_object(
        text.address() + VALGRIND_PIE_BASE,
        text.size(),
        VALGRIND_PIE_BASE as i64,
        &prog,
    );
    let log = common::lackey(dir.path(), &prog);
    common::lackey_records(&log, |r| sim.feed(r));
    let rep = sim.report();
    print!("{}", rep.to_text());
    for (f, c) in sim
        .resolved_functions()
        .iter()
        .filter(|(_, c)| c != "other")
    {
        println!("{c:>8}  {f}");
    }

    let comp = |name: &str| {
        rep.by_component
            .iter()
            .find(|b| b.component.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no component {name} in {:?}", rep.by_component))
            .clone()
    };
    let l1d = |b: &cachesim::report::Breakdown| b.levels[1].misses.d;
    let (bt, lk, other) = (comp("btree"), comp("lock"), comp("other"));
    // 65536 from btree::work plus 16384 from btree code inlined into session::get.
    assert!(
        (78_000..88_000).contains(&l1d(&bt)),
        "btree L1-D misses {}",
        l1d(&bt)
    );
    assert!(
        (3_800..4_600).contains(&l1d(&lk)),
        "lock L1-D misses {}",
        l1d(&lk)
    );
    // btree runs 16x as many loop iterations as lock (the two loops compile differently,
    // so only a loose ratio is asserted).
    assert!(bt.instructions > 4 * lk.instructions && lk.instructions > 5_000);
    // Per function: the inlined B-tree code is reported under its own name.
    let func = |name: &str| {
        rep.top_functions
            .iter()
            .find(|f| f.function == name)
            .unwrap_or_else(|| panic!("{name} not in the top functions"))
            .clone()
    };
    let (work, inlined) = (
        func("attrib::btree::work"),
        func("attrib::btree::probe_inlined"),
    );
    assert_eq!(
        (work.component.as_str(), inlined.component.as_str()),
        ("btree", "btree")
    );
    assert!((60_000..70_000).contains(&work.misses[1].1.d), "{work:?}");
    assert!(
        (15_000..18_000).contains(&inlined.misses[1].1.d),
        "{inlined:?}"
    );
    // Program start-up (ld.so, std's runtime, the vec fills) is charged to `other`.
    assert!(other.instructions > 0);
    // Everything outside an operation: one operation row, `none`.
    assert_eq!(rep.by_operation.len(), 1);
    assert_eq!(rep.by_operation[0].operation.as_deref(), Some("none"));
    assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);
}
