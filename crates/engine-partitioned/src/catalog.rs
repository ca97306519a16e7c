//! `catalog`: the tables of one partition (or the shared, unpartitioned copy), each a
//! primary index owning its rows and its secondary indexes, with the row-level
//! operations an owner runs on them. No concurrency control here: the caller owns the
//! partition (`partition`), and keeps the undo log (`xct`).

use crate::index::{empty_range, Ordered, OrderedKind, Primary, Row, Secondary};
use api::key::Key;
use api::{Dir, Error, IndexKind, Result, Schema};
use std::ops::Bound;

pub struct Table {
    pub kind: IndexKind,
    pub primary: Primary,
    pub secondary: Vec<Secondary>,
}

/// One partition's copy of every table (tables that live elsewhere stay empty).
pub struct Tables {
    pub tables: Vec<Table>,
}

impl Tables {
    pub fn new(schema: &Schema, ordered: OrderedKind) -> Self {
        Tables {
            tables: schema
                .tables
                .iter()
                .map(|t| Table {
                    kind: t.primary,
                    primary: Primary::new(t.primary, ordered),
                    secondary: t
                        .secondary
                        .iter()
                        .map(|s| Secondary {
                            map: Ordered::new(ordered),
                            def: s.clone(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

impl Table {
    /// Insert a row; `Duplicate` (and no change) if its primary key or a unique
    /// secondary key is present.
    pub fn insert(&mut self, pk: &Key, row: &[u8]) -> Result<()> {
        if self.secondary.is_empty() {
            // No secondary key to check first: test and insert in one search (the
            // load's rows are mostly of such tables; micro's are all).
            return self
                .primary
                .try_put(*pk, row.into())
                .map_err(|_| Error::Duplicate);
        }
        if self.primary.contains(pk) {
            return Err(Error::Duplicate);
        }
        let entries: Vec<Key> = self
            .secondary
            .iter()
            .map(|s| s.entry_key(pk, row))
            .collect();
        for (s, k) in self.secondary.iter().zip(&entries) {
            if s.map.get(k).is_some() {
                return Err(Error::Duplicate);
            }
        }
        for (s, k) in self.secondary.iter_mut().zip(entries) {
            s.map.put(k, *pk);
        }
        self.primary.put(*pk, row.into());
        Ok(())
    }

    /// Remove a row and its secondary entries; the row if it was present.
    pub fn delete(&mut self, pk: &Key) -> Option<Row> {
        let row = self.primary.remove(pk)?;
        for s in &mut self.secondary {
            let k = s.entry_key(pk, &row);
            s.map.remove(&k);
        }
        Some(row)
    }

    /// Apply `f` to the row in place; its old bytes if present. A change of a secondary
    /// key is refused (and undone): the schema forbids it.
    pub fn update(&mut self, pk: &Key, f: &mut dyn FnMut(&mut [u8])) -> Result<Option<Row>> {
        let Some(row) = self.primary.get_mut(pk) else {
            return Ok(None);
        };
        let old = row.clone();
        f(row);
        if !self.secondary.is_empty() {
            let row = self.primary.get(pk).expect("just updated");
            let changed = self
                .secondary
                .iter()
                .any(|s| s.entry_key(pk, &old) != s.entry_key(pk, row));
            if changed {
                *self.primary.get_mut(pk).expect("just updated") = old;
                return Err(Error::fatal("update changed a secondary key"));
            }
        }
        Ok(Some(old))
    }

    /// Put back a row's old bytes (undo of an update).
    pub fn restore(&mut self, pk: &Key, old: Row) {
        *self
            .primary
            .get_mut(pk)
            .expect("undo of an update: row present") = old;
    }

    /// Scan index `index` (0: primary) in `dir` order, at most `limit` rows; `f`
    /// returns false to stop. Returns the rows passed to `f`.
    pub fn scan(
        &self,
        index: u16,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        if empty_range(lo, hi) || limit == 0 {
            return Ok(0);
        }
        let mut n = 0;
        let mut each = |k: &Key, row: &[u8]| {
            n += 1;
            f(k, row) && n < limit
        };
        if index == 0 {
            let Primary::Ordered(m) = &self.primary else {
                unreachable!("Session refuses scans over a hash index")
            };
            m.range(lo, hi, dir, &mut |k, r| each(k, r))?;
        } else {
            let s = &self.secondary[index as usize - 1];
            let primary = &self.primary;
            let mut missing = false;
            s.map
                .range(lo, hi, dir, &mut |k, pk| match primary.get(pk) {
                    Some(r) => each(k, r),
                    None => {
                        missing = true;
                        false
                    }
                })?;
            if missing {
                return Err(Error::fatal("secondary entry without its row"));
            }
        }
        Ok(n)
    }
}
