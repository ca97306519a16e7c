//! Extracts the L1-I reference stream of a trace's worker threads (64-byte line numbers,
//! in order, as cachesim's L1-I sees them: every line an IFETCH run touches) into the
//! compressed file the 3C reference test replays (tests/three_c_reference.rs).
//!
//! `cargo run --release -p cachesim --example l1i_lines -- TRACE OUT.gz [SKIP_TXNS [TXNS]]`
//!
//! Threads are workers unless they declared a background role (THREAD_ROLE marker),
//! as in the simulator. References before the SKIP_TXNS-th TXN_END are left out, and the
//! stream stops after TXNS more. Format: gzip of LEB128-encoded zigzag deltas between
//! consecutive line numbers.

use cachesim::trace::{marker, Reader, Record};
use std::io::Write;

fn main() {
    if let Err(e) = run() {
        eprintln!("l1i_lines: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 2 || a.len() > 4 {
        return Err("usage: l1i_lines TRACE OUT.gz [SKIP_TXNS [TXNS]]".into());
    }
    let num = |i: usize, d: u64| -> Result<u64, String> {
        a.get(i).map_or(Ok(d), |s| {
            s.parse().map_err(|_| format!("'{s}' is not a number"))
        })
    };
    let (skip, txns) = (num(2, 0)?, num(3, u64::MAX)?);
    let f = std::fs::File::open(&a[0]).map_err(|e| format!("{}: {e}", a[0]))?;
    let reader = Reader::new(std::io::BufReader::new(f)).map_err(|e| e.to_string())?;
    let out = std::fs::File::create(&a[1]).map_err(|e| format!("{}: {e}", a[1]))?;
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::best());
    let mut roles = std::collections::HashMap::new();
    let (mut tid, mut bg, mut ended, mut prev, mut n) = (0u32, false, 0u64, 0u64, 0u64);
    let mut buf = Vec::new();
    for rec in reader {
        match rec.map_err(|e| e.to_string())? {
            Record::Thread { tid: t } => {
                tid = t;
                bg = roles
                    .get(&tid)
                    .is_some_and(|&r| r != 0 && r != probe::Role::Worker as u32);
            }
            Record::Marker { code, arg } if code == marker::THREAD_ROLE => {
                roles.insert(tid, arg);
                bg = arg != 0 && arg != probe::Role::Worker as u32;
            }
            Record::Marker { code, .. } if code == marker::TXN_END => {
                ended += 1;
                if ended >= skip.saturating_add(txns) {
                    break;
                }
            }
            Record::IFetch { addr, len, .. } if !bg && ended >= skip => {
                for line in addr >> 6..=(addr + len.max(1) as u64 - 1) >> 6 {
                    let d = line.wrapping_sub(prev) as i64;
                    prev = line;
                    let mut z = ((d << 1) ^ (d >> 63)) as u64;
                    loop {
                        let b = (z & 0x7f) as u8;
                        z >>= 7;
                        if z == 0 {
                            buf.push(b);
                            break;
                        }
                        buf.push(b | 0x80);
                    }
                    n += 1;
                }
                if buf.len() > 1 << 16 {
                    gz.write_all(&buf).map_err(|e| e.to_string())?;
                    buf.clear();
                }
            }
            _ => {}
        }
    }
    gz.write_all(&buf).map_err(|e| e.to_string())?;
    gz.finish().map_err(|e| e.to_string())?;
    eprintln!(
        "{n} L1-I references after {skip} transactions, {} transactions",
        ended - skip.min(ended)
    );
    Ok(())
}
