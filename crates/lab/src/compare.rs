//! `oltpscope compare A B`: two reports side by side with the ratio B/A, the way cg_diff
//! sets two profiles against each other. The text leads with the settings that differ
//! (engine, threads, cache sizes, machine), then the headline figures (throughput,
//! aborts, CPU share, latency; for a simulation MPKI and stall shares by level and
//! component), then the other figures that changed most; `--all` lists every figure.
//! Figures are named by their path in the report; rows of tables (transaction types,
//! wait kinds, cache levels, components, operations, functions) are named by their own
//! name, not their position, so reports with rows in another order or missing still
//! line up.

use serde_json::Value;
use std::collections::BTreeMap;

/// Parts of a report that describe the circumstances, not the result.
const SKIP: &[&str] = &["machine", "started_at_unix_s", "version", "child_args"];

/// Fields that name a row of a table, in the order they are joined.
const ROW_KEYS: &[&str] = &[
    "name",
    "kind",
    "role",
    "level",
    "operation",
    "component",
    "function",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub figure: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

impl Row {
    /// B/A; None when either is missing or A is zero.
    pub fn ratio(&self) -> Option<f64> {
        match (self.a, self.b) {
            (Some(a), Some(b)) if a != 0.0 => Some(b / a),
            _ => None,
        }
    }
}

/// The label of an array element: its naming fields, else its index.
fn element_label(i: usize, v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let parts: Vec<&str> = ROW_KEYS
                .iter()
                .filter_map(|k| m.get(*k).and_then(Value::as_str))
                .collect();
            if parts.is_empty() {
                i.to_string()
            } else {
                parts.join("/")
            }
        }
        // (name, figures) pairs, as the simulator's per-function misses by level.
        Value::Array(a) if a.len() == 2 && a[0].is_string() => {
            a[0].as_str().unwrap_or_default().to_string()
        }
        _ => i.to_string(),
    }
}

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, f64>, order: &mut Vec<String>) {
    let mut put = |k: String, x: f64| {
        if !out.contains_key(&k) {
            order.push(k.clone());
        }
        out.insert(k, x);
    };
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                put(prefix.to_string(), x);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                if prefix.is_empty() && SKIP.contains(&k.as_str()) {
                    continue;
                }
                if ROW_KEYS.contains(&k.as_str()) && x.is_string() {
                    continue;
                }
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, out, order);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let label = element_label(i, x);
                let p = format!("{prefix}[{label}]");
                match x {
                    Value::Array(pair) if pair.len() == 2 && pair[0].is_string() => {
                        flatten(&p, &pair[1], out, order)
                    }
                    _ => flatten(&p, x, out, order),
                }
            }
        }
        _ => {}
    }
}

/// Every numeric figure of `a` and `b`, in `a`'s order then the ones only `b` has.
pub fn compare(a: &Value, b: &Value) -> Vec<Row> {
    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
    let (mut oa, mut ob) = (Vec::new(), Vec::new());
    flatten("", a, &mut fa, &mut oa);
    flatten("", b, &mut fb, &mut ob);
    let mut rows: Vec<Row> = oa
        .iter()
        .map(|k| Row {
            figure: k.clone(),
            a: fa.get(k).copied(),
            b: fb.get(k).copied(),
        })
        .collect();
    rows.extend(ob.iter().filter(|k| !fa.contains_key(*k)).map(|k| Row {
        figure: k.clone(),
        a: None,
        b: fb.get(k).copied(),
    }));
    rows
}

/// What kind of report: "profile" (a run with its profile), "run" (has throughput) or
/// "simulate" (has a simulation).
pub fn kind(v: &Value) -> &'static str {
    if v.get("simulation").is_some() {
        "simulate"
    } else if v.get("profile").is_some() && v.get("throughput_tps").is_some() {
        "profile"
    } else if v.get("throughput_tps").is_some() {
        "run"
    } else {
        "unknown"
    }
}

/// Can reports of these kinds be set side by side? The same kind, or a run and a
/// profile (a profile is a run with its profile added: their common figures line up,
/// e.g. to see what sampling costs, and the profile's rows have one side only).
pub fn comparable(a: &str, b: &str) -> bool {
    a == b || matches!((a, b), ("run", "profile") | ("profile", "run"))
}

/// The figures a simulation report implies but does not hold: each level's and each
/// component's share of the stall cycles (what the papers' figures plot).
fn with_shares(v: &Value) -> Value {
    let mut v = v.clone();
    let Some(sim) = v.get_mut("simulation").and_then(Value::as_object_mut) else {
        return v;
    };
    let total = sim
        .get("total_stall_cycles")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    if total <= 0.0 {
        return v;
    }
    if let Some(levels) = sim.get_mut("levels").and_then(Value::as_array_mut) {
        for l in levels {
            if let Some(c) = l.pointer("/stall_cycles/total").and_then(Value::as_f64) {
                l["stall_share"] = (c / total).into();
            }
        }
    }
    if let Some(rows) = sim.get_mut("by_component").and_then(Value::as_array_mut) {
        for r in rows {
            if let Some(c) = r.get("stall_cycles").and_then(Value::as_f64) {
                r["stall_share"] = (c / total).into();
            }
        }
    }
    v
}

/// Where `figure` stands among the headline figures of its kind of report (None: not
/// one of them).
fn headline(figure: &str) -> Option<usize> {
    const RUN: &[&str] = &[
        "throughput_tps",
        "tpmc",
        "abort_rate",
        "user_aborts",
        "worker_cpu_busy",
        "latency_us.p50",
        "latency_us.p95",
        "latency_us.p99",
        "latency_us.p999",
        "memory.rss_peak_bytes",
        "simulation.instructions_per_txn",
        "simulation.transactions",
    ];
    if let Some(i) = RUN.iter().position(|f| *f == figure) {
        return Some(i);
    }
    let row = |prefix: &str, suffix: &str| {
        figure.starts_with(prefix)
            && figure.ends_with(suffix)
            && !figure[prefix.len()..figure.len() - suffix.len()].contains('.')
    };
    [
        ("per_txn[", "].committed"),
        ("profile.components[", "].share"),
        ("simulation.levels[", "].mpki.total"),
        ("simulation.levels[", "].stall_share"),
        ("simulation.by_component[", "].stall_share"),
    ]
    .iter()
    .position(|(p, s)| row(p, s))
    .map(|k| RUN.len() + k)
}

/// Leaves that describe how a report was made: its settings (what to show first when
/// they differ), as text.
fn settings(v: &Value) -> BTreeMap<String, String> {
    fn leaves(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    leaves(&format!("{prefix}.{k}"), x, out);
                }
            }
            Value::String(s) => {
                out.insert(prefix.to_string(), s.clone());
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    for k in [
        "workload",
        "engine",
        "threads",
        "coroutines",
        "seed",
        "warmup_s",
    ] {
        if let Some(x) = v.get(k) {
            leaves(k, x, &mut out);
        }
    }
    for k in ["config", "machine"] {
        if let Some(x) = v.get(k) {
            leaves(k, x, &mut out);
        }
    }
    if let Some(x) = v.pointer("/simulation/config") {
        leaves("simulation.config", x, &mut out);
    }
    if let Some(a) = v.get("child_args").and_then(Value::as_array) {
        let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
        run_options(&words, &mut out);
    }
    // Circumstances that differ between any two runs say nothing.
    out.retain(|k, _| {
        !matches!(
            k.as_str(),
            "machine.hostname" | "machine.memory_available_bytes" | "config.engine.db_dir"
        )
    });
    out
}

/// A traced run's command line (`simulate`'s `child_args`: command, workload, then
/// options) as one setting per option, so the option that differs is the one shown
/// (`run --engine: memory, disk`), not a middle cut out of two long command lines.
fn run_options(words: &[&str], out: &mut BTreeMap<String, String>) {
    let mut w = words.iter().skip(1).peekable();
    if let Some(workload) = w.next_if(|x| !x.starts_with("--")) {
        out.insert("run workload".into(), (*workload).to_string());
    }
    while let Some(opt) = w.next() {
        let value = w.next_if(|x| !x.starts_with("--")).map_or("on", |x| x);
        out.insert(format!("run {opt}"), value.to_string());
    }
}

/// One setting that differs between the two reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub name: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

/// The two reports arranged for reading: differing settings, headline figures, and
/// the other figures, the most changed first.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub settings: Vec<Setting>,
    pub headline: Vec<Row>,
    pub rest: Vec<Row>,
}

/// How much a figure changed, for ordering: |ln(B/A)|, a figure on one side only or
/// from zero counting as the largest change.
fn change(r: &Row) -> f64 {
    match (r.a, r.b) {
        (Some(a), Some(b)) if a == b => 0.0,
        // A zero on one side only (a component the other run never entered) says
        // nothing the missing side does not.
        (Some(x), None) | (None, Some(x)) if x == 0.0 => 0.0,
        (Some(a), Some(b)) if a != 0.0 && b != 0.0 && (a > 0.0) == (b > 0.0) => (b / a).ln().abs(),
        _ => f64::INFINITY,
    }
}

pub fn arrange(a: &Value, b: &Value) -> Comparison {
    let (sa, sb) = (settings(a), settings(b));
    let mut names: Vec<&String> = sa.keys().chain(sb.keys()).collect();
    names.sort();
    names.dedup();
    let settings = names
        .into_iter()
        .filter(|k| sa.get(*k) != sb.get(*k))
        .map(|k| Setting {
            name: k.clone(),
            a: sa.get(k).cloned(),
            b: sb.get(k).cloned(),
        })
        .collect();
    let rows = compare(&with_shares(a), &with_shares(b));
    let is_setting = |f: &str| {
        f.starts_with("config.")
            || f.starts_with("simulation.config.")
            || matches!(f, "threads" | "coroutines" | "seed" | "warmup_s")
    };
    let (mut headline_rows, mut rest): (Vec<Row>, Vec<Row>) = rows
        .into_iter()
        .filter(|r| !is_setting(&r.figure))
        .partition(|r| headline(&r.figure).is_some());
    headline_rows.sort_by_key(|r| headline(&r.figure));
    // Stable: equal changes keep the report's order.
    rest.sort_by(|x, y| change(y).total_cmp(&change(x)));
    Comparison {
        settings,
        headline: headline_rows,
        rest,
    }
}

fn num(x: Option<f64>) -> String {
    let Some(v) = x else {
        return "-".into();
    };
    if v == v.trunc() && v.abs() < 1e15 {
        return group(v as i64);
    }
    if v.abs() >= 1000.0 {
        return group(v.round() as i64);
    }
    // Four significant digits.
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

/// An integer with thousands separators.
fn group(v: i64) -> String {
    let s = v.unsigned_abs().to_string();
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    if v < 0 {
        format!("-{o}")
    } else {
        o
    }
}

/// `s` shortened to `w` characters, its middle elided (the ends name a figure).
fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let head = (w - 1) / 3;
    let tail = w - 1 - head;
    let c: Vec<char> = s.chars().collect();
    format!(
        "{}…{}",
        c[..head].iter().collect::<String>(),
        c[n - tail..].iter().collect::<String>()
    )
}

/// Width of the figure column in the default view: with the number columns, the table
/// fits 100 columns.
const NAME_W: usize = 52;
const NUM_W: usize = 15;
/// Changed figures shown after the headline when not `--all`.
const CHANGED: usize = 20;

fn table(o: &mut String, title: &str, rows: &[Row], w: usize) {
    if rows.is_empty() {
        return;
    }
    *o += &format!(
        "{:<w$}  {:>NUM_W$}  {:>NUM_W$}  {:>8}\n",
        title, "A", "B", "B/A"
    );
    for r in rows {
        let q = r.ratio().map_or("-".into(), |x| format!("{x:.3}"));
        // Every figure of a simulation report is under `simulation.`: the prefix would
        // only push the names' distinguishing middle out of the column.
        let name = r.figure.strip_prefix("simulation.").unwrap_or(&r.figure);
        *o += &format!(
            "  {:<w2$}  {:>NUM_W$}  {:>NUM_W$}  {q:>8}\n",
            if w == NAME_W {
                fit(name, w - 2)
            } else {
                name.to_string()
            },
            num(r.a),
            num(r.b),
            w2 = w - 2
        );
    }
}

/// The comparison as text: differing settings, headline, the most changed other
/// figures (every figure, names unshortened, with `all`).
pub fn to_text(c: &Comparison, a_name: &str, b_name: &str, all: bool) -> String {
    let mut o = format!("A: {a_name}\nB: {b_name}\n\n");
    if c.settings.is_empty() {
        o += "settings: the same\n\n";
    } else {
        o += &format!("{:<40}  {:>28}  {:>28}\n", "settings that differ", "A", "B");
        for s in &c.settings {
            let v = |x: &Option<String>| fit(x.as_deref().unwrap_or("-"), 28);
            o += &format!(
                "  {:<38}  {:>28}  {:>28}\n",
                fit(&s.name, 38),
                v(&s.a),
                v(&s.b)
            );
        }
        o += "\n";
    }
    let w = if all {
        c.headline
            .iter()
            .chain(&c.rest)
            .map(|r| r.figure.chars().count() + 2)
            .max()
            .unwrap_or(NAME_W)
            .max(NAME_W)
    } else {
        NAME_W
    };
    table(&mut o, "headline", &c.headline, w);
    if all {
        o += "\n";
        table(
            &mut o,
            "every other figure (most changed first)",
            &c.rest,
            w,
        );
    } else {
        let changed: Vec<Row> = c
            .rest
            .iter()
            .filter(|r| change(r) > 0.0)
            .take(CHANGED)
            .cloned()
            .collect();
        if !changed.is_empty() {
            o += "\n";
            table(&mut o, "most changed other figures", &changed, w);
        }
        let more = c.rest.len() - changed.len();
        if more > 0 {
            o += &format!("\n{more} more figures: --all lists every one\n");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_report(tps: f64, p99: f64) -> Value {
        json!({
            "workload": "micro", "engine": "memory", "threads": 1,
            "throughput_tps": tps, "committed": 1000,
            "per_txn": [{"name": "read", "committed": 1000, "latency_us": {"p99": p99}}],
            "machine": {"cores": 2}, "started_at_unix_s": 5
        })
    }

    #[test]
    fn two_run_reports_line_up_with_their_ratio() {
        let rows = compare(&run_report(1000.0, 10.0), &run_report(1500.0, 5.0));
        let get = |f: &str| rows.iter().find(|r| r.figure == f).unwrap().clone();
        assert_eq!(get("throughput_tps").ratio(), Some(1.5));
        assert_eq!(get("per_txn[read].latency_us.p99").ratio(), Some(0.5));
        assert_eq!(get("committed").ratio(), Some(1.0));
        // Circumstances are not figures; names are not numbers.
        assert!(rows.iter().all(|r| !r.figure.starts_with("machine")));
        assert!(rows.iter().all(|r| r.figure != "started_at_unix_s"));
        let c = arrange(&run_report(1000.0, 10.0), &run_report(1500.0, 5.0));
        let text = to_text(&c, "a", "b", false);
        assert!(text.contains("throughput_tps"), "{text}");
        assert!(text.contains("1.500"), "{text}");
    }

    #[test]
    fn profile_rows_are_matched_by_component_and_transaction_type() {
        let prof = |lock: f64, btree: f64| {
            let mut r = run_report(1000.0, 10.0);
            r["profile"] = json!({
                "samples": 100,
                "components": [{"name": "btree", "samples": 1, "share": btree},
                               {"name": "lock", "samples": 1, "share": lock}],
                "txn_types": [{"name": "payment", "samples": 1, "share": 1.0,
                               "components": [{"name": "lock", "samples": 1, "share": lock}]}],
                "lock_split": {"lock": lock, "lock_pc": 0.0, "lock_lc": 0.1}
            });
            r
        };
        let (a, mut b) = (prof(0.2, 0.5), prof(0.4, 0.25));
        assert_eq!(kind(&a), "profile");
        // Components in another order still line up.
        b["profile"]["components"].as_array_mut().unwrap().reverse();
        let rows = compare(&a, &b);
        let get = |f: &str| rows.iter().find(|r| r.figure == f).unwrap().clone();
        assert_eq!(get("profile.components[lock].share").ratio(), Some(2.0));
        assert_eq!(get("profile.components[btree].share").ratio(), Some(0.5));
        assert_eq!(
            get("profile.txn_types[payment].components[lock].share").ratio(),
            Some(2.0)
        );
        assert_eq!(get("profile.lock_split.lock_lc").ratio(), Some(1.0));
        assert!(comparable("profile", "run") && comparable("run", "profile"));
        assert!(!comparable("profile", "simulate"));
    }

    #[test]
    fn simulate_rows_are_matched_by_level_component_and_operation() {
        let a = json!({"simulation": {
            "levels": [{"name": "L1I", "misses": {"i": 10, "d": 0, "total": 10}}],
            "by_component": [{"operation": null, "component": "btree", "stall_cycles": 100},
                             {"operation": null, "component": "lock", "stall_cycles": 50}],
            "by_operation": [{"operation": "read", "component": null, "stall_cycles": 7}]
        }});
        // B lists the components in another order and lacks one.
        let b = json!({"simulation": {
            "levels": [{"name": "L1I", "misses": {"i": 20, "d": 0, "total": 20}}],
            "by_component": [{"operation": null, "component": "lock", "stall_cycles": 25},
                             {"operation": null, "component": "btree", "stall_cycles": 300}],
            "by_operation": []
        }});
        assert_eq!(kind(&a), "simulate");
        let rows = compare(&a, &b);
        let get = |f: &str| rows.iter().find(|r| r.figure == f).unwrap().clone();
        assert_eq!(get("simulation.levels[L1I].misses.i").ratio(), Some(2.0));
        assert_eq!(
            get("simulation.by_component[btree].stall_cycles").ratio(),
            Some(3.0)
        );
        assert_eq!(
            get("simulation.by_component[lock].stall_cycles").ratio(),
            Some(0.5)
        );
        let r = get("simulation.by_operation[read].stall_cycles");
        assert_eq!((r.a, r.b, r.ratio()), (Some(7.0), None, None));
    }

    #[test]
    fn the_text_leads_with_differing_settings_and_headline_and_fits_100_columns() {
        let mut a = run_report(1000.0, 10.0);
        let mut b = run_report(900.0, 12.0);
        b["engine"] = json!("mvcc");
        a["worker_cpu_busy"] = json!(0.98);
        b["worker_cpu_busy"] = json!(0.71);
        for (r, n) in [(&mut a, 3), (&mut b, 9)] {
            r["waits"] = json!([{"kind": "lock", "count": n, "total_ms": 1.0},
                                {"kind": "latch", "count": 1, "total_ms": 2.0}]);
            r["config"] = json!({"engine": {"log": "off", "db_dir": format!("/tmp/{n}")}});
            let long = "_ZN12engine_disk5btree5BTree6insert17h0123456789abcdefE";
            r["profile"] = json!({"top": [{"function": long, "share": n as f64}]});
        }
        b["config"]["engine"]["log"] = json!("async");
        let c = arrange(&a, &b);
        let names: Vec<&str> = c.settings.iter().map(|s| s.name.as_str()).collect();
        // The database directory is a circumstance, not a setting.
        assert_eq!(names, ["config.engine.log", "engine"]);
        let head: Vec<&str> = c.headline.iter().map(|r| r.figure.as_str()).collect();
        assert_eq!(
            head[..3],
            [
                "throughput_tps",
                "worker_cpu_busy",
                "per_txn[read].committed"
            ]
        );
        // Waits are named by their kind; the most changed figure leads the rest.
        assert!(c.rest.iter().any(|r| r.figure == "waits[latch].total_ms"));
        assert_eq!(
            c.rest[0].figure,
            "profile.top[_ZN12engine_disk5btree5BTree6insert17h0123456789abcdefE].share"
        );
        let text = to_text(&c, "a.json", "b.json", false);
        let wide = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(wide <= 100, "{wide} columns:\n{text}");
        let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s}:\n{text}"));
        assert!(pos("settings that differ") < pos("headline"));
        assert!(pos("headline") < pos("most changed"));
        assert!(text.contains("mvcc") && text.contains("0.7100"), "{text}");
        assert!(!text.contains("waits[0]"), "{text}");
        // --all keeps every figure and whole names.
        let all = to_text(&c, "a.json", "b.json", true);
        assert!(all.contains("_ZN12engine_disk5btree5BTree6insert17h0123456789abcdefE"));
        assert!(all.contains("waits[lock].count"));
    }

    #[test]
    fn a_simulation_leads_with_mpki_and_stall_shares() {
        let sim = |l1i: u64, btree: u64| {
            json!({"child_args": ["run", "tpcc", "--engine", "disk"],
                   "simulation": {"config": {"l1i": {"size": 32768}},
                   "instructions_per_txn": 1000.0, "total_stall_cycles": 1000,
                   "levels": [{"name": "L1-I", "mpki": {"i": 5.0, "d": 0.0, "total": 5.0},
                               "stall_cycles": {"i": l1i, "d": 0, "total": l1i}}],
                   "by_component": [{"operation": null, "component": "btree",
                                     "stall_cycles": btree, "instructions": 10}]}})
        };
        let (a, mut b) = (sim(500, 250), sim(250, 500));
        b["simulation"]["config"]["l1i"]["size"] = json!(16384);
        let c = arrange(&a, &b);
        let get = |f: &str| c.headline.iter().find(|r| r.figure == f).cloned();
        assert_eq!(
            get("simulation.levels[L1-I].stall_share").unwrap().a,
            Some(0.5)
        );
        assert_eq!(
            get("simulation.by_component[btree].stall_share")
                .unwrap()
                .ratio(),
            Some(2.0)
        );
        assert!(get("simulation.levels[L1-I].mpki.total").is_some());
        assert_eq!(c.settings.len(), 1, "{:?}", c.settings);
        assert_eq!(c.settings[0].name, "simulation.config.l1i.size");
        // Settings are not figures.
        assert!(c.rest.iter().all(|r| !r.figure.contains("config")));
    }

    #[test]
    fn a_traced_run_s_differing_option_is_named_and_zeros_on_one_side_are_not_changes() {
        let sim = |engine: &str, component: &str| {
            json!({"child_args": ["run", "micro", "--columns", "long", "--engine", engine,
                                  "--threads", "1", "--txns", "202000", "--no-check",
                                  "--trace-measured"],
                   "simulation": {"instructions_per_txn": 1000.0,
                   "by_component": [{"operation": null, "component": component,
                                     "stall_cycles": 0, "instructions": 0},
                                    {"operation": null, "component": "btree",
                                     "stall_cycles": 10, "instructions": 10}]}})
        };
        let c = arrange(&sim("memory", "record"), &sim("disk", "bpool"));
        let names: Vec<&str> = c.settings.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["run --engine"], "{:?}", c.settings);
        let text = to_text(&c, "s1", "s2", false);
        assert!(text.contains("memory") && text.contains("disk"), "{text}");
        assert!(!text.contains("simulation.by_component"), "{text}");
        assert!(
            c.rest
                .iter()
                .filter(|r| r.figure.contains("[record]") || r.figure.contains("[bpool]"))
                .all(|r| change(r) == 0.0),
            "{:?}",
            c.rest
        );
    }
}
