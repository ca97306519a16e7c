#![allow(dead_code)]
use api::{Dir, EngineOptions, Error, IndexKind, Key, LogMode, Schema, Session, TableDef, TableId};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

/// accounts(id u64 -> balance i64, group u32, pad) with a non-unique secondary on group,
/// and a plain table without secondaries.
pub fn schema(rows: u64) -> Arc<Schema> {
    let mut s = Schema::new();
    s.add(
        TableDef::new("accounts", 24, IndexKind::BTree, rows).with_secondary(
            "by_group",
            false,
            |row, k| {
                k.push_u32(u32::from_le_bytes(row[8..12].try_into().unwrap()));
            },
        ),
    );
    s.add(TableDef::new("plain", 100, IndexKind::BTree, rows));
    s.add(TableDef::new("hashed", 16, IndexKind::Hash, rows));
    Arc::new(s)
}

pub fn key(i: u64) -> Key {
    let mut k = Key::new();
    k.push_u64(i);
    k
}

pub fn row(bal: i64, group: u32) -> [u8; 24] {
    let mut r = [0u8; 24];
    r[..8].copy_from_slice(&bal.to_le_bytes());
    r[8..12].copy_from_slice(&group.to_le_bytes());
    r
}

pub fn bal(r: &[u8]) -> i64 {
    i64::from_le_bytes(r[..8].try_into().unwrap())
}

/// The sum of the accounts' balances and their number (one full scan of table 0).
pub fn total(s: &mut Session<engine_disk::DiskWorker<'_>>) -> Result<(i64, usize), Error> {
    let mut sum = 0;
    let n = s.scan(
        TableId(0).primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        Dir::Forward,
        usize::MAX,
        |_, r| {
            sum += bal(r);
            true
        },
    )?;
    Ok((sum, n))
}

pub fn opts(dir: &Path, log: LogMode, bpool_pages: Option<u64>) -> EngineOptions {
    EngineOptions {
        threads: 4,
        log,
        db_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
    .with_own(engine_disk::DiskOptions {
        bpool_bytes: bpool_pages.map(|p| p * 8192),
        checkpoint_ms: Some(0),
        escalation: None,
        ..Default::default()
    })
}

/// The newest log segment file in `dir`.
#[allow(dead_code)]
pub fn last_segment(dir: &Path) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("wal."))
        .collect();
    v.sort();
    v.pop().expect("a log segment")
}
