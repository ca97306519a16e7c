//! CH-benCHmark: its queries answer alike on every built-in engine (the plans) and on
//! SQLite (the SQL text) at one warehouse, and `run chbench` through the command line
//! runs TPC-C beside an analytical stream and reports both, refusing bad input with
//! one line and exit 2. (PostgreSQL's SQL: `engine_postgres`'s `chbench::` test.)

use crate::common::{assert_bad_input, compared_engines, oltpscope, ORACLE};
use api::{EngineOptions, OpenFn, Session};
use exec::Row;
use std::sync::Arc;
use workloads::chbench::queries::{answer, edge, q14, without_clock, IMPLEMENTED};
use workloads::chbench::Chbench;
use workloads::Workload;

/// TPC-C transactions run before the queries.
const TPCC_TXNS: usize = 1000;

fn opts() -> EngineOptions {
    EngineOptions {
        threads: 2,
        ..EngineOptions::default()
    }
}

/// Every implemented query's answer on the engine `open` opens, loaded at one warehouse
/// and after [`TPCC_TXNS`] of TPC-C's transactions, then Q14's raw sums by its plan.
fn answers(open: OpenFn) -> Vec<Vec<Row>> {
    let ch = Chbench::new(edge::test_config()).unwrap();
    let e = open(Arc::new(ch.schema()), &opts()).unwrap();
    let name = e.name();
    ch.load(&*e, 2, 7, &|_| {}).unwrap();
    let mut s = Session::new(e.worker(0));
    // The same TPC-C transactions on every engine deliver lines with amounts.
    workloads::chbench::run_tpcc_txns(&ch, &mut s, TPCC_TXNS, 3)
        .unwrap_or_else(|err| panic!("TPC-C on {}: {err}", name));
    // Customers without orders (Q22) and German-supplied `co` items (Q20).
    s.run(4 + 22, |s| edge::add_edge_rows(s, edge::TEST_ITEMS))
        .unwrap_or_else(|err| panic!("edge rows on {}: {err}", name));
    let out = IMPLEMENTED
        .iter()
        .map(|&n| {
            s.run(4 + n, |s| {
                s.read_committed();
                answer(n, s)
            })
            .map(|rows| without_clock(n, rows))
            .unwrap_or_else(|err| panic!("Q{n} on {}: {err}", name))
        })
        .collect::<Vec<_>>();
    // Q14's raw sums (the plan's), which its share hides when no promotional item sold.
    let mut out = out;
    out.push(s.run(4 + 14, |s| q14::plan(s)).unwrap());
    drop(s);
    e.shutdown().unwrap();
    out
}

fn compare(engine: &str, got: &[Vec<Row>], want: &[Vec<Row>]) {
    for ((n, g), w) in IMPLEMENTED.iter().zip(got).zip(want) {
        assert_eq!(g.len(), w.len(), "{engine}: Q{n}: row counts differ");
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            assert_eq!(a, b, "{engine}: Q{n}: row {i} differs");
        }
    }
}

/// The serial engine's answers, computed once for the engines' tests (which run side by
/// side: one test per engine keeps the slowest off the binary's tail).
fn oracle() -> &'static [Vec<Row>] {
    static WANT: std::sync::OnceLock<Vec<Vec<Row>>> = std::sync::OnceLock::new();
    WANT.get_or_init(|| answers(ORACLE))
}

#[test]
fn every_query_finds_rows_on_the_oracle() {
    let want = oracle();
    for (n, rows) in IMPLEMENTED.iter().zip(want) {
        if *n == 14 {
            // Its share is 0 unless a line of one of the ~26 items in 100,000 whose
            // I_DATA begins with `PR` was delivered: its sums are tested below.
            continue;
        }
        // Every answer holds rows, and a one-row answer a value other than 0.
        let found = match &rows[..] {
            [] => false,
            [r] => r.iter().any(|d| *d != exec::Datum::Int(0)),
            _ => true,
        };
        assert!(found, "Q{n}: nothing found at one warehouse: {rows:?}");
    }
    // Q8's German share, which the edge rows' items make other than 0.
    let q8 = &want[IMPLEMENTED.iter().position(|&n| n == 8).unwrap()];
    assert!(
        q8[0][1] != exec::Datum::Int(0),
        "Q8: no German share: {q8:?}"
    );
    let q14 = want.last().unwrap();
    assert!(q14[0][1] != exec::Datum::Int(0), "Q14: no amount: {q14:?}");
}

/// Each engine's answers against the oracle's: one test per engine of
/// `common::compared_engines`.
fn answers_alike(name: &str) {
    let d = compared_engines()
        .into_iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no engine {name} among the compared"));
    compare(d.name, &answers(d.open), oracle());
}

#[test]
fn sqlite_answers_alike() {
    answers_alike("sqlite");
}

#[test]
fn memory_answers_alike() {
    answers_alike("memory");
}

#[test]
fn mvcc_answers_alike() {
    answers_alike("mvcc");
}

#[test]
fn partitioned_answers_alike() {
    answers_alike("partitioned");
}

#[test]
fn disk_answers_alike() {
    answers_alike("disk");
}

/// Every engine the answers are compared on has its test above.
#[test]
fn every_compared_engine_has_its_answers_test() {
    let names: Vec<&str> = compared_engines().iter().map(|d| d.name).collect();
    assert_eq!(names, ["sqlite", "memory", "mvcc", "partitioned", "disk"]);
}

/// A one-second hybrid run with the stream at low priority: both sides reported, the
/// priority in the report and its JSON config; bad input refused.
#[test]
fn a_hybrid_run_reports_both_sides_and_bad_input_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("r.json");
    let (code, out, err) = oltpscope(&[
        "run",
        "chbench",
        "--engine",
        "mvcc",
        "--threads",
        "1",
        "--analytic-streams",
        "1",
        "--queries",
        "6,1",
        "--analytics-priority",
        "low",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--report-interval",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // The stream set it (a failed call would say so instead).
    assert!(
        out.lines()
            .any(|l| l.starts_with("analytics priority: low (each stream's thread")),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        v["config"]["workload"]["analytics_priority"], "low",
        "{}",
        v["config"]
    );
    assert!(out.contains("chbench: TPC-C "), "{out}");
    assert!(out.contains("queries/h on 1 stream(s)"), "{out}");
    assert!(out.contains("tpmC"), "{out}");
    assert!(out.contains("staleness: "), "{out}");
    assert!(
        out.contains("analytics on CPU: the streams' threads ran "),
        "{out}"
    );
    assert!(out.contains("consistency checks: all passed"), "{out}");
    // The queries outside `--queries` are never tried: no row of zeros, one line.
    assert!(!out.lines().any(|l| l.starts_with("Q22 ")), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("not run: ") && l.contains("Q2,") && l.ends_with("Q22")),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("new-order ")), "{out}");
    for bad in [
        &["--analytic-streams", "65"][..],
        &["--queries", "23"],
        &["--queries", "1,1"],
        &["--analytics-only", "--analytic-streams", "0"],
        &["--txns", "10"],
        &["--analytics-priority", "high"],
        &["--analytics-priority", ""],
    ] {
        assert_bad_input(&[&["run", "chbench", "--duration", "1"][..], bad].concat());
    }
    // TPC-E's analytical mix takes it from the same machinery; without a stream it is
    // refused, as --queries is.
    assert_bad_input(&["run", "tpce", "--analytics-priority", "low"]);
    assert_bad_input(&[
        "run",
        "tpce",
        "--analytics",
        "1",
        "--analytics-priority",
        "nice",
    ]);
}
