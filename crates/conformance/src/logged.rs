//! `conformance::logged`: the fixture the log, recovery and checkpoint tests of the
//! logging in-memory engines (memory, mvcc) share: a B+tree table with two secondary
//! indexes, a hash table and optionally a wide hash table; a dump of every row with the
//! secondary indexes checked against the rows; and the durable mark's test. One copy
//! here instead of one per engine and per test module (issue 39).
//!
//! Must never: accept a secondary index that differs from its rows, or a log cut
//! before its durable mark.

use api::{
    Dir, Engine, EngineOptions, IndexKind, Schema, SecondaryDef, Session, TableDef, TableId,
};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use storage::logfile::{Header, HeaderFormat, LoadMarker, MarkerFormat};
use storage::valuelog::{BLOCK_HEADER_BYTES, RECORD_HEADER_BYTES};

/// B+tree, 16-byte rows (u64 group, u64 echo of the primary key) with a non-unique
/// secondary index on the group and a unique one on the echo.
pub const T_ORDERED: TableId = TableId(0);
/// Hash, 8-byte rows.
pub const T_HASH: TableId = TableId(1);
/// Hash, 64-byte rows (a counter in bytes 0..8; its updates are logged as changes).
pub const T_WIDE: TableId = TableId(2);

/// Tables `T_ORDERED` and `T_HASH`, and `T_WIDE` when `wide`.
pub fn schema(wide: bool) -> Schema {
    let mut s = Schema::new();
    let mut t = TableDef::new("ordered", 16, IndexKind::BTree, 1000);
    t.secondary.push(SecondaryDef {
        name: "by_group".into(),
        unique: false,
        key_of: |row, out| {
            out.push_bytes(&row[0..8]);
        },
        parts: Vec::new(),
    });
    t.secondary.push(SecondaryDef {
        name: "by_echo".into(),
        unique: true,
        key_of: |row, out| {
            out.push_bytes(&row[8..16]);
        },
        parts: Vec::new(),
    });
    s.add(t);
    s.add(TableDef::new("hashed", 8, IndexKind::Hash, 1000));
    if wide {
        s.add(TableDef::new("wide", 64, IndexKind::Hash, 1000));
    }
    s
}

pub fn key(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// A row of `T_ORDERED`: its group, then the echo of its key.
pub fn ordered_row(group: u64, k: u64) -> [u8; 16] {
    let mut r = [0u8; 16];
    r[0..8].copy_from_slice(&group.to_be_bytes());
    r[8..16].copy_from_slice(&k.to_be_bytes());
    r
}

/// A row of `T_WIDE` holding the counter `n` in its first 8 bytes.
pub fn wide_row(n: u64) -> [u8; 64] {
    let mut r = [0u8; 64];
    r[0..8].copy_from_slice(&n.to_le_bytes());
    r
}

/// (table, key) -> row.
pub type Dump = BTreeMap<(u32, u64), Vec<u8>>;

/// Every row of `T_ORDERED` (by a scan of its primary index) and of the hash tables
/// `hashed` at the keys `hkeys`, read in one transaction; both secondary indexes are
/// checked against the ordered rows (exactly one entry per row, keys matching rows).
pub fn dump<E: Engine>(
    e: &E,
    hashed: &[TableId],
    hkeys: impl Iterator<Item = u64> + Clone,
) -> Dump {
    let mut out = Dump::new();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        out.clear();
        s.scan(
            T_ORDERED.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            usize::MAX,
            |k, r| {
                out.insert((0, u64::from_be_bytes(k.try_into().unwrap())), r.to_vec());
                true
            },
        )?;
        for k in hkeys.clone() {
            for &t in hashed {
                s.get(t, &key(k), |r| {
                    out.insert((t.0, k), r.to_vec());
                })?;
            }
        }
        check_secondaries(s, &out)
    })
    .unwrap();
    out
}

/// Both secondary indexes of `T_ORDERED` against its rows in `rows`.
fn check_secondaries<W: api::Worker>(s: &mut Session<W>, rows: &Dump) -> api::Result<()> {
    let mut by_group = Vec::new();
    s.scan(
        T_ORDERED.secondary(0),
        Bound::Unbounded,
        Bound::Unbounded,
        Dir::Forward,
        usize::MAX,
        |k, r| {
            assert_eq!(&k[0..8], &r[0..8], "secondary key is not the row's group");
            by_group.push(u64::from_be_bytes(k[8..16].try_into().unwrap()));
            true
        },
    )?;
    let mut by_echo = Vec::new();
    s.scan(
        T_ORDERED.secondary(1),
        Bound::Unbounded,
        Bound::Unbounded,
        Dir::Forward,
        usize::MAX,
        |k, r| {
            assert_eq!(k, &r[8..16], "unique secondary key is not the row's echo");
            by_echo.push(u64::from_be_bytes(k.try_into().unwrap()));
            true
        },
    )?;
    // The dump's keys are in order, so are the rows' keys.
    let keys: Vec<u64> = rows.keys().filter(|k| k.0 == 0).map(|k| k.1).collect();
    by_group.sort();
    assert_eq!(
        by_group, keys,
        "non-unique secondary index differs from the rows"
    );
    assert_eq!(
        by_echo, keys,
        "unique secondary index differs from the rows"
    );
    Ok(())
}

/// A file another thread is appending to, as it stood at one instant: read it twice and
/// keep the first read once the second starts with it. A plain copy taken while the log
/// is written can catch a block half written and, further on, blocks finished while the
/// copy was on its way: a file no crash of the writing process leaves (recovery rightly
/// refuses damage followed by a valid block), which made crash-image tests fail now and
/// then on a loaded machine. `None` if the file is not there.
pub fn read_settled(path: &Path) -> Option<Vec<u8>> {
    for _ in 0..1000 {
        let first = std::fs::read(path).ok()?;
        let Ok(second) = std::fs::read(path) else {
            continue;
        };
        if second.starts_with(&first) {
            return Some(first);
        }
    }
    panic!(
        "{} changed under every one of 1,000 pairs of reads",
        path.display()
    );
}

/// Commit `n` inserts of keys from `from` into `T_HASH`, one per transaction.
pub fn commit_inserts<E: Engine>(e: &E, from: u64, n: u64) {
    let mut s = Session::new(e.worker(0));
    for k in from..from + n {
        s.run(0, |s| s.insert(T_HASH, &key(k), &[3; 8])).unwrap();
    }
}

/// An engine's log files and formats (its `log` module's), for [`write_log`] and
/// [`log_cut_before_its_durable_mark_is_refused`].
pub struct LogFiles {
    pub log: &'static str,
    pub marker: &'static str,
    pub header: &'static HeaderFormat,
    pub format: &'static MarkerFormat,
    /// Seals a block: (block, durable epoch or timestamp, records, kind).
    pub seal_block: fn(&mut [u8], u64, u32, u32),
}

/// A log written by hand in `d` for a database of `schema`: header, the `blocks`
/// (durable epoch or timestamp, kind, records), and a load marker at the header's end.
/// Returns the log's length.
pub fn write_log(
    files: &LogFiles,
    d: &Path,
    schema: &Schema,
    blocks: &[(u64, u32, Vec<u8>)],
) -> u64 {
    std::fs::create_dir_all(d).unwrap();
    let header = Header {
        database_id: 42,
        schema: schema.fingerprint(),
    };
    let mut f = files.header.encode(&header).to_vec();
    for (durable, kind, records) in blocks {
        let mut b = vec![0u8; BLOCK_HEADER_BYTES];
        b.extend_from_slice(records);
        let mut n = 0;
        let mut p = &records[..];
        while !p.is_empty() {
            let rl = u32::from_le_bytes(p[12..16].try_into().unwrap()) as usize;
            p = &p[RECORD_HEADER_BYTES + p[17] as usize + rl..];
            n += 1;
        }
        (files.seal_block)(&mut b, *durable, n, *kind);
        f.extend_from_slice(&b);
    }
    std::fs::write(d.join(files.log), &f).unwrap();
    let m = LoadMarker {
        database_id: 42,
        log_bytes: storage::logfile::HEADER_BYTES as u64,
    };
    std::fs::write(d.join(files.marker), files.format.encode(&m)).unwrap();
    f.len() as u64
}

/// A log cut before its durable mark lost acknowledged commits, which a crash never
/// does: refused by `check` (`read_only`) and by a run (`sync`: options logging
/// `Sync`), the file left as it is. The mark follows the log while it runs (at most
/// `MARK_INTERVAL` behind) and reaches its end at a clean stop, so after one even the
/// last bytes cut are refused. `open` opens the engine on [`schema`] in the new
/// directory `d`. (Before the mark, the load marker alone guarded only the load: every
/// one of these cuts was accepted.)
pub fn log_cut_before_its_durable_mark_is_refused<E: Engine>(
    open: impl Fn(&EngineOptions) -> api::Result<E>,
    sync: impl Fn(&Path) -> EngineOptions,
    read_only: impl Fn(&Path) -> EngineOptions,
    files: &LogFiles,
    d: &Path,
) {
    let mark_of = |d: &Path| {
        let p = d.join(files.marker);
        files
            .format
            .decode(&std::fs::read(&p).unwrap(), &p)
            .unwrap()
            .log_bytes
    };
    let e = open(&sync(d)).unwrap();
    commit_inserts(&e, 0, 10);
    e.load_done().unwrap();
    let load_end = mark_of(d);
    commit_inserts(&e, 50, 20);
    std::thread::sleep(storage::logfile::MARK_INTERVAL + std::time::Duration::from_millis(100));
    commit_inserts(&e, 150, 20);
    let running = mark_of(d);
    assert!(
        running > load_end,
        "the mark did not advance while running ({running})"
    );
    e.shutdown().unwrap();
    drop(e);
    let path = d.join(files.log);
    let whole = std::fs::read(&path).unwrap();
    assert_eq!(
        mark_of(d),
        whole.len() as u64,
        "a clean stop marks the log's end"
    );
    let rows = dump(&open(&read_only(d)).unwrap(), &[T_HASH], 0..200);
    assert_eq!(
        rows.len(),
        50,
        "the acknowledged commits after a clean stop"
    );
    for cut in [
        whole.len() - 100,
        (load_end as usize + whole.len()) / 2,
        whole.len() / 2,
    ] {
        std::fs::write(&path, &whole[..cut]).unwrap();
        for o in [read_only(d), sync(d)] {
            let err = open(&o).err().expect("a cut log accepted").to_string();
            assert!(
                err.contains("records as durable") && err.contains(path.to_str().unwrap()),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
            assert_eq!(
                std::fs::read(&path).unwrap(),
                &whole[..cut],
                "a refused log changed"
            );
        }
    }
}
