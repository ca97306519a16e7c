//! Database directories: which engine made one (from the engines' own files, so no
//! extra file is needed), and `oltpscope drop`, which removes only those files.
//!
//! Must never: remove a file an engine does not recognise as its own, or guess an engine
//! for a directory whose files say nothing.

use crate::engines::EngineName;
use std::path::Path;

/// The engine whose files `dir` holds (each engine's descriptor recognises its own).
/// `None` when it holds none (or does not exist).
pub fn detect(dir: &Path) -> Option<EngineName> {
    EngineName::owning(&*storage::os(), dir)
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
    let desc = engine.descriptor();
    let own = (desc.db_files)(&*st, dir, log_dir).map_err(|e| e.to_string())?;
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
    // In the engine's order, which leaves a removal cut short still recognised.
    (desc.remove_db)(&*st, dir, &own).map_err(|e| e.to_string())?;
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
