//! `log`: value logging with epoch-based group commit. Committing workers append value
//! records (TID, table, key, full row or delete marker) to their own buffer; a logger
//! thread drains all buffers, writes one checksummed block to the log file, fsyncs it and
//! publishes the durable epoch. `Sync` commits wait until their epoch is durable.
//!
//! File format (all integers little-endian; see docs/design/memory-engine.md):
//! file header `b"OLTPMLOG"`, `u32` version, `u32` zero; then blocks: `u32` magic
//! `BLOCK_MAGIC`, `u32` payload bytes, `u64` durable epoch, `u32` record count, `u32`
//! CRC-32 of the first 20 header bytes and the payload; payload: records `u64` tid,
//! `u32` table, `u32` row bytes, `u8` kind (1 put, 2 delete), `u8` key bytes, key, row.
//!
//! This module must never hold a worker's buffer lock while writing to the file, and
//! never report an epoch durable before the block covering it is fsync'd.

use crate::epoch::Epochs;
use api::{Error, Result};
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub const FILE_MAGIC: &[u8; 8] = b"OLTPMLOG";
pub const FORMAT_VERSION: u32 = 1;
pub const BLOCK_MAGIC: u32 = 0x4B4C_424D; // "MBLK"
pub const FILE_HEADER_BYTES: usize = 16;
pub const BLOCK_HEADER_BYTES: usize = 24;
pub const RECORD_HEADER_BYTES: usize = 18;
pub const KIND_PUT: u8 = 1;
pub const KIND_DELETE: u8 = 2;
/// How often the logger drains buffers when no `Sync` commit asks sooner.
const FLUSH_INTERVAL: Duration = Duration::from_millis(10);
/// Largest block payload the reader accepts (a sanity limit against corrupt lengths).
pub const MAX_BLOCK_BYTES: usize = 1 << 30;

pub struct Logger {
    bufs: Box<[CachePadded<Mutex<Vec<u8>>>]>,
    durable: CachePadded<AtomicU64>,
    durable_ev: rt::Event,
    wake: rt::Event,
    request: AtomicBool,
    stop: AtomicBool,
    failed: Mutex<Option<String>>,
    has_failed: AtomicBool,
    pub path: PathBuf,
    pub bytes: AtomicU64,
    pub blocks: AtomicU64,
    pub fsyncs: AtomicU64,
}

pub fn append_put(buf: &mut Vec<u8>, tid: u64, table: u32, key: &[u8], row: &[u8]) {
    append(buf, tid, table, KIND_PUT, key, row);
}
pub fn append_delete(buf: &mut Vec<u8>, tid: u64, table: u32, key: &[u8]) {
    append(buf, tid, table, KIND_DELETE, key, &[]);
}
fn append(buf: &mut Vec<u8>, tid: u64, table: u32, kind: u8, key: &[u8], row: &[u8]) {
    buf.extend_from_slice(&tid.to_le_bytes());
    buf.extend_from_slice(&table.to_le_bytes());
    buf.extend_from_slice(&(row.len() as u32).to_le_bytes());
    buf.push(kind);
    buf.push(key.len() as u8);
    buf.extend_from_slice(key);
    buf.extend_from_slice(row);
}

impl Logger {
    /// Create the log file in `dir` (created if needed) and start the logger thread.
    pub fn start(
        dir: &Path,
        workers: usize,
        epochs: Arc<Epochs>,
    ) -> Result<(Arc<Logger>, JoinHandle<()>)> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::fatal(format!("log directory {}: {e}", dir.display())))?;
        let path = dir.join("memory.log");
        let mut file = File::create(&path)
            .map_err(|e| Error::fatal(format!("log file {}: {e}", path.display())))?;
        let mut hdr = Vec::with_capacity(FILE_HEADER_BYTES);
        hdr.extend_from_slice(FILE_MAGIC);
        hdr.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        hdr.extend_from_slice(&0u32.to_le_bytes());
        file.write_all(&hdr)?;
        file.sync_all()?;
        let lg = Arc::new(Logger {
            bufs: (0..workers)
                .map(|_| CachePadded::new(Mutex::new(Vec::with_capacity(1 << 16))))
                .collect(),
            durable: CachePadded::new(AtomicU64::new(0)),
            durable_ev: rt::Event::new(),
            wake: rt::Event::new(),
            request: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            failed: Mutex::new(None),
            has_failed: AtomicBool::new(false),
            path,
            bytes: AtomicU64::new(FILE_HEADER_BYTES as u64),
            blocks: AtomicU64::new(0),
            fsyncs: AtomicU64::new(1),
        });
        let me = lg.clone();
        let h = std::thread::Builder::new()
            .name("mem-logger".into())
            .spawn(move || me.run(file, epochs))
            .map_err(|e| Error::fatal(format!("spawn logger thread: {e}")))?;
        Ok((lg, h))
    }

    /// A worker's buffer, locked for the duration of its commit (see `occ`).
    pub fn buffer(&self, worker: usize) -> MutexGuard<'_, Vec<u8>> {
        self.bufs[worker].lock()
    }

    pub fn durable_epoch(&self) -> u64 {
        self.durable.load(Acquire)
    }

    /// Wait (through `rt`) until epoch `e` is durable, asking for an early flush.
    pub fn wait_durable(&self, e: u64, epochs: &Epochs) -> Result<()> {
        if self.durable.load(Acquire) >= e {
            return Ok(());
        }
        epochs.close(e);
        self.request.store(true, Release);
        self.wake.notify_all();
        self.durable_ev.wait(rt::WaitKind::LogFlush, None, || {
            self.durable.load(Acquire) >= e || self.has_failed.load(Acquire)
        });
        match self.error() {
            Some(msg) if self.durable.load(Acquire) < e => Err(Error::Fatal(msg)),
            _ => Ok(()),
        }
    }

    pub fn error(&self) -> Option<String> {
        self.failed.lock().clone()
    }

    /// Ask the thread to flush everything and stop (it closes the current epoch first).
    pub fn stop(&self) {
        self.stop.store(true, Release);
        self.wake.notify_all();
    }

    fn run(&self, mut file: File, epochs: Arc<Epochs>) {
        let mut spare: Vec<Vec<u8>> = (0..self.bufs.len()).map(|_| Vec::new()).collect();
        let mut block: Vec<u8> = Vec::with_capacity(1 << 20);
        let mut marker_pending = false;
        let mut last_marker = 0u64;
        loop {
            self.wake
                .wait(rt::WaitKind::Other, Some(FLUSH_INTERVAL), || {
                    self.request.load(Acquire) || self.stop.load(Acquire)
                });
            self.request.store(false, Release);
            let stopping = self.stop.load(Acquire);
            if stopping {
                // Everything committed so far becomes durable.
                let e = epochs.current();
                epochs.close(e);
            }
            // Every commit that takes an epoch below `e` after we read it is already in
            // a buffer we are about to drain (commits read the epoch under their buffer
            // lock), so after this flush every epoch below `e` is complete.
            let e = epochs.current();
            block.clear();
            block.resize(BLOCK_HEADER_BYTES, 0);
            for (b, s) in self.bufs.iter().zip(spare.iter_mut()) {
                std::mem::swap(&mut *b.lock(), s);
                block.extend_from_slice(s);
                s.clear();
            }
            let payload = block.len() - BLOCK_HEADER_BYTES;
            let durable = e - 1;
            let write = payload > 0 || (marker_pending && durable > last_marker);
            if write {
                let count = count_records(&block[BLOCK_HEADER_BYTES..]);
                block[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
                block[4..8].copy_from_slice(&(payload as u32).to_le_bytes());
                block[8..16].copy_from_slice(&durable.to_le_bytes());
                block[16..20].copy_from_slice(&count.to_le_bytes());
                let crc = block_crc(&block[0..20], &block[BLOCK_HEADER_BYTES..]);
                block[20..24].copy_from_slice(&crc.to_le_bytes());
                if let Err(e) = file.write_all(&block).and_then(|_| file.sync_data()) {
                    *self.failed.lock() = Some(format!("log write {}: {e}", self.path.display()));
                    self.has_failed.store(true, Release);
                    self.durable_ev.notify_all();
                    return;
                }
                self.bytes.fetch_add(block.len() as u64, Relaxed);
                self.blocks.fetch_add(1, Relaxed);
                self.fsyncs.fetch_add(1, Relaxed);
                marker_pending = payload > 0;
                last_marker = durable;
            }
            if durable > self.durable.load(Relaxed) {
                self.durable.store(durable, Release);
                self.durable_ev.notify_all();
            }
            if stopping {
                return;
            }
        }
    }
}

fn count_records(mut p: &[u8]) -> u32 {
    let mut n = 0;
    while p.len() >= RECORD_HEADER_BYTES {
        let row = u32::from_le_bytes(p[12..16].try_into().unwrap()) as usize;
        let key = p[17] as usize;
        p = &p[RECORD_HEADER_BYTES + key + row..];
        n += 1;
    }
    assert!(p.is_empty(), "log buffer holds a partial record");
    n
}

fn block_crc(header: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(payload);
    h.finalize()
}

/// One record read back from a log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub tid: u64,
    pub table: u32,
    pub key: Vec<u8>,
    /// `None`: a delete.
    pub row: Option<Vec<u8>>,
}

/// A log file's contents.
#[derive(Debug, Default)]
pub struct LogContents {
    /// Records in file order.
    pub records: Vec<LogRecord>,
    /// Highest durable epoch stated by a complete block.
    pub durable_epoch: u64,
    pub blocks: u64,
    /// The file ends in an incomplete block (a crash during a write), which is ignored.
    pub torn_tail: bool,
}

/// Read a log file back. A damaged file (bad magic, version, checksum, or record layout)
/// is an error; an incomplete last block is reported as `torn_tail`.
pub fn read_log(path: &Path) -> Result<LogContents> {
    let bad = |what: &str| Error::fatal(format!("log file {}: {what}", path.display()));
    let mut data = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(|e| bad(&e.to_string()))?;
    if data.len() < FILE_HEADER_BYTES || &data[0..8] != FILE_MAGIC {
        return Err(bad("not a memory-engine log (bad magic)"));
    }
    let version = u32::from_le_bytes(data[8..12].try_into().unwrap());
    if version != FORMAT_VERSION {
        return Err(bad(&format!("unsupported format version {version}")));
    }
    let mut out = LogContents::default();
    let mut at = FILE_HEADER_BYTES;
    while at < data.len() {
        let rest = &data[at..];
        if rest.len() < BLOCK_HEADER_BYTES {
            out.torn_tail = true;
            break;
        }
        if u32::from_le_bytes(rest[0..4].try_into().unwrap()) != BLOCK_MAGIC {
            return Err(bad(&format!("bad block magic at byte {at}")));
        }
        let len = u32::from_le_bytes(rest[4..8].try_into().unwrap()) as usize;
        if len > MAX_BLOCK_BYTES {
            return Err(bad(&format!("block at byte {at} claims {len} bytes")));
        }
        if rest.len() < BLOCK_HEADER_BYTES + len {
            out.torn_tail = true;
            break;
        }
        let payload = &rest[BLOCK_HEADER_BYTES..BLOCK_HEADER_BYTES + len];
        let crc = u32::from_le_bytes(rest[20..24].try_into().unwrap());
        if block_crc(&rest[0..20], payload) != crc {
            return Err(bad(&format!("checksum mismatch in block at byte {at}")));
        }
        let durable = u64::from_le_bytes(rest[8..16].try_into().unwrap());
        let count = u32::from_le_bytes(rest[16..20].try_into().unwrap());
        let mut p = payload;
        let mut n = 0u32;
        while !p.is_empty() {
            if p.len() < RECORD_HEADER_BYTES {
                return Err(bad(&format!("truncated record in block at byte {at}")));
            }
            let tid = u64::from_le_bytes(p[0..8].try_into().unwrap());
            let table = u32::from_le_bytes(p[8..12].try_into().unwrap());
            let row_len = u32::from_le_bytes(p[12..16].try_into().unwrap()) as usize;
            let kind = p[16];
            let key_len = p[17] as usize;
            if p.len() < RECORD_HEADER_BYTES + key_len + row_len {
                return Err(bad(&format!("record overruns block at byte {at}")));
            }
            let key = p[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + key_len].to_vec();
            let row = &p[RECORD_HEADER_BYTES + key_len..RECORD_HEADER_BYTES + key_len + row_len];
            let row = match kind {
                KIND_PUT => Some(row.to_vec()),
                KIND_DELETE if row_len == 0 => None,
                _ => {
                    return Err(bad(&format!(
                        "bad record kind {kind} in block at byte {at}"
                    )))
                }
            };
            out.records.push(LogRecord {
                tid,
                table,
                key,
                row,
            });
            p = &p[RECORD_HEADER_BYTES + key_len + row_len..];
            n += 1;
        }
        if n != count {
            return Err(bad(&format!(
                "block at byte {at}: {n} records, header says {count}"
            )));
        }
        out.durable_epoch = out.durable_epoch.max(durable);
        out.blocks += 1;
        at += BLOCK_HEADER_BYTES + len;
    }
    Ok(out)
}
