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
//! File format 2 (all integers little-endian; see docs/design/partitioned-engine.md):
//! file header (32 bytes) `b"OLTPPLOG"`, `u32` version, `b"part"`, `u64` database id
//! (the snapshot's), `u32` schema fingerprint, `u32` CRC-32 of bytes 0..28; then the
//! blocks of `storage::valuelog` (32-byte header: `u32` `BLOCK_MAGIC`, `u32` payload
//! bytes, `u64` sequence number of the block's first command (commands are numbered
//! from 0 in log order), `u32` command count, `u32` kind (`BLOCK_DATA`), `u32` zero,
//! `u32` CRC-32 of header bytes 0..28 and the payload), read by its `LogReader` (a torn
//! tail ends the log, damage before a valid block is refused); payload: commands `u32`
//! transaction type, `u32` input bytes, input. Format 1 (earlier builds: 24-byte block
//! headers of its own) is refused by its header's version.
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
pub(crate) use storage::logfile::{crc, le32};
use storage::logfile::{HeaderFormat, MarkerFormat, Watermark, BUFFER_LIMIT};
use storage::valuelog::{BlockFormat, LogReader, BLOCK_DATA};
use storage::File;

pub const LOG_FILE: &str = "partitioned.log";
/// The log's durable mark (`storage::logfile::MarkFile`): how long the log is known to
/// be fsync'd; recovery refuses a log whose valid part ends before it.
pub const MARK_FILE: &str = "partitioned.mark";
pub const FILE_MAGIC: &[u8; 8] = b"OLTPPLOG";
/// Bytes 12..16 of the file header: which engine wrote the log.
pub const ENGINE_TAG: &[u8; 4] = b"part";
/// 2: the blocks of `storage::valuelog`. 1 (24-byte block headers of its own) is refused.
pub const FORMAT_VERSION: u32 = 2;
/// The durable mark's layout did not change with the log's blocks.
pub const MARK_VERSION: u32 = 1;
pub const BLOCK_MAGIC: u32 = 0x4B4C_4250; // "PBLK"
pub const FILE_HEADER_BYTES: usize = storage::logfile::HEADER_BYTES;
pub const BLOCK_HEADER_BYTES: usize = storage::valuelog::BLOCK_HEADER_BYTES;
pub const COMMAND_HEADER_BYTES: usize = 8;
// A command's header is its transaction type and input length (`u32` each), which holds
// any input.
const _: () = assert!(COMMAND_HEADER_BYTES == 4 + 4 && MAX_INPUT_BYTES <= u32::MAX as usize);
/// How often the flusher writes when no `Sync` commit asks sooner.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(10);
/// Largest block payload the reader accepts (a sanity limit against corrupt lengths).
pub const MAX_BLOCK_BYTES: usize = storage::valuelog::MAX_BLOCK_BYTES;
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
    version_hint: " (format 1 was written by an earlier build: start over with --reload)",
    others: &[],
};

/// The log's blocks: `storage::valuelog`'s, whose `u64` field is the sequence number
/// of the block's first command and whose count is its commands'.
pub static BLOCKS: BlockFormat = BlockFormat {
    magic: BLOCK_MAGIC,
    check_payload: check_commands,
};

/// The durable mark `MARK_FILE`: magic `b"OLTPPMRK"`, `u32` version, `u32` zero, `u64`
/// database id, `u64` log bytes known durable, `u32` CRC-32 of bytes 0..32 (the load
/// marker's layout). Written before the snapshot at the end of the load, then advanced
/// by the flusher.
pub const MARK: MarkerFormat = MarkerFormat {
    magic: b"OLTPPMRK",
    version: MARK_VERSION,
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
    b.resize(BLOCK_HEADER_BYTES, 0);
    b.extend_from_slice(payload);
    BLOCKS.seal(&mut b, first, count, BLOCK_DATA);
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

/// Why `p` is not `count` well-formed commands (`BLOCKS`' payload check).
fn check_commands(p: &[u8], count: u32) -> std::result::Result<(), String> {
    let mut p = p;
    let mut n = 0u32;
    while !p.is_empty() {
        if p.len() < COMMAND_HEADER_BYTES {
            return Err("a command is cut short".into());
        }
        let len = le32(&p[4..8]) as usize;
        if len > MAX_INPUT_BYTES || p.len() < COMMAND_HEADER_BYTES + len {
            return Err("a command overruns its block".into());
        }
        p = &p[COMMAND_HEADER_BYTES + len..];
        n += 1;
    }
    if n != count {
        return Err(format!("{n} commands, its header says {count}"));
    }
    Ok(())
}

/// The commands of a payload `check_commands` accepted, appended to `out`.
fn parse_commands(mut p: &[u8], out: &mut Vec<Command>) {
    while !p.is_empty() {
        let n = le32(&p[4..8]) as usize;
        out.push(Command {
            txn_type: le32(&p[0..4]),
            input: p[COMMAND_HEADER_BYTES..COMMAND_HEADER_BYTES + n].to_vec(),
        });
        p = &p[COMMAND_HEADER_BYTES + n..];
    }
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
    read_log_at(
        &Bytes {
            data,
            path: path.to_path_buf(),
        },
        path,
        LogPosition::START,
    )
}

/// A log held in memory, read through the `File` interface (`read_log`).
#[derive(Debug)]
struct Bytes<'a> {
    data: &'a [u8],
    path: PathBuf,
}

impl File for Bytes<'_> {
    fn read_at(&self, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
        let from = (off as usize).min(self.data.len());
        let n = buf.len().min(self.data.len() - from);
        buf[..n].copy_from_slice(&self.data[from..from + n]);
        Ok(n)
    }
    fn write_at(&self, _: &[u8], _: u64) -> std::io::Result<usize> {
        Err(std::io::Error::other("a log read from memory is read-only"))
    }
    fn sync_data(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.data.len() as u64)
    }
    fn set_len(&self, _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("a log read from memory is read-only"))
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

/// Read the log `file` (at `path`) from `from`, a snapshot's position: the header, then
/// the blocks after `from` (the bytes before it are never read: a checkpoint may have
/// freed them), streamed by `storage::valuelog::LogReader`: at the first invalid block,
/// a valid block anywhere after it is damage in the middle (refused in one line, with
/// a word on zeroed pages), none a torn tail (the normal trace of a crash), reported in
/// `torn_bytes`. Refused too: a file that ends before `from` (it lost commands the
/// snapshot says it holds), a block whose first sequence number does not continue the
/// last (the first: `from.commands`), a block of another kind.
pub fn read_log_at(file: &dyn File, path: &Path, from: LogPosition) -> Result<LogContents> {
    let refuse = |why: String| {
        Error::fatal(format!(
            "log file {}: {why}: damaged, refused, the file is left as it is",
            path.display()
        ))
    };
    let mut r = LogReader::new_at(file, path, &HEADER, &BLOCKS, from.offset)
        .map_err(Error::Fatal)?
        .zeroed_hint(", zeroed pages: freed by a later checkpoint than this snapshot, or damaged");
    let header = r.header;
    let len = file
        .len()
        .map_err(|e| Error::fatal(format!("log file {}: {e}", path.display())))?;
    if len < from.offset {
        return Err(Error::fatal(format!(
            "log file {} ends at byte {len} before byte {} where the snapshot's commands end: the log was cut and lost acknowledged commits, refused, the file is left as it is",
            path.display(),
            from.offset
        )));
    }
    let mut commands = Vec::new();
    while let Some(b) = r.next_block().map_err(Error::Fatal)? {
        let next = from.commands + commands.len() as u64;
        if b.kind != BLOCK_DATA {
            return Err(refuse(format!(
                "the block at byte {} is of kind {}, not a block of commands",
                b.offset, b.kind
            )));
        }
        if b.durable != next {
            return Err(refuse(format!(
                "the block at byte {} starts at command {}, {next} expected",
                b.offset, b.durable
            )));
        }
        parse_commands(b.payload, &mut commands);
    }
    let end = r.end().expect("the reader reached the end");
    Ok(LogContents {
        header,
        commands,
        valid_bytes: end.valid,
        torn_bytes: end.torn_bytes,
    })
}

/// The log `file`'s header, verified.
pub fn read_header(file: &dyn File, path: &Path) -> Result<FileHeader> {
    storage::valuelog::read_header(file, path, &HEADER).map_err(Error::Fatal)
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

    /// The header is format 2's, byte for byte (checksum computed apart, with
    /// Python's zlib.crc32).
    #[test]
    fn header_bytes_are_format_2() {
        let h = FileHeader {
            database_id: 0x0102_0304_0506_0708,
            schema: 0xA1B2_C3D4,
        };
        let want = b"OLTPPLOG\x02\0\0\0part\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\xA7\x0C\xCD\xEA";
        assert_eq!(&HEADER.encode(&h), want);
        assert_eq!(HEADER.decode(want, Path::new(P)), Ok(h));
    }

    /// A block is `storage::valuelog`'s, byte for byte: magic, payload bytes, first
    /// command's sequence number, count, kind 0, zero, CRC-32 (zlib.crc32 of header
    /// bytes 0..28 and the payload), payload.
    #[test]
    fn a_block_is_the_value_logs_block_byte_for_byte() {
        let mut p = Vec::new();
        append_command(&mut p, 3, b"ab");
        let b = seal_block(&p, 7, 1);
        let want: Vec<u8> = [
            &b"PBLK"[..],
            &10u32.to_le_bytes(),
            &7u64.to_le_bytes(),
            &1u32.to_le_bytes(),
            &0u32.to_le_bytes(),
            &0u32.to_le_bytes(),
            &0xacd3_b7a6u32.to_le_bytes(),
            &3u32.to_le_bytes(),
            &2u32.to_le_bytes(),
            b"ab",
        ]
        .concat();
        assert_eq!(b, want);
    }

    /// A log of format 1 (earlier builds: 24-byte block headers) is refused by its
    /// header, in one line saying how to start over, before any block is read.
    #[test]
    fn a_format_1_log_is_refused_in_one_line() {
        let mut f = b"OLTPPLOG\x01\0\0\0part\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\x6D\x41\x64\x45".to_vec();
        // A format-1 block: magic, payload bytes, first command, count, CRC-32.
        let mut p = Vec::new();
        append_command(&mut p, 1, b"x");
        let mut b = BLOCK_MAGIC.to_le_bytes().to_vec();
        b.extend((p.len() as u32).to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        let c = crc(&[&b, &p]);
        b.extend(c.to_le_bytes());
        f.extend(b);
        f.extend(&p);
        let e = read_log(&f, Path::new(P)).unwrap_err().to_string();
        assert!(
            e.contains("log format 1, this oltpscope reads format 2")
                && e.contains("--reload")
                && e.contains("refused"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    /// A block of another kind than commands (a value log's restart block, say) with
    /// this log's magic is refused, never read as commands.
    #[test]
    fn a_block_of_another_kind_is_refused() {
        let mut f = HEADER.encode(&header()).to_vec();
        let mut p = Vec::new();
        append_command(&mut p, 1, b"x");
        let mut b = vec![0u8; BLOCK_HEADER_BYTES];
        b.extend(&p);
        BLOCKS.seal(&mut b, 0, 1, storage::valuelog::BLOCK_RESTART);
        f.extend(b);
        let e = read_log(&f, Path::new(P)).unwrap_err().to_string();
        assert!(e.contains("of kind 1, not a block of commands"), "{e}");
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
