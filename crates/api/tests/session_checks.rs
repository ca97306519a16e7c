//! `Session` refuses, for every engine, what no engine can do: here on the serial
//! engine, which checks none of it itself (a long key used to be stored by it).

use api::{Dir, Engine, EngineOptions, Error, IndexId, IndexKind, Schema, Session, TableDef};
use engine_serial::SerialEngine;
use std::ops::Bound;
use std::sync::Arc;

fn fatal(r: api::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::Fatal(m)) => m,
        r => panic!("expected a fatal error, got {r:?}"),
    }
}

#[test]
fn session_refuses_long_keys_hash_scans_and_missing_indexes() {
    let mut s = Schema::new();
    let h = s.add(TableDef::new("h", 8, IndexKind::Hash, 64));
    let b = s.add(TableDef::new("b", 8, IndexKind::BTree, 64));
    let e = SerialEngine::open(Arc::new(s), &EngineOptions::default()).unwrap();
    let mut s = Session::new(e.worker(0));
    let long = [0u8; 65];
    let m = fatal(s.run(0, |s| s.insert(b, &long, &[0; 8])));
    assert_eq!(m, "key of 65 bytes, longer than 64");
    fatal(s.run(0, |s| s.get(b, &long, |_| {})));
    fatal(s.run(0, |s| s.update(b, &long, |_| {})));
    fatal(s.run(0, |s| s.delete(b, &long)));
    let all = |s: &mut Session<_>, ix: IndexId, lo: Bound<&[u8]>| {
        s.run(0, |s| {
            s.scan(ix, lo, Bound::Unbounded, Dir::Forward, 10, |_, _| true)
        })
    };
    assert_eq!(
        fatal(all(&mut s, h.primary(), Bound::Unbounded)),
        "scan over the hash index of table h"
    );
    assert_eq!(
        fatal(all(
            &mut s,
            IndexId { table: b, index: 1 },
            Bound::Unbounded
        )),
        "table b has no index 1"
    );
    fatal(all(&mut s, b.primary(), Bound::Included(&long)));
    // What is allowed still works: a 64-byte key, a scan of the B+tree primary index.
    let max = [7u8; 64];
    s.run(0, |s| s.insert(b, &max, &[1; 8])).unwrap();
    assert_eq!(all(&mut s, b.primary(), Bound::Unbounded).unwrap(), 1);
}
