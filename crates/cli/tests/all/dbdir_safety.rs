//! A database's files are its own (issue 43, items 2 to 4): a disk-engine log directory
//! holding another database's log is never written to or removed by `drop`, `load`,
//! `--reload` or `run`; a command refused for what it finds in an existing database
//! (another scale, another workload, data where a load would go) refuses before its
//! first write and leaves every file as it was, bytes and modification times.

use crate::common;
use common::{assert_bad_input, oltpscope};

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A file's name, bytes and modification time.
type FileState = (String, Vec<u8>, SystemTime);

/// Every file under the given directories with its bytes and modification time
/// (directories that do not exist are recorded as absent).
fn snapshot(dirs: &[&Path]) -> BTreeMap<String, Option<Vec<FileState>>> {
    dirs.iter()
        .map(|d| {
            let files = std::fs::read_dir(d).ok().map(|rd| {
                let mut v: Vec<_> = rd
                    .map(|e| {
                        let e = e.unwrap();
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            std::fs::read(e.path()).unwrap(),
                            e.metadata().unwrap().modified().unwrap(),
                        )
                    })
                    .collect();
                v.sort();
                v
            });
            (d.display().to_string(), files)
        })
        .collect()
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = oltpscope(args);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    out
}

/// A small micro-benchmark database on the disk engine in `db`, its log in `log`.
fn load_micro(db: &Path, log: &Path) {
    ok(&[
        "load",
        "micro",
        "--engine",
        "disk",
        "--keys",
        "2000",
        "--db",
        s(db),
        "--log-dir",
        s(log),
    ]);
}

fn check_micro(db: &Path, log: &Path) {
    let out = ok(&[
        "check",
        "micro",
        "--keys",
        "2000",
        "--db",
        s(db),
        "--log-dir",
        s(log),
    ]);
    assert!(out.contains("all passed"), "{out}");
}

/// `args` is refused (one error line, exit 2) with `what` in its message, and changes
/// nothing in `dirs`.
fn refused_unchanged(args: &[&str], what: &str, dirs: &[&Path]) {
    let before = snapshot(dirs);
    let (code, _, err) = oltpscope(args);
    assert_eq!(code, 2, "{args:?} should exit with 2, stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.starts_with("error:") && err.contains(what),
        "{args:?}: {err}"
    );
    assert!(
        snapshot(dirs) == before,
        "{args:?} was refused but changed files in {dirs:?}"
    );
}

#[test]
fn drop_removes_nothing_of_another_databases_log_dir_nor_leaves_its_own_log() {
    let t = tempfile::tempdir().unwrap();
    let p = |n: &str| t.path().join(n);
    let (a, la, b, lb) = (p("A"), p("LA"), p("B"), p("LB"));
    load_micro(&a, &la);
    load_micro(&b, &lb);
    let all: [&Path; 4] = [&a, &la, &b, &lb];
    // B's log is not A's to remove.
    refused_unchanged(
        &["drop", "--db", s(&a), "--log-dir", s(&lb)],
        "belongs to another database",
        &all,
    );
    // Without --log-dir, A's log (in LA) would be left behind: refused, naming the way.
    refused_unchanged(&["drop", "--db", s(&a)], "--log-dir", &all);
    // Its own log directory: all of A goes, B is untouched and still opens.
    let before_b = snapshot(&[&b, &lb]);
    ok(&["drop", "--db", s(&a), "--log-dir", s(&la)]);
    assert!(!a.exists() && !la.exists(), "A or its log is still there");
    assert!(snapshot(&[&b, &lb]) == before_b, "dropping A changed B");
    check_micro(&b, &lb);
}

#[test]
fn load_and_reload_write_nothing_into_another_databases_log_dir() {
    let t = tempfile::tempdir().unwrap();
    let p = |n: &str| t.path().join(n);
    let (a2, la2, c, lc, new) = (p("A2"), p("LA2"), p("C"), p("LC"), p("NEW"));
    load_micro(&a2, &la2);
    load_micro(&c, &lc);
    let all: [&Path; 5] = [&a2, &la2, &c, &lc, &new];
    // --reload discards only its own database: C's log in LC is not A2's.
    let reload = [
        "load",
        "micro",
        "--engine",
        "disk",
        "--keys",
        "2000",
        "--db",
        s(&a2),
        "--log-dir",
        s(&lc),
        "--reload",
    ];
    refused_unchanged(&reload, "belongs to another database", &all);
    // A new database is not created over C's log, and no directory is made for it.
    // (`run` logs, so that no note about --log off comes before the one error line.)
    for (cmd, opt, val) in [("load", "--threads", "1"), ("run", "--log", "async")] {
        refused_unchanged(
            &[
                cmd,
                "micro",
                "--engine",
                "disk",
                "--keys",
                "2000",
                opt,
                val,
                "--db",
                s(&new),
                "--log-dir",
                s(&lc),
            ],
            "LC is not empty",
            &all,
        );
    }
    // Running A2 with C's log directory is refused before anything is written.
    refused_unchanged(
        &[
            "run",
            "micro",
            "--keys",
            "2000",
            "--no-load",
            "--log",
            "async",
            "--db",
            s(&a2),
            "--log-dir",
            s(&lc),
        ],
        "another database",
        &all,
    );
    check_micro(&c, &lc);
    check_micro(&a2, &la2);
}

#[test]
fn a_run_refused_for_what_it_finds_in_a_disk_database_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("D");
    ok(&["load", "tpcb", "--engine", "disk", "--db", s(&d)]);
    let dirs: [&Path; 1] = [&d];
    let run = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "tpcb", "--db", s(&d), "--log", "async"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(["--duration", "1", "--warmup", "0"].map(String::from));
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let refuse = |args: Vec<String>, what: &str| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        refused_unchanged(&a, what, &dirs);
    };
    // Another scale: refused before the first transaction, and before the open that
    // would recover and checkpoint (the control file, data file, double-write file
    // and log all as they were).
    refuse(run(&["--no-load", "--scale", "2"]), "--scale 2");
    // Data where a load would go.
    refuse(run(&[]), "already holds data");
    refuse(
        ["load", "tpcb", "--db", s(&d)].map(String::from).to_vec(),
        "already holds data",
    );
    // Another workload.
    refuse(
        run(&["--no-load"])
            .into_iter()
            .map(|a| if a == "tpcb" { "micro".into() } else { a })
            .collect(),
        "schema",
    );
    // `check` of another scale is a refusal, not a failed consistency check.
    refuse(
        ["check", "tpcb", "--db", s(&d), "--scale", "2"]
            .map(String::from)
            .to_vec(),
        "--scale 2",
    );
    let out = ok(&["check", "tpcb", "--db", s(&d)]);
    assert!(
        out.contains("0 history rows"),
        "a refused run committed: {out}"
    );
    // --no-load with nothing to run on creates nothing.
    let new = t.path().join("NEW");
    let (code, _, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "disk",
        "--db",
        s(&new),
        "--no-load",
        "--log",
        "async",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!new.exists(), "a refused --no-load run created {new:?}");
}

#[test]
fn a_run_of_another_scale_commits_nothing_on_the_memory_engine() {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().join("M");
    let m = s(&m);
    ok(&["load", "tpcb", "--engine", "memory", "--db", m]);
    assert_bad_input(&[
        "run",
        "tpcb",
        "--db",
        m,
        "--log",
        "async",
        "--no-load",
        "--scale",
        "2",
        "--duration",
        "1",
    ]);
    assert_bad_input(&["check", "tpcb", "--db", m, "--scale", "2"]);
    let out = ok(&["check", "tpcb", "--db", m]);
    assert!(
        out.contains("0 history rows"),
        "a refused run committed: {out}"
    );
}

#[test]
fn run_no_load_on_an_empty_directory_leaves_nothing_behind() {
    let t = tempfile::tempdir().unwrap();
    for engine in ["memory", "mvcc", "partitioned", "disk"] {
        let d = t.path().join(engine);
        for dir in [d.clone(), d.join("sub")] {
            // An empty directory and one that does not exist: refused, nothing created.
            std::fs::create_dir_all(&d).unwrap();
            refused_unchanged(
                &[
                    "run",
                    "tpcb",
                    "--engine",
                    engine,
                    "--db",
                    s(&dir),
                    "--log",
                    "async",
                    "--no-load",
                    "--duration",
                    "1",
                ],
                "there is no database in",
                &[&d, &dir],
            );
        }
    }
}

#[test]
fn a_run_on_an_existing_database_says_how_long_opening_it_took() {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().join("M");
    let m = s(&m);
    ok(&["load", "tpcb", "--engine", "mvcc", "--db", m]);
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--db",
        m,
        "--log",
        "async",
        "--no-load",
        "--txns",
        "10",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("opened the database in") && out.contains("(recovery included)"),
        "{out}"
    );
    let load = ok(&["run", "tpcb", "--engine", "mvcc", "--txns", "10"]);
    assert!(!load.contains("opened the database"), "{load}");
}
