//! An engine behind a pointer: what the driver and the workload kits run on.
//!
//! [`Engine`] is static (associated worker type, constants, `open`), so code generic
//! over it is compiled once per engine design: with seven designs and six kits, the
//! driver's run and every kit's transactions, loads and checks were compiled 42 and 7
//! times into the binary, most of its build time (issue 39). [`Database`] is the same
//! engine as a trait object and [`DynWorker`] its worker, so that code is compiled once
//! for all engines. The price is one indirect call per operation into the engine:
//! valgrind counts 0.3% and 0.7% more instructions per TPC-C and TPC-B transaction,
//! 0.9% fewer per micro-benchmark read (docs/PERFORMANCE.md, "Build and test costs",
//! session 58).

use crate::engine::{Command, Counted, Dir, Engine, EngineOptions, SqlDialect, TableSize, Worker};
use crate::error::Result;
use crate::key::Key;
use crate::schema::{IndexId, Schema, TableId};
use std::ops::{Bound, Range};
use std::sync::Arc;

/// A worker of any engine.
pub type DynWorker<'e> = Box<dyn Worker + 'e>;

/// An opened engine of any design: [`Engine`]'s per-database calls, object-safe.
pub trait Database: Send + Sync {
    /// [`Engine::NAME`].
    fn name(&self) -> &'static str;
    /// [`Engine::COUNTED`].
    fn counted(&self) -> Counted;
    /// [`Engine::schema`].
    fn schema(&self) -> &Schema;
    /// [`Engine::worker`].
    fn worker(&self, worker_id: usize) -> DynWorker<'_>;
    /// [`Engine::has_data`].
    fn has_data(&self) -> bool;
    /// [`Engine::load_done`].
    fn load_done(&self) -> Result<()>;
    /// [`Engine::recovered_commands`].
    fn recovered_commands(&self) -> Result<Vec<Command>>;
    /// [`Engine::replay_done`].
    fn replay_done(&self) -> Result<()>;
    /// [`Engine::shutdown`].
    fn shutdown(&self) -> Result<()>;
    /// [`Engine::table_sizes`].
    fn table_sizes(&self) -> Result<Vec<TableSize>>;
    /// [`Engine::stats`].
    fn stats(&self) -> serde_json::Value;
}

impl<E: Engine> Database for E {
    fn name(&self) -> &'static str {
        E::NAME
    }
    fn counted(&self) -> Counted {
        E::COUNTED
    }
    fn schema(&self) -> &Schema {
        Engine::schema(self)
    }
    fn worker(&self, worker_id: usize) -> DynWorker<'_> {
        Box::new(Engine::worker(self, worker_id))
    }
    fn has_data(&self) -> bool {
        Engine::has_data(self)
    }
    fn load_done(&self) -> Result<()> {
        Engine::load_done(self)
    }
    fn recovered_commands(&self) -> Result<Vec<Command>> {
        Engine::recovered_commands(self)
    }
    fn replay_done(&self) -> Result<()> {
        Engine::replay_done(self)
    }
    fn shutdown(&self) -> Result<()> {
        Engine::shutdown(self)
    }
    fn table_sizes(&self) -> Result<Vec<TableSize>> {
        Engine::table_sizes(self)
    }
    fn stats(&self) -> serde_json::Value {
        Engine::stats(self)
    }
}

/// [`Engine::open`] for a design chosen at run time.
pub type OpenFn = fn(Arc<Schema>, &EngineOptions) -> Result<Box<dyn Database>>;

/// [`OpenFn`] of `E`.
pub fn open<E: Engine>(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Box<dyn Database>> {
    Ok(Box::new(E::open(schema, opts)?))
}

/// Every call forwarded, the defaulted ones too, so an engine's own versions of them
/// (batches, partial rows, atomic adds) are what runs.
impl<W: Worker + ?Sized> Worker for Box<W> {
    fn schema(&self) -> &Schema {
        (**self).schema()
    }
    fn begin(&mut self) -> Result<()> {
        (**self).begin()
    }
    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        (**self).get(table, key, f)
    }
    fn prefetch(&mut self, table: TableId, key: &[u8], part: Option<Range<usize>>) {
        (**self).prefetch(table, key, part)
    }
    fn read_committed(&mut self) {
        (**self).read_committed()
    }
    fn read_only_committed(&mut self) {
        (**self).read_only_committed()
    }
    fn scan_parts(
        &mut self,
        index: IndexId,
        parts: &[crate::engine::KeyRange<'_>],
        sinks: &mut [&mut crate::engine::ScanSink<'_>],
    ) -> Result<bool> {
        (**self).scan_parts(index, parts, sinks)
    }
    fn sql_dialect(&self) -> Option<SqlDialect> {
        (**self).sql_dialect()
    }
    fn query(&mut self, sql: &str, f: &mut dyn FnMut(&[crate::typed::Value])) -> Result<()> {
        (**self).query(sql, f)
    }
    fn update_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: Range<usize>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool> {
        (**self).update_part(table, key, part, f)
    }
    fn get_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: Range<usize>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        (**self).get_part(table, key, part, f)
    }
    fn add_i64(
        &mut self,
        table: TableId,
        key: &[u8],
        at: usize,
        delta: i64,
    ) -> Result<Option<i64>> {
        (**self).add_i64(table, key, at, delta)
    }
    fn add_i64_blind(&mut self, table: TableId, key: &[u8], at: usize, delta: i64) -> Result<()> {
        (**self).add_i64_blind(table, key, at, delta)
    }
    fn batches(&self) -> bool {
        (**self).batches()
    }
    fn get_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: &dyn Fn(usize) -> Key,
        part: Option<Range<usize>>,
        f: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<usize> {
        (**self).get_batch(table, n, key, part, f)
    }
    fn update_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: &dyn Fn(usize) -> Key,
        part: Option<Range<usize>>,
        f: &mut dyn FnMut(usize, &mut [u8]),
    ) -> Result<usize> {
        (**self).update_batch(table, n, key, part, f)
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
        (**self).scan(index, lo, hi, dir, limit, f)
    }
    fn scan_part(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        part: Range<usize>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        (**self).scan_part(index, lo, hi, dir, limit, part, f)
    }
    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        (**self).insert(table, key, row)
    }
    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        (**self).update(table, key, f)
    }
    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        (**self).delete(table, key)
    }
    fn commit(&mut self) -> Result<()> {
        (**self).commit()
    }
    fn abort(&mut self) {
        (**self).abort()
    }
    fn wants_commands(&self) -> bool {
        (**self).wants_commands()
    }
    fn command(&mut self, txn_type: u32, input: &[u8]) {
        (**self).command(txn_type, input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that overrides every defaulted call and counts which ran, so that a
    /// forwarding [`Worker`] for `Box` that fell back to a default is caught.
    #[derive(Default)]
    struct Overrides {
        schema: Schema,
        calls: Vec<&'static str>,
    }

    impl Worker for Overrides {
        fn schema(&self) -> &Schema {
            &self.schema
        }
        fn begin(&mut self) -> Result<()> {
            self.calls.push("begin");
            Ok(())
        }
        fn get(&mut self, _: TableId, _: &[u8], _: &mut dyn FnMut(&[u8])) -> Result<bool> {
            self.calls.push("get");
            Ok(false)
        }
        fn prefetch(&mut self, _: TableId, _: &[u8], _: Option<Range<usize>>) {
            self.calls.push("prefetch");
        }
        fn read_committed(&mut self) {
            self.calls.push("read_committed");
        }
        fn read_only_committed(&mut self) {
            self.calls.push("read_only_committed");
        }
        fn sql_dialect(&self) -> Option<SqlDialect> {
            Some(SqlDialect::Sqlite)
        }
        fn query(&mut self, _: &str, _: &mut dyn FnMut(&[crate::typed::Value])) -> Result<()> {
            self.calls.push("query");
            Ok(())
        }
        fn update_part(
            &mut self,
            _: TableId,
            _: &[u8],
            _: Range<usize>,
            _: &mut dyn FnMut(&mut [u8]),
        ) -> Result<bool> {
            self.calls.push("update_part");
            Ok(true)
        }
        fn get_part(
            &mut self,
            _: TableId,
            _: &[u8],
            _: Range<usize>,
            _: &mut dyn FnMut(&[u8]),
        ) -> Result<bool> {
            self.calls.push("get_part");
            Ok(true)
        }
        fn add_i64(&mut self, _: TableId, _: &[u8], _: usize, _: i64) -> Result<Option<i64>> {
            self.calls.push("add_i64");
            Ok(None)
        }
        fn add_i64_blind(&mut self, _: TableId, _: &[u8], _: usize, _: i64) -> Result<()> {
            self.calls.push("add_i64_blind");
            Ok(())
        }
        fn batches(&self) -> bool {
            true
        }
        fn get_batch(
            &mut self,
            _: TableId,
            _: usize,
            _: &dyn Fn(usize) -> Key,
            _: Option<Range<usize>>,
            _: &mut dyn FnMut(usize, &[u8]),
        ) -> Result<usize> {
            self.calls.push("get_batch");
            Ok(0)
        }
        fn update_batch(
            &mut self,
            _: TableId,
            _: usize,
            _: &dyn Fn(usize) -> Key,
            _: Option<Range<usize>>,
            _: &mut dyn FnMut(usize, &mut [u8]),
        ) -> Result<usize> {
            self.calls.push("update_batch");
            Ok(0)
        }
        fn scan(
            &mut self,
            _: IndexId,
            _: Bound<&[u8]>,
            _: Bound<&[u8]>,
            _: Dir,
            _: usize,
            _: &mut dyn FnMut(&[u8], &[u8]) -> bool,
        ) -> Result<usize> {
            self.calls.push("scan");
            Ok(0)
        }
        fn scan_part(
            &mut self,
            _: IndexId,
            _: Bound<&[u8]>,
            _: Bound<&[u8]>,
            _: Dir,
            _: usize,
            _: Range<usize>,
            _: &mut dyn FnMut(&[u8], &[u8]) -> bool,
        ) -> Result<usize> {
            self.calls.push("scan_part");
            Ok(0)
        }
        fn insert(&mut self, _: TableId, _: &[u8], _: &[u8]) -> Result<()> {
            self.calls.push("insert");
            Ok(())
        }
        fn update(&mut self, _: TableId, _: &[u8], _: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
            self.calls.push("update");
            Ok(false)
        }
        fn delete(&mut self, _: TableId, _: &[u8]) -> Result<bool> {
            self.calls.push("delete");
            Ok(false)
        }
        fn commit(&mut self) -> Result<()> {
            self.calls.push("commit");
            Ok(())
        }
        fn abort(&mut self) {
            self.calls.push("abort");
        }
        fn wants_commands(&self) -> bool {
            true
        }
        fn command(&mut self, _: u32, _: &[u8]) {
            self.calls.push("command");
        }
    }

    #[test]
    fn a_boxed_worker_runs_the_engine_s_own_version_of_every_call() {
        // `Box<Overrides>`: the same forwarding code as `Box<dyn Worker>`, with the
        // calls readable afterwards.
        let mut b = Box::new(Overrides::default());
        let calls = {
            let w: &mut Box<Overrides> = &mut b;
            let t = TableId(0);
            let ix = IndexId { table: t, index: 0 };
            let (u, n) = (Bound::Unbounded, Bound::Unbounded);
            w.begin().unwrap();
            w.get(t, b"k", &mut |_| {}).unwrap();
            w.prefetch(t, b"k", None);
            w.read_committed();
            w.read_only_committed();
            w.query("", &mut |_| {}).unwrap();
            w.update_part(t, b"k", 0..1, &mut |_| {}).unwrap();
            w.get_part(t, b"k", 0..1, &mut |_| {}).unwrap();
            w.add_i64(t, b"k", 0, 1).unwrap();
            w.add_i64_blind(t, b"k", 0, 1).unwrap();
            w.get_batch(t, 0, &|_| Key::default(), None, &mut |_, _| {})
                .unwrap();
            w.update_batch(t, 0, &|_| Key::default(), None, &mut |_, _| {})
                .unwrap();
            w.scan(ix, u, n, Dir::Forward, 1, &mut |_, _| true).unwrap();
            w.scan_part(ix, u, n, Dir::Forward, 1, 0..1, &mut |_, _| true)
                .unwrap();
            w.insert(t, b"k", b"r").unwrap();
            w.update(t, b"k", &mut |_| {}).unwrap();
            w.delete(t, b"k").unwrap();
            w.command(0, b"");
            w.commit().unwrap();
            w.abort();
            assert!(w.batches() && w.wants_commands());
            assert_eq!(w.sql_dialect(), Some(SqlDialect::Sqlite));
            b.calls.clone()
        };
        assert_eq!(
            calls,
            [
                "begin",
                "get",
                "prefetch",
                "read_committed",
                "read_only_committed",
                "query",
                "update_part",
                "get_part",
                "add_i64",
                "add_i64_blind",
                "get_batch",
                "update_batch",
                "scan",
                "scan_part",
                "insert",
                "update",
                "delete",
                "command",
                "commit",
                "abort"
            ]
        );
    }
}
