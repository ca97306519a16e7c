//! `oltpscope simulate`: run the workload in a child `oltpscope run` under the oltptrace
//! valgrind tool, streaming its trace through a FIFO into the cache simulator running in
//! this process (on the other core), then print the simulation report.

use crate::args::{SimOpts, Warmup};
use crate::output::{report_text, sim_json, JsonOut};
use std::io::BufReader;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

const DEFAULT_TXNS: u64 = 10_000;
/// Fixed warm-up of --steps-team runs (whose child must run to its end: its run report
/// holds the team statistics).
const DEFAULT_WARMUP_TXNS: u64 = 1_000;
/// The most transactions an automatic warm-up takes.
const DEFAULT_WARMUP_CAP: u64 = 200_000;
/// PostgreSQL under valgrind runs a few transactions per second: its warm-up is fixed
/// by default, and an automatic one is capped lower.
const PG_DEFAULT_WARMUP_TXNS: u64 = 100;
const PG_WARMUP_CAP: u64 = 2_000;
const PG_DEFAULT_TXNS: u64 = 500;

/// TPC-H's power test, traced: a fixed sequence of steps (RF1, the chosen queries in
/// stream 0's order, RF2), each a transaction of the trace and each run once, on one
/// thread per stream. So no `--txns` (the steps set their number), no automatic warm-up
/// (its windows of 100, 200, ... transactions never close on at most 24 steps of
/// milliseconds each: `--warmup-txns N` makes the first N steps warm-up, default 0),
/// no coroutines or STEPS teams. Checked before valgrind starts.
pub(crate) fn check_query_steps(c: &SimOpts) -> Result<(), String> {
    if c.txns.is_some() {
        return Err("simulate tpch traces each chosen query once: --txns is refused (--queries chooses them)".into());
    }
    if c.threads != 1 {
        return Err(format!(
            "a TPC-H run has a thread per stream: --threads {} is refused (--streams S adds S query streams)",
            c.threads
        ));
    }
    if c.sim.warmup_txns == Some(Warmup::Auto) || c.sim.warmup_cap.is_some() {
        return Err("simulate tpch: an automatic warm-up needs windows of 100 or more transactions and a power test has at most 24 steps: give --warmup-txns N (default 0, the caches start empty)".into());
    }
    if c.runs_coroutines() {
        return Err(
            "a TPC-H run's streams are threads: --steps-team, --coroutines and --interleave are refused"
                .into(),
        );
    }
    if c.sim.until_settled.is_some() {
        return Err("simulate tpch traces each chosen query once: --until-settled is refused (it stops a run of many transactions)".into());
    }
    Ok(())
}

/// Whether the child runs a fixed sequence of steps (TPC-H's performance test) rather
/// than a number of transactions.
fn query_steps(w: &runspec::Workload) -> bool {
    matches!(w, runspec::Workload::Tpch(_))
}

/// Whether the child is a hybrid run (CH-benCHmark, TPC-E with --analytics N), which
/// is timed: it runs for at most `HYBRID_CAP_S` and the simulation stops it once it has
/// measured its transactions (the transactions' and the queries' TXN_ENDs together).
fn timed(w: &runspec::Workload) -> bool {
    match w {
        runspec::Workload::Chbench(_) => true,
        runspec::Workload::Tpce(t) => t.analytics.is_some_and(|n| n > 0),
        _ => false,
    }
}

/// The traced hybrid run's duration: a cap, never reached in practice (the simulation
/// closes the trace once it has measured `--txns`).
const HYBRID_CAP_S: f64 = 86_400.0;

/// The child run, from `simulate`'s parsed options: the workload's, the engine's, and
/// the transactions to trace (cache warm-up included; no timed warm-up).
pub fn child_spec(
    c: &SimOpts,
    workload: runspec::Workload,
    warmup_txns: u64,
    coroutines: u32,
) -> runspec::RunSpec {
    let steps = query_steps(&workload);
    let timed = timed(&workload);
    let mut spec = runspec::RunSpec::new(runspec::Command::Run, workload);
    let txns = c.txns.unwrap_or(default_txns(c));
    spec.options = runspec::Options {
        engine: Some(c.engine.as_str().to_string()),
        threads: Some(c.threads),
        seed: Some(c.seed),
        log: Some(crate::spec::log_mode(c.log())),
        bpool_size: c.disk.bpool_size,
        escalation: c.disk.escalation,
        checkpoint_ms: c.disk.checkpoint_ms,
        partitions: c.partitioned.partitions,
        ordered_index: c.partitioned.ordered_index.map(crate::spec::ordered_index),
        coroutines: Some(coroutines).filter(|&n| n > 1),
        interleave: Some(c.interleave).filter(|&n| n > 1),
        interleave_group: c.interleave_group,
        interleave_min_table: c.interleave_min_table,
        no_pin: c.no_pin,
        steps_points: c.steps_points.clone(),
        // TPC-H's steps set the run's transactions and its (no) warm-up themselves.
        txns: (!steps && !timed).then_some(txns + warmup_txns),
        duration: timed.then_some(HYBRID_CAP_S),
        warmup: (!steps).then_some(0.0),
        trace_measured: true,
        btree_levels: c.btree_levels,
        no_check: true,
        ..runspec::Options::default()
    };
    spec
}

fn default_txns(c: &SimOpts) -> u64 {
    if c.engine == crate::args::EngineName::Postgres {
        PG_DEFAULT_TXNS
    } else {
        DEFAULT_TXNS
    }
}

/// Whether the traced run's engine keeps files (the disk engine, the memory engine with
/// its log on): then its database goes in the temporary directory.
pub(crate) fn keeps_files(c: &SimOpts) -> bool {
    let d = c.engine.descriptor();
    d.durable && (!d.db_is_log || c.log() != crate::args::LogArg::Off)
}

pub(crate) fn config(c: &SimOpts) -> Result<cachesim::Config, String> {
    config_for(c, false)
}

/// `config`; `steps`: the child runs TPC-H's fixed steps (`check_query_steps`), whose
/// warm-up is 0 steps unless given and which the simulation reads to their end.
fn config_for(c: &SimOpts, steps: bool) -> Result<cachesim::Config, String> {
    let s = &c.sim;
    let pg = c.engine == crate::args::EngineName::Postgres;
    let warmup = match (s.warmup_txns, c.steps_team.is_empty()) {
        (Some(w), _) => w,
        (None, _) if steps => Warmup::Txns(0),
        (None, _) if pg => Warmup::Txns(PG_DEFAULT_WARMUP_TXNS),
        (None, true) => Warmup::Auto,
        (None, false) => Warmup::Txns(DEFAULT_WARMUP_TXNS),
    };
    if warmup == Warmup::Auto && !c.steps_team.is_empty() {
        return Err(
            "--warmup-txns auto does not go with --steps-team (each run must end by itself): give a number"
                .to_string(),
        );
    }
    if s.warmup_cap.is_some() && warmup != Warmup::Auto {
        return Err("--warmup-cap applies to --warmup-txns auto only".to_string());
    }
    if s.until_settled.is_some() && !c.steps_team.is_empty() {
        return Err(
            "--until-settled does not go with --steps-team (each run must end by itself: its run report holds the team statistics)"
                .to_string(),
        );
    }
    let settle = (s.until_settled)
        .map(|pct| cachesim::settle::Rule::new(pct / 100.0))
        .transpose()?;
    let (warmup_txns, warmup_auto) = match warmup {
        Warmup::Auto if pg => (s.warmup_cap.unwrap_or(PG_WARMUP_CAP), true),
        Warmup::Auto => (s.warmup_cap.unwrap_or(DEFAULT_WARMUP_CAP), true),
        Warmup::Txns(n) => (n, false),
    };
    cachesim::config::Options {
        preset: s.cpu.clone().unwrap_or_default(),
        l1i: s.l1i.clone(),
        l1d: s.l1d.clone(),
        l2: s.l2.clone(),
        llc: s.llc.clone(),
        sweep: s.sweep.clone(),
        components: s.components.clone(),
        warmup_txns,
        warmup_auto,
        // Auto: the child runs up to the cap plus the measured transactions, and the
        // simulation stops reading once it has measured them; until settled, --txns
        // is the cap and the simulation may stop before it.
        measure_txns: ((warmup_auto || settle.is_some()) && !steps)
            .then(|| c.txns.unwrap_or(default_txns(c))),
        settle,
        background_shared_core: s.background_shares_core,
        caller_attribution: !s.no_caller_attribution,
        no_three_c: s.no_3c,
        tree_plru: s.plru,
        inclusive: s.non_inclusive.then_some(false),
        memory_latency_cycles: s.memory_latency,
    }
    .to_config()
    .map(|mut cfg| {
        // SQLite's code runs in the traced process: its own component table.
        if c.engine.is_external() {
            cfg.system = Some(c.engine.as_str().to_string());
        }
        cfg
    })
}

/// The workload's names for what the simulator numbers: its transaction types, for the
/// per-type tables, and each table's indexes (the primary first), for the B+tree level
/// table.
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub types: Vec<String>,
    pub trees: Vec<Vec<String>>,
}

impl Names {
    pub fn of<W: workloads::Workload>(wl: &W) -> Names {
        Names {
            types: wl.txn_types().iter().map(|n| n.to_string()).collect(),
            trees: (wl.schema().tables.iter())
                .map(|t| {
                    std::iter::once(t.name.clone())
                        .chain(t.secondary.iter().map(|s| format!("{}.{}", t.name, s.name)))
                        .collect()
                })
                .collect(),
        }
    }
}

pub fn simulate(c: &SimOpts, workload: runspec::Workload, names: &Names) -> Result<(), String> {
    let mut cfg = config_for(c, query_steps(&workload))?;
    if c.load_only {
        let coroutines = crate::args::coroutines(c.coroutines, &c.steps_team)?;
        let spec = child_spec(c, workload, cfg.warmup_txns, coroutines);
        let dir = c.db.as_deref().expect("clap: --load-only requires --db");
        let secs = load_kept(c, &spec, dir)?;
        println!(
            "loaded natively into {} in {secs:.1} s (marked {})",
            dir.display(),
            lab::sweep::loaded_marker(dir).display()
        );
        return Ok(());
    }
    if timed(&workload) {
        // The child runs until the simulation has measured enough, warm-up fixed or not.
        cfg.measure_txns = Some(c.txns.unwrap_or(default_txns(c)));
    }
    let (json, out) = JsonOut::open_with_dir(c.json.as_deref(), c.out.as_deref())?;
    match simulate_into(c, workload, cfg, &json, names) {
        Ok(value) => match out {
            Some(o) => {
                let config = serde_json::json!({
                    "command": "simulate",
                    "child_args": value["child_args"],
                    "cache": value["simulation"]["config"],
                    "warmup_txns": value["simulation"]["warmup_txns"],
                });
                crate::output::write_results(o, &value, None, config)
            }
            None => Ok(()),
        },
        Err(e) => {
            json.abandon();
            if let Some(o) = out {
                o.abandon();
            }
            Err(e)
        }
    }
}

fn simulate_into(
    c: &SimOpts,
    workload: runspec::Workload,
    cfg: cachesim::Config,
    json: &JsonOut,
    names: &Names,
) -> Result<serde_json::Value, String> {
    let coroutines = crate::args::coroutines(c.coroutines, &c.steps_team)?;
    // A kept database is checked before valgrind is prepared: refused in one line.
    let kept = match &c.db {
        Some(dir) => {
            let spec = child_spec(c, workload.clone(), cfg.warmup_txns, coroutines);
            Some(kept_load(c, &spec, dir)?)
        }
        None => None,
    };
    let setup = tracer::prepare()?;
    if c.engine == crate::args::EngineName::Postgres {
        // Each backend's pg_backend_pid() query is a transaction of the warm-up (TPC-H's
        // steps: on top of the steps given as warm-up).
        let mut cfg = cfg;
        if query_steps(&workload) {
            cfg.warmup_txns += c.threads as u64;
        }
        let warmup = cfg.warmup_txns.saturating_sub(c.threads as u64);
        let spec = child_spec(c, workload, warmup, coroutines);
        return crate::simulate_pg::simulate(&cfg, &spec, json);
    }
    let spec = child_spec(c, workload, cfg.warmup_txns, coroutines);
    // SQLite's database is loaded natively first: under valgrind the load was most of a
    // short simulation (see `loads_natively`); with --db, any engine's was beforehand.
    let loaded = match kept {
        Some(k) => Some(k),
        None if keeps_files(c) && loads_natively(c) => Some(load_natively(c, &spec)?),
        None => None,
    };
    let db = match &loaded {
        Some(l) => ChildDb::Loaded(l),
        None if keeps_files(c) => ChildDb::Child,
        None => ChildDb::Memory,
    };

    if c.steps_team.is_empty() {
        let (mut report, _, elapsed) = trace_once(&cfg, &setup, &spec, false, db.clone())?;
        report.name_types(&names.types);
        report.name_trees(&names.trees);
        if c.btree_levels && report.btree_levels.is_empty() {
            eprintln!(
                "note: --btree-levels: no B+tree descent was traced after warm-up (the lookups went to hash indexes)"
            );
        }
        json.text(&report_text(&report, elapsed));
        let value = serde_json::json!({
            "child_args": opened(&spec, &db).to_args(),
            "elapsed_s": elapsed,
            "simulation": sim_json(&report),
        });
        json.write(&value)?;
        return Ok(value);
    }

    simulate_teams(c, coroutines, &cfg, &setup, &spec, db, json)
}

/// `simulate --steps-team T1,T2...`: a simulation per team size (a traced run each, or
/// one for all with `--steps-one-load`), then the table and the JSON with a run per
/// team size.
fn simulate_teams(
    c: &SimOpts,
    coroutines: u32,
    cfg: &cachesim::Config,
    setup: &tracer::TracerSetup,
    spec: &runspec::RunSpec,
    db: ChildDb,
    json: &JsonOut,
) -> Result<serde_json::Value, String> {
    // One simulation per team size, then the table.
    let mut rows = Vec::new();
    // One load for all is asked for (`--steps-one-load`), not the default: a later team
    // size's figures move (docs/design/tracer.md).
    let one_load = c.steps_team.len() > 1 && c.steps_one_load;
    if one_load {
        // One traced run loads once and measures each team size in a trace window of
        // its own, split into a simulation per window (`cachesim::phases`).
        let (runs, args) = trace_phases(cfg, setup, spec, &c.steps_team, db.clone())?;
        for (&team, (report, run, elapsed)) in c.steps_team.iter().zip(runs) {
            rows.push(StepsRow::new(
                team,
                coroutines,
                &report,
                run,
                args.clone(),
                elapsed,
            )?);
        }
    }
    for &team in c.steps_team.iter().filter(|_| !one_load) {
        let mut a = spec.clone();
        a.options.steps_team = vec![team];
        let (report, run, elapsed) = trace_once(cfg, setup, &a, true, db.clone())?;
        if c.steps_team.len() == 1 {
            json.text(&report_text(&report, elapsed));
        } else {
            eprintln!(
                "team size {team}: simulated {} instructions in {elapsed:.1} s",
                cachesim::report::sep(report.instructions)
            );
        }
        rows.push(StepsRow::new(
            team,
            coroutines,
            &report,
            run,
            opened(&a, &db).to_args(),
            elapsed,
        )?);
    }
    // The baseline is the team size 1 run, if there is one (same coroutines per thread:
    // a team of 1 switches only where a transaction waits).
    if let Some(base) = rows.iter().find(|r| r.team == 1).map(|r| r.l1i_per_txn) {
        for r in &mut rows {
            let n = r.avg_team.max(1.0);
            r.bound = Some(base * (1.0 + (n - 1.0) * BETA_OVER_A) / n);
        }
    }
    let native = matches!(db, ChildDb::Loaded(_));
    let loads = match (native, one_load) {
        (true, _) => 0,
        (false, true) => 1,
        (false, false) => rows.len(),
    };
    json.text(&format!(
        "{}loads: {loads} ({})\n",
        steps_table(&rows),
        match (native, one_load) {
            (true, _) => "the database was loaded natively, not traced; each traced run opened a copy of it",
            (false, true) => "one traced run loaded the database and measured every team size in turn, each in a trace window and a simulation of its own",
            (false, false) => "a traced run and its load per team size",
        }
    ));
    let first = &rows[0];
    let value = serde_json::json!({
        // The first run stands for the whole in a results directory's manifest.
        "child_args": first.args,
        "elapsed_s": rows.iter().map(|r| r.elapsed).sum::<f64>(),
        // Traced loads: 1 when one run served every team size, 0 on a native load.
        "loads": loads,
        "simulation": sim_json(&first.report),
        "bound": BOUND_TEXT,
        "bound_beta_over_a": BETA_OVER_A,
        "runs": rows.iter().map(|r| serde_json::json!({
            "steps_team": r.team,
            "coroutines": r.coroutines,
            "child_args": r.args,
            "elapsed_s": r.elapsed,
            "l1i_misses_per_txn": r.l1i_per_txn,
            "committed_txns": r.committed,
            "l1i_misses_per_committed_txn": r.l1i_per_committed,
            "instructions_per_committed_txn": r.instr_per_committed,
            "l1i_mpki": r.l1i_mpki,
            "l1d_misses_per_txn": r.l1d_per_txn,
            "aborts_per_commit": r.aborts_per_commit,
            "bound_l1i_misses_per_txn": r.bound,
            "run_steps": r.run.get("steps"),
            "simulation": sim_json(&r.report),
        })).collect::<Vec<_>>(),
    });
    json.write(&value)?;
    Ok(value)
}

/// The paper's bound (Section 3.4.1): a team of n running one operation incurs
/// a*m + (n-1)*beta*m misses where n runs one after another incur n*a*m (warm cache).
/// So per transaction, STEPS' L1-I misses are at least (1 + (n-1) * beta/a) / n of the
/// original's. beta/a from the paper's index fetch (a = 0.373, beta = 0.033).
const BETA_OVER_A: f64 = 0.033 / 0.373;
const BOUND_TEXT: &str = "bound: L1-I misses per txn of team size 1 x (1 + (n-1) x 0.088) / n, n = mean team size achieved, 0.088 = beta/a of the STEPS paper's index fetch (Section 3.4.1: a = 0.373, beta = 0.033); the paper reaches this only for one operation run by identical threads";

struct StepsRow {
    team: u32,
    coroutines: u32,
    report: cachesim::Report,
    run: serde_json::Value,
    args: Vec<String>,
    elapsed: f64,
    l1i_per_txn: f64,
    /// Committed transactions in the measured part of the trace.
    committed: u64,
    /// The STEPS paper's measure: misses of every attempt over the commits (an aborted
    /// attempt's work is overhead of the ones that commit). None without a commit.
    l1i_per_committed: Option<f64>,
    instr_per_committed: Option<f64>,
    l1i_mpki: f64,
    l1d_per_txn: f64,
    avg_team: f64,
    ctx_per_txn: f64,
    /// Conflict aborts per commit in the traced run.
    aborts_per_commit: f64,
    bound: Option<f64>,
}

impl StepsRow {
    fn new(
        team: u32,
        coroutines: u32,
        report: &cachesim::Report,
        run: serde_json::Value,
        args: Vec<String>,
        elapsed: f64,
    ) -> Result<StepsRow, String> {
        let level = |n: &str| {
            report
                .levels
                .iter()
                .find(|l| l.name == n)
                .ok_or_else(|| format!("the simulation has no {n} level"))
        };
        let (l1i, l1d) = (level("L1-I")?, level("L1-D")?);
        let per_txn = |l: &cachesim::report::LevelReport| {
            l.misses_per_txn
                .map(|m| m.total)
                .ok_or_else(|| "the simulation counted no transaction".to_string())
        };
        let steps = run.get("steps");
        let f = |k: &str| {
            steps
                .and_then(|s| s.get(k))
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0)
        };
        let committed = report.committed_transactions.unwrap_or(report.transactions);
        let per_commit = |x: u64| (committed > 0).then(|| x as f64 / committed as f64);
        Ok(StepsRow {
            team,
            coroutines,
            l1i_per_txn: per_txn(l1i)?,
            committed,
            l1i_per_committed: per_commit(l1i.misses.total),
            instr_per_committed: per_commit(report.instructions),
            l1i_mpki: l1i.mpki.total,
            l1d_per_txn: per_txn(l1d)?,
            avg_team: f("avg_team_size"),
            aborts_per_commit: {
                let g = |k: &str| run.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
                if g("committed") > 0.0 {
                    g("aborted") / g("committed")
                } else {
                    0.0
                }
            },
            ctx_per_txn: f("ctx_switches_per_txn"),
            bound: None,
            report: report.clone(),
            run,
            args,
            elapsed,
        })
    }
}

fn steps_table(rows: &[StepsRow]) -> String {
    use std::fmt::Write;
    let base = rows.iter().find(|r| r.team == 1);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "STEPS: L1-I misses against team size ({} coroutines per thread)",
        rows.first().map_or(0, |r| r.coroutines)
    );
    let _ = writeln!(
        o,
        "{:>5} {:>9} {:>8} {:>13} {:>10} {:>11} {:>10} {:>12} {:>10} {:>9} {:>12} {:>9}",
        "team",
        "mean team",
        "CTX/txn",
        "aborts/commit",
        "L1-I/txn",
        "L1-I/commit",
        "vs team 1",
        "instr/commit",
        "vs team 1",
        "L1-I MPKI",
        "bound/txn",
        "L1-D/txn"
    );
    // Change against team 1 of a figure, as a signed percentage.
    let vs = |x: Option<f64>, b: Option<f64>| match (x, b) {
        (Some(x), Some(b)) if b > 0.0 => format!("{:.1}%", (x / b - 1.0) * 100.0),
        _ => "-".to_string(),
    };
    let opt1 = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
    for r in rows {
        let _ = writeln!(
            o,
            "{:>5} {:>9.2} {:>8.1} {:>13.2} {:>10.1} {:>11} {:>10} {:>12} {:>10} {:>9.2} {:>12} {:>9.1}",
            r.team,
            r.avg_team,
            r.ctx_per_txn,
            r.aborts_per_commit,
            r.l1i_per_txn,
            opt1(r.l1i_per_committed),
            vs(r.l1i_per_committed, base.and_then(|b| b.l1i_per_committed)),
            r.instr_per_committed.map_or("-".to_string(), |x| format!("{x:.0}")),
            vs(r.instr_per_committed, base.and_then(|b| b.instr_per_committed)),
            r.l1i_mpki,
            opt1(r.bound),
            r.l1d_per_txn
        );
    }
    let _ = writeln!(
        o,
        "per txn: per transaction attempt (a conflict-aborted attempt counts; see aborts/commit); per commit: every attempt's misses or instructions over the committed transactions"
    );
    let _ = writeln!(o, "{BOUND_TEXT}");
    if base.is_none() {
        let _ = writeln!(o, "(no team size 1 in the list: no baseline, no bound)");
    }
    o
}

/// `spec` as its child runs on `db` (a native load: `--no-load`, the disk engine's
/// `--prewarm`), but for the copy's path (a temporary directory): what reports record.
fn opened(spec: &runspec::RunSpec, db: &ChildDb) -> runspec::RunSpec {
    let mut spec = spec.clone();
    if let ChildDb::Loaded(l) = db {
        spec.options.no_load = true;
        if l.prewarm {
            spec.extra.push("--prewarm".into());
        }
    }
    spec
}

/// Where the traced child's database is.
#[derive(Clone)]
pub(crate) enum ChildDb<'a> {
    /// In its memory only (it loads it, traced).
    Memory,
    /// In the temporary directory, loaded by the child itself (traced).
    Child,
    /// Loaded natively beforehand: copied into the temporary directory, and the child
    /// runs on it (`--no-load`).
    Loaded(&'a NativeLoad),
}

/// The engines whose database `simulate` loads natively before the traced run, which
/// reopens it (`run --no-load`): SQLite alone, whose traced run is the same either way
/// (Wonderland's `--quick` TPC-B, TPC-C and TPC-E: instructions within 0.05%; 2026-11-30).
/// Not the disk engine, even with its pool prewarmed (`run --prewarm`): against its load in
/// the traced child, with the same binary, TPC-C ran 0.5% more instructions with 10%
/// more L1-I and 4-5% more stall cycles per transaction, TPC-B 26% more stall cycles
/// (its log and lock table, not its pool, started otherwise after a reopen: session 71
/// builds them as a load leaves them, not measured again on these points) and
/// CH-benCHmark twice the instructions, where two runs of one setting differ by under
/// 1% (docs/design/simulate-validation.md). Not the memory engine: its recovery lays the
/// rows out otherwise than the load (TPC-C: 4% more instructions, 20% more stall cycles
/// per transaction). PostgreSQL has its own path (its load is native already).
/// `--db DIR` asks for a native load of any engine all the same: STEPS' `--quick` point
/// ran 3x faster on it, with 6.5-7.7% more L1-I misses per committed transaction in
/// session 70 and a load's own figures (within the repetitions' spread) since session
/// 71, so `reproduce steps` uses it.
fn loads_natively(c: &SimOpts) -> bool {
    c.engine == crate::args::EngineName::Sqlite
}

/// A database loaded natively: into a temporary directory of its own (removed when
/// dropped), or kept by `simulate --db DIR --load-only` (never written: copied per run).
pub(crate) struct NativeLoad {
    _tmp: Option<tempfile::TempDir>,
    db: std::path::PathBuf,
    /// The engine is the disk engine: its runs prewarm the copy's pool (`run --prewarm`),
    /// as full as after a load.
    prewarm: bool,
}

impl NativeLoad {
    fn db(&self) -> std::path::PathBuf {
        self.db.clone()
    }
}

/// The engines whose database `simulate --db` takes: those that keep files, but
/// PostgreSQL (its load is native already, its cluster its own path).
fn check_kept_engine(c: &SimOpts) -> Result<(), String> {
    if c.engine == crate::args::EngineName::Postgres || !keeps_files(c) {
        return Err(format!(
            "--db: the {} engine{} keeps no database a traced run could open (the disk, SQLite and logged memory-like engines do; PostgreSQL's load is native already)",
            c.engine.as_str(),
            if keeps_files(c) { "" } else { " with its log off" }
        ));
    }
    Ok(())
}

/// The marker line of `simulate`'s native load of `spec` into `dir`: its command line.
fn load_line(c: &SimOpts, spec: &runspec::RunSpec, dir: &std::path::Path) -> String {
    load_spec(c, spec, dir).to_args().join(" ") + "\n"
}

/// `simulate --db DIR`: the database `simulate --db DIR --load-only` loaded for this
/// traced run, refused when DIR or its marker is missing or the marker names another
/// load (other data options, seed, threads, engine or buffer pool).
fn kept_load(
    c: &SimOpts,
    spec: &runspec::RunSpec,
    dir: &std::path::Path,
) -> Result<NativeLoad, String> {
    check_kept_engine(c)?;
    let marker = lab::sweep::loaded_marker(dir);
    let line = load_line(c, spec, dir);
    match std::fs::read(&marker) {
        Ok(t) if t == line.as_bytes() => {}
        Ok(t) => {
            return Err(format!(
                "{}: another load's marker ({}): refusing to simulate on {} (this simulation's load is `{}`)",
                marker.display(),
                String::from_utf8_lossy(&t).trim(),
                dir.display(),
                line.trim()
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{}: no finished load ({} missing): load it first with the same options and --load-only",
                dir.display(),
                marker.display()
            ))
        }
        Err(e) => return Err(format!("cannot read {}: {e}", marker.display())),
    }
    if !dir.is_dir() {
        return Err(format!(
            "{}: a finished load's marker, but {} is missing",
            marker.display(),
            dir.display()
        ));
    }
    Ok(NativeLoad {
        _tmp: None,
        db: dir.to_path_buf(),
        prewarm: c.engine == crate::args::EngineName::Disk,
    })
}

/// `simulate --db DIR --load-only`: load the traced run's database natively into DIR
/// (new), then write its marker `DIR.loaded` (the load's command line). Its seconds.
fn load_kept(c: &SimOpts, spec: &runspec::RunSpec, dir: &std::path::Path) -> Result<f64, String> {
    check_kept_engine(c)?;
    let marker = lab::sweep::loaded_marker(dir);
    if dir.exists() || marker.exists() {
        return Err(format!(
            "{} or {} exists: refusing to load over it (remove both to load again)",
            dir.display(),
            marker.display()
        ));
    }
    let t0 = Instant::now();
    run_load(c, spec, dir)?;
    std::fs::write(&marker, load_line(c, spec, dir))
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    Ok(t0.elapsed().as_secs_f64())
}

/// What `load` takes of a workload: the options that shape its data.
fn data_only(w: &runspec::Workload) -> runspec::Workload {
    use runspec::Workload as W;
    match w {
        W::Micro(m) => W::Micro(runspec::Micro {
            size: m.size,
            keys: m.keys,
            columns: m.columns,
            index: m.index,
            ..Default::default()
        }),
        W::Tpcb(b) => W::Tpcb(runspec::Tpcb {
            scale: b.scale,
            pad: b.pad,
            ..Default::default()
        }),
        W::Tpcc(t) => W::Tpcc(runspec::Tpcc {
            warehouses: t.warehouses,
            ..Default::default()
        }),
        W::Tpce(e) => W::Tpce(runspec::Tpce {
            customers: e.customers,
            trade_days: e.trade_days,
            ..Default::default()
        }),
        W::Tpch(h) => W::Tpch(runspec::Tpch {
            scale_factor: h.scale_factor,
            ..Default::default()
        }),
        W::Chbench(ch) => W::Chbench(runspec::Chbench {
            tpcc: runspec::Tpcc {
                warehouses: ch.tpcc.warehouses,
                ..Default::default()
            },
            ..Default::default()
        }),
    }
}

/// The `oltpscope load` of the traced run `spec`: the same data (workload's data
/// options, seed, loader threads as the run's load would use) into `db`.
fn load_spec(c: &SimOpts, spec: &runspec::RunSpec, db: &std::path::Path) -> runspec::RunSpec {
    let mut load = runspec::RunSpec::new(runspec::Command::Load, data_only(&spec.workload));
    load.options = runspec::Options {
        engine: spec.options.engine.clone(),
        db: Some(db.to_path_buf()),
        threads: Some(c.threads),
        seed: Some(c.seed),
        bpool_size: c.disk.bpool_size,
        report_interval: Some(0.0),
        ..runspec::Options::default()
    };
    load
}

/// Load the traced run's database natively (a child `oltpscope load`, not traced).
fn load_natively(c: &SimOpts, spec: &runspec::RunSpec) -> Result<NativeLoad, String> {
    let dir = tempfile::Builder::new()
        .prefix("oltpscope-simulate-load-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let db = dir.path().join("db");
    run_load(c, spec, &db)?;
    Ok(NativeLoad {
        _tmp: Some(dir),
        db,
        prewarm: false,
    })
}

/// A child `oltpscope load` (not traced) of the traced run `spec`'s data into `db`.
fn run_load(c: &SimOpts, spec: &runspec::RunSpec, db: &std::path::Path) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let args = load_spec(c, spec, db).to_args();
    let out = Command::new(&exe)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start the load: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!(
            "loading the traced run's database natively ({}) failed: {}",
            args.join(" "),
            last.unwrap_or("no message").trim()
        ));
    }
    Ok(())
}

/// Run the child `oltpscope run` of `spec` under the tracer and simulate its trace.
/// With `run_json`, the child also writes its run report, returned parsed.
fn trace_once(
    cfg: &cachesim::Config,
    setup: &tracer::TracerSetup,
    spec: &runspec::RunSpec,
    run_json: bool,
    db: ChildDb,
) -> Result<(cachesim::Report, serde_json::Value, f64), String> {
    let mut sim = cachesim::Simulator::new(cfg.clone())?;
    let (_, run, elapsed) = trace_with(setup, spec, run_json, db, |r| {
        sim.run(r).map_err(|e| e.to_string())?;
        Ok(((), sim.stopped_early()))
    })?;
    Ok((sim.report(), run, elapsed))
}

/// A team size's simulation, its run report and its seconds.
type TeamRun = (cachesim::Report, serde_json::Value, f64);

/// One child `oltpscope run` of `spec` under the tracer that loads once and measures
/// once per team size of `teams`, in that order (`run --steps-team T1 --then-steps-team
/// T2,...`), each measured phase simulated afresh from its own trace window. Per team
/// size: its simulation, its run report, and the seconds since the previous phase
/// ended (the first's include the load); and the child's arguments. A phase missing,
/// cut or in excess is an error.
fn trace_phases(
    cfg: &cachesim::Config,
    setup: &tracer::TracerSetup,
    spec: &runspec::RunSpec,
    teams: &[u32],
    db: ChildDb,
) -> Result<(Vec<TeamRun>, Vec<String>), String> {
    let mut spec = spec.clone();
    spec.options.steps_team = vec![teams[0]];
    let more: Vec<String> = teams[1..].iter().map(u32::to_string).collect();
    let extra = vec!["--then-steps-team".to_string(), more.join(",")];
    let tmp = tempfile::Builder::new()
        .prefix("oltpscope-simulate-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let t0 = Instant::now();
    let recorded = opened(&spec, &db);
    let (mut sims, run, total) = trace_in(setup, &spec, true, db, tmp.path(), &extra, |r| {
        let mut phases = cachesim::phases::Phases::new(r, teams.len());
        let mut sims = Vec::new();
        let mut since = 0.0;
        for &team in teams {
            let mut sim = cachesim::Simulator::new(cfg.clone())?;
            let mut phase = phases.next_phase().map_err(|e| e.to_string())?;
            let ran = cachesim::trace::Reader::new(&mut phase).and_then(|r| sim.run(r));
            if let Err(e) = ran {
                // The split's own reason, when it is the cause, is the clearer line.
                return Err(match phase.failure() {
                    Some(f) => f.to_string(),
                    None => format!("team size {team}: {e}"),
                });
            }
            phase.drain().map_err(|e| e.to_string())?;
            let at = t0.elapsed().as_secs_f64();
            let report = sim.report();
            eprintln!(
                "team size {team}: simulated {} instructions ({:.1} s since the {})",
                cachesim::report::sep(report.instructions),
                at - since,
                if sims.is_empty() {
                    "start, the load included"
                } else {
                    "previous team size"
                }
            );
            sims.push((report, at - since));
            since = at;
        }
        phases.finish().map_err(|e| e.to_string())?;
        Ok((sims, false))
    })?;
    // The last phase's seconds run to the child's end (its close).
    let counted: f64 = sims.iter().map(|s| s.1).sum();
    if let Some(last) = sims.last_mut() {
        last.1 += (total - counted).max(0.0);
    }
    let reports = run["phases"]
        .as_array()
        .filter(|p| p.len() == teams.len())
        .ok_or_else(|| {
            format!(
                "the traced run's report does not hold its {} phases",
                teams.len()
            )
        })?;
    let runs = sims
        .into_iter()
        .zip(reports)
        .map(|((report, secs), run)| (report, run.clone(), secs))
        .collect();
    let mut args = recorded.to_args();
    args.extend(extra);
    Ok((runs, args))
}

/// Run the child `oltpscope run` of `spec` under the tracer, its trace read by
/// `consume` as it is made (which says whether it stopped reading on purpose). With
/// `run_json`, the child also writes its run report, returned parsed, with the seconds
/// the whole took. `db`: where the child's database is (see [`ChildDb`]).
pub(crate) fn trace_with<T>(
    setup: &tracer::TracerSetup,
    spec: &runspec::RunSpec,
    run_json: bool,
    db: ChildDb,
    consume: impl FnOnce(TraceReader) -> Result<(T, bool), String>,
) -> Result<(T, serde_json::Value, f64), String> {
    // Removed when dropped, on every return below.
    let tmp = tempfile::Builder::new()
        .prefix("oltpscope-simulate-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    trace_in(setup, spec, run_json, db, tmp.path(), &[], consume)
}

pub(crate) type TraceReader = cachesim::trace::Reader<BufReader<std::fs::File>>;

fn trace_in<T>(
    setup: &tracer::TracerSetup,
    spec: &runspec::RunSpec,
    run_json: bool,
    db: ChildDb,
    dir: &std::path::Path,
    extra_args: &[String],
    consume: impl FnOnce(TraceReader) -> Result<(T, bool), String>,
) -> Result<(T, serde_json::Value, f64), String> {
    let mut spec = spec.clone();
    // The child's database lives in our temporary directory: removed with it, even when
    // the child is stopped early (below).
    match db {
        ChildDb::Memory => {}
        ChildDb::Child => spec.options.db = Some(dir.join("db")),
        ChildDb::Loaded(l) => {
            // A copy: each traced run (one per STEPS team) starts from the same data.
            lab::campaign::copy_tree(&l.db(), &dir.join("db"))?;
            spec = opened(&spec, &db);
            spec.options.db = Some(dir.join("db"));
        }
    }
    let run_path = dir.join("run.json");
    if run_json {
        spec.options.json = Some(run_path.clone());
    }
    let mut args = spec.to_args();
    args.extend_from_slice(extra_args);
    let fifo = dir.join("trace.fifo");
    tracer::make_fifo(&fifo)?;
    let stderr_path = dir.join("child.stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| format!("cannot create {}: {e}", stderr_path.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let mut opts = tracer::TraceOptions::default();
    // Worker threads and background threads (epochs, log flushers) spin: be fair.
    opts.valgrind_args.push("--fair-sched=yes".into());
    let mut cmd: Command = setup.command_with(&exe, &args, &fifo, &opts);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start valgrind: {e}"))?;

    // If the child dies before opening the FIFO, our open for reading would wait forever:
    // a watcher opens it for writing once the child is gone, which ends our read at once.
    let opened = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (opened, fifo) = (opened.clone(), fifo.clone());
        std::thread::spawn(move || {
            let status = child.wait();
            while !opened.load(Ordering::Acquire) {
                use std::os::unix::fs::OpenOptionsExt;
                let r = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo);
                if r.is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            status
        })
    };
    let file =
        std::fs::File::open(&fifo).map_err(|e| format!("cannot open {}: {e}", fifo.display()))?;
    opened.store(true, Ordering::Release);
    let result = cachesim::trace::Reader::new(BufReader::with_capacity(1 << 20, file))
        .map_err(|e| e.to_string())
        .and_then(consume);
    let status = watcher
        .join()
        .map_err(|_| "the child watcher panicked".to_string())?;
    let elapsed = t0.elapsed().as_secs_f64();
    let child_err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    // With `measure_txns` the simulation stops reading when it has measured enough; the
    // tracer then fails to write to the closed FIFO and exits with status 2.
    let stopped =
        matches!(&result, Ok((_, true))) && matches!(&status, Ok(s) if s.code() == Some(2));
    let ok = matches!(&status, Ok(s) if s.success()) || stopped;
    if !ok {
        let last = child_err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(format!("the traced run failed: {}", last.trim()));
    }
    let (value, _) = result.map_err(|e| format!("reading the trace: {e}"))?;
    let run = if run_json {
        let text = std::fs::read_to_string(&run_path)
            .map_err(|e| format!("cannot read the traced run's report: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("the traced run's report: {e}"))?
    } else {
        serde_json::Value::Null
    };
    Ok((value, run, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// A `simulate` command line's workload and options, as the CLI parses them.
    fn parse_simulate(line: &str) -> crate::args::RunWorkload<crate::args::SimOpts> {
        let v: Vec<String> = line.split(' ').map(String::from).collect();
        let cli = crate::args::Cli::try_parse_from(&v).unwrap_or_else(|e| panic!("{e}"));
        let crate::args::Cmd::Simulate { workload: Some(rw) } = cli.cmd else {
            panic!("not a simulate command")
        };
        rw
    }

    /// The native load of a traced run is a `load` the command line takes: the
    /// workload's run-only options (mix, mode, rows, streams, analytics) left out, its
    /// data options, seed and threads kept.
    #[test]
    fn the_native_load_takes_the_data_options_alone() {
        let workloads = [
            (
                "micro --size 1048576 --mode update --rows 10 --index hash",
                2,
            ),
            ("tpcb --scale 2 --pad --affinity", 2),
            ("tpcc --warehouses 4 --mix payment=100 --terminal-times", 2),
            ("tpce --customers 1000 --trade-days 2 --analytics 1", 1),
            ("tpch --scale-factor 0.01 --queries 1,6", 1),
            (
                "chbench --warehouses 1 --analytic-streams 1 --queries 1,6",
                1,
            ),
        ];
        for (w, threads) in workloads {
            let line: Vec<String> = format!("oltpscope simulate {w} --engine disk --threads {threads} --seed 7 --bpool-size 64MB")
                .split(' ')
                .map(String::from)
                .collect();
            let cli =
                crate::args::Cli::try_parse_from(&line).unwrap_or_else(|e| panic!("{w}: {e}"));
            let crate::args::Cmd::Simulate { workload: Some(rw) } = cli.cmd else {
                panic!("{w}: not a simulate command")
            };
            let (c, child, _) =
                crate::commands::traced_workload(&rw).unwrap_or_else(|e| panic!("{w}: {e}"));
            let spec = child_spec(c, child, 0, 1);
            let load = load_spec(c, &spec, std::path::Path::new("/d/db"));
            let mut args = vec!["oltpscope".to_string()];
            args.extend(load.to_args());
            let text = args.join(" ");
            crate::args::Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(
                text.contains(" --db /d/db")
                    && text.contains(" --seed 7")
                    && text.contains(&format!(" --threads {threads}")),
                "{text}"
            );
            assert!(text.contains(" --bpool-size 67108864"), "{text}");
            for run_only in [
                "--mix",
                "--mode",
                "--rows",
                "--affinity",
                "--analytics",
                "--queries",
                "--streams",
                "--analytic-streams",
            ] {
                assert!(!text.contains(run_only), "{text}");
            }
        }
    }

    /// `--until-settled` alone is 2%, a value is a percentage, and either makes --txns
    /// the cap of the measured transactions whatever the warm-up; without it a fixed
    /// warm-up reads the trace to its end.
    #[test]
    fn until_settled_sets_the_rule_and_the_cap() {
        let cfg = |line: &str| {
            let rw = parse_simulate(line);
            let (c, _, _) = crate::commands::traced_workload(&rw).unwrap();
            config(c).unwrap()
        };
        let base = "oltpscope simulate tpcc --engine disk --txns 3000 --warmup-txns 500";
        let c = cfg(&format!("{base} --until-settled"));
        assert_eq!(c.settle.map(|r| r.rel), Some(0.02));
        assert_eq!(
            (c.measure_txns, c.warmup_txns, c.warmup_auto),
            (Some(3000), 500, false)
        );
        let c = cfg(&format!("{base} --until-settled 3%"));
        assert_eq!(c.settle.map(|r| r.rel), Some(0.03));
        let c = cfg(&format!("{base} --until-settled 2.5 --no-3c"));
        assert_eq!(c.settle.map(|r| r.rel), Some(0.025));
        let c = cfg(base);
        assert_eq!((c.settle, c.measure_txns), (None, None));
    }

    /// SQLite's database alone is loaded natively (the disk and memory engines' figures
    /// move when reopened: `loads_natively`).
    #[test]
    fn only_sqlite_is_loaded_natively() {
        for (engine, native) in [("disk", false), ("sqlite", true), ("memory", false)] {
            let rw = parse_simulate(&format!(
                "oltpscope simulate tpcc --engine {engine} --txns 10"
            ));
            let (c, child, _) = crate::commands::traced_workload(&rw).unwrap();
            assert_eq!(loads_natively(c), native, "{engine}");
            let mut line = vec!["oltpscope".to_string()];
            line.extend(child_spec(c, child, 0, 1).to_args());
            crate::args::Cli::try_parse_from(&line)
                .unwrap_or_else(|e| panic!("{}: {e}", line.join(" ")));
        }
    }
}
