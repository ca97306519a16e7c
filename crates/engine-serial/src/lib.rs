//! `engine_serial`: a reference engine that runs one transaction at a time under a global lock,
//! with `BTreeMap`s as indexes and an undo list for aborts. Trivially serializable, so
//! it is the oracle tests compare real engines with, and the "one big lock" baseline.
//! It must stay simple enough to be obviously right; it is not meant to be fast.

use api::key::Key;
use api::{Dir, Engine, EngineOptions, Error, IndexId, Result, Schema, TableId, Worker};
use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

struct Table {
    /// primary key -> row
    rows: Map,
    /// per secondary index: secondary key (plus primary key if non-unique) -> primary key
    secondary: Vec<Map>,
}

struct State {
    tables: Vec<Table>,
}

enum Undo {
    Inserted(TableId, Vec<u8>),
    Updated(TableId, Vec<u8>, Vec<u8>),
    Deleted(TableId, Vec<u8>, Vec<u8>),
}

pub struct SerialEngine {
    schema: Arc<Schema>,
    state: Mutex<State>,
}

impl SerialEngine {
    fn sec_key(schema: &Schema, t: TableId, i: usize, pk: &[u8], row: &[u8]) -> Vec<u8> {
        let def = &schema.table(t).secondary[i];
        let mut k = Key::new();
        (def.key_of)(row, &mut k);
        let mut v = k.as_bytes().to_vec();
        if !def.unique {
            v.extend_from_slice(pk);
        }
        v
    }
}

impl Engine for SerialEngine {
    type Worker<'e> = SerialWorker<'e>;
    type Options = ();
    const NAME: &'static str = "serial";
    const ABOUT: &'static str =
        "One transaction at a time under a global lock (the reference oracle).";

    fn place(given: &api::Given) -> Result<api::Place> {
        match given.first_stored() {
            Some(f) => Err(Error::fatal(format!(
                "{f}: the serial engine keeps nothing on storage (use --engine disk, memory or mvcc)"
            ))),
            None => Ok(api::Place::default()),
        }
    }

    fn open(schema: Arc<Schema>, _opts: &EngineOptions) -> Result<Self> {
        let tables = schema
            .tables
            .iter()
            .map(|t| Table {
                rows: Map::new(),
                secondary: vec![Map::new(); t.secondary.len()],
            })
            .collect();
        Ok(SerialEngine {
            schema,
            state: Mutex::new(State { tables }),
        })
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn table_sizes(&self) -> Result<Vec<api::TableSize>> {
        let st = self.state.lock();
        Ok(self
            .schema
            .tables
            .iter()
            .zip(&st.tables)
            .map(|(d, t)| api::TableSize {
                name: d.name.to_string(),
                records: t.rows.len() as u64,
                ..Default::default()
            })
            .collect())
    }

    fn worker(&self, _worker_id: usize) -> SerialWorker<'_> {
        SerialWorker {
            e: self,
            guard: None,
            undo: Vec::new(),
        }
    }
}

pub struct SerialWorker<'e> {
    e: &'e SerialEngine,
    guard: Option<MutexGuard<'e, State>>,
    undo: Vec<Undo>,
}

impl SerialWorker<'_> {
    fn st(&mut self) -> &mut State {
        self.guard
            .as_mut()
            .expect("operation outside a transaction")
    }

    fn check_row(&self, t: TableId, row: &[u8]) -> Result<()> {
        let want = self.e.schema.table(t).row_size;
        if row.len() != want {
            return Err(Error::fatal(format!(
                "row of {} bytes, table wants {want}",
                row.len()
            )));
        }
        Ok(())
    }

    /// Add or remove a row's secondary entries.
    fn index_row(&mut self, t: TableId, pk: &[u8], row: &[u8], add: bool) -> Result<()> {
        let schema = self.e.schema.clone();
        let n = schema.table(t).secondary.len();
        for i in 0..n {
            let sk = SerialEngine::sec_key(&schema, t, i, pk, row);
            let map = &mut self.st().tables[t.0 as usize].secondary[i];
            if add {
                if map.contains_key(&sk) {
                    // Undo the entries added so far for this row.
                    for j in 0..i {
                        let sk = SerialEngine::sec_key(&schema, t, j, pk, row);
                        self.st().tables[t.0 as usize].secondary[j].remove(&sk);
                    }
                    return Err(Error::Duplicate);
                }
                map.insert(sk, pk.to_vec());
            } else {
                map.remove(&sk);
            }
        }
        Ok(())
    }
}

impl Worker for SerialWorker<'_> {
    fn schema(&self) -> &Schema {
        &self.e.schema
    }

    fn begin(&mut self) -> Result<()> {
        assert!(self.guard.is_none(), "begin inside a transaction");
        // Held for the whole transaction: another transaction of this thread (a
        // coroutine) may hold it, so wait through `rt`, never block.
        self.guard = Some(rt::lock(rt::WaitKind::Lock, &self.e.state));
        // The one lock a transaction takes here: on the whole database (`--stats`).
        txnstats::add(txnstats::Counter::HigherLocks, 1);
        self.undo.clear();
        Ok(())
    }

    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        match self.st().tables[table.0 as usize].rows.get(key) {
            Some(r) => {
                f(r);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        debug_assert!(api::session::scan_checked(&self.e.schema, index));
        // An empty range (start above end, or equal with an excluded bound) holds nothing;
        // BTreeMap::range would panic on it.
        let empty = match (lo, hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b))
            | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
            _ => false,
        };
        if empty {
            return Ok(0);
        }
        let range = (lo.map(|b| b.to_vec()), hi.map(|b| b.to_vec()));
        let t = &self.st().tables[index.table.0 as usize];
        let map = if index.index == 0 {
            &t.rows
        } else {
            &t.secondary[index.index as usize - 1]
        };
        let iter: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> = match dir {
            Dir::Forward => Box::new(map.range(range)),
            Dir::Backward => Box::new(map.range(range).rev()),
        };
        let mut n = 0;
        for (k, v) in iter {
            if n >= limit {
                break;
            }
            n += 1;
            let row = if index.index == 0 { v } else { &t.rows[v] };
            if !f(k, row) {
                break;
            }
        }
        Ok(n)
    }

    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        self.check_row(table, row)?;
        if self.st().tables[table.0 as usize].rows.contains_key(key) {
            return Err(Error::Duplicate);
        }
        self.index_row(table, key, row, true)?;
        self.st().tables[table.0 as usize]
            .rows
            .insert(key.to_vec(), row.to_vec());
        self.undo.push(Undo::Inserted(table, key.to_vec()));
        Ok(())
    }

    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        let schema = self.e.schema.clone();
        let Some(row) = self.st().tables[table.0 as usize].rows.get_mut(key) else {
            return Ok(false);
        };
        let old = row.clone();
        f(row);
        let new = row.clone();
        for i in 0..schema.table(table).secondary.len() {
            if SerialEngine::sec_key(&schema, table, i, key, &old)
                != SerialEngine::sec_key(&schema, table, i, key, &new)
            {
                *self.st().tables[table.0 as usize]
                    .rows
                    .get_mut(key)
                    .unwrap() = old;
                return Err(Error::fatal("update changed a secondary key"));
            }
        }
        self.undo.push(Undo::Updated(table, key.to_vec(), old));
        Ok(true)
    }

    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        let Some(old) = self.st().tables[table.0 as usize].rows.remove(key) else {
            return Ok(false);
        };
        self.index_row(table, key, &old, false)?;
        self.undo.push(Undo::Deleted(table, key.to_vec(), old));
        Ok(true)
    }

    fn commit(&mut self) -> Result<()> {
        assert!(self.guard.is_some(), "commit outside a transaction");
        self.undo.clear();
        self.guard = None;
        Ok(())
    }

    fn abort(&mut self) {
        if self.guard.is_none() {
            return;
        }
        while let Some(u) = self.undo.pop() {
            match u {
                Undo::Inserted(t, k) => {
                    let row = self.st().tables[t.0 as usize].rows.remove(&k).unwrap();
                    self.index_row(t, &k, &row, false).unwrap();
                }
                Undo::Updated(t, k, old) => {
                    *self.st().tables[t.0 as usize].rows.get_mut(&k).unwrap() = old;
                }
                Undo::Deleted(t, k, old) => {
                    self.index_row(t, &k, &old, true).unwrap();
                    self.st().tables[t.0 as usize].rows.insert(k, old);
                }
            }
        }
        self.guard = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::{IndexKind, Session, TableDef};

    #[test]
    fn empty_and_inverted_ranges_scan_nothing() {
        let mut schema = Schema::new();
        let t = schema.add(TableDef::new("t", 1, IndexKind::BTree, 10));
        let e = SerialEngine::open(Arc::new(schema), &EngineOptions::default()).unwrap();
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            for k in 0u8..5 {
                s.insert(t, &[k], &[k])?;
            }
            let n = |s: &mut Session<_>, lo, hi| {
                s.scan(t.primary(), lo, hi, Dir::Forward, 10, |_, _| true)
            };
            assert_eq!(
                n(s, Bound::Included(&[3u8][..]), Bound::Included(&[1u8][..]))?,
                0
            );
            assert_eq!(
                n(s, Bound::Excluded(&[2u8][..]), Bound::Excluded(&[2u8][..]))?,
                0
            );
            assert_eq!(
                n(s, Bound::Included(&[2u8][..]), Bound::Excluded(&[2u8][..]))?,
                0
            );
            assert_eq!(
                n(s, Bound::Included(&[2u8][..]), Bound::Included(&[2u8][..]))?,
                1
            );
            Ok(())
        })
        .unwrap();
    }
}
