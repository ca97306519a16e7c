//! `checkpoint::control`: the control file (`control`), the one small file that says
//! whether the load finished and where the last checkpoint's record lies, so recovery
//! refuses a log cut before it. Rewritten whole and atomically (`write_atomic`).

use crate::page::{get_u32, get_u64, put_u32, put_u64, PAGE_SIZE};
use api::{Error, Result};
use std::path::Path;
use storage::Storage;

pub const CONTROL: &str = "control";
const MAGIC: &[u8; 8] = b"OLTPDISK";
const VERSION: u32 = 1;
const BYTES: usize = 64;
// The checksum (`[48..52)`, the last field) lies inside the file.
const _: () = assert!(48 + 4 <= BYTES);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Created; the load has not finished (or the database is being created).
    Loading = 1,
    /// The load finished and was made durable.
    Ready = 2,
}

/// The control file's content. Layout (little-endian, 64 bytes): `[0..8)` magic,
/// `[8..12)` version, `[12]` state, `[13]` unlogged, `[16..24)` database id, `[24..32)`
/// last checkpoint LSN, `[32..40)` log segment bytes, `[40..48)` data file pages at the
/// last checkpoint, `[48..52)` crc32 of `[0..48)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Control {
    pub db_id: u64,
    pub state: State,
    /// A session runs with `--log off`: a crash now leaves nothing to recover from.
    pub unlogged: bool,
    pub checkpoint_lsn: u64,
    pub seg_bytes: u64,
    pub data_pages: u64,
}

impl Control {
    fn encode(&self) -> [u8; BYTES] {
        let mut b = [0u8; BYTES];
        b[..8].copy_from_slice(MAGIC);
        put_u32(&mut b, 8, VERSION);
        b[12] = self.state as u8;
        b[13] = self.unlogged as u8;
        put_u64(&mut b, 16, self.db_id);
        put_u64(&mut b, 24, self.checkpoint_lsn);
        put_u64(&mut b, 32, self.seg_bytes);
        put_u64(&mut b, 40, self.data_pages);
        let c = crc32fast::hash(&b[..48]);
        put_u32(&mut b, 48, c);
        b
    }

    /// The control file of the database in `dir`; `None` if there is none.
    pub fn read(st: &dyn Storage, dir: &Path) -> Result<Option<Control>> {
        let path = dir.join(CONTROL);
        if !st.exists(&path).map_err(crate::log::io_err)? {
            return Ok(None);
        }
        let b = st.read(&path).map_err(crate::log::io_err)?;
        let bad = |what: &str| Err(Error::fatal(format!("{}: {what}", path.display())));
        if b.len() != BYTES || &b[..8] != MAGIC {
            return bad("not an oltpscope disk-engine control file");
        }
        if crc32fast::hash(&b[..48]) != get_u32(&b, 48) {
            return bad("the control file is damaged (checksum)");
        }
        if get_u32(&b, 8) != VERSION {
            return bad(&format!(
                "control file version {}, this build reads {VERSION}",
                get_u32(&b, 8)
            ));
        }
        let state = match b[12] {
            1 => State::Loading,
            2 => State::Ready,
            _ => return bad("the control file is damaged (state)"),
        };
        let c = Control {
            db_id: get_u64(&b, 16),
            state,
            unlogged: b[13] != 0,
            checkpoint_lsn: get_u64(&b, 24),
            seg_bytes: get_u64(&b, 32),
            data_pages: get_u64(&b, 40),
        };
        if c.seg_bytes < PAGE_SIZE as u64 {
            return bad("the control file is damaged (segment size)");
        }
        Ok(Some(c))
    }

    /// Replace the control file atomically (old or new content after any crash).
    pub fn write(&self, st: &dyn Storage, dir: &Path) -> Result<()> {
        storage::write_atomic(st, dir, CONTROL, &self.encode()).map_err(crate::log::io_err)
    }
}
