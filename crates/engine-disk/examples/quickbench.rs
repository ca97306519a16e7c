//! Rough single-thread sanity check of the hot paths (not a benchmark of record):
//! `cargo run --release -p engine_disk --example quickbench [rows] [ops] [1 = disk only]`.
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
    let a: Vec<u64> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let rows = a.first().copied().unwrap_or(100_000);
    let ops = a.get(1).copied().unwrap_or(300_000);
    if a.get(2) != Some(&1) {
        run::<api::serial::SerialEngine>(rows, ops);
    }
    run::<engine_disk::DiskEngine>(rows, ops);
}
