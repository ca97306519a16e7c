//! `oltpscope simulate`: run the workload in a child `oltpscope run` under the oltptrace
//! valgrind tool, streaming its trace through a FIFO into the cache simulator running in
//! this process (on the other core), then print the simulation report.

use crate::args::SimOpts;
use crate::commands::JsonOut;
use std::io::BufReader;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

const DEFAULT_TXNS: u64 = 10_000;
const DEFAULT_WARMUP_TXNS: u64 = 1_000;

/// The child run's arguments, from `simulate`'s parsed options: the workload's, the
/// engine's, and the transactions to trace (cache warm-up included; no timed warm-up).
fn child_args(c: &SimOpts, workload_args: Vec<String>, warmup_txns: u64) -> Vec<String> {
    let mut v = vec!["run".to_string()];
    v.extend(workload_args);
    let s = String::from;
    v.extend([
        s("--engine"),
        s(c.engine.as_str()),
        s("--threads"),
        c.threads.to_string(),
        s("--seed"),
        c.seed.to_string(),
        s("--log"),
        s(c.log.as_str()),
    ]);
    if let Some(b) = c.disk.bpool_size {
        v.extend([s("--bpool-size"), b.to_string()]);
    }
    if let Some(e) = c.disk.escalation {
        v.extend([s("--escalation"), e.to_string()]);
    }
    if let Some(m) = c.disk.checkpoint_ms {
        v.extend([s("--checkpoint-ms"), m.to_string()]);
    }
    if c.coroutines > 1 {
        v.extend([s("--coroutines"), c.coroutines.to_string()]);
    }
    if c.no_pin {
        v.push(s("--no-pin"));
    }
    let txns = c.txns.unwrap_or(DEFAULT_TXNS);
    v.extend([
        s("--txns"),
        (txns + warmup_txns).to_string(),
        s("--warmup"),
        s("0"),
        s("--trace-measured"),
        s("--no-check"),
    ]);
    v
}

fn config(c: &SimOpts) -> Result<cachesim::Config, String> {
    let s = &c.sim;
    cachesim::config::Options {
        preset: s.cpu.clone().unwrap_or_default(),
        l1i: s.l1i.clone(),
        l1d: s.l1d.clone(),
        l2: s.l2.clone(),
        llc: s.llc.clone(),
        sweep: s.sweep.clone(),
        components: s.components.clone(),
        warmup_txns: s.warmup_txns.unwrap_or(DEFAULT_WARMUP_TXNS),
        no_three_c: s.no_3c,
        tree_plru: s.plru,
        inclusive: s.non_inclusive.then_some(false),
        memory_latency_cycles: s.memory_latency,
    }
    .to_config()
}

pub fn simulate(c: &SimOpts, workload_args: Vec<String>) -> Result<(), String> {
    let cfg = config(c)?;
    let json = JsonOut::open(c.json.as_deref())?;
    let out = match &c.out {
        Some(p) => match lab::results::ResultsDir::create(p) {
            Ok(d) => Some(d),
            Err(e) => {
                json.abandon();
                return Err(e);
            }
        },
        None => None,
    };
    match simulate_into(c, workload_args, cfg, &json) {
        Ok(value) => match out {
            Some(o) => {
                let config = serde_json::json!({
                    "command": "simulate",
                    "child_args": value["child_args"],
                    "cache": value["simulation"]["config"],
                    "warmup_txns": value["simulation"]["warmup_txns"],
                });
                crate::commands::write_results(o, &value, None, config)
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
    workload_args: Vec<String>,
    cfg: cachesim::Config,
    json: &JsonOut,
) -> Result<serde_json::Value, String> {
    let setup = tracer::prepare()?;
    let args = child_args(c, workload_args, cfg.warmup_txns);

    // Removed when dropped, on every return below.
    let tmp = tempfile::Builder::new()
        .prefix("oltpscope-simulate-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let dir = tmp.path();
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
    let mut sim = cachesim::Simulator::new(cfg)?;
    let result = cachesim::trace::Reader::new(BufReader::with_capacity(1 << 20, file))
        .map_err(|e| e.to_string())
        .and_then(|r| sim.run(r).map_err(|e| e.to_string()));
    let status = watcher
        .join()
        .map_err(|_| "the child watcher panicked".to_string())?;
    let elapsed = t0.elapsed().as_secs_f64();
    let child_err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    drop(tmp);
    let ok = matches!(&status, Ok(s) if s.success());
    if !ok {
        let last = child_err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(format!("the traced run failed: {}", last.trim()));
    }
    if let Err(e) = result {
        return Err(format!("reading the trace: {e}"));
    }
    let report = sim.report();
    if !report.warmup_completed {
        eprintln!(
            "note: the run ended before {} warm-up transactions: statistics include cold caches",
            report.warmup_txns
        );
    }
    json.text(&report.to_text());
    json.text(&format!(
        "simulated {} instructions in {elapsed:.1} s (tracer and simulator together)\n",
        cachesim::report::sep(report.instructions)
    ));
    let value = serde_json::json!({
        "child_args": args,
        "elapsed_s": elapsed,
        "simulation": serde_json::from_str::<serde_json::Value>(&report.to_json()).expect("report JSON parses"),
    });
    json.write(&value)?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::child_args;
    use crate::args::{Cli, Cmd, RunWorkload};
    use clap::Parser;

    #[test]
    fn the_child_gets_the_parsed_options_and_not_simulates_own() {
        let cli = Cli::try_parse_from(
            "oltpscope simulate tpcb --scale 2 --cpu zen3 --sweep=l1i=8K,16K --json out.json --txns 50 --threads 1 --engine disk --bpool-size 64MB"
                .split(' '),
        )
        .unwrap();
        let Cmd::Simulate {
            workload: Some(RunWorkload::Tpcb(a)),
        } = cli.cmd
        else {
            panic!("parsed as something else")
        };
        let v = child_args(
            &a.common,
            vec!["tpcb".into(), "--scale".into(), "2".into()],
            7,
        );
        let line = v.join(" ");
        assert_eq!(
            line,
            "run tpcb --scale 2 --engine disk --threads 1 --seed 1 --log off --bpool-size 67108864 --txns 57 --warmup 0 --trace-measured --no-check"
        );
        // What the child is given, it accepts.
        let mut full = vec!["oltpscope".to_string()];
        full.extend(v);
        Cli::try_parse_from(full).unwrap();
    }
}
