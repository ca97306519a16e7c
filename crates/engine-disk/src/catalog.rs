//! The catalog: page 0 of the data file records the database's table and index layout
//! (names, row sizes, index kinds, root pages) plus the next page id and next LSN at the
//! last clean point, so a reopened database is checked against the schema the workload
//! declares. Written directly (not through the buffer pool, not logged) at creation,
//! after recovery and at clean shutdown. It must never be changed by transactions.
//!
//! Layout after the common header: `[32..40)` next lsn, `[40..48)` next page,
//! `[48..52)` table count, `[56..64)` database id (as in the control file), then from 64 one 128-byte entry per table: `[0]` name length,
//! `[1..48)` name, `[48..52)` row size, `[52]` primary kind (0 B-tree, 1 hash), `[53]`
//! secondary count, `[54]` unique-secondary bit mask, `[64..128)` root pages (primary
//! first, then secondaries).

use crate::page::{self, get_u32, get_u64, put_u32, put_u64, Page, PageType, PAGE_SIZE};
use api::{Error, IndexKind, Result, Schema};
use storage::File;

const ENTRY: usize = 128;
const NAME_MAX: usize = 47;
pub const MAX_INDEXES: usize = 8;
pub const MAX_TABLES: usize = (PAGE_SIZE - 64) / ENTRY;
// The name (length byte, then `[1..48)`) ends where the row size begins, an entry's
// root pages (`[64..128)`, 8 bytes each) fill it, the unique-secondary bit mask (a
// `u8`) has a bit per secondary, and the catalog header ends before the entries.
const _: () = assert!(1 + NAME_MAX == 48 && 64 + 8 * MAX_INDEXES == ENTRY);
const _: () = assert!(MAX_INDEXES - 1 <= 8 && page::HEADER + 32 == 64);

#[derive(Debug, Clone)]
pub struct Catalog {
    pub db_id: u64,
    pub next_lsn: u64,
    pub next_page: u64,
    /// Per table, the root page of each index (primary first).
    pub roots: Vec<Vec<u64>>,
}

/// Whether the schema fits the catalog page (limits checked before creating anything).
pub fn check_limits(s: &Schema) -> Result<()> {
    if s.tables.len() > MAX_TABLES {
        return Err(Error::fatal(format!(
            "disk engine: more than {MAX_TABLES} tables"
        )));
    }
    for t in &s.tables {
        if t.name.len() > NAME_MAX {
            return Err(Error::fatal(format!(
                "disk engine: table name {} longer than {NAME_MAX} bytes",
                t.name
            )));
        }
        if t.secondary.len() + 1 > MAX_INDEXES {
            return Err(Error::fatal(format!(
                "disk engine: table {} has more than {} secondary indexes",
                t.name,
                MAX_INDEXES - 1
            )));
        }
    }
    Ok(())
}

/// The catalog page for `s` and `c`, sealed (written through the buffer pool's
/// torn-page protection by `BufferPool::write_through`).
pub fn encode(s: &Schema, c: &Catalog) -> Box<Page> {
    let mut p: Box<Page> = Box::new([0; PAGE_SIZE]);
    page::format(&mut p, 0, PageType::Catalog);
    put_u64(&mut p[..], 32, c.next_lsn);
    put_u64(&mut p[..], 40, c.next_page);
    put_u32(&mut p[..], 48, s.tables.len() as u32);
    put_u64(&mut p[..], 56, c.db_id);
    for (i, t) in s.tables.iter().enumerate() {
        let at = 64 + i * ENTRY;
        let e = &mut p[at..at + ENTRY];
        e[0] = t.name.len() as u8;
        e[1..1 + t.name.len()].copy_from_slice(t.name.as_bytes());
        put_u32(e, 48, t.row_size as u32);
        e[52] = (t.primary == IndexKind::Hash) as u8;
        e[53] = t.secondary.len() as u8;
        e[54] = t
            .secondary
            .iter()
            .enumerate()
            .fold(0u8, |m, (j, d)| m | ((d.unique as u8) << j));
        for (j, r) in c.roots[i].iter().enumerate() {
            put_u64(e, 64 + 8 * j, *r);
        }
    }
    page::seal(&mut p);
    p
}

/// The catalog of an existing database, checked against `s`; `None` if the file holds
/// no database yet (empty, or creation never completed).
pub fn read(f: &dyn File, s: &Schema) -> Result<Option<Catalog>> {
    let mut p: Box<Page> = Box::new([0; PAGE_SIZE]);
    if f.read_full_at(&mut p[..], 0).map_err(crate::log::io_err)? < PAGE_SIZE {
        return Ok(None);
    }
    decode(&p, s)
}

/// The catalog in page image `p` (from the data file or the double-write file).
pub fn decode(p: &Page, s: &Schema) -> Result<Option<Catalog>> {
    match page::verify(p, 0)? {
        PageType::Free => return Ok(None),
        PageType::Catalog => {}
        t => {
            return Err(Error::fatal(format!(
                "data file page 0 is a {t:?} page, not a catalog"
            )))
        }
    }
    let n = get_u32(&p[..], 48) as usize;
    let mismatch = |what: String| {
        Err(Error::fatal(format!(
            "database does not match the workload's schema: {what}"
        )))
    };
    if n != s.tables.len() || n > MAX_TABLES {
        return mismatch(format!("{n} tables stored, {} declared", s.tables.len()));
    }
    let mut roots = Vec::with_capacity(n);
    for (i, t) in s.tables.iter().enumerate() {
        let at = 64 + i * ENTRY;
        let e = &p[at..at + ENTRY];
        let name = &e[1..1 + (e[0] as usize).min(NAME_MAX)];
        if name != t.name.as_bytes() {
            return mismatch(format!(
                "table {i} is {} stored, {} declared",
                String::from_utf8_lossy(name),
                t.name
            ));
        }
        if get_u32(e, 48) as usize != t.row_size {
            return mismatch(format!(
                "table {} has {}-byte rows stored, {} declared",
                t.name,
                get_u32(e, 48),
                t.row_size
            ));
        }
        let uniq = t
            .secondary
            .iter()
            .enumerate()
            .fold(0u8, |m, (j, d)| m | ((d.unique as u8) << j));
        if e[52] != (t.primary == IndexKind::Hash) as u8
            || e[53] as usize != t.secondary.len()
            || e[54] != uniq
        {
            return mismatch(format!("table {} has a different index layout", t.name));
        }
        roots.push(
            (0..=t.secondary.len())
                .map(|j| get_u64(e, 64 + 8 * j))
                .collect(),
        );
    }
    Ok(Some(Catalog {
        db_id: get_u64(&p[..], 56),
        next_lsn: get_u64(&p[..], 32),
        next_page: get_u64(&p[..], 40),
        roots,
    }))
}
