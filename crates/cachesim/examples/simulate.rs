//! A minimal stand-alone front end (the real one is `oltpscope simulate`):
//!
//! ```text
//! cargo run --release -p cachesim --example simulate -- TRACE [options]
//! cargo run --release -p cachesim --example simulate -- --lackey LOG [--exe PROGRAM] [options]
//! options: --preset NAME --l1i SPEC --l1d SPEC --l2 SPEC|none --llc SPEC|none
//!          --sweep l1i=SIZES|llc=SIZES (repeatable) --component PATTERN=NAME (repeatable)
//!          --warmup-txns N --no-3c --plru --non-inclusive --json
//! ```
//!
//! `--lackey` reads `valgrind --tool=lackey --trace-mem=yes --log-file=LOG PROGRAM`
//! output; `--exe` names PROGRAM so its functions can be resolved (a PIE is taken to be
//! loaded at valgrind's 0x108000). Errors are one line on stderr and exit code 2.

use cachesim::{lackey, trace::Reader, Options, Simulator};
use object::{Object, ObjectSegment};
use std::path::PathBuf;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut opts = Options::default();
    let (mut trace, mut lackey_log, mut exe, mut json) = (None, None, None, false);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--preset" => opts.preset = val()?,
            "--l1i" => opts.l1i = Some(val()?),
            "--l1d" => opts.l1d = Some(val()?),
            "--l2" => opts.l2 = Some(val()?),
            "--llc" => opts.llc = Some(val()?),
            "--sweep" => opts.sweep.push(val()?),
            "--component" => opts.components.push(val()?),
            "--warmup-txns" => {
                opts.warmup_txns = val()?.parse().map_err(|_| "--warmup-txns needs a number")?
            }
            "--no-3c" => opts.no_three_c = true,
            "--plru" => opts.tree_plru = true,
            "--non-inclusive" => opts.inclusive = Some(false),
            "--json" => json = true,
            "--lackey" => lackey_log = Some(PathBuf::from(val()?)),
            "--exe" => exe = Some(PathBuf::from(val()?)),
            s if !s.starts_with("--") && trace.is_none() => trace = Some(PathBuf::from(s)),
            s => return Err(format!("unknown argument {s}")),
        }
    }
    let mut sim = Simulator::new(opts.to_config()?)?;
    if let Some(exe) = &exe {
        let bytes = std::fs::read(exe).map_err(|e| format!("{}: {e}", exe.display()))?;
        let elf = object::File::parse(&*bytes).map_err(|e| format!("{}: {e}", exe.display()))?;
        let bias = match elf.kind() {
            object::ObjectKind::Dynamic => lackey::VALGRIND_PIE_BASE,
            _ => 0,
        };
        for seg in elf.segments() {
            if let object::SegmentFlags::Elf { p_flags } = seg.flags() {
                if p_flags & 1 != 0 {
                    sim.add_object(seg.address() + bias, seg.size(), bias as i64, exe);
                }
            }
        }
    }
    match (trace, lackey_log) {
        (Some(t), None) => {
            let f = std::fs::File::open(&t).map_err(|e| format!("{}: {e}", t.display()))?;
            let res = sim.run(Reader::new(std::io::BufReader::new(f)).map_err(|e| e.to_string())?);
            if let Err(e) = res {
                // The statistics so far are still printed.
                eprintln!("warning: {e}");
            }
        }
        (None, Some(l)) => {
            let f = std::fs::File::open(&l).map_err(|e| format!("{}: {e}", l.display()))?;
            lackey::for_each_record(std::io::BufReader::new(f), |r| sim.feed(r))
                .map_err(|e| format!("{}: {e}", l.display()))?;
        }
        _ => return Err("give a trace file or --lackey LOG (one of them)".into()),
    }
    let rep = sim.report();
    print!("{}", if json { rep.to_json() } else { rep.to_text() });
    Ok(())
}
