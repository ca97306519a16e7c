//! Simulator behaviour on hand-made record sequences: attribution to operations across
//! threads and nesting, warm-up, inclusive back-invalidation, the L1-I sweep, and whole
//! streams through the reader.

use cachesim::report::Breakdown;
use cachesim::trace::{marker, Reader, Record, Writer};
use cachesim::{Config, Report, Simulator};

fn small_config() -> Config {
    let mut c = Config::preset("xeon-e5-2660").unwrap();
    c.set_level("l1i", "1K:2:64:4").unwrap();
    c.set_level("l1d", "1K:2:64:4").unwrap();
    c.set_level("l2", "none").unwrap();
    c.set_level("llc", "64K:8:64:20").unwrap();
    c.last_level_inclusive = false;
    c
}

fn op(code: u8, o: probe::Op) -> Record {
    Record::Marker {
        code,
        arg: o as u32,
    }
}

/// `n` loads of distinct lines starting at `base` (all L1-D misses).
fn misses(base: u64, n: u64) -> Vec<Record> {
    (0..n)
        .map(|i| Record::Load {
            addr: base + i * 64,
            size: 8,
        })
        .collect()
}

fn row<'a>(rows: &'a [Breakdown], name: &str) -> &'a Breakdown {
    rows.iter()
        .find(|b| b.operation.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no row {name}"))
}

fn l1d_misses(b: &Breakdown) -> u64 {
    b.levels
        .iter()
        .find(|l| l.level == "L1-D")
        .unwrap()
        .misses
        .d
}

fn simulate(cfg: Config, recs: &[Record]) -> Report {
    let mut sim = Simulator::new(cfg).unwrap();
    recs.iter().for_each(|r| sim.feed(r));
    sim.report()
}

#[test]
fn misses_go_to_the_innermost_operation_of_their_thread() {
    use probe::Op::*;
    let mut recs = vec![
        Record::Thread { tid: 1 },
        Record::IFetch {
            addr: 0x1000,
            ninstr: 2,
            len: 8,
        },
    ];
    recs.extend(misses(0x10_0000, 3)); // none
    recs.push(op(marker::OP_BEGIN, IndexProbe));
    recs.extend(misses(0x20_0000, 5)); // index_probe
    recs.push(Record::Thread { tid: 2 });
    recs.extend(misses(0x30_0000, 7)); // thread 2 has no op: none
    recs.push(op(marker::OP_BEGIN, Scan));
    recs.push(Record::Thread { tid: 1 });
    recs.extend(misses(0x40_0000, 11)); // thread 1 still in index_probe
    recs.push(op(marker::OP_BEGIN, Update));
    recs.extend(misses(0x50_0000, 13)); // nested: update
    recs.push(op(marker::OP_END, Update));
    recs.extend(misses(0x60_0000, 17)); // back to index_probe
    recs.push(Record::Thread { tid: 2 });
    recs.extend(misses(0x70_0000, 19)); // scan
    recs.push(op(marker::OP_END, Scan));
    recs.push(Record::Thread { tid: 1 });
    recs.push(op(marker::OP_END, IndexProbe));
    recs.extend(misses(0x80_0000, 23)); // none
    let rep = simulate(small_config(), &recs);
    let ops = &rep.by_operation;
    assert_eq!(l1d_misses(row(ops, "none")), 3 + 7 + 23);
    assert_eq!(l1d_misses(row(ops, "index_probe")), 5 + 11 + 17);
    assert_eq!(l1d_misses(row(ops, "update")), 13);
    assert_eq!(l1d_misses(row(ops, "scan")), 19);
    assert_eq!(ops.len(), 4);
    // Stall cycles: each L1-D miss costs the LLC latency, each LLC miss memory latency.
    let total: u64 = ops.iter().map(|b| b.stall_cycles).sum();
    assert_eq!(total, rep.total_stall_cycles);
    assert_eq!(rep.levels[1].stall_cycles.d, 98 * 20);
    assert_eq!(rep.levels[2].stall_cycles.d, 98 * 167);
    assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);
}

#[test]
fn unmatched_op_end_is_a_warning_not_a_failure() {
    let rep = simulate(small_config(), &[op(marker::OP_END, probe::Op::Delete)]);
    assert!(
        rep.warnings
            .iter()
            .any(|w| w.contains("1 OP_END markers without")),
        "{:?}",
        rep.warnings
    );
}

#[test]
fn warm_up_resets_statistics_but_keeps_cache_contents() {
    let mut cfg = small_config();
    cfg.warmup_txns = 2;
    let mut recs = Vec::new();
    for t in 0..5u64 {
        recs.push(Record::Marker {
            code: marker::TXN_BEGIN,
            arg: 1,
        });
        recs.push(Record::IFetch {
            addr: 0x1000,
            ninstr: 10,
            len: 40,
        });
        // The same 4 lines every transaction: only the first transaction misses.
        recs.extend(misses(0x10_0000, 4));
        recs.push(Record::Marker {
            code: marker::TXN_END,
            arg: 1,
        });
        let _ = t;
    }
    let rep = simulate(cfg.clone(), &recs);
    assert!(rep.warmup_completed);
    assert_eq!(rep.transactions, 3);
    assert_eq!(rep.instructions, 30);
    assert_eq!(rep.instructions_per_txn, Some(10.0));
    assert_eq!(rep.levels[1].accesses.d, 12);
    assert_eq!(
        rep.levels[1].misses.d, 0,
        "caches stay warm across the reset"
    );

    let rep = simulate(cfg, &recs[..8]);
    assert!(!rep.warmup_completed);
    assert!(rep
        .warnings
        .iter()
        .any(|w| w.contains("warm-up not completed")));
    assert_eq!(rep.levels[1].misses.d, 4);
}

#[test]
fn aborted_attempts_count_as_transactions_but_not_as_commits() {
    let mut cfg = small_config();
    cfg.warmup_txns = 1;
    // Attempts 0..6: the warm-up one, then aborted (odd) and committed (even) ones.
    let mut recs = Vec::new();
    for t in 0..6u32 {
        recs.push(Record::IFetch {
            addr: 0x1000,
            ninstr: 10,
            len: 40,
        });
        let aborted = if t % 2 == 1 { probe::TXN_ABORTED } else { 0 };
        recs.push(Record::Marker {
            code: marker::TXN_END,
            arg: 2 | aborted,
        });
    }
    let rep = simulate(cfg, &recs);
    assert_eq!(rep.transactions, 5);
    // Attempts 2 and 4 after the warm-up one committed; 1, 3 and 5 aborted.
    assert_eq!(rep.committed_transactions, Some(2));
    assert!(rep.to_text().contains("transactions 5 (2 committed)"));
}

#[test]
fn inclusive_last_level_back_invalidates_the_l1() {
    // L1-D 4 ways, LLC 2 ways, one set each: the LLC evicts line A while the L1 still
    // holds it; with inclusion A is dropped from the L1 and the next access misses there.
    let mk = |inclusive: bool| {
        let mut c = small_config();
        c.set_level("l1d", "256:4:64").unwrap();
        c.set_level("llc", "128:2:64").unwrap();
        c.last_level_inclusive = inclusive;
        c
    };
    let recs: Vec<Record> = [0u64, 64, 128, 0]
        .iter()
        .map(|&a| Record::Load { addr: a, size: 8 })
        .collect();
    let incl = simulate(mk(true), &recs);
    let non = simulate(mk(false), &recs);
    assert_eq!(non.levels[1].misses.d, 3);
    assert_eq!(incl.levels[1].misses.d, 4);
    // The inclusion victim was still in the L1's fully-associative shadow: "conflict".
    assert_eq!(incl.levels[1].three_c.unwrap().conflict.d, 1);
}

#[test]
fn l1i_sweep_sees_the_footprint_knee() {
    // A 48 KB loop of code run 5 times: 32 KB L1-Is miss every line every time
    // (capacity), 64 KB ones only on first touch.
    let mut cfg = small_config();
    cfg.set_level("l1i", "32K:8:64").unwrap();
    cfg.set_sweep("l1i=16K,32K,64K,64K:full:64").unwrap();
    let lines = 48 * 1024 / 64;
    let mut recs = Vec::new();
    for _ in 0..5 {
        for l in 0..lines {
            recs.push(Record::IFetch {
                addr: 0x40_0000 + l * 64,
                ninstr: 8,
                len: 32,
            });
            recs.push(Record::IFetch {
                addr: 0x40_0000 + l * 64 + 32,
                ninstr: 8,
                len: 32,
            });
        }
    }
    let rep = simulate(cfg, &recs);
    let s = &rep.sweep;
    assert_eq!(s.len(), 4);
    assert_eq!(s[0].misses.i, 5 * lines);
    assert_eq!(s[1].misses.i, 5 * lines);
    assert_eq!(s[1].three_c.unwrap().capacity.i, 4 * lines);
    assert_eq!(s[2].misses.i, lines);
    assert_eq!(s[3].misses.i, lines);
    assert_eq!(s[2].accesses.i, 10 * lines);
    // The sweep's 32K point is the configured L1-I.
    assert_eq!(rep.levels[0].misses.i, s[1].misses.i);
    assert!((s[1].mpki.i - 1000.0 / 16.0).abs() < 1e-9);
    assert_eq!(s[1].stall_cycles, 5 * lines * 20);
    // Stall shares: no data accesses, so the stall cycles are the L1-I's (20 cycles,
    // the LLC's latency, per miss) and the LLC's (167 per miss: its misses are the 48 KB
    // touched once). The configured 32K L1-I: 5 misses per line against 1.
    let lines_stall = |l1i_misses_per_line: u64| (l1i_misses_per_line * 20) as f64;
    assert_eq!(rep.total_stall_cycles, lines * (5 * 20 + 167));
    let share = |k: u64| lines_stall(k) / (lines_stall(k) + 167.0);
    for (p, k) in s.iter().zip([5, 5, 1, 1]) {
        let got = p.stall_share.unwrap();
        assert!((got - share(k)).abs() < 1e-12, "{}: {got}", p.config.spec());
    }
    // 100 / 267 at 32K (the configured L1-I's own share), 20 / 187 at 64K.
    assert!((s[1].stall_share.unwrap() - 100.0 / 267.0).abs() < 1e-12);
    assert!((s[2].stall_share.unwrap() - 20.0 / 187.0).abs() < 1e-12);
    let text = rep.to_text();
    assert!(
        text.contains("cache size sweep") && text.contains("L1-I 64K 1024-way 64B"),
        "{text}"
    );
    // The shares in the sweep table (37.5% = 100/267, 10.7% = 20/187) and the levels'.
    let sweep_row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(sweep_row("L1-I 32K 8-way 64B")[8], "37.5", "{text}");
    assert_eq!(sweep_row("L1-I 64K 1024-way 64B")[8], "10.7", "{text}");
    let json: Report = serde_json::from_str(&rep.to_json()).unwrap();
    assert!((json.sweep[2].stall_share.unwrap() - 20.0 / 187.0).abs() < 1e-12);
}

#[test]
fn a_swapped_stall_share_replaces_one_level_s_stall_cycles() {
    use cachesim::report::swapped_stall_share;
    // 1000 stall cycles of which the configured level's 400: a swept cache stalling
    // 100 leaves 600 elsewhere, so 100 / 700.
    assert_eq!(swapped_stall_share(1000, 400, 100), Some(100.0 / 700.0));
    assert_eq!(swapped_stall_share(1000, 400, 400), Some(0.4));
    assert_eq!(swapped_stall_share(1000, 1000, 0), None);
    assert_eq!(swapped_stall_share(0, 0, 0), None);
}

#[test]
fn a_lean_preset_says_so_in_the_report_header() {
    let cfg = Config::preset("xeon-e5-2660-lean16k").unwrap();
    assert_eq!(cfg.l1i.spec(), "16K:8:64:4");
    let text = simulate(cfg.clone(), &misses(0x1000, 4)).to_text();
    let first: Vec<&str> = text.lines().take(2).collect();
    assert!(
        first[0].contains("preset xeon-e5-2660-lean16k")
            && first[1].contains("lean preset")
            && first[1].contains("(3:1)"),
        "{text}"
    );
    // Once --l1i replaced the L1-I, the ratio no longer holds: no note.
    let mut other = cfg;
    other.set_level("l1i", "32K:8:64").unwrap();
    let text = simulate(other, &misses(0x1000, 4)).to_text();
    assert!(!text.contains("lean preset"), "{text}");
}

#[test]
fn llc_sweep_is_fed_the_misses_of_the_level_above() {
    // A 3 MB data working set walked 4 times: a 2 MB LLC misses every line every walk, a
    // 4 MB one only on first touch; the configured 64 KB LLC matches the 64K point.
    let mut cfg = small_config();
    cfg.set_level("l2", "16K:4:64:10").unwrap();
    cfg.set_sweep("llc=64K,2M,4M").unwrap();
    let lines = 3 * 1024 * 1024 / 64;
    let recs: Vec<Record> = (0..4).flat_map(|_| misses(0x100_0000, lines)).collect();
    let rep = simulate(cfg, &recs);
    let s = &rep.sweep;
    assert_eq!(
        s.iter().map(|p| p.level.as_str()).collect::<Vec<_>>(),
        ["LLC"; 3]
    );
    assert_eq!(s[0].misses.d, rep.levels[3].misses.d);
    assert_eq!(s[0].accesses.d, rep.levels[3].accesses.d);
    assert_eq!(s[1].misses.d, 4 * lines);
    assert_eq!(s[2].misses.d, lines);
    assert_eq!(s[2].three_c.unwrap().compulsory.d, lines);
    assert_eq!(s[2].stall_cycles, lines * 167);
}

#[test]
fn streams_run_through_the_reader() {
    let mut w = Writer::new(Vec::new()).unwrap();
    let recs = [
        Record::Thread { tid: 1 },
        Record::Map {
            avma: 0x1000,
            size: 0x1000,
            bias: 0,
            path: "/nonexistent/lib.so".into(),
        },
        Record::Marker {
            code: marker::TRACE_START,
            arg: 0,
        },
        Record::IFetch {
            addr: 0x1010,
            ninstr: 3,
            len: 12,
        },
        Record::Modify {
            addr: 0x9000,
            size: 8,
        },
        Record::End {
            total_instructions: 4,
        },
    ];
    recs.iter().for_each(|r| w.write(r).unwrap());
    let bytes = w.into_inner();

    let mut sim = Simulator::new(small_config()).unwrap();
    sim.run(Reader::new(&bytes[..]).unwrap()).unwrap();
    let rep = sim.report();
    assert_eq!(rep.instructions, 3);
    assert_eq!(rep.levels[1].accesses.d, 1);
    assert_eq!(rep.tracer_instructions, Some(4));
    assert!(
        rep.warnings
            .iter()
            .any(|w| w.contains("/nonexistent/lib.so")),
        "{:?}",
        rep.warnings
    );
    assert!(
        rep.warnings.iter().any(|w| w.contains("tracer counted 4")),
        "{:?}",
        rep.warnings
    );
    let json = rep.to_json();
    let back: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back, rep);

    // A stream cut short: an error, and the statistics so far are still there.
    let mut sim = Simulator::new(small_config()).unwrap();
    let err = sim
        .run(Reader::new(&bytes[..bytes.len() - 16]).unwrap())
        .unwrap_err();
    assert!(
        format!("{err:?}").contains("without an END record"),
        "{err:?}"
    );
    assert_eq!(sim.report().instructions, 3);
}

#[test]
fn bad_configuration_is_an_error_from_new() {
    let mut c = small_config();
    c.l1d.size_bytes = 3000;
    let e = Simulator::new(c).err().unwrap();
    assert!(e.contains("L1-D"), "{e}");
}

#[test]
fn odd_hand_made_records_do_not_panic() {
    let recs = [
        Record::Map {
            avma: u64::MAX - 8,
            size: 64,
            bias: i64::MIN,
            path: "/dev/null".into(),
        },
        Record::Map {
            avma: u64::MAX - 4,
            size: u64::MAX,
            bias: 3,
            path: "/".into(),
        },
        Record::IFetch {
            addr: 0,
            ninstr: 0,
            len: 0,
        },
        Record::IFetch {
            addr: u64::MAX - 4,
            ninstr: 1,
            len: 1,
        },
        Record::Load { addr: 0, size: 0 },
        Record::Marker {
            code: 200,
            arg: u32::MAX,
        },
        Record::Marker {
            code: marker::OP_BEGIN,
            arg: 77,
        },
    ];
    let rep = simulate(small_config(), &recs);
    assert!(
        rep.warnings
            .iter()
            .any(|w| w.contains("unknown MARKER code 200")),
        "{:?}",
        rep.warnings
    );
    // The unknown op code opened an operation named `unknown`; nothing ran inside it.
    assert_eq!(rep.instructions, 1);
}

#[test]
fn simulator_and_report_can_move_between_threads() {
    fn send<T: Send>(_: &T) {}
    let sim = Simulator::new(small_config()).unwrap();
    send(&sim);
    let rep = std::thread::spawn(move || sim.report()).join().unwrap();
    send(&rep);
}

/// Every table of the report sums to the run's totals (instructions, misses per level,
/// stall cycles), the warm-up's counts left out of each: by operation, by component, by
/// (operation, component) and the functions table (here one function, so it is whole).
#[test]
fn every_breakdown_sums_to_its_total() {
    let mut cfg = small_config();
    cfg.warmup_txns = 2;
    let mut recs = Vec::new();
    for t in 0..6u64 {
        recs.push(Record::Marker {
            code: marker::TXN_BEGIN,
            arg: 1,
        });
        recs.push(op(marker::OP_BEGIN, probe::Op::IndexProbe));
        recs.push(Record::IFetch {
            addr: 0x1000,
            ninstr: 10,
            len: 40,
        });
        // Fresh lines each transaction: misses in warm-up and in the measurement.
        recs.extend(misses(0x10_0000 + t * 0x1_0000, 5));
        recs.push(op(marker::OP_END, probe::Op::IndexProbe));
        recs.push(Record::IFetch {
            addr: 0x2000 + t * 0x1000,
            ninstr: 3,
            len: 12,
        });
        recs.extend(misses(0x80_0000 + t * 0x1_0000, 2));
        recs.push(Record::Marker {
            code: marker::TXN_END,
            arg: 1,
        });
    }
    let rep = simulate(cfg, &recs);
    assert!(rep.warmup_completed);
    assert_eq!(rep.instructions, 4 * 13);
    let total_misses: Vec<u64> = rep.levels.iter().map(|l| l.misses.i + l.misses.d).collect();
    let sums = |rows: &[Breakdown]| -> (u64, Vec<u64>, u64) {
        let mut m = vec![0; rep.levels.len()];
        for b in rows {
            for l in &b.levels {
                let i = rep.levels.iter().position(|x| x.name == l.level).unwrap();
                m[i] += l.misses.i + l.misses.d;
            }
        }
        (
            rows.iter().map(|b| b.instructions).sum(),
            m,
            rows.iter().map(|b| b.stall_cycles).sum(),
        )
    };
    let want = (
        rep.instructions,
        total_misses.clone(),
        rep.total_stall_cycles,
    );
    assert_eq!(sums(&rep.by_operation), want, "by operation");
    assert_eq!(sums(&rep.by_component), want, "by component");
    assert_eq!(
        sums(&rep.by_operation_component),
        want,
        "by (operation, component)"
    );
    assert_eq!(rep.top_functions.len(), 1, "{:?}", rep.top_functions);
    let f = &rep.top_functions[0];
    assert_eq!(f.instructions, rep.instructions, "functions: instructions");
    let fm: Vec<u64> = rep
        .levels
        .iter()
        .map(|l| {
            f.misses
                .iter()
                .find(|(n, _)| *n == l.name)
                .map_or(0, |(_, s)| s.i + s.d)
        })
        .collect();
    assert_eq!(fm, total_misses, "functions: misses");
    assert_eq!(
        f.stall_cycles, rep.total_stall_cycles,
        "functions: stall cycles"
    );
}

/// The per-type table: each thread's misses go to the type of the transaction it has
/// in progress (TXN_BEGIN's argument), code between transactions to no type; names
/// come from the caller.
#[test]
fn misses_go_to_the_transaction_type_of_their_thread() {
    let marker = |code, arg| Record::Marker { code, arg };
    let mut recs = vec![Record::Thread { tid: 1 }];
    recs.extend(misses(0x10_0000, 3)); // no transaction
    recs.push(marker(marker::TXN_BEGIN, 4));
    recs.extend(misses(0x20_0000, 5)); // type 4
    recs.push(Record::Thread { tid: 2 });
    recs.push(marker(marker::TXN_BEGIN, 0));
    recs.extend(misses(0x30_0000, 7)); // type 0
    recs.push(Record::Thread { tid: 1 });
    recs.extend(misses(0x40_0000, 11)); // thread 1 still in type 4
    recs.push(marker(marker::TXN_END, 4));
    recs.extend(misses(0x50_0000, 13)); // no transaction
    recs.push(Record::Thread { tid: 2 });
    recs.push(marker(marker::TXN_END, probe::TXN_ABORTED));
    let mut r = simulate(small_config(), &recs);
    r.name_types(&[
        "Q1".to_string(),
        "Q2".into(),
        "Q3".into(),
        "Q4".into(),
        "Q5".into(),
    ]);
    let l1d = |t: Option<u32>| {
        let row = r
            .by_txn_type
            .iter()
            .find(|x| x.txn_type == t)
            .unwrap_or_else(|| panic!("no row {t:?}: {:?}", r.by_txn_type));
        let m = row.misses.iter().find(|(l, _)| l == "L1-D").unwrap().1.d;
        (m, row.transactions, row.name.clone())
    };
    assert_eq!(l1d(None), (16, 0, None));
    assert_eq!(l1d(Some(4)), (16, 1, Some("Q5".into())));
    assert_eq!(l1d(Some(0)), (7, 1, Some("Q1".into())));
    assert_eq!(r.by_txn_type.len(), 3);
    assert!(r.to_text().contains("by transaction type"));
}
