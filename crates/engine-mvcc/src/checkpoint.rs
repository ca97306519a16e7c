//! `checkpoint`: a snapshot of the committed rows (the newest committed version of
//! each key), taken in the background while transactions run (Hekaton's checkpoints,
//! fuzzy as Silo's), so that recovery reads the newest checkpoint plus the log after it
//! and the log's prefix can be freed. The file format, its writer and reader, when one
//! is due and the freeing of the log are `storage::valuelog::checkpoint`, shared with
//! the memory engine; this module brings the scan and the timestamp it waits for.
//!
//! `mvcc.ckpt`: a file header (`HEADER`, magic `"OLTPVCKP"`, engine `"mvcc"`, the log's
//! database id and schema fingerprint), blocks in the log's format holding one put per
//! row (stamped with its version's commit timestamp), an end block (`log_from`,
//! `tomb_from`, the timestamp `E` every row is at or below, durable when the file was
//! renamed, and the row count).
//!
//! Why the scan plus the log is the committed state (docs/design/mvcc-engine.md,
//! Checkpoints): the scan starts after the flusher published its `Cut`. Every commit
//! with a timestamp `<= D` (the cut's) was stamped before the cut (the flusher waited
//! for its slot to clear, after its last append); a version the scan did not see as
//! committed (not yet stamped, or linked after the scan passed its key) is appended to
//! the log after the scan started, so after the block ending at `log_from`; replay
//! keeps the highest timestamp of each key. A delete before `log_from` with an older
//! write of its key after it is in `tomb_from..log_from`, whose deletes recovery reads.
//!
//! Must never: write a version that is not committed, or a row of a timestamp that is
//! not durable when the file is renamed.

use crate::catalog::{Catalog, Table};
use crate::log::{self, RecordRef, TsClock};
use crate::version::{is_committed, Obj};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use storage::logfile::{Header, HeaderFormat};
use storage::valuelog::checkpoint::{self as vc, CheckpointFormat};
pub use storage::valuelog::checkpoint::{Done, End};
use storage::Storage;

pub const CKPT_FILE: &str = "mvcc.ckpt";
/// The checkpoint being written (renamed to `CKPT_FILE` when whole).
pub const CKPT_TMP: &str = "mvcc.ckpt.tmp";
pub const CKPT_MAGIC: &[u8; 8] = b"OLTPVCKP";
pub const CKPT_VERSION: u32 = 1;

pub const HEADER: HeaderFormat = HeaderFormat {
    magic: CKPT_MAGIC,
    version: CKPT_VERSION,
    tag: Some(*log::ENGINE_TAG),
    label: "checkpoint file",
    kind: "checkpoint",
    what: "an mvcc-engine checkpoint",
    version_hint: "",
    others: &[&storage::valuelog::identity::memory::CKPT, &log::HEADER],
};

/// The file, in the log's blocks and records.
pub const FORMAT: CheckpointFormat = CheckpointFormat {
    file: CKPT_FILE,
    tmp: CKPT_TMP,
    header: &HEADER,
    blocks: &log::BLOCKS,
    records: &log::RECORDS,
};

/// The checkpoint file beside the log (removed with it on `--reload` and `drop`).
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
            ts: r.stamp,
            table: r.table,
            key: r.key,
            row: Some(r.body),
        })
    })
}

/// The mvcc engine's checkpointer (`vc::Checkpointer`, thread "mvcc-ckpt").
pub type Checkpointer = vc::Checkpointer<TsClock, Versions>;
/// The engine's checkpointer once started (`vc::Slot`).
pub type Slot = vc::Slot<TsClock, Versions>;

/// What the mvcc engine brings to a checkpoint: its scan of the newest versions.
pub struct Versions {
    pub catalog: Arc<Catalog>,
}

impl vc::Rows for Versions {
    fn scan(&self, w: &mut vc::Writer, stop: &AtomicBool) -> Result<bool, String> {
        for (ti, t) in self.catalog.tables.iter().enumerate() {
            let mut put = |key: &[u8], ts: u64, row: &[u8]| w.put(ti as u32, key, ts, row);
            if !scan_table(t, stop, &mut put)? {
                return Ok(false); // stopping
            }
        }
        Ok(true)
    }
}

/// What `scan_table` passes each (key, commit timestamp, row) to.
type PutFn<'a> = dyn FnMut(&[u8], u64, &[u8]) -> Result<(), String> + 'a;

/// Pass every key's newest committed version of `t` that is not a tombstone (key,
/// commit timestamp, row) to `put`, reading while transactions run. `Ok(false)`:
/// stopped.
fn scan_table(t: &Table, stop: &AtomicBool, put: &mut PutFn<'_>) -> Result<bool, String> {
    let mut one = |key: &[u8], v: u64| -> Result<(), String> {
        // SAFETY: reached from the index under the scan's pin: objects and versions are
        // freed only through the epoch.
        let o = unsafe { Obj::from_u64(v) };
        let mut p = o.head.load(Acquire);
        while !p.is_null() {
            // SAFETY: as above.
            let ver = unsafe { &*p };
            let b = ver.begin.load(Acquire);
            if is_committed(b) {
                // Committed versions never change; timestamps decrease along the
                // chain, so this is the key's newest. A tombstone is no row.
                if ver.tomb.load(Acquire) {
                    return Ok(());
                }
                return put(key, b, ver.row());
            }
            // Uncommitted, committing or aborted: its commit (if any) appends its
            // record after this read, so after the cut (see the module's comment).
            p = ver.next.load(Acquire);
        }
        Ok(())
    };
    // SAFETY: the index holds object addresses, allocated while the scan is pinned;
    // an object's key never changes.
    let key_of = |v: u64| unsafe { Obj::from_u64(v) }.key();
    memindex::index::scan_index(&t.primary, &key_of, stop, &mut one)
}
