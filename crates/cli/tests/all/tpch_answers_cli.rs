//! `run tpch --answers DIR` and `compare A B` on two answer directories, at SF 0.01:
//! the memory engine's plans and SQLite's SQL text write the same 22 answers (one file
//! per query, every row of the reported width, decimals with two places), `compare`
//! says so query by query and exits 0; a changed row is named with its number and both
//! lines and the exit is 1; a directory with files is refused as `--answers` (exit 2).

use crate::common::oltpscope;
use std::path::Path;

fn run_with_answers(engine: &str, dir: &Path) {
    let (code, out, err) = oltpscope(&[
        "run",
        "tpch",
        "--scale-factor",
        "0.01",
        "--engine",
        engine,
        "--answers",
        dir.to_str().unwrap(),
        "--report-interval",
        "0",
    ]);
    assert_eq!(code, 0, "{engine}: {out}{err}");
    assert!(
        out.contains("answers: the power test's, a file per query in"),
        "{out}"
    );
}

#[test]
fn answers_of_two_systems_compare_row_by_row() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("memory"), t.path().join("sqlite"));
    run_with_answers("memory", &a);
    run_with_answers("sqlite", &b);
    for n in 1..=22 {
        let text = std::fs::read_to_string(a.join(format!("q{n:02}.tsv"))).unwrap();
        let mut lines = text.lines();
        let ctx = lines.next().unwrap();
        assert!(
            ctx.starts_with(&format!("# TPC-H Q{n} | SF 0.01 |"))
                && ctx.contains("data after 1 RF1 and 0 RF2"),
            "{ctx}"
        );
        let width = workloads::tpch::answers::width(n);
        assert_eq!(lines.next().unwrap().split('\t').count(), width, "Q{n}");
        for l in lines {
            assert_eq!(l.split('\t').count(), width, "Q{n}: {l}");
        }
    }
    // Q1's sums are decimals with two places (sum_qty in the third column).
    let q1 = std::fs::read_to_string(a.join("q01.tsv")).unwrap();
    let row = q1.lines().nth(2).unwrap();
    let qty = row.split('\t').nth(2).unwrap();
    assert!(
        qty.len() > 3 && qty.as_bytes()[qty.len() - 3] == b'.',
        "{row}"
    );

    let (code, out, err) = oltpscope(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("22 of 22 queries equal row by row"), "{out}");
    assert!(out.contains("Q1: equal (4 rows)"), "{out}");

    // One changed value in Q3's second row: named, the exit is 1.
    let f = b.join("q03.tsv");
    let text = std::fs::read_to_string(&f).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cols: Vec<String> = lines[3].split('\t').map(str::to_string).collect();
    cols[0] = "99999999".into();
    lines[3] = cols.join("\t");
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = oltpscope(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("Q3: DIFFER at row 2"), "{out}");
    assert!(out.contains("21 of 22 queries equal"), "{out}");

    // --answers into a directory holding files: one line, exit 2.
    let (code, _, err) = oltpscope(&[
        "run",
        "tpch",
        "--scale-factor",
        "0.01",
        "--engine",
        "memory",
        "--answers",
        a.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not empty"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
