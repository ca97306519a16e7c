//! Informal throughput of the simulator core: `cargo run --release -p cachesim --example
//! throughput [RECORDS] [PRESET]`. Generates an OLTP-like synthetic stream in memory
//! (instruction runs over 24 KB of hot and 256 KB of cold code, data accesses 80% to a
//! 64 KB hot set, 18% to 8 MB, 2% spread over 1 GB), encodes it, and times reading + simulating it with 3C on, the
//! default L1-I sweep of six sizes off and on (a third argument `SC`, S and C 0 or 1, runs
//! one combination). Prints records per second.

use cachesim::trace::{Reader, Record, Writer};
use cachesim::{Config, Simulator};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let preset = args.get(2).map_or("xeon-e5-2660", String::as_str);
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut w = Writer::new(Vec::with_capacity(n * 8 + 64)).unwrap();
    let mut pc = 0x40_0000u64;
    for i in 0..n {
        let r = rnd();
        let rec = if i % 3 != 2 {
            // Mostly sequential code with a jump every ~8 runs, 90% of them into 24 KB of
            // hot code, the rest anywhere in 256 KB.
            let span = if r % 80 == 0 { 256 * 1024 } else { 24 * 1024 };
            pc = if r % 8 == 0 {
                (0x40_0000 + (r >> 8) % span) & !31
            } else {
                pc + 32
            };
            Record::IFetch {
                addr: pc,
                ninstr: 6,
                len: 26,
            }
        } else if r % 50 < 40 {
            Record::Load {
                addr: (0x1000_0000 + (r >> 8) % (64 * 1024)) & !7,
                size: 8,
            }
        } else if r % 50 < 49 {
            Record::Modify {
                addr: (0x2000_0000 + (r >> 8) % (8 << 20)) & !7,
                size: 8,
            }
        } else {
            Record::Store {
                addr: (0x8000_0000 + (r >> 8) % (1 << 30)) & !7,
                size: 8,
            }
        };
        w.write(&rec).unwrap();
    }
    w.write(&Record::End {
        total_instructions: 0,
    })
    .unwrap();
    let bytes = w.into_inner();
    let only = args.get(3).map(String::as_str);
    for (label, sweep) in [
        ("no sweep", None),
        ("sweep x6", Some("l1i=8K,16K,32K,64K,128K,256K")),
    ] {
        for three_c in [false, true] {
            if only.is_some_and(|o| o != format!("{}{}", sweep.is_some() as u8, three_c as u8)) {
                continue;
            }
            let mut cfg = Config::preset(preset).unwrap();
            cfg.three_c = three_c;
            if let Some(s) = sweep {
                cfg.set_sweep(s).unwrap();
            }
            let mut sim = Simulator::new(cfg).unwrap();
            let t = Instant::now();
            let _ = sim.run(Reader::new(&bytes[..]).unwrap());
            let secs = t.elapsed().as_secs_f64();
            let rep = sim.report();
            println!(
                "{preset} {label:<8} 3C {:<5}: {n} records in {secs:.2} s = {:.1} M records/s \
                 (MPKI L1-I {:.1} L1-D {:.1} L2 {:.1})",
                three_c,
                n as f64 / secs / 1e6,
                rep.levels[0].mpki.i,
                rep.levels[1].mpki.d,
                rep.levels[2].mpki.total
            );
        }
    }
}
