//! Databases shared by a sweep's points of one data shape (issue 41): points equal on a
//! load-once sweep's keys (e.g. engine and size) differ only in run settings, so their
//! shape is loaded once into `root/<shape>/` (markers `<shape>.loading` and
//! `<shape>.loaded`) and every repetition runs there with `--no-load`, or, for workloads
//! whose runs change the data's shape (`LoadOnce::copy`), on a fresh copy of it made
//! before the run and removed after it.

use crate::lanes::{stoppable_output, stoppable_run};
use crate::sweep::{key, set_field, Event, Key, Kind, Outcome, Point, Spec, Vary};
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
    /// Each repetition runs on a fresh copy of its shape's database ([`Spec::run_copy`],
    /// made by [`copy_shape`] before its run, removed by [`drop_copy`] after it), never on
    /// the shape's database itself: for workloads whose runs change the data's shape
    /// (TPC-C's and CH-benCHmark's New-Orders add rows, TPC-B's history, TPC-H's refresh
    /// functions), so that each run starts from the data as loaded, as a run that loads
    /// its own. Each run checks its own copy (the copy is gone after it); the shape's
    /// database, never written after its load, is not checked again. Absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copy: bool,
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

/// The marker of a repetition's copy (`LoadOnce::copy`): `<copy>.copy`, holding the
/// path of the shape's database it copies, written before the copy starts and removed
/// with it; with it, a directory there (an interrupted copy, or a failed run's copy
/// kept for inspection) is known to be this sweep's, and the next copy replaces it.
pub fn copy_marker(copy: &Path) -> PathBuf {
    marker(copy, "copy")
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
    let ran = stoppable_run(cmd).map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if let Err(why) = ran {
        return Ok(Some(format!(
            "loading {shape} into {} failed: {why}",
            db.display()
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

/// Copy point `p`'s shape's database for its repetition `rep` when its sweep runs each
/// repetition on a copy ([`LoadOnce::copy`]; `Ok(None)` otherwise): `cp -a
/// --reflink=auto` (a clone where the filesystem has them, btrfs or XFS; a plain copy
/// elsewhere) in a child that a measured window stops (lane work, as a shared load is:
/// [`stoppable_output`]), so the copy is never beside a window. Run in the repetition's
/// measured turn, where a run that loads its own would load. `Err`: the repetition fails
/// with it, never loading the shape again: a shape without its finished load's marker
/// or database, a directory at the copy's place that is not this sweep's copy, a copy
/// that failed (its partial copy removed).
pub(crate) fn copy_shape(spec: &Spec, p: &Point, rep: u32) -> Result<Option<PathBuf>, String> {
    let (Some(db), Some(copy)) = (spec.shared_db(p), spec.run_copy(p, rep)) else {
        return Ok(None);
    };
    let loaded = loaded_marker(&db);
    if !loaded.is_file() || !db.is_dir() {
        return Err(format!(
            "{}: no finished load of this shape ({} or the database missing): refusing to copy it for {} rep{rep}",
            db.display(),
            loaded.display(),
            p.name()
        ));
    }
    let marker = copy_marker(&copy);
    let line = db.display().to_string() + "\n";
    let ours = std::fs::read(&marker).is_ok_and(|t| t == line.as_bytes());
    if copy.exists() {
        if !ours {
            return Err(format!(
                "{}: not a copy of this sweep's (no {} of it): refusing to copy over it (remove it to run this repetition)",
                copy.display(),
                marker.display()
            ));
        }
        // This sweep's: an interrupted copy, or a failed run's kept for inspection.
        remove_copy(&copy)?;
    }
    std::fs::write(&marker, &line)
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    let mut cmd = Command::new("cp");
    cmd.arg("-a")
        .arg("--reflink=auto")
        .arg("--")
        .arg(&db)
        .arg(&copy);
    if let Err(why) = stoppable_run(cmd).map_err(|e| format!("cannot start cp: {e}"))? {
        // A partial copy is of no use, and may be what filled the disk.
        let _ = remove_copy(&copy);
        return Err(format!(
            "copying {} to {} failed: {why}",
            db.display(),
            copy.display()
        ));
    }
    Ok(Some(copy))
}

/// After repetition's run on its `copy` ([`copy_shape`]): removed when the run passed
/// (in-process, so never beside a measured window: `lanes::unstoppable`); kept when it
/// failed, for inspection, and named in its failure (the next copy for that repetition,
/// when the sweep is run again, replaces it).
pub(crate) fn drop_copy(copy: &Path, outcome: Result<Outcome, String>) -> Result<Outcome, String> {
    match outcome {
        Ok(Outcome::Done) => {
            crate::lanes::unstoppable(|| remove_copy(copy))?;
            Ok(Outcome::Done)
        }
        Ok(Outcome::Failed(why)) => Ok(Outcome::Failed(format!(
            "{why} (its database copy kept for inspection: {})",
            copy.display()
        ))),
        other => other,
    }
}

/// Remove a repetition's copy and then its marker.
fn remove_copy(copy: &Path) -> Result<(), String> {
    if copy.exists() {
        std::fs::remove_dir_all(copy)
            .map_err(|e| format!("cannot remove {}: {e}", copy.display()))?;
    }
    let marker = copy_marker(copy);
    match std::fs::remove_file(&marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", marker.display()))
        }
        _ => Ok(()),
    }
}

/// Check each shared database of load-once sweeps once, after the last run on it (its
/// runs skip their own check: `Point::rep_args`): `oltpscope check` with its load's
/// options, beside the lanes like a load. `Err` names the first shape whose check
/// failed or could not run; its database stays for inspection (`remove_shared` is
/// for after a passed check). A shape without its finished load's marker was never
/// run on: nothing to check; nor is one whose runs ran on copies of it
/// ([`LoadOnce::copy`]: each checked its own).
pub fn check_shared(
    exe: &Path,
    specs: &[&Spec],
    event: &mut dyn FnMut(Event),
) -> Result<(), String> {
    let mut seen: Vec<PathBuf> = Vec::new();
    for spec in specs
        .iter()
        .filter(|s| !s.load_once.as_ref().is_some_and(|l| l.copy))
    {
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
        remove_load(&db)?;
    }
    for lo in specs.iter().filter_map(|s| s.load_once.as_ref()) {
        // Only when empty: anything else there is not ours to remove.
        let _ = std::fs::remove_dir(&lo.root);
    }
    Ok(())
}

/// Remove a finished load: its `.loaded` marker first, then `db` (nothing when the
/// marker is not there: a directory without it is not known to be ours). A removal
/// stopped half-way leaves a directory without its marker, which is refused next time,
/// never taken for a finished load.
pub(crate) fn remove_load(db: &Path) -> Result<(), String> {
    let marker = loaded_marker(db);
    if !marker.exists() {
        return Ok(());
    }
    std::fs::remove_file(&marker)
        .map_err(|e| format!("cannot remove {}: {e}", marker.display()))?;
    if db.exists() {
        std::fs::remove_dir_all(db).map_err(|e| format!("cannot remove {}: {e}", db.display()))?;
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

    /// The copy of `p`'s shape's database that its repetition `rep` runs on, beside it
    /// (`<shape>.run-<point>-rep<rep>`), when the sweep runs each repetition on a copy
    /// ([`LoadOnce::copy`]).
    pub fn run_copy(&self, p: &Point, rep: u32) -> Option<PathBuf> {
        self.load_once.as_ref().filter(|lo| lo.copy)?;
        let db = self.shared_db(p)?;
        let shape = db.file_name().expect("a shape's name").to_string_lossy();
        Some(db.with_file_name(format!("{shape}.run-{}-rep{rep}", p.name())))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::parse_vary;

    /// A cores curve of TPC-C on the disk engine whose repetitions run on copies of its
    /// one shape, loaded into `root`.
    fn copied(root: &Path) -> Spec {
        Spec {
            kind: Kind::Run,
            workload: "tpcc".into(),
            vary: vec![parse_vary("cores=1,2").unwrap()],
            repeat: 2,
            args: ["--engine", "disk", "--warehouses", "2"]
                .map(String::from)
                .to_vec(),
            load_once: Some(LoadOnce {
                keys: vec![],
                args: ["--warehouses", "2", "--engine", "disk"]
                    .map(String::from)
                    .to_vec(),
                root: root.to_path_buf(),
                only: None,
                copy: true,
            }),
        }
    }

    /// A loaded shape's stand-in: a database directory of two files and its marker.
    fn loaded(db: &Path) {
        std::fs::create_dir_all(db).unwrap();
        std::fs::write(db.join("data.db"), b"rows").unwrap();
        std::fs::write(db.join("wal"), b"log").unwrap();
        std::fs::write(loaded_marker(db), "load tpcc\n").unwrap();
    }

    #[test]
    fn each_repetition_runs_on_its_own_copy_with_its_own_check() {
        let root = Path::new("/x/db");
        let s = copied(root);
        s.validate().unwrap();
        let p = &s.points()[1];
        let db = s.shared_db(p).unwrap();
        // One shape for both points (cores is a run setting).
        assert_eq!(db, root.join("base"));
        assert_eq!(s.shared_db(&s.points()[0]).unwrap(), db);
        let copy = s.run_copy(p, 2).unwrap();
        assert_eq!(copy, root.join("base.run-cores-2-rep2"));
        assert_ne!(s.run_copy(p, 1), Some(copy.clone()));
        assert_eq!(copy_marker(&copy), root.join("base.run-cores-2-rep2.copy"));
        // The load: the load's options, not the runs' cores.
        let load = s.load_spec(p, &db).unwrap().to_args();
        assert_eq!(load[..2], ["load", "tpcc"]);
        assert_eq!(runspec::value_of(&load, "--warehouses"), Some("2"));
        assert!(!runspec::gives(&load, "--cores"), "{load:?}");
        // The run: on its copy, opened (prewarmed, the disk engine), and checked.
        let run = p.rep_args(&s, 2, Path::new("/x/out"));
        assert_eq!(
            runspec::value_of(&run, "--db"),
            Some("/x/db/base.run-cores-2-rep2")
        );
        for f in ["--no-load", "--prewarm"] {
            assert!(run.contains(&f.to_string()), "{run:?}");
        }
        assert!(!run.contains(&"--no-check".to_string()), "{run:?}");
        // Without `copy`, the shape's database itself, its check after the last run.
        let mut shared = s.clone();
        shared.load_once.as_mut().unwrap().copy = false;
        assert_eq!(shared.run_copy(p, 2), None);
        let run = p.rep_args(&shared, 2, Path::new("/x/out"));
        assert_eq!(runspec::value_of(&run, "--db"), Some("/x/db/base"));
        assert!(run.contains(&"--no-check".to_string()), "{run:?}");
        // Written only when set: older sweeps' sweep.json read and compare the same.
        let text = serde_json::to_string(&shared).unwrap();
        assert!(!text.contains("copy"), "{text}");
        assert!(serde_json::to_string(&s).unwrap().contains("\"copy\":true"));
    }

    #[test]
    fn a_copy_is_made_removed_after_a_passed_run_and_kept_after_a_failed_one() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("db");
        let s = copied(&root);
        let p = &s.points()[0];
        let db = s.shared_db(p).unwrap();
        loaded(&db);
        let copy = copy_shape(&s, p, 1).unwrap().unwrap();
        assert_eq!(copy, root.join("base.run-cores-1-rep1"));
        assert_eq!(std::fs::read(copy.join("data.db")).unwrap(), b"rows");
        assert_eq!(std::fs::read(copy.join("wal")).unwrap(), b"log");
        assert!(copy_marker(&copy).is_file());
        // A run writing to its copy leaves the shape as loaded.
        std::fs::write(copy.join("data.db"), b"rows and new orders").unwrap();
        assert_eq!(std::fs::read(db.join("data.db")).unwrap(), b"rows");
        // A failed run: its copy kept, and named.
        let o = drop_copy(&copy, Ok(Outcome::Failed("boom".into()))).unwrap();
        match o {
            Outcome::Failed(why) => {
                assert!(why.starts_with("boom (its database copy kept"), "{why}");
                assert!(why.contains(&copy.display().to_string()), "{why}");
            }
            o => panic!("{o:?}"),
        }
        assert!(copy.is_dir() && copy_marker(&copy).is_file());
        // The repetition again: its kept copy replaced by a fresh one.
        let again = copy_shape(&s, p, 1).unwrap().unwrap();
        assert_eq!(again, copy);
        assert_eq!(std::fs::read(copy.join("data.db")).unwrap(), b"rows");
        // A passed run: the copy and its marker removed, the shape kept.
        assert!(matches!(
            drop_copy(&copy, Ok(Outcome::Done)),
            Ok(Outcome::Done)
        ));
        assert!(!copy.exists() && !copy_marker(&copy).exists());
        assert!(db.is_dir() && loaded_marker(&db).is_file());
        // Nothing to check: the shape was never run on (a missing executable would fail).
        check_shared(Path::new("/nonexistent/oltpscope"), &[&s], &mut |_| {}).unwrap();
        // Then the shape goes as a shared one does, and the root with it.
        remove_shared(&[&s]).unwrap();
        assert!(!root.exists());
    }

    #[test]
    fn a_copy_of_an_unloaded_shape_or_over_a_foreign_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("db");
        let s = copied(&root);
        let p = &s.points()[1];
        let db = s.shared_db(p).unwrap();
        // No shape at all, then a database without its finished load's marker (an
        // interrupted load): refused, never loaded here.
        for _ in 0..2 {
            let e = copy_shape(&s, p, 1).unwrap_err();
            assert!(e.contains("no finished load of this shape"), "{e}");
            assert!(e.contains("base.loaded"), "{e}");
            assert!(!s.run_copy(p, 1).unwrap().exists());
            std::fs::create_dir_all(&db).unwrap();
        }
        // The marker without its database: refused too.
        loaded(&db);
        std::fs::remove_dir_all(&db).unwrap();
        let e = copy_shape(&s, p, 1).unwrap_err();
        assert!(e.contains("no finished load"), "{e}");
        // A directory at the copy's place that no copy of ours made: left alone.
        loaded(&db);
        let foreign = s.run_copy(p, 1).unwrap();
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
        let e = copy_shape(&s, p, 1).unwrap_err();
        assert!(e.contains("not a copy of this sweep's"), "{e}");
        assert_eq!(std::fs::read(foreign.join("notes.txt")).unwrap(), b"mine");
        assert!(!copy_marker(&foreign).exists());
        // Sweeps without `copy` make no copy.
        let mut shared = s.clone();
        shared.load_once.as_mut().unwrap().copy = false;
        assert_eq!(copy_shape(&shared, p, 1).unwrap(), None);
    }
}
