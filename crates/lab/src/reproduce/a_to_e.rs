//! From A to E: TPC-B against TPC-C on the disk engine.

use super::common::*;
use crate::plot;
use crate::sweep::{self, Kind, Spec};
use serde_json::Value;

pub(super) fn a_to_e(
    ctx: &mut Ctx,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
    figures: &mut Vec<(String, String)>,
) -> Result<(), String> {
    // The figure is instructions per transaction, which the caches' state does not
    // change: a fixed warm-up, not the automatic one (which ran TPC-B 51,100
    // transactions until its MPKI settled, most of the experiment's time).
    let (txns, warm) = match ctx.scale {
        Scale::Tiny => (5, 2),
        Scale::Quick => (300, 100),
        Scale::Full => (3000, 500),
    };
    // The two simulations are independent: they run together, one per core.
    let mut sims = Vec::new();
    for w in ["tpcb", "tpcc"] {
        if ctx.scale == Scale::Tiny && w == "tpcc" {
            // Loading TPC-C under valgrind takes many minutes in a debug build.
            continue;
        }
        let mut sim = RunSpec::new(runspec::Command::Simulate, workload(w));
        sim.options = Options {
            engine: disk(),
            txns: Some(txns),
            warmup_txns: Some(runspec::WarmupTxns::Txns(warm)),
            no_3c: true,
            ..Options::default()
        };
        sims.push((format!("{w}-simulate"), Spec::of(&sim, vec![], 1)));
    }
    let mut ipt: Vec<Option<f64>> = (ctx.sweeps_together(sims)?.iter())
        .map(|s| median(s, &[], "instructions_per_txn"))
        .collect();
    // TPC-C's, not simulated at the tiny scale.
    ipt.resize(2, None);
    tables.push(Table {
        beside: None,
        caption: "Measured instructions per transaction, disk engine (simulated)".into(),
        columns: vec!["TPC-B".into(), "TPC-C".into()],
        rows: vec![Row {
            name: "instructions/txn".into(),
            values: ipt.iter().map(|x| opt(*x, |t| format!("{t:.0}"))).collect(),
        }],
    });
    match (ipt[0], ipt[1]) {
        (Some(b), Some(c)) => v.check(
            "tpcc-more-work",
            c >= 3.0 * b,
            format!(
                "TPC-C {c:.0} instructions per transaction, TPC-B {b:.0} ({}x; agreement needs 3x)",
                f2(c / b)
            ),
        ),
        (Some(_), None) if ctx.scale == Scale::Tiny => v.unmeasured(
            "tpcc-more-work",
            "TPC-C is not simulated at the tiny (test) scale",
        ),
        _ => v.unmeasured(
            "tpcc-more-work",
            "a simulation failed (see the sweeps' summaries)",
        ),
    }
    a_to_e_table4(ctx, v, tables)?;
    a_to_e_profiles(ctx, v, tables, figures)
}

/// Table 4: `run --stats` on the disk engine with one worker thread, as the paper ran
/// Shore-MT, beside the paper's TPC-B and TPC-C columns.
fn a_to_e_table4(ctx: &mut Ctx, v: &mut Verdicts, tables: &mut Vec<Table>) -> Result<(), String> {
    let mut stats: Vec<Option<Value>> = Vec::new();
    for w in ["tpcb", "tpcc", "tpce"] {
        if ctx.scale == Scale::Tiny && w != "tpcb" {
            // Loading TPC-C or TPC-E in a debug build takes most of a test's time.
            stats.push(None);
            continue;
        }
        let id = format!("{w}-stats");
        let mut run = short_run(ctx, Kind::Run, workload(w));
        run.options.engine = disk();
        run.options.stats = true;
        let spec = Spec::of(&run, vec![], 1);
        let s = ctx.sweep(&id, spec)?;
        stats.push(report(&ctx.out.join(&id), &s, &[]).map(|r| r["stats"].clone()));
    }
    let paper = load_paper("a-to-e")?;
    let t4 = paper
        .table
        .iter()
        .find(|t| t.id == "table4")
        .expect("Table 4 is transcribed");
    tables.push(Table {
        beside: Some("table4".into()),
        caption: "Measured: `run --stats`, disk engine, one worker thread (averages per committed transaction)".into(),
        columns: vec!["TPC-B".into(), "TPC-C".into(), "TPC-E".into()],
        rows: t4
            .rows
            .iter()
            .map(|r| Row {
                name: r.name.clone(),
                values: stats
                    .iter()
                    .map(|s| {
                        opt(s.as_ref().and_then(|s| ours(s, &r.name)), |x| {
                            if x >= 100.0 {
                                format!("{x:.0}")
                            } else {
                                format!("{x:.1}")
                            }
                        })
                    })
                    .collect(),
            })
            .collect(),
    });
    a_to_e_table4_verdicts(ctx.scale, &stats, v);
    Ok(())
}

/// Our figure for one of Table 4's rows from a run's `--stats` (sums over the tables for
/// the database's rows, averages per committed transaction for the others).
fn ours(s: &Value, row: &str) -> Option<f64> {
    let sum = |f: &str| {
        s["tables"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t[f].as_f64()).sum::<f64>())
    };
    let per = |f: &str| s["all"]["per_commit"][f].as_f64();
    match row {
        "records (database)" => sum("records"),
        "heap pages (database)" => sum("heap_pages"),
        "index pages (database)" => sum("index_pages"),
        "records accessed" => per("records_accessed"),
        "row-level locks" => per("row_locks"),
        "higher-level locks" => per("higher_locks"),
        "heap pages (unique)" => per("heap_pages_unique"),
        "index pages (unique)" => per("index_pages_unique"),
        "heap pages" => per("heap_pages"),
        "index pages" => per("index_pages"),
        _ => None,
    }
}

/// Table 4's findings from the TPC-B, TPC-C and TPC-E `--stats` (in that order).
fn a_to_e_table4_verdicts(scale: Scale, stats: &[Option<Value>], v: &mut Verdicts) {
    let get = |i: usize, row: &str| stats[i].as_ref().and_then(|s| ours(s, row));
    match (get(0, "records accessed"), get(1, "records accessed")) {
        (Some(b), Some(c)) if b > 0.0 => {
            let more = |row: &str| get(1, row) > get(0, row);
            let locks = more("row-level locks");
            let pages = more("heap pages") && more("index pages");
            v.check(
                "tpcc-more-records",
                c >= 5.0 * b && locks && pages,
                format!(
                    "records per transaction: TPC-C {c:.1}, TPC-B {b:.1} ({}x; agreement needs 5x and more row locks and pages: locks {}, pages {})",
                    f2(c / b),
                    if locks { "more" } else { "not more" },
                    if pages { "more" } else { "not more" }
                ),
            )
        }
        _ if scale == Scale::Tiny => v.unmeasured(
            "tpcc-more-records",
            "TPC-C is not run at the tiny (test) scale",
        ),
        _ => v.unmeasured(
            "tpcc-more-records",
            "a run failed (see the sweeps' summaries)",
        ),
    }
    // TPC-E (default: 1,000 customers, 1 initial trade day of the specification's 300,
    // so its database is far smaller than the paper's; the records it holds grow by
    // about 400,000 per trade day).
    match (get(1, "records accessed"), get(2, "records accessed")) {
        (Some(c), Some(e)) if c > 0.0 => {
            let (dc, de) = (get(1, "records (database)"), get(2, "records (database)"));
            let bigger = matches!((dc, de), (Some(dc), Some(de)) if de >= 10.0 * dc);
            v.check(
                "tpce-complexity",
                e >= 3.0 * c && bigger,
                format!(
                    "records per transaction: TPC-E {e:.1}, TPC-C {c:.1} ({}x; agreement needs 3x); records in the database: TPC-E {}, TPC-C {} (agreement needs 10x; TPC-E reaches it only near the specification's 300 initial trade days, the reproduction loads 1: --trade-days)",
                    f2(e / c),
                    opt(de, |x| format!("{x:.0}")),
                    opt(dc, |x| format!("{x:.0}")),
                ),
            )
        }
        _ if scale == Scale::Tiny => v.unmeasured(
            "tpce-complexity",
            "TPC-C and TPC-E are not run at the tiny (test) scale",
        ),
        _ => v.unmeasured(
            "tpce-complexity",
            "a run failed (see the sweeps' summaries)",
        ),
    }
}

/// A profile run per column of Figures 1 and 2: the column's name and the point's
/// summary (none when not run at this scale or when every repetition failed).
type ProfileRuns = Vec<(String, Option<sweep::PointSummary>)>;

/// The loads of Figures 1 and 2: worker threads.
const PROFILE_THREADS: [&str; 2] = ["1", "2"];

/// Figures 1 and 2 "as the machine load increases": a profile sweep per workload
/// (`sweep --profile --vary threads=1,2`) on the disk engine. As the paper, the scaling
/// factor is the machine's hardware contexts for every load (2 Branches / Warehouses:
/// this machine has 2 cores, the paper's SPARC 64) and each worker keeps to its own
/// (`--affinity`: requests spread by Branch / Warehouse), log on (async, as the paper
/// flushed its log to RAM). Each sweep is a directory of the reproduction (resumed
/// like any sweep); the verdicts and figures read its summary's medians.
fn a_to_e_profiles(
    ctx: &mut Ctx,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
    figures: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let runs = a_to_e_profile_runs(ctx)?;
    let measured: Vec<&sweep::PointSummary> = runs.iter().filter_map(|(_, r)| r.as_ref()).collect();
    // The components any run saw, in the map's order.
    let names: Vec<String> = measured
        .first()
        .and_then(|p| p.profile.as_ref())
        .map(|f| {
            f.components
                .iter()
                .map(|c| c.name.clone())
                .filter(|n| measured.iter().any(|p| share(p, n) > 0.0))
                .collect()
        })
        .unwrap_or_default();
    a_to_e_profile_tables(&runs, &names, tables);
    if measured.is_empty() {
        for id in [
            "components-tpcb-tpcc",
            "lock-work-not-contention",
            "lock-btree-as-load-grows",
        ] {
            v.unmeasured(
                id,
                "every profile run failed (see the profile sweeps' summaries)",
            );
        }
        return Ok(());
    }
    a_to_e_profile_figures(&runs, &measured, &names, figures)?;
    a_to_e_profile_verdicts(&runs, &names, v);
    Ok(())
}

/// Figures 1 and 2's measurement: a profile sweep per workload, one column per
/// workload and thread count (TPC-C's left unrun at the tiny scale).
fn a_to_e_profile_runs(ctx: &mut Ctx) -> Result<ProfileRuns, String> {
    const THREADS: [&str; 2] = PROFILE_THREADS;
    let mut runs: ProfileRuns = Vec::new();
    for wl in ["tpcb", "tpcc"] {
        let name = if wl == "tpcb" { "TPC-B" } else { "TPC-C" };
        let col = |t: &str| format!("{name} {t}t");
        if ctx.scale == Scale::Tiny && wl == "tpcc" {
            runs.extend(THREADS.iter().map(|t| (col(t), None)));
            continue;
        }
        // One home branch or warehouse per worker of the most threads.
        let per_worker: u32 = THREADS[THREADS.len() - 1].parse().expect("a thread count");
        let homes = if wl == "tpcb" {
            Workload::Tpcb(runspec::Tpcb {
                scale: Some(per_worker.into()),
                affinity: true,
                ..Default::default()
            })
        } else {
            Workload::Tpcc(runspec::Tpcc {
                warehouses: Some(per_worker),
                affinity: true,
                ..Default::default()
            })
        };
        let mut run = short_run(ctx, Kind::Profile, homes);
        // The thread count is the sweep's.
        run.options.threads = None;
        run.options.engine = disk();
        run.options.log = Some(runspec::LogMode::Async);
        let vary = vec![sweep::Vary {
            key: "threads".into(),
            values: THREADS.iter().map(|t| t.to_string()).collect(),
        }];
        let spec = Spec::of(&run, vary, ctx.repeat_for_margin());
        let s = ctx.sweep(&format!("{wl}-profile"), spec)?;
        for t in THREADS {
            let p = s
                .points
                .iter()
                .find(|p| p.values.iter().any(|(k, x)| k == "threads" && x == t))
                .filter(|p| p.reps_done > 0)
                .cloned();
            runs.push((col(t), p));
        }
    }
    Ok(runs)
}

/// A profile point's figure `f`, median over its repetitions.
fn fig(p: &sweep::PointSummary, f: &str) -> Option<f64> {
    sweep::figure(p, f).map(|t| t.median)
}

/// A component's share of a profile point's samples (0 when it saw none).
fn share(p: &sweep::PointSummary, name: &str) -> f64 {
    fig(p, &format!("component_{name}_share")).unwrap_or(0.0)
}

/// A part of the lock split (`sweep::LOCK_SPLIT`'s keys) as a share of the workers' time.
fn split(r: &sweep::PointSummary, k: &str) -> Option<f64> {
    fig(r, &format!("lock_split_{k}_share"))
}

/// A share as a percentage (as Figures 1 and 2 always printed it: -0.0 stays "-0.0%").
fn share_pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Figures 1 and 2 as tables: share by component, then the lock split.
fn a_to_e_profile_tables(runs: &ProfileRuns, names: &[String], tables: &mut Vec<Table>) {
    let columns: Vec<String> = runs.iter().map(|(c, _)| c.clone()).collect();
    let mut rows: Vec<Row> = names
        .iter()
        .map(|n| Row {
            name: n.clone(),
            values: runs
                .iter()
                .map(|(_, r)| r.as_ref().map_or("-".into(), |r| share_pct(share(r, n))))
                .collect(),
        })
        .collect();
    rows.push(Row {
        name: "profiler's own reading time".into(),
        values: runs
            .iter()
            .map(|(_, r)| opt(r.as_ref().and_then(|r| fig(r, "read_overhead")), share_pct))
            .collect(),
    });
    tables.push(Table {
        beside: None,
        caption: "Measured: sampled time by storage-manager component as load increases, disk engine, 1 and 2 threads on 2 Branches / Warehouses (A-to-E Figure 1; `sweep --profile --vary threads=1,2`, medians)".into(),
        columns: columns.clone(),
        rows,
    });
    tables.push(Table {
        beside: None,
        caption: "Measured: lock manager time as shares of the workers' time as load increases (A-to-E Figure 2)"
            .into(),
        columns: columns.clone(),
        rows: sweep::LOCK_SPLIT
            .iter()
            .map(|(k, label)| Row {
                name: label.to_string(),
                values: runs
                    .iter()
                    .map(|(_, r)| opt(r.as_ref().and_then(|r| split(r, k)), share_pct))
                    .collect(),
            })
            .collect(),
    });
}

/// Figures 1 and 2 drawn: one bar per workload and thread count, as the paper's.
fn a_to_e_profile_figures(
    runs: &ProfileRuns,
    measured: &[&sweep::PointSummary],
    names: &[String],
    figures: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let cats: Vec<String> = runs
        .iter()
        .filter(|(_, r)| r.is_some())
        .map(|(c, _)| c.clone())
        .collect();
    let comp_series: Vec<(String, Vec<f64>)> = names
        .iter()
        .map(|n| {
            (
                n.clone(),
                measured.iter().map(|p| 100.0 * share(p, n)).collect(),
            )
        })
        .collect();
    figures.push((
        "Sampled time by storage-manager component as load increases (disk engine; A-to-E Figure 1)".into(),
        plot::stacked_bars(
            "Time by component, 1 and 2 threads",
            "% of CPU samples",
            &cats,
            &comp_series,
        )?,
    ));
    let split_series: Vec<(String, Vec<f64>)> = sweep::LOCK_SPLIT
        .iter()
        .map(|(k, label)| {
            (
                label.to_string(),
                measured
                    .iter()
                    .map(|p| 100.0 * split(p, k).unwrap_or(0.0))
                    .collect(),
            )
        })
        .collect();
    figures.push((
        "Lock manager time as load increases: Lock, Lock-PC, Lock-LC (A-to-E Figure 2)".into(),
        plot::stacked_bars(
            "Lock manager time, 1 and 2 threads",
            "% of workers' time",
            &cats,
            &split_series,
        )?,
    ));
    Ok(())
}

/// Figures 1 and 2's findings, judged from at least one measured run.
fn a_to_e_profile_verdicts(runs: &ProfileRuns, names: &[String], v: &mut Verdicts) {
    let big = ["lock", "log", "btree", "bpool"];
    let small = ["catalog", "xct", "latch"];
    let mut lead = true;
    let mut why = Vec::new();
    for (c, r) in runs.iter().filter_map(|(c, r)| Some((c, r.as_ref()?))) {
        let b: f64 = big.iter().map(|n| share(r, n)).sum();
        let s: f64 = small.iter().map(|n| share(r, n)).sum();
        lead &= b > 2.0 * s;
        why.push(format!(
            "{c}: lock+log+btree+bpool {}, catalog+xct+latch {}",
            share_pct(b),
            share_pct(s)
        ));
    }
    v.check(
        "components-tpcb-tpcc",
        lead,
        format!("{} (agreement needs twice as much)", why.join("; ")),
    );
    match lock_work_verdict(runs) {
        Some((st, why)) => v.set("lock-work-not-contention", st, why),
        None => v.unmeasured("lock-work-not-contention", "no profile gave a lock split"),
    }
    match load_growth_verdict(runs, names, PROFILE_THREADS.len()) {
        Some((st, why)) => v.set("lock-btree-as-load-grows", st, why),
        None => v.unmeasured(
            "lock-btree-as-load-grows",
            "no workload was profiled at both loads",
        ),
    }
}

/// A profile point's figure over its repetitions.
fn spread_of(r: &sweep::PointSummary, f: &str) -> Option<sweep::Spread> {
    sweep::figure(r, f)
}

fn points(m: &Margin) -> String {
    m.describe(|x| format!("{:.1} points", 100.0 * x))
}

/// A-to-E's Figure 2 from the profile points (column, summary): at every point the
/// locking work (Lock) above the contention (Lock-PC + Lock-LC), a difference of a few
/// points judged by its margin against the repetitions' spread. None: no lock split.
fn lock_work_verdict(runs: &[(String, Option<sweep::PointSummary>)]) -> Option<(Status, String)> {
    let mut parts = Vec::new();
    let mut why = Vec::new();
    for (c, r) in runs.iter().filter_map(|(c, r)| Some((c, r.as_ref()?))) {
        let (Some(l), Some(pc), Some(lc)) = (
            spread_of(r, "lock_split_lock_share"),
            spread_of(r, "lock_split_lock_pc_share"),
            spread_of(r, "lock_split_lock_lc_share"),
        ) else {
            continue;
        };
        let m = Margin::of_terms(&[l], &[pc, lc]).expect("terms");
        parts.push(m.status());
        why.push(format!(
            "{c}: Lock {}, Lock-PC {}, Lock-LC {} ({}: {})",
            pct(l.median),
            pct(pc.median),
            pct(lc.median),
            points(&m),
            m.status().as_str()
        ));
    }
    (!why.is_empty()).then(|| {
        (
            combine(&parts),
            format!(
                "{} (agreement needs Lock above Lock-PC + Lock-LC at every point by more than the spread of the repetitions)",
                why.join("; ")
            ),
        )
    })
}

/// A-to-E's Figure 1 as load grows, per workload (`per_workload` consecutive points of
/// `runs`, lowest load first): lock and btree among the three largest components at
/// the lowest and highest load, their share larger at the highest and log's smaller,
/// each growth or fall by more than its spread over the repetitions. `names`: the
/// components seen. None: no workload profiled at both loads.
fn load_growth_verdict(
    runs: &[(String, Option<sweep::PointSummary>)],
    names: &[String],
    per_workload: usize,
) -> Option<(Status, String)> {
    // A component without samples at a point has no figure there: its share is 0.
    let comp = |p: &sweep::PointSummary, n: &str| {
        spread_of(p, &format!("component_{n}_share")).unwrap_or(sweep::Spread {
            median: 0.0,
            min: 0.0,
            max: 0.0,
            n: p.reps_done as usize,
        })
    };
    let share = |p: &sweep::PointSummary, n: &str| comp(p, n).median;
    let mut parts = Vec::new();
    let mut why = Vec::new();
    for pair in runs.chunks(per_workload) {
        let (Some(lo), Some(hi)) = (&pair[0].1, &pair[pair.len() - 1].1) else {
            continue;
        };
        let lb = |p: &sweep::PointSummary| share(p, "lock") + share(p, "btree");
        // Their rank: how many other components take more than the smaller of the two.
        let outranked = |p: &sweep::PointSummary| {
            let least = share(p, "lock").min(share(p, "btree"));
            names
                .iter()
                .filter(|n| *n != "lock" && *n != "btree" && share(p, n) > least)
                .count()
        };
        let large = outranked(lo) <= 1 && outranked(hi) <= 1;
        let grows = Margin::of_terms(
            &[comp(hi, "lock"), comp(hi, "btree")],
            &[comp(lo, "lock"), comp(lo, "btree")],
        )
        .expect("terms");
        let log_falls = Margin::of_terms(&[comp(lo, "log")], &[comp(hi, "log")]).expect("terms");
        parts.extend([holds(large), grows.status(), log_falls.status()]);
        why.push(format!(
            "{} -> {}: lock+btree {} -> {} (grows: {}, {}), log {} -> {} (falls: {}, {}){}",
            pair[0].0,
            pair[pair.len() - 1].0,
            pct(lb(lo)),
            pct(lb(hi)),
            grows.status().as_str(),
            points(&grows),
            pct(share(lo, "log")),
            pct(share(hi, "log")),
            log_falls.status().as_str(),
            points(&log_falls),
            if large {
                String::new()
            } else {
                "; lock and btree not both among the three largest components".into()
            }
        ));
    }
    (!why.is_empty()).then(|| {
        (
            combine(&parts),
            format!(
                "{} (agreement needs lock and btree among the three largest components at every load, their share larger at 2 threads than at 1 and log's smaller, each by more than the spread of the repetitions)",
                why.join("; ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A profile sweep's point as its summary.json records it: components' shares and
    /// the lock split, each (median, min, max) over 3 repetitions.
    fn profile_point(
        threads: &str,
        comps: &[(&str, [f64; 3])],
        split: [[f64; 3]; 3],
    ) -> sweep::PointSummary {
        let spread =
            |x: [f64; 3]| serde_json::json!({"median": x[0], "min": x[1], "max": x[2], "n": 3});
        let j = serde_json::json!({
            "name": format!("threads-{threads}"),
            "values": [["threads", threads]],
            "reps_done": 3, "reps_failed": 0, "error": null,
            "throughput_tps": null, "abort_rate": null, "latency_p99_us": null,
            "profile": {
                "samples": null, "read_overhead": null, "txn_types": [],
                "components": comps.iter().map(|(n, x)| serde_json::json!({"name": n, "share": spread(*x)})).collect::<Vec<_>>(),
                "lock_split": {"lock": spread(split[0]), "lock_pc": spread(split[1]), "lock_lc": spread(split[2])},
            }
        });
        serde_json::from_value(j).expect("a recorded point parses")
    }

    #[test]
    fn a_to_e_lock_verdicts_agree_disagree_and_stay_within_noise() {
        let comps = |lock: f64, btree: f64, log: f64, w: f64| {
            vec![
                ("lock", [lock, lock - w, lock + w]),
                ("btree", [btree, btree - w, btree + w]),
                ("log", [log, log - w, log + w]),
                ("bpool", [0.10, 0.09, 0.11]),
                ("xct", [0.02, 0.02, 0.02]),
            ]
        };
        let work = [[0.20, 0.19, 0.21], [0.02, 0.01, 0.03], [0.01, 0.0, 0.02]];
        let contention = [
            [0.05, 0.045, 0.055],
            [0.10, 0.095, 0.105],
            [0.08, 0.075, 0.085],
        ];
        let close = [[0.10, 0.06, 0.14], [0.05, 0.03, 0.07], [0.03, 0.02, 0.04]];
        let runs = |a: [[f64; 3]; 3], b: [[f64; 3]; 3], lo: Vec<_>, hi: Vec<_>| {
            vec![
                ("TPC-B 1t".to_string(), Some(profile_point("1", &lo, a))),
                ("TPC-B 2t".to_string(), Some(profile_point("2", &hi, b))),
            ]
        };
        let names: Vec<String> = ["lock", "btree", "log", "bpool", "xct"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // Lock work 20% against 3% of contention, both loads: agrees. Lock + btree
        // 40% -> 55% against a spread of 8 points (four shares, 2 points each), log
        // 10% -> 5% against 4: the load findings agree too.
        let r = runs(
            work,
            work,
            comps(0.2, 0.2, 0.1, 0.01),
            comps(0.30, 0.25, 0.05, 0.01),
        );
        let (st, why) = lock_work_verdict(&r).unwrap();
        assert_eq!(st, Status::Agrees, "{why}");
        assert!(
            why.contains("Lock 20.0%") && why.contains("spread"),
            "{why}"
        );
        let (st, why) = load_growth_verdict(&r, &names, 2).unwrap();
        assert_eq!(st, Status::Agrees, "{why}");
        // Contention above the work at 2 threads, beyond the spread: disagrees.
        let r = runs(
            work,
            contention,
            comps(0.2, 0.2, 0.1, 0.01),
            comps(0.25, 0.22, 0.05, 0.01),
        );
        assert_eq!(lock_work_verdict(&r).unwrap().0, Status::Disagrees);
        // 10% against 8% with repetitions moving them by 14 points: within noise.
        let r = runs(
            work,
            close,
            comps(0.2, 0.2, 0.1, 0.01),
            comps(0.25, 0.22, 0.05, 0.01),
        );
        assert_eq!(lock_work_verdict(&r).unwrap().0, Status::WithinNoise);
        // Lock + btree 40% -> 41% with 2-point ranges: growth within noise.
        let r = runs(
            work,
            work,
            comps(0.2, 0.2, 0.1, 0.01),
            comps(0.205, 0.205, 0.05, 0.01),
        );
        let (st, why) = load_growth_verdict(&r, &names, 2).unwrap();
        assert_eq!(st, Status::WithinNoise, "{why}");
        // It shrinks clearly (and log grows): disagrees.
        let r = runs(
            work,
            work,
            comps(0.2, 0.2, 0.05, 0.01),
            comps(0.1, 0.1, 0.2, 0.01),
        );
        assert_eq!(
            load_growth_verdict(&r, &names, 2).unwrap().0,
            Status::Disagrees
        );
        // No point profiled: no verdict (the caller says not measured).
        let none = vec![
            ("TPC-B 1t".to_string(), None),
            ("TPC-B 2t".to_string(), None),
        ];
        assert!(lock_work_verdict(&none).is_none());
        assert!(load_growth_verdict(&none, &names, 2).is_none());
    }
}
