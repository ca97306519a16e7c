//! `snapshot`: the whole database after the load, in one checksummed file that also
//! marks the load complete (recovery = this snapshot + the command log replayed). It is
//! written to a temporary name, fsync'd and renamed, so it exists whole or not at all;
//! any damage found reading it is an error (there is no torn tail to cut).
//!
//! File format 1 (little-endian; see docs/design/partitioned-engine.md): header (32
//! bytes) `b"OLTPPSNP"`, `u32` version, `u32` table count, `u64` database id, `u32`
//! schema fingerprint, `u32` CRC-32 of bytes 0..28; then chunks: header (16 bytes)
//! `u32` `CHUNK_MAGIC`, `u32` payload bytes, `u32` row count, `u32` CRC-32 of header
//! bytes 0..12 and the payload; payload: rows `u32` table, `u32` key bytes, `u32` row
//! bytes, key, row. Last, an end chunk (`END_MAGIC`, payload `u64` total rows).

use crate::log::FileHeader;
use api::{Error, Result};
use std::path::Path;
use storage::logfile::{crc, le32, le64, HeaderFormat};
use storage::{File, Open, Storage};

pub const SNAPSHOT_FILE: &str = "partitioned.snap";
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"OLTPPSNP";
pub const FORMAT_VERSION: u32 = 1;
pub const CHUNK_MAGIC: u32 = 0x4B4E_4843; // "CHNK"
pub const END_MAGIC: u32 = 0x2E444E45; // "END."
pub const HEADER_BYTES: usize = storage::logfile::HEADER_BYTES;
pub const CHUNK_HEADER_BYTES: usize = 16;
/// Payload size at which the writer closes a chunk.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Largest chunk payload the reader accepts (one row may exceed `CHUNK_BYTES`).
pub const MAX_CHUNK_BYTES: usize = 1 << 28;

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

fn chunk(magic: u32, payload: &[u8], rows: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(CHUNK_HEADER_BYTES + payload.len());
    b.extend_from_slice(&magic.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(&rows.to_le_bytes());
    let c = crc(&[&b[0..12], payload]);
    b.extend_from_slice(&c.to_le_bytes());
    b.extend_from_slice(payload);
    b
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
        let tmp = dir.join(format!("{SNAPSHOT_FILE}.tmp"));
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
            buf: Vec::with_capacity(CHUNK_BYTES + 4096),
            rows_in_buf: 0,
            rows: 0,
        })
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows_in_buf == 0 {
            return Ok(());
        }
        let c = chunk(CHUNK_MAGIC, &self.buf, self.rows_in_buf);
        self.file
            .write_all_at(&c, self.offset)
            .map_err(|e| io(self.file.path(), "writing the snapshot", e))?;
        self.offset += c.len() as u64;
        self.buf.clear();
        self.rows_in_buf = 0;
        Ok(())
    }

    pub fn row(&mut self, table: u32, key: &[u8], row: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(&table.to_le_bytes());
        self.buf
            .extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&(row.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(row);
        self.rows_in_buf += 1;
        self.rows += 1;
        if self.buf.len() >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Write the end chunk, fsync, and rename the file to its name (durably): from
    /// then on the database is loaded. Returns the rows written.
    pub fn finish(mut self) -> Result<u64> {
        self.flush()?;
        let end = chunk(END_MAGIC, &self.rows.to_le_bytes(), 0);
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
        Ok(self.rows)
    }
}

/// Where `read` hands each row: `(table, key, row)`.
pub type RowSink<'a> = dyn FnMut(u32, &[u8], &[u8]) -> Result<()> + 'a;

/// Read the snapshot at `path`, verifying everything, handing each row to `f(table,
/// key, row)`. Returns its header; `tables` is the schema's table count and
/// `schema` its fingerprint (another workload's snapshot is refused before any row).
pub fn read(
    st: &dyn Storage,
    path: &Path,
    tables: u32,
    schema: u32,
    f: &mut RowSink<'_>,
) -> Result<FileHeader> {
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
    let header = HEADER.decode(&h[..n], path).map_err(Error::fatal)?;
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
            if plen != 8 || le64(&payload) != rows {
                return Err(bad(format!(
                    "the end chunk does not count the {rows} rows read"
                )));
            }
            if at != len {
                return Err(bad(format!("{} bytes after the end chunk", len - at)));
            }
            return Ok(header);
        }
        let count = le32(&ch[8..12]);
        let mut p = &payload[..];
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
        rows += got as u64;
    }
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
        assert_eq!(w.finish().unwrap(), rows.len() as u64);
        dir.join(SNAPSHOT_FILE)
    }

    type Rows = Vec<(u32, Vec<u8>, Vec<u8>)>;

    fn read_all(p: &Path) -> Result<Rows> {
        let mut v = Vec::new();
        read(&*storage::os(), p, 2, 3, &mut |t, k, r| {
            v.push((t, k.to_vec(), r.to_vec()));
            Ok(())
        })?;
        Ok(v)
    }

    /// The header is format 1's, byte for byte (checksum computed apart, with
    /// Python's zlib.crc32): snapshots of earlier builds must still be read.
    #[test]
    fn header_bytes_are_format_1() {
        let h = FileHeader {
            database_id: 0x0102_0304_0506_0708,
            schema: 0xA1B2_C3D4,
        };
        let want = b"OLTPPSNP\x01\0\0\0\x03\0\0\0\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\xC7\x14\x1A\x7B";
        assert_eq!(&HEADER.encode_with_word(&h, 3u32.to_le_bytes()), want);
        assert_eq!(HEADER.decode(want, Path::new("p.snap")), Ok(h));
        assert_eq!(HeaderFormat::word(want), 3);
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
