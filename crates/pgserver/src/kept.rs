//! A cluster kept in a directory (`--db DIR` with the private server): its layout, its
//! marker, and the checks before a server starts on it.
//!
//! Owns what `DIR` holds: `data/` (the cluster `initdb` made), `postgres.log` (the
//! server's output, appended by every start) and the marker [`MARKER`], written before
//! `initdb` and rewritten (atomically) once the load finished. A directory is ours only
//! with a marker that parses; anything else non-empty is refused and never touched.
//! Nothing here removes a cluster except [`discard`] (`--reload`), which removes only
//! these three names and refuses while a postmaster runs on it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The marker file: what made the cluster and whether its load finished.
pub const MARKER: &str = "oltpscope-postgres";
/// The data directory inside `DIR`.
pub const DATA: &str = "data";
/// The server log inside `DIR`.
pub const LOG: &str = "postgres.log";
/// The marker's first line (its format).
const FORMAT: &str = "oltpscope postgres cluster 1";

/// What a kept cluster's marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// PostgreSQL's major version that made the cluster.
    pub major: u32,
    /// Whether the load finished (written after a checkpoint made it durable).
    pub loaded: bool,
    /// What the caller loaded (the engine: its tables' definitions), one line.
    pub label: String,
}

impl Marker {
    fn to_text(&self) -> String {
        format!(
            "{FORMAT}\npostgres {}\nloaded {}\nlabel {}\n",
            self.major,
            if self.loaded { "yes" } else { "no" },
            one_line(&self.label)
        )
    }

    fn parse(text: &str) -> Option<Marker> {
        let mut lines = text.lines();
        if lines.next()? != FORMAT {
            return None;
        }
        let major = lines.next()?.strip_prefix("postgres ")?.parse().ok()?;
        let loaded = match lines.next()?.strip_prefix("loaded ")? {
            "yes" => true,
            "no" => false,
            _ => return None,
        };
        let label = lines.next()?.strip_prefix("label ")?.to_string();
        if lines.next().is_some() || !text.ends_with('\n') {
            return None;
        }
        Some(Marker {
            major,
            loaded,
            label,
        })
    }
}

/// A label as the marker stores it: one line.
pub fn one_line(label: &str) -> String {
    label.replace(['\n', '\r'], " ")
}

/// What a directory holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Absent or empty: a cluster may be made there.
    Empty,
    /// An oltpscope cluster, its marker.
    Ours(Marker),
}

/// Whether `dir` holds the marker of a kept cluster (however damaged the rest).
pub fn has_marker(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// What `dir` holds: nothing, or an oltpscope cluster; a non-empty directory without a
/// marker, or with one that does not parse, is refused with one line.
pub fn inspect(dir: &Path) -> Result<Found, String> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Empty),
        Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
    };
    let Some(first) = entries.next() else {
        return Ok(Found::Empty);
    };
    let marker = dir.join(MARKER);
    let text = match std::fs::read(&marker) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = first
                .map(|f| f.file_name().to_string_lossy().into_owned())
                .unwrap_or_default();
            return Err(format!(
                "{} is not empty and holds no oltpscope PostgreSQL cluster (found {name}, no {MARKER}): refusing to use it",
                dir.display()
            ));
        }
        Err(e) => return Err(format!("cannot read {}: {e}", marker.display())),
    };
    let m = std::str::from_utf8(&text)
        .ok()
        .and_then(Marker::parse)
        .ok_or_else(|| {
            format!(
                "{} is damaged or not oltpscope's: refusing to use {}",
                marker.display(),
                dir.display()
            )
        })?;
    Ok(Found::Ours(m))
}

/// Checks an existing cluster before a server starts on it: made by this major version,
/// loaded, of this `label`, and its data directory there with the version the marker
/// names.
pub fn check_existing(dir: &Path, m: &Marker, major: u32, label: &str) -> Result<(), String> {
    if m.major != major {
        return Err(format!(
            "{} holds a cluster of PostgreSQL {}; the server installed is PostgreSQL {major}: load it again with --reload (or use PostgreSQL {})",
            dir.display(),
            m.major,
            m.major
        ));
    }
    if !m.loaded {
        return Err(format!(
            "the load into {} did not finish: rerun the load with --reload",
            dir.display()
        ));
    }
    if m.label != one_line(label) {
        return Err(format!(
            "{} holds the tables of another workload or scale: give the settings it was loaded with, or --reload",
            dir.display()
        ));
    }
    let version = dir.join(DATA).join("PG_VERSION");
    match std::fs::read_to_string(&version) {
        Ok(v) if v.trim() == major.to_string() => Ok(()),
        Ok(v) => Err(format!(
            "{} says PostgreSQL {} but its marker {major}: the cluster is damaged",
            version.display(),
            v.trim()
        )),
        Err(e) => Err(format!(
            "{} has a marker but no readable cluster ({}: {e}): damaged, refusing to use it",
            dir.display(),
            version.display()
        )),
    }
}

/// Writes `m` as `dir`'s marker: to a temporary file, flushed, renamed over the marker,
/// and the directory flushed, so a crash leaves the old marker or the new one.
pub fn write_marker(dir: &Path, m: &Marker) -> Result<(), String> {
    let path = dir.join(MARKER);
    let tmp = dir.join(format!("{MARKER}.tmp"));
    let err = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(m.to_text().as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(err)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(err)
}

/// The pid in `data/postmaster.pid`, if a process of that pid is alive.
pub fn running_postmaster(data: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(data.join("postmaster.pid")).ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    crate::stale::alive(pid).then_some(pid)
}

/// `--reload` of our cluster in `dir`: removes its data directory and log, then its
/// marker (so a removal cut short is still ours and is finished by the next one).
/// Refuses any other file there, and a cluster a postmaster still runs on.
pub fn discard(dir: &Path) -> Result<(), String> {
    let own: [PathBuf; 4] = [
        dir.join(DATA),
        dir.join(LOG),
        dir.join(format!("{MARKER}.tmp")),
        dir.join(MARKER),
    ];
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for e in entries {
        let e = e.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if !own.contains(&e.path()) {
            return Err(format!(
                "{} holds {}, which is not part of an oltpscope PostgreSQL cluster: nothing removed",
                dir.display(),
                e.file_name().to_string_lossy()
            ));
        }
    }
    if let Some(pid) = running_postmaster(&own[0]) {
        return Err(format!(
            "a PostgreSQL server (pid {pid}) runs on {}: not reloading it",
            dir.display()
        ));
    }
    let rm = |p: &Path, r: std::io::Result<()>| match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", p.display()))
        }
        _ => Ok(()),
    };
    rm(&own[0], std::fs::remove_dir_all(&own[0]))?;
    for p in &own[1..] {
        rm(p, std::fs::remove_file(p))?;
    }
    Ok(())
}

/// The major version of the server in `bindir` (`postgres --version`: "postgres
/// (PostgreSQL) 15.18 (Debian ...)").
pub fn installed_major(bindir: &Path) -> Result<u32, String> {
    let out = Command::new(bindir.join("postgres"))
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run postgres --version: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_major(&text).ok_or_else(|| {
        format!(
            "cannot tell PostgreSQL's version from `postgres --version`: {}",
            text.trim()
        )
    })
}

fn parse_major(version: &str) -> Option<u32> {
    let rest = version.split_once("(PostgreSQL) ")?.1;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pgserver-kept-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_marker_round_trips_and_anything_else_is_refused() {
        let m = Marker {
            major: 15,
            loaded: true,
            label: "CREATE TABLE t (k INT);\nCREATE INDEX i ON t (k)".into(),
        };
        let back = Marker::parse(&m.to_text()).unwrap();
        assert_eq!(
            back.label,
            "CREATE TABLE t (k INT); CREATE INDEX i ON t (k)"
        );
        assert_eq!((back.major, back.loaded), (15, true));
        for bad in [
            "",
            "oltpscope postgres cluster 2\npostgres 15\nloaded yes\nlabel x\n",
            "oltpscope postgres cluster 1\npostgres x\nloaded yes\nlabel x\n",
            "oltpscope postgres cluster 1\npostgres 15\nloaded maybe\nlabel x\n",
            "oltpscope postgres cluster 1\npostgres 15\nloaded yes\nlabel x",
            "oltpscope postgres cluster 1\npostgres 15\nloaded yes\nlabel x\nmore\n",
        ] {
            assert_eq!(Marker::parse(bad), None, "{bad:?}");
        }
        assert_eq!(
            parse_major("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"),
            Some(15)
        );
        assert_eq!(parse_major("postgres (PostgreSQL) 9.6.24"), Some(9));
        assert_eq!(parse_major("something else"), None);
    }

    #[test]
    fn inspect_tells_empty_ours_and_foreign_and_discard_keeps_foreign_files() {
        let d = temp("inspect");
        assert_eq!(inspect(&d), Ok(Found::Empty), "absent");
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(inspect(&d), Ok(Found::Empty), "empty");
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        let e = inspect(&d).unwrap_err();
        assert!(e.contains("holds no oltpscope PostgreSQL cluster"), "{e}");
        std::fs::write(d.join(MARKER), "garbage").unwrap();
        let e = inspect(&d).unwrap_err();
        assert!(e.contains("damaged or not oltpscope's"), "{e}");
        let m = Marker {
            major: 15,
            loaded: false,
            label: "t".into(),
        };
        write_marker(&d, &m).unwrap();
        assert_eq!(inspect(&d), Ok(Found::Ours(m.clone())));
        // A file of someone else's beside the cluster: nothing is removed.
        std::fs::create_dir_all(d.join(DATA)).unwrap();
        let e = discard(&d).unwrap_err();
        assert!(
            e.contains("notes.txt") && e.contains("nothing removed"),
            "{e}"
        );
        assert!(d.join(DATA).is_dir() && d.join(MARKER).is_file());
        std::fs::remove_file(d.join("notes.txt")).unwrap();
        discard(&d).unwrap();
        let left = std::fs::read_dir(&d).unwrap().count();
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(left, 0, "data, log and marker removed");
    }

    #[test]
    fn an_existing_cluster_of_another_version_label_or_unfinished_load_is_refused() {
        let d = temp("check");
        std::fs::create_dir_all(d.join(DATA)).unwrap();
        std::fs::write(d.join(DATA).join("PG_VERSION"), "15\n").unwrap();
        let m = Marker {
            major: 15,
            loaded: true,
            label: "a".into(),
        };
        let ok = check_existing(&d, &m, 15, "a");
        let other_major = check_existing(&d, &m, 16, "a");
        let other_label = check_existing(&d, &m, 15, "b");
        let unfinished = check_existing(
            &d,
            &Marker {
                loaded: false,
                ..m.clone()
            },
            15,
            "a",
        );
        std::fs::write(d.join(DATA).join("PG_VERSION"), "14\n").unwrap();
        let damaged = check_existing(&d, &m, 15, "a");
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(ok, Ok(()));
        assert!(other_major.unwrap_err().contains("PostgreSQL 15"));
        assert!(other_label
            .unwrap_err()
            .contains("another workload or scale"));
        assert!(unfinished.unwrap_err().contains("did not finish"));
        assert!(damaged.unwrap_err().contains("damaged"));
    }
}
