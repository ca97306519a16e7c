//! The one entry point per database operation. Every begin, commit, abort, index probe,
//! scan, insert, update and delete a workload issues passes through a method here, which
//! marks the operation for the profiler and the tracer (`probe`), tells `rt`'s scheduler
//! (if the thread runs transactions as coroutines) that an operation begins, a point
//! where it may switch (STEPS parks it in the team of that operation and table), and then enters the engine.
//! It also counts the records each operation hands over or changes (`txnstats`, for
//! `--stats`: a read per row a get or scan returns, a write per row inserted, updated
//! or deleted), so every engine is counted the same way. And it refuses, once for every
//! engine, what no engine can do: a key longer than [`MAX_KEY_LEN`], a scan over a hash
//! index or over an index the table does not have; engines only `debug_assert!` these.

use crate::engine::{Dir, Worker};
use crate::error::{Error, Result};
use crate::key::{Key, MAX_KEY_LEN};
use crate::row::{self, Pod};
use crate::schema::{IndexId, IndexKind, Schema, TableId};
use probe::Op;
use std::ops::Bound;

/// Marks an operation from creation to drop, for the tracer (`probe`); a coroutine
/// scheduler may switch at its entry (the tracer keeps each coroutine's open marks
/// apart: `probe::client::CONTEXT`).
struct Mark(Op);

/// `obj` names the table or index for STEPS teams (`rt::NO_OBJ` for operations whose
/// code is the same on every table: the paper's Table 2).
#[inline(always)]
fn mark(o: Op, obj: u64) -> Mark {
    rt::point(rt::Point::OpEntry(o as u32, obj));
    probe::op_begin(o);
    Mark(o)
}

impl Drop for Mark {
    #[inline(always)]
    fn drop(&mut self) {
        probe::op_end(self.0);
    }
}

/// Marks an engine's index lookup inside an update, insert or delete (finding the row,
/// or checking a key is free) as an index probe nested in that operation: the tracer
/// charges code to the innermost operation, so the descent counts as an index probe, as
/// in the Wonderland paper's categories. Not a switch point for coroutine schedulers.
pub struct Descent(());

#[inline(always)]
pub fn descent() -> Descent {
    probe::op_begin(Op::IndexProbe);
    Descent(())
}

impl Drop for Descent {
    #[inline(always)]
    fn drop(&mut self) {
        probe::op_end(Op::IndexProbe);
    }
}

/// A key no engine stores (keys are at most [`MAX_KEY_LEN`] bytes): refused before the
/// engine sees it.
#[inline]
fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(key_too_long(key.len()));
    }
    Ok(())
}

#[cold]
fn key_too_long(len: usize) -> Error {
    Error::fatal(format!("key of {len} bytes, longer than {MAX_KEY_LEN}"))
}

/// What every engine's scan requires: bounds no longer than a key, an index the table
/// has, and one in key order (a hash primary index has none).
fn check_scan(schema: &Schema, index: IndexId, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<()> {
    for b in [lo, hi] {
        if let Bound::Included(k) | Bound::Excluded(k) = b {
            check_key(k)?;
        }
    }
    match scan_refusal(schema, index) {
        Some(why) => Err(Error::fatal(why)),
        None => Ok(()),
    }
}

/// Why no engine can scan `index`, if it cannot.
fn scan_refusal(schema: &Schema, index: IndexId) -> Option<String> {
    let def = schema.table(index.table);
    if index.index == 0 && def.primary == IndexKind::Hash {
        return Some(format!("scan over the hash index of table {}", def.name));
    }
    if index.index as usize > def.secondary.len() {
        return Some(format!("table {} has no index {}", def.name, index.index));
    }
    None
}

/// The preconditions [`Session`] has checked before an engine's `scan`, for the engine
/// to `debug_assert!` (never a user error by the time the engine runs).
pub fn scan_checked(schema: &Schema, index: IndexId) -> bool {
    scan_refusal(schema, index).is_none()
}

pub struct Session<W: Worker> {
    w: W,
    txn_type: u32,
    in_txn: bool,
    query_threads: usize,
}

impl<W: Worker> Session<W> {
    pub fn new(w: W) -> Self {
        Session {
            w,
            txn_type: 0,
            in_txn: false,
            query_threads: 1,
        }
    }

    pub fn in_txn(&self) -> bool {
        self.in_txn
    }

    /// Whether the engine logs commands ([`Worker::wants_commands`]).
    pub fn wants_commands(&self) -> bool {
        self.w.wants_commands()
    }

    /// Hand the engine the command of the transaction in progress ([`Worker::command`]).
    pub fn command(&mut self, txn_type: u32, input: &[u8]) {
        assert!(self.in_txn, "command outside a transaction");
        self.w.command(txn_type, input);
    }

    /// Begin a transaction of workload-defined type `txn_type` (used by markers and
    /// per-type statistics).
    pub fn begin(&mut self, txn_type: u32) -> Result<()> {
        assert!(!self.in_txn, "begin inside a transaction");
        self.txn_type = txn_type;
        probe::txn_begin(txn_type);
        let _m = mark(Op::Begin, rt::NO_OBJ);
        self.w.begin()?;
        self.in_txn = true;
        Ok(())
    }

    pub fn get(&mut self, table: TableId, key: &[u8], mut f: impl FnMut(&[u8])) -> Result<bool> {
        check_key(key)?;
        let _m = mark(Op::IndexProbe, rt::obj(table.0, 0));
        let r = self.w.get(table, key, &mut f);
        if let Ok(true) = r {
            txnstats::add(txnstats::Counter::RecordsRead, 1);
        }
        r
    }

    /// Hint that `key` of `table` will be looked up soon ([`Worker::prefetch`]).
    #[inline]
    pub fn prefetch(&mut self, table: TableId, key: &[u8]) {
        self.w.prefetch(table, key, None);
    }

    /// Hint that the bytes `part` of `key`'s row in `table` will be read soon (by
    /// `get_part`, `get_field` or `update_part`): an engine may bring in those alone.
    #[inline]
    pub fn prefetch_part(&mut self, table: TableId, key: &[u8], part: std::ops::Range<usize>) {
        self.w.prefetch(table, key, Some(part));
    }

    /// The rest of this transaction needs only isolation level 1
    /// ([`Worker::read_committed`]).
    #[inline]
    pub fn read_committed(&mut self) {
        self.w.read_committed();
    }

    /// The rest of this transaction is an analytical query's: reads only, each of
    /// committed rows ([`Worker::read_only_committed`]).
    #[inline]
    pub fn read_only_committed(&mut self) {
        self.w.read_only_committed();
    }

    /// Point lookup of the bytes `part` of the row only ([`Worker::get_part`]).
    pub fn get_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        mut f: impl FnMut(&[u8]),
    ) -> Result<bool> {
        check_key(key)?;
        let _m = mark(Op::IndexProbe, rt::obj(table.0, 0));
        let r = self.w.get_part(table, key, part, &mut f);
        if let Ok(true) = r {
            txnstats::add(txnstats::Counter::RecordsRead, 1);
        }
        r
    }

    /// Point lookup of one field: the `F` at byte `offset` of the row (`offset_of!`).
    pub fn get_field<F: Pod>(
        &mut self,
        table: TableId,
        key: &[u8],
        offset: usize,
    ) -> Result<Option<F>> {
        let mut out = None;
        self.get_part(table, key, offset..offset + std::mem::size_of::<F>(), |b| {
            out = Some(bytemuck::pod_read_unaligned::<F>(b))
        })?;
        Ok(out)
    }

    /// Read-modify-write of the bytes `part` of the row only ([`Worker::update_part`]).
    pub fn update_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        mut f: impl FnMut(&mut [u8]),
    ) -> Result<bool> {
        check_key(key)?;
        let _m = mark(Op::Update, rt::NO_OBJ);
        let r = self.w.update_part(table, key, part, &mut f);
        if let Ok(true) = r {
            txnstats::add(txnstats::Counter::RecordsWritten, 1);
        }
        r
    }

    /// Point lookup of the row's head: its first `size_of::<H>()` bytes as an `H`, a type
    /// laid out as the row's leading columns (an engine may read no more of the row).
    pub fn get_head<H: Pod>(&mut self, table: TableId, key: &[u8]) -> Result<Option<H>> {
        let mut out = None;
        self.get_part(table, key, 0..std::mem::size_of::<H>(), |b| {
            out = Some(row::read::<H>(b))
        })?;
        Ok(out)
    }

    /// Read-modify-write of the row's head as an `H` (see [`Session::get_head`]).
    pub fn update_head<H: Pod>(
        &mut self,
        table: TableId,
        key: &[u8],
        mut f: impl FnMut(&mut H),
    ) -> Result<bool> {
        self.update_part(table, key, 0..std::mem::size_of::<H>(), |b| {
            with_pod_mut(b, &mut f)
        })
    }

    /// Point lookup copying the row out as a `T`.
    pub fn get_row<T: Pod>(&mut self, table: TableId, key: &[u8]) -> Result<Option<T>> {
        let mut out = None;
        self.get(table, key, |b| out = Some(row::read::<T>(b)))?;
        Ok(out)
    }

    /// Point lookups of `n` keys (`key(i)`): `f(i, row)` for each present, in the order
    /// of `i`; returns how many were present ([`Worker::get_batch`]). An engine that does
    /// not batch ([`Worker::batches`]) gets exactly the loop of [`Session::get`]s.
    pub fn get_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: impl Fn(usize) -> Key,
        mut f: impl FnMut(usize, &[u8]),
    ) -> Result<usize> {
        if !self.w.batches() {
            let mut found = 0;
            for i in 0..n {
                found += self.get(table, &key(i), |b| f(i, b))? as usize;
            }
            return Ok(found);
        }
        let _m = mark(Op::IndexProbe, rt::obj(table.0, 0));
        let r = self.w.get_batch(table, n, &key, None, &mut f);
        if let Ok(found) = r {
            txnstats::add(txnstats::Counter::RecordsRead, found as u64);
        }
        r
    }

    /// [`Session::get_batch`] of the bytes `part` of each row only (as [`Session::get_part`]).
    pub fn get_part_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: impl Fn(usize) -> Key,
        part: std::ops::Range<usize>,
        mut f: impl FnMut(usize, &[u8]),
    ) -> Result<usize> {
        if !self.w.batches() {
            let mut found = 0;
            for i in 0..n {
                found += self.get_part(table, &key(i), part.clone(), |b| f(i, b))? as usize;
            }
            return Ok(found);
        }
        let _m = mark(Op::IndexProbe, rt::obj(table.0, 0));
        let r = self.w.get_batch(table, n, &key, Some(part), &mut f);
        if let Ok(found) = r {
            txnstats::add(txnstats::Counter::RecordsRead, found as u64);
        }
        r
    }

    /// Read-modify-writes of `n` keys' rows as `T`s, in the order of `i` (a key given
    /// twice is changed twice); returns how many were present ([`Worker::update_batch`]).
    /// An engine that does not batch gets exactly the loop of [`Session::update_row`]s.
    pub fn update_row_batch<T: Pod>(
        &mut self,
        table: TableId,
        n: usize,
        key: impl Fn(usize) -> Key,
        mut f: impl FnMut(usize, &mut T),
    ) -> Result<usize> {
        if !self.w.batches() {
            let mut found = 0;
            for i in 0..n {
                found += self.update_row(table, &key(i), |r: &mut T| f(i, r))? as usize;
            }
            return Ok(found);
        }
        let _m = mark(Op::Update, rt::NO_OBJ);
        let r = self.w.update_batch(table, n, &key, None, &mut |i, b| {
            with_pod_mut(b, &mut |r: &mut T| f(i, r))
        });
        if let Ok(found) = r {
            txnstats::add(txnstats::Counter::RecordsWritten, found as u64);
        }
        r
    }

    /// [`Session::update_row_batch`] of the rows' heads as `H`s (see
    /// [`Session::get_head`]); an engine that does not batch gets exactly the loop of
    /// [`Session::update_head`]s.
    pub fn update_head_batch<H: Pod>(
        &mut self,
        table: TableId,
        n: usize,
        key: impl Fn(usize) -> Key,
        mut f: impl FnMut(usize, &mut H),
    ) -> Result<usize> {
        if !self.w.batches() {
            let mut found = 0;
            for i in 0..n {
                found += self.update_head(table, &key(i), |r: &mut H| f(i, r))? as usize;
            }
            return Ok(found);
        }
        let _m = mark(Op::Update, rt::NO_OBJ);
        let part = 0..std::mem::size_of::<H>();
        let r = self
            .w
            .update_batch(table, n, &key, Some(part), &mut |i, b| {
                with_pod_mut(b, &mut |r: &mut H| f(i, r))
            });
        if let Ok(found) = r {
            txnstats::add(txnstats::Counter::RecordsWritten, found as u64);
        }
        r
    }

    pub fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        check_scan(self.w.schema(), index, lo, hi)?;
        let _m = mark(Op::Scan, rt::obj(index.table.0, index.index));
        let r = self.w.scan(index, lo, hi, dir, limit, &mut f);
        if let Ok(n) = r {
            txnstats::add(txnstats::Counter::RecordsRead, n as u64);
        }
        r
    }

    /// Threads a query's scans may use ([`Session::scan_parts`]); 1 unless set.
    pub fn query_threads(&self) -> usize {
        self.query_threads
    }

    /// Let a query's scans use `n` threads (at least 1) from now on (a setting of the
    /// session, as a connection's; `exec` reads it).
    pub fn set_query_threads(&mut self, n: usize) {
        self.query_threads = n.max(1);
    }

    /// Scan the key ranges `parts` of `index` on a thread each within this transaction,
    /// part `i`'s rows to `sinks[i]` ([`Worker::scan_parts`]); `Ok(false)`: the engine
    /// cannot, and nothing was scanned.
    pub fn scan_parts(
        &mut self,
        index: IndexId,
        parts: &[crate::engine::KeyRange<'_>],
        sinks: &mut [&mut crate::engine::ScanSink<'_>],
    ) -> Result<bool> {
        assert_eq!(parts.len(), sinks.len(), "a sink per part");
        for &(lo, hi) in parts {
            check_scan(self.w.schema(), index, lo, hi)?;
        }
        let _m = mark(Op::Scan, rt::obj(index.table.0, index.index));
        let mut counts: Vec<Padded<u64>> = sinks.iter().map(|_| Padded(0)).collect();
        let mut counted: Vec<Box<crate::engine::ScanSink<'_>>> = sinks
            .iter_mut()
            .zip(counts.iter_mut())
            .map(|(f, n)| {
                Box::new(move |k: &[u8], r: &[u8]| {
                    n.0 += 1;
                    f(k, r)
                }) as Box<crate::engine::ScanSink<'_>>
            })
            .collect();
        let mut refs: Vec<&mut crate::engine::ScanSink<'_>> =
            counted.iter_mut().map(|b| &mut **b as _).collect();
        let ran = self.w.scan_parts(index, parts, &mut refs)?;
        drop(refs);
        drop(counted);
        txnstats::add(
            txnstats::Counter::RecordsRead,
            counts.iter().map(|n| n.0).sum(),
        );
        Ok(ran)
    }

    /// The SQL dialect the engine runs ([`Worker::sql_dialect`]); `None`: no SQL.
    pub fn sql_dialect(&self) -> Option<crate::engine::SqlDialect> {
        self.w.sql_dialect()
    }

    /// Run one read-only SQL query in the transaction in progress ([`Worker::query`]);
    /// marked as a scan (of no particular table) for the profiler and the tracer.
    pub fn query(&mut self, sql: &str, mut f: impl FnMut(&[crate::typed::Value])) -> Result<usize> {
        assert!(self.in_txn, "query outside a transaction");
        let _m = mark(Op::Scan, rt::NO_OBJ);
        let mut n = 0;
        self.w.query(sql, &mut |r| {
            n += 1;
            f(r)
        })?;
        txnstats::add(txnstats::Counter::RecordsRead, n as u64);
        Ok(n)
    }

    /// [`Session::scan`] of the bytes `part` of each row only ([`Worker::scan_part`]).
    #[allow(clippy::too_many_arguments)]
    pub fn scan_part(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        part: std::ops::Range<usize>,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        check_scan(self.w.schema(), index, lo, hi)?;
        let _m = mark(Op::Scan, rt::obj(index.table.0, index.index));
        let r = self.w.scan_part(index, lo, hi, dir, limit, part, &mut f);
        if let Ok(n) = r {
            txnstats::add(txnstats::Counter::RecordsRead, n as u64);
        }
        r
    }

    pub fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        check_key(key)?;
        let _m = mark(Op::Insert, rt::obj(table.0, 0));
        let r = self.w.insert(table, key, row);
        if r.is_ok() {
            txnstats::add(txnstats::Counter::RecordsWritten, 1);
        }
        r
    }

    pub fn insert_row<T: Pod>(&mut self, table: TableId, key: &[u8], r: &T) -> Result<()> {
        self.insert(table, key, row::bytes(r))
    }

    pub fn update(
        &mut self,
        table: TableId,
        key: &[u8],
        mut f: impl FnMut(&mut [u8]),
    ) -> Result<bool> {
        check_key(key)?;
        let _m = mark(Op::Update, rt::NO_OBJ);
        let r = self.w.update(table, key, &mut f);
        if let Ok(true) = r {
            txnstats::add(txnstats::Counter::RecordsWritten, 1);
        }
        r
    }

    /// Adds `delta` to the `i64` at byte `at` of the row (`offset_of!`) and returns the
    /// new value; `None` if the row is absent ([`Worker::add_i64`]).
    pub fn add_i64(
        &mut self,
        table: TableId,
        key: &[u8],
        at: usize,
        delta: i64,
    ) -> Result<Option<i64>> {
        check_key(key)?;
        let _m = mark(Op::Update, rt::NO_OBJ);
        let r = self.w.add_i64(table, key, at, delta);
        if let Ok(Some(_)) = r {
            txnstats::add(txnstats::Counter::RecordsWritten, 1);
        }
        r
    }

    /// [`Session::add_i64`] without the new value: an engine may send it later, and then
    /// reports an absent row later ([`Worker::add_i64_blind`]).
    pub fn add_i64_blind(
        &mut self,
        table: TableId,
        key: &[u8],
        at: usize,
        delta: i64,
    ) -> Result<()> {
        check_key(key)?;
        let _m = mark(Op::Update, rt::NO_OBJ);
        let r = self.w.add_i64_blind(table, key, at, delta);
        if r.is_ok() {
            txnstats::add(txnstats::Counter::RecordsWritten, 1);
        }
        r
    }

    /// Read-modify-write of a row as a `T`.
    pub fn update_row<T: Pod>(
        &mut self,
        table: TableId,
        key: &[u8],
        mut f: impl FnMut(&mut T),
    ) -> Result<bool> {
        self.update(table, key, |b| with_pod_mut(b, &mut f))
    }

    pub fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        let _m = mark(Op::Delete, rt::obj(table.0, 0));
        let r = self.w.delete(table, key);
        if let Ok(true) = r {
            txnstats::add(txnstats::Counter::RecordsWritten, 1);
        }
        r
    }

    pub fn commit(&mut self) -> Result<()> {
        assert!(self.in_txn, "commit outside a transaction");
        let r = {
            let _m = mark(Op::Commit, rt::NO_OBJ);
            self.w.commit()
        };
        if r.is_err() {
            // A failed commit leaves the transaction to be rolled back.
            let _m = mark(Op::Abort, rt::NO_OBJ);
            self.w.abort();
        }
        self.in_txn = false;
        probe::txn_end(self.txn_type, r.is_ok());
        r
    }

    pub fn abort(&mut self) {
        if !self.in_txn {
            return;
        }
        {
            let _m = mark(Op::Abort, rt::NO_OBJ);
            self.w.abort();
        }
        self.in_txn = false;
        probe::txn_end(self.txn_type, false);
    }

    /// Run `body` as one transaction: begin, body, commit. On any error the transaction
    /// is aborted and the error returned (a conflict can then be retried by the caller).
    pub fn run<R>(
        &mut self,
        txn_type: u32,
        body: impl FnOnce(&mut Self) -> Result<R>,
    ) -> Result<R> {
        self.begin(txn_type)?;
        match body(self) {
            Ok(r) => {
                self.commit()?;
                Ok(r)
            }
            Err(e) => {
                self.abort();
                Err(e)
            }
        }
    }

    /// Like [`Session::run`], retrying conflict aborts after `rt`'s back-off (the one
    /// policy: the driver's run loop uses it too): given up after `max_tries` tries and
    /// at least [`RETRY_FLOOR`] of retrying. The floor is for a loaded machine: the
    /// transaction in the way may be off its core for milliseconds, longer than the
    /// back-off of `max_tries` tries lasts (a TPC-H load's two threads on the disk
    /// engine gave up so in a full test suite, 2026-11-29); past the tries, each retry
    /// sleeps a millisecond.
    pub fn run_retry<R>(
        &mut self,
        txn_type: u32,
        max_tries: usize,
        mut body: impl FnMut(&mut Self) -> Result<R>,
    ) -> Result<R> {
        // Salted by the session's address: concurrent sessions back off differently.
        let mut backoff = rt::Backoff::new(self as *const Self as u64 ^ txn_type as u64);
        let start = std::time::Instant::now();
        let mut tries = 0usize;
        loop {
            match self.run(txn_type, &mut body) {
                Err(Error::Conflict(why)) => {
                    tries += 1;
                    if tries >= max_tries {
                        if start.elapsed() >= RETRY_FLOOR {
                            return Err(Error::fatal(format!(
                                "transaction still conflicting after {tries} tries in {:.1} s ({why})",
                                start.elapsed().as_secs_f64()
                            )));
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    } else {
                        backoff.wait();
                    }
                }
                r => return r,
            }
        }
    }
}

impl<W: Worker> Drop for Session<W> {
    fn drop(&mut self) {
        self.abort();
    }
}

/// The least time [`Session::run_retry`] retries a conflicting transaction before it
/// gives up.
pub const RETRY_FLOOR: std::time::Duration = std::time::Duration::from_secs(2);

/// What a read-only query plan asks of a session, as a trait object: a plan written
/// against `&mut dyn Reader` is compiled once and runs on every engine, where one
/// written against `Session<W>` is compiled again for each engine's worker type. For
/// TPC-H's plans (scans of whole tables) a call through a pointer per operation costs
/// nothing next to the rows, and the engine calls the row callback through `dyn` in
/// either case ([`Worker::scan`]); the build is smaller (issue 39).
pub trait Reader {
    /// [`Session::scan`].
    fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize>;
    /// [`Session::get`].
    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool>;
    /// [`Session::sql_dialect`].
    fn sql_dialect(&self) -> Option<crate::engine::SqlDialect>;
    /// [`Session::query`].
    fn query(&mut self, sql: &str, f: &mut dyn FnMut(&[crate::typed::Value])) -> Result<usize>;
    /// [`Session::query_threads`].
    fn query_threads(&self) -> usize;
    /// [`Session::scan_parts`].
    fn scan_parts(
        &mut self,
        index: IndexId,
        parts: &[crate::engine::KeyRange<'_>],
        sinks: &mut [&mut crate::engine::ScanSink<'_>],
    ) -> Result<bool>;
}

impl<W: Worker> Reader for Session<W> {
    fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        Session::scan(self, index, lo, hi, dir, limit, f)
    }
    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Session::get(self, table, key, f)
    }
    fn sql_dialect(&self) -> Option<crate::engine::SqlDialect> {
        Session::sql_dialect(self)
    }
    fn query(&mut self, sql: &str, f: &mut dyn FnMut(&[crate::typed::Value])) -> Result<usize> {
        Session::query(self, sql, f)
    }
    fn query_threads(&self) -> usize {
        Session::query_threads(self)
    }
    fn scan_parts(
        &mut self,
        index: IndexId,
        parts: &[crate::engine::KeyRange<'_>],
        sinks: &mut [&mut crate::engine::ScanSink<'_>],
    ) -> Result<bool> {
        Session::scan_parts(self, index, parts, sinks)
    }
}

/// A value on cache lines of its own: the per-part state of a scan on several threads
/// (a row count, a part's rows), written for each row by one thread only, would
/// otherwise share a line with its neighbour's and bounce between the cores.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

/// Run `f` on `b` as a `T`: in place when the engine's bytes happen to be aligned for `T`
/// (rows of hundreds of bytes: two copies saved), through a copy otherwise.
#[inline]
fn with_pod_mut<T: Pod>(b: &mut [u8], f: &mut impl FnMut(&mut T)) {
    match bytemuck::try_from_bytes_mut::<T>(b) {
        Ok(r) => f(r),
        Err(_) => {
            let mut r = row::read::<T>(b);
            f(&mut r);
            row::write(&r, b);
        }
    }
}
