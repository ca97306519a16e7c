//! `--steps-team` from the command line: a STEPS run reports its teams (text and JSON),
//! bad values get one error line and exit code 2, and `simulate --steps-team 1,4` runs
//! one simulation per team size and prints the table of cache misses.

use crate::common;
use common::{assert_bad_input, oltpscope, tracer_or_skip};

#[test]
fn run_with_steps_reports_teams() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // --coroutines is implied by --steps-team.
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "disk",
        "--steps-team",
        "4",
        "--txns",
        "300",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("4 coroutines per thread"), "{out}");
    assert!(out.contains("STEPS teams of at most 4"), "{out}");
    assert!(out.contains("insert(history)"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["checks"]["passed"], true);
    assert_eq!(v["coroutines"], 4);
    let s = &v["steps"];
    assert_eq!(s["team_cap"], 4);
    assert_eq!(s["team_sizes"].as_array().unwrap().len(), 4);
    assert!(s["teams"].as_u64().unwrap() > 0, "{s}");
    assert!(s["ctx_switches_per_txn"].as_f64().unwrap() > 0.0, "{s}");
    let share = s["in_teams_share"].as_f64().unwrap();
    assert!(share > 0.0 && share <= 1.0, "{s}");
    let ops: Vec<&str> = s["per_operation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["operation"].as_str().unwrap())
        .collect();
    for op in ["begin", "update", "insert(history)", "commit"] {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
    // Without --steps-team there is no team report.
    let (code, _, err) = oltpscope(&[
        "run",
        "micro",
        "--coroutines",
        "2",
        "--txns",
        "50",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v.get("steps").is_none());
}

#[test]
fn bad_steps_options_give_one_line_and_exit_code_2() {
    let cases: &[&[&str]] = &[
        &["run", "micro", "--steps-team", "0"],
        &["run", "micro", "--steps-team", "big"],
        &["run", "micro", "--steps-team", "2000"],
        &["run", "micro", "--coroutines", "2", "--steps-team", "4"],
        &["run", "micro", "--steps-team", "2,4"],
        &["check", "tpcb", "--steps-team", "2"],
        // simulate's child's: needs --steps-team and --trace-measured.
        &[
            "run",
            "micro",
            "--steps-team",
            "1",
            "--then-steps-team",
            "2",
        ],
        &["run", "micro", "--then-steps-team", "2", "--trace-measured"],
        &["simulate", "micro", "--steps-one-load"],
        &[
            "simulate",
            "micro",
            "--coroutines",
            "4",
            "--steps-team",
            "1,8",
        ],
    ];
    for args in cases {
        assert_bad_input(args);
    }
}

#[test]
fn simulate_steps_prints_a_table_per_team_size() {
    if tracer_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sim.json");
    let (code, out, err) = oltpscope(&[
        "simulate",
        "tpcb",
        "--txns",
        "120",
        "--warmup-txns",
        "20",
        "--coroutines",
        "4",
        "--steps-team",
        "1,4",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(
        out.contains("STEPS: L1-I misses against team size (4 coroutines per thread)"),
        "{out}"
    );
    assert!(out.contains("bound: "), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // A traced run and its load per team size (the default).
    assert_eq!(v["loads"], 2);
    assert!(
        out.contains("loads: 2 (a traced run and its load per team size)"),
        "{out}"
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (r, team) in runs.iter().zip([1, 4]) {
        assert_eq!(r["steps_team"], team);
        // Transaction attempts: conflict-aborted ones count too.
        assert!(
            r["simulation"]["transactions"].as_u64().unwrap() >= 120,
            "{r}"
        );
        assert!(r["l1i_misses_per_txn"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["l1d_misses_per_txn"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["run_steps"]["team_cap"], team);
        let args: Vec<&str> = r["child_args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let team = team.to_string();
        assert!(
            args.windows(2)
                .any(|w| w == ["--steps-team", team.as_str()]),
            "{args:?}"
        );
        assert!(!args.contains(&"--then-steps-team"), "{args:?}");
    }
    // The team of 4 formed teams larger than one; the bound is below the baseline.
    assert!(runs[1]["run_steps"]["avg_team_size"].as_f64().unwrap() > 1.0);
    assert!(
        runs[1]["bound_l1i_misses_per_txn"].as_f64().unwrap()
            < runs[0]["l1i_misses_per_txn"].as_f64().unwrap()
    );
}

/// `--steps-one-load`: one traced run loads once and measures both team sizes, each in a
/// trace window simulated afresh (its own warm-up and transactions); TPC-B's second
/// phase numbers its History rows as a run of its own.
#[test]
fn simulate_steps_with_one_load_measures_every_team_size_in_one_run() {
    if tracer_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sim.json");
    let (code, out, err) = oltpscope(&[
        "simulate",
        "tpcb",
        "--txns",
        "120",
        "--warmup-txns",
        "20",
        "--coroutines",
        "4",
        "--steps-team",
        "1,4",
        "--steps-one-load",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("loads: 1 (one traced run"), "{out}");
    assert!(err.contains("team size 4: simulated"), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["loads"], 1);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (r, team) in runs.iter().zip([1, 4]) {
        assert_eq!(r["steps_team"], team);
        assert_eq!(r["run_steps"]["team_cap"], team);
        assert_eq!(r["simulation"]["warmup_txns"], 20, "{r}");
        assert!(
            r["simulation"]["transactions"].as_u64().unwrap() >= 120,
            "{r}"
        );
        assert!(r["l1i_misses_per_txn"].as_f64().unwrap() > 0.0, "{r}");
        let args: Vec<&str> = r["child_args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        for pair in [["--steps-team", "1"], ["--then-steps-team", "4"]] {
            assert!(args.windows(2).any(|w| w == pair), "{args:?}");
        }
    }
    assert!(runs[1]["run_steps"]["avg_team_size"].as_f64().unwrap() > 1.0);
}

#[test]
fn bad_points_files_give_one_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let one = |op: &str, comp: &str, k: u32| {
        format!("[[point]]\noperation = \"{op}\"\ncomponent = \"{comp}\"\nordinal = {k}\nenabled = true\n")
    };
    let files = [
        write("garbage.toml", "this is not toml ]]"),
        write("op.toml", &one("fly", "btree_level", 1)),
        write("comp.toml", &one("index_probe", "warp_drive", 1)),
        write("zero.toml", &one("index_probe", "btree_level", 0)),
        write("extra.toml", "surprise = 1\n"),
        dir.path()
            .join("missing.toml")
            .to_str()
            .unwrap()
            .to_string(),
    ];
    for f in &files {
        let args = [
            "run",
            "micro",
            "--txns",
            "50",
            "--steps-team",
            "2",
            "--steps-points",
            f,
        ];
        let (code, _out, err) = oltpscope(&args);
        assert_eq!(code, 2, "{args:?} should exit with 2, stderr: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
    }
    // --steps-points without a team, and `steps place` options that do not apply.
    let good = write("good.toml", &one("index_probe", "btree_level", 1));
    for args in [
        vec!["run", "micro", "--steps-points", good.as_str()],
        vec!["steps", "place", "micro", "--steps-team", "2"],
        vec!["steps", "place", "micro", "--knee", "200"],
        vec!["steps", "place", "micro", "--knee", "0,4"],
        vec!["steps", "place"],
    ] {
        let (code, _out, err) = oltpscope(&args);
        assert_eq!(code, 2, "{args:?} should exit with 2, stderr: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_points_file_limits_the_switches() {
    // Only the first B+tree level of an index probe switches: fewer CTX switches than
    // with every candidate point, and the report says which.
    let dir = tempfile::tempdir().unwrap();
    let points = dir.path().join("p.toml");
    std::fs::write(
        &points,
        "[[point]]\noperation = \"index_probe\"\ncomponent = \"btree_level\"\nordinal = 1\nenabled = true\n",
    )
    .unwrap();
    let ctx = |extra: &[&str]| {
        let json = dir.path().join("r.json");
        let mut args = vec![
            "run",
            "micro",
            "--keys",
            "20000",
            "--rows",
            "4",
            "--txns",
            "400",
            "--steps-team",
            "4",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend(extra);
        let (code, out, err) = oltpscope(&args);
        assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["checks"]["passed"], true);
        (
            v["steps"]["ctx_switches_per_txn"].as_f64().unwrap(),
            v["steps"]["enabled_ctx_points"].clone(),
            out,
        )
    };
    let (all, n_all, _) = ctx(&[]);
    let (some, n_some, out) = ctx(&["--steps-points", points.to_str().unwrap()]);
    assert!(n_all.is_null(), "{n_all}");
    assert_eq!(n_some, 1);
    assert!(out.contains("at the 1 points of --steps-points"), "{out}");
    assert!(
        some > 0.0 && some < all,
        "switches per txn: {some} with the file, {all} without"
    );
}

#[test]
fn steps_place_writes_points_that_run_accepts() {
    if tracer_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let points = dir.path().join("auto.toml");
    let json = dir.path().join("place.json");
    let (code, out, err) = oltpscope(&[
        "steps",
        "place",
        "tpcb",
        "--txns",
        "60",
        "--warmup-txns",
        "20",
        "--l1i",
        "8K:4:64",
        "--knee",
        "200,2",
        "--points",
        points.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("candidate CTX points reached"), "{out}");
    assert!(out.contains("all candidate points"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let evals = v["evaluations"].as_array().unwrap();
    assert_eq!(evals.len(), 4);
    for e in evals {
        assert!(e["transactions"].as_u64().unwrap() >= 60, "{e}");
        assert!(
            e["leader_l1i_misses_per_txn"].as_f64().unwrap() > 0.0,
            "{e}"
        );
    }
    // Switching at every candidate point leaves a follower no more misses than switching
    // only at operation entries.
    let f = |i: usize| evals[i]["follower_l1i_misses_per_txn"].as_f64().unwrap();
    assert!(f(1) <= f(0), "{evals:?}");
    assert!(!v["points"].as_array().unwrap().is_empty());
    // The file it wrote drives a STEPS run.
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--txns",
        "100",
        "--steps-team",
        "2",
        "--steps-points",
        points.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("points of --steps-points"), "{out}");
}

/// Every file under `dir` with its bytes: what a run on a copy must leave unchanged.
fn files_of(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(files_of(&p));
        } else {
            v.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    v.sort();
    v
}

/// `simulate --db DIR`: a database `--load-only` loaded natively is copied for each team
/// size's traced run (`run --db COPY --no-load --prewarm`), and the kept one is left as
/// it was; no load is traced.
#[test]
fn simulate_on_a_native_load_runs_each_team_size_on_a_copy() {
    if tracer_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db_s = db.to_str().unwrap();
    let w = [
        "simulate",
        "tpcb",
        "--engine",
        "disk",
        "--txns",
        "120",
        "--warmup-txns",
        "20",
        "--coroutines",
        "4",
        "--steps-team",
        "1,4",
    ];
    let mut load = w.to_vec();
    load.extend(["--db", db_s, "--load-only"]);
    let (code, out, err) = oltpscope(&load);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("loaded natively into"), "{out}");
    let marker = dir.path().join("db.loaded");
    let line = std::fs::read_to_string(&marker).unwrap();
    assert!(
        line.starts_with("load tpcb ") && line.contains(db_s),
        "{line}"
    );
    let before = files_of(&db);
    assert!(!before.is_empty());
    let json = dir.path().join("sim.json");
    let mut sim = w.to_vec();
    sim.extend(["--db", db_s, "--json", json.to_str().unwrap()]);
    let (code, out, err) = oltpscope(&sim);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(
        out.contains("loads: 0 (the database was loaded natively"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["loads"], 0);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let args: Vec<&str> = r["child_args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            args.contains(&"--no-load") && args.contains(&"--prewarm"),
            "{args:?}"
        );
        // The copy's path is a temporary one, left out; never the kept database.
        assert!(!args.contains(&db_s), "{args:?}");
        assert!(r["l1i_misses_per_txn"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert!(runs[1]["run_steps"]["avg_team_size"].as_f64().unwrap() > 1.0);
    // The teams ran on copies: the kept database is byte for byte as loaded.
    assert!(files_of(&db) == before, "the kept database changed");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), line);
}

/// `simulate --db DIR` refuses, in one line before valgrind starts, a database that is
/// missing, not marked loaded, marked by another load, or of an engine that keeps no
/// files; `--load-only` refuses to load over anything.
#[test]
fn simulate_db_refusals_give_one_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db_s = db.to_str().unwrap();
    let base = [
        "simulate", "tpcb", "--scale", "1", "--engine", "disk", "--txns", "10",
    ];
    let with =
        |more: &[&str]| -> Vec<String> { base.iter().chain(more).map(|s| s.to_string()).collect() };
    let bad = |args: Vec<String>, says: &str| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_bad_input(&a);
        let (_, _, err) = oltpscope(&a);
        assert!(err.contains(says), "{a:?}: {err}");
    };
    // Missing: no marker.
    bad(with(&["--db", db_s]), "no finished load");
    // A directory that was not marked loaded (an interrupted or foreign load).
    std::fs::create_dir(&db).unwrap();
    bad(with(&["--db", db_s]), "no finished load");
    bad(
        with(&["--db", db_s, "--load-only"]),
        "refusing to load over it",
    );
    std::fs::remove_dir(&db).unwrap();
    // --load-only needs --db; an engine without files has nothing to keep.
    assert_bad_input(
        &with(&["--load-only"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    bad(
        vec![
            "simulate",
            "tpcb",
            "--engine",
            "serial",
            "--db",
            db_s,
            "--load-only",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
        "keeps no database",
    );
    // A real load, then a simulation asking for other data or another seed.
    let (code, out, err) = oltpscope(
        &with(&["--db", db_s, "--load-only"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    bad(
        with(&["--db", db_s, "--seed", "2"]),
        "another load's marker",
    );
    let mut other = with(&["--db", db_s]);
    other[3] = "2".into();
    bad(other, "another load's marker");
    bad(
        with(&["--db", db_s, "--load-only"]),
        "refusing to load over it",
    );
    // The marker without its database.
    std::fs::remove_dir_all(&db).unwrap();
    bad(with(&["--db", db_s]), "is missing");
    // `steps place` loads its own traced run's database.
    bad(
        vec!["steps", "place", "tpcb", "--engine", "disk", "--db", db_s]
            .into_iter()
            .map(String::from)
            .collect(),
        "--db and --load-only are `simulate`'s",
    );
}
