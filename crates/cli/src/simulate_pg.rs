//! `oltpscope simulate --engine postgres`: the workload runs natively in a child
//! `oltpscope run`, whose private PostgreSQL server loads natively and then restarts
//! under the oltpscope tracer following its forks (`engine_postgres::TRACE_ENV`). Only
//! the backends that serve the
//! run's workers trace (they start at `pg_backend_pid()`, which each worker calls after
//! the load); the postmaster and the background processes never do and are counted
//! apart. Transaction boundaries come from the server itself: each call of
//! `ProcArrayEndTransaction` (once per top-level commit or abort) is a TXN_END marker.
//! The frames of the processes are merged into one stream (`cachesim::forks`) that the
//! simulator reads, one thread per backend. Before the traced run, the same child runs
//! once natively, so the report can say how much valgrind slowed the server.

use crate::output::JsonOut;
use std::io::BufReader;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub(crate) fn simulate(
    cfg: &cachesim::Config,
    spec: &runspec::RunSpec,
    json: &JsonOut,
) -> Result<serde_json::Value, String> {
    let tmp = tempfile::Builder::new()
        .prefix("oltpscope-simulate-pg-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    // The server runs as the `postgres` user when we are root: it must reach the FIFO.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot open up {}: {e}", tmp.path().display()))?;
    eprintln!(
        "simulate: running the workload natively first (the baseline for valgrind's slow-down)"
    );
    let t0 = Instant::now();
    let native = run_child(spec, tmp.path(), "native", None)?;
    let native_s = t0.elapsed().as_secs_f64();
    eprintln!("simulate: native run done in {native_s:.1} s; now the traced server");
    let (report, stats, traced, elapsed) = traced_run(cfg, spec, tmp.path())?;
    let tps = |r: &serde_json::Value| {
        let n = r["committed"].as_f64().unwrap_or(0.0) + r["aborted"].as_f64().unwrap_or(0.0);
        n / r["duration_s"].as_f64().unwrap_or(0.0).max(1e-9)
    };
    let (native_tps, traced_tps) = (tps(&native), tps(&traced));
    let slowdown = native_tps / traced_tps.max(1e-9);
    let warmup_txns = report.warmup.as_ref().map_or(0, |w| w.txns);
    let traced_txns = warmup_txns + report.transactions;
    let pids: Vec<String> = stats
        .instructions_by_pid
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    let mut text = crate::output::report_text(&report, elapsed);
    text += &format!(
        "\nPostgreSQL: traced {} backend process(es) serving the workers' connections (pids {}); \
         the other {} server processes (postmaster, checkpointer, background writer, WAL writer, \
         autovacuum launcher, ...) were not traced.\n\
         transactions traced: {} ({} warm-up, {} measured), their ends marked at each call of \
         {} (a top-level commit or abort); the first of each backend is its pg_backend_pid() query.\n\
         valgrind slowed the server {:.0}x: {:.1} transactions/s natively, {:.2} traced \
         (the simulator reading the trace on the other core included).\n",
        stats.traced_processes,
        if pids.is_empty() { "none".to_string() } else { pids.join(", ") },
        stats.processes.saturating_sub(stats.traced_processes),
        traced_txns,
        warmup_txns,
        report.transactions,
        engine_postgres::TXN_END_AT,
        slowdown,
        native_tps,
        traced_tps,
    );
    if stats.without_end > 0 {
        text += &format!(
            "warning: {} traced backend(s) ended without their END record (killed)\n",
            stats.without_end
        );
    }
    json.text(&text);
    let value = serde_json::json!({
        "child_args": spec.to_args(),
        "elapsed_s": elapsed,
        "simulation": crate::output::sim_json(&report),
        "postgres": {
            "traced_backends": stats.traced_processes,
            "untraced_processes": stats.processes.saturating_sub(stats.traced_processes),
            "instructions_by_pid": stats.instructions_by_pid,
            "backends_without_end": stats.without_end,
            "transactions_traced": traced_txns,
            "txn_end_at": engine_postgres::TXN_END_AT,
            "native_txns_per_s": native_tps,
            "traced_txns_per_s": traced_tps,
            "valgrind_slowdown": slowdown,
            "native_run": native,
            "traced_run": traced,
        },
    });
    json.write(&value)?;
    Ok(value)
}

/// Runs the child `oltpscope run` of `spec` (plus `--json`), with the tracer's FIFO in
/// its environment when given; returns its run report.
fn run_child(
    spec: &runspec::RunSpec,
    dir: &Path,
    name: &str,
    fifo: Option<&Path>,
) -> Result<serde_json::Value, String> {
    let (mut child, report, stderr_path) = spawn_child(spec, dir, name, fifo)?;
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the {name} run: {e}"))?;
    finish_child(status, &report, &stderr_path, name)
}

fn spawn_child(
    spec: &runspec::RunSpec,
    dir: &Path,
    name: &str,
    fifo: Option<&Path>,
) -> Result<(std::process::Child, std::path::PathBuf, std::path::PathBuf), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let report = dir.join(format!("{name}.json"));
    let stderr_path = dir.join(format!("{name}.stderr"));
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| format!("cannot create {}: {e}", stderr_path.display()))?;
    let mut spec = spec.clone();
    spec.options.json = Some(report.clone());
    let mut cmd = Command::new(exe);
    cmd.args(spec.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    match fifo {
        Some(f) => cmd.env(engine_postgres::TRACE_ENV, f),
        None => cmd.env_remove(engine_postgres::TRACE_ENV),
    };
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the {name} run: {e}"))?;
    Ok((child, report, stderr_path))
}

fn finish_child(
    status: std::process::ExitStatus,
    report: &Path,
    stderr_path: &Path,
    name: &str,
) -> Result<serde_json::Value, String> {
    if !status.success() {
        let err = std::fs::read_to_string(stderr_path).unwrap_or_default();
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(format!("the {name} run failed: {}", last.trim()));
    }
    let text = std::fs::read_to_string(report)
        .map_err(|e| format!("cannot read the {name} run's report: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("the {name} run's report: {e}"))
}

type Traced = (
    cachesim::Report,
    cachesim::forks::ForkStats,
    serde_json::Value,
    f64,
);

fn traced_run(
    cfg: &cachesim::Config,
    spec: &runspec::RunSpec,
    dir: &Path,
) -> Result<Traced, String> {
    let fifo = dir.join("trace.fifo");
    tracer::make_fifo(&fifo)?;
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("cannot open up {}: {e}", fifo.display()))?;
    let mut sim = cachesim::Simulator::new(cfg.clone())?;
    let t0 = Instant::now();
    let (child, report_path, stderr_path) = spawn_child(spec, dir, "traced", Some(&fifo))?;
    // If the child (or its server) fails before the server opens the FIFO, our open
    // would wait forever: a watcher opens it for writing once the child is gone.
    let opened = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (opened, fifo) = (opened.clone(), fifo.clone());
        let mut child = child;
        std::thread::spawn(move || {
            let status = child.wait();
            while !opened.load(Ordering::Acquire) {
                use std::os::unix::fs::OpenOptionsExt;
                if std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo)
                    .is_ok()
                {
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
    let (pipe_r, pipe_w) =
        std::io::pipe().map_err(|e| format!("cannot make a pipe for the trace: {e}"))?;
    let merger = std::thread::spawn(move || {
        cachesim::forks::merge(BufReader::with_capacity(1 << 20, file), pipe_w)
    });
    let simulated = cachesim::trace::Reader::new(BufReader::with_capacity(1 << 20, pipe_r))
        .map_err(|e| e.to_string())
        .and_then(|r| sim.run(r).map_err(|e| e.to_string()));
    // `sim.run` returned (the stream ended, or it measured enough): the merger drains.
    let stats = merger
        .join()
        .map_err(|_| "the trace merger panicked".to_string())?
        .map_err(|e| format!("reading the server's trace: {e}"));
    let status = watcher
        .join()
        .map_err(|_| "the child watcher panicked".to_string())?
        .map_err(|e| format!("waiting for the traced run: {e}"))?;
    let elapsed = t0.elapsed().as_secs_f64();
    let run = finish_child(status, &report_path, &stderr_path, "traced")?;
    let stats = stats?;
    if let Err(e) = simulated {
        if !sim.stopped_early() {
            return Err(format!("reading the trace: {e}"));
        }
    }
    if stats.traced_processes == 0 {
        let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        return Err(format!(
            "no server process traced anything (the workers' backends never called {}): {}",
            engine_postgres::TRACE_START_AT,
            log.lines().last().unwrap_or("no message")
        ));
    }
    Ok((sim.report(), stats, run, elapsed))
}
