//! `snapshot`: the whole database as of a position of the command log, in one
//! checksummed file that also marks the load complete (recovery = this snapshot + the
//! commands after its position replayed). Written after the load and at each
//! checkpoint (`checkpoint`), to a temporary name, fsync'd and renamed, so it exists
//! whole or not at all; any damage found reading it is an error (there is no torn tail
//! to cut).
//!
//! File format 2 (little-endian; see docs/design/partitioned-engine.md): header (32
//! bytes) `b"OLTPPSNP"`, `u32` version, `u32` table count, `u64` database id, `u32`
//! schema fingerprint, `u32` CRC-32 of bytes 0..28; then chunks: header (16 bytes)
//! `u32` `CHUNK_MAGIC`, `u32` payload bytes, `u32` row count, `u32` CRC-32 of header
//! bytes 0..12 and the payload; payload: rows `u32` table, `u32` key bytes, `u32` row
//! bytes, key, row. Last, an end chunk (`END_MAGIC`, payload `u64` total rows, `u64`
//! log offset and `u64` command count of the position it covers). Format 1 (written
//! only after the load) is read too: its end chunk holds the row count alone, and its
//! position is the log's start.

use crate::log::{FileHeader, LogPosition};
use api::{Error, Result};
use std::path::Path;
use storage::logfile::{crc, le32, le64, HeaderFormat};
use storage::{File, Open, Storage};

pub const SNAPSHOT_FILE: &str = "partitioned.snap";
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"OLTPPSNP";
pub const FORMAT_VERSION: u32 = 2;
/// The temporary name a snapshot is written under (renamed to `SNAPSHOT_FILE` whole).
pub const SNAPSHOT_TMP: &str = "partitioned.snap.tmp";
pub const CHUNK_MAGIC: u32 = 0x4B4E_4843; // "CHNK"
pub const END_MAGIC: u32 = 0x2E444E45; // "END."
pub const HEADER_BYTES: usize = storage::logfile::HEADER_BYTES;
pub const CHUNK_HEADER_BYTES: usize = 16;
/// Payload size at which the writer closes a chunk.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Largest chunk payload the reader accepts (one row may exceed `CHUNK_BYTES`).
pub const MAX_CHUNK_BYTES: usize = 1 << 28;
/// End-chunk payload bytes: format 2 (rows, log offset, commands) and format 1 (rows).
const END_BYTES: usize = 24;
const END_BYTES_V1: usize = 8;
// A chunk header is its magic, payload bytes, row count and checksum; the end chunk's
// payload three `u64`s (format 1: one); the payload length field holds any chunk.
const _: () = assert!(CHUNK_HEADER_BYTES == 4 * 4 && END_BYTES == 3 * 8 && END_BYTES_V1 == 8);
const _: () = assert!(CHUNK_BYTES <= MAX_CHUNK_BYTES && MAX_CHUNK_BYTES <= u32::MAX as usize);

/// The snapshot's file header; bytes 12..16 hold the table count (`tag: None`).
pub const HEADER: HeaderFormat = HeaderFormat {
    magic: SNAPSHOT_MAGIC,
    version: FORMAT_VERSION,
    tag: None,
    label: "snapshot",
    kind: "snapshot",
    what: "a partitioned-engine snapshot",
    version_hint: "",
    others: &[],
};

/// Format 1's header (read, never written).
const HEADER_V1: HeaderFormat = HeaderFormat {
    version: 1,
    ..HEADER
};

/// Append one row to a chunk buffer (which starts with `CHUNK_HEADER_BYTES` reserved).
#[inline]
pub fn put_row(buf: &mut Vec<u8>, table: u32, key: &[u8], row: &[u8]) {
    buf.extend_from_slice(&table.to_le_bytes());
    buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
    buf.extend_from_slice(&(row.len() as u32).to_le_bytes());
    buf.extend_from_slice(key);
    buf.extend_from_slice(row);
}

/// A chunk buffer: header space, then rows (`put_row`).
pub fn new_chunk() -> Vec<u8> {
    let mut b = Vec::with_capacity(CHUNK_BYTES + (64 << 10));
    b.resize(CHUNK_HEADER_BYTES, 0);
    b
}

/// Fill in the header of chunk buffer `b` (header space, then the payload).
fn seal_chunk(b: &mut [u8], magic: u32, rows: u32) {
    let plen = (b.len() - CHUNK_HEADER_BYTES) as u32;
    b[0..4].copy_from_slice(&magic.to_le_bytes());
    b[4..8].copy_from_slice(&plen.to_le_bytes());
    b[8..12].copy_from_slice(&rows.to_le_bytes());
    let c = crc(&[&b[0..12], &b[CHUNK_HEADER_BYTES..]]);
    b[12..16].copy_from_slice(&c.to_le_bytes());
}

/// Streams rows into a new snapshot file (`finish` makes it durable under its name).
pub struct Writer<'s> {
    st: &'s dyn Storage,
    dir: &'s Path,
    file: std::sync::Arc<dyn File>,
    offset: u64,
    buf: Vec<u8>,
    rows_in_buf: u32,
    rows: u64,
}

/// What `Writer::finish` made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub rows: u64,
    /// The file's length.
    pub bytes: u64,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> Error {
    if storage::is_no_space(&e) {
        Error::fatal(format!(
            "no space left on the device holding {}: {what} failed",
            path.display()
        ))
    } else {
        Error::fatal(format!("{}: {what} failed: {e}", path.display()))
    }
}

impl<'s> Writer<'s> {
    pub fn create(st: &'s dyn Storage, dir: &'s Path, h: &FileHeader, tables: u32) -> Result<Self> {
        let tmp = dir.join(SNAPSHOT_TMP);
        match st.remove(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&tmp, "removing an old temporary snapshot", e)),
        }
        let file = st
            .open(&tmp, Open::CreateNew)
            .map_err(|e| io(&tmp, "creating the snapshot", e))?;
        file.write_all_at(&HEADER.encode_with_word(h, tables.to_le_bytes()), 0)
            .map_err(|e| io(&tmp, "writing the snapshot", e))?;
        Ok(Writer {
            st,
            dir,
            file,
            offset: HEADER_BYTES as u64,
            buf: new_chunk(),
            rows_in_buf: 0,
            rows: 0,
        })
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows_in_buf == 0 {
            return Ok(());
        }
        let mut b = std::mem::take(&mut self.buf);
        let rows = self.rows_in_buf;
        self.rows -= rows as u64; // counted again by `chunk`
        self.rows_in_buf = 0;
        let r = self.chunk(&mut b, rows);
        b.truncate(CHUNK_HEADER_BYTES);
        self.buf = b;
        r
    }

    pub fn row(&mut self, table: u32, key: &[u8], row: &[u8]) -> Result<()> {
        put_row(&mut self.buf, table, key, row);
        self.rows_in_buf += 1;
        self.rows += 1;
        if self.buf.len() >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Write a whole chunk built apart (`new_chunk`, then `rows` rows by `put_row`):
    /// its header is filled in here.
    pub fn chunk(&mut self, b: &mut [u8], rows: u32) -> Result<()> {
        assert!(
            b.len() >= CHUNK_HEADER_BYTES,
            "a chunk buffer without its header space"
        );
        assert_eq!(self.rows_in_buf, 0, "a chunk written between rows");
        if rows == 0 {
            return Ok(());
        }
        seal_chunk(b, CHUNK_MAGIC, rows);
        self.file
            .write_all_at(b, self.offset)
            .map_err(|e| io(self.file.path(), "writing the snapshot", e))?;
        self.offset += b.len() as u64;
        self.rows += rows as u64;
        Ok(())
    }

    /// Write the end chunk (the rows and `pos`, the log position the rows are the
    /// state of), fsync, and rename the file to its name (durably): from then on it
    /// is the database's snapshot.
    pub fn finish(mut self, pos: LogPosition) -> Result<Written> {
        self.flush()?;
        let mut end = vec![0u8; CHUNK_HEADER_BYTES];
        end.extend_from_slice(&self.rows.to_le_bytes());
        end.extend_from_slice(&pos.offset.to_le_bytes());
        end.extend_from_slice(&pos.commands.to_le_bytes());
        seal_chunk(&mut end, END_MAGIC, 0);
        let path = self.file.path().to_path_buf();
        self.file
            .write_all_at(&end, self.offset)
            .map_err(|e| io(&path, "writing the snapshot", e))?;
        self.file
            .sync_data()
            .map_err(|e| io(&path, "fsync of the snapshot", e))?;
        let to = self.dir.join(SNAPSHOT_FILE);
        self.st
            .rename(&path, &to)
            .map_err(|e| io(&to, "renaming the snapshot into place", e))?;
        self.st
            .sync_dir(self.dir)
            .map_err(|e| io(self.dir, "fsync of the directory", e))?;
        Ok(Written {
            rows: self.rows,
            bytes: self.offset + end.len() as u64,
        })
    }
}

/// What `read` found besides the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub header: FileHeader,
    /// The log position whose state the rows are: recovery replays from there.
    pub position: LogPosition,
    /// The file's length.
    pub bytes: u64,
}

/// Where `read` hands each row: `(table, key, row)`.
pub type RowSink<'a> = dyn FnMut(u32, &[u8], &[u8]) -> Result<()> + 'a;

/// Read the snapshot at `path`, verifying everything, handing each row to `f(table,
/// key, row)`. Returns its header and position; `tables` is the schema's table count
/// and `schema` its fingerprint (another workload's snapshot is refused before any
/// row).
pub fn read(
    st: &dyn Storage,
    path: &Path,
    tables: u32,
    schema: u32,
    f: &mut RowSink<'_>,
) -> Result<Snapshot> {
    let bad = |what: String| {
        Error::fatal(format!(
            "snapshot {}: {what}: refused, the file is left as it is",
            path.display()
        ))
    };
    let file = st
        .open(path, Open::Read)
        .map_err(|e| io(path, "opening the snapshot", e))?;
    let len = file
        .len()
        .map_err(|e| io(path, "reading the snapshot", e))?;
    let mut h = [0u8; HEADER_BYTES];
    let n = file
        .read_full_at(&mut h, 0)
        .map_err(|e| io(path, "reading the snapshot", e))?;
    // Format 1 (the load's snapshot of earlier builds) is read too.
    let v1 = n >= 12 && le32(&h[8..12]) == 1;
    let format = if v1 { &HEADER_V1 } else { &HEADER };
    let header = format.decode(&h[..n], path).map_err(Error::fatal)?;
    if HeaderFormat::word(&h) != tables {
        return Err(bad(format!(
            "{} tables, this workload has {tables}: another workload's database",
            HeaderFormat::word(&h)
        )));
    }
    if header.schema != schema {
        return Err(bad(
            "written for another schema: another workload's database".into(),
        ));
    }
    let mut at = HEADER_BYTES as u64;
    let mut rows = 0u64;
    let mut payload = Vec::new();
    loop {
        let mut ch = [0u8; CHUNK_HEADER_BYTES];
        let n = file
            .read_full_at(&mut ch, at)
            .map_err(|e| io(path, "reading the snapshot", e))?;
        if n < CHUNK_HEADER_BYTES {
            return Err(bad(format!("cut short at byte {at} (no end chunk)")));
        }
        let magic = le32(&ch[0..4]);
        let plen = le32(&ch[4..8]) as usize;
        if (magic != CHUNK_MAGIC && magic != END_MAGIC) || plen > MAX_CHUNK_BYTES {
            return Err(bad(format!("damaged at byte {at} (no chunk header)")));
        }
        payload.resize(plen, 0);
        let n = file
            .read_full_at(&mut payload, at + CHUNK_HEADER_BYTES as u64)
            .map_err(|e| io(path, "reading the snapshot", e))?;
        if n < plen {
            return Err(bad(format!("cut short in the chunk at byte {at}")));
        }
        if crc(&[&ch[0..12], &payload]) != le32(&ch[12..16]) {
            return Err(bad(format!("checksum mismatch in the chunk at byte {at}")));
        }
        at += (CHUNK_HEADER_BYTES + plen) as u64;
        if magic == END_MAGIC {
            if plen != if v1 { END_BYTES_V1 } else { END_BYTES } || le64(&payload) != rows {
                return Err(bad(format!(
                    "the end chunk does not count the {rows} rows read"
                )));
            }
            if at != len {
                return Err(bad(format!("{} bytes after the end chunk", len - at)));
            }
            let position = if v1 {
                LogPosition::START
            } else {
                LogPosition {
                    offset: le64(&payload[8..16]),
                    commands: le64(&payload[16..24]),
                }
            };
            if position.offset < LogPosition::START.offset || position.commands > position.offset {
                return Err(bad(format!("an impossible log position {position:?}")));
            }
            return Ok(Snapshot {
                header,
                position,
                bytes: len,
            });
        }
        let count = le32(&ch[8..12]);
        rows += chunk_rows(&payload, count, tables, at, f, &bad)?;
    }
}

/// Hand each row of a chunk's `payload` (ending at byte `at`; `count` rows by its
/// header, each of a table below `tables`) to `f`; returns the number of rows.
fn chunk_rows(
    payload: &[u8],
    count: u32,
    tables: u32,
    at: u64,
    f: &mut RowSink<'_>,
    bad: &dyn Fn(String) -> Error,
) -> Result<u64> {
    let mut p = payload;
    let mut got = 0u32;
    while !p.is_empty() {
        if p.len() < 12 {
            return Err(bad(format!("a row cut short in the chunk at byte {at}")));
        }
        let (t, k, r) = (
            le32(&p[0..4]),
            le32(&p[4..8]) as usize,
            le32(&p[8..12]) as usize,
        );
        if t >= tables || k > api::key::MAX_KEY_LEN || p.len() < 12 + k + r {
            return Err(bad(format!(
                "a damaged row in the chunk ending at byte {at}"
            )));
        }
        f(t, &p[12..12 + k], &p[12 + k..12 + k + r])?;
        p = &p[12 + k + r..];
        got += 1;
    }
    if got != count {
        return Err(bad(format!(
            "{got} rows in the chunk ending at byte {at}, its header says {count}"
        )));
    }
    Ok(got as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rows: &[(u32, &[u8], &[u8])]) -> std::path::PathBuf {
        let st = storage::os();
        let h = FileHeader {
            database_id: 9,
            schema: 3,
        };
        let mut w = Writer::create(&*st, dir, &h, 2).unwrap();
        for (t, k, r) in rows {
            w.row(*t, k, r).unwrap();
        }
        let pos = LogPosition {
            offset: 1000,
            commands: 17,
        };
        assert_eq!(w.finish(pos).unwrap().rows, rows.len() as u64);
        dir.join(SNAPSHOT_FILE)
    }

    type Rows = Vec<(u32, Vec<u8>, Vec<u8>)>;

    fn read_all(p: &Path) -> Result<Rows> {
        Ok(read_with_position(p)?.0)
    }

    fn read_with_position(p: &Path) -> Result<(Rows, Snapshot)> {
        let mut v = Vec::new();
        let s = read(&*storage::os(), p, 2, 3, &mut |t, k, r| {
            v.push((t, k.to_vec(), r.to_vec()));
            Ok(())
        })?;
        Ok((v, s))
    }

    /// The headers of formats 1 and 2, byte for byte (checksums computed apart, with
    /// Python's zlib.crc32): snapshots of earlier builds must still be read.
    #[test]
    fn header_bytes_are_formats_1_and_2() {
        let h = FileHeader {
            database_id: 0x0102_0304_0506_0708,
            schema: 0xA1B2_C3D4,
        };
        let v1 = b"OLTPPSNP\x01\0\0\0\x03\0\0\0\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\xC7\x14\x1A\x7B";
        assert_eq!(&HEADER_V1.encode_with_word(&h, 3u32.to_le_bytes()), v1);
        assert_eq!(HEADER_V1.decode(v1, Path::new("p.snap")), Ok(h));
        assert_eq!(HeaderFormat::word(v1), 3);
        let v2 = b"OLTPPSNP\x02\0\0\0\x03\0\0\0\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\x0DY\xB3\xD4";
        assert_eq!(&HEADER.encode_with_word(&h, 3u32.to_le_bytes()), v2);
        assert_eq!(HEADER.decode(v2, Path::new("p.snap")), Ok(h));
    }

    /// A format-1 snapshot (the load's, of an earlier build: its end chunk holds the
    /// row count only) is read, and stands at the log's start.
    #[test]
    fn a_format_1_snapshot_is_read_at_the_log_start() {
        let d = tempfile::tempdir().unwrap();
        let h = FileHeader {
            database_id: 9,
            schema: 3,
        };
        let mut f = HEADER_V1.encode_with_word(&h, 2u32.to_le_bytes()).to_vec();
        let mut c = new_chunk();
        put_row(&mut c, 1, b"k", b"row");
        seal_chunk(&mut c, CHUNK_MAGIC, 1);
        f.extend(&c);
        let mut end = vec![0u8; CHUNK_HEADER_BYTES];
        end.extend(1u64.to_le_bytes());
        seal_chunk(&mut end, END_MAGIC, 0);
        f.extend(&end);
        let p = d.path().join(SNAPSHOT_FILE);
        std::fs::write(&p, &f).unwrap();
        let (rows, s) = read_with_position(&p).unwrap();
        assert_eq!(rows, vec![(1, b"k".to_vec(), b"row".to_vec())]);
        assert_eq!((s.position, s.bytes), (LogPosition::START, f.len() as u64));
        // A format-1 end chunk in a format-2 file (or the reverse) is damage.
        f[8] = 2;
        let c = crc(&[&f[0..28]]);
        f[28..32].copy_from_slice(&c.to_le_bytes());
        std::fs::write(&p, &f).unwrap();
        let e = read_all(&p).unwrap_err().to_string();
        assert!(e.contains("end chunk"), "{e}");
    }

    /// The position written is the position read; chunks built apart (a checkpoint's
    /// copy) and rows streamed read back alike.
    #[test]
    fn the_position_and_chunks_built_apart_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let st = storage::os();
        let h = FileHeader {
            database_id: 9,
            schema: 3,
        };
        let mut w = Writer::create(&*st, d.path(), &h, 2).unwrap();
        w.row(0, b"a", b"1").unwrap();
        w.flush().unwrap();
        let mut c = new_chunk();
        put_row(&mut c, 1, b"b", b"2");
        put_row(&mut c, 1, b"c", b"3");
        w.chunk(&mut c, 2).unwrap();
        w.chunk(&mut new_chunk(), 0).unwrap();
        let pos = LogPosition {
            offset: 4242,
            commands: 99,
        };
        let done = w.finish(pos).unwrap();
        let p = d.path().join(SNAPSHOT_FILE);
        assert!(!d.path().join(SNAPSHOT_TMP).exists());
        let (rows, s) = read_with_position(&p).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2], (1, b"c".to_vec(), b"3".to_vec()));
        assert_eq!(s.position, pos);
        assert_eq!((s.header, s.bytes), (h, done.bytes));
        assert_eq!(done.bytes, std::fs::metadata(&p).unwrap().len());
    }

    #[test]
    fn rows_round_trip_and_any_damage_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let big = vec![7u8; CHUNK_BYTES + 10];
        let rows: Vec<(u32, &[u8], &[u8])> =
            vec![(0, b"k1", b"row one"), (1, b"k2", &big), (1, b"k3", b"")];
        let p = write(d.path(), &rows);
        let got = read_all(&p).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].2, big);
        let good = std::fs::read(&p).unwrap();
        // Cut short anywhere, or any byte flipped: refused (a snapshot is renamed into
        // place whole, so it has no torn tail to cut).
        for cut in [0, 10, HEADER_BYTES, HEADER_BYTES + 20, good.len() - 1] {
            std::fs::write(&p, &good[..cut]).unwrap();
            assert!(read_all(&p).is_err(), "cut at {cut} accepted");
        }
        for flip in [3, 13, 40, HEADER_BYTES + 30, good.len() - 3] {
            let mut b = good.clone();
            b[flip] ^= 0x10;
            std::fs::write(&p, &b).unwrap();
            let e = read_all(&p).unwrap_err().to_string();
            assert!(e.contains("refused"), "flip at {flip}: {e}");
        }
        std::fs::write(&p, b"OLTPPLOG not a snapshot at all").unwrap();
        let e = read_all(&p).unwrap_err().to_string();
        assert!(e.contains("not a partitioned-engine snapshot"), "{e}");
    }
}
