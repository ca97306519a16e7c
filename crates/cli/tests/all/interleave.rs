//! `--interleave N` from the command line: the memory engine runs the micro-benchmark
//! (string keys, both index kinds) and TPC-B with its transactions interleaved at index
//! probes, their prefetches issued at once or in groups (`--interleave-group`), and
//! passes the checks; bad values, the other engines and a clash with
//! `--coroutines` or `--rate` get one error line and exit code 2. `simulate --interleave`
//! traces an interleaved run.

use crate::common;
use common::{assert_bad_input, oltpscope, tracer_or_skip};

#[test]
fn interleaved_runs_pass_their_checks() {
    let dir = tempfile::tempdir().unwrap();
    let runs: &[&[&str]] = &[
        &[
            "micro",
            "--columns",
            "string",
            "--index",
            "hash",
            "--keys",
            "20000",
        ],
        &[
            "micro",
            "--columns",
            "string",
            "--index",
            "btree",
            "--keys",
            "20000",
        ],
        &[
            "micro", "--mode", "update", "--rows", "4", "--keys", "20000", "--index", "hash",
        ],
        &["tpcb", "--threads", "2"],
    ];
    // Each run with each probe's prefetches at once, then with two probes' together.
    for (i, (args, group)) in runs.iter().flat_map(|a| [(a, "1"), (a, "2")]).enumerate() {
        let json = dir.path().join(format!("r{i}.json"));
        let mut a = vec!["run"];
        a.extend_from_slice(args);
        // Every lookup switches: these tables are small (under 4 MiB, whose lookups
        // would otherwise not).
        a.extend(["--interleave", "4", "--interleave-min-table", "0"]);
        a.extend(["--interleave-group", group]);
        a.extend(["--txns", "3000", "--warmup", "0"]);
        a.extend(["--json", json.to_str().unwrap()]);
        let (code, out, err) = oltpscope(&a);
        assert_eq!(code, 0, "{a:?}\nstdout: {out}\nstderr: {err}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["checks"]["passed"], true, "{a:?}: {}", v["checks"]);
        assert_eq!(v["coroutines"], 4, "{a:?}");
        assert_eq!(v["config"]["interleave"], true, "{a:?}");
        assert_eq!(
            v["config"]["interleave_group"],
            group.parse::<u64>().unwrap(),
            "{a:?}"
        );
        assert_eq!(
            out.contains("4 coroutines per thread (prefetches issued 2 probes at a time)"),
            group == "2",
            "{a:?}: {out}"
        );
        // Several switches per transaction: at probes, not only at waits.
        let switches = v["coroutine_switches"].as_u64().unwrap();
        assert!(switches > 3000, "{a:?}: {switches} switches");
    }
}

/// `--interleave-min-table`: by default TPC-B's branches and tellers (small tables)
/// take no probe switch, its accounts do; with 0 every lookup switches: more than
/// twice as many probe switches per transaction.
#[test]
fn small_tables_switch_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let per_txn = |min: Option<&str>| {
        let json = dir.path().join("r.json");
        let mut a = vec!["run", "tpcb", "--interleave", "4", "--txns", "3000"];
        a.extend(["--warmup", "0", "--json", json.to_str().unwrap()]);
        if let Some(m) = min {
            a.extend(["--interleave-min-table", m]);
        }
        let (code, out, err) = oltpscope(&a);
        assert_eq!(code, 0, "{a:?}\nstdout: {out}\nstderr: {err}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["checks"]["passed"], true, "{a:?}: {}", v["checks"]);
        // The switches' denominator: the whole run's commits (no warm-up here).
        let all = v["committed_whole_run"].as_u64().unwrap();
        assert_eq!(all, v["committed"].as_u64().unwrap(), "{a:?}");
        let per_txn = v["probe_switches"].as_u64().unwrap() as f64 / all as f64;
        // The text gives the same figure.
        assert!(
            out.contains(&format!("({per_txn:.1}) per committed transaction")),
            "{out}"
        );
        per_txn
    };
    let (default, every) = (per_txn(None), per_txn(Some("0")));
    assert!(
        default > 0.5,
        "the accounts' lookups switch: {default} per txn"
    );
    assert!(every > 2.0 * default, "{every} against {default} per txn");
}

/// `simulate --interleave N`: the traced run interleaves (its child's command line says
/// so, and the coroutine switch's code runs in the trace); without it no coroutine runs.
#[test]
fn simulate_traces_an_interleaved_run() {
    if tracer_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let traced = |interleave: &[&str]| {
        let json = dir.path().join("s.json");
        let mut a = vec!["simulate", "micro", "--index", "btree", "--keys", "20000"];
        a.extend(["--txns", "300", "--warmup-txns", "0"]);
        a.extend(interleave);
        a.extend(["--json", json.to_str().unwrap()]);
        let (code, out, err) = oltpscope(&a);
        assert_eq!(code, 0, "{a:?}\nstdout: {out}\nstderr: {err}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let args: Vec<String> = v["child_args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let sim = &v["simulation"];
        assert_eq!(sim["transactions"], 300, "{a:?}");
        // Instructions in the scheduler's switch, wherever the report lists them.
        let switching: u64 = ["top_functions", "library_functions", "unmapped_functions"]
            .iter()
            .flat_map(|k| sim[k].as_array().unwrap())
            .filter(|f| {
                let name = f["function"].as_str().unwrap();
                name.starts_with("oltpscope_rt_switch") || name.contains("rt::coro::")
            })
            .map(|f| f["instructions"].as_u64().unwrap())
            .sum();
        // The coroutines' starts and resumes the simulator counted (CONTEXT markers).
        let switches = sim["coroutine_switches"].as_u64().unwrap();
        // With coroutines the report says what the stall cycles leave out.
        assert_eq!(
            sim["caveat"]
                .as_str()
                .unwrap()
                .contains("no software prefetch"),
            switches > 0,
            "{}",
            sim["caveat"]
        );
        (args, switching, switches)
    };
    let (args, switching, switches) = traced(&["--interleave", "4", "--interleave-min-table", "0"]);
    let at = args
        .iter()
        .position(|a| a == "--interleave")
        .expect("--interleave passed on");
    assert_eq!(args[at + 1], "4", "{args:?}");
    assert!(
        args.windows(2)
            .any(|w| w == ["--interleave-min-table", "0"]),
        "{args:?}"
    );
    assert!(switching > 0, "no coroutine switch traced");
    // Every read switches at its leaf's probe point at least.
    assert!(switches >= 300, "{switches} switches in 300 reads");
    let (args, switching, switches) = traced(&[]);
    assert!(
        !args.iter().any(|a| a.starts_with("--interleave")),
        "{args:?}"
    );
    assert_eq!(switching, 0, "a plain run traced coroutine code");
    assert_eq!(switches, 0);
}

#[test]
fn bad_interleave_uses_give_one_line_and_exit_code_2() {
    let cases: &[&[&str]] = &[
        &["run", "micro", "--interleave", "0"],
        &["run", "micro", "--interleave", "lots"],
        &["run", "micro", "--interleave", "5000"],
        &["run", "micro", "--interleave", "4", "--engine", "disk"],
        &["run", "tpcb", "--interleave", "2", "--engine", "serial"],
        &["run", "micro", "--interleave", "4", "--coroutines", "4"],
        &["run", "micro", "--interleave", "4", "--rate", "1000"],
        &["load", "micro", "--interleave", "2"],
        &["run", "micro", "--interleave-min-table", "lots"],
        &["run", "micro", "--interleave-group", "2"],
        &[
            "run",
            "micro",
            "--interleave",
            "4",
            "--interleave-group",
            "8",
        ],
        &[
            "run",
            "micro",
            "--interleave",
            "4",
            "--interleave-group",
            "0",
        ],
        &[
            "run",
            "micro",
            "--interleave",
            "4",
            "--interleave-group",
            "two",
        ],
        &[
            "run",
            "micro",
            "--interleave-min-table",
            "1MB",
            "--engine",
            "mvcc",
        ],
        // `simulate`'s, refused before valgrind starts.
        &["simulate", "micro", "--interleave", "4", "--engine", "disk"],
        &[
            "simulate",
            "micro",
            "--interleave",
            "4",
            "--coroutines",
            "4",
        ],
        &[
            "simulate",
            "micro",
            "--interleave",
            "4",
            "--steps-team",
            "2",
        ],
        &["simulate", "micro", "--interleave-group", "2"],
        &[
            "simulate",
            "micro",
            "--interleave",
            "2",
            "--interleave-group",
            "4",
        ],
        &[
            "simulate",
            "micro",
            "--engine",
            "disk",
            "--interleave-min-table",
            "0",
        ],
        &["simulate", "tpch", "--interleave", "2"],
        &["simulate", "chbench", "--interleave", "2"],
        &["steps", "place", "micro", "--interleave", "2"],
    ];
    for args in cases {
        assert_bad_input(args);
    }
}
