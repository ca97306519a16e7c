//! `oltpscope simulate`: run the workload in a child `oltpscope run` under the oltptrace
//! valgrind tool, streaming its trace through a FIFO into the cache simulator running in
//! this process (on the other core), then print the simulation report.

use crate::args::Common;
use std::io::BufReader;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Options that belong to `simulate` itself and are not passed to the child run.
const OWN_WITH_VALUE: &[&str] = &[
    "--cpu",
    "--l1i",
    "--l1d",
    "--l2",
    "--llc",
    "--sweep",
    "--warmup-txns",
    "--memory-latency",
    "--component",
    "--json",
    "--txns",
    "--duration",
    "--warmup",
];
const OWN_FLAGS: &[&str] = &["--no-3c", "--plru", "--non-inclusive"];
const DEFAULT_TXNS: u64 = 10_000;
const DEFAULT_WARMUP_TXNS: u64 = 1_000;

/// The child's arguments: the user's workload and options minus simulate's own.
fn child_args(raw: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let a = &raw[i];
        let name = a.split('=').next().unwrap_or(a);
        if OWN_FLAGS.contains(&name) {
            i += 1;
            continue;
        }
        if OWN_WITH_VALUE.contains(&name) {
            i += if a.contains('=') { 1 } else { 2 };
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    out
}

fn config(c: &Common) -> Result<cachesim::Config, String> {
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

pub fn simulate(c: &Common) -> Result<(), String> {
    let cfg = config(c)?;
    let setup = tracer::prepare()?;
    let raw: Vec<String> = std::env::args().collect();
    let at = raw
        .iter()
        .position(|a| a == "simulate")
        .ok_or("cannot find the simulate command")?;
    let txns = c.txns.unwrap_or(DEFAULT_TXNS);
    let mut args = vec!["run".to_string()];
    args.extend(child_args(&raw[at + 1..]));
    args.extend([
        "--txns".to_string(),
        (txns + cfg.warmup_txns).to_string(),
        "--trace-measured".to_string(),
        "--no-check".to_string(),
    ]);

    let dir = tempdir()?;
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
    let _ = std::fs::remove_dir_all(&dir);
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
    print!("{}", report.to_text());
    println!(
        "simulated {} instructions in {elapsed:.1} s (tracer and simulator together)",
        report.instructions
    );
    if let Some(p) = &c.json {
        let v = serde_json::json!({
            "command": raw[at..],
            "child_args": args,
            "elapsed_s": elapsed,
            "simulation": serde_json::from_str::<serde_json::Value>(&report.to_json()).expect("report JSON parses"),
        });
        std::fs::write(
            p,
            serde_json::to_string_pretty(&v).expect("serializes") + "\n",
        )
        .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}

fn tempdir() -> Result<std::path::PathBuf, String> {
    let d = std::env::temp_dir().join(format!("oltpscope-simulate-{}", std::process::id()));
    std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::child_args;

    #[test]
    fn simulate_options_are_not_passed_to_the_child() {
        let raw: Vec<String> =
            "tpcb --scale 2 --cpu zen3 --sweep=l1i=8K,16K --json out.json --txns 50 --threads 1"
                .split(' ')
                .map(String::from)
                .collect();
        assert_eq!(
            child_args(&raw),
            vec!["tpcb", "--scale", "2", "--threads", "1"]
        );
    }
}
