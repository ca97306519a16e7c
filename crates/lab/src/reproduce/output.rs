//! Text, JSON and HTML of an outcome.

use super::common::*;
use crate::plot;
use std::path::Path;

fn table_text(caption: &str, source: Option<&str>, columns: &[String], rows: &[Row]) -> String {
    let mut o = match source {
        Some(s) => format!("{caption} [paper, {s}]\n"),
        None => format!("{caption} [oltpscope]\n"),
    };
    let w0 = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(4);
    let ws: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| r.values.get(i).map_or(0, |v| v.len()))
                .max()
                .unwrap_or(0)
                .max(c.len())
        })
        .collect();
    o += &format!("  {:<w0$}", "");
    for (c, w) in columns.iter().zip(&ws) {
        o += &format!("  {c:>w$}");
    }
    o += "\n";
    for r in rows {
        o += &format!("  {:<w0$}", r.name);
        for (v, w) in r.values.iter().zip(&ws) {
            o += &format!("  {v:>w$}");
        }
        o += "\n";
    }
    o
}

/// The whole outcome as text: each paper table, then the measured tables beside it,
/// then the verdicts.
pub fn to_text(o: &Outcome) -> String {
    let mut s = format!(
        "{}\n(source: {})\n\n{}\n\n",
        o.paper.title, o.paper.file, o.paper.setup
    );
    let mut shown: Vec<usize> = Vec::new();
    for pt in &o.paper.table {
        s += &table_text(&pt.caption, Some(&pt.source), &pt.columns, &pt.rows);
        for (i, t) in o.tables.iter().enumerate() {
            if t.beside.as_deref() == Some(pt.id.as_str()) {
                s += &table_text(&t.caption, None, &t.columns, &t.rows);
                shown.push(i);
            }
        }
        s += "\n";
    }
    for (i, t) in o.tables.iter().enumerate() {
        if !shown.contains(&i) {
            s += &table_text(&t.caption, None, &t.columns, &t.rows);
            s += "\n";
        }
    }
    s += "Findings\n";
    for f in &o.verdicts {
        s += &format!(
            "  [{}] {} ({}){}\n      {}\n",
            f.status.as_str(),
            f.claim,
            f.source,
            f.case
                .as_ref()
                .map_or(String::new(), |c| format!(" -- {c}")),
            f.why
        );
    }
    if let Some(t) = per_system(&o.verdicts) {
        s += "\n";
        s += &table_text(&t.caption, None, &t.columns, &t.rows);
    }
    s += &experiments_text(o);
    s += &format!(
        "\n{}; {:.0} s at the {} scale\n",
        o.counts.text(),
        o.elapsed_s,
        match o.scale {
            Scale::Tiny => "tiny (test)",
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    );
    s
}

/// Each experiment's time in this run, and what the run spent outside them (judging,
/// pages, a load done apart).
fn experiments_text(o: &Outcome) -> String {
    if o.experiments.is_empty() {
        return String::new();
    }
    const OUTSIDE: &str = "(outside them)";
    let w = (o.experiments.iter().map(|e| e.id.len()))
        .max()
        .unwrap_or(0)
        .max(OUTSIDE.len());
    let mut s = "\nExperiments (elapsed in this run)\n".to_string();
    for e in &o.experiments {
        s += &format!("  {:<w$}  {:>6.0} s  {}\n", e.id, e.elapsed_s, reps_text(e));
    }
    let inside: f64 = o.experiments.iter().map(|e| e.elapsed_s).sum();
    s += &format!(
        "  {:<w$}  {:>6.0} s\n",
        OUTSIDE,
        (o.elapsed_s - inside).max(0.0)
    );
    s
}

/// "4 repetitions run, 2 already done".
fn reps_text(e: &Experiment) -> String {
    let mut t = format!(
        "{} repetition{} run",
        e.ran,
        if e.ran == 1 { "" } else { "s" }
    );
    if e.resumed > 0 {
        t += &format!(", {} already done", e.resumed);
    }
    t
}

/// The verdicts of the findings judged per system, one column per system (its label up
/// to the parenthesis), one row per finding; None when no finding is judged per system.
fn per_system(verdicts: &[Verdict]) -> Option<Table> {
    let short = |c: &str| c.split(" (").next().unwrap_or(c).to_string();
    let mut systems: Vec<String> = Vec::new();
    for c in verdicts.iter().filter_map(|f| f.case.as_deref()) {
        if !systems.contains(&short(c)) {
            systems.push(short(c));
        }
    }
    if systems.is_empty() {
        return None;
    }
    let mut rows: Vec<Row> = Vec::new();
    for f in verdicts.iter().filter(|f| f.case.is_some()) {
        let i = match rows.iter().position(|r| r.name == f.id) {
            Some(i) => i,
            None => {
                rows.push(Row {
                    name: f.id.clone(),
                    values: vec!["-".into(); systems.len()],
                });
                rows.len() - 1
            }
        };
        let col = (systems.iter())
            .position(|x| *x == short(f.case.as_deref().expect("filtered")))
            .expect("collected above");
        rows[i].values[col] = f.status.as_str().to_string();
    }
    Some(Table {
        beside: None,
        caption: "Verdicts per system (\"-\": not judged on that system)".into(),
        columns: systems,
        rows,
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn table_html(caption: &str, source: Option<&str>, columns: &[String], rows: &[Row]) -> String {
    let mut h = format!(
        "<table class=\"{}\"><caption>{}{}</caption><tr><th></th>",
        if source.is_some() {
            "paper"
        } else {
            "measured"
        },
        esc(caption),
        source.map_or(" (oltpscope)".to_string(), |s| format!(
            " (paper, {})",
            esc(s)
        ))
    );
    for c in columns {
        h += &format!("<th>{}</th>", esc(c));
    }
    h += "</tr>\n";
    for r in rows {
        h += &format!("<tr><th>{}</th>", esc(&r.name));
        for v in &r.values {
            h += &format!("<td>{}</td>", esc(v));
        }
        h += "</tr>\n";
    }
    h + "</table>\n"
}

/// The page: the paper's tables beside the measured ones, the verdicts, the figures,
/// and the sweeps' own pages linked.
pub fn to_html(o: &Outcome) -> String {
    let mut b = format!(
        "<p>{}</p>\n<p>Source: <code>{}</code>. Scale: {:?}; {:.0} s.</p>\n",
        esc(&o.paper.setup),
        esc(&o.paper.file),
        o.scale,
        o.elapsed_s
    );
    b += &format!("<h2>Findings</h2>\n<p>{}.</p>\n", esc(&o.counts.text()));
    b += "<table class=\"findings\"><tr><th>verdict</th><th>finding</th><th>source</th><th>measured</th></tr>\n";
    for f in &o.verdicts {
        b += &format!(
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            match f.status {
                Status::Agrees => "agree",
                Status::Disagrees => "disagree",
                Status::WithinNoise => "noise",
                _ => "na",
            },
            esc(f.status.as_str()),
            esc(&match &f.case {
                Some(c) => format!("{} ({c})", f.claim),
                None => f.claim.clone(),
            }),
            esc(&f.source),
            esc(&f.why)
        );
    }
    b += "</table>\n<h2>Tables</h2>\n";
    let mut shown = Vec::new();
    for pt in &o.paper.table {
        b += "<div class=\"pair\">";
        b += &table_html(&pt.caption, Some(&pt.source), &pt.columns, &pt.rows);
        for (i, t) in o.tables.iter().enumerate() {
            if t.beside.as_deref() == Some(pt.id.as_str()) {
                b += &table_html(&t.caption, None, &t.columns, &t.rows);
                shown.push(i);
            }
        }
        b += "</div>\n";
    }
    for (i, t) in o.tables.iter().enumerate() {
        if !shown.contains(&i) {
            b += &table_html(&t.caption, None, &t.columns, &t.rows);
        }
    }
    if !o.figures.is_empty() {
        b += "<h2>Figures</h2>\n";
        for (c, svg) in &o.figures {
            b += &format!(
                "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
                esc(c)
            );
        }
    }
    if !o.sweeps.is_empty() {
        b += "<h2>Sweeps</h2>\n<ul>\n";
        for s in &o.sweeps {
            let time = o
                .experiments
                .iter()
                .find(|e| e.id == *s)
                .map_or(String::new(), |e| {
                    format!("; {:.0} s in this run, {}", e.elapsed_s, reps_text(e))
                });
            b += &format!(
                "<li><a href=\"{0}/index.html\">{0}</a> (its points' results directories, summary and curves{1})</li>\n",
                esc(s),
                esc(&time)
            );
        }
        b += "</ul>\n";
    }
    plot::page_with_style(
        &format!("oltpscope reproduce {}", o.paper.paper),
        &b,
        "table.paper,table.measured,table.findings{border-collapse:collapse;margin:0.5em 1em 1em 0;vertical-align:top}\
td,th{border:1px solid #999;padding:0.2em 0.6em;text-align:right}\
table.findings td{text-align:left}caption{text-align:left;font-weight:bold;padding:0.3em 0}\
table.paper{background:#f4f4ff}tr.agree td:first-child{background:#c8ecc8}\
tr.disagree td:first-child{background:#f4c0c0}tr.noise td:first-child{background:#f4e8b0}tr.na td:first-child{background:#e8e8e8}\
div.pair{display:flex;flex-wrap:wrap;align-items:flex-start}",
    )
}

pub(super) fn write(out: &Path, o: &Outcome) -> Result<(), String> {
    let w = |name: &str, text: &str| {
        std::fs::write(out.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", out.join(name).display()))
    };
    w(
        RESULT_JSON,
        &(serde_json::to_string_pretty(o).expect("outcomes serialize") + "\n"),
    )?;
    w("reproduce.txt", &to_text(o))?;
    let pd = out.join(plot::PLOTS);
    std::fs::create_dir_all(&pd).map_err(|e| format!("cannot create {}: {e}", pd.display()))?;
    for (i, (_, svg)) in o.figures.iter().enumerate() {
        w(&format!("{}/figure-{}.svg", plot::PLOTS, i + 1), svg)?;
    }
    w(plot::INDEX, &to_html(o))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn findings_without_a_measurement_need_a_missing_capability() {
        let p = load_paper("revisited").unwrap();
        let mut v = Verdicts::new(&p);
        for f in &p.finding {
            if f.needs.is_none() {
                v.check(&f.id, f.id.len() % 2 == 0, "numbers".into());
            }
        }
        let out = v.finish();
        assert_eq!(out.len(), p.finding.len());
        assert_eq!(
            out.iter()
                .filter(|f| f.status == Status::NotAvailable)
                .count(),
            // The cycle breakdown (hardware counters); DBMS D is PostgreSQL's case now.
            1
        );
        let html = to_html(&Outcome {
            paper: p.clone(),
            scale: Scale::Tiny,
            tables: vec![],
            counts: Counts::of(&out),
            verdicts: out,
            figures: vec![],
            sweeps: vec![],
            experiments: vec![],
            elapsed_s: 0.0,
        });
        assert!(html.contains("Table 2") && html.contains("not available"));
    }

    #[test]
    fn counts_and_outputs_show_within_noise() {
        let p = load_paper("steps").unwrap();
        let mut v = Verdicts::new(&p);
        v.set(
            "payment-fewer-l1i-misses",
            Status::WithinNoise,
            "margin".into(),
        );
        v.set("payment-teams-half", Status::Agrees, "teams".into());
        let verdicts = v.finish();
        let c = Counts::of(&verdicts);
        assert_eq!((c.agrees, c.within_noise, c.not_available), (1, 1, 2));
        let o = Outcome {
            paper: p,
            scale: Scale::Quick,
            tables: vec![],
            counts: c,
            verdicts,
            figures: vec![],
            sweeps: vec!["tpcc-teams".into()],
            experiments: vec![Experiment {
                id: "tpcc-teams".into(),
                elapsed_s: 0.6,
                ran: 2,
                resumed: 1,
            }],
            elapsed_s: 1.0,
        };
        let text = to_text(&o);
        assert!(
            text.contains("  tpcc-teams           1 s  2 repetitions run, 1 already done\n"),
            "{text}"
        );
        assert!(text.contains("  (outside them)       0 s\n"), "{text}");
        assert!(text.contains("[within noise]"), "{text}");
        assert!(
            text.contains("1 agree, 0 disagree, 1 within noise, 2 not available"),
            "{text}"
        );
        let html = to_html(&o);
        assert!(html.contains("class=\"noise\"") && html.contains("1 within noise"));
        assert!(
            html.contains("1 s in this run, 2 repetitions run"),
            "{html}"
        );
        let j = serde_json::to_value(&o).unwrap();
        assert_eq!(j["counts"]["within_noise"], 1);
        assert_eq!(j["verdicts"][0]["status"], "within_noise");
        assert_eq!(j["experiments"][0]["id"], "tpcc-teams");
        assert_eq!(j["experiments"][0]["ran"], 2);
    }

    #[test]
    fn per_system_verdicts_make_one_table() {
        let v = |id: &str, case: Option<&str>, status| Verdict {
            id: id.into(),
            source: "s".into(),
            claim: "c".into(),
            case: case.map(str::to_string),
            status,
            why: "w".into(),
        };
        let t = per_system(&[
            v("a", Some("disk engine (Shore-MT-like)"), Status::Agrees),
            v("a", Some("PostgreSQL (legacy)"), Status::NotMeasured),
            v("b", None, Status::Agrees),
            v("c", Some("PostgreSQL (legacy)"), Status::Disagrees),
        ])
        .unwrap();
        assert_eq!(t.columns, vec!["disk engine", "PostgreSQL"]);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].values, vec!["agrees", "not measured"]);
        assert_eq!(t.rows[1].values, vec!["-", "DISAGREES"]);
        assert!(per_system(&[v("b", None, Status::Agrees)]).is_none());
    }
}
