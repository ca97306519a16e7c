//! `log`: the command log. A committing writer appends its command (transaction type
//! and encoded inputs) to the one shared buffer while it still owns its partitions, so
//! the order of the commands in the log is a serial order of the transactions; the
//! flusher thread (`partitioned-logger`) takes the buffer every `FLUSH_INTERVAL` (or at
//! once when a `--log sync` commit waits), writes it as one checksummed block, fsyncs
//! and publishes how many commands are durable. Every byte goes through `storage`.
//! When the buffer reaches `storage::logfile::BUFFER_LIMIT`, the commit whose append
//! found it so waits, once it has let its partitions go, until the flusher has taken
//! its command (`Appended::full`, `Logger::wait_taken`).
//!
//! File format 1 (all integers little-endian; see docs/design/partitioned-engine.md):
//! file header (32 bytes) `b"OLTPPLOG"`, `u32` version, `b"part"`, `u64` database id
//! (the snapshot's), `u32` schema fingerprint, `u32` CRC-32 of bytes 0..28; then
//! blocks: header (24 bytes) `u32` `BLOCK_MAGIC`, `u32` payload bytes, `u64` sequence
//! number of the block's first command (commands are numbered from 0 in log order),
//! `u32` command count, `u32` CRC-32 of header bytes 0..20 and the payload; payload:
//! commands `u32` transaction type, `u32` input bytes, input.
//!
//! Must never: publish a command durable before the block holding it is fsync'd, or
//! hand recovery a block whose first sequence number does not continue the last.

use api::{Command, Error, Result};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
/// Who a log (and a snapshot) belongs to.
pub use storage::logfile::Header as FileHeader;
pub(crate) use storage::logfile::{crc, le32, le64};
use storage::logfile::{HeaderFormat, MarkerFormat, Watermark, BUFFER_LIMIT};
use storage::File;

pub const LOG_FILE: &str = "partitioned.log";
/// The log's durable mark (`storage::logfile::MarkFile`): how long the log is known to
/// be fsync'd; recovery refuses a log whose valid part ends before it.
pub const MARK_FILE: &str = "partitioned.mark";
pub const FILE_MAGIC: &[u8; 8] = b"OLTPPLOG";
/// Bytes 12..16 of the file header: which engine wrote the log.
pub const ENGINE_TAG: &[u8; 4] = b"part";
pub const FORMAT_VERSION: u32 = 1;
pub const BLOCK_MAGIC: u32 = 0x4B4C_4250; // "PBLK"
pub const FILE_HEADER_BYTES: usize = storage::logfile::HEADER_BYTES;
pub const BLOCK_HEADER_BYTES: usize = 24;
pub const COMMAND_HEADER_BYTES: usize = 8;
/// How often the flusher writes when no `Sync` commit asks sooner.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(10);
/// Largest block payload the reader accepts (a sanity limit against corrupt lengths).
pub const MAX_BLOCK_BYTES: usize = 1 << 30;
/// Largest encoded input of one command (the kits' largest is a few hundred bytes).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// The log's file header.
pub const HEADER: HeaderFormat = HeaderFormat {
    magic: FILE_MAGIC,
    version: FORMAT_VERSION,
    tag: Some(*ENGINE_TAG),
    label: "log file",
    kind: "log",
    what: "a partitioned-engine command log",
    version_hint: "",
    others: &[],
};

/// The durable mark `MARK_FILE`: magic `b"OLTPPMRK"`, `u32` version, `u32` zero, `u64`
/// database id, `u64` log bytes known durable, `u32` CRC-32 of bytes 0..32 (the load
/// marker's layout). Written before the snapshot at the end of the load, then advanced
/// by the flusher.
pub const MARK: MarkerFormat = MarkerFormat {
    magic: b"OLTPPMRK",
    version: FORMAT_VERSION,
    what: "a partitioned-engine durable mark",
};

/// Append one command to a block payload.
pub fn append_command(buf: &mut Vec<u8>, txn_type: u32, input: &[u8]) {
    assert!(
        input.len() <= MAX_INPUT_BYTES,
        "a command of {} bytes is above the log's limit",
        input.len()
    );
    buf.extend_from_slice(&txn_type.to_le_bytes());
    buf.extend_from_slice(&(input.len() as u32).to_le_bytes());
    buf.extend_from_slice(input);
}

/// A whole block: header (first sequence number `first`, `count` commands) and payload.
pub fn seal_block(payload: &[u8], first: u64, count: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(BLOCK_HEADER_BYTES + payload.len());
    b.extend_from_slice(&BLOCK_MAGIC.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(&first.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    let c = crc(&[&b[0..20], payload]);
    b.extend_from_slice(&c.to_le_bytes());
    b.extend_from_slice(payload);
    b
}

/// A log read back: its owner, its commands in log order, and where the valid part
/// ends.
#[derive(Debug)]
pub struct LogContents {
    pub header: FileHeader,
    pub commands: Vec<Command>,
    /// Length of the valid prefix (header and whole valid blocks).
    pub valid_bytes: u64,
    /// Bytes after it: a torn tail, the normal trace of a crash (0: none).
    pub torn_bytes: u64,
}

/// The commands of a valid payload holding `count` of them, or why it is not valid.
fn parse_payload(p: &[u8], count: u32) -> std::result::Result<Vec<Command>, String> {
    let mut out = Vec::with_capacity(count as usize);
    let mut p = p;
    while !p.is_empty() {
        if p.len() < COMMAND_HEADER_BYTES {
            return Err("a command is cut short".into());
        }
        let n = le32(&p[4..8]) as usize;
        if n > MAX_INPUT_BYTES || p.len() < COMMAND_HEADER_BYTES + n {
            return Err("a command overruns its block".into());
        }
        out.push(Command {
            txn_type: le32(&p[0..4]),
            input: p[COMMAND_HEADER_BYTES..COMMAND_HEADER_BYTES + n].to_vec(),
        });
        p = &p[COMMAND_HEADER_BYTES + n..];
    }
    if out.len() != count as usize {
        return Err(format!("{} commands, its header says {count}", out.len()));
    }
    Ok(out)
}

/// The block at `at` in `data`: Ok((first sequence number, commands, total length))
/// or Err(why it is not a valid block).
#[allow(clippy::type_complexity)]
fn probe(data: &[u8], at: usize) -> std::result::Result<(u64, Vec<Command>, usize), String> {
    let rest = &data[at..];
    if rest.len() < BLOCK_HEADER_BYTES {
        return Err("incomplete block header".into());
    }
    if le32(&rest[0..4]) != BLOCK_MAGIC {
        return Err("no block magic".into());
    }
    let plen = le32(&rest[4..8]) as usize;
    if plen > MAX_BLOCK_BYTES {
        return Err(format!("block claims {plen} bytes"));
    }
    if rest.len() < BLOCK_HEADER_BYTES + plen {
        return Err("block cut short".into());
    }
    let payload = &rest[BLOCK_HEADER_BYTES..BLOCK_HEADER_BYTES + plen];
    if crc(&[&rest[0..20], payload]) != le32(&rest[20..24]) {
        return Err("checksum mismatch".into());
    }
    let cmds = parse_payload(payload, le32(&rest[16..20]))?;
    Ok((le64(&rest[8..16]), cmds, BLOCK_HEADER_BYTES + plen))
}

/// A place in the log: the byte offset of a block boundary and the number of commands
/// before it (the sequence number of the first command after it). A snapshot records
/// the position its state corresponds to; recovery reads the log from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LogPosition {
    pub offset: u64,
    pub commands: u64,
}

impl LogPosition {
    /// Just after the file header: an empty log (the snapshot written after the load).
    pub const START: LogPosition = LogPosition {
        offset: FILE_HEADER_BYTES as u64,
        commands: 0,
    };
}

/// Read a whole log held in memory from its start (tests; recovery reads from a
/// snapshot's position with [`read_log_at`]).
pub fn read_log(data: &[u8], path: &Path) -> Result<LogContents> {
    let header = HEADER
        .decode(&data[..data.len().min(FILE_HEADER_BYTES)], path)
        .map_err(Error::fatal)?;
    let from = FILE_HEADER_BYTES.min(data.len());
    read_blocks(header, &data[from..], LogPosition::START, path)
}

/// Read the log `file` (at `path`) from `from`, a snapshot's position: the header, then
/// the blocks after `from` (the bytes before it are never read: a checkpoint may have
/// freed them). A file that ends before `from` lost commands the snapshot says it
/// holds: refused.
pub fn read_log_at(file: &dyn File, path: &Path, from: LogPosition) -> Result<LogContents> {
    let io = |e: std::io::Error| Error::fatal(format!("log file {}: {e}", path.display()));
    let header = read_header(file, path)?;
    let len = file.len().map_err(io)?;
    if len < from.offset {
        return Err(Error::fatal(format!(
            "log file {} ends at byte {len} before byte {} where the snapshot's commands end: the log was cut and lost acknowledged commits, refused, the file is left as it is",
            path.display(),
            from.offset
        )));
    }
    let mut data = vec![0u8; (len - from.offset) as usize];
    let got = file.read_full_at(&mut data, from.offset).map_err(io)?;
    data.truncate(got);
    read_blocks(header, &data, from, path)
}

/// The log `file`'s header, verified.
pub fn read_header(file: &dyn File, path: &Path) -> Result<FileHeader> {
    let mut head = [0u8; FILE_HEADER_BYTES];
    let n = file
        .read_full_at(&mut head, 0)
        .map_err(|e| Error::fatal(format!("log file {}: {e}", path.display())))?;
    HEADER.decode(&head[..n], path).map_err(Error::fatal)
}

/// The blocks of `data`, the log's bytes from `from`. At the first invalid block: if a
/// valid block follows anywhere after it, the log is damaged in the middle (an error
/// naming the file and offsets); otherwise the rest is a torn tail (a write cut short
/// by a crash), reported in `torn_bytes`. Offsets in messages and results are the
/// file's.
fn read_blocks(
    header: FileHeader,
    data: &[u8],
    from: LogPosition,
    path: &Path,
) -> Result<LogContents> {
    let base = from.offset;
    let mut commands = Vec::new();
    let next_seq = |commands: &Vec<Command>| from.commands + commands.len() as u64;
    let mut at = 0usize;
    while at < data.len() {
        match probe(data, at) {
            Ok((first, cmds, len)) => {
                if first != next_seq(&commands) {
                    return Err(Error::fatal(format!(
                        "log file {}: the block at byte {} starts at command {first}, {} expected: damaged, refused, the file is left as it is",
                        path.display(),
                        base + at as u64,
                        next_seq(&commands)
                    )));
                }
                commands.extend(cmds);
                at += len;
            }
            Err(why) => {
                let magic = BLOCK_MAGIC.to_le_bytes();
                if let Some(next) = (at + 1..data.len().saturating_sub(3))
                    .find(|&i| data[i..i + 4] == magic && probe(data, i).is_ok())
                {
                    // Zeros where the snapshot's commands should continue: a hole a
                    // later checkpoint punched (this snapshot is older than the log).
                    let hole = if next - at >= 4096 && data[at..next].iter().all(|&b| b == 0) {
                        ", zeroed pages: freed by a later checkpoint than this snapshot, or damaged"
                    } else {
                        ""
                    };
                    return Err(Error::fatal(format!(
                        "log file {} is damaged at byte {} ({why}){hole} with a valid block after it at byte {}: refused, the file is left as it is",
                        path.display(),
                        base + at as u64,
                        base + next as u64
                    )));
                }
                return Ok(LogContents {
                    header,
                    commands,
                    valid_bytes: base + at as u64,
                    torn_bytes: (data.len() - at) as u64,
                });
            }
        }
    }
    Ok(LogContents {
        header,
        commands,
        valid_bytes: base + at as u64,
        torn_bytes: 0,
    })
}

/// Where the flusher appends: the open file and the offset after its valid part, and
/// the number of commands it already holds.
pub struct LogTail {
    pub file: Arc<dyn File>,
    pub path: PathBuf,
    pub offset: u64,
    pub commands: u64,
}

/// What `Logger::append` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// Commands up to and including this one.
    pub n: u64,
    /// The buffer is at or above `BUFFER_LIMIT`: wait (`Logger::wait_taken(n)`) once
    /// the partitions are let go.
    pub full: bool,
}

/// Commands appended since the flusher last took them.
struct Pending {
    buf: Vec<u8>,
    /// Sequence number of the first command in `buf`.
    first: u64,
    count: u32,
    /// Whole blocks sealed by `Logger::cut` (before `buf`'s commands), written first.
    sealed: Vec<u8>,
    /// File offset after every block taken so far (written or being written).
    taken_end: u64,
}

pub struct Logger {
    pending: Mutex<Pending>,
    /// Commands the flusher has taken out of `pending` (set under its lock): every
    /// command with a sequence number below it is in a block being written, or written.
    taken: AtomicU64,
    /// Commands durable: every command with a sequence number below it is fsync'd.
    mark: Watermark,
    pub path: PathBuf,
    /// The file the flusher appends to (checkpoints free its prefix).
    pub file: Arc<dyn File>,
    /// What has been written: bytes, blocks, fsyncs.
    pub io: storage::logfile::BlockWriter,
}

impl Logger {
    /// Start the flusher thread appending to `tail`.
    pub fn start(tail: LogTail) -> Result<(Arc<Logger>, JoinHandle<()>)> {
        let lg = Arc::new(Logger {
            pending: Mutex::new(Pending {
                buf: Vec::with_capacity(1 << 16),
                first: tail.commands,
                count: 0,
                sealed: Vec::new(),
                taken_end: tail.offset,
            }),
            taken: AtomicU64::new(tail.commands),
            mark: Watermark::new(tail.commands),
            path: tail.path.clone(),
            file: tail.file.clone(),
            io: storage::logfile::BlockWriter::new(tail.offset),
        });
        let me = lg.clone();
        let h = std::thread::Builder::new()
            .name("partitioned-logger".into())
            .spawn(move || {
                probe::thread_role(probe::Role::LogFlusher);
                me.run(tail)
            })
            .map_err(|e| Error::fatal(format!("spawn logger thread: {e}")))?;
        Ok((lg, h))
    }

    /// Append a committing transaction's command: the number of commands up to and
    /// including it (durable once `durable()` reaches it), and whether the buffer is
    /// full. The caller still owns the transaction's partitions, so log order is a
    /// serial order; it calls `wait_taken` for a full buffer only once it has let
    /// them go.
    pub fn append(&self, txn_type: u32, input: &[u8]) -> Result<Appended> {
        if input.len() > MAX_INPUT_BYTES {
            return Err(Error::fatal(format!(
                "a command of {} bytes is above the log's limit of {MAX_INPUT_BYTES}",
                input.len()
            )));
        }
        if let Some(msg) = self.error() {
            return Err(Error::Fatal(msg));
        }
        let mut p = rt::lock(rt::WaitKind::Latch, &self.pending);
        append_command(&mut p.buf, txn_type, input);
        p.count += 1;
        Ok(Appended {
            n: p.first + p.count as u64,
            full: p.buf.len() >= BUFFER_LIMIT,
        })
    }

    /// Seal every command appended so far into a block of its own and return the
    /// position after it: the commands before it and the file offset where it will
    /// end (durable once `durable()` reaches `commands`). A checkpoint calls it while
    /// it owns every partition, so no commit appends meanwhile and its copy is the state
    /// after exactly these commands; later commands go into later blocks, so the
    /// position stays a block boundary.
    pub fn cut(&self) -> LogPosition {
        let mut p = rt::lock(rt::WaitKind::Latch, &self.pending);
        if p.count > 0 {
            let b = seal_block(&p.buf, p.first, p.count);
            p.sealed.extend_from_slice(&b);
            p.first += p.count as u64;
            p.count = 0;
            p.buf.clear();
        }
        LogPosition {
            offset: p.taken_end + p.sealed.len() as u64,
            commands: p.first,
        }
    }

    /// Wait (through `rt`) until the flusher has taken the first `n` commands out of
    /// the buffer, asking for a flush now; the failure's line if the log failed first.
    /// Must never be called while owning partitions (other committers would wait for
    /// them behind a disk that is already the bottleneck).
    pub fn wait_taken(&self, n: u64) -> Result<()> {
        self.mark
            .wait_taken(|| self.taken.load(Acquire) >= n)
            .map_err(Error::Fatal)
    }

    /// Commands durable so far.
    pub fn durable(&self) -> u64 {
        self.mark.durable()
    }

    pub fn error(&self) -> Option<String> {
        self.mark.error()
    }

    /// Wait (through `rt`) until `n` commands are durable, asking for a flush now.
    pub fn wait_durable(&self, n: u64) -> Result<()> {
        self.mark.wait_durable(n).map_err(Error::Fatal)
    }

    /// Ask the thread to write everything appended and stop.
    pub fn stop(&self) {
        self.mark.stop();
    }

    fn fail(&self, msg: String) {
        self.mark.fail(msg);
    }

    fn run(&self, tail: LogTail) {
        let LogTail {
            file, mut offset, ..
        } = tail;
        let mut spare: Vec<u8> = Vec::with_capacity(1 << 16);
        loop {
            let stopping = self.mark.next_round(FLUSH_INTERVAL);
            let (sealed, first, count) = {
                let mut p = rt::lock(rt::WaitKind::Latch, &self.pending);
                std::mem::swap(&mut p.buf, &mut spare);
                let sealed = std::mem::take(&mut p.sealed);
                let taken = (sealed, p.first, p.count);
                p.first += p.count as u64;
                p.count = 0;
                p.taken_end += taken.0.len() as u64;
                if taken.2 > 0 {
                    p.taken_end += (BLOCK_HEADER_BYTES + spare.len()) as u64;
                }
                self.taken.store(p.first, Release);
                taken
            };
            if count > 0 || !sealed.is_empty() {
                self.mark.notify_taken();
                // Blocks a checkpoint sealed come first: they hold earlier commands.
                let mut block = sealed;
                if count > 0 {
                    let b = seal_block(&spare, first, count);
                    if block.is_empty() {
                        block = b;
                    } else {
                        block.extend_from_slice(&b);
                    }
                }
                spare.clear();
                if let Err(msg) = self
                    .io
                    .write_durably(&*file, &mut offset, &block, &self.path)
                {
                    self.fail(msg);
                    return;
                }
                self.mark.publish(first + count as u64);
            }
            if stopping {
                // A clean stop leaves the mark at the log's end: a cut of any length
                // after it is refused.
                if let Err(msg) = self.io.advance_mark(true) {
                    self.fail(msg);
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "test.log";

    fn header() -> FileHeader {
        FileHeader {
            database_id: 42,
            schema: 7,
        }
    }

    /// The header is format 1's, byte for byte (checksum computed apart, with
    /// Python's zlib.crc32): logs of earlier builds must still be read.
    #[test]
    fn header_bytes_are_format_1() {
        let h = FileHeader {
            database_id: 0x0102_0304_0506_0708,
            schema: 0xA1B2_C3D4,
        };
        let want = b"OLTPPLOG\x01\0\0\0part\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\x6D\x41\x64\x45";
        assert_eq!(&HEADER.encode(&h), want);
        assert_eq!(HEADER.decode(want, Path::new(P)), Ok(h));
    }

    /// A log of two blocks: commands 0..2 and 2..3.
    fn two_blocks() -> (Vec<u8>, usize) {
        let mut f = HEADER.encode(&header()).to_vec();
        let mut p = Vec::new();
        append_command(&mut p, 1, b"first");
        append_command(&mut p, 2, b"");
        f.extend(seal_block(&p, 0, 2));
        let second = f.len();
        p.clear();
        append_command(&mut p, 3, &[9; 100]);
        f.extend(seal_block(&p, 2, 1));
        (f, second)
    }

    #[test]
    fn commands_read_back_in_order() {
        let (f, _) = two_blocks();
        let c = read_log(&f, Path::new(P)).unwrap();
        assert_eq!(c.header, header());
        let types: Vec<u32> = c.commands.iter().map(|c| c.txn_type).collect();
        assert_eq!(types, [1, 2, 3]);
        assert_eq!(c.commands[0].input, b"first");
        assert_eq!(c.commands[2].input, vec![9; 100]);
        assert_eq!((c.valid_bytes, c.torn_bytes), (f.len() as u64, 0));
    }

    #[test]
    fn a_torn_tail_is_cut_at_every_length() {
        let (f, second) = two_blocks();
        for cut in second..f.len() {
            let c = read_log(&f[..cut], Path::new(P)).unwrap();
            assert_eq!(c.commands.len(), 2, "cut at {cut}");
            assert_eq!(c.valid_bytes, second as u64);
            assert_eq!(c.torn_bytes, (cut - second) as u64);
        }
        // Garbage (zeros of a preallocated file) after the last block is a torn tail.
        let mut z = f.clone();
        z.extend([0u8; 100]);
        assert_eq!(read_log(&z, Path::new(P)).unwrap().torn_bytes, 100);
    }

    #[test]
    fn a_bad_checksum_before_a_valid_block_is_refused() {
        let (mut f, second) = two_blocks();
        // A flipped byte in the first block's payload: the second block is still valid.
        f[FILE_HEADER_BYTES + BLOCK_HEADER_BYTES + 9] ^= 0x40;
        let e = read_log(&f, Path::new(P)).unwrap_err().to_string();
        assert!(e.contains("damaged at byte 32 (checksum mismatch)"), "{e}");
        assert!(
            e.contains(&format!("valid block after it at byte {second}")),
            "{e}"
        );
        // The same flip in the last block is a torn tail (nothing valid follows).
        let (mut f, second) = two_blocks();
        let n = f.len();
        f[n - 1] ^= 0x40;
        let c = read_log(&f, Path::new(P)).unwrap();
        assert_eq!((c.commands.len(), c.valid_bytes), (2, second as u64));
    }

    #[test]
    fn a_block_out_of_sequence_is_refused() {
        let mut f = HEADER.encode(&header()).to_vec();
        let mut p = Vec::new();
        append_command(&mut p, 1, b"x");
        f.extend(seal_block(&p, 0, 1));
        f.extend(seal_block(&p, 5, 1));
        let e = read_log(&f, Path::new(P)).unwrap_err().to_string();
        assert!(e.contains("starts at command 5, 1 expected"), "{e}");
    }

    #[test]
    fn foreign_and_damaged_headers_are_refused() {
        let (f, _) = two_blocks();
        let cases: [(Vec<u8>, &str); 5] = [
            (
                b"OLTPVLOG and the rest of an mvcc log....".to_vec(),
                "not a partitioned-engine command log",
            ),
            (Vec::new(), "not a partitioned-engine command log"),
            (f[..20].to_vec(), "header cut short"),
            (
                {
                    let mut g = f.clone();
                    g[20] ^= 1;
                    g
                },
                "header checksum mismatch",
            ),
            (
                {
                    let mut g = f.clone();
                    g[8] = 9;
                    let c = crc(&[&g[0..28]]);
                    g[28..32].copy_from_slice(&c.to_le_bytes());
                    g
                },
                "log format 9",
            ),
        ];
        for (bytes, want) in cases {
            let e = read_log(&bytes, Path::new(P)).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn the_flusher_makes_appended_commands_durable() {
        let st = storage::os();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let file = storage::create_durable(&*st, &path).unwrap();
        file.write_all_at(&HEADER.encode(&header()), 0).unwrap();
        let (lg, h) = Logger::start(LogTail {
            file,
            path: path.clone(),
            offset: FILE_HEADER_BYTES as u64,
            commands: 0,
        })
        .unwrap();
        assert_eq!(lg.append(4, b"a").unwrap().n, 1);
        assert_eq!(lg.append(5, b"bb").unwrap().n, 2);
        lg.wait_durable(2).unwrap();
        assert!(lg.durable() >= 2);
        assert_eq!(lg.append(6, b"ccc").unwrap().n, 3);
        lg.stop();
        h.join().unwrap();
        let c = read_log(&std::fs::read(&path).unwrap(), &path).unwrap();
        let got: Vec<(u32, Vec<u8>)> = c
            .commands
            .into_iter()
            .map(|c| (c.txn_type, c.input))
            .collect();
        assert_eq!(
            got,
            [
                (4, b"a".to_vec()),
                (5, b"bb".to_vec()),
                (6, b"ccc".to_vec())
            ]
        );
    }

    /// `cut` seals the commands appended so far into a block of their own: the
    /// position it returns is where that block ends and the next begins, the commands
    /// after it are read back from there alone, and a log shorter than the position,
    /// or zeros (a freed prefix) at it before valid blocks, is refused.
    #[test]
    fn a_cut_is_a_block_boundary_and_the_log_reads_from_it() {
        let st = storage::os();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let file = storage::create_durable(&*st, &path).unwrap();
        file.write_all_at(&HEADER.encode(&header()), 0).unwrap();
        let (lg, h) = Logger::start(LogTail {
            file: file.clone(),
            path: path.clone(),
            offset: FILE_HEADER_BYTES as u64,
            commands: 0,
        })
        .unwrap();
        // Nothing appended: the position is the log's start.
        assert_eq!(lg.cut(), LogPosition::START);
        lg.append(1, b"one").unwrap();
        lg.append(2, b"two").unwrap();
        let pos = lg.cut();
        let sealed = (BLOCK_HEADER_BYTES + 2 * COMMAND_HEADER_BYTES + 6) as u64;
        assert_eq!(
            pos,
            LogPosition {
                offset: FILE_HEADER_BYTES as u64 + sealed,
                commands: 2
            }
        );
        // A second cut with nothing new is the same position.
        assert_eq!(lg.cut(), pos);
        assert_eq!(lg.append(3, b"three").unwrap().n, 3);
        lg.wait_durable(3).unwrap();
        lg.stop();
        h.join().unwrap();
        let all = read_log(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(all.commands.len(), 3);
        let after = read_log_at(&*file, &path, pos).unwrap();
        assert_eq!(after.commands.len(), 1);
        assert_eq!(after.commands[0].input, b"three");
        assert_eq!(after.valid_bytes, all.valid_bytes);
        // A position past the end: the log was cut behind the snapshot.
        file.set_len(pos.offset - 1).unwrap();
        let e = read_log_at(&*file, &path, pos).unwrap_err().to_string();
        assert!(
            e.contains("before byte") && e.contains("snapshot's commands end"),
            "{e}"
        );
        // Zeros where the commands after an older position should be, valid blocks
        // after them: damaged (a prefix freed by a later checkpoint), refused.
        let mut f = HEADER.encode(&header()).to_vec();
        f.resize(FILE_HEADER_BYTES + 8192, 0);
        let mut p = Vec::new();
        append_command(&mut p, 7, b"x");
        f.extend(seal_block(&p, 9, 1));
        std::fs::write(&path, &f).unwrap();
        let file = st.open(&path, storage::Open::Read).unwrap();
        let e = read_log_at(&*file, &path, LogPosition::START)
            .unwrap_err()
            .to_string();
        assert!(e.contains("zeroed pages") && e.contains("refused"), "{e}");
        // From the right position the same file reads.
        let at = LogPosition {
            offset: (FILE_HEADER_BYTES + 8192) as u64,
            commands: 9,
        };
        assert_eq!(read_log_at(&*file, &path, at).unwrap().commands.len(), 1);
        // A position that names another command count than the block there: damaged.
        let e = read_log_at(&*file, &path, LogPosition { commands: 8, ..at })
            .unwrap_err()
            .to_string();
        assert!(e.contains("starts at command 9, 8 expected"), "{e}");
    }
}
