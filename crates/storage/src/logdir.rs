//! `logdir`: the directory life cycle of a value log with a load marker (the `memory`
//! and `mvcc` engines): which files it holds, creating a new log, removing both files on
//! `--reload` or `drop` (only if they are this engine's), and opening an existing log for
//! recovery with its marker checked: the marker must name the log's database, and the
//! log's valid part must reach the length the marker records as durable (the load's
//! end, then the durable mark the flusher advances, `logfile::MarkFile`).
//!
//! The engines keep their own replay; this module never reads a block. Refusals are
//! one-line `String`s (this crate does not know `api`).
//!
//! Must never: remove a file that is not this engine's, remove the log before its
//! marker (a crash in between would leave a marker without its log), or accept a log
//! that ends before its durable mark.

use crate::logfile::{
    Header, HeaderFormat, LoadMarker, MarkFile, MarkerFormat, Restart, HEADER_BYTES,
};
use crate::valuelog::LogEnd;
use crate::{File, Open, Storage};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What one engine's log directory holds.
#[derive(Debug)]
pub struct LogDirFormat {
    /// The log's file name.
    pub log: &'static str,
    /// The load marker's (and durable mark's) file name.
    pub marker: &'static str,
    pub header: &'static HeaderFormat,
    pub marker_format: &'static MarkerFormat,
}

/// A file kept beside the log (the memory engine's checkpoint): its name and header
/// format, for [`LogDir::remove_with`].
#[derive(Debug, Clone, Copy)]
pub struct SideFile {
    pub name: &'static str,
    pub header: &'static HeaderFormat,
}

/// The files of one log directory.
#[derive(Debug, Clone)]
pub struct LogDir {
    pub dir: PathBuf,
    pub log: PathBuf,
    pub marker: PathBuf,
    pub format: &'static LogDirFormat,
}

/// Where a flusher appends: the open file, the offset after its valid part, and the
/// durable counter of the log so far (0 for a new log).
pub struct LogTail {
    pub file: Arc<dyn File>,
    pub path: PathBuf,
    pub database_id: u64,
    pub offset: u64,
    pub durable: u64,
    /// A recovered log: before its first block the flusher makes its valid part safe
    /// to build on and cuts a torn tail (`Restart::prepare`), then writes its restart
    /// block. Nothing is written to a recovered log until a commit needs it, so a run
    /// refused after opening (or one that commits nothing) leaves the file as it was.
    pub restart: Option<Restart>,
}

/// An existing log opened for recovery: its file, header and marker, checked against
/// each other. Replay it, then [`LogDir::check_end`] its valid length.
pub struct Opened {
    pub file: Arc<dyn File>,
    pub header: Header,
    pub marker: LoadMarker,
}

fn err(what: &str, e: io::Error) -> String {
    // Storage errors already name the file; keep one line.
    format!("{what}: {e}")
}

impl LogDir {
    pub fn new(dir: &Path, format: &'static LogDirFormat) -> Self {
        LogDir {
            dir: dir.to_path_buf(),
            log: dir.join(format.log),
            marker: dir.join(format.marker),
            format,
        }
    }

    fn exists(&self, st: &dyn Storage, p: &Path) -> Result<bool, String> {
        st.exists(p).map_err(|e| err("looking for the log", e))
    }

    pub fn has_log(&self, st: &dyn Storage) -> Result<bool, String> {
        self.exists(st, &self.log)
    }

    pub fn has_marker(&self, st: &dyn Storage) -> Result<bool, String> {
        self.exists(st, &self.marker)
    }

    /// `--reload` or `drop`: remove this engine's log and marker (the marker first: a
    /// crash in between leaves a log whose load is unfinished, never a marker without
    /// its log). A file that is not this engine's is refused, and nothing is removed.
    pub fn remove(&self, st: &dyn Storage) -> Result<(), String> {
        self.remove_with(st, &[])
    }

    /// [`LogDir::remove`] of a directory that also holds `side` files (the memory
    /// engine's checkpoint), removed after the marker and before the log, each with its
    /// temporary file (`<name>.tmp`, the one an interrupted atomic write leaves), all
    /// checked before anything is removed. Order: marker, side files, log. A crash in
    /// between leaves a log without marker (refused as an unfinished load) and at most
    /// some side files, never a marker without its log.
    pub fn remove_with(&self, st: &dyn Storage, side: &[SideFile]) -> Result<(), String> {
        let log_here = self.has_log(st)?;
        if log_here {
            let f = st
                .open(&self.log, Open::Read)
                .map_err(|e| err("opening the log", e))?;
            let mut head = [0u8; 16];
            let n = f
                .read_full_at(&mut head, 0)
                .map_err(|e| err("reading the log", e))?;
            if !self.format.header.looks_like(&head[..n]) {
                return Err(format!(
                    "{} is not {}: oltpscope refuses to remove it",
                    self.log.display(),
                    self.format.header.what
                ));
            }
        }
        let marker_here = self.has_marker(st)?;
        if marker_here {
            let b = st
                .read(&self.marker)
                .map_err(|e| err("reading the load marker", e))?;
            if !self.format.marker_format.looks_like(&b) {
                return Err(format!(
                    "{} is not {}: oltpscope refuses to remove it",
                    self.marker.display(),
                    self.format.marker_format.what
                ));
            }
        }
        let mut sides = Vec::new();
        for s in side {
            for (name, tmp) in [
                (s.name.to_string(), false),
                (format!("{}.tmp", s.name), true),
            ] {
                let p = self.dir.join(&name);
                if !self.exists(st, &p)? {
                    continue;
                }
                let f = st.open(&p, Open::Read).map_err(|e| err("opening", e))?;
                let mut head = [0u8; 16];
                let n = f
                    .read_full_at(&mut head, 0)
                    .map_err(|e| err("reading", e))?;
                // A temporary file may be cut anywhere (a crash while it was written):
                // what it holds must still begin like the format.
                let ours = s.header.looks_like(&head[..n])
                    || (tmp && n < 8 && head[..n] == s.header.magic[..n]);
                if !ours {
                    return Err(format!(
                        "{} is not {}: oltpscope refuses to remove it",
                        p.display(),
                        s.header.what
                    ));
                }
                sides.push(p);
            }
        }
        if marker_here {
            st.remove(&self.marker)
                .map_err(|e| err("removing the load marker", e))?;
            // The marker's removal is durable before anything else goes: a crash never
            // leaves a marker without its log.
            st.sync_dir(&self.dir)
                .map_err(|e| err("syncing the log directory", e))?;
        }
        for p in &sides {
            st.remove(p).map_err(|e| err("removing", e))?;
        }
        if log_here {
            st.remove(&self.log)
                .map_err(|e| err("removing the log", e))?;
        }
        if log_here || marker_here || !sides.is_empty() {
            st.sync_dir(&self.dir)
                .map_err(|e| err("syncing the log directory", e))?;
        }
        Ok(())
    }

    /// Create a new, empty log (header only, a new database id) atomically, and open it
    /// for appending.
    pub fn create(&self, st: &dyn Storage, schema: u32) -> Result<(Arc<dyn File>, Header), String> {
        st.create_dir_all(&self.dir)
            .map_err(|e| err("creating the log directory", e))?;
        let header = Header {
            database_id: crate::random_id(),
            schema,
        };
        crate::write_atomic(
            st,
            &self.dir,
            self.format.log,
            &self.format.header.encode(&header),
        )
        .map_err(|e| err("creating the log", e))?;
        let file = st
            .open(&self.log, Open::ReadWrite)
            .map_err(|e| err("opening the log", e))?;
        Ok((file, header))
    }

    /// Create a new, empty log and say where its flusher appends.
    pub fn create_tail(&self, st: &dyn Storage, schema: u32) -> Result<LogTail, String> {
        let (file, header) = self.create(st, schema)?;
        Ok(LogTail {
            file,
            path: self.log.clone(),
            database_id: header.database_id,
            offset: HEADER_BYTES as u64,
            durable: 0,
            restart: None,
        })
    }

    /// Where the flusher continues a recovered log `o` whose valid part ends at `valid`
    /// (`torn`: garbage follows), `durable` its durable counter; nothing before
    /// `read_from` was read by recovery (a checkpoint covers it), so nothing before it is
    /// made durable again.
    pub fn recovered_tail(
        &self,
        o: Opened,
        valid: u64,
        torn: bool,
        durable: u64,
        read_from: u64,
    ) -> LogTail {
        LogTail {
            file: o.file,
            path: self.log.clone(),
            database_id: o.header.database_id,
            offset: valid,
            durable,
            restart: Some(Restart {
                torn,
                marked: o.marker.log_bytes.max(read_from),
            }),
        }
    }

    /// Recover from the existing log (the file is only read): `open` it (`append`: for
    /// writing after), run the engine's `replay` over it (the file and its path), take
    /// from what replay returns its valid end, its durable counter and where it began
    /// reading (`found`: nothing before it is made durable again), refuse a log that
    /// ends before its durable mark (`check_end`), and with `append` say where the
    /// flusher continues (`recovered_tail`). Nothing is written here: the flusher cuts a
    /// torn tail and writes the restart block before its first block
    /// (`LogTail::restart`). `fatal` makes this module's refusals the engine's errors.
    pub fn recover<R, E>(
        &self,
        st: &dyn Storage,
        append: bool,
        fatal: fn(String) -> E,
        replay: impl FnOnce(&dyn File, &Path) -> Result<R, E>,
        found: impl FnOnce(&R) -> (LogEnd, u64, u64),
    ) -> Result<(R, Option<LogTail>), E> {
        let o = self.open(st, append).map_err(fatal)?;
        let r = replay(&*o.file, self.log.as_path())?;
        let (end, durable, read_from) = found(&r);
        debug_assert!(
            end.valid >= HEADER_BYTES as u64,
            "a valid log holds its header"
        );
        self.check_end(end.valid, &o.marker).map_err(fatal)?;
        let tail = append
            .then(|| self.recovered_tail(o, end.valid, end.torn_bytes > 0, durable, read_from));
        Ok((r, tail))
    }

    /// The log's verified header.
    pub fn read_header(&self, f: &dyn File) -> Result<Header, String> {
        let mut b = [0u8; HEADER_BYTES];
        let n = f
            .read_full_at(&mut b, 0)
            .map_err(|e| format!("log file {}: {e}", self.log.display()))?;
        self.format.header.decode(&b[..n], &self.log)
    }

    /// The load marker, checked against the log's database id.
    pub fn read_marker(&self, st: &dyn Storage, header: &Header) -> Result<LoadMarker, String> {
        if !self.has_marker(st)? {
            return Err(format!(
                "the load did not finish in {} (no {}): remove {} or rerun with --reload",
                self.dir.display(),
                self.format.marker,
                self.dir.display()
            ));
        }
        let b = st
            .read(&self.marker)
            .map_err(|e| err("reading the load marker", e))?;
        let m = self.format.marker_format.decode(&b, &self.marker)?;
        if m.database_id != header.database_id {
            return Err(format!(
                "{} belongs to another log (database id {:016x}, the log's is {:016x}): refused",
                self.marker.display(),
                m.database_id,
                header.database_id
            ));
        }
        Ok(m)
    }

    /// Open the existing log (`append`: for writing after recovery) with its header and
    /// marker verified. Nothing is written.
    pub fn open(&self, st: &dyn Storage, append: bool) -> Result<Opened, String> {
        let how = if append { Open::ReadWrite } else { Open::Read };
        let file = st
            .open(&self.log, how)
            .map_err(|e| err("opening the log", e))?;
        let header = self.read_header(&*file)?;
        let marker = self.read_marker(st, &header)?;
        Ok(Opened {
            file,
            header,
            marker,
        })
    }

    /// After replay: a log whose valid part (`valid` bytes) ends before the length its
    /// marker records as durable lost acknowledged commits (it was cut, or damaged
    /// where a crash never tears), and is refused.
    pub fn check_end(&self, valid: u64, marker: &LoadMarker) -> Result<(), String> {
        if valid < marker.log_bytes {
            return Err(format!(
                "log file {} ends at byte {valid} before byte {} that {} records as durable: the log was cut or damaged and lost acknowledged commits, refused, the file is left as it is",
                self.log.display(),
                marker.log_bytes,
                self.format.marker
            ));
        }
        Ok(())
    }

    /// The load marker as the log's durable mark: written when the load is durable,
    /// then advanced by the flusher (`logfile::BlockWriter::arm_mark`).
    pub fn mark_file(&self, st: Arc<dyn Storage>, database_id: u64) -> MarkFile {
        MarkFile {
            st,
            dir: self.dir.clone(),
            name: self.format.marker,
            format: self.format.marker_format,
            database_id,
            interval: crate::logfile::MARK_INTERVAL,
        }
    }
}
