//! Thread roles (workers measured, background threads apart and on their own core),
//! caller attribution, automatic warm-up and the stop after the measured transactions,
//! on hand-made record sequences.

use cachesim::trace::{marker, Reader, Record, Writer};
use cachesim::{Config, Report, Simulator};

fn config() -> Config {
    let mut c = Config::preset("xeon-e5-2660").unwrap();
    c.set_level("l1i", "1K:2:64:4").unwrap();
    c.set_level("l1d", "1K:2:64:4").unwrap();
    c.set_level("l2", "4K:4:64:8").unwrap();
    c.set_level("llc", "64K:8:64:20").unwrap();
    c.last_level_inclusive = false;
    c
}

fn loads(base: u64, n: u64) -> Vec<Record> {
    (0..n)
        .map(|i| Record::Load {
            addr: base + i * 64,
            size: 8,
        })
        .collect()
}

fn role(r: probe::Role) -> Record {
    Record::Marker {
        code: marker::THREAD_ROLE,
        arg: r as u32,
    }
}

fn ifetch(addr: u64) -> Record {
    Record::IFetch {
        addr,
        ninstr: 4,
        len: 16,
    }
}

fn run(cfg: Config, recs: &[Record]) -> Report {
    let mut sim = Simulator::new(cfg).unwrap();
    recs.iter().for_each(|r| sim.feed(r));
    sim.report()
}

fn level(r: &Report, name: &str) -> (u64, u64) {
    let l = r.levels.iter().find(|l| l.name == name).unwrap();
    (l.accesses.total, l.misses.total)
}

/// A worker touches 8 lines (they fit its 1 KB L1-D), a page cleaner then streams 64
/// lines, and the worker touches its 8 lines again.
fn worker_and_cleaner() -> Vec<Record> {
    let mut v = vec![
        Record::Thread { tid: 1 },
        role(probe::Role::Worker),
        ifetch(0x1000),
    ];
    v.extend(loads(0x10_0000, 8));
    v.extend([
        Record::Thread { tid: 2 },
        role(probe::Role::PageCleaner),
        ifetch(0x2000),
    ]);
    v.extend(loads(0x20_0000, 64));
    v.extend([Record::Thread { tid: 1 }, ifetch(0x1000)]);
    v.extend(loads(0x10_0000, 8));
    v
}

#[test]
fn background_threads_are_counted_apart_on_a_core_of_their_own() {
    let r = run(config(), &worker_and_cleaner());
    // The workers' levels: 16 loads, the first 8 miss, the second 8 hit (the cleaner's
    // stream went through its own L1).
    assert_eq!(level(&r, "L1-D"), (16, 8));
    assert_eq!(r.instructions, 8, "only the worker's instructions");
    assert_eq!(r.threads[0].role, "workers");
    assert_eq!((r.threads[0].threads, r.threads[0].instructions), (1, 8));
    let bg = &r.threads[1];
    assert_eq!(
        (bg.role.as_str(), bg.threads, bg.instructions),
        ("page cleaner", 1, 4)
    );
    let l1d = bg.misses.iter().find(|(n, _)| n == "L1-D").unwrap().1;
    assert_eq!(l1d.d, 64);
    // Every breakdown still sums to the workers' totals.
    let sum: u64 = r.by_component.iter().map(|b| b.stall_cycles).sum();
    assert_eq!(sum, r.total_stall_cycles);
    assert!(r.to_text().contains("page cleaner"));
}

#[test]
fn sharing_the_core_lets_the_cleaner_evict_the_workers_lines() {
    let mut cfg = config();
    cfg.background_own_core = false;
    let r = run(cfg, &worker_and_cleaner());
    // Same attribution, but the cleaner's 64 lines evicted the worker's 8 from the
    // shared 1 KB L1-D: the second pass misses again.
    assert_eq!(level(&r, "L1-D"), (16, 16));
    assert_eq!(r.threads[1].instructions, 4);
}

#[test]
fn the_last_level_is_shared_with_background_threads() {
    // The cleaner loads the worker's lines into the shared LLC: the worker then misses
    // its own L1 and L2 but hits the LLC.
    let mut v = vec![
        Record::Thread { tid: 2 },
        role(probe::Role::PageCleaner),
        ifetch(0x2000),
    ];
    v.extend(loads(0x10_0000, 8));
    v.extend([
        Record::Thread { tid: 1 },
        role(probe::Role::Worker),
        ifetch(0x1000),
    ]);
    v.extend(loads(0x10_0000, 8));
    let r = run(config(), &v);
    assert_eq!(level(&r, "L1-D").1, 8);
    assert_eq!(
        level(&r, "LLC"),
        (9, 1),
        "8 hits and the worker's own code line"
    );
}

#[test]
fn threads_without_a_role_count_as_workers() {
    let mut v = vec![Record::Thread { tid: 7 }, ifetch(0x1000)];
    v.extend(loads(0x10_0000, 4));
    let r = run(config(), &v);
    assert_eq!(r.instructions, 4);
    assert_eq!(level(&r, "L1-D"), (4, 4));
    assert_eq!(r.threads.len(), 1);
}

#[test]
fn the_auto_warm_up_stops_when_window_rates_settle() {
    assert!(cachesim::sim::steady(10.0, 9.9));
    assert!(
        !cachesim::sim::steady(10.0, 9.0),
        "a 10% fall is still warming"
    );
    assert!(cachesim::sim::steady(10.0, 10.9), "a 9% rise is noise");
    assert!(!cachesim::sim::steady(10.0, 11.5));
    assert!(
        cachesim::sim::steady(0.04, 0.0),
        "tiny absolute changes are steady"
    );
    // Transactions of 4 instructions and one load each over a working set of 4 lines:
    // after the first window everything hits, so two windows of equal rates end it.
    let mut cfg = config();
    cfg.warmup_auto = true;
    cfg.warmup_txns = 100_000;
    let mut v = Vec::new();
    for t in 0..1000u64 {
        v.push(ifetch(0x1000));
        v.push(Record::Load {
            addr: 0x10_0000 + (t % 4) * 64,
            size: 8,
        });
        v.push(Record::Marker {
            code: marker::TXN_END,
            arg: 0,
        });
    }
    let r = run(cfg.clone(), &v);
    let w = r.warmup.as_ref().unwrap();
    assert_eq!(w.mode, "auto");
    // Windows of 100 and 200 transactions: the second one has no miss, nor the third.
    assert_eq!(w.txns, 700, "{w:?}");
    assert!(w
        .decided
        .as_deref()
        .unwrap()
        .starts_with("auto: 700 transactions"));
    assert_eq!(r.transactions, 300);
    assert_eq!(level(&r, "L1-D").1, 0);
    // A cap below that ends warm-up at the cap, and says so.
    cfg.warmup_txns = 250;
    let r = run(cfg, &v);
    let w = r.warmup.unwrap();
    assert_eq!(w.txns, 250);
    assert!(w.decided.unwrap().contains("cap of 250"));
}

#[test]
fn the_simulation_stops_after_the_measured_transactions() {
    let mut cfg = config();
    cfg.warmup_txns = 2;
    cfg.measure_txns = Some(3);
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf).unwrap();
    w.write(&Record::Thread { tid: 1 }).unwrap();
    for _ in 0..10 {
        w.write(&ifetch(0x1000)).unwrap();
        w.write(&Record::Marker {
            code: marker::TXN_END,
            arg: 0,
        })
        .unwrap();
    }
    // No END record: a stream read to its end would be an error.
    let mut sim = Simulator::new(cfg).unwrap();
    sim.run(Reader::new(&buf[..]).unwrap()).unwrap();
    assert!(sim.stopped_early());
    let r = sim.report();
    assert_eq!((r.transactions, r.instructions), (3, 12));
}

/// `n` transactions of one thread: each runs 40 code lines (more than the 1 KB L1-I)
/// and loads 24 data lines of its own slice of a table (`extra(i)` more lines in
/// transaction i), so every level misses at a steady rate unless `extra` grows.
fn oltp_like(n: u64, extra: impl Fn(u64) -> u64) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf).unwrap();
    w.write(&Record::Thread { tid: 1 }).unwrap();
    for i in 0..n {
        for l in 0..40 {
            w.write(&ifetch(0x10_0000 + l * 64)).unwrap();
        }
        for r in loads(0x4000_0000 + (i % 512) * 24 * 64, 24 + extra(i)) {
            w.write(&r).unwrap();
        }
        w.write(&Record::Marker {
            code: marker::TXN_END,
            arg: 0,
        })
        .unwrap();
    }
    buf
}

fn settling(cap: u64) -> Config {
    let mut c = config();
    c.warmup_txns = 600;
    c.measure_txns = Some(cap);
    c.settle = Some(cachesim::settle::Rule::new(0.02).unwrap());
    c.set_sweep("llc=16K,32K").unwrap();
    c
}

/// A steady stream stops at the first batch end past the minimum (10 batches of 100);
/// every table (levels, sweep points) covers the same 1,000 transactions, and the
/// report's intervals are those tables' rates.
#[test]
fn until_settled_stops_a_steady_stream_after_the_minimum() {
    let buf = oltp_like(4000, |_| 0);
    let mut sim = Simulator::new(settling(3000)).unwrap();
    sim.run(Reader::new(&buf[..]).unwrap()).unwrap();
    assert!(sim.stopped_early());
    let r = sim.report();
    let s = r.settle.as_ref().expect("a settle report");
    assert_eq!(s.stopped, "settled");
    assert_eq!((r.transactions, s.transactions), (1000, 1000));
    assert_eq!(s.batches.len(), 10);
    assert!(s.intervals.iter().all(|i| i.settled), "{:?}", s.intervals);
    let iv = |n: &str| s.intervals.iter().find(|i| i.name == n).unwrap().value;
    assert_eq!(iv("instructions/txn"), r.instructions_per_txn.unwrap());
    for l in &r.levels {
        let want = iv(&format!("{} MPKI", l.name));
        assert!(
            (want - l.mpki.total).abs() < 1e-9,
            "{}: {want} vs {}",
            l.name,
            l.mpki.total
        );
    }
    let p16 = r
        .sweep
        .iter()
        .find(|p| p.config.size_bytes == 16 << 10)
        .unwrap();
    assert!((iv("LLC 16K MPKI") - p16.mpki.total).abs() < 1e-9);
    assert!(p16.misses.total > 0);
    let text = r.to_text();
    assert!(text.contains("until settled (±2%): stopped settled, 1,000 transactions measured in 10 batches of 100"), "{text}");
}

/// A stream whose data footprint keeps growing never settles: the cap ends it, and
/// the report says so; a trace shorter than the cap ends by itself.
#[test]
fn until_settled_stops_at_the_cap_or_the_trace_end_otherwise() {
    let buf = oltp_like(4000, |i| i.saturating_sub(600) / 40);
    let mut sim = Simulator::new(settling(2500)).unwrap();
    sim.run(Reader::new(&buf[..]).unwrap()).unwrap();
    assert!(sim.stopped_early());
    let r = sim.report();
    let s = r.settle.as_ref().unwrap();
    assert_eq!((s.stopped.as_str(), r.transactions), ("cap", 2500));
    assert_eq!(s.batches.len(), 25);
    let d = s.intervals.iter().find(|i| i.name == "L1-D MPKI").unwrap();
    assert!(!d.settled, "{d:?}");
    assert!(r
        .to_text()
        .contains("stopped at the cap of 2,500 transactions"));

    let buf = oltp_like(1200, |i| i.saturating_sub(600) / 40);
    let mut sim = Simulator::new(settling(2500)).unwrap();
    // Without an END record the reader reports the cut stream; the statistics stay.
    let _ = sim.run(Reader::new(&buf[..]).unwrap());
    assert!(!sim.stopped_early());
    let r = sim.report();
    let s = r.settle.as_ref().unwrap();
    assert_eq!((s.stopped.as_str(), r.transactions), ("trace ended", 600));
}
