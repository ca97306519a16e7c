//! Where an engine keeps its database: the logging mode, the `--db`, `--log-dir` and
//! `--log` a user gave ([`Given`]), and where the engine puts what it keeps from them
//! ([`Place`]), decided by the engine's own [`crate::Engine::place`]. The rule shared by
//! the engines whose database is their log ("`--db` or `--log-dir`, not both") is
//! written once, here ([`one_dir`]).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogMode {
    /// No log written to storage (the disk engine keeps it in memory only).
    Off,
    /// Log written by a background flusher; commit does not wait for durability.
    Async,
    /// Commit returns only once its log records are durable.
    Sync,
}

impl LogMode {
    /// The name `--log` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            LogMode::Off => "off",
            LogMode::Async => "async",
            LogMode::Sync => "sync",
        }
    }
}

/// What a user said about storage, before any default: `None` for a flag not given
/// (so an explicit `--log off` can be told from no `--log`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Given<'a> {
    pub db: Option<&'a Path>,
    pub log_dir: Option<&'a Path>,
    pub log: Option<LogMode>,
}

impl Given<'_> {
    /// The first storage flag given (`--db`, `--log-dir`, then a `--log` other than off).
    pub fn first_stored(&self) -> Option<&'static str> {
        [
            (self.db.is_some(), "--db"),
            (self.log_dir.is_some(), "--log-dir"),
            (self.log.is_some_and(|l| l != LogMode::Off), "--log"),
        ]
        .into_iter()
        .find_map(|(given, f)| given.then_some(f))
    }
}

/// Where an engine keeps its database: [`crate::EngineOptions`]' `db_dir` and `log_dir`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    pub db_dir: Option<PathBuf>,
    pub log_dir: Option<PathBuf>,
}

/// The one directory of an engine whose database lives in a single place (its log, or
/// a snapshot beside its log): `--db` and `--log-dir` both name it, so both given and
/// different is refused, `why` saying what the directory holds ("the mvcc engine keeps
/// its database in its log").
pub fn one_dir(db: Option<&Path>, log_dir: Option<&Path>, why: &str) -> Result<Option<PathBuf>> {
    match (db, log_dir) {
        (Some(a), Some(b)) if a != b => Err(Error::fatal(format!(
            "{why}: give --db or --log-dir, not both"
        ))),
        (a, b) => Ok(a.or(b).map(Path::to_path_buf)),
    }
}

/// [`one_dir`] for an engine that keeps its database only while it logs: `--db` with an
/// explicit `--log off` is refused too (nothing would be kept there).
pub fn logged_dir(g: &Given, why_one: &str, why_logged: &str) -> Result<Option<PathBuf>> {
    let dir = one_dir(g.db, g.log_dir, why_one)?;
    if dir.is_some() && g.log == Some(LogMode::Off) {
        return Err(Error::fatal(format!(
            "{why_logged}: --db needs --log async or --log sync (with --log off nothing is kept)"
        )));
    }
    Ok(dir)
}

/// Those of `names` that exist in `dir` (a database's files, for `oltpscope drop`).
pub fn existing(st: &dyn storage::Storage, dir: &Path, names: &[&str]) -> Vec<PathBuf> {
    names
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| st.exists(p).unwrap_or(false))
        .collect()
}

/// Whether any of `names` exists in `dir` (how an engine recognises its directory).
pub fn any_exists(st: &dyn storage::Storage, dir: &Path, names: &[&str]) -> bool {
    names
        .iter()
        .any(|n| st.exists(&dir.join(n)).unwrap_or(false))
}

/// Refuse a `--log-dir` apart from `--db` for an engine that keeps its log in `dir`.
pub fn log_in_db(dir: &Path, log_dir: Option<&Path>, why: &str) -> Result<()> {
    match log_dir {
        Some(l) if l != dir => Err(Error::fatal(format!("--log-dir: {why}"))),
        _ => Ok(()),
    }
}

/// The files of an engine that keeps its log in its database directory `dir` (for
/// `oltpscope drop`): those of `with_tmp` and their `.tmp` twins (written, then renamed
/// into place), and those of `others`, that exist. A `--log-dir` apart from `dir` is
/// refused with `who` ("the memory engine").
pub fn log_db_files(
    st: &dyn storage::Storage,
    dir: &Path,
    log_dir: Option<&Path>,
    who: &str,
    with_tmp: &[&str],
    others: &[&str],
) -> Result<Vec<PathBuf>> {
    log_in_db(dir, log_dir, &format!("{who} keeps its log in --db"))?;
    let tmp: Vec<String> = with_tmp.iter().map(|n| format!("{n}.tmp")).collect();
    let names: Vec<&str> = with_tmp
        .iter()
        .copied()
        .chain(tmp.iter().map(String::as_str))
        .chain(others.iter().copied())
        .collect();
    Ok(existing(st, dir, &names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_dir_takes_either_flag_and_refuses_two_places() {
        let (a, b) = (Path::new("/a"), Path::new("/b"));
        assert_eq!(one_dir(Some(a), None, "w").unwrap().as_deref(), Some(a));
        assert_eq!(one_dir(None, Some(b), "w").unwrap().as_deref(), Some(b));
        assert_eq!(one_dir(Some(a), Some(a), "w").unwrap().as_deref(), Some(a));
        assert_eq!(one_dir(None, None, "w").unwrap(), None);
        let e = one_dir(Some(a), Some(b), "w").unwrap_err().to_string();
        assert_eq!(e, "w: give --db or --log-dir, not both");
        let g = Given {
            db: Some(a),
            log: Some(LogMode::Off),
            ..Given::default()
        };
        let e = logged_dir(&g, "w", "x").unwrap_err().to_string();
        assert!(e.starts_with("x: --db needs --log async"), "{e}");
        let g = Given { log: None, ..g };
        assert_eq!(logged_dir(&g, "w", "x").unwrap().as_deref(), Some(a));
        assert_eq!(g.first_stored(), Some("--db"));
    }
}
