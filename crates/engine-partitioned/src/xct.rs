//! `xct`: a worker's transactions. A transaction owns the partitions it touches, taken
//! as it first touches them in ascending order (waiting for each): a transaction never
//! waits for a partition below one it owns, so no two wait for each other. When it
//! needs one below (out of order), it tries once; if that partition is taken it aborts
//! (a conflict, which the driver retries with the same inputs) and remembers the whole
//! set, which the next transaction of the worker takes in order at `begin`: H-Store's
//! simple multi-partition scheme, where a multi-partition transaction holds all its
//! partitions for its whole run. Tables without a partition key are one shared copy:
//! a reader owns at least one partition (its home one if it owns none yet), a writer
//! owns every partition. Changes are made in place; an undo log rolls back an abort.
//! A committing writer appends its command (`Worker::command`) to the command log
//! (`log`) before it lets its partitions go, so the log order is a serial order.

use crate::catalog::Tables;
use crate::partition::Owned;
use crate::{PartitionedEngine, WorkerStats};
use api::key::Key;
use api::{Dir, Error, IndexId, Result, TableId, Worker};
use std::ops::Bound;

/// Where an operation's rows may be: the shared tables, or partitions `a..=b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    Shared,
    Parts(usize, usize),
}

/// Which data an undo record applies to.
#[derive(Clone, Copy)]
enum Place {
    Shared,
    Part(usize),
}

enum Undo {
    Inserted(Place, TableId, Key),
    Updated(Place, TableId, Key, Box<[u8]>),
    Deleted(Place, TableId, Key, Box<[u8]>),
}

pub struct PartitionedWorker<'e> {
    e: &'e PartitionedEngine,
    stats: &'e WorkerStats,
    /// The partition a transaction reading only shared tables owns.
    home: usize,
    /// Per partition: the ownership this transaction holds.
    held: Vec<Option<Owned<'e>>>,
    /// Highest partition owned, and how many are owned.
    top: Option<usize>,
    owned: usize,
    /// Partitions the next transaction takes at `begin` (an out-of-order abort's set).
    next_set: Vec<usize>,
    undo: Vec<Undo>,
    in_txn: bool,
    /// The transaction's command (`Worker::command`), logged if it commits a write.
    cmd_type: Option<u32>,
    cmd: Vec<u8>,
}

impl<'e> PartitionedWorker<'e> {
    pub(crate) fn new(e: &'e PartitionedEngine, worker_id: usize) -> Self {
        let n = e.parts.len();
        PartitionedWorker {
            e,
            stats: &e.stats[worker_id % e.stats.len()],
            home: worker_id % n,
            held: (0..n).map(|_| None).collect(),
            top: None,
            owned: 0,
            next_set: Vec::new(),
            undo: Vec::new(),
            in_txn: false,
            cmd_type: None,
            cmd: Vec::new(),
        }
    }

    fn take(&mut self, p: usize, g: Owned<'e>) {
        self.held[p] = Some(g);
        self.owned += 1;
        self.top = Some(self.top.map_or(p, |t| t.max(p)));
        // One lock on a whole partition (`--stats`' higher-level locks).
        txnstats::add(txnstats::Counter::HigherLocks, 1);
    }

    /// Own partitions `a..=b` (ascending). Waits only for partitions above every one
    /// owned; an owned-by-another partition below them aborts the transaction.
    fn acquire(&mut self, a: usize, b: usize) -> Result<()> {
        let e = self.e;
        for p in a..=b {
            if self.held[p].is_some() {
                continue;
            }
            if self.top.is_none_or(|t| p > t) {
                let g = e.parts[p].acquire();
                self.take(p, g);
            } else if let Some(g) = e.parts[p].try_acquire() {
                self.take(p, g);
            } else {
                let mut set: Vec<usize> = (0..self.held.len())
                    .filter(|&q| self.held[q].is_some() || (a..=b).contains(&q))
                    .collect();
                set.dedup();
                self.next_set = set;
                WorkerStats::add(&self.stats.out_of_order_aborts, 1);
                return Err(Error::Conflict("partition needed out of order"));
            }
        }
        Ok(())
    }

    fn release(&mut self) {
        for h in &mut self.held {
            *h = None;
        }
        self.top = None;
        self.owned = 0;
        self.in_txn = false;
    }

    fn parts_of(&self, table: TableId, index: u16, key: &[u8]) -> Where {
        let n = self.held.len();
        match self.e.schema.table(table).partitioning {
            None => Where::Shared,
            Some(pt) => match (pt.of_key)(index, key) {
                Some(v) => {
                    let p = pt.partition(v, n);
                    Where::Parts(p, p)
                }
                None => Where::Parts(0, n - 1),
            },
        }
    }

    /// Partitions a scan of `[lo, hi]` may find rows in: partition values grow with
    /// keys, so those of the two bounds enclose them.
    fn parts_of_range(&self, index: IndexId, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Where {
        let n = self.held.len();
        let Some(pt) = self.e.schema.table(index.table).partitioning else {
            return Where::Shared;
        };
        let at = |b: Bound<&[u8]>| match b {
            Bound::Included(k) | Bound::Excluded(k) => {
                (pt.of_key)(index.index, k).map(|v| pt.partition(v, n))
            }
            Bound::Unbounded => None,
        };
        let a = at(lo).unwrap_or(0);
        let b = at(hi).unwrap_or(n - 1);
        Where::Parts(a.min(b), b.max(a))
    }

    /// Own what reading `w` needs.
    fn for_read(&mut self, w: Where) -> Result<()> {
        match w {
            Where::Shared if self.owned == 0 => self.acquire(self.home, self.home),
            Where::Shared => Ok(()),
            Where::Parts(a, b) => self.acquire(a, b),
        }
    }

    /// Own what writing `w` needs.
    fn for_write(&mut self, w: Where) -> Result<()> {
        match w {
            Where::Shared => self.acquire(0, self.held.len() - 1),
            Where::Parts(a, b) => self.acquire(a, b),
        }
    }

    fn data(&self, place: Place) -> &Tables {
        // SAFETY: (`partition`'s rule) a partition's data is read while owning it; the
        // shared tables while owning one partition at least, so no writer (which owns
        // all) runs. No `&mut` into the data outlives a call of this worker.
        match place {
            Place::Part(p) => {
                assert!(self.held[p].is_some(), "partition read without owning it");
                unsafe { self.e.parts[p].data() }
            }
            Place::Shared => {
                assert!(
                    self.owned > 0,
                    "shared table read without owning a partition"
                );
                unsafe { self.e.shared.data() }
            }
        }
    }

    #[allow(clippy::mut_from_ref)]
    fn data_mut(&self, place: Place) -> &mut Tables {
        // SAFETY: as `data`; the shared tables are written only while owning every
        // partition, so no other transaction reads them. Each caller uses the reference
        // for one operation and drops it before taking another.
        match place {
            Place::Part(p) => {
                assert!(
                    self.held[p].is_some(),
                    "partition written without owning it"
                );
                unsafe { self.e.parts[p].data_mut() }
            }
            Place::Shared => {
                assert!(
                    self.owned == self.held.len(),
                    "shared table written without owning every partition"
                );
                unsafe { self.e.shared.data_mut() }
            }
        }
    }

    fn places(w: Where) -> impl Iterator<Item = Place> {
        let (shared, a, b) = match w {
            Where::Shared => (true, 1, 0),
            Where::Parts(a, b) => (false, a, b),
        };
        shared
            .then_some(Place::Shared)
            .into_iter()
            .chain((a..=b).map(Place::Part))
    }

    /// `key` as a [`Key`]: [`api::Session`] has refused longer keys (a longer one here
    /// is a caller's bug, and `from_bytes` panics on it).
    fn key(key: &[u8]) -> Key {
        Key::from_bytes(key)
    }
}

impl Worker for PartitionedWorker<'_> {
    fn schema(&self) -> &api::Schema {
        &self.e.schema
    }

    fn begin(&mut self) -> Result<()> {
        assert!(!self.in_txn, "begin inside a transaction");
        self.in_txn = true;
        self.undo.clear();
        self.cmd_type = None;
        // Retrying an out-of-order abort: take its whole set now, in order.
        let set = std::mem::take(&mut self.next_set);
        for p in set {
            self.acquire(p, p)?;
        }
        Ok(())
    }

    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let k = Self::key(key);
        let w = self.parts_of(table, 0, key);
        self.for_read(w)?;
        for place in Self::places(w) {
            if let Some(r) = self.data(place).tables[table.0 as usize].primary.get(&k) {
                f(r);
                return Ok(true);
            }
        }
        Ok(false)
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
        let t = index.table.0 as usize;
        debug_assert!(api::session::scan_checked(&self.e.schema, index));
        let w = self.parts_of_range(index, lo, hi);
        self.for_read(w)?;
        let single = match w {
            Where::Shared => Some(Place::Shared),
            Where::Parts(a, b) if a == b => Some(Place::Part(a)),
            _ => None,
        };
        if let Some(place) = single {
            return self.data(place).tables[t].scan(index.index, lo, hi, dir, limit, f);
        }
        // Several partitions: up to `limit` rows from each, merged in key order.
        let mut rows: Vec<(Key, Box<[u8]>)> = Vec::new();
        for place in Self::places(w) {
            self.data(place).tables[t].scan(index.index, lo, hi, dir, limit, &mut |k, r| {
                rows.push((Key::from_bytes(k), r.into()));
                true
            })?;
        }
        match dir {
            Dir::Forward => rows.sort_unstable_by_key(|x| x.0),
            Dir::Backward => rows.sort_unstable_by_key(|x| std::cmp::Reverse(x.0)),
        }
        let mut n = 0;
        for (k, r) in rows.iter().take(limit) {
            n += 1;
            if !f(k, r) {
                break;
            }
        }
        Ok(n)
    }

    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        let def = self.e.schema.table(table);
        if row.len() != def.row_size {
            return Err(Error::fatal(format!(
                "row of {} bytes, table {} wants {}",
                row.len(),
                def.name,
                def.row_size
            )));
        }
        let k = Self::key(key);
        let place = match def.partitioning {
            None => {
                self.for_write(Where::Shared)?;
                Place::Shared
            }
            Some(pt) => {
                let n = self.held.len();
                let Some(v) = (pt.of_key)(0, key).or_else(|| pt.of_row.map(|f| f(row))) else {
                    return Err(Error::fatal(format!(
                        "table {}: neither the key nor the row gives a partition",
                        def.name
                    )));
                };
                let p = pt.partition(v, n);
                // A secondary key must lie where the row lies, or scans by it would
                // look in the wrong partition.
                for (i, s) in def.secondary.iter().enumerate() {
                    let mut sk = Key::new();
                    (s.key_of)(row, &mut sk);
                    if let Some(sv) = (pt.of_key)(i as u16 + 1, &sk) {
                        if pt.partition(sv, n) != p {
                            return Err(Error::fatal(format!(
                                "table {}: index {} puts a row in another partition than its key",
                                def.name, s.name
                            )));
                        }
                    }
                }
                self.acquire(p, p)?;
                Place::Part(p)
            }
        };
        self.data_mut(place).tables[table.0 as usize].insert(&k, row)?;
        self.undo.push(Undo::Inserted(place, table, k));
        Ok(())
    }

    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        let k = Self::key(key);
        let w = self.parts_of(table, 0, key);
        self.for_write(w)?;
        for place in Self::places(w) {
            if let Some(old) = self.data_mut(place).tables[table.0 as usize].update(&k, f)? {
                self.undo.push(Undo::Updated(place, table, k, old));
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        let k = Self::key(key);
        let w = self.parts_of(table, 0, key);
        self.for_write(w)?;
        for place in Self::places(w) {
            if let Some(old) = self.data_mut(place).tables[table.0 as usize].delete(&k) {
                self.undo.push(Undo::Deleted(place, table, k, old));
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn commit(&mut self) -> Result<()> {
        assert!(self.in_txn, "commit outside a transaction");
        // Logged while the partitions are still owned: the log order is a serial order.
        // A transaction that wrote nothing changes nothing to replay.
        let (mut wait, mut full) = (None, None);
        if !self.undo.is_empty() {
            if let Some(lg) = self.e.active_logger() {
                let Some(ty) = self.cmd_type else {
                    return Err(Error::fatal(
                        "the partitioned engine logs commands, and a writing transaction came without its command (Worker::command): it cannot be made durable",
                    ));
                };
                let a = lg.append(ty, &self.cmd)?;
                if self.e.sync {
                    wait = Some((lg, a.n));
                } else if a.full {
                    full = Some((lg, a.n));
                }
            }
        }
        let c = if self.owned > 1 {
            &self.stats.multi_partition_commits
        } else {
            &self.stats.single_partition_commits
        };
        WorkerStats::add(c, 1);
        self.undo.clear();
        self.release();
        // Waits after letting the partitions go: a later transaction that sees this one's
        // writes logs after it, so its own wait covers this command too. A full buffer
        // (the log is behind the commits) waits until the flusher took it; `Sync` waits
        // for more.
        if let Some((lg, n)) = wait {
            lg.wait_durable(n)?;
        }
        if let Some((lg, n)) = full {
            lg.wait_taken(n)?;
        }
        Ok(())
    }

    fn abort(&mut self) {
        if !self.in_txn {
            return;
        }
        while let Some(u) = self.undo.pop() {
            match u {
                Undo::Inserted(place, t, k) => {
                    self.data_mut(place).tables[t.0 as usize]
                        .delete(&k)
                        .expect("undo of an insert: row present");
                }
                Undo::Updated(place, t, k, old) => {
                    self.data_mut(place).tables[t.0 as usize].restore(&k, old);
                }
                Undo::Deleted(place, t, k, old) => {
                    self.data_mut(place).tables[t.0 as usize]
                        .insert(&k, &old)
                        .expect("undo of a delete: key free");
                }
            }
        }
        WorkerStats::add(&self.stats.aborts, 1);
        self.release();
    }

    fn wants_commands(&self) -> bool {
        self.e.logs_commands()
    }

    fn command(&mut self, txn_type: u32, input: &[u8]) {
        self.cmd_type = Some(txn_type);
        self.cmd.clear();
        self.cmd.extend_from_slice(input);
    }
}

impl Drop for PartitionedWorker<'_> {
    fn drop(&mut self) {
        self.abort();
    }
}
