//! `--interleave N` from the command line: the memory engine runs the micro-benchmark
//! (string keys, both index kinds) and TPC-B with its transactions interleaved at index
//! probes, their prefetches issued at once or in groups (`--interleave-group`), and
//! passes the checks; bad values, the other engines and a clash with
//! `--coroutines` or `--rate` get one error line and exit code 2.

use crate::common;
use common::{assert_bad_input, oltpscope};

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
    ];
    for args in cases {
        assert_bad_input(args);
    }
}
