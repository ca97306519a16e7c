//! Database directories: which engine made one (from the engines' own files, so no
//! extra file is needed), and `oltpscope drop`, which removes only those files.
//!
//! Must never: remove a file an engine does not recognise as its own, or guess an engine
//! for a directory whose files say nothing.

use crate::args::EngineName;
use std::path::Path;

/// The engine whose files `dir` holds: the disk engine's control file, the memory or
/// mvcc engine's log or load marker, or the partitioned engine's log or snapshot. `None` when it holds none (or does not exist).
pub fn detect(dir: &Path) -> Option<EngineName> {
    if dir.join(engine_disk::checkpoint::CONTROL).exists() {
        return Some(EngineName::Disk);
    }
    let m = [
        engine_memory::log::LOG_FILE,
        engine_memory::log::MARKER_FILE,
    ];
    if m.iter().any(|f| dir.join(f).exists()) {
        return Some(EngineName::Memory);
    }
    let v = [engine_mvcc::log::LOG_FILE, engine_mvcc::log::MARKER_FILE];
    if v.iter().any(|f| dir.join(f).exists()) {
        return Some(EngineName::Mvcc);
    }
    let p = [
        engine_partitioned::log::LOG_FILE,
        engine_partitioned::snapshot::SNAPSHOT_FILE,
    ];
    if p.iter().any(|f| dir.join(f).exists()) {
        return Some(EngineName::Partitioned);
    }
    if dir.join(engine_sqlite::DB_FILE).exists() {
        return Some(EngineName::Sqlite);
    }
    None
}

/// The engine that opens `dir`: `--engine` if given (refused when the directory holds
/// another engine's database), else the one that made it, else `fallback`.
pub fn resolve(
    given: Option<EngineName>,
    dir: Option<&Path>,
    fallback: Option<EngineName>,
) -> Result<EngineName, String> {
    let found = dir.and_then(detect);
    match (given, found) {
        (Some(g), Some(f)) if g != f => Err(format!(
            "{} holds {} {}-engine database: --engine {} cannot open it (leave --engine out to use the engine that made it)",
            dir.map_or(String::new(), |d| d.display().to_string()),
            if f == EngineName::Mvcc { "an" } else { "a" },
            f.as_str(),
            g.as_str()
        )),
        (Some(g), _) => Ok(g),
        (None, Some(f)) => Ok(f),
        (None, None) => match (fallback, dir) {
            (Some(e), _) => Ok(e),
            (None, Some(d)) => Err(format!(
                "{} holds no oltpscope database (no disk-engine control file, no memory-, mvcc- or partitioned-engine log, no SQLite file)",
                d.display()
            )),
            (None, None) => Err("give the database directory with --db DIR".into()),
        },
    }
}

/// `oltpscope drop --db DIR`: remove the database in `dir` (and the disk engine's log in
/// `log_dir`) and then the directory, refusing if it holds any file its engine does not
/// recognise as its own.
pub fn drop_database(dir: &Path, log_dir: Option<&Path>) -> Result<String, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let engine = resolve(None, Some(dir), None)?;
    let st = storage::os();
    let names = |d: &Path| -> Result<Vec<String>, String> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(d).map_err(|e| format!("cannot list {}: {e}", d.display()))? {
            let e = e.map_err(|e| format!("cannot list {}: {e}", d.display()))?;
            v.push(e.file_name().to_string_lossy().into_owned());
        }
        Ok(v)
    };
    let own: Vec<std::path::PathBuf> = match engine {
        EngineName::Disk => {
            // A control file that is not the engine's (or is damaged) is refused here,
            // and a log directory holding another database's log (or none of this
            // one's) by `own_files`.
            let control = engine_disk::checkpoint::Control::read(&*st, dir)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("{} holds no disk-engine control file", dir.display()))?;
            engine_disk::own_files(&*st, dir, log_dir.unwrap_or(dir), &control)
                .map_err(|e| e.to_string())?
        }
        EngineName::Memory | EngineName::Mvcc => {
            if log_dir.is_some_and(|l| l != dir) {
                return Err(format!(
                    "--log-dir: the {} engine keeps its log in --db",
                    engine.as_str()
                ));
            }
            let (l, m, side) = if engine == EngineName::Memory {
                (
                    engine_memory::log::LOG_FILE,
                    engine_memory::log::MARKER_FILE,
                    &[
                        engine_memory::checkpoint::CKPT_FILE,
                        engine_memory::checkpoint::CKPT_TMP,
                    ][..],
                )
            } else {
                (
                    engine_mvcc::log::LOG_FILE,
                    engine_mvcc::log::MARKER_FILE,
                    &[
                        engine_mvcc::checkpoint::CKPT_FILE,
                        engine_mvcc::checkpoint::CKPT_TMP,
                    ][..],
                )
            };
            [
                l.to_string(),
                m.to_string(),
                format!("{l}.tmp"),
                format!("{m}.tmp"),
            ]
            .iter()
            .cloned()
            .chain(side.iter().map(|f| f.to_string()))
            .map(|n| dir.join(n))
            .filter(|p| p.exists())
            .collect()
        }
        EngineName::Partitioned => {
            if log_dir.is_some_and(|l| l != dir) {
                return Err("--log-dir: the partitioned engine keeps its log in --db".to_string());
            }
            let (l, s, m) = (
                engine_partitioned::log::LOG_FILE,
                engine_partitioned::snapshot::SNAPSHOT_FILE,
                engine_partitioned::log::MARK_FILE,
            );
            [
                l.to_string(),
                s.to_string(),
                m.to_string(),
                format!("{l}.tmp"),
                format!("{s}.tmp"),
                format!("{m}.tmp"),
            ]
            .iter()
            .map(|n| dir.join(n))
            .filter(|p| p.exists())
            .collect()
        }
        EngineName::Sqlite => {
            if log_dir.is_some_and(|l| l != dir) {
                return Err("--log-dir: SQLite keeps its log beside its database in --db".into());
            }
            engine_sqlite::own_files(dir)
        }
        EngineName::Serial | EngineName::Postgres => {
            unreachable!("detect names only the engines that keep files")
        }
    };
    let mut dirs = vec![dir];
    if let Some(l) = log_dir.filter(|l| *l != dir) {
        dirs.push(l);
    }
    for d in &dirs {
        for n in names(d)? {
            if !own.contains(&d.join(&n)) {
                return Err(format!(
                    "{} holds {n}, which is not a {}-engine file: nothing removed",
                    d.display(),
                    engine.as_str()
                ));
            }
        }
    }
    match engine {
        EngineName::Memory => {
            // Marker before log (as --reload does): a crash in between leaves a log that
            // is still recognised, never a marker alone.
            engine_memory::recovery::log_dir(dir)
                .remove_with(&*st, &[engine_memory::checkpoint::SIDE])
                .map_err(|e| e.to_string())?;
        }
        EngineName::Mvcc => {
            // Marker before log, as the mvcc engine's --reload does.
            engine_mvcc::recovery::log_dir(dir)
                .remove_with(&*st, &[engine_mvcc::checkpoint::SIDE])
                .map_err(|e| e.to_string())?;
        }
        EngineName::Partitioned => {
            // Snapshot before log, as the partitioned engine's --reload does.
            engine_partitioned::durable::Dir::new(dir)
                .remove(&*st)
                .map_err(|e| e.to_string())?;
        }
        EngineName::Sqlite => {
            // The database file last: until it goes, the directory is still recognised.
            let db = dir.join(engine_sqlite::DB_FILE);
            for f in own.iter().filter(|f| **f != db).chain([&db]) {
                std::fs::remove_file(f)
                    .map_err(|e| format!("cannot remove {}: {e}", f.display()))?;
            }
        }
        _ => {
            // In `own_files`' order: the data file first (then its log is no longer
            // required), the control file last (until it goes, the directory is still
            // recognised and refused by the engine as incomplete), so a second drop
            // can finish.
            for f in &own {
                std::fs::remove_file(f)
                    .map_err(|e| format!("cannot remove {}: {e}", f.display()))?;
            }
        }
    }
    for f in &own {
        if f.exists() {
            std::fs::remove_file(f).map_err(|e| format!("cannot remove {}: {e}", f.display()))?;
        }
    }
    for d in dirs.iter().rev() {
        std::fs::remove_dir(d).map_err(|e| format!("cannot remove {}: {e}", d.display()))?;
    }
    Ok(format!(
        "dropped the {}-engine database in {} ({} files)",
        engine.as_str(),
        dir.display(),
        own.len()
    ))
}
