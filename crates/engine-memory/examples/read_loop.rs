//! Sanity measurement (not a benchmark of record): single-row read transactions on one
//! thread over N keys of 16-byte rows, B+tree or hash primary index.
//! `cargo run --release -p engine_memory --example read_loop -- [keys] [txns] [btree|hash]`

use api::{Engine, EngineOptions, IndexKind, Schema, Session, TableDef, TableId};
use engine_memory::MemoryEngine;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let keys: u64 = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let txns: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5_000_000);
    let kind = match args.get(3).map(String::as_str) {
        Some("hash") => IndexKind::Hash,
        _ => IndexKind::BTree,
    };
    let mut s = Schema::new();
    let t: TableId = s.add(TableDef::new("micro", 16, kind, keys));
    let e = MemoryEngine::open(Arc::new(s), &EngineOptions::default()).unwrap();
    let mut ses = Session::new(e.worker(0));
    let t0 = Instant::now();
    for chunk in (0..keys).collect::<Vec<_>>().chunks(10_000) {
        ses.run(0, |s| {
            for &k in chunk {
                s.insert(t, &k.to_be_bytes(), &[k as u8; 16])?;
            }
            Ok(())
        })
        .unwrap();
    }
    println!(
        "load {keys} keys ({kind:?}): {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    let mut x = 88172645463325252u64;
    let mut sum = 0u64;
    let t0 = Instant::now();
    for _ in 0..txns {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % keys).to_be_bytes();
        ses.begin(0).unwrap();
        ses.get(t, &k, |r| sum += r[0] as u64).unwrap();
        ses.commit().unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{txns} read txns: {:.0} txn/s, {:.0} ns/txn (checksum {sum})",
        txns as f64 / secs,
        secs * 1e9 / txns as f64
    );
    drop(ses);
    e.shutdown().unwrap();
}
