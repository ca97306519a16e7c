//! What each command does: build the workload and engine options from the arguments,
//! refuse what cannot work, run, print.

use crate::args::*;
use crate::output::{write_results, JsonOut};
use api::{EngineOptions, IndexKind, LogMode};
use driver::{RunConfig, Stop};
use std::io::IsTerminal;
use workloads::chbench::{ChConfig, Chbench};
use workloads::htap::{Hybrid, HybridConfig, Kit, Priority};
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::tpce::analytics::TpceHybrid;
use workloads::tpce::{Tpce, TpceConfig};
use workloads::tpch::{Tpch, TpchConfig};
use workloads::Workload;

fn no_workload(cmd: &str) -> String {
    // `steps place` places CTX points in transactions: not in TPC-H's queries.
    let list = if matches!(cmd, "load" | "check" | "run" | "profile" | "simulate") {
        "micro, tpcb, tpcc, tpce, tpch or chbench"
    } else {
        "micro, tpcb, tpcc or tpce"
    };
    format!("`oltpscope {cmd}` needs a workload: {list} (e.g. `oltpscope {cmd} tpcb --help`)")
}

pub fn dispatch(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Run { workload } => match workload.ok_or_else(|| no_workload("run"))? {
            RunWorkload::Micro(a) => micro_run(&a),
            RunWorkload::Tpcb(a) => run(&tpcb(&a.data, Some(&a.txn), a.common.threads)?, &a.common),
            RunWorkload::Tpcc(a) => {
                if a.txn.terminal_times && a.common.rate.is_some() {
                    return Err(
                        "--terminal-times and --rate are two ways to pace a run: give one".into(),
                    );
                }
                run(&tpcc(&a.data, Some(&a.txn))?, &a.common)
            }
            RunWorkload::Tpce(a) => tpce_run(&a.data, &a.txn, &a.common, None),
            RunWorkload::Tpch(a) => {
                let wl = tpch_power(&a.data, &a.txn)?;
                run(&wl, &power_opts(&wl, &a.common)?)
            }
            RunWorkload::Chbench(a) => hybrid(&a.data, &a.txn, &a.ch, &a.common, None),
        },
        Cmd::Profile { workload } => match workload.ok_or_else(|| no_workload("profile"))? {
            RunWorkload::Micro(a) => run_with(
                &micro(&a.data, Some(&a.txn))?,
                &a.common.run,
                Some(&a.common),
            ),
            RunWorkload::Tpcb(a) => {
                let wl = tpcb(&a.data, Some(&a.txn), a.common.run.threads)?;
                run_with(&wl, &a.common.run, Some(&a.common))
            }
            RunWorkload::Tpcc(a) => {
                if a.txn.terminal_times && a.common.run.rate.is_some() {
                    return Err(
                        "--terminal-times and --rate are two ways to pace a run: give one".into(),
                    );
                }
                run_with(
                    &tpcc(&a.data, Some(&a.txn))?,
                    &a.common.run,
                    Some(&a.common),
                )
            }
            RunWorkload::Tpce(a) => tpce_run(&a.data, &a.txn, &a.common.run, Some(&a.common)),
            RunWorkload::Tpch(a) => {
                let wl = tpch_power(&a.data, &a.txn)?;
                run_with(&wl, &power_opts(&wl, &a.common.run)?, Some(&a.common))
            }
            RunWorkload::Chbench(a) => {
                hybrid(&a.data, &a.txn, &a.ch, &a.common.run, Some(&a.common))
            }
        },
        Cmd::Load { workload } => match workload.ok_or_else(|| no_workload("load"))? {
            DataWorkload::Micro(a) => load(&micro(&a.data, None)?, &a.common),
            DataWorkload::Tpcb(a) => load(&tpcb(&a.data, None, a.common.threads)?, &a.common),
            DataWorkload::Tpcc(a) => load(&tpcc(&a.data, None)?, &a.common),
            DataWorkload::Tpce(a) => load(&tpce(&a.data, None)?, &a.common),
            DataWorkload::Tpch(a) => load(&tpch(&a.data)?, &a.common),
            DataWorkload::Chbench(a) => load(&chbench(&a.data, None, 1)?, &a.common),
        },
        Cmd::Simulate { workload } => {
            let w = workload.ok_or_else(|| no_workload("simulate"))?;
            let (c, child, names) = traced_workload(&w)?;
            crate::simulate::simulate(c, child, &names)
        }
        Cmd::Steps {
            cmd: StepsCmd::Place { workload },
        } => {
            let w = workload.ok_or_else(|| no_workload("steps place"))?;
            if matches!(w, RunWorkload::Tpch(_)) {
                return Err("`steps place` places CTX points for transactions: TPC-H's queries are not traced by it".into());
            }
            let (c, child, _) = traced_workload(&w)?;
            if c.as_ref().engine.is_external() {
                return Err("`steps place` places CTX points in oltpscope's own engines".into());
            }
            crate::steps::place(c, child)
        }
        Cmd::Check { workload } => match workload.ok_or_else(|| no_workload("check"))? {
            DataWorkload::Micro(a) => check(&micro(&a.data, None)?, &a.common),
            DataWorkload::Tpcb(a) => check(&tpcb(&a.data, None, 1)?, &a.common),
            DataWorkload::Tpcc(a) => check(&tpcc(&a.data, None)?, &a.common),
            DataWorkload::Tpce(a) => check(&tpce(&a.data, None)?, &a.common),
            DataWorkload::Tpch(a) => check(&tpch(&a.data)?, &a.common),
            DataWorkload::Chbench(a) => check(&chbench(&a.data, None, 1)?, &a.common),
        },
        Cmd::Drop(a) => {
            println!(
                "{}",
                crate::dbdir::drop_database(&a.db, a.log_dir.as_deref())?
            );
            Ok(())
        }
        Cmd::Compare(a) => crate::labcmd::compare(&a),
        Cmd::Sweep(a) => crate::labcmd::sweep(&a),
        Cmd::Plot(a) => crate::labcmd::plot(&a),
        Cmd::Reproduce(a) => crate::labcmd::reproduce(&a),
        Cmd::Merge(a) => crate::labcmd::merge(&a),
        Cmd::Crashtest(a) => crashtest(&a),
    }
}

/// `oltpscope crashtest`: the engine's questions answered here (the harness knows no
/// engine), the trials run by the `crashtest` crate; a failed trial exits with 1.
fn crashtest(a: &CrashArgs) -> Result<(), String> {
    let d = a.engine.descriptor();
    if !d.durable || a.engine.is_external() {
        return Err(format!(
            "crashtest needs a durable engine of oltpscope's own: the {} engine does not recover here (use --engine disk, memory, mvcc or partitioned)",
            a.engine.as_str()
        ));
    }
    let config = crashtest::Config {
        exe: std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?,
        engine: a.engine.as_str().to_string(),
        db_in_log_dir: a.engine == EngineName::Memory,
        checkpoints: if a.engine == EngineName::Disk {
            crashtest::Checkpoints::Interval
        } else if d.db_is_log {
            crashtest::Checkpoints::LogGrowth
        } else {
            crashtest::Checkpoints::None
        },
        workload: match a.workload {
            CrashWorkload::Tpcb => crashtest::CrashWorkload::Tpcb { scale: a.scale },
            CrashWorkload::Tpcc => crashtest::CrashWorkload::Tpcc {
                warehouses: a.warehouses,
            },
        },
        trials: a.trials,
        threads: a.threads,
        max_kill_ms: a.max_kill_ms,
        seed: a.seed,
        keep: a.keep.clone(),
        enospc: a.enospc,
    };
    match crashtest::crashtest(&config)? {
        crashtest::Outcome::Passed => Ok(()),
        crashtest::Outcome::Failed(why) => {
            eprintln!("error: {why}");
            std::process::exit(1);
        }
    }
}

/// A traced workload's `simulate` options.
fn sim_of<C: clap::Args + AsRef<SimOpts>>(w: &RunWorkload<C>) -> &SimOpts {
    match w {
        RunWorkload::Micro(a) => a.common.as_ref(),
        RunWorkload::Tpcb(a) => a.common.as_ref(),
        RunWorkload::Tpcc(a) => a.common.as_ref(),
        RunWorkload::Tpce(a) => a.common.as_ref(),
        RunWorkload::Tpch(a) => a.common.as_ref(),
        RunWorkload::Chbench(a) => a.common.as_ref(),
    }
}

/// A workload to run under the tracer (`simulate`, `steps place`): its options checked
/// here, so errors come before valgrind starts, and the child's workload specification built
/// from what was parsed.
pub(crate) fn traced_workload<C: clap::Args + AsRef<SimOpts>>(
    w: &RunWorkload<C>,
) -> Result<(&C, runspec::Workload, crate::simulate::Names), String> {
    let sim = sim_of(w);
    let engine = sim.engine;
    if engine == EngineName::Postgres
        && (!sim.steps_team.is_empty() || sim.coroutines.is_some_and(|n| n > 1))
    {
        return Err(format!(
            "--steps-team and --coroutines switch inside oltpscope's own engines: {} runs each transaction in a backend process",
            external_program(engine)
        ));
    }
    crate::args::interleave_fits(sim.interleave, sim.interleave_group, engine)?;
    if sim.btree_levels
        && !matches!(
            engine,
            EngineName::Memory | EngineName::Mvcc | EngineName::Disk
        )
    {
        return Err(format!(
            "--btree-levels: the {} engine has no B+tree that marks its levels (the memory, mvcc and disk engines do)",
            engine.as_str()
        ));
    }
    if sim.interleave_min_table.is_some() && engine != EngineName::Memory {
        return Err("--interleave-min-table is an option of the memory engine".into());
    }
    let (common, names) = match w {
        RunWorkload::Micro(a) => {
            let names = sim_fits(&micro(&a.data, Some(&a.txn))?, a.common.as_ref())?;
            (&a.common, names)
        }
        RunWorkload::Tpcb(a) => {
            let threads = a.common.as_ref().threads;
            let names = sim_fits(&tpcb(&a.data, Some(&a.txn), threads)?, a.common.as_ref())?;
            (&a.common, names)
        }
        RunWorkload::Tpcc(a) => {
            let names = sim_fits(&tpcc(&a.data, Some(&a.txn))?, a.common.as_ref())?;
            (&a.common, names)
        }
        RunWorkload::Tpce(a) if a.txn.analytics > 0 => {
            let c = a.common.as_ref();
            let alone = a.txn.alone.then_some("--alone is");
            hybrid_sim_refusals("tpce --analytics N", "TPC-E", c, alone, 1)?;
            let names = sim_fits(
                &tpce_hybrid(
                    &a.data,
                    &a.txn,
                    c.threads as usize,
                    a.txn.analytics as usize,
                )?,
                c,
            )?;
            (&a.common, names)
        }
        RunWorkload::Tpce(a) => {
            if a.txn.queries.is_some() || a.txn.alone {
                return Err("--queries and --alone go with --analytics N".into());
            }
            let names = sim_fits(&tpce(&a.data, Some(&a.txn))?, a.common.as_ref())?;
            (&a.common, names)
        }
        RunWorkload::Tpch(a) => {
            let c = a.common.as_ref();
            crate::simulate::check_query_steps(c)?;
            if engine == EngineName::Postgres && a.txn.streams.is_some() {
                return Err("simulate tpch --engine postgres traces the power test's one backend: --streams is refused".into());
            }
            if a.txn.query_threads > 1 {
                return Err(
                    "simulate tpch traces one thread per stream: --query-threads is refused".into(),
                );
            }
            if a.txn.answers.is_some() {
                return Err("--answers is an option of `run tpch` and `profile tpch` (the traced run writes no answers)".into());
            }
            let wl = tpch_power(&a.data, &a.txn)?;
            let names = sim_fits(&wl, c)?;
            (&a.common, names)
        }
        RunWorkload::Chbench(a) => {
            let c = a.common.as_ref();
            let alone =
                (a.ch.alone || a.ch.analytics_only).then_some("--alone and --analytics-only are");
            hybrid_sim_refusals("chbench", "TPC-C", c, alone, a.ch.query_threads)?;
            let names = sim_fits(&chbench(&a.data, Some((&a.txn, &a.ch)), c.threads)?, c)?;
            (&a.common, names)
        }
    };
    Ok((common, crate::spec::workload(w), names))
}

/// What `simulate` refuses of a hybrid run (`simulate chbench`, `simulate tpce
/// --analytics N`: `what`), whose transactions are `label`'s, before valgrind starts.
/// `alone`: the refused flags' words when --alone (or --analytics-only) was given.
fn hybrid_sim_refusals(
    what: &str,
    label: &str,
    c: &SimOpts,
    alone: Option<&str>,
    query_threads: usize,
) -> Result<(), String> {
    if c.engine == EngineName::Postgres {
        return Err(format!("simulate {what} --engine postgres is not supported: its native baseline run would need the traced run's length, which a timed hybrid run does not have"));
    }
    if let Some(flags) = alone {
        return Err(format!("simulate {what} traces {label} beside the analytical streams: {flags} refused (simulate tpch traces queries alone)"));
    }
    if c.runs_coroutines() {
        return Err("--coroutines, --steps-team and --interleave are not supported by a hybrid run (one stream per thread)".into());
    }
    if query_threads > 1 {
        return Err(format!(
            "simulate {what} traces one thread per stream: --query-threads is refused"
        ));
    }
    Ok(())
}

/// The micro-benchmark; `txn` None (load, check): the transactions do not matter.
fn micro(d: &MicroData, txn: Option<&MicroTxn>) -> Result<Micro, String> {
    let columns = match d.columns {
        ColumnsArg::Long => Columns::Long,
        ColumnsArg::String => Columns::String,
    };
    let row = MicroConfig::row_size(columns) as u64;
    let keys = match (d.keys, d.size) {
        (Some(k), _) => k,
        (None, Some(bytes)) => {
            if bytes < row {
                return Err(format!("--size {bytes} is smaller than one {row}-byte row"));
            }
            bytes / row
        }
        (None, None) => (10u64 << 20) / row,
    };
    let (rows, mode, dist) = match txn {
        Some(t) => (t.rows, t.mode, t.distribution.to_distribution(t.theta)),
        None => (1, ModeArg::Read, Distribution::Uniform),
    };
    Micro::new(MicroConfig {
        keys,
        rows_per_txn: rows,
        mode: match mode {
            ModeArg::Read => Mode::Read,
            ModeArg::Update => Mode::Update,
        },
        columns,
        distribution: dist,
        index: match d.index {
            IndexArg::Btree => IndexKind::BTree,
            IndexArg::Hash => IndexKind::Hash,
        },
    })
}

impl DistArg {
    fn to_distribution(self, theta: f64) -> Distribution {
        match self {
            DistArg::Uniform => Distribution::Uniform,
            DistArg::Zipf => Distribution::Zipf { theta },
        }
    }
}

fn tpcb(d: &TpcbData, txn: Option<&TpcbTxn>, threads: u32) -> Result<Tpcb, String> {
    Tpcb::new(
        TpcbConfig {
            scale: d.scale,
            pad: d.pad,
            affinity: txn.is_some_and(|t| t.affinity),
        },
        threads as usize,
    )
}

fn tpcc(d: &TpccData, txn: Option<&TpccTxn>) -> Result<Tpcc, String> {
    Tpcc::new(TpccConfig {
        warehouses: d.warehouses,
        mix: txn
            .and_then(|t| t.mix)
            .unwrap_or(workloads::tpcc::DEFAULT_MIX),
        affinity: txn.is_some_and(|t| t.affinity),
        terminal_times: txn.is_some_and(|t| t.terminal_times),
        ..TpccConfig::default()
    })
}

fn tpce(d: &TpceData, txn: Option<&TpceTxn>) -> Result<Tpce, String> {
    Tpce::new(TpceConfig {
        customers: d.customers,
        trade_hours: d.trade_days * workloads::tpce::gen::HOURS_PER_DAY as u32,
        mix: txn
            .and_then(|t| t.mix)
            .unwrap_or(workloads::tpce::DEFAULT_MIX),
        ..TpceConfig::default()
    })
}

fn tpch(d: &TpchData) -> Result<Tpch, String> {
    Tpch::new(TpchConfig {
        scale_factor: d.scale_factor,
        ..TpchConfig::default()
    })
}

/// TPC-H's performance test of the queries `txn` names (default: all 22): the power
/// test, and the throughput test of `--streams` streams.
fn tpch_power(d: &TpchData, txn: &TpchTxn) -> Result<Tpch, String> {
    let chosen = txn
        .query
        .as_ref()
        .or(txn.queries.as_ref())
        .map(|q| q.0.as_slice());
    if let Some(dir) = &txn.answers {
        workloads::tpch::answers::prepare(dir)?;
    }
    let streams = match txn.streams {
        None => 0,
        Some(Streams(None)) => workloads::tpch::power::min_streams(d.scale_factor),
        Some(Streams(Some(n))) => n,
    };
    Tpch::new(TpchConfig {
        scale_factor: d.scale_factor,
        queries: workloads::tpch::power::stream_order(chosen),
        refresh: !txn.no_refresh,
        streams,
        query_threads: txn.query_threads,
        answers: txn.answers.clone(),
        ..TpchConfig::default()
    })
}

/// The performance test's options: the power test's stream on one thread and each
/// throughput stream on one more, no warm-up, each stream's steps once (`--txns` set
/// to their number). `--threads`, `--txns`, `--rate` or coroutines given are refused:
/// the streams set them.
fn power_opts(wl: &Tpch, c: &RunOpts) -> Result<RunOpts, String> {
    if c.threads != 1 {
        return Err(format!(
            "a TPC-H run has a thread per stream: --threads {} is refused (--streams S runs S query streams beside the power test's)",
            c.threads
        ));
    }
    if c.txns.is_some() {
        return Err(
            "a TPC-H run runs each query once per stream: --txns is refused (--queries chooses them)"
                .into(),
        );
    }
    if c.rate.is_some() {
        return Err("a TPC-H run runs its queries back to back: --rate is refused".into());
    }
    if c.coroutines.is_some_and(|n| n > 1) {
        return Err("a TPC-H run's streams are threads: --coroutines is refused".into());
    }
    let mut c = c.clone();
    c.threads = 1 + wl.cfg.streams as u32;
    c.txns = Some(
        (0..c.threads as usize)
            .map(|id| wl.stream_txns(id, c.threads as usize, 0).unwrap_or(0))
            .sum(),
    );
    c.warmup = 0.0;
    Ok(c)
}

/// CH-benCHmark; `txn` None (load, check): the run's settings do not matter.
/// `threads`: `--threads`, the TPC-C workers (none with `--analytics-only`).
fn chbench(
    d: &TpccData,
    txn: Option<(&TpccTxn, &ChbenchTxn)>,
    threads: u32,
) -> Result<Chbench, String> {
    let ch = txn.map(|t| t.1);
    let tpcc_threads = if ch.is_some_and(|c| c.analytics_only) {
        0
    } else {
        threads as usize
    };
    let streams = ch.map_or(1, |c| c.analytic_streams as usize);
    chbench_of(d, txn, tpcc_threads, streams)
}

/// CH-benCHmark with `tpcc_threads` TPC-C workers and `streams` analytical streams.
fn chbench_of(
    d: &TpccData,
    txn: Option<(&TpccTxn, &ChbenchTxn)>,
    tpcc_threads: usize,
    streams: usize,
) -> Result<Chbench, String> {
    let tpcc = tpcc(d, txn.map(|t| t.0))?;
    let ch = txn.map(|t| t.1);
    Chbench::new(ChConfig {
        tpcc: tpcc.cfg,
        tpcc_threads,
        streams,
        queries: workloads::chbench::queries::stream_order(
            ch.and_then(|c| c.queries.as_ref()).map(|q| q.0.as_slice()),
        ),
        query_threads: ch.map_or(1, |c| c.query_threads),
        priority: ch.map_or(Priority::Normal, |c| c.analytics_priority),
    })
}

/// `run chbench` (or `profile chbench` with `prof`).
fn hybrid(
    d: &TpccData,
    txn: &TpccTxn,
    ch: &ChbenchTxn,
    c: &RunOpts,
    prof: Option<&ProfOpts>,
) -> Result<(), String> {
    let wl = chbench(d, Some((txn, ch)), c.threads)?;
    if wl.cfg.txn_threads == 0 && txn.terminal_times {
        return Err("--analytics-only runs no TPC-C worker: --terminal-times is refused".into());
    }
    if ch.alone && txn.terminal_times {
        return Err(
            "--alone's analytics-alone run has no TPC-C worker: --terminal-times is refused".into(),
        );
    }
    let make = |t: usize, a: usize| chbench_of(d, Some((txn, ch)), t, a);
    hybrid_run(&wl, make, ch.alone, c, prof)
}

/// `run tpce` (or `profile tpce` with `prof`): TPC-E alone, or with --analytics N its
/// hybrid mix.
fn tpce_run(
    d: &TpceData,
    txn: &TpceTxn,
    c: &RunOpts,
    prof: Option<&ProfOpts>,
) -> Result<(), String> {
    if txn.analytics == 0 {
        if txn.queries.is_some() {
            return Err(
                "--queries chooses the queries of the analytical streams: give --analytics N"
                    .into(),
            );
        }
        if txn.alone {
            return Err(
                "--alone compares TPC-E with its analytical streams: give --analytics N".into(),
            );
        }
        if txn.analytics_priority != Priority::Normal {
            return Err(
                "--analytics-priority sets the analytical streams' priority: give --analytics N"
                    .into(),
            );
        }
        return run_with(&tpce(d, Some(txn))?, c, prof);
    }
    let make = |t: usize, a: usize| tpce_hybrid(d, txn, t, a);
    let wl = make(c.threads as usize, txn.analytics as usize)?;
    hybrid_run(&wl, make, txn.alone, c, prof)
}

/// TPC-E's hybrid mix with `txn_threads` TPC-E workers and `streams` analytical
/// streams running `txn`'s queries.
fn tpce_hybrid(
    d: &TpceData,
    txn: &TpceTxn,
    txn_threads: usize,
    streams: usize,
) -> Result<TpceHybrid, String> {
    TpceHybrid::new(
        tpce(d, Some(txn))?,
        HybridConfig {
            txn_threads,
            streams,
            queries: workloads::tpce::analytics::stream_order(
                txn.queries.as_ref().map(|q| q.0.as_slice()),
            ),
            query_threads: 1,
            priority: txn.analytics_priority,
        },
    )
}

/// A hybrid run `wl`; with `alone`, the three runs of `--alone`, each a workload
/// `make(transaction workers, streams)` makes.
fn hybrid_run<K: Kit>(
    wl: &Hybrid<K>,
    make: impl Fn(usize, usize) -> Result<Hybrid<K>, String>,
    alone: bool,
    c: &RunOpts,
    prof: Option<&ProfOpts>,
) -> Result<(), String> {
    let opts = hybrid_opts(wl, c)?;
    if !alone {
        return run_with(wl, &opts, prof);
    }
    if prof.is_some() {
        return Err("--alone is an option of `run` (profile one of its runs at a time)".into());
    }
    alone_runs(wl, make, c)
}

/// `--alone`: the transactions alone, the analytical streams alone, then both, each
/// for --duration on the database loaded afresh (the load is a function of the
/// kit's settings and seed, so the three start from the same data); each run's report,
/// then the rates side by side and the slowdown ratios (`alone`).
fn alone_runs<K: Kit>(
    wl: &Hybrid<K>,
    make: impl Fn(usize, usize) -> Result<Hybrid<K>, String>,
    c: &RunOpts,
) -> Result<(), String> {
    let label = wl.kit.txn_label();
    if wl.cfg.streams == 0 || wl.cfg.txn_threads == 0 {
        return Err(format!(
            "--alone compares {label} with analytical streams: it needs both (--threads and the streams at least 1)"
        ));
    }
    if c.no_load {
        return Err(
            "--alone loads the database afresh for each of its three runs: --no-load is refused"
                .into(),
        );
    }
    if c.rate.is_some() {
        return Err(
            "--alone's analytics-alone run has no transaction worker to pace: --rate is refused"
                .into(),
        );
    }
    let (json, out) = JsonOut::open_with_dir(c.json.as_deref(), c.out.as_deref())?;
    let mut done: Vec<Done> = Vec::new();
    for (i, (title, txn, streams)) in crate::alone::PHASES.iter().enumerate() {
        let t = if *txn { wl.cfg.txn_threads } else { 0 };
        let a = if *streams { wl.cfg.streams } else { 0 };
        eprintln!("--alone: run {} of 3: {title}", i + 1);
        let run = make(t, a).and_then(|w| {
            let mut ci = hybrid_opts(&w, c)?;
            // The database the first run loaded is loaded again: the same data.
            ci.reload |= i > 0;
            let prep = prepare_run(&w, &ci, None)?;
            measure_run(&w, &ci, prep)
        });
        match run {
            Ok(d) => {
                json.text(&format!("== {title} ==\n{}", d.text));
                done.push(d);
            }
            Err(e) => return abandon(&json, out, e),
        }
    }
    let runs = [&done[0].report, &done[1].report, &done[2].report];
    let (text, summary) = crate::alone::summary(label, runs, wl.kit_types());
    json.text(&text);
    let value = serde_json::json!({
        "alone": summary,
        "transactions_alone": done[0].value,
        "analytics_alone": done[1].value,
        "together": done[2].value,
    });
    json.write(&value)?;
    if let Some(o) = out {
        let mut config = results_config(false, wl, &done[2]);
        config["alone"] = serde_json::json!(true);
        write_results(o, &value, Some(&done[2].report), config)?;
    }
    if done.iter().any(|d| !d.report.checks.passed) {
        eprintln!("error: consistency check failed");
        std::process::exit(1);
    }
    Ok(())
}

/// A hybrid run's options: the driver's threads are the transaction workers and the
/// analytical streams together (workers are numbered the kit's first). Refused: --txns
/// (a hybrid run is timed), and coroutines, STEPS teams and --interleave, which
/// number streams otherwise.
pub(crate) fn hybrid_opts<K: Kit>(wl: &Hybrid<K>, c: &RunOpts) -> Result<RunOpts, String> {
    let name = wl.kit.name();
    if c.txns.is_some() {
        return Err(format!(
            "a hybrid run ({name} with analytical streams) is timed: --txns is refused (give --duration)"
        ));
    }
    if c.coroutines.is_some_and(|n| n > 1) || c.steps_team.is_some() || c.interleave > 1 {
        return Err(format!(
            "--coroutines, --steps-team and --interleave are not supported by a hybrid run ({name}: one stream per thread)"
        ));
    }
    if wl.cfg.txn_threads == 0 && c.rate.is_some() {
        return Err(format!(
            "this run has no {} worker: --rate is refused",
            wl.kit.txn_label()
        ));
    }
    let mut c = c.clone();
    c.threads = (wl.cfg.txn_threads + wl.cfg.streams) as u32;
    Ok(c)
}

fn log_mode(l: LogArg) -> LogMode {
    match l {
        LogArg::Off => LogMode::Off,
        LogArg::Async => LogMode::Async,
        LogArg::Sync => LogMode::Sync,
    }
}

/// The engine and its options, refusing options that the engine would not use.
/// `prewarm`: `run --prewarm` (the disk engine's pool, PostgreSQL's kept cluster).
/// `fallback`: the engine when neither --engine nor the directory says (None: there
/// must be a database to find).
fn engine_setup(
    db: &DbArgs,
    disk: &DiskTuning,
    prewarm: bool,
    log: Option<LogArg>,
    fallback: Option<EngineName>,
) -> Result<(EngineName, EngineOptions), String> {
    let dir = db.db.as_deref().or(db.log_dir.as_deref());
    let engine = crate::dbdir::resolve(db.engine, dir, fallback)?;
    let mut o = EngineOptions {
        log: log_mode(log.unwrap_or(LogArg::Off)),
        ..EngineOptions::default()
    };
    let on = |e: EngineName| format!("(this command uses the {} engine)", e.as_str());
    if engine != EngineName::Sqlite && db.sqlite.sqlite_sync.is_some() {
        return Err(format!(
            "--sqlite-sync is an option of the sqlite engine {}",
            on(engine)
        ));
    }
    if engine != EngineName::Postgres {
        if let Some(f) = db.postgres.first_given() {
            return Err(format!(
                "{f} is an option of the postgres engine {}",
                on(engine)
            ));
        }
    }
    if prewarm && !matches!(engine, EngineName::Disk | EngineName::Postgres) {
        return Err(format!(
            "--prewarm is an option of the disk and postgres engines {}",
            on(engine)
        ));
    }
    if engine != EngineName::Disk {
        if let Some(f) = disk.first_given() {
            return Err(format!(
                "{f} is an option of the disk engine {}",
                on(engine)
            ));
        }
    }
    // Where the database goes (and which of --db, --log-dir and --log the engine
    // refuses): the engine's own rule.
    let given = api::Given {
        db: db.db.as_deref(),
        log_dir: db.log_dir.as_deref(),
        log: log.map(log_mode),
    };
    let place = (engine.descriptor().place)(&given).map_err(|e| e.to_string())?;
    (o.db_dir, o.log_dir) = (place.db_dir, place.log_dir);
    // The engine's own settings, from its flags.
    match engine {
        EngineName::Postgres => {
            o = o.with_own(engine_postgres::PostgresOptions {
                isolation: match db.postgres.isolation {
                    Some(IsolationArg::RepeatableRead) => {
                        engine_postgres::Isolation::RepeatableRead
                    }
                    Some(IsolationArg::ReadCommitted) => engine_postgres::Isolation::ReadCommitted,
                    Some(IsolationArg::Serializable) | None => {
                        engine_postgres::Isolation::Serializable
                    }
                },
                url: db.postgres.pg_url.clone(),
                copy_load: true,
                synchronous_commit: db.postgres.pg_sync != Some(OnOff::Off),
                batch_inserts: true,
                defer_updates: true,
                prewarm,
            });
        }
        EngineName::Sqlite => {
            o = o.with_own(engine_sqlite::SqliteOptions {
                sync: match db.sqlite.sqlite_sync {
                    Some(SqliteSyncArg::Off) => engine_sqlite::SyncMode::Off,
                    Some(SqliteSyncArg::Full) => engine_sqlite::SyncMode::Full,
                    Some(SqliteSyncArg::Normal) | None => engine_sqlite::SyncMode::Normal,
                },
            });
        }
        EngineName::Disk => {
            o = o.with_own(engine_disk::DiskOptions {
                bpool_bytes: disk.bpool_size,
                escalation: disk.escalation,
                checkpoint_ms: disk.checkpoint_ms,
                prewarm,
                prewarm_progress: engine_disk::PrewarmProgress(Some(prewarm_progress)),
            });
        }
        _ => {}
    }
    Ok((engine, o))
}

/// The disk engine's `--prewarm` progress (pages read, pages to read): a bar on a
/// terminal; otherwise, once it has taken 10 s, a plain line every 10 s (a small pool
/// prewarms in well under that, silently).
fn prewarm_progress(done: u64, total: u64) {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    const EVERY: Duration = Duration::from_secs(10);
    static STATE: Mutex<Option<(Instant, Instant, Option<indicatif::ProgressBar>)>> =
        Mutex::new(None);
    let mut st = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let now = Instant::now();
    let (start, last, bar) = st.get_or_insert_with(|| {
        let bar = (std::io::stderr().is_terminal())
            .then(|| bar(total, "prewarm [{bar:20}] {pos}/{len} pages, eta {eta}"));
        (now, now, bar)
    });
    match bar {
        Some(b) => {
            b.set_length(total);
            b.set_position(done);
            if done >= total {
                b.finish_and_clear();
            }
        }
        None if now - *last >= EVERY => {
            *last = now;
            eprintln!(
                "[{:>6.0}s] prewarm: {done} of {total} pages read into the buffer pool",
                (now - *start).as_secs_f64()
            );
        }
        None => {}
    }
    if done >= total {
        *st = None;
    }
}

/// A progress bar of `len` steps drawn with `template` (a terminal's: its callers
/// print plain lines otherwise).
pub(crate) fn bar(len: u64, template: &str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("static template")
            .progress_chars("=> "),
    );
    b
}

/// The other program an external engine's time is spent in.
fn external_program(e: EngineName) -> &'static str {
    e.descriptor().external.unwrap_or("none")
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Refuse a database that cannot fit in memory, before spending minutes loading it.
/// The disk engine given a buffer pool keeps only the pool in memory: its database may
/// be larger than memory (the "memory through the buffer pool"); only the pool
/// must fit.
fn check_fits<W: Workload>(wl: &W, engine: EngineName, bpool: Option<u64>) -> Result<(), String> {
    check_fits_in(
        wl.name(),
        wl.schema().estimated_bytes(),
        engine,
        bpool,
        driver::machine::available_memory_bytes(),
    )
}

/// `check_fits` with the workload's estimated bytes and the memory available (0:
/// unknown) given.
pub fn check_fits_in(
    name: &str,
    need: u64,
    engine: EngineName,
    bpool: Option<u64>,
    have: u64,
) -> Result<(), String> {
    if let Some(bp) = bpool {
        let least = (engine_disk::bpool::MIN_FRAMES * engine_disk::page::PAGE_SIZE) as u64;
        if bp < least {
            // Said, not rounded up behind the user's back.
            return Err(format!(
                "--bpool-size {bp} bytes is below the smallest pool, {} frames of {} KiB ({} KiB)",
                engine_disk::bpool::MIN_FRAMES,
                engine_disk::page::PAGE_SIZE >> 10,
                least >> 10
            ));
        }
        if have > 0 && bp > have {
            return Err(format!(
                "--bpool-size {} is more than the {} of memory available",
                gib(bp),
                gib(have)
            ));
        }
        if engine == EngineName::Disk {
            return Ok(());
        }
    }
    if engine.is_external() {
        // Another system keeps the data on its storage, paging it through its own cache.
        return Ok(());
    }
    if have > 0 && need > have {
        let hint = if engine == EngineName::Disk {
            " (or give the disk engine a --bpool-size smaller than memory)"
        } else {
            ""
        };
        return Err(format!(
            "the {name} database needs about {} of memory and {} is available: choose a smaller size{hint}",
            gib(need),
            gib(have)
        ));
    }
    Ok(())
}

/// Whether the traced run fits (before valgrind starts); the workload's transaction
/// type names, for the simulation's per-type tables.
fn sim_fits<W: Workload>(wl: &W, c: &SimOpts) -> Result<crate::simulate::Names, String> {
    check_fits(wl, c.engine, c.disk.bpool_size)?;
    let db = DbArgs {
        engine: Some(c.engine),
        ..DbArgs::default()
    };
    engine_setup(&db, &c.disk, false, Some(c.log()), None)?;
    Ok(crate::simulate::Names::of(wl))
}

/// `run`'s logging: `--log`; else async on an in-memory engine's database kept in --db
/// or --log-dir (memory, mvcc, partitioned: it keeps logging as it was loaded); else
/// none given (off). Only `run`: `check` and the rest open a database without writing.
fn run_log(c: &RunOpts) -> Result<Option<LogArg>, String> {
    let dir = c.db.db.as_deref().or(c.db.log_dir.as_deref());
    if c.log.is_some() || dir.is_none() {
        return Ok(c.log);
    }
    let engine = crate::dbdir::resolve(c.db.engine, dir, Some(EngineName::Memory))?;
    Ok(engine.descriptor().db_is_log.then_some(LogArg::Async))
}

fn run<W: Workload>(wl: &W, c: &RunOpts) -> Result<(), String> {
    run_with(wl, c, None)
}

/// A counter file recorded elsewhere (`profile --counters-from`): its path and counters.
type Recorded = Option<(std::path::PathBuf, profiler::tmam::Counters)>;

/// `run`, or `profile` when `prof` is given: the run under the sampler, its profile
/// printed after the run's report and added to the JSON as `profile`.
fn run_with<W: Workload>(wl: &W, c: &RunOpts, prof: Option<&ProfOpts>) -> Result<(), String> {
    if !c.then_steps_team.is_empty() && (prof.is_some() || c.out.is_some()) {
        return Err(
            "--then-steps-team is simulate's traced child's: not with profile or --out".into(),
        );
    }
    let prep = prepare_run(wl, c, prof)?;
    if !c.then_steps_team.is_empty() {
        return run_steps_phases(wl, c, prep);
    }
    let (json, out) = JsonOut::open_with_dir(c.json.as_deref(), c.out.as_deref())?;
    let done = match measure_run(wl, c, prep) {
        Ok(d) => d,
        Err(e) => return abandon(&json, out, e),
    };
    json.text(&done.text);
    if c.memory.no_prefetch_hints {
        json.text("prefetch hints: ignored (--no-prefetch-hints)\n");
    }
    json.write(&done.value)?;
    if let Some(o) = out {
        let config = results_config(prof.is_some(), wl, &done);
        write_results(o, &done.value, Some(&done.report), config)?;
    }
    if !done.report.checks.passed {
        eprintln!("error: consistency check failed");
        std::process::exit(1);
    }
    // A run stopped at its memory limit or by a signal ends here, after its report.
    driver::exit_if_stopped(done.report);
    Ok(())
}

/// `run --steps-team T --then-steps-team U,V --trace-measured` (`simulate`'s child):
/// one load, then a measured phase per team size (`driver::run_phases`), each traced in
/// a window of its own; --json holds `{"phases": [report...]}` in that order.
fn run_steps_phases<W: Workload>(wl: &W, c: &RunOpts, p: Prepared) -> Result<(), String> {
    let teams: Vec<u32> = c
        .steps_team
        .iter()
        .chain(&c.then_steps_team)
        .copied()
        .collect();
    crate::args::coroutines(c.coroutines, &teams)?;
    let json = JsonOut::open(c.json.as_deref())?;
    let cfg = run_config(c, p.opts)?;
    let more: Vec<usize> = c.then_steps_team.iter().map(|&t| t as usize).collect();
    let limits = driver::Limits {
        mem_limit: c.mem_limit,
    };
    let reports =
        match driver::run_phases(p.engine.descriptor().open, wl, &cfg, &more, None, &limits) {
            Ok(r) => r,
            Err(e) => {
                json.abandon();
                return Err(e.to_string());
            }
        };
    let text: Vec<String> = reports
        .iter()
        .zip(&teams)
        .map(|(r, t)| format!("phase: STEPS team size {t}\n{}", r.to_text()))
        .collect();
    json.text(&text.join("\n"));
    let phases: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| serde_json::to_value(r).expect("reports serialize"))
        .collect();
    json.write(&serde_json::json!({ "phases": phases }))?;
    let last = reports.into_iter().last().expect("a phase at least");
    if !last.checks.passed {
        eprintln!("error: consistency check failed");
        std::process::exit(1);
    }
    driver::exit_if_stopped(last);
    Ok(())
}

/// `run micro`: one run, or a resident child's runs (`OLTPSCOPE_GATE=resident`).
fn micro_run(a: &MicroRun<RunOpts>) -> Result<(), String> {
    if driver::gate::resident().map_err(|e| e.to_string())? {
        return resident_micro(a);
    }
    run(&micro(&a.data, Some(&a.txn))?, &a.common)
}

/// The run settings a resident run's next run may change (each an option with a value):
/// its results directory, the micro-benchmark's transactions, the window's length.
/// Anything else (the data's shape, the engine and its options, threads, seed) is the
/// loaded database's.
const RESIDENT_RUN_SETTINGS: [&str; 7] = [
    "--out",
    "--mode",
    "--rows",
    "--duration",
    "--warmup",
    "--txns",
    "--distribution",
];

/// `args` without the run settings a resident run may change ([`RESIDENT_RUN_SETTINGS`]).
fn resident_shape(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        if RESIDENT_RUN_SETTINGS.contains(&flag) {
            if !a.contains('=') {
                it.next();
            }
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// `run micro` as a resident child (`OLTPSCOPE_GATE=resident`: the lab's sweep, issue
/// 41): one load, then a gated run per command on stdin, each with its own report and
/// results directory (`--out`, required), the database checked once at the end
/// (`driver::run_resident`, `driver::gate`). Each next run must be `run micro` with the
/// first one's arguments but its run settings (`RESIDENT_RUN_SETTINGS`).
fn resident_micro(a: &MicroRun<RunOpts>) -> Result<(), String> {
    let c = &a.common;
    if c.json.is_some() || c.out.is_none() || !c.then_steps_team.is_empty() {
        return Err("a resident run writes each run into its --out (required), without --json or --then-steps-team".into());
    }
    let first: Vec<String> = std::env::args().skip(1).collect();
    let shape = resident_shape(&first);
    let wl = micro(&a.data, Some(&a.txn))?;
    let prep = prepare_run(&wl, c, None)?;
    let (engine, opts) = (prep.engine, prep.opts.clone());
    let cfg = run_config(c, prep.opts)?;
    let limits = driver::Limits {
        mem_limit: c.mem_limit,
    };
    let fatal = |e: String| api::Error::fatal(e);
    let mut out = JsonOut::open_with_dir(None, c.out.as_deref())?.1;
    let next = |report: driver::Report| -> api::Result<driver::Next<Micro>> {
        let mut text = report.to_text();
        if let Some(s) = &report.stats {
            text += &crate::stats::text(s, "micro");
        }
        let value = serde_json::to_value(&report).expect("reports serialize");
        let config = serde_json::json!({
            "command": "run",
            "workload": "micro",
            "engine": engine.as_str(),
            "run": report.config.clone(),
        });
        {
            use std::io::Write;
            let mut so = std::io::stdout().lock();
            let _ = writeln!(so, "{text}{}", driver::gate::END_OF_RUN);
            let _ = so.flush();
        }
        let o = out.take().expect("each run opened its results directory");
        write_results(o, &value, Some(&report), config).map_err(fatal)?;
        eprintln!("{}", driver::gate::RUN_WRITTEN);
        let Some(args) = driver::gate::next_command(&mut std::io::stdin().lock())? else {
            return Ok(driver::Next::End);
        };
        if resident_shape(&args) != shape {
            return Err(fatal(format!(
                "the gate sent a run that differs from the first in more than its run settings ({}): a resident run keeps its database's shape, engine, threads and seed",
                RESIDENT_RUN_SETTINGS.join(", ")
            )));
        }
        let line = std::iter::once("oltpscope".to_string()).chain(args);
        let b = match <Cli as clap::Parser>::try_parse_from(line)
            .map_err(|e| fatal(one_line(&e.to_string())))?
        {
            Cli {
                cmd:
                    Cmd::Run {
                        workload: Some(RunWorkload::Micro(b)),
                    },
                ..
            } => b,
            _ => unreachable!("the same command and workload as the first run (compared above)"),
        };
        let w = micro(&b.data, Some(&b.txn)).map_err(fatal)?;
        let cfg = run_config(&b.common, opts.clone()).map_err(fatal)?;
        out = JsonOut::open_with_dir(None, b.common.out.as_deref())
            .map_err(fatal)?
            .1;
        Ok(driver::Next::Run(w, cfg))
    };
    let checks = match driver::run_resident(engine.descriptor().open, wl, cfg, &limits, next) {
        Ok(c) => c,
        Err(e) => {
            // A run's results directory opened and not written: not left behind.
            if let Some(o) = out.take() {
                o.abandon();
            }
            return Err(e.to_string());
        }
    };
    let mut text = String::new();
    for ch in &checks.list {
        text += &format!(
            "[{}] {}: {}\n",
            if ch.passed { "PASS" } else { "FAIL" },
            ch.name,
            ch.detail
        );
    }
    print!("{text}");
    if !checks.passed {
        eprintln!("error: consistency check failed");
        std::process::exit(1);
    }
    Ok(())
}

/// A refusal after the outputs were opened: remove what this command created.
fn abandon(json: &JsonOut, out: Option<lab::results::ResultsDir>, e: String) -> Result<(), String> {
    json.abandon();
    if let Some(o) = out {
        o.abandon();
    }
    Err(e)
}

/// A results directory's `config`: the command, workload, engine and the run's.
fn results_config<W: Workload>(profile: bool, wl: &W, done: &Done) -> serde_json::Value {
    serde_json::json!({
        "command": if profile { "profile" } else { "run" },
        "workload": wl.name(),
        "engine": done.engine.as_str(),
        "run": done.report.config,
    })
}

/// Whether `engine` runs a query's scans on `n` threads (`--query-threads`): memory
/// and mvcc do (within the query's transaction); disk, serial and partitioned cannot
/// read on several threads within one transaction and scan on one, as noted; the SQL
/// systems run the queries as SQL text, whose parallelism is their planner's: refused.
fn query_threads_on(engine: EngineName, n: u64) -> Result<(), String> {
    match engine {
        EngineName::Memory | EngineName::Mvcc => Ok(()),
        EngineName::Sqlite | EngineName::Postgres => Err(format!(
            "--query-threads {n}: {} runs the queries as SQL text (its planner decides their parallelism); give 1",
            external_program(engine)
        )),
        EngineName::Disk | EngineName::Serial | EngineName::Partitioned => {
            eprintln!(
                "note: --query-threads {n}: the {} engine cannot read on several threads within one transaction; each query's scans run on one thread",
                engine.as_str()
            );
            Ok(())
        }
    }
}

/// What `run` settles before opening its outputs (every refusal that needs no run).
struct Prepared {
    engine: EngineName,
    opts: EngineOptions,
    recorded: Recorded,
    profiler: Option<profiler::Profiler>,
}

/// A finished run: its report, text and JSON.
struct Done {
    engine: EngineName,
    report: driver::Report,
    text: String,
    value: serde_json::Value,
}

fn prepare_run<W: Workload>(
    wl: &W,
    c: &RunOpts,
    prof: Option<&ProfOpts>,
) -> Result<Prepared, String> {
    let (engine, opts) = engine_setup(
        &c.db,
        &c.disk,
        c.prewarm,
        run_log(c)?,
        Some(EngineName::Memory),
    )?;
    check_fits(wl, engine, c.disk.bpool_size)?;
    let query_threads = wl.config().get("query_threads").and_then(|v| v.as_u64());
    if let Some(n) = query_threads.filter(|&n| n > 1) {
        query_threads_on(engine, n)?;
    }
    let (recorded, profiler) = profiler_setup(engine, prof)?;
    if let Some(p) = &c.steps_points {
        rt::set_ctx_points(Some(crate::steps::load_points(p)?));
    }
    rt::set_trace_ctx(c.trace_ctx);
    probe::set_trace_levels(c.btree_levels);
    let opts = run_engine_options(c, engine, opts)?;
    look_before_writing(
        wl,
        engine,
        &opts,
        !c.no_load,
        "add --no-load to run on it, or --reload to discard it and load again",
    )?;
    Ok(Prepared {
        engine,
        opts,
        recorded,
        profiler,
    })
}

/// The run itself, its report and (with a profiler) its profile.
fn measure_run<W: Workload>(wl: &W, c: &RunOpts, p: Prepared) -> Result<Done, String> {
    let Prepared {
        engine,
        opts,
        recorded,
        profiler,
    } = p;
    let cores = driver::machine::cores();
    if c.threads as usize > cores {
        eprintln!(
            "note: {} worker threads on {cores} cores: workers will share cores",
            c.threads
        );
    }
    crate::args::interleave_fits(c.interleave, c.interleave_group, engine)?;
    if c.interleave > 1 && c.rate.is_some() {
        // The pacer sleeps the thread, which would hold up its other coroutines.
        return Err(
            "--rate cannot be combined with --interleave yet: give one or the other".into(),
        );
    }
    let cfg = run_config(c, opts)?;
    let obs = profiler.as_ref().map(|p| p as &dyn driver::Observer);
    let limits = driver::Limits {
        mem_limit: c.mem_limit,
    };
    if engine == EngineName::Postgres && c.db.postgres.pg_url.is_none() && !c.trace_measured {
        // Said before it happens: initdb and the server's start take seconds (minutes
        // when Debian's packages must be installed first).
        match &c.db.db {
            Some(dir) => eprintln!(
                "starting a private PostgreSQL server on a cluster kept in {} (its socket in {})",
                dir.display(),
                std::env::temp_dir().display()
            ),
            None => eprintln!(
                "starting a private PostgreSQL server in {} (removed at the end; --pg-url uses a server you have)",
                std::env::temp_dir().display()
            ),
        }
    }
    let report = driver::run_limited(engine.descriptor().open, wl, &cfg, obs, &limits)
        .map_err(|e| e.to_string())?;
    if engine == EngineName::Disk && c.log.unwrap_or(LogArg::Off) == LogArg::Off {
        // After the run, so that a refusal stays one line.
        eprintln!("note: --log off kept the disk engine's log in memory only: a crash would have lost data (a clean end is safe)");
    }
    let mut value = serde_json::to_value(&report).expect("reports serialize");
    let mut text = report.to_text();
    if let Some(s) = &report.stats {
        text += &crate::stats::text(s, wl.name());
    }
    if let Some(p) = profiler {
        profile_report(p, wl, &report, recorded, &mut text, &mut value)?;
    }
    Ok(Done {
        engine,
        report,
        text,
        value,
    })
}

/// `profile`'s set-up, before anything is created: the recorded counter file (a bad one
/// is one line, before any run) and the sampler, counting hardware events when asked and
/// the machine can.
fn profiler_setup(
    engine: EngineName,
    prof: Option<&ProfOpts>,
) -> Result<(Recorded, Option<profiler::Profiler>), String> {
    let recorded = match prof.and_then(|p| p.counters_from.as_ref()) {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| format!("cannot read {}: {e}", f.display()))?;
            Some((
                f.clone(),
                profiler::tmam::parse(&f.display().to_string(), &text)?,
            ))
        }
        None => None,
    };
    // Before anything is created: a machine that cannot count is one line.
    let mut count = false;
    if prof.is_some_and(|p| p.counters) {
        match profiler::hardware_counters_available() {
            Err(e) => eprintln!(
                "note: no hardware counters on this machine (perf_event_open of cpu-cycles: {e}): the software profile follows; `oltpscope simulate` models cache misses, and `--counters-from FILE` computes the TMAM breakdown from a capture made elsewhere"
            ),
            Ok(()) => count = true,
        }
    }
    let profiler = match prof {
        Some(p) => Some(profiler::Profiler::new(profiler::Settings {
            frequency_hz: p.frequency,
            counters: count,
            components: profiler::components::rules_for(engine.as_str()),
            // PostgreSQL's time is spent in the backend serving each worker's connection.
            target: (engine == EngineName::Postgres)
                .then_some(engine_postgres::backend_pid_of_this_thread as fn() -> Option<u32>),
        })?),
        None => None,
    };
    Ok((recorded, profiler))
}

/// `run`'s engine options past `engine_setup`: threads, reload, each engine's own
/// options (refused for an engine they do not belong to), and `--mem-reserve` made.
fn run_engine_options(
    c: &RunOpts,
    engine: EngineName,
    mut opts: EngineOptions,
) -> Result<EngineOptions, String> {
    opts.threads = c.threads as usize;
    opts.reload = c.reload;
    opts = partitioned_options(c, engine, opts)?;
    // `--checkpoint-log`: the memory, mvcc and partitioned engines' (the partitioned
    // engine's taken above).
    if let Some(b) = c.memory.checkpoint_log {
        if !matches!(
            engine,
            EngineName::Memory | EngineName::Mvcc | EngineName::Partitioned
        ) {
            return Err(format!(
                "--checkpoint-log is an option of the memory, mvcc and partitioned engines (this command uses the {} engine)",
                engine.as_str()
            ));
        }
        if engine == EngineName::Mvcc {
            opts = opts.with_own(engine_mvcc::MvccOptions {
                checkpoint_log_bytes: Some(b),
            });
        }
    }
    opts = memory_options(c, engine, opts)?;
    if engine.is_external() && (c.coroutines.is_some_and(|n| n > 1) || c.steps_team.is_some()) {
        // A connection waiting inside the other system blocks its whole thread.
        return Err(format!(
            "--coroutines and --steps-team switch inside oltpscope's own engines: the {} engine waits inside {}",
            engine.as_str(),
            external_program(engine)
        ));
    }
    if c.no_load && (!engine.is_external() || engine == EngineName::Postgres) {
        // Nothing to run on is a refusal, not a new (unloaded) database left behind
        // (PostgreSQL: a kept cluster in --db, else its own refusal without --db).
        opts.create = false;
    }
    Ok(opts)
}

/// The partitioned engine's own options, refused for any other engine.
fn partitioned_options(
    c: &RunOpts,
    engine: EngineName,
    opts: EngineOptions,
) -> Result<EngineOptions, String> {
    let pt = &c.partitioned;
    if engine == EngineName::Partitioned {
        return Ok(opts.with_own(engine_partitioned::PartitionedOptions {
            partitions: pt.partitions.map(|p| p as usize),
            ordered: match pt.ordered_index {
                Some(crate::args::OrderedIndexArg::Rbtree) => {
                    engine_partitioned::OrderedKind::RbTree
                }
                _ => engine_partitioned::OrderedKind::BTree,
            },
            // `--checkpoint-log` (declared with the memory engine's options, shared).
            checkpoint_log_bytes: c.memory.checkpoint_log,
        }));
    }
    if let Some(f) = [
        (pt.partitions.is_some(), "--partitions"),
        (pt.ordered_index.is_some(), "--ordered-index"),
    ]
    .iter()
    .find_map(|(given, f)| given.then_some(f))
    {
        return Err(format!(
            "{f} is an option of the partitioned engine (this command uses the {} engine)",
            engine.as_str()
        ));
    }
    Ok(opts)
}

/// The memory engine's own options (`--mem-reserve`, `--no-prefetch-hints`,
/// `--interleave-min-table`, `--checkpoint-log`), each but the shared `--checkpoint-log`
/// refused for another engine; the reserve at most the memory available, and made here
/// with a progress bar on a terminal.
fn memory_options(
    c: &RunOpts,
    engine: EngineName,
    opts: EngineOptions,
) -> Result<EngineOptions, String> {
    let m = &c.memory;
    if engine != EngineName::Memory {
        return match [
            (m.mem_reserve.is_some(), "--mem-reserve"),
            (m.no_prefetch_hints, "--no-prefetch-hints"),
            (m.interleave_min_table.is_some(), "--interleave-min-table"),
        ]
        .iter()
        .find_map(|(given, f)| given.then_some(f))
        {
            Some(f) => Err(format!(
                "{f} is an option of the memory engine (this command uses the {} engine)",
                engine.as_str()
            )),
            None => Ok(opts),
        };
    }
    if let Some(r) = m.mem_reserve {
        let have = driver::machine::available_memory_bytes();
        if have > 0 && r > have {
            return Err(format!(
                "--mem-reserve {} is more than the {} of memory available",
                gib(r),
                gib(have)
            ));
        }
        // The engine reserves when it opens; done here first, the reserve shows its
        // progress on a terminal (the engine then finds it made).
        if std::io::stderr().is_terminal() {
            let bar = bar(r, "mem-reserve [{bar:20}] {bytes}/{total_bytes}, eta {eta}");
            memindex::arena::reserve_with_progress(r, &mut |done, total| {
                bar.set_length(total);
                bar.set_position(done);
            });
            bar.finish_and_clear();
        }
    }
    Ok(opts.with_own(engine_memory::MemoryOptions {
        reserve_bytes: m.mem_reserve,
        checkpoint_log_bytes: m.checkpoint_log,
        ignore_hints: m.no_prefetch_hints,
        probe_min_bytes: m.interleave_min_table,
    }))
}

/// The driver's configuration of a `run` from its options.
fn run_config(c: &RunOpts, opts: EngineOptions) -> Result<RunConfig, String> {
    Ok(RunConfig {
        engine: opts,
        threads: c.threads as usize,
        warmup_s: c.warmup,
        stop: match c.txns {
            Some(n) => Stop::Txns(n),
            None => Stop::Seconds(c.duration),
        },
        seed: c.seed,
        pin: !c.no_pin,
        no_load: c.no_load,
        interactive: progress_display(c.report_interval, c.trace_measured),
        trace_measured: c.trace_measured,
        acked_file: c.acked_file.clone(),
        check: !c.no_check,
        progress_file: c.progress_file.clone(),
        rate: c.rate.map(|tps| driver::Rate {
            tps,
            poisson: c.arrivals == ArrivalsArg::Poisson,
        }),
        coroutines: crate::args::coroutines(c.coroutines, c.steps_team.as_slice())?
            .max(c.interleave) as usize,
        coroutine_seed: None,
        steps_team: c.steps_team.map(|n| n as usize),
        interleave: c.interleave > 1,
        interleave_group: c
            .interleave_group
            .map_or((c.interleave as usize / 2).max(1), |g| g as usize),
        stats: c.stats,
        timeseries: c.out.is_some(),
    })
}

/// `profile`'s part of the report: the profile, waits and lock split after the run's
/// text, and the hardware counters (measured, recorded) with their TMAM breakdown; the
/// same added to the JSON as `profile`.
fn profile_report<W: Workload>(
    p: profiler::Profiler,
    wl: &W,
    report: &driver::Report,
    recorded: Recorded,
    text: &mut String,
    value: &mut serde_json::Value,
) -> Result<(), String> {
    let counted = p.counters();
    let thread_ns = (report.duration_s * 1e9) as u64 * report.threads as u64;
    let profile = p.finish(wl.txn_types(), thread_ns)?;
    *text += &profile.to_text();
    *text += &crate::profile::waits_text(report);
    let split = crate::profile::lock_split(report, &profile);
    *text += &crate::profile::lock_split_text(split);
    value["profile"] = serde_json::to_value(&profile).expect("profiles serialize");
    if let Some(s) = split {
        value["profile"]["lock_split"] = serde_json::json!(s);
    }
    let mut counters = Vec::new();
    if let Some(c) = counted {
        counters.push(("the worker threads' measured phase".to_string(), c));
    }
    if let Some((f, c)) = recorded {
        counters.push((format!("recorded in {}", f.display()), c));
    }
    for (source, c) in counters {
        let m = profiler::tmam::compute(&c);
        *text += &format!("\nhardware counters ({source})\n");
        *text += &profiler::tmam::to_text(&m);
        value["profile"]["counters"]
            .as_array_mut()
            .map(|a| a.push(serde_json::json!({"source": source, "values": c, "metrics": m})))
            .unwrap_or_else(|| {
                value["profile"]["counters"] = serde_json::json!([
                    {"source": source, "values": c, "metrics": m}
                ]);
            });
    }
    Ok(())
}

/// How long work shows its progress: the terminal's live display (returns true), or
/// plain lines every `--report-interval` seconds on standard error (default 10 s when
/// standard error is not a terminal, so logs and pipes see progress too; 0: none). A
/// traced run is `simulate`'s child, whose output its parent owns: no lines unless asked.
fn progress_display(report_interval: Option<f64>, traced: bool) -> bool {
    let tty = std::io::stderr().is_terminal();
    let every = match report_interval {
        Some(s) => s,
        None if tty || traced => 0.0,
        None => DEFAULT_REPORT_INTERVAL_S,
    };
    driver::report::set_plain_interval(every);
    tty && report_interval.is_none()
}

/// Plain progress lines' interval off a terminal (sysbench's --report-interval).
const DEFAULT_REPORT_INTERVAL_S: f64 = 10.0;

fn load<W: Workload>(wl: &W, c: &LoadOpts) -> Result<(), String> {
    let Some(dir) = &c.db.db else {
        return Err("`oltpscope load` needs --db DIR (a database in a temporary directory would be removed at once)".into());
    };
    let tuning = DiskTuning {
        bpool_size: c.bpool_size,
        ..DiskTuning::default()
    };
    // The load is made durable at its end whatever the log mode; async keeps it fast.
    // Another database system has its own log.
    let log = match crate::dbdir::resolve(c.db.engine, Some(dir), Some(EngineName::Memory))? {
        e if e.is_external() => None,
        _ => Some(LogArg::Async),
    };
    let (engine, mut opts) = engine_setup(&c.db, &tuning, false, log, Some(EngineName::Memory))?;
    check_fits(wl, engine, c.bpool_size)?;
    if engine == EngineName::Serial {
        return Err("the serial engine keeps nothing on storage: there is nothing to load".into());
    }
    opts.threads = c.threads as usize;
    opts.reload = c.reload;
    look_before_writing(
        wl,
        engine,
        &opts,
        true,
        "run on it with `run --no-load`, or load again with --reload",
    )?;
    let interactive = progress_display(c.report_interval, false);
    if engine == EngineName::Postgres && c.db.postgres.pg_url.is_none() {
        eprintln!(
            "starting a private PostgreSQL server on a cluster kept in {} (its socket in {})",
            dir.display(),
            std::env::temp_dir().display()
        );
    }
    let secs = driver::load_only(engine.descriptor().open, wl, &opts, c.seed, interactive)
        .map_err(|e| e.to_string())?;
    // A kit without transactions (TPC-H's data, so far) is checked, not run.
    let next = if wl.txn_types().is_empty() {
        format!(
            "check it with `oltpscope check {} --db {}` and the same settings",
            wl.name(),
            dir.display()
        )
    } else {
        format!(
            "run it with `oltpscope run {} --db {} --no-load{}`",
            wl.name(),
            dir.display(),
            if engine.descriptor().db_is_log {
                " --log async"
            } else {
                ""
            }
        )
    };
    println!(
        "loaded {} ({} rows) into {} with the {} engine in {:.1} s; {next}",
        wl.name(),
        driver::report::fmt_count(wl.load_rows() as f64),
        dir.display(),
        engine.as_str(),
        secs,
    );
    Ok(())
}

/// `run` or `load` on an existing disk-engine database: it is opened read-only first and
/// refused there if the command cannot use it (`loads`: the command would load, so
/// existing data is refused with `hint`; else the workload's settings must match it,
/// `Workload::check_loaded`), because opening it for writing recovers it and starts a
/// session (the last log flush rewritten, a checkpoint, the control file replaced): a
/// refusal after that would leave every file rewritten. Costs one more (read-only)
/// recovery; that needs a pool holding every page it dirties, as `check` does.
fn look_before_writing<W: Workload>(
    wl: &W,
    engine: EngineName,
    opts: &EngineOptions,
    loads: bool,
    hint: &str,
) -> Result<(), String> {
    // The memory engine's database is its log directory.
    let Some(dir) = opts.db_dir.as_deref().or(opts.log_dir.as_deref()) else {
        return Ok(());
    };
    if !loads && !engine.is_external() && crate::dbdir::detect(dir).is_none() {
        // Refused before the engine opens (and would create its first file there).
        return Err(format!(
            "--no-load: there is no database in {}: load one first (`oltpscope load`), or run without --no-load",
            dir.display()
        ));
    }
    if engine != EngineName::Disk
        || opts.reload
        || crate::dbdir::detect(dir) != Some(EngineName::Disk)
    {
        return Ok(());
    }
    let ro = EngineOptions {
        read_only: true,
        create: false,
        ..opts.clone()
    };
    let schema = std::sync::Arc::new(wl.schema());
    let e =
        <engine_disk::DiskEngine as api::Engine>::open(schema, &ro).map_err(|e| e.to_string())?;
    if loads {
        // A read-only open succeeds only on a loaded database.
        return Err(format!("the database already holds data: {hint}"));
    }
    wl.check_loaded(&e).map_err(|e| e.to_string())
}

fn check<W: Workload>(wl: &W, c: &CheckOpts) -> Result<(), String> {
    if c.db.db.is_none() && c.db.log_dir.is_none() {
        return Err("`oltpscope check` needs --db DIR (or the memory engine's --log-dir): the database to check".into());
    }
    let tuning = DiskTuning {
        bpool_size: c.bpool_size,
        ..DiskTuning::default()
    };
    let (engine, opts) = engine_setup(&c.db, &tuning, false, None, None)?;
    let json = JsonOut::open(c.json.as_deref())?;
    // There must be something to check: never create a database or log.
    let opts = EngineOptions {
        create: false,
        read_only: !c.recover,
        ..opts
    };
    let acked = match &c.acked_file {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?
                .lines()
                .map(str::to_string)
                .collect(),
        ),
        None => None,
    };
    let info = workloads::RunInfo {
        committed: None,
        acked,
    };
    let list = match driver::check_only(engine.descriptor().open, wl, &opts, &info) {
        Ok(l) => l,
        Err(e) => {
            json.abandon();
            return Err(e.to_string());
        }
    };
    let passed = list.iter().all(|c| c.passed);
    let mut text = format!(
        "{} on {}: consistency checks {}\n",
        wl.name(),
        engine.as_str(),
        if passed { "all passed" } else { "FAILED" }
    );
    for ch in &list {
        text += &format!(
            "  [{}] {}: {}\n",
            if ch.passed { "ok" } else { "FAIL" },
            ch.name,
            ch.detail
        );
    }
    json.text(&text);
    json.write(&serde_json::json!({
        "workload": wl.name(),
        "engine": engine.as_str(),
        "db": c.db.db.as_ref().or(c.db.log_dir.as_ref()),
        "checks": { "passed": passed, "list": list },
    }))?;
    if !passed {
        std::process::exit(1);
    }
    Ok(())
}
