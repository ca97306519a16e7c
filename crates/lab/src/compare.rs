//! `oltpscope compare A B`: every numeric figure of two reports side by side with the
//! ratio B/A, the way cg_diff sets two profiles against each other. Figures are named by
//! their path in the report; rows of tables (transaction types, cache levels, components,
//! operations, functions) are named by their own name, not their position, so reports
//! with rows in another order or with rows missing still line up.

use serde_json::Value;
use std::collections::BTreeMap;

/// Parts of a report that describe the circumstances, not the result.
const SKIP: &[&str] = &["machine", "started_at_unix_s", "version", "child_args"];

/// Fields that name a row of a table, in the order they are joined.
const ROW_KEYS: &[&str] = &["name", "level", "operation", "component", "function"];

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

fn num(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v == v.trunc() && v.abs() < 1e15 => format!("{}", v as i64),
        Some(v) => format!("{v:.3}"),
    }
}

/// The comparison as a text table (figure, A, B, B/A).
pub fn to_text(rows: &[Row], a_name: &str, b_name: &str) -> String {
    let w = rows
        .iter()
        .map(|r| r.figure.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let cells: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                num(r.a),
                num(r.b),
                r.ratio().map_or("-".into(), |x| format!("{x:.3}")),
            )
        })
        .collect();
    let wa = cells.iter().map(|c| c.0.len()).max().unwrap_or(1).max(1);
    let wb = cells.iter().map(|c| c.1.len()).max().unwrap_or(1).max(1);
    let mut o = format!("A: {a_name}\nB: {b_name}\n\n");
    o += &format!(
        "{:<w$}  {:>wa$}  {:>wb$}  {:>8}\n",
        "figure", "A", "B", "B/A"
    );
    for (r, (a, b, q)) in rows.iter().zip(cells) {
        o += &format!("{:<w$}  {a:>wa$}  {b:>wb$}  {q:>8}\n", r.figure);
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
        let text = to_text(&rows, "a", "b");
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
}
