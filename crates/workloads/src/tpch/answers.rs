//! The power test's answers as files, and the comparison of two such sets: `run tpch
//! --answers DIR` writes each query's reported rows to `DIR/qNN.tsv` (one file per
//! query), `oltpscope compare A B` on two such directories says per query whether the
//! rows are equal or where they first differ. So the answers of any two systems, at any
//! scale factor, compare row by row from the command line.
//!
//! A file: a context line (`# TPC-H Q1 | ...`: the scale factor, the population's salt,
//! the refresh functions the data had had, the substitution parameters), the column
//! names, then one line per row, tab-separated. Decimals are the reported values
//! (rounded half away from zero to cents once, in the query's `finish`), written with
//! two decimals; dates as YYYY-MM-DD; strings as stored, with `\\`, tab, newline and
//! bytes outside printable ASCII escaped. Two answers compare only under equal context
//! lines (another parameter or another state of the data is another question).

use super::gen::date_string;
use super::queries::Query;
use exec::{Datum, Row};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How a reported column is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An integer (keys, counts, sizes, years).
    Int,
    /// A decimal in hundredths: cents; Q8's market share (a fraction) and Q14's
    /// percentage, both reported in hundredths.
    Dec,
    /// A day number, written as a date.
    Date,
    /// Bytes.
    Str,
}

use Kind::{Date, Dec, Int, Str};

/// Query n's reported columns (`COLUMNS[n - 1]`), as its `finish` (or raw plan) gives
/// them.
const COLUMNS: [&[(&str, Kind)]; 22] = [
    &[
        ("l_returnflag", Str),
        ("l_linestatus", Str),
        ("sum_qty", Dec),
        ("sum_base_price", Dec),
        ("sum_disc_price", Dec),
        ("sum_charge", Dec),
        ("avg_qty", Dec),
        ("avg_price", Dec),
        ("avg_disc", Dec),
        ("count_order", Int),
    ],
    &[
        ("s_acctbal", Dec),
        ("s_name", Str),
        ("n_name", Str),
        ("p_partkey", Int),
        ("p_mfgr", Str),
        ("s_address", Str),
        ("s_phone", Str),
        ("s_comment", Str),
    ],
    &[
        ("l_orderkey", Int),
        ("revenue", Dec),
        ("o_orderdate", Date),
        ("o_shippriority", Int),
    ],
    &[("o_orderpriority", Str), ("order_count", Int)],
    &[("n_name", Str), ("revenue", Dec)],
    &[("revenue", Dec)],
    &[
        ("supp_nation", Str),
        ("cust_nation", Str),
        ("l_year", Int),
        ("revenue", Dec),
    ],
    &[("o_year", Int), ("mkt_share", Dec)],
    &[("nation", Str), ("o_year", Int), ("sum_profit", Dec)],
    &[
        ("c_custkey", Int),
        ("c_name", Str),
        ("revenue", Dec),
        ("c_acctbal", Dec),
        ("n_name", Str),
        ("c_address", Str),
        ("c_phone", Str),
        ("c_comment", Str),
    ],
    &[("ps_partkey", Int), ("value", Dec)],
    &[
        ("l_shipmode", Str),
        ("high_line_count", Int),
        ("low_line_count", Int),
    ],
    &[("c_count", Int), ("custdist", Int)],
    &[("promo_revenue", Dec)],
    &[
        ("s_suppkey", Int),
        ("s_name", Str),
        ("s_address", Str),
        ("s_phone", Str),
        ("total_revenue", Dec),
    ],
    &[
        ("p_brand", Str),
        ("p_type", Str),
        ("p_size", Int),
        ("supplier_cnt", Int),
    ],
    &[("avg_yearly", Dec)],
    &[
        ("c_name", Str),
        ("c_custkey", Int),
        ("o_orderkey", Int),
        ("o_orderdate", Date),
        ("o_totalprice", Dec),
        ("sum_quantity", Dec),
    ],
    &[("revenue", Dec)],
    &[("s_name", Str), ("s_address", Str)],
    &[("s_name", Str), ("numwait", Int)],
    &[("cntrycode", Str), ("numcust", Int), ("totacctbal", Dec)],
];

/// Query `n`'s column names, tab-separated.
fn header(n: u32) -> String {
    COLUMNS[n as usize - 1]
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join("\t")
}

fn decimal(v: i64) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    format!("{sign}{}.{:02}", a / 100, a % 100)
}

fn escaped(b: &[u8], out: &mut String) {
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(c as char),
            _ => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
}

/// One row of query `n`'s answer as a line (no newline). A column the list does not
/// know (a plan giving more columns than its query reports) is written as it is.
pub fn row_line(n: u32, row: &Row) -> String {
    let kinds = COLUMNS[n as usize - 1];
    let mut out = String::new();
    for (i, d) in row.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        let kind = kinds.get(i).map(|k| k.1);
        match (d, kind) {
            (Datum::Int(v), Some(Dec)) => out.push_str(&decimal(*v)),
            (Datum::Int(v), Some(Date)) if (0..=i64::from(u32::MAX)).contains(v) => {
                out.push_str(&date_string(*v as u32))
            }
            (Datum::Int(v), _) => {
                let _ = write!(out, "{v}");
            }
            (Datum::Str(b), _) => escaped(b, &mut out),
        }
    }
    out
}

/// The number of columns query `n` reports.
pub fn width(n: u32) -> usize {
    COLUMNS[n as usize - 1].len()
}

/// The file of query `n`'s answer in `dir`.
pub fn file(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("q{n:02}.tsv"))
}

/// The context line of an answer: what must be equal for two answers to be comparable.
pub fn context(q: &Query, sf: f64, salt: u64, refreshed: Option<(u64, u64)>) -> String {
    let data = match refreshed {
        Some((rf1, rf2)) => format!("data after {rf1} RF1 and {rf2} RF2"),
        None => "data's refresh functions unknown".to_string(),
    };
    format!(
        "# TPC-H Q{} | SF {sf} | population salt {salt:#x} | {data} | parameters {q:?}",
        q.number()
    )
}

/// Write query `q`'s answer `rows` to its file in `dir` (replacing it).
pub fn write(dir: &Path, q: &Query, context: &str, rows: &[Row]) -> std::io::Result<()> {
    let n = q.number();
    let mut text = format!("{context}\n{}\n", header(n));
    for r in rows {
        text.push_str(&row_line(n, r));
        text.push('\n');
    }
    std::fs::write(file(dir, n), text)
}

/// Check `--answers DIR` before a run: a directory that does not exist yet (it is
/// created) or an empty one, so no answer of an earlier run is left beside this run's.
pub fn prepare(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).map_err(|e| format!("--answers {}: {e}", dir.display()))?;
        if entries.next().is_some() {
            return Err(format!(
                "--answers {}: the directory is not empty (give a new or empty one, so no earlier answer is mixed in)",
                dir.display()
            ));
        }
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("--answers {}: {e}", dir.display()))
}

/// The query numbers whose answer files `dir` holds.
fn queries_in(dir: &Path) -> Result<Vec<u32>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut v = Vec::new();
    for e in rd {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_prefix('q')
            .and_then(|s| s.strip_suffix(".tsv"))
            .and_then(|s| s.parse::<u32>().ok())
            .filter(|n| (1..=22).contains(n) && name.len() == 7)
        {
            v.push(n);
        }
    }
    v.sort_unstable();
    Ok(v)
}

/// Whether `path` is a directory of answer files (at least one `qNN.tsv`).
pub fn is_set(path: &Path) -> bool {
    path.is_dir() && queries_in(path).is_ok_and(|v| !v.is_empty())
}

/// How one query's answers compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The same rows in the same order (the count).
    Equal(usize),
    /// The first row that differs (1-based), with A's and B's line (`None`: the
    /// answer has fewer rows), and both row counts.
    Differ {
        row: usize,
        a: Option<String>,
        b: Option<String>,
        rows: (usize, usize),
    },
    /// The context lines differ (another parameter, scale factor or data state).
    NotComparable { a: String, b: String },
    /// Only one side has the query (true: A).
    Missing(bool),
}

/// A file's context line, column line and rows.
fn read(path: &Path) -> Result<(String, String, Vec<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let bad = || {
        format!(
            "{}: not an answer file (no context and column lines)",
            path.display()
        )
    };
    let ctx = lines
        .next()
        .filter(|l| l.starts_with("# TPC-H Q"))
        .ok_or_else(bad)?;
    let cols = lines.next().ok_or_else(bad)?;
    Ok((
        ctx.to_string(),
        cols.to_string(),
        lines.map(str::to_string).collect(),
    ))
}

/// Compare the answers of two directories, query by query (every query either has).
pub fn compare(a: &Path, b: &Path) -> Result<Vec<(u32, Verdict)>, String> {
    let (qa, qb) = (queries_in(a)?, queries_in(b)?);
    let mut all: Vec<u32> = qa.iter().chain(&qb).copied().collect();
    all.sort_unstable();
    all.dedup();
    let mut out = Vec::new();
    for n in all {
        let v = match (qa.contains(&n), qb.contains(&n)) {
            (true, false) => Verdict::Missing(true),
            (false, true) => Verdict::Missing(false),
            _ => {
                let (ca, ha, ra) = read(&file(a, n))?;
                let (cb, hb, rb) = read(&file(b, n))?;
                if ca != cb || ha != hb {
                    Verdict::NotComparable {
                        a: format!("{ca} / {ha}"),
                        b: format!("{cb} / {hb}"),
                    }
                } else {
                    match (0..ra.len().max(rb.len())).find(|&i| ra.get(i) != rb.get(i)) {
                        None => Verdict::Equal(ra.len()),
                        Some(i) => Verdict::Differ {
                            row: i + 1,
                            a: ra.get(i).cloned(),
                            b: rb.get(i).cloned(),
                            rows: (ra.len(), rb.len()),
                        },
                    }
                }
            }
        };
        out.push((n, v));
    }
    Ok(out)
}

/// The comparison as lines, one per query, then a summary; and whether every query
/// present on both sides was equal (and none was on one side only).
pub fn to_text(verdicts: &[(u32, Verdict)], a: &str, b: &str) -> (Vec<String>, bool) {
    let plural = |n: usize| format!("{n} row{}", if n == 1 { "" } else { "s" });
    let show = |l: &Option<String>| match l {
        Some(l) => format!("`{l}`"),
        None => "(no such row)".to_string(),
    };
    let mut lines = vec![format!("TPC-H answers: A = {a}, B = {b}")];
    let mut equal = 0;
    for (n, v) in verdicts {
        lines.push(match v {
            Verdict::Equal(r) => {
                equal += 1;
                format!("Q{n}: equal ({})", plural(*r))
            }
            Verdict::Differ { row, a, b, rows } => format!(
                "Q{n}: DIFFER at row {row} (A {}, B {}): A {} B {}",
                plural(rows.0),
                plural(rows.1),
                show(a),
                show(b)
            ),
            Verdict::NotComparable { a, b } => {
                format!("Q{n}: NOT COMPARABLE (another question): A `{a}` B `{b}`")
            }
            Verdict::Missing(true) => format!("Q{n}: only in A"),
            Verdict::Missing(false) => format!("Q{n}: only in B"),
        });
    }
    let all = equal == verdicts.len();
    lines.push(format!(
        "{equal} of {} queries equal row by row{}",
        verdicts.len(),
        if all {
            ""
        } else {
            "; the others above are not"
        }
    ));
    (lines, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_dates_and_strings_are_written_plainly() {
        assert_eq!(decimal(12345), "123.45");
        assert_eq!(decimal(-5), "-0.05");
        assert_eq!(decimal(-100), "-1.00");
        assert_eq!(decimal(0), "0.00");
        let row = vec![
            Datum::Int(7),
            Datum::Int(123_456),
            Datum::Int(8035),
            Datum::Int(0),
        ];
        assert_eq!(row_line(3, &row), "7\t1234.56\t1992-01-01\t0");
        let row = vec![Datum::Str(b"a\tb\\c\xff".to_vec()), Datum::Int(3)];
        assert_eq!(row_line(21, &row), "a\\tb\\\\c\\xff\t3");
    }

    #[test]
    fn comparison_finds_the_first_differing_row() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let q = Query::validation(13).unwrap();
        let rows = |x: i64| {
            vec![
                vec![Datum::Int(0), Datum::Int(50)],
                vec![Datum::Int(9), Datum::Int(x)],
            ]
        };
        let ctx = context(&q, 0.01, 1, Some((1, 0)));
        write(a.path(), &q, &ctx, &rows(40)).unwrap();
        write(b.path(), &q, &ctx, &rows(40)).unwrap();
        let v = compare(a.path(), b.path()).unwrap();
        assert_eq!(v, vec![(13, Verdict::Equal(2))]);
        assert!(to_text(&v, "a", "b").1);
        write(b.path(), &q, &ctx, &rows(41)).unwrap();
        let v = compare(a.path(), b.path()).unwrap();
        assert_eq!(
            v,
            vec![(
                13,
                Verdict::Differ {
                    row: 2,
                    a: Some("9\t40".into()),
                    b: Some("9\t41".into()),
                    rows: (2, 2)
                }
            )]
        );
        let (lines, same) = to_text(&v, "a", "b");
        assert!(!same);
        assert!(lines[1].starts_with("Q13: DIFFER at row 2"), "{lines:?}");
        // Fewer rows on one side; another data state; a query on one side only.
        write(b.path(), &q, &ctx, &rows(40)[..1]).unwrap();
        assert!(matches!(
            compare(a.path(), b.path()).unwrap()[0].1,
            Verdict::Differ {
                row: 2,
                b: None,
                rows: (2, 1),
                ..
            }
        ));
        write(b.path(), &q, &context(&q, 0.01, 1, Some((2, 1))), &rows(40)).unwrap();
        assert!(matches!(
            compare(a.path(), b.path()).unwrap()[0].1,
            Verdict::NotComparable { .. }
        ));
        let q6 = Query::validation(6).unwrap();
        write(
            a.path(),
            &q6,
            &context(&q6, 0.01, 1, Some((1, 0))),
            &[vec![Datum::Int(1)]],
        )
        .unwrap();
        let v = compare(a.path(), b.path()).unwrap();
        assert_eq!(v[0], (6, Verdict::Missing(true)));
        assert!(is_set(a.path()));
        assert!(!is_set(&a.path().join("q06.tsv")));
    }

    #[test]
    fn prepare_refuses_a_directory_with_files() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("new");
        prepare(&d).unwrap();
        assert!(d.is_dir());
        prepare(&d).unwrap();
        std::fs::write(d.join("x"), "").unwrap();
        assert!(prepare(&d).unwrap_err().contains("not empty"));
    }
}
