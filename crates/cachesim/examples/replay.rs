//! Times the simulator alone: replays one recorded trace file (a `--trace-out=FILE` of
//! the oltptrace tool) N times with everything on (3C, an L1-I and an LLC sweep, caller
//! attribution) and prints the user CPU of each replay; writes the report JSON of the
//! first replay, to check that a speed change leaves the results identical.
//!
//! `cargo run --release -p cachesim --example replay -- TRACE [REPS] [REPORT.json]`
//! (docs/design/cachesim.md, "Speed").

use std::time::Instant;

/// User CPU seconds of this process so far (/proc/self/stat, field 14, in clock ticks
/// of 1/100 s on Linux).
fn user_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) may hold spaces: count fields after its ')'.
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: f64 = after
        .split_whitespace()
        .nth(11)
        .and_then(|t| t.parse().ok())
        .unwrap_or(f64::NAN);
    ticks / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: replay TRACE [REPS] [REPORT.json]");
        std::process::exit(2);
    };
    let reps: usize = match args.get(1).map(|r| r.parse()) {
        None => 3,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("replay: REPS must be a positive integer");
            std::process::exit(2);
        }
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("replay: cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    let opts = cachesim::Options {
        sweep: vec!["l1i=16K,32K,64K,128K".into(), "llc=10M,20M,40M".into()],
        warmup_txns: 500,
        caller_attribution: true,
        ..Default::default()
    };
    let cfg = match opts.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("replay: {e}");
            std::process::exit(2);
        }
    };
    for rep in 1..=reps {
        let (u0, t0) = (user_cpu(), Instant::now());
        let mut sim = cachesim::Simulator::new(cfg.clone()).expect("validated config");
        let reader = match cachesim::trace::Reader::new(&bytes[..]) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("replay: {e}");
                std::process::exit(2);
            }
        };
        if let Err(e) = sim.run(reader) {
            eprintln!("replay: {e}");
            std::process::exit(2);
        }
        let report = sim.report();
        let (u, t) = (user_cpu() - u0, t0.elapsed().as_secs_f64());
        // Every traced instruction (warm-up included) went through the simulator.
        let instr = report.tracer_instructions.unwrap_or(report.instructions);
        println!(
            "replay {rep}/{reps}: {u:.2} s user, {t:.2} s wall, {instr} instructions, \
             {:.1} ns user per instruction",
            u * 1e9 / instr.max(1) as f64
        );
        if rep == 1 {
            if let Some(out) = args.get(2) {
                if let Err(e) = std::fs::write(out, report.to_json()) {
                    eprintln!("replay: cannot write {out}: {e}");
                    std::process::exit(2);
                }
            }
        }
    }
}
