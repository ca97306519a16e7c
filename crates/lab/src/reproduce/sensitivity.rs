//! Sensitivity: cores, write bandwidth (cgroups), LLC (simulator).

use super::common::*;
use crate::sweep::{self, Kind, Spec, Summary};

/// A short `run` of `workload` on the disk engine with `threads` threads.
fn disk_run(ctx: &Ctx, workload: Workload, threads: u32) -> RunSpec {
    let mut run = short_run(ctx, Kind::Run, workload);
    run.options.engine = disk();
    run.options.threads = Some(threads);
    run
}

/// Load `workload` into `db` once (unthrottled), so that throttled points run on it.
/// A load that finished leaves `<db>.loaded`; without it the directory is loaded anew.
fn preload(ctx: &mut Ctx, load: RunSpec, db: &std::path::Path) -> Result<(), String> {
    let workload = load.workload.name();
    let done = db.with_extension("loaded");
    if done.exists() && db.exists() {
        return Ok(());
    }
    (ctx.say)(&format!(
        "  loading {workload} into {} (once, unthrottled)\n",
        db.display()
    ));
    let mut load = load;
    load.options.db = Some(db.to_path_buf());
    load.options.reload = true;
    // A load is not measured: beside the simulations, stopped by a measured window.
    let mut cmd = std::process::Command::new(&ctx.exe);
    cmd.args(load.to_args());
    if let Err(why) = crate::lanes::stoppable_run(cmd)
        .map_err(|e| format!("cannot start {}: {e}", ctx.exe.display()))?
    {
        return Err(format!(
            "loading {workload} into {} failed: {why}",
            db.display()
        ));
    }
    std::fs::write(&done, b"").map_err(|e| format!("cannot write {}: {e}", done.display()))
}

/// The write-bandwidth curve's bandwidths.
fn write_bws(scale: Scale) -> &'static [&'static str] {
    // Quick: from 1MB/s. A point's time is mostly the fsyncs of its run's checkpoints
    // (the engine's open and close write about 15 MB through the throttle; 170-380 MB
    // in all, most of it left to writeback; the sweep lifts the throttle once the
    // measured window ends, so the close now runs unthrottled): the 256KB point took
    // 67 s of the curve's
    // 114 s (2026-11-30), for a drop the 1MB point already shows (101 txn/s against
    // 2,864 at 64MB; 24 at 256KB).
    match scale {
        Scale::Tiny => &["256KB", "64MB"],
        Scale::Quick => &["1MB", "4MB", "64MB"],
        Scale::Full => &["256KB", "512KB", "1MB", "2MB", "4MB", "16MB", "64MB"],
    }
}

/// The sensitivity paper's write-bandwidth curve (blkio / io.max on the database's
/// device): its sweep of `run` ([`write_bw_workload`]'s).
fn write_bw_spec(ctx: &Ctx, run: &RunSpec) -> Result<Spec, String> {
    Ok(Spec::of(
        run,
        vec![sweep::parse_vary(&format!(
            "write-bw={}",
            write_bws(ctx.scale).join(",")
        ))?],
        ctx.repeat(),
    ))
}

/// The write-bandwidth curve's run and its table's caption; an error when TPC-C's
/// preload failed (the finding is then not measured).
fn write_bw_workload(ctx: &mut Ctx) -> Result<(RunSpec, &'static str), String> {
    // The throttle holds for the whole run, its load too: TPC-C (the paper's workload)
    // is loaded once, unthrottled, into a database every point then runs on (`--db
    // --no-load`; each point's run adds its New-Orders to it). At the test scale a small
    // micro-benchmark table instead (a TPC-C load takes tens of seconds in a debug build).
    let w = if ctx.scale == Scale::Tiny {
        let updates = Workload::Micro(runspec::Micro {
            keys: Some(10_000),
            rows: Some(10),
            mode: Some(runspec::MicroMode::Update),
            ..Default::default()
        });
        let mut run = disk_run(ctx, updates, 1);
        run.options.log = Some(runspec::LogMode::Sync);
        (
            run,
            "Measured micro-benchmark update transactions (10 rows of 10,000, disk engine, --log sync, 1 thread) throughput by write bandwidth (bytes/s)",
        )
    } else {
        let db = ctx.out.join("write-bw-db");
        let one_warehouse = Workload::Tpcc(runspec::Tpcc {
            warehouses: Some(1),
            ..Default::default()
        });
        let mut load = RunSpec::new(runspec::Command::Load, one_warehouse.clone());
        load.options.engine = disk();
        preload(ctx, load, &db)?;
        let mut run = disk_run(ctx, one_warehouse, 1);
        run.options.log = Some(runspec::LogMode::Sync);
        run.options.db = Some(db);
        run.options.no_load = true;
        (
            run,
            "Measured TPC-C (1 warehouse loaded once, disk engine, --log sync, 1 thread) throughput by write bandwidth (bytes/s)",
        )
    };
    Ok(w)
}

/// The write-bandwidth sweep's table (throughput per bandwidth, the curve's 90/95% and
/// knee) and its verdict: throughput at the least bandwidth below 90% of the most's.
fn write_bw_judge(
    s: &sweep::Summary,
    bws: &[&str],
    caption: &str,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
) {
    let vals: Vec<Option<f64>> = bws
        .iter()
        .map(|b| median(s, &[("write-bw", b)], "throughput_tps"))
        .collect();
    let curve = s.curves.iter().find(|c| c.over == "write-bw");
    let mut row2 = vec![];
    if let Some(a) = curve.and_then(|c| c.analysis.as_ref()) {
        let lab = |x: f64| crate::plot::fmt_size(x);
        row2.push(Row {
            name: "90% / 95% of best from; knee".into(),
            values: {
                let mut r = vec!["-".to_string(); bws.len()];
                r[0] = format!(
                    "{} / {}; knee {}",
                    lab(a.x_90),
                    lab(a.x_95),
                    a.knee_x.map_or("none".into(), lab)
                );
                r
            },
        });
    }
    let mut rows = vec![Row {
        name: "txn/s".into(),
        values: vals
            .iter()
            .map(|x| opt(*x, |t| format!("{t:.0}")))
            .collect(),
    }];
    rows.extend(row2);
    tables.push(Table {
        beside: Some("write-bw".into()),
        caption: caption.into(),
        columns: bws.iter().map(|b| format!("{b}/s")).collect(),
        rows,
    });
    match (vals[0], vals[vals.len() - 1]) {
        (Some(lo), Some(hi)) => v.check(
            "write-bw-bites",
            lo < 0.9 * hi,
            format!(
                "{lo:.0} txn/s at {}/s, {hi:.0} at {}/s (a drop of {})",
                bws[0],
                bws[bws.len() - 1],
                pct(1.0 - lo / hi)
            ),
        ),
        _ => v.unmeasured(
            "write-bw-bites",
            "a bandwidth point failed (see the sweep's summary)",
        ),
    }
}

/// The sensitivity paper's curves: cores, write bandwidth, LLC size.
pub(super) fn sensitivity(
    ctx: &mut Ctx,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
) -> Result<(), String> {
    // Every sweep at once (issue 41): the LLC simulations (lane work, asked for first:
    // under `reproduce all` they fill both cores beside the other papers' simulations)
    // and the measured curves, whose windows stop them. One after the other, the
    // measured curves ran last, alone on the machine for 42 s of `--quick`'s 315 with
    // the other core idle (2026-11-30). The write-bandwidth curve's database is loaded
    // first (a few seconds, unthrottled). The tables keep the paper's order.
    let wb = write_bw_workload(ctx);
    let llc = llc_plan(ctx)?;
    let mut list = llc.sweeps.clone();
    let cores = cores_spec(ctx)?;
    let cores_name = format!("{} {}", cores.workload, cores.args.join(" "));
    list.push(("cores".into(), cores));
    let analytics = analytics_specs(ctx)?;
    if let Some(a) = &analytics {
        list.push(("cores-tpch".into(), a.tpch.clone()));
        list.push(("cores-htap".into(), a.htap.clone()));
    }
    if let Ok((run, _)) = &wb {
        list.push(("write-bw".into(), write_bw_spec(ctx, run)?));
    }
    let ids: Vec<String> = list.iter().map(|(id, _)| id.clone()).collect();
    let copied: Vec<Spec> = (list.iter())
        .filter(|(_, s)| s.load_once.is_some())
        .map(|(_, s)| s.clone())
        .collect();
    let mut done: Vec<(String, Result<Summary, String>)> =
        ids.into_iter().zip(ctx.sweeps_each(list)).collect();
    // The cores curves' loaded shapes are not needed again (a resumed run loads one
    // again only for a repetition still to run); a failed run's copy stays beside them.
    sweep::remove_shared(&copied.iter().collect::<Vec<_>>())?;
    let mut take = |id: &str| {
        let i = done
            .iter()
            .position(|(d, _)| d == id)
            .expect("a sweep asked for");
        done.remove(i).1
    };
    cores_judge(&cores_name, take("cores"), v, tables);
    match &analytics {
        Some(a) => {
            tpch_cores_judge(ctx, a.sf, take("cores-tpch"), v, tables);
            htap_cores_judge(take("cores-htap"), v, tables);
        }
        None => {
            let why = "not at the test scale (only the cores curve of TPC-B runs there)";
            v.unmeasured("tpch-cores-scale", why);
            v.unmeasured("htap-cores-benefit", why);
        }
    }
    match wb {
        Ok((_, caption)) => match take("write-bw") {
            Ok(s) => write_bw_judge(&s, write_bws(ctx.scale), caption, v, tables),
            Err(e) => v.unmeasured("write-bw-bites", &e),
        },
        Err(e) => v.unmeasured("write-bw-bites", &e),
    }
    let swept: Vec<Result<Summary, String>> = llc.sweeps.iter().map(|(id, _)| take(id)).collect();
    llc_judge(ctx, &llc, swept, v, tables);
    Ok(())
}

/// `spec`, a cores curve on the disk engine (its points differ in cores alone: one data
/// shape), loading `load` once into `OUT/<root>/` and running each repetition on a fresh
/// copy of it (`sweep::LoadOnce::copy`, issue 41): its runs add rows (New-Orders, TPC-B's
/// history), so none may run on another's data. Used by TPC-C's (TPC-B's at `--tiny`)
/// and CH-benCHmark's curves, whose A/B showed the figures unmoved (session 70).
fn copied_per_run(ctx: &Ctx, mut spec: Spec, load: Workload, root: &str) -> Spec {
    let mut l = RunSpec::new(runspec::Command::Load, load);
    l.options.engine = disk();
    spec.load_once = Some(sweep::LoadOnce {
        keys: vec![],
        args: l.option_args(),
        root: ctx.out.join(root),
        only: None,
        copy: true,
    });
    spec
}

/// The sensitivity paper's cores curve (cpusets), two threads.
fn cores_spec(ctx: &Ctx) -> Result<Spec, String> {
    // At the tiny (test) scale TPC-B: a TPC-C load takes tens of seconds in a debug build.
    let (w, repeat) = if ctx.scale == Scale::Tiny {
        let tpcb = Workload::Tpcb(runspec::Tpcb {
            scale: Some(2),
            ..Default::default()
        });
        (tpcb, 1)
    } else {
        let tpcc = Workload::Tpcc(runspec::Tpcc {
            warehouses: Some(2),
            ..Default::default()
        });
        (tpcc, ctx.repeat())
    };
    let spec = Spec::of(
        &disk_run(ctx, w.clone(), 2),
        vec![sweep::parse_vary("cores=1,2")?],
        repeat,
    );
    Ok(copied_per_run(ctx, spec, w, "cores-db"))
}

/// The cores curve's table and verdict (`spec_name`: its workload and arguments).
fn cores_judge(
    spec_name: &str,
    swept: Result<Summary, String>,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
) {
    match swept {
        Ok(s) => {
            let t = |c: &str| median(&s, &[("cores", c)], "throughput_tps");
            match (t("1"), t("2")) {
                (Some(a), Some(b)) => {
                    v.check(
                        "cores-scale",
                        b >= 1.3 * a,
                        format!("{a:.0} txn/s on 1 core, {b:.0} on 2 ({}x; agreement needs 1.3x; the machine is shared)", f2(b / a)),
                    );
                    tables.push(Table {
                        beside: None,
                        caption: format!("Measured {spec_name}: throughput by cores"),
                        columns: vec!["1 core".into(), "2 cores".into()],
                        rows: vec![Row {
                            name: "txn/s".into(),
                            values: vec![format!("{a:.0}"), format!("{b:.0}")],
                        }],
                    });
                }
                _ => v.unmeasured(
                    "cores-scale",
                    "a cores point failed (see the sweep's summary)",
                ),
            }
        }
        Err(e) => v.unmeasured("cores-scale", &e),
    }
}

/// The sweeps of the sensitivity paper's Figure 2 (a, g) for its analytical and hybrid
/// workloads at this machine's scale: TPC-H with three query streams (as the paper runs
/// it) and CH-benCHmark (one TPC-C worker beside one analytical stream) on 1 and 2
/// cores, disk engine. None at the test scale (only the cores curve of TPC-B runs there: `cores_spec`).
struct AnalyticsCores {
    sf: f64,
    tpch: Spec,
    htap: Spec,
}

fn analytics_specs(ctx: &Ctx) -> Result<Option<AnalyticsCores>, String> {
    if ctx.scale == Scale::Tiny {
        return Ok(None);
    }
    let sf = if ctx.scale == Scale::Full { 0.1 } else { 0.01 };
    let tpch = Workload::Tpch(runspec::Tpch {
        scale_factor: Some(sf),
        streams: Some("3".into()),
        ..Default::default()
    });
    // TPC-H runs its power test then its throughput test: a fixed amount of work, not
    // a duration.
    let mut h = disk_run(ctx, tpch, 1);
    (h.options.duration, h.options.warmup) = (None, None);
    let ch = Workload::Chbench(runspec::Chbench {
        analytic_streams: Some(1),
        ..Default::default()
    });
    let vary = || sweep::parse_vary("cores=1,2");
    // CH-benCHmark's load: the data's options alone (the streams are the runs'). TPC-H
    // still loads per repetition: its A/B of a fresh load against a copy (3 rounds,
    // SF 0.1, session 70) did not show its figures unmoved (the throughput test's Ts
    // medians 1.13x and 0.85x of a fresh run's on 1 and 2 cores, each point's runs
    // 10-24 s), and its load is 2.7 s.
    let ch_data = Workload::Chbench(Default::default());
    Ok(Some(AnalyticsCores {
        sf,
        tpch: Spec::of(&h, vec![vary()?], ctx.repeat()),
        htap: copied_per_run(
            ctx,
            Spec::of(&disk_run(ctx, ch, 1), vec![vary()?], ctx.repeat()),
            ch_data,
            "cores-htap-db",
        ),
    }))
}

/// A figure's medians on 1 and 2 cores.
fn at_cores(s: &sweep::Summary, fig: &str) -> (Option<f64>, Option<f64>) {
    (
        median(s, &[("cores", "1")], fig),
        median(s, &[("cores", "2")], fig),
    )
}

/// A table row of a figure on 1 and 2 cores.
fn cores_row(name: &str, (a, b): (Option<f64>, Option<f64>)) -> Row {
    Row {
        name: name.into(),
        values: [a, b]
            .iter()
            .map(|x| opt(*x, |t| format!("{t:.0}")))
            .collect(),
    }
}

fn cores_columns() -> Vec<String> {
    vec!["1 core".to_string(), "2 cores".to_string()]
}

/// TPC-H's cores curve: its table and verdict.
fn tpch_cores_judge(
    ctx: &Ctx,
    sf: f64,
    swept: Result<Summary, String>,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
) {
    match swept {
        Ok(s) => {
            let q = at_cores(&s, "throughput_tps");
            let dir = ctx.out.join("cores-tpch");
            let ts = |c: &str| {
                report(&dir, &s, &[("cores", c)])
                    .as_ref()
                    .and_then(throughput_ts)
            };
            let (t1, t2) = (ts("1"), ts("2"));
            tables.push(Table {
                beside: None,
                caption: format!("Measured TPC-H (SF {sf}, the power test then 3 query streams, disk engine) by cores: queries and refresh functions per second over both tests, and the throughput test's Ts"),
                columns: cores_columns(),
                rows: vec![
                    cores_row("queries/s", q),
                    Row {
                        name: "throughput test Ts (s)".into(),
                        values: [t1, t2].iter().map(|x| opt(*x, |t| format!("{t:.3}"))).collect(),
                    },
                ],
            });
            // Judged on the throughput test, the paper's three concurrent streams (the
            // power test before it runs one stream, on one core either way).
            match (t1, t2) {
                (Some(a), Some(b)) if b > 0.0 => v.check(
                    "tpch-cores-scale",
                    a >= 1.3 * b,
                    format!("the throughput test (3 streams) took {a:.3} s on 1 core, {b:.3} s on 2 ({}x faster; agreement needs 1.3x)", f2(a / b)),
                ),
                _ => v.unmeasured("tpch-cores-scale", "a cores point failed or its report has no throughput test's Ts (see the sweep's summary)"),
            }
        }
        Err(e) => v.unmeasured("tpch-cores-scale", &e),
    }
}

/// CH-benCHmark's cores curve: its table and verdict.
fn htap_cores_judge(swept: Result<Summary, String>, v: &mut Verdicts, tables: &mut Vec<Table>) {
    match swept {
        Ok(s) => {
            let (t, q) = (
                at_cores(&s, "throughput_tps"),
                at_cores(&s, "queries_per_hour"),
            );
            tables.push(Table {
                beside: None,
                caption: "Measured CH-benCHmark (1 warehouse, 1 TPC-C worker beside 1 analytical stream, disk engine) by cores".into(),
                columns: cores_columns(),
                rows: vec![cores_row("TPC-C txn/s", t), cores_row("queries/h", q)],
            });
            match (t, q) {
                ((Some(t1), Some(t2)), (Some(q1), Some(q2))) => v.check(
                    "htap-cores-benefit",
                    t2 > t1 && q2 > q1,
                    format!("TPC-C {t1:.0} -> {t2:.0} txn/s ({}x), queries {q1:.0} -> {q2:.0} per hour ({}x) from 1 to 2 cores (agreement needs both to gain)", f2(t2 / t1), f2(q2 / q1)),
                ),
                _ => v.unmeasured("htap-cores-benefit", "a cores point failed or counted no query (see the sweep's summary)"),
            }
        }
        Err(e) => v.unmeasured("htap-cores-benefit", &e),
    }
}

/// A TPC-H report's throughput-test time Ts, in seconds, from its note ("throughput
/// test: ... Ts 1.234 s ...", `workloads::tpch::power`'s).
fn throughput_ts(report: &serde_json::Value) -> Option<f64> {
    report["notes"]
        .as_array()?
        .iter()
        .filter_map(serde_json::Value::as_str)
        .find(|n| n.starts_with("throughput test:"))?
        .split_once(" Ts ")?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The sensitivity paper's LLC curves, through the simulator: the sizes and the
/// sweeps (TPC-C's, and beside it above the test scale the hybrid's and TPC-H's).
struct LlcPlan {
    llcs: &'static [&'static str],
    sweeps: Vec<(String, Spec)>,
}

fn llc_plan(ctx: &Ctx) -> Result<LlcPlan, String> {
    // A fixed count, not `--until-settled`: at full scale the middle sizes' MPKI never
    // settle within 2,000 transactions (docs/PERFORMANCE.md, session 66).
    // Quick: three sizes (the verdict needs the smallest within 90% of the best, to
    // compare with a third of 20MB). Both scales use a fixed warm-up: the automatic one
    // made these valgrind runs take 1-7 minutes each, and eight of them most of the
    // hour. 3,000 TPC-C transactions touch every line of the 20MB model many times over
    // (about 680 M instructions on the disk engine).
    let (llcs, txns, warm): (&'static [&'static str], u64, u64) = match ctx.scale {
        Scale::Tiny => (&["1MB", "20MB"], 5, 5),
        Scale::Quick => (&["1MB", "4MB", "20MB"], 200, 300),
        Scale::Full => (
            &["1MB", "2MB", "4MB", "6MB", "8MB", "12MB", "16MB", "20MB"],
            2000,
            3000,
        ),
    };
    let w = if ctx.scale == Scale::Tiny {
        "tpcb"
    } else {
        "tpcc"
    };
    let counts = Options {
        txns: Some(txns),
        warmup_txns: Some(runspec::WarmupTxns::Txns(warm)),
        ..Options::default()
    };
    let mut list = vec![(
        "llc".to_string(),
        llc_spec(workload(w), counts.clone(), llcs)?,
    )];
    let rows_beside = ctx.scale != Scale::Tiny;
    if rows_beside {
        // The three simulation sweeps are independent: they share the cores, the
        // longest (the hybrid's) first, as slots are served in the order asked for.
        let htap = Options {
            threads: Some(1),
            ..counts
        };
        list.insert(
            0,
            ("llc-htap".into(), llc_spec(htap_workload(), htap, llcs)?),
        );
        list.insert(
            1,
            (
                "llc-tpch".into(),
                llc_spec(tpch_workload(), Options::default(), llcs)?,
            ),
        );
    }
    Ok(LlcPlan { llcs, sweeps: list })
}

/// The LLC curves' tables and verdicts from `swept`, the results of `plan`'s sweeps in
/// its order.
fn llc_judge(
    ctx: &Ctx,
    plan: &LlcPlan,
    swept: Vec<Result<Summary, String>>,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
) {
    let llcs = plan.llcs;
    let rows_beside = plan.sweeps.len() > 1;
    let mut done = (swept.into_iter().zip(&plan.sweeps))
        .map(|(r, (id, _))| r.and_then(|s| LlcCurve::of(&ctx.out.join(id), &s, llcs)));
    let (htap, tpch) = if rows_beside {
        (done.next(), done.next())
    } else {
        (None, None)
    };
    let tpcc = done.next().expect("the TPC-C sweep's result");
    // TPC-C's 90% and 95% points, which the hybrid row is judged against.
    let mut transactional = None;
    match tpcc {
        Ok(s) => {
            let vals = s.stall_row();
            tables.push(Table {
                beside: Some("llc".into()),
                caption: "Measured (simulated) stall cycles per transaction by LLC size, disk engine; performance read as its inverse".into(),
                columns: llcs.iter().map(|s| s.to_string()).collect(),
                rows: vec![
                    Row {
                        name: "stall cycles/txn".into(),
                        values: vals,
                    },
                    Row {
                        name: "stall cycles/1000 instr".into(),
                        values: s.per_kilo_instruction_row(),
                    },
                ],
            });
            transactional = s.per_instruction().map(|a| (a.x_90, a.x_95));
            match s.per_txn().as_ref() {
                Some(a) => {
                    let full = crate::sweep::numeric("llc", llcs[llcs.len() - 1]).expect("a size");
                    v.check(
                        "llc-overprovisioned",
                        a.x_90 <= full / 3.0,
                        format!(
                            "within 90% of the best from {}, 95% from {} of {} (agreement needs at most a third)",
                            crate::plot::fmt_size(a.x_90),
                            crate::plot::fmt_size(a.x_95),
                            crate::plot::fmt_size(full)
                        ),
                    );
                }
                None => v.unmeasured("llc-overprovisioned", "no simulated LLC point completed"),
            }
        }
        Err(e) => v.unmeasured("llc-overprovisioned", &e),
    }
    if let (Some(htap), Some(tpch)) = (htap, tpch) {
        llc_tpch(tpch, llcs, tables);
        llc_htap(htap, llcs, transactional, v, tables);
    } else {
        v.unmeasured(
            "llc-htap-larger",
            "not at the test scale (the hybrid run loads TPC-C under valgrind)",
        );
    }
}

/// Table 4's HTAP row at this machine's scale: CH-benCHmark (1 warehouse, one TPC-C
/// worker beside one analytical stream, disk engine: `simulate chbench`) on the same
/// LLC sizes, warm-up and measured transactions (TPC-C's and the queries' together)
/// as TPC-C's curve, with its 90% and 95% points, judged against TPC-C's
/// (`transactional`): the paper's hybrid rows need 10-16MB for 90% where its
/// transactional ones need 6-12MB.
fn llc_htap(
    swept: Result<LlcCurve, String>,
    llcs: &[&str],
    transactional: Option<(f64, f64)>,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
) {
    let caption = "Measured (simulated) HTAP: CH-benCHmark (1 warehouse, 1 TPC-C worker beside 1 analytical stream, disk engine), stall cycles per transaction or query by LLC size; performance read as its inverse";
    let size = crate::plot::fmt_size;
    let mut rows = Vec::new();
    match swept {
        Ok(s) => {
            rows.push(Row {
                name: "stall cycles/txn or query".into(),
                values: s.stall_row(),
            });
            rows.push(Row {
                name: "stall cycles/1000 instr".into(),
                values: s.per_kilo_instruction_row(),
            });
            // Judged per instruction: a point's window holds TPC-C's transactions and
            // part of a query or more, so its stall cycles per transaction-or-query move
            // with how much query it caught (13x between two sizes at --quick); per
            // instruction they move with the cache.
            match (s.per_instruction().as_ref(), transactional) {
                (Some(a), Some((t90, t95))) => {
                    let mut r = vec!["-".to_string(); llcs.len()];
                    r[0] = format!("{} / {}", size(a.x_90), size(a.x_95));
                    rows.push(Row {
                        name: "90% / 95% of best from".into(),
                        values: r,
                    });
                    v.check(
                        "llc-htap-larger",
                        htap_needs_more((a.x_90, a.x_95), (t90, t95)),
                        format!(
                            "per instruction, HTAP within 90% / 95% of its best stall cycles from {} / {}, TPC-C from {} / {} (agreement needs HTAP's points at least TPC-C's and one of them larger)",
                            size(a.x_90),
                            size(a.x_95),
                            size(t90),
                            size(t95)
                        ),
                    );
                }
                (None, _) => {
                    v.unmeasured("llc-htap-larger", "no simulated HTAP LLC point completed")
                }
                (_, None) => v.unmeasured(
                    "llc-htap-larger",
                    "TPC-C's LLC curve has no 90% point to compare with",
                ),
            }
        }
        Err(e) => {
            rows.push(Row {
                name: format!("not measured: {e}"),
                values: vec!["-".to_string(); llcs.len()],
            });
            v.unmeasured("llc-htap-larger", &e);
        }
    }
    tables.push(Table {
        beside: Some("llc".into()),
        caption: caption.into(),
        columns: llcs.iter().map(|s| s.to_string()).collect(),
        rows,
    });
}

/// CH-benCHmark as Table 4's hybrid row runs it: one warehouse, one analytical stream
/// (beside the one TPC-C worker of `--threads 1`).
fn htap_workload() -> Workload {
    Workload::Chbench(runspec::Chbench {
        tpcc: runspec::Tpcc {
            warehouses: Some(1),
            ..Default::default()
        },
        analytic_streams: Some(1),
        ..Default::default()
    })
}

/// TPC-H as Table 4's analytical row runs it: SF 0.01, no refresh functions.
fn tpch_workload() -> Workload {
    Workload::Tpch(runspec::Tpch {
        scale_factor: Some(0.01),
        no_refresh: true,
        ..Default::default()
    })
}

/// One `simulate` of `w` with `options` on the disk engine and the paper's Xeon,
/// without the 3C split, that measures every LLC size of `llcs` in the same pass: the
/// largest configured (`--llc`), the others as `--sweep llc=` caches fed the same
/// stream of L2 misses (docs/design/cachesim.md, "Size sweeps"). One load and one trace
/// instead of one per size; the modelled LLC is inclusive, so a smaller swept one does
/// not send the back-invalidations it would to the levels above: with separate runs
/// (2026-11-30, `--quick`) the levels above the LLC stalled 7.30 M cycles at 1MB
/// against 7.20 M at 20MB, 0.4% of the 1MB point's 29 M.
fn llc_spec(w: Workload, options: Options, llcs: &[&str]) -> Result<Spec, String> {
    let mut sim = RunSpec::new(runspec::Command::Simulate, w);
    sim.options = Options {
        engine: disk(),
        cpu: Some("xeon-e5-2660".into()),
        no_3c: true,
        ..options
    };
    let args = sim.to_args();
    let geometry = |l: &str| sweep::cache_level_spec(&args, "llc", l);
    let (largest, smaller) = llcs.split_last().expect("LLC sizes");
    sim.options.llc = Some(geometry(largest)?);
    let smaller = smaller
        .iter()
        .map(|l| geometry(l))
        .collect::<Result<Vec<_>, _>>()?;
    sim.options.sweep = vec![format!("llc={}", smaller.join(","))];
    Ok(Spec::of(&sim, vec![], 1))
}

/// An LLC curve from one `simulate` of `llc_spec`: per size, the stall cycles per
/// transaction (or query) end had that LLC been in place (the report's total with the
/// configured LLC's stall cycles swapped for the swept one's; the levels above stall
/// the same), and the instructions per transaction end (the same trace for every size).
#[derive(Debug, Clone, PartialEq)]
struct LlcCurve {
    sizes: Vec<f64>,
    stall_per_txn: Vec<Option<f64>>,
    instructions_per_txn: Option<f64>,
}

impl LlcCurve {
    /// From the report of the sweep's one point (in `dir`).
    fn of(dir: &std::path::Path, s: &sweep::Summary, llcs: &[&str]) -> Result<LlcCurve, String> {
        let r = report(dir, s, &[]).ok_or_else(|| {
            format!(
                "the simulation failed (see {})",
                dir.join("summary.json").display()
            )
        })?;
        Ok(LlcCurve::from_simulation(&r["simulation"], llcs))
    }

    fn from_simulation(sim: &serde_json::Value, llcs: &[&str]) -> LlcCurve {
        let txns = sim["transactions"].as_f64().filter(|t| *t > 0.0);
        let total = sim["total_stall_cycles"].as_f64();
        let llc_level = (sim["levels"].as_array().into_iter().flatten())
            .find(|l| l["name"] == "LLC")
            .and_then(|l| l["stall_cycles"]["total"].as_f64());
        let sizes: Vec<f64> = llcs.iter().map(|l| bytes(l) as f64).collect();
        let largest = sizes[sizes.len() - 1];
        let stall_per_txn = sizes
            .iter()
            .map(|&size| {
                let stall = if size == largest {
                    total?
                } else {
                    let point = (sim["sweep"].as_array().into_iter().flatten()).find(|p| {
                        p["level"] == "LLC" && p["config"]["size_bytes"].as_f64() == Some(size)
                    })?;
                    total? - llc_level? + point["stall_cycles"].as_f64()?
                };
                Some(stall / txns?)
            })
            .collect();
        LlcCurve {
            sizes,
            stall_per_txn,
            instructions_per_txn: sim["instructions_per_txn"].as_f64().filter(|i| *i > 0.0),
        }
    }

    /// Stall cycles per transaction end at each size.
    fn stall_row(&self) -> Vec<String> {
        (self.stall_per_txn.iter())
            .map(|v| opt(*v, |t| format!("{t:.0}")))
            .collect()
    }

    fn per_instruction_at(&self) -> Vec<Option<f64>> {
        (self.stall_per_txn.iter())
            .map(|v| Some(v.as_ref()? / self.instructions_per_txn?))
            .collect()
    }

    fn per_kilo_instruction_row(&self) -> Vec<String> {
        (self.per_instruction_at().iter())
            .map(|v| opt(*v, |r| format!("{:.1}", r * 1000.0)))
            .collect()
    }

    fn analyse(&self, ys: &[Option<f64>]) -> Option<crate::knee::Sufficiency> {
        let points: Vec<(f64, f64)> = (self.sizes.iter().zip(ys))
            .filter_map(|(x, y)| Some((*x, (*y)?)))
            .collect();
        crate::knee::analyse_cost(&points)
    }

    /// Where the stall cycles per transaction end come within 90% and 95% of their least.
    fn per_txn(&self) -> Option<crate::knee::Sufficiency> {
        self.analyse(&self.stall_per_txn)
    }

    /// The same per instruction.
    fn per_instruction(&self) -> Option<crate::knee::Sufficiency> {
        self.analyse(&self.per_instruction_at())
    }
}

/// Whether the hybrid run needs a larger LLC than the transactional one, from their
/// (90%, 95%) points: neither smaller, and one larger (equal points: the same LLC
/// suffices, not "somewhat larger").
fn htap_needs_more(htap: (f64, f64), transactional: (f64, f64)) -> bool {
    htap.0 >= transactional.0
        && htap.1 >= transactional.1
        && (htap.0 > transactional.0 || htap.1 > transactional.1)
}

/// Table 4's TPC-H row at this machine's scale: the 22 queries once each (SF 0.01, no
/// refresh functions, cold caches: `simulate tpch`'s steps) on the same LLC sizes as
/// TPC-C's curve, with the least size within 90% and 95% of the best. Shown beside the
/// paper's table, not judged: at SF 0.01 the data (about 10 MB) is the scale of the
/// modelled LLC, not of the paper's SF 10-100 against 40 MB.
fn llc_tpch(swept: Result<LlcCurve, String>, llcs: &[&str], tables: &mut Vec<Table>) {
    let caption = "Measured (simulated) TPC-H (SF 0.01, the 22 queries once each, disk engine): stall cycles per query by LLC size; performance read as its inverse";
    let rows = match swept {
        Ok(s) => {
            let mut rows = vec![Row {
                name: "stall cycles/query".into(),
                values: s.stall_row(),
            }];
            if let Some(a) = s.per_txn().as_ref() {
                let mut r = vec!["-".to_string(); llcs.len()];
                r[0] = format!(
                    "{} / {}",
                    crate::plot::fmt_size(a.x_90),
                    crate::plot::fmt_size(a.x_95)
                );
                rows.push(Row {
                    name: "90% / 95% of best from".into(),
                    values: r,
                });
            }
            rows
        }
        Err(e) => vec![Row {
            name: format!("not measured: {e}"),
            values: vec!["-".to_string(); llcs.len()],
        }],
    };
    tables.push(Table {
        beside: Some("llc".into()),
        caption: caption.into(),
        columns: llcs.iter().map(|s| s.to_string()).collect(),
        rows,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throughput_tests_ts_is_read_from_its_note() {
        let r = serde_json::json!({"notes": [
            "power test (stream 0):",
            "throughput test: 3 query streams and a refresh stream of 3 pairs; Ts 0.913 s (the power test's end to the last stream's end)",
        ]});
        assert_eq!(throughput_ts(&r), Some(0.913));
        let none = serde_json::json!({"notes": ["throughput test: nothing completed"]});
        assert_eq!(throughput_ts(&none), None);
        assert_eq!(throughput_ts(&serde_json::json!({})), None);
    }
    #[test]
    fn an_llc_curve_swaps_the_configured_llc_for_each_swept_one() {
        let mb = 1048576u64;
        let sim = serde_json::json!({
            "transactions": 10,
            "instructions_per_txn": 50.0,
            "total_stall_cycles": 1000,
            "levels": [
                {"name": "L2", "stall_cycles": {"total": 600}},
                {"name": "LLC", "stall_cycles": {"total": 400}},
            ],
            "sweep": [
                {"level": "L1-I", "config": {"size_bytes": mb}, "stall_cycles": 5},
                {"level": "LLC", "config": {"size_bytes": mb}, "stall_cycles": 900},
            ],
        });
        let c = LlcCurve::from_simulation(&sim, &["1MB", "4MB", "20MB"]);
        // 1MB: 1000 - 400 + 900 over 10; 4MB was not swept; 20MB is the configured one.
        assert_eq!(c.stall_per_txn, vec![Some(150.0), None, Some(100.0)]);
        assert_eq!(c.stall_row(), ["150", "-", "100"]);
        assert_eq!(c.per_kilo_instruction_row(), ["3000.0", "-", "2000.0"]);
        let a = c.per_txn().unwrap();
        assert_eq!((a.x_90, a.x_95), (20.0 * mb as f64, 20.0 * mb as f64));
        assert_eq!(c.per_instruction().unwrap().x_90, a.x_90);
        let none = LlcCurve::from_simulation(&serde_json::json!({}), &["1MB", "20MB"]);
        assert_eq!(none.stall_per_txn, vec![None, None]);
        assert!(none.per_txn().is_none());
    }

    #[test]
    fn an_llc_sweep_is_one_simulation_of_the_largest_with_the_others_swept() {
        let s = llc_spec(
            workload("tpcc"),
            Options::default(),
            &["1MB", "4MB", "20MB"],
        )
        .unwrap();
        assert!(s.vary.is_empty() && s.repeat == 1, "{s:?}");
        let args = s.args.join(" ");
        assert!(args.contains("--llc 20M:20:64:19"), "{args}");
        assert!(
            args.contains("--sweep llc=1M:16:64:19,4M:16:64:19"),
            "{args}"
        );
        assert!(
            args.contains("--cpu xeon-e5-2660") && args.contains("--no-3c"),
            "{args}"
        );
    }

    #[test]
    fn htap_needs_more_only_when_a_point_is_larger_and_none_smaller() {
        let mb = |x: f64| x * 1048576.0;
        assert!(htap_needs_more((mb(20.0), mb(20.0)), (mb(4.0), mb(20.0))));
        assert!(htap_needs_more((mb(4.0), mb(20.0)), (mb(4.0), mb(4.0))));
        assert!(!htap_needs_more((mb(4.0), mb(4.0)), (mb(4.0), mb(4.0))));
        assert!(!htap_needs_more((mb(1.0), mb(20.0)), (mb(4.0), mb(4.0))));
    }

    #[test]
    fn the_cores_curves_load_once_and_run_each_repetition_on_a_copy() {
        for scale in [Scale::Tiny, Scale::Quick, Scale::Full] {
            let mut say = |_: &str| {};
            let ctx = Ctx::new("x".into(), "o".into(), scale, &mut say);
            let mut specs = vec![cores_spec(&ctx).unwrap()];
            if let Some(a) = analytics_specs(&ctx).unwrap() {
                // TPC-H loads per repetition (its A/B did not show its figures unmoved).
                assert_eq!(a.tpch.load_once, None);
                specs.push(a.htap);
            }
            assert_eq!(specs.len(), if scale == Scale::Tiny { 1 } else { 2 });
            let mut roots = Vec::new();
            for s in &specs {
                s.validate().unwrap();
                let lo = s.load_once.as_ref().expect("loaded once");
                assert!(lo.copy && lo.keys.is_empty(), "{lo:?}");
                roots.push(lo.root.clone());
                let p = &s.points()[0];
                let load = s.load_spec(p, &s.shared_db(p).unwrap()).unwrap().to_args();
                // The data's options alone: the runs' streams are not the load's.
                assert!(
                    !runspec::gives(&load, "--streams")
                        && !runspec::gives(&load, "--analytic-streams"),
                    "{load:?}"
                );
                assert_eq!(runspec::value_of(&load, "--engine"), Some("disk"));
                let run = p.rep_args(s, 1, std::path::Path::new("o/x"));
                assert!(run.contains(&"--prewarm".to_string()), "{run:?}");
            }
            // Each curve its own shape.
            roots.dedup();
            assert_eq!(roots.len(), specs.len(), "{roots:?}");
            if scale == Scale::Full {
                let load = |i: usize| {
                    let s = &specs[i];
                    let p = &s.points()[0];
                    s.load_spec(p, &s.shared_db(p).unwrap()).unwrap().to_args()
                };
                assert_eq!(runspec::value_of(&load(0), "--warehouses"), Some("2"));
                assert_eq!(load(1)[..2], ["load", "chbench"]);
            }
        }
    }

    #[test]
    fn disk_runs_are_short_runs_on_the_disk_engine_with_their_thread_count() {
        for scale in [Scale::Tiny, Scale::Quick, Scale::Full] {
            let mut say = |_: &str| {};
            let ctx = Ctx::new("x".into(), "o".into(), scale, &mut say);
            let plain = short_run(&ctx, Kind::Run, workload("tpcb"));
            let d = disk_run(&ctx, workload("tpcb"), 2);
            assert_eq!(d.options.threads, Some(2));
            assert_eq!(d.options.engine.as_deref(), Some("disk"));
            let same = Options {
                threads: plain.options.threads,
                engine: None,
                ..d.options.clone()
            };
            assert_eq!(same, plain.options, "{scale:?}");
        }
    }
}
