//! `identity`: the memory engine's file names and file headers (log, checkpoint, load
//! marker), kept below both in-memory engines so that the mvcc engine can recognise and
//! refuse the memory engine's files by name without depending on that engine. The mvcc
//! engine's own identity stays in its crate (nothing else needs it).
//!
//! Must never change a byte of these headers or names: databases written before they
//! moved here must still open (`the_memory_engine_headers_keep_their_bytes`).

/// The memory engine's files.
pub mod memory {
    use crate::logfile::{HeaderFormat, MarkerFormat};

    pub const LOG_FILE: &str = "memory.log";
    pub const MARKER_FILE: &str = "memory.loaded";
    pub const FILE_MAGIC: &[u8; 8] = b"OLTPMLOG";
    pub const MARKER_MAGIC: &[u8; 8] = b"OLTPMLDN";
    pub const FORMAT_VERSION: u32 = 3;
    pub const CKPT_FILE: &str = "memory.ckpt";
    /// The checkpoint being written (renamed to `CKPT_FILE` when whole).
    pub const CKPT_TMP: &str = "memory.ckpt.tmp";
    pub const CKPT_MAGIC: &[u8; 8] = b"OLTPMCKP";
    pub const CKPT_VERSION: u32 = 1;
    /// The files whose presence makes a directory the memory engine's.
    pub const OWNED: &[&str] = &[LOG_FILE, MARKER_FILE];

    /// The log's file header (bytes 12..16 zero: it names no engine).
    pub const LOG: HeaderFormat = HeaderFormat {
        magic: FILE_MAGIC,
        version: FORMAT_VERSION,
        tag: None,
        label: "log file",
        kind: "log",
        what: "a memory-engine log",
        version_hint: " (logs of formats 1 and 2 cannot be replayed by this build: remove it or rerun with --reload)",
        others: &[],
    };

    /// The checkpoint file's header.
    pub const CKPT: HeaderFormat = HeaderFormat {
        magic: CKPT_MAGIC,
        version: CKPT_VERSION,
        tag: None,
        label: "checkpoint file",
        kind: "checkpoint",
        what: "a memory-engine checkpoint",
        version_hint: "",
        others: &[&LOG],
    };

    /// The load marker `MARKER_FILE`: magic `MARKER_MAGIC`, `u32` version, `u32` zero,
    /// `u64` database id, `u64` length of the log when the load was durable, `u32`
    /// CRC-32 of bytes 0..32. Written with `storage::write_atomic` once the load is
    /// durable.
    pub const MARKER: MarkerFormat = MarkerFormat {
        magic: MARKER_MAGIC,
        version: FORMAT_VERSION,
        what: "a memory-engine load marker",
    };
}

#[cfg(test)]
mod tests {
    use super::memory;
    use crate::logfile::{Header, HEADER_BYTES};
    use std::path::Path;

    /// The bytes a file header had when these formats lived in the memory engine
    /// (literal, not from the constants): such files must still be recognised.
    fn old_header(magic: &[u8; 8], version: u32, h: &Header) -> Vec<u8> {
        let mut b = magic.to_vec();
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&h.database_id.to_le_bytes());
        b.extend_from_slice(&h.schema.to_le_bytes());
        b
    }

    #[test]
    fn the_memory_engine_headers_keep_their_bytes() {
        let h = Header {
            database_id: 0x0123_4567_89ab_cdef,
            schema: 0x2901_568f,
        };
        for (f, magic, version) in [
            (&memory::LOG, b"OLTPMLOG", 3),
            (&memory::CKPT, b"OLTPMCKP", 1),
        ] {
            let old = old_header(magic, version, &h);
            let new = f.encode(&h);
            assert_eq!(HEADER_BYTES, new.len());
            assert_eq!(&new[..old.len()], &old[..], "{}", f.what);
            assert_eq!(f.decode(&new, Path::new("x")), Ok(h));
        }
        assert_eq!(
            (
                memory::LOG_FILE,
                memory::MARKER_FILE,
                memory::CKPT_FILE,
                memory::CKPT_TMP
            ),
            (
                "memory.log",
                "memory.loaded",
                "memory.ckpt",
                "memory.ckpt.tmp"
            )
        );
        assert_eq!(memory::OWNED, &["memory.log", "memory.loaded"]);
    }
}
