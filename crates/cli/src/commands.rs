//! What each command does: build the workload and engine options from the arguments,
//! refuse what cannot work, run, print.

use crate::args::*;
use api::{EngineOptions, IndexKind, LogMode};
use driver::{RunConfig, Stop};
use std::io::IsTerminal;
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::Workload;

/// Run `$body` with `$E` bound to the engine type named by `$name`.
macro_rules! with_engine {
    ($name:expr, $E:ident => $body:expr) => {
        match $name {
            EngineName::Memory => {
                type $E = engine_memory::MemoryEngine;
                $body
            }
            EngineName::Disk => {
                type $E = engine_disk::DiskEngine;
                $body
            }
            EngineName::Serial => {
                type $E = api::serial::SerialEngine;
                $body
            }
        }
    };
}

fn engine_name(e: EngineName) -> &'static str {
    with_engine!(e, E => <E as api::Engine>::NAME)
}

pub fn dispatch(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Run { workload } => match workload {
            WorkloadCmd::Micro(a) => run(&micro(&a)?, &a.common),
            WorkloadCmd::Tpcb(a) => run(&tpcb(&a)?, &a.common),
            WorkloadCmd::Tpcc(a) => run(&tpcc(&a)?, &a.common),
        },
        Cmd::Simulate { workload } => {
            let common = match &workload {
                WorkloadCmd::Micro(a) => &a.common,
                WorkloadCmd::Tpcb(a) => &a.common,
                WorkloadCmd::Tpcc(a) => &a.common,
            };
            // Validate the workload's options here, so errors come before valgrind starts.
            match &workload {
                WorkloadCmd::Micro(a) => check_fits(&micro(a)?, common)?,
                WorkloadCmd::Tpcb(a) => check_fits(&tpcb(a)?, common)?,
                WorkloadCmd::Tpcc(a) => check_fits(&tpcc(a)?, common)?,
            }
            crate::simulate::simulate(common)
        }
        Cmd::Crashtest(a) => crate::crashtest::crashtest(&a),
        Cmd::Check { workload } => match workload {
            WorkloadCmd::Micro(a) => check(&micro(&a)?, &a.common),
            WorkloadCmd::Tpcb(a) => check(&tpcb(&a)?, &a.common),
            WorkloadCmd::Tpcc(a) => check(&tpcc(&a)?, &a.common),
        },
    }
}

fn micro(a: &MicroArgs) -> Result<Micro, String> {
    let columns = match a.columns {
        ColumnsArg::Long => Columns::Long,
        ColumnsArg::String => Columns::String,
    };
    let row = MicroConfig::row_size(columns) as u64;
    let keys = match (a.keys, a.size) {
        (Some(k), _) => k,
        (None, Some(bytes)) => {
            if bytes < row {
                return Err(format!("--size {bytes} is smaller than one {row}-byte row"));
            }
            bytes / row
        }
        (None, None) => (10u64 << 20) / row,
    };
    Micro::new(MicroConfig {
        keys,
        rows_per_txn: a.rows,
        mode: match a.mode {
            ModeArg::Read => Mode::Read,
            ModeArg::Update => Mode::Update,
        },
        columns,
        distribution: match a.distribution {
            DistArg::Uniform => Distribution::Uniform,
            DistArg::Zipf => Distribution::Zipf { theta: a.theta },
        },
        index: match a.index {
            IndexArg::Btree => IndexKind::BTree,
            IndexArg::Hash => IndexKind::Hash,
        },
    })
}

fn tpcb(a: &TpcbArgs) -> Result<Tpcb, String> {
    Tpcb::new(
        TpcbConfig {
            scale: a.scale,
            pad: a.pad,
            affinity: a.affinity,
        },
        a.common.threads as usize,
    )
}

fn tpcc(a: &TpccArgs) -> Result<Tpcc, String> {
    Tpcc::new(TpccConfig {
        warehouses: a.warehouses,
        mix: a.mix.unwrap_or(workloads::tpcc::DEFAULT_MIX),
        affinity: a.affinity,
        ..TpccConfig::default()
    })
}

fn engine_options(c: &Common) -> EngineOptions {
    EngineOptions {
        threads: c.threads as usize,
        log: match c.log {
            LogArg::Off => LogMode::Off,
            LogArg::Async => LogMode::Async,
            LogArg::Sync => LogMode::Sync,
        },
        log_dir: c.log_dir.clone(),
        db_dir: c.db.clone(),
        bpool_bytes: c.bpool_size,
        escalation: c.escalation,
        checkpoint_ms: c.checkpoint_ms,
        reload: c.reload,
        ..EngineOptions::default()
    }
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Refuse a database that cannot fit in memory, before spending minutes loading it.
fn check_fits<W: Workload>(wl: &W, c: &Common) -> Result<(), String> {
    let need = wl.schema().estimated_bytes();
    let have = driver::machine::available_memory_bytes();
    if have > 0 && need > have {
        return Err(format!(
            "the {} database needs about {} of memory and {} is available: choose a smaller size",
            wl.name(),
            gib(need),
            gib(have)
        ));
    }
    if let Some(bp) = c.bpool_size {
        if have > 0 && bp > have {
            return Err(format!(
                "--bpool-size {} is more than the {} of memory available",
                gib(bp),
                gib(have)
            ));
        }
    }
    Ok(())
}

fn run<W: Workload>(wl: &W, c: &Common) -> Result<(), String> {
    if c.sim.given() {
        return Err("--cpu, --l1i, --l1d, --l2, --llc, --sweep, --warmup-txns and --component only apply to `oltpscope simulate`".into());
    }
    check_fits(wl, c)?;
    if c.recover {
        return Err(
            "--recover only applies to `oltpscope check` (`run --no-load` recovers by itself)"
                .into(),
        );
    }
    let cores = driver::machine::cores();
    if c.threads as usize > cores {
        eprintln!(
            "note: {} worker threads on {cores} cores: workers will share cores",
            c.threads
        );
    }
    if c.engine == EngineName::Disk && c.log == LogArg::Off {
        eprintln!("note: --log off keeps the disk engine's log in memory only: a crash loses data (a clean end is safe)");
    }
    if let (Some(dir), LogArg::Off) = (&c.log_dir, c.log) {
        // (A memory-engine log already there is refused by the engine, in one line.)
        if c.engine != EngineName::Memory || !dir.join(engine_memory::log::LOG_FILE).exists() {
            eprintln!("note: --log-dir is ignored with --log off");
        }
    }
    let cfg = RunConfig {
        engine: engine_options(c),
        threads: c.threads as usize,
        warmup_s: c.warmup,
        stop: match c.txns {
            Some(n) => Stop::Txns(n),
            None => Stop::Seconds(c.duration),
        },
        seed: c.seed,
        pin: !c.no_pin,
        no_load: c.no_load,
        interactive: std::io::stderr().is_terminal(),
        trace_measured: c.trace_measured,
        acked_file: c.acked_file.clone(),
        check: !c.no_check,
        coroutines: c.coroutines()? as usize,
        coroutine_seed: None,
        steps_team: match c.steps_team[..] {
            [] => None,
            [n] => Some(n as usize),
            _ => {
                return Err(
                    "`run` takes one --steps-team size (a list only with `simulate`)".into(),
                )
            }
        },
    };
    let report =
        with_engine!(c.engine, E => driver::run::<E, W>(wl, &cfg)).map_err(|e| e.to_string())?;
    print!("{}", report.to_text());
    if let Some(p) = &c.json {
        let text = serde_json::to_string_pretty(&report).expect("reports serialize");
        std::fs::write(p, text + "\n").map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    if !report.checks.passed {
        eprintln!("error: consistency check failed");
        std::process::exit(1);
    }
    Ok(())
}

fn check<W: Workload>(wl: &W, c: &Common) -> Result<(), String> {
    if c.reload {
        return Err("--reload discards data: `check` never does".into());
    }
    if c.coroutines.is_some() || !c.steps_team.is_empty() {
        return Err(
            "--coroutines and --steps-team apply to `run` and `simulate`, not `check`".into(),
        );
    }
    // There must be something to check: never create a database or log.
    let opts = EngineOptions {
        create: false,
        read_only: !c.recover,
        ..engine_options(c)
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
    let list = with_engine!(c.engine, E => driver::check_only::<E, W>(wl, &opts, &info))
        .map_err(|e| e.to_string())?;
    let passed = list.iter().all(|c| c.passed);
    println!(
        "{} on {}: consistency checks {}",
        wl.name(),
        engine_name(c.engine),
        if passed { "all passed" } else { "FAILED" }
    );
    for ch in &list {
        println!(
            "  [{}] {}: {}",
            if ch.passed { "ok" } else { "FAIL" },
            ch.name,
            ch.detail
        );
    }
    if !passed {
        std::process::exit(1);
    }
    Ok(())
}
