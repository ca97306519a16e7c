//! Databases shared by a sweep's points of one data shape (issue 41): points equal on a
//! load-once sweep's keys (e.g. engine and size) differ only in run settings, so their
//! shape is loaded once into `root/<shape>/` (markers `<shape>.loading` and
//! `<shape>.loaded`) and every repetition runs there with `--no-load`.

use crate::lanes::stoppable_output;
use crate::sweep::{key, set_field, Event, Key, Kind, Point, Spec, Vary};
use runspec::{flag, RunSpec, Workload};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A sweep whose points share a data shape when equal on `keys` (e.g. engine and size)
/// and differ only in run settings (mode, rows, threads, repetition): each shape is
/// loaded once, by `oltpscope load` with `args` and the shape's values, into
/// `root/<shape>`, and every run of it runs there with `--no-load`. Sweeps of one root
/// and the same `args` share their shapes' loads too. A run that updates leaves
/// its updates for the next; the runs' checks of the rows still hold (the micro
/// benchmark's count of updates is checked on a fresh load only: docs/reproduce.md).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadOnce {
    pub keys: Vec<String>,
    /// The load's options besides the keys' values (the workload's shape, the engine's).
    pub args: Vec<String>,
    /// Where the shapes' databases are (`<shape>/` and its marker `<shape>.loaded`).
    pub root: PathBuf,
    /// Only the points with one of these values of this key share; the others load
    /// their own, as without `load_once` (absent: every point shares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vary>,
}

/// `run --prewarm` (disk engine, PostgreSQL): read an opened database's pages into the
/// pool (PostgreSQL's `shared_buffers`) first.
pub(crate) const PREWARM: &str = "--prewarm";

/// Whether a run of `engine` on a shared database prewarms it ([`PREWARM`]): a load
/// leaves the disk engine's pages in its pool (its warm-up alone touched a fraction of
/// a 1GB table) and pages in PostgreSQL's `shared_buffers`, a reopened server none; a
/// run that opens them reads them in first, so that it starts as warm. PostgreSQL
/// reopened without it read 0.35-0.87 of a fresh run's rate at 100MB, with it
/// 0.89-1.06 (A/B, session 66: docs/reproduce.md).
pub(crate) fn prewarms(engine: Option<&str>) -> bool {
    matches!(engine, Some("disk" | "postgres"))
}

/// The marker of a finished load: `<db>.loaded`, holding the load's command line.
pub fn loaded_marker(db: &Path) -> PathBuf {
    marker(db, "loaded")
}

/// The marker of a load started: `<db>.loading`, the same line, written before the
/// load creates `db` and removed once it finished; with it, a directory left behind
/// is known to be an interrupted load of this sweep's, not someone else's.
pub fn loading_marker(db: &Path) -> PathBuf {
    marker(db, "loading")
}

fn marker(db: &Path, what: &str) -> PathBuf {
    let name = db
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    db.with_file_name(format!("{name}.{what}"))
}

/// Load point `p`'s data shape into its shared database unless a finished load of it is
/// there (lane work: never beside a measured run). `Err`: the sweep is refused (a marker
/// that is not this load's, or a marker whose database is gone: never loaded again
/// silently, or a directory there without this load's `.loading` marker: not ours);
/// `Ok(Some(why))`: the load failed, the shape's repetitions fail with it. A directory
/// left by an interrupted load (its `.loading` marker) is loaded again with `--reload`.
pub(crate) fn load_shape(
    exe: &Path,
    spec: &Spec,
    p: &Point,
    event: &mut dyn FnMut(Event),
) -> Result<Option<String>, String> {
    let Some(db) = spec.shared_db(p) else {
        return Ok(None);
    };
    let load = spec.load_spec(p, &db).expect("a load-once sweep");
    let args = load.to_args();
    let line = args.join(" ") + "\n";
    let marker = loaded_marker(&db);
    match std::fs::read(&marker) {
        Ok(text) if text != line.as_bytes() => {
            return Err(format!(
                "{}: damaged or another load's marker: refusing to run on {} (remove both to load it again)",
                marker.display(),
                db.display()
            ))
        }
        Ok(_) if !db.is_dir() => {
            return Err(format!(
                "{}: a finished load's marker, but {} is missing: refusing to load it again silently (remove the marker to load again)",
                marker.display(),
                db.display()
            ))
        }
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {}: {e}", marker.display())),
    }
    let loading = loading_marker(&db);
    let ours = std::fs::read(&loading).is_ok_and(|t| t == line.as_bytes());
    if db.exists() && !ours {
        return Err(format!(
            "{}: not a load of this sweep (no {} of it): refusing to load over it (remove it to load it again)",
            db.display(),
            loading.display()
        ));
    }
    let parent = db.parent().expect("under the shapes' root");
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    std::fs::write(&loading, &line)
        .map_err(|e| format!("cannot write {}: {e}", loading.display()))?;
    let shape = db.file_name().expect("a shape's name").to_string_lossy();
    let t0 = std::time::Instant::now();
    // Stopped by a measured window, not waited for (a 1GB load takes minutes); beside
    // the lanes, as the runs on it wait for it.
    let mut cmd = Command::new(exe);
    cmd.args(&args);
    let out = stoppable_output(cmd).map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        return Ok(Some(format!(
            "loading {shape} into {} failed: {}",
            db.display(),
            last.unwrap_or("no message").trim()
        )));
    }
    std::fs::write(&marker, line).map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    std::fs::remove_file(&loading)
        .map_err(|e| format!("cannot remove {}: {e}", loading.display()))?;
    event(Event::Loaded {
        shape: &shape,
        seconds: t0.elapsed().as_secs_f64(),
    });
    Ok(None)
}

/// Check each shared database of load-once sweeps once, after the last run on it (its
/// runs skip their own check: `Point::rep_args`): `oltpscope check` with its load's
/// options, beside the lanes like a load. `Err` names the first shape whose check
/// failed or could not run; its database stays for inspection (`remove_shared` is
/// for after a passed check). A shape without its finished load's marker was never
/// run on: nothing to check.
pub fn check_shared(
    exe: &Path,
    specs: &[&Spec],
    event: &mut dyn FnMut(Event),
) -> Result<(), String> {
    let mut seen: Vec<PathBuf> = Vec::new();
    for spec in specs {
        for p in spec.points() {
            let Some(db) = spec.shared_db(&p) else {
                continue;
            };
            if seen.contains(&db) || !loaded_marker(&db).exists() {
                continue;
            }
            seen.push(db.clone());
            let mut check = spec.load_spec(&p, &db).expect("a load-once sweep");
            check.command = runspec::Command::Check;
            check.options.reload = false;
            let shape = db.file_name().expect("a shape's name").to_string_lossy();
            let t0 = std::time::Instant::now();
            let mut cmd = Command::new(exe);
            cmd.args(check.to_args());
            let out = stoppable_output(cmd)
                .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
            if !out.status.success() {
                let text = String::from_utf8_lossy(&out.stdout).to_string()
                    + &String::from_utf8_lossy(&out.stderr);
                let why = (text.lines())
                    .find(|l| l.contains("[FAIL]"))
                    .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
                    .unwrap_or("no message");
                return Err(format!(
                    "{shape}: its consistency check after the runs on it failed ({}); {} kept for inspection",
                    why.trim(),
                    db.display()
                ));
            }
            event(Event::Checked {
                shape: &shape,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
    }
    Ok(())
}

/// Remove the shared databases of load-once sweeps (those their markers name, nothing
/// else; then each root if empty), once no sweep of theirs runs again: a finished sweep
/// resumes without them, a repetition that failed loads its shape again.
pub fn remove_shared(specs: &[&Spec]) -> Result<(), String> {
    let mut shapes: Vec<PathBuf> = Vec::new();
    for spec in specs {
        for p in spec.points() {
            if let Some(db) = spec.shared_db(&p) {
                if !shapes.contains(&db) {
                    shapes.push(db);
                }
            }
        }
    }
    for db in shapes {
        let _ = std::fs::remove_file(loading_marker(&db));
        let marker = loaded_marker(&db);
        if marker.exists() {
            if db.exists() {
                std::fs::remove_dir_all(&db)
                    .map_err(|e| format!("cannot remove {}: {e}", db.display()))?;
            }
            std::fs::remove_file(&marker)
                .map_err(|e| format!("cannot remove {}: {e}", marker.display()))?;
        }
    }
    for lo in specs.iter().filter_map(|s| s.load_once.as_ref()) {
        // Only when empty: anything else there is not ours to remove.
        let _ = std::fs::remove_dir(&lo.root);
    }
    Ok(())
}

/// `p` restricted to the keys that shape the data.
fn shape(lo: &LoadOnce, p: &Point) -> Point {
    Point {
        values: p
            .values
            .iter()
            .filter(|(k, _)| lo.keys.contains(k))
            .cloned()
            .collect(),
    }
}

impl Spec {
    /// The shared database of point `p` (with [`Spec::load_once`]).
    pub fn shared_db(&self, p: &Point) -> Option<PathBuf> {
        let lo = self.load_once.as_ref()?;
        if let Some(o) = &lo.only {
            p.get(&o.key).filter(|x| o.values.iter().any(|v| v == x))?;
        }
        Some(lo.root.join(shape(lo, p).name()))
    }

    /// The load of `p`'s shape into `db`: `oltpscope load` with the shape's values.
    pub fn load_spec(&self, p: &Point, db: &Path) -> Option<RunSpec> {
        let lo = self.load_once.as_ref()?;
        let workload = Workload::named(&self.workload).expect("validated with the spec");
        let mut s = RunSpec::new(runspec::Command::Load, workload);
        s.extra = lo.args.clone();
        for (k, x) in &shape(lo, p).values {
            set_field(k, &mut s, x).expect("validated with the spec");
        }
        s.options.db = Some(db.to_path_buf());
        s.options.reload = true;
        Some(s)
    }

    /// Refuse a load-once sweep that could not share its loads.
    pub(crate) fn validate_load_once(&self) -> Result<(), String> {
        let Some(lo) = &self.load_once else {
            return Ok(());
        };
        if self.kind != Kind::Run {
            return Err("loading once per data shape is for `run` sweeps".into());
        }
        for k in &lo.keys {
            if !self.vary.iter().any(|v| &v.key == k) {
                return Err(format!("load once: {k} is not a varied key"));
            }
            if !matches!(key(k), Some(Key::Flag { .. })) {
                return Err(format!("load once: {k} is not an option of the load"));
            }
        }
        if let Some(o) = lo
            .only
            .as_ref()
            .filter(|o| !self.vary.iter().any(|v| v.key == o.key))
        {
            return Err(format!("load once: {} is not a varied key", o.key));
        }
        for f in [flag::DB, flag::NO_LOAD, flag::RELOAD] {
            if runspec::gives(&self.args, f) || runspec::gives(&lo.args, f) {
                return Err(format!("load once: {f} is the sweep's to give"));
            }
        }
        Ok(())
    }
}
