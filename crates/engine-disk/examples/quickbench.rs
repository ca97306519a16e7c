//! Rough single-thread sanity check of the hot paths (not a benchmark of record):
//! `cargo run --release -p engine_disk --example quickbench [rows] [ops] [1 = disk only]`
//! or `... quickbench tpcb THREADS SECS [off|async|sync]`.
use api::{Engine, EngineOptions, IndexKind, Key, LogMode, Schema, Session, TableDef, TableId};
use std::sync::Arc;
use std::time::Instant;

fn key(i: u64) -> Key {
    let mut k = Key::new();
    k.push_u64(i);
    k
}

fn run<E: Engine>(rows: u64, ops: u64) {
    let mut s = Schema::new();
    s.add(TableDef::new("t", 100, IndexKind::BTree, rows));
    let e = E::open(
        Arc::new(s),
        &EngineOptions {
            log: LogMode::Off,
            ..Default::default()
        },
    )
    .unwrap();
    let mut w = Session::new(e.worker(0));
    let t = TableId(0);
    for c in 0..rows / 1000 {
        w.run(0, |w| {
            for i in c * 1000..(c + 1) * 1000 {
                w.insert(t, &key(i), &[1u8; 100])?;
            }
            Ok(())
        })
        .unwrap();
    }
    let mut x = 1u64;
    let t0 = Instant::now();
    let mut sum = 0u64;
    for _ in 0..ops {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = key((x >> 33) % rows);
        w.run(0, |w| w.get(t, &k, |r| sum += r[0] as u64)).unwrap();
    }
    let get_ns = t0.elapsed().as_nanos() as f64 / ops as f64;
    let t0 = Instant::now();
    for _ in 0..ops {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = key((x >> 33) % rows);
        w.run(0, |w| w.update(t, &k, |r| r[5] = r[5].wrapping_add(1)))
            .unwrap();
    }
    let upd_ns = t0.elapsed().as_nanos() as f64 / ops as f64;
    println!(
        "{}: get txn {get_ns:.0} ns, update txn {upd_ns:.0} ns ({sum})",
        E::NAME
    );
    drop(w);
    e.shutdown().unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("tpcb") {
        let threads = args.get(1).map_or(2, |s| s.parse().unwrap());
        let secs = args.get(2).map_or(3, |s| s.parse().unwrap());
        let log = match args.get(3).map(String::as_str) {
            Some("sync") => LogMode::Sync,
            Some("async") => LogMode::Async,
            _ => LogMode::Off,
        };
        return tpcb(threads, secs, log);
    }
    let a: Vec<u64> = args.iter().map(|s| s.parse().unwrap()).collect();
    let rows = a.first().copied().unwrap_or(100_000);
    let ops = a.get(1).copied().unwrap_or(300_000);
    if a.get(2) != Some(&1) {
        run::<engine_serial::SerialEngine>(rows, ops);
    }
    run::<engine_disk::DiskEngine>(rows, ops);
}

/// A TPC-B-like mix on `threads` threads for `secs` seconds (sanity: no stalls, few
/// conflicts): `quickbench tpcb THREADS SECS [off|async|sync]`.
fn tpcb(threads: usize, secs: u64, log: LogMode) {
    let mut s = Schema::new();
    let acc = s.add(TableDef::new("account", 100, IndexKind::BTree, 100_000));
    let tel = s.add(TableDef::new("teller", 100, IndexKind::BTree, 10));
    let br = s.add(TableDef::new("branch", 100, IndexKind::BTree, 1));
    let hist = s.add(TableDef::new("history", 50, IndexKind::BTree, 1_000_000));
    let e = engine_disk::DiskEngine::open(
        Arc::new(s),
        &EngineOptions {
            log,
            threads,
            ..Default::default()
        },
    )
    .unwrap();
    {
        let mut w = Session::new(e.worker(0));
        w.run(0, |w| {
            w.insert(br, &key(0), &[0u8; 100])?;
            for i in 0..10 {
                w.insert(tel, &key(i), &[0u8; 100])?;
            }
            Ok(())
        })
        .unwrap();
        for c in 0..100 {
            w.run(0, |w| {
                for i in c * 1000..(c + 1) * 1000 {
                    w.insert(acc, &key(i), &[0u8; 100])?;
                }
                Ok(())
            })
            .unwrap();
        }
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let done = std::sync::atomic::AtomicU64::new(0);
    let retries = std::sync::atomic::AtomicU64::new(0);
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        for t in 0..threads {
            let (e, stop, done, retries) = (&e, &stop, &done, &retries);
            sc.spawn(move || {
                let mut w = Session::new(e.worker(t));
                let mut x = t as u64 + 1;
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let (a, tl) = ((x >> 33) % 100_000, (x >> 20) % 10);
                    let hk = (t as u64) << 40 | i;
                    loop {
                        let r = w.run(0, |w| {
                            let add = |r: &mut [u8]| r[0] = r[0].wrapping_add(1);
                            w.update(acc, &key(a), add)?;
                            w.update(tel, &key(tl), add)?;
                            w.update(br, &key(0), add)?;
                            w.insert(hist, &key(hk), &[1u8; 50])
                        });
                        match r {
                            Ok(()) => break,
                            Err(api::Error::Conflict(_)) => {
                                retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    i += 1;
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(std::time::Duration::from_secs(secs));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let n = done.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "tpcb-ish {threads} threads {log:?}: {:.0} txn/s, {} conflict retries; stats {}",
        n as f64 / t0.elapsed().as_secs_f64(),
        retries.load(std::sync::atomic::Ordering::Relaxed),
        api::Engine::stats(&e)
    );
}
