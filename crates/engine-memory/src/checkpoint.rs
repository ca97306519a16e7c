//! `checkpoint`: a snapshot of the committed rows, taken in the background while
//! transactions run (Silo's and Hekaton's fuzzy checkpoints), so that recovery reads
//! the newest checkpoint plus the log after it and the log's prefix can be freed.
//!
//! The file `memory.ckpt`: a file header (`HEADER`, magic `"OLTPMCKP"`, the log's
//! database id and schema fingerprint), blocks in the log's format
//! holding one put record per row (the row's TID), and a last block of kind
//! `BLOCK_END` holding `End`; the format, its writer and reader and the schedule
//! are `storage::valuelog::checkpoint`, shared with the mvcc engine. Written as `memory.ckpt.tmp`, fsync'd, renamed,
//! directory fsync'd: it is whole or absent, so any invalid block, a missing end block,
//! bytes after it or a row count that differs is a damaged file, refused.
//!
//! Why a fuzzy scan plus the log is the committed state (details in
//! docs/design/memory-engine.md, Checkpoints): the scan starts after the logger
//! published `Cut` (`log_from`); a commit installs its versions before it appends its
//! records, so a version the scan did not see is in a block at or after `log_from`, and
//! replay keeps the highest TID of each key. A delete's record may precede `log_from`
//! while an older write of its key follows it; such deletes are in `tomb_from..log_from`
//! (`log::Cut`), which recovery reads for its deletes only. The scan's rows are all of
//! durable epochs: the checkpoint is renamed only after the epoch current at the end of
//! the scan is durable.
//!
//! Must never: free log bytes a durable checkpoint does not cover, or leave a file
//! that recovery could take for whole when it is not.

use crate::catalog::{Catalog, TableData};
use crate::log::{self, EpochClock, RecordRef};
use crate::record::{Rec, ABSENT, FLAGS};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use storage::logfile::Header;
use storage::valuelog::checkpoint::{self as vc, CheckpointFormat};
pub use storage::valuelog::checkpoint::{Done, End, CHECK_INTERVAL, DEFAULT_LOG_BYTES};
use storage::Storage;

/// The file's names and header (`HEADER`) live in `storage` (the mvcc engine refuses a
/// memory-engine checkpoint by name without depending on this engine).
pub use storage::valuelog::identity::memory::{
    CKPT as HEADER, CKPT_FILE, CKPT_MAGIC, CKPT_TMP, CKPT_VERSION,
};

/// The file, in the log's blocks and records.
pub const FORMAT: CheckpointFormat = CheckpointFormat {
    file: CKPT_FILE,
    tmp: CKPT_TMP,
    header: &HEADER,
    blocks: &log::BLOCKS,
    records: &log::RECORDS,
};

/// The checkpoint file beside the log (removed with it on `--reload`).
pub const SIDE: storage::logdir::SideFile = storage::logdir::SideFile {
    name: CKPT_FILE,
    header: &HEADER,
};

/// Read the checkpoint in `dir` of the log whose header is `log` (None: there is
/// none), passing each row to `put`: its end and its file's length. Any damage is
/// refused in one line.
pub fn read(
    st: &dyn Storage,
    dir: &Path,
    log: &Header,
    mut put: impl FnMut(&RecordRef<'_>) -> Result<(), String>,
) -> Result<Option<(End, u64)>, String> {
    vc::read(st, dir, &FORMAT, log, |r| {
        put(&RecordRef {
            tid: r.stamp,
            table: r.table,
            key: r.key,
            body: log::Body::Put(r.body),
        })
    })
}

/// The memory engine's checkpointer (`vc::Checkpointer`, thread "mem-ckpt").
pub type Checkpointer = vc::Checkpointer<EpochClock, Rows>;
/// The engine's checkpointer once started (`vc::Slot`).
pub type Slot = vc::Slot<EpochClock, Rows>;

/// What the memory engine brings to a checkpoint: its scan of the rows.
pub struct Rows {
    pub catalog: Arc<Catalog>,
}

impl vc::Rows for Rows {
    fn scan(&self, w: &mut vc::Writer, stop: &AtomicBool) -> Result<bool, String> {
        for (ti, t) in self.catalog.tables.iter().enumerate() {
            let mut put = |key: &[u8], tid: u64, row: &[u8]| w.put(ti as u32, key, tid, row);
            if !scan_table(t, stop, &mut put)? {
                return Ok(false); // stopping
            }
        }
        Ok(true)
    }
}

/// Takes each row (key, TID, row) of a scan.
type RowSink<'a> = dyn FnMut(&[u8], u64, &[u8]) -> Result<(), String> + 'a;

/// Pass every present row of `t` (key, TID, row) to `put`, reading while
/// transactions run. `Ok(false)`: stopped.
fn scan_table(t: &TableData, stop: &AtomicBool, put: &mut RowSink<'_>) -> Result<bool, String> {
    let mut row = vec![0u8; t.row_size];
    // A consistent (TID, row) of a record reached from the index while pinned;
    // absent records (uncommitted inserts, deletes) are not rows.
    let mut one = |key: &[u8], v: u64| -> Result<(), String> {
        // SAFETY: an indexed record read while pinned (freed only through the epoch).
        let tid = unsafe { Rec::from_u64(v) }.stable_read(&mut row);
        if tid & ABSENT != 0 {
            return Ok(());
        }
        assert!(tid & FLAGS == 0, "a present row with flags {tid:#x}");
        put(key, tid, &row)
    };
    // SAFETY: a keyed record (hash table), linked when its bucket was read and so
    // allocated while the scan is pinned; its key area never changes.
    let key_of = |v: u64| unsafe { Rec::from_u64(v).key(t.words) };
    memindex::index::scan_index(&t.primary, &key_of, stop, &mut one)
}
