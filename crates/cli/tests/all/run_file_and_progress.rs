//! `run --file` (a TOML run file or a results directory's manifest fed back) and the
//! plain progress lines printed when standard error is not a terminal.

use crate::common;
use common::{assert_bad_input, oltpscope};

use std::path::Path;

fn manifest(dir: &Path) -> serde_json::Value {
    let p = dir.join("manifest.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn a_manifest_fed_back_with_file_repeats_the_run_and_flags_override_it() {
    let d = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (r1, r2, r3) = (
        d.path().join("r1"),
        d.path().join("r2"),
        d.path().join("r3"),
    );
    let (code, _, err) = oltpscope(&[
        "run",
        "tpcb",
        "--txns",
        "200",
        "--warmup",
        "0",
        "--threads",
        "2",
        "--seed",
        "7",
        "--no-pin",
        "--out",
        &s(&r1),
    ]);
    assert_eq!(code, 0, "{err}");
    let m1 = manifest(&r1);

    // The manifest fed back: the same configuration (hash), into a new directory.
    let (code, _, err) = oltpscope(&[
        "run",
        "--file",
        &s(&r1.join("manifest.json")),
        "--out",
        &s(&r2),
    ]);
    assert_eq!(code, 0, "{err}");
    let m2 = manifest(&r2);
    assert_eq!(m2["config"], m1["config"]);
    assert_eq!(m2["config_hash"], m1["config_hash"]);
    // The manifest records the expanded command line: it repeats without the file.
    let line: Vec<&str> = m2["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        &line[1..],
        [
            "run",
            "tpcb",
            "--txns",
            "200",
            "--warmup",
            "0",
            "--threads",
            "2",
            "--seed",
            "7",
            "--no-pin",
            "--out",
            &s(&r2)
        ]
    );

    // Flags override the file's; the directory itself names its manifest.
    let (code, _, err) = oltpscope(&[
        "run",
        "tpcb",
        "--file",
        &s(&r1),
        "--threads",
        "1",
        "--out",
        &s(&r3),
    ]);
    assert_eq!(code, 0, "{err}");
    let m3 = manifest(&r3);
    assert_eq!(m3["config"]["run"]["threads"], 1);
    assert_eq!(m3["config"]["run"]["seed"], m1["config"]["run"]["seed"]);
    assert_ne!(m3["config_hash"], m1["config_hash"]);

    // Refusals: one line, exit code 2.
    assert_bad_input(&["simulate", "--file", &s(&r1)]); // a run's manifest
    assert_bad_input(&["run", "tpcc", "--file", &s(&r1)]); // another workload
    assert_bad_input(&["run", "--file", &s(&d.path().join("nothing.toml"))]);
}

#[test]
fn a_toml_run_file_holds_a_sweep_files_keys_and_refuses_others() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("run.toml");
    let out = d.path().join("r");
    std::fs::write(
        &f,
        format!(
            "kind = \"run\"\nworkload = \"micro\"\nargs = [\"--txns\", \"300\", \"--warmup\", \"0\", \"--keys\", \"1000\"]\nout = {:?}\n",
            out.to_str().unwrap()
        ),
    )
    .unwrap();
    let fs = f.to_str().unwrap();
    // --duration on the command line drops the file's --txns (they conflict).
    let (code, _, err) = oltpscope(&["run", "--file", fs, "--duration", "0.5"]);
    assert_eq!(code, 0, "{err}");
    let m = manifest(&out);
    assert_eq!(m["config"]["workload"], "micro");
    let stop = m["config"]["run"].to_string();
    assert!(stop.contains("0.5") && !stop.contains("300"), "{stop}");

    std::fs::write(&f, "workload = \"micro\"\nthreads = 2\n").unwrap();
    assert_bad_input(&["run", "--file", fs]);
    let (_, _, err) = oltpscope(&["run", "--file", fs]);
    assert!(err.contains("unknown field `threads`"), "{err}");
    std::fs::write(&f, "workload = \"micro\"\nvary = [\"threads=1,2\"]\n").unwrap();
    assert_bad_input(&["run", "--file", fs]);
}

#[test]
fn off_a_terminal_long_work_prints_plain_progress_lines() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    // Standard error is a pipe here. The load: a line saying what starts, lines with
    // the rows so far, and one at the end.
    let (code, _, err) = oltpscope(&[
        "load",
        "micro",
        "--engine",
        "disk",
        "--db",
        db.to_str().unwrap(),
        "--keys",
        "400000",
        "--report-interval",
        "0.05",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("loading micro: 400,000 rows with 1 thread(s)"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.contains("] loading micro: ") && l.contains(" of 400,000 rows (")),
        "{err}"
    );
    assert!(err.contains("loaded micro: 400,000 rows in "), "{err}");

    // A 3-second run: a line per interval with the interval's throughput.
    let (code, _, err) = oltpscope(&[
        "run",
        "micro",
        "--keys",
        "1000",
        "--duration",
        "3",
        "--warmup",
        "0",
        "--report-interval",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("running micro: 0.0 s warm-up, then 3.0 s measured"),
        "{err}"
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(" measure ") && l.contains(" txn/s"))
        .collect();
    assert!((3..=4).contains(&lines.len()), "{err}");
    // Off: nothing but the report.
    let (code, _, err) = oltpscope(&[
        "run",
        "micro",
        "--keys",
        "1000",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--report-interval",
        "0",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains("running micro") && !err.contains("txn/s"),
        "{err}"
    );
}

/// `dir` copied to `to`, recursively.
fn copy_dir(dir: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_sweep_prints_the_cpu_share_and_which_points_are_noise() {
    // The recorded sweep of the lab's tests: every repetition is complete, so the sweep
    // resumes, runs nothing and summarizes.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("noisy-sweep");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/tests/fixtures/noisy-sweep"),
        &out,
    );
    let (code, text, err) = oltpscope(&[
        "sweep",
        "micro",
        "--vary",
        "engine=memory,mvcc",
        "--vary",
        "threads=1,2,3",
        "--repeat",
        "3",
        "--out",
        out.to_str().unwrap(),
        "--duration",
        "5",
    ]);
    assert_eq!(code, 0, "{err}");
    let row = |p: &str| {
        text.lines()
            // The table's row, not the progress lines ("... rep1: already done").
            .find(|l| l.starts_with(p) && !l.contains(" rep"))
            .unwrap_or_else(|| panic!("{p}: {text}"))
    };
    assert!(row("engine-memory_threads-2 ").contains("72%"), "{text}");
    assert!(
        row("engine-memory_threads-2 ").ends_with("unreliable"),
        "{text}"
    );
    assert!(
        !row("engine-mvcc_threads-1 ").contains("unreliable"),
        "{text}"
    );
    assert!(
        text.contains("unreliable: engine-mvcc_threads-2: repetitions spread 2.37x"),
        "{text}"
    );
}
