//! `--steps-team` from the command line: a STEPS run reports its teams (text and JSON),
//! bad values get one error line and exit code 2, and `simulate --steps-team 1,4` runs
//! one simulation per team size and prints the table of cache misses.

mod common;
use common::{oltpscope, tracer_or_skip};

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
        let (code, _out, err) = oltpscope(args);
        assert_eq!(code, 2, "{args:?} should exit with 2, stderr: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line expected, got: {err}"
        );
        assert!(err.starts_with("error:"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
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
    }
    // The team of 4 formed teams larger than one; the bound is below the baseline.
    assert!(runs[1]["run_steps"]["avg_team_size"].as_f64().unwrap() > 1.0);
    assert!(
        runs[1]["bound_l1i_misses_per_txn"].as_f64().unwrap()
            < runs[0]["l1i_misses_per_txn"].as_f64().unwrap()
    );
}
