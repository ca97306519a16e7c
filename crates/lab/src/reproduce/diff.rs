//! Two reproductions side by side (`oltpscope compare A B` on two `reproduce` output
//! directories, a paper's or `reproduce all`'s): the verdicts that moved, every measured
//! table's cells that moved beyond the machine's noise, and each experiment's time.
//! This is how a change to the laboratory (shorter runs, shared loads) shows that the
//! findings and numbers did not move (issue 41), and how a researcher sees what another
//! machine or build changed.

use super::all::ALL;
use super::common::RESULT_JSON;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A cell moved when B differs from A by more than this share of A: the run-to-run
/// noise of the VMs this project runs on (+-15-25%, docs/PERFORMANCE.md).
pub const MOVED: f64 = 0.25;
/// ...and by more than this share of its column's largest value in either run, so that
/// a share of 0.1% becoming 0.2% is not a move.
pub const FLOOR: f64 = 0.01;

/// The reproduction's `reproduce.json` in `p` (a directory, or the file itself), if any.
pub fn result_file(p: &Path) -> Option<PathBuf> {
    if p.is_dir() {
        let f = p.join(RESULT_JSON);
        return f.is_file().then_some(f);
    }
    (p.file_name().is_some_and(|n| n == RESULT_JSON) && p.is_file()).then(|| p.to_path_buf())
}

fn load(p: &Path) -> Result<Value, String> {
    let text =
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: damaged ({e}): not a reproduction's result",
            p.display()
        )
    })?;
    if name(&v).is_none() {
        return Err(format!(
            "{}: no `paper`: not a reproduction's result",
            p.display()
        ));
    }
    Ok(v)
}

/// The paper a result is of (`paper.paper`: "all" for `reproduce all`).
fn name(v: &Value) -> Option<&str> {
    v["paper"]["paper"].as_str()
}

/// One paper's result on both sides; `None` where a side lacks it.
struct Pair {
    paper: String,
    a: Option<Value>,
    b: Option<Value>,
}

/// The papers of one side: a paper's result alone, or `all`'s papers from their
/// directories (`<dir>/<paper>/reproduce.json`; a paper without one is left out).
fn papers(file: &Path, v: Value) -> Result<Vec<(String, Value)>, String> {
    if name(&v) != Some(ALL) {
        let p = name(&v).unwrap_or_default().to_string();
        return Ok(vec![(p, v)]);
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for e in v["papers"].as_array().into_iter().flatten() {
        let Some(p) = e["paper"].as_str() else {
            continue;
        };
        let f = dir.join(p).join(RESULT_JSON);
        if f.is_file() {
            out.push((p.to_string(), load(&f)?));
        }
    }
    Ok(out)
}

/// A cell's number: "27,827", "45.2%", "8.41x", "12.5 s" read as numbers; anything
/// else (a name, "-") is text.
fn number(s: &str) -> Option<f64> {
    let t = s.trim().replace(',', "");
    let t = t
        .strip_suffix('%')
        .or_else(|| t.strip_suffix('x'))
        .or_else(|| t.strip_suffix(" s"))
        .unwrap_or(&t);
    t.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// A table's cell on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub table: String,
    pub row: String,
    pub column: String,
    pub a: String,
    pub b: String,
    /// B/A when both are numbers and A is not 0.
    pub ratio: Option<f64>,
    pub moved: bool,
}

/// Every cell of the measured tables (a result's `tables`; the papers' own are not in
/// it) found on both sides, matched by caption, row name and column name, not position.
fn cells(a: &Value, b: &Value) -> (Vec<Cell>, Vec<String>) {
    let tables = |v: &Value| -> Vec<Value> { v["tables"].as_array().cloned().unwrap_or_default() };
    let (ta, tb) = (tables(a), tables(b));
    let mut out = Vec::new();
    let mut unmatched = Vec::new();
    for t in &ta {
        let cap = t["caption"].as_str().unwrap_or_default();
        let Some(u) = tb.iter().find(|u| u["caption"] == t["caption"]) else {
            unmatched.push(format!("{cap} (A only)"));
            continue;
        };
        let cols = |t: &Value| -> Vec<String> {
            (t["columns"].as_array().into_iter().flatten())
                .map(|c| c.as_str().unwrap_or_default().to_string())
                .collect()
        };
        let (ca, cb) = (cols(t), cols(u));
        let rows = |t: &Value| -> Vec<(String, Vec<String>)> {
            (t["rows"].as_array().into_iter().flatten())
                .map(|r| {
                    let vals = (r["values"].as_array().into_iter().flatten())
                        .map(|x| x.as_str().unwrap_or_default().to_string())
                        .collect();
                    (r["name"].as_str().unwrap_or_default().to_string(), vals)
                })
                .collect()
        };
        let (ra, rb) = (rows(t), rows(u));
        let mut table = Vec::new();
        for (name, va) in &ra {
            let Some((_, vb)) = rb.iter().find(|(n, _)| n == name) else {
                continue;
            };
            for (i, col) in ca.iter().enumerate() {
                let Some(j) = cb.iter().position(|c| c == col) else {
                    continue;
                };
                let (Some(x), Some(y)) = (va.get(i), vb.get(j)) else {
                    continue;
                };
                let ratio = match (number(x), number(y)) {
                    (Some(p), Some(q)) if p != 0.0 => Some(q / p),
                    _ => None,
                };
                table.push(Cell {
                    table: cap.to_string(),
                    row: name.clone(),
                    column: col.clone(),
                    a: x.clone(),
                    b: y.clone(),
                    ratio,
                    moved: false,
                });
            }
        }
        mark_moved(&mut table);
        out.extend(table);
    }
    for u in &tb {
        if !ta.iter().any(|t| t["caption"] == u["caption"]) {
            unmatched.push(format!("{} (B only)", u["caption"].as_str().unwrap_or("")));
        }
    }
    (out, unmatched)
}

/// A numeric cell moved when it differs by more than [`MOVED`] of A and by more than
/// [`FLOOR`] of its column's largest magnitude (both sides); a text cell when its words
/// differ or a number in it does by more than [`MOVED`] ("insert (32.6%)" against
/// "insert (34.1%)" has not moved).
fn mark_moved(table: &mut [Cell]) {
    let mut col_max: std::collections::HashMap<String, f64> = Default::default();
    for d in table.iter() {
        for v in [number(&d.a), number(&d.b)].into_iter().flatten() {
            let m = col_max.entry(d.column.clone()).or_default();
            *m = m.max(v.abs());
        }
    }
    for c in table.iter_mut() {
        let moved = match (number(&c.a), number(&c.b)) {
            (Some(x), Some(y)) => {
                let col_max = col_max[&c.column];
                let d = (y - x).abs();
                d > MOVED * x.abs() && d > FLOOR * col_max
            }
            _ => {
                let ((wa, na), (wb, nb)) = (words_and_numbers(&c.a), words_and_numbers(&c.b));
                wa != wb
                    || na.len() != nb.len()
                    || na
                        .iter()
                        .zip(&nb)
                        .any(|(x, y)| (y - x).abs() > MOVED * x.abs())
            }
        };
        c.moved = moved;
    }
}

/// A text cell's words (its numbers taken out) and its numbers, in order.
fn words_and_numbers(s: &str) -> (String, Vec<f64>) {
    let mut words = String::new();
    let mut nums = Vec::new();
    let mut num = String::new();
    for ch in s.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_digit() || (ch == '.' && !num.is_empty()) {
            num.push(ch);
        } else {
            if let Ok(x) = num.parse::<f64>() {
                nums.push(x);
                words.push('#');
            }
            num.clear();
            words.push(ch);
        }
    }
    (words, nums)
}

/// Verdicts on both sides, matched by id and case: (id [case], A status, B status).
fn verdicts(a: &Value, b: &Value) -> Vec<(String, String, String)> {
    let key = |v: &Value| match v["case"].as_str() {
        Some(c) => format!("{} [{c}]", v["id"].as_str().unwrap_or_default()),
        None => v["id"].as_str().unwrap_or_default().to_string(),
    };
    let list = |v: &Value| -> Vec<(String, String)> {
        (v["verdicts"].as_array().into_iter().flatten())
            .map(|x| (key(x), x["status"].as_str().unwrap_or("?").to_string()))
            .collect()
    };
    let (la, lb) = (list(a), list(b));
    let mut out: Vec<(String, String, String)> = la
        .iter()
        .map(|(k, s)| {
            let t = lb.iter().find(|(l, _)| l == k).map(|(_, t)| t.clone());
            (k.clone(), s.clone(), t.unwrap_or_else(|| "absent".into()))
        })
        .collect();
    for (k, t) in &lb {
        if !la.iter().any(|(l, _)| l == k) {
            out.push((k.clone(), "absent".into(), t.clone()));
        }
    }
    out
}

fn counts(v: &Value) -> String {
    let c = &v["counts"];
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    format!(
        "{} agree, {} disagree, {} within noise, {} not available, {} not measured",
        n("agrees"),
        n("disagrees"),
        n("within_noise"),
        n("not_available"),
        n("not_measured")
    )
}

fn secs(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |s| format!("{s:.0} s"))
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}"))
}

/// One paper on both sides, as text.
fn paper_text(p: &Pair, all: bool, o: &mut String) {
    let (a, b) = match (&p.a, &p.b) {
        (Some(a), Some(b)) => (a, b),
        (a, _) => {
            let side = if a.is_some() { "A" } else { "B" };
            o.push_str(&format!("== {}: in {side} only\n\n", p.paper));
            return;
        }
    };
    let t = |v: &Value| v["elapsed_s"].as_f64();
    o.push_str(&format!(
        "== {} ({} / {}): A {}, B {} (B/A {})\n",
        p.paper,
        a["scale"].as_str().unwrap_or("?"),
        b["scale"].as_str().unwrap_or("?"),
        secs(&a["elapsed_s"]),
        secs(&b["elapsed_s"]),
        ratio_text(t(a).zip(t(b)).filter(|(x, _)| *x > 0.0).map(|(x, y)| y / x))
    ));
    o.push_str(&format!(
        "verdicts A: {}\nverdicts B: {}\n",
        counts(a),
        counts(b)
    ));
    let vs = verdicts(a, b);
    let moved: Vec<_> = vs.iter().filter(|(_, x, y)| x != y).collect();
    o.push_str(&format!(
        "verdicts that differ: {} of {}\n",
        moved.len(),
        vs.len()
    ));
    for (k, x, y) in &moved {
        o.push_str(&format!("  {k}: {x} -> {y}\n"));
    }
    let (cells, unmatched) = cells(a, b);
    let numeric = cells.iter().filter(|c| c.ratio.is_some()).count();
    let moved_cells: Vec<&Cell> = cells.iter().filter(|c| c.moved).collect();
    o.push_str(&format!(
        "measured cells on both sides: {} ({numeric} numbers); moved (by more than {:.0}% and {:.0}% of the column's largest): {}\n",
        cells.len(),
        MOVED * 100.0,
        FLOOR * 100.0,
        moved_cells.len()
    ));
    if numeric > 0 {
        let mut r: Vec<f64> = cells.iter().filter_map(|c| c.ratio).collect();
        r.sort_by(f64::total_cmp);
        o.push_str(&format!(
            "B/A of the numbers: median {:.2}, middle half {:.2}-{:.2}\n",
            r[r.len() / 2],
            r[r.len() / 4],
            r[(3 * r.len()) / 4]
        ));
    }
    for u in &unmatched {
        o.push_str(&format!("  table not on both sides: {u}\n"));
    }
    let shown: Vec<&Cell> = if all {
        cells.iter().collect()
    } else {
        moved_cells
    };
    let mut last = "";
    for c in shown {
        if c.table != last {
            o.push_str(&format!("  [{}]\n", c.table));
            last = &c.table;
        }
        o.push_str(&format!(
            "    {} | {}: {} -> {} ({}){}\n",
            c.row,
            c.column,
            c.a,
            c.b,
            ratio_text(c.ratio),
            if c.moved { "  moved" } else { "" }
        ));
    }
    let exps = |v: &Value| -> Vec<(String, Option<f64>)> {
        (v["experiments"].as_array().into_iter().flatten())
            .map(|e| {
                (
                    e["id"].as_str().unwrap_or_default().to_string(),
                    e["elapsed_s"].as_f64(),
                )
            })
            .collect()
    };
    let (ea, eb) = (exps(a), exps(b));
    if !ea.is_empty() || !eb.is_empty() {
        o.push_str("experiments' times (A -> B):");
        for (id, s) in &ea {
            let t = eb.iter().find(|(j, _)| j == id).and_then(|(_, t)| *t);
            let f = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.0}"));
            o.push_str(&format!(" {id} {}->{}", f(*s), f(t)));
        }
        o.push('\n');
    }
    o.push('\n');
}

/// `a` and `b` (directories or `reproduce.json` files of `reproduce <paper>` or
/// `reproduce all`) side by side, as text; `all`: every cell, not only those that moved.
pub fn compare(a: &Path, b: &Path, all: bool) -> Result<String, String> {
    let fa = result_file(a).ok_or_else(|| no_result(a))?;
    let fb = result_file(b).ok_or_else(|| no_result(b))?;
    let pa = papers(&fa, load(&fa)?)?;
    let pb = papers(&fb, load(&fb)?)?;
    let mut pairs: Vec<Pair> = Vec::new();
    for (p, v) in pa {
        pairs.push(Pair {
            paper: p,
            a: Some(v),
            b: None,
        });
    }
    for (p, v) in pb {
        match pairs.iter_mut().find(|x| x.paper == p) {
            Some(x) => x.b = Some(v),
            None => pairs.push(Pair {
                paper: p,
                a: None,
                b: Some(v),
            }),
        }
    }
    if !pairs.iter().any(|p| p.a.is_some() && p.b.is_some()) {
        return Err(format!(
            "{} and {} share no paper: nothing to set side by side",
            a.display(),
            b.display()
        ));
    }
    let mut o = format!("A: {}\nB: {}\n\n", a.display(), b.display());
    for p in &pairs {
        paper_text(p, all, &mut o);
    }
    Ok(o)
}

fn no_result(p: &Path) -> String {
    format!(
        "{}: no {RESULT_JSON} (a finished `oltpscope reproduce` output directory)",
        p.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(paper: &str, tput: &str, share: &str, status: &str) -> Value {
        json!({
            "paper": {"paper": paper, "title": "t"}, "scale": "full", "elapsed_s": 100.0,
            "counts": {"agrees": 1, "disagrees": 0, "within_noise": 0, "not_available": 0, "not_measured": 0},
            "tables": [
                {"beside": "t2", "caption": "Measured reads", "columns": ["1MB", "share"],
                 "rows": [{"name": "disk", "values": [tput, share]},
                          {"name": "memory", "values": ["2,000,000", "40.0%"]}]}
            ],
            "verdicts": [{"id": "faster", "case": "disk", "status": status},
                         {"id": "slower", "status": "agrees"}],
            "experiments": [{"id": "size", "elapsed_s": 50.0}]
        })
    }

    fn write(dir: &Path, v: &Value) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(RESULT_JSON), v.to_string()).unwrap();
    }

    #[test]
    fn numbers_are_read_through_their_units_and_names_are_text() {
        assert_eq!(number("27,827"), Some(27827.0));
        assert_eq!(number("45.2%"), Some(45.2));
        assert_eq!(number("8.41x"), Some(8.41));
        assert_eq!(number("12.5 s"), Some(12.5));
        assert_eq!(number("insert (30.3%)"), None);
        assert_eq!(number("-"), None);
    }

    #[test]
    fn moved_cells_and_verdicts_are_named_and_noise_is_not() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        // disk's throughput within the noise (+10%), its share moved (30% -> 50%).
        write(&a, &result("revisited", "100,000", "30.0%", "agrees"));
        write(&b, &result("revisited", "110,000", "50.0%", "disagrees"));
        let t = compare(&a, &b, false).unwrap();
        assert!(t.contains("verdicts that differ: 1 of 2"), "{t}");
        assert!(t.contains("faster [disk]: agrees -> disagrees"), "{t}");
        assert!(
            t.contains("disk | share: 30.0% -> 50.0% (1.67)  moved"),
            "{t}"
        );
        assert!(!t.contains("disk | 1MB"), "{t}");
        assert!(
            t.contains("measured cells on both sides: 4 (4 numbers)"),
            "{t}"
        );
        // --all lists every cell.
        let all = compare(&a, &b, true).unwrap();
        assert!(
            all.contains("disk | 1MB: 100,000 -> 110,000 (1.10)\n"),
            "{all}"
        );
        assert!(
            all.contains("experiments' times (A -> B): size 50->50"),
            "{all}"
        );
    }

    #[test]
    fn a_small_share_doubling_is_below_the_floor() {
        let mut t = vec![
            Cell {
                table: "t".into(),
                row: "x".into(),
                column: "c".into(),
                a: "0.1%".into(),
                b: "0.2%".into(),
                ratio: Some(2.0),
                moved: false,
            },
            Cell {
                table: "t".into(),
                row: "y".into(),
                column: "c".into(),
                a: "60.0%".into(),
                b: "59.0%".into(),
                ratio: Some(59.0 / 60.0),
                moved: false,
            },
        ];
        mark_moved(&mut t);
        assert!(!t[0].moved && !t[1].moved, "{t:?}");
        t[1].b = "30.0%".into();
        mark_moved(&mut t);
        assert!(t[1].moved, "{t:?}");
        // A name with its share: moved when the name changes or the share by over 25%.
        let text = |a: &str, b: &str| {
            let mut c = vec![Cell {
                table: "t".into(),
                row: "x".into(),
                column: "most".into(),
                a: a.into(),
                b: b.into(),
                ratio: None,
                moved: false,
            }];
            mark_moved(&mut c);
            c[0].moved
        };
        assert!(!text("insert (32.6%)", "insert (34.1%)"));
        assert!(text("insert (29.5%)", "commit (27.5%)"));
        assert!(text("update (16.7%)", "update (26.7%)"));
    }

    #[test]
    fn all_runs_pair_their_papers_and_a_directory_without_a_result_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        write(
            &a.join("revisited"),
            &result("revisited", "1", "1%", "agrees"),
        );
        write(&a.join("steps"), &result("steps", "1", "1%", "agrees"));
        write(
            &a,
            &json!({"paper": {"paper": "all"}, "papers": [{"paper": "revisited"}, {"paper": "steps"}]}),
        );
        // B is one paper's own run: compared with A's run of it; A's other paper is
        // named as on one side only.
        write(&b, &result("revisited", "1", "1%", "agrees"));
        let t = compare(&a, &b, false).unwrap();
        assert!(t.contains("== revisited (full / full)"), "{t}");
        assert!(t.contains("== steps: in A only"), "{t}");
        let e = compare(&a, &d.path().join("none"), false).unwrap_err();
        assert!(e.contains("no reproduce.json"), "{e}");
        let c = d.path().join("c");
        write(&c, &result("wonderland", "1", "1%", "agrees"));
        let e = compare(&b, &c, false).unwrap_err();
        assert!(e.contains("share no paper"), "{e}");
        std::fs::write(c.join(RESULT_JSON), "{").unwrap();
        let e = compare(&b, &c, false).unwrap_err();
        assert!(e.contains("damaged"), "{e}");
    }
}
