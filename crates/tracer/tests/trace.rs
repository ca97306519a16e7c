//! End-to-end tests of the oltptrace tool: run programs under it, parse the stream with a
//! small reader written here from docs/design/trace-format.md (the real reader lives in
//! cachesim), and check it against what the programs did and against cachegrind.
//! Every test prints "SKIPPED: <reason>" and returns when valgrind is not usable.

/// A skipped test's one line, written past the test harness's capture (which hides
/// what a passing test prints with `println!`), so the run's output shows every skip.
macro_rules! skipped {
    ($($a:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED: {}", format_args!($($a)*));
    }};
}

use std::path::{Path, PathBuf};
use std::process::Command;

use tracer::{TraceOptions, TracerSetup};

#[path = "../src/clmul.rs"]
mod clmul;

const ADDR_MASK: u64 = (1 << 48) - 1;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rec {
    Ifetch {
        addr: u64,
        ninstr: u32,
        len: u32,
    },
    Load {
        addr: u64,
        size: u32,
    },
    Store {
        addr: u64,
        size: u32,
    },
    Modify {
        addr: u64,
        size: u32,
    },
    Marker {
        code: u8,
        arg: u32,
    },
    Thread {
        tid: u32,
    },
    Map {
        avma: u64,
        size: u64,
        bias: i64,
        name: String,
    },
    End {
        instructions: u64,
    },
}

/// Parses a whole stream; panics (this is a test) on any deviation from the format.
fn parse(bytes: &[u8]) -> Vec<Rec> {
    assert!(bytes.len() >= 16, "stream shorter than its header");
    assert_eq!(&bytes[0..8], b"OSTRACE1", "magic");
    assert_eq!(
        u32::from_le_bytes(bytes[8..12].try_into().unwrap()),
        1,
        "version"
    );
    assert_eq!(
        u32::from_le_bytes(bytes[12..16].try_into().unwrap()),
        0,
        "flags"
    );
    assert_eq!(bytes.len() % 8, 0, "stream is whole words");
    let words: Vec<u64> = bytes[16..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut recs = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        i += 1;
        let addr = w & ADDR_MASK;
        let size = ((w >> 48) & 0xfff) as u32;
        let rec = match w >> 60 {
            0 => {
                let ninstr = ((w >> 48) & 0x3f) as u32;
                let len = ((w >> 54) & 0x3f) as u32;
                assert!((1..=32).contains(&ninstr), "IFETCH ninstr {ninstr}");
                assert!((1..=46).contains(&len), "IFETCH len {len}");
                Rec::Ifetch { addr, ninstr, len }
            }
            1 => Rec::Load { addr, size },
            2 => Rec::Store { addr, size },
            3 => Rec::Modify { addr, size },
            4 => Rec::Marker {
                code: (w >> 48) as u8,
                arg: w as u32,
            },
            5 => Rec::Thread { tid: w as u32 },
            6 => {
                let name_len = (w & 0xffff) as usize;
                let avma = words[i];
                let size = words[i + 1];
                let bias = words[i + 2] as i64;
                i += 3;
                let name_words = name_len.div_ceil(8);
                let name_bytes: Vec<u8> = words[i..i + name_words]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect();
                assert!(
                    name_bytes[name_len..].iter().all(|&b| b == 0),
                    "MAP name padding"
                );
                i += name_words;
                let name = String::from_utf8(name_bytes[..name_len].to_vec()).unwrap();
                Rec::Map {
                    avma,
                    size,
                    bias,
                    name,
                }
            }
            7 => {
                let instructions = words[i];
                i += 1;
                assert_eq!(i, words.len(), "END is the last record");
                Rec::End { instructions }
            }
            _ => unreachable!(),
        };
        if matches!(
            rec,
            Rec::Load { .. } | Rec::Store { .. } | Rec::Modify { .. }
        ) {
            assert!((1..=4095).contains(&size), "access size {size}");
        }
        recs.push(rec);
    }
    assert!(
        matches!(recs.last(), Some(Rec::End { .. })),
        "stream ends with END"
    );
    recs
}

fn setup() -> Option<TracerSetup> {
    match tracer::prepare() {
        Ok(s) => Some(s),
        Err(e) => {
            // CI has valgrind; a machine without it cannot run these tests.
            skipped!("{e}");
            None
        }
    }
}

fn selftest() -> &'static str {
    env!("CARGO_BIN_EXE_tracer-selftest")
}

/// Runs `program args` under oltptrace; returns (records, stdout).
fn trace(
    setup: &TracerSetup,
    program: &Path,
    args: &[&str],
    trace_start: bool,
) -> (Vec<Rec>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.trace");
    let opts = TraceOptions {
        trace_start,
        ..TraceOptions::default()
    };
    let o = setup
        .command_with(program, args, &out, &opts)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "traced run failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let recs = parse(&std::fs::read(&out).unwrap());
    (recs, String::from_utf8(o.stdout).unwrap())
}

fn ninstr_sum(recs: &[Rec]) -> u64 {
    recs.iter()
        .map(|r| {
            if let Rec::Ifetch { ninstr, .. } = r {
                *ninstr as u64
            } else {
                0
            }
        })
        .sum()
}

fn end_count(recs: &[Rec]) -> u64 {
    match recs.last() {
        Some(Rec::End { instructions }) => *instructions,
        other => panic!("last record {other:?}"),
    }
}

/// cachegrind's "I refs" for the same program, run with the same VALGRIND_LIB.
fn cachegrind_irefs(setup: &TracerSetup, program: &Path, args: &[&str]) -> u64 {
    let o = setup
        .valgrind_command("cachegrind")
        .args(["--cache-sim=no", "--cachegrind-out-file=/dev/null"])
        .arg(program)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cachegrind failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("I   refs:"))
        .expect("cachegrind I refs line");
    line.rsplit(':')
        .next()
        .unwrap()
        .trim()
        .replace(',', "")
        .parse()
        .unwrap()
}

fn markers(recs: &[Rec]) -> Vec<(u8, u32)> {
    recs.iter()
        .filter_map(|r| {
            if let Rec::Marker { code, arg } = r {
                Some((*code, *arg))
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn whole_program_instruction_count_matches_cachegrind() {
    let Some(setup) = setup() else { return };
    let Some(prog) = tracer::test_program() else {
        skipped!("the C test program was not built (see the build warnings)");
        return;
    };
    let (recs, stdout) = trace(&setup, prog, &[], true);
    assert!(!stdout.is_empty());
    // THREAD, then the TRACE_START marker, before anything else.
    assert_eq!(recs[0], Rec::Thread { tid: 1 });
    assert_eq!(recs[1], Rec::Marker { code: 5, arg: 0 });
    let sum = ninstr_sum(&recs);
    assert_eq!(sum, end_count(&recs), "END count = sum of IFETCH ninstr");
    // Both tools count the instructions valgrind executes (IMarks), so the static
    // program, run in the same environment, gives exactly the same number.
    assert_eq!(
        sum,
        cachegrind_irefs(&setup, prog, &[]),
        "instructions vs cachegrind I refs"
    );
}

#[test]
fn rust_program_instruction_count_matches_cachegrind() {
    let Some(setup) = setup() else { return };
    let prog = Path::new(selftest());
    let (recs, _) = trace(&setup, prog, &["count"], true);
    let sum = ninstr_sum(&recs);
    assert_eq!(sum, end_count(&recs));
    let irefs = cachegrind_irefs(&setup, prog, &["count"]);
    // The Rust runtime reads /proc/self/maps at start-up (glibc's pthread_getattr_np for
    // the main thread's stack guard); under valgrind that file lists the tool's own
    // mappings, which differ between tools (file name, heap layout), so start-up parses
    // different text: about 2,200 instructions apart here. The static C program above,
    // which does not read it, matches exactly. Allow 5,000 instructions.
    let diff = sum.abs_diff(irefs);
    assert!(
        diff <= 5_000,
        "oltptrace {sum} vs cachegrind {irefs} instructions"
    );
}

/// PCLMULQDQ and CRC32 under the tool (which runs them on the host instead of VEX's
/// bit-by-bit helpers), traced and untraced, give the values they give natively.
#[test]
fn carry_less_multiply_and_crc32_match_the_host() {
    let Some(setup) = setup() else { return };
    #[cfg(target_arch = "x86_64")]
    {
        if !(std::is_x86_feature_detected!("pclmulqdq") && std::is_x86_feature_detected!("sse4.2"))
        {
            skipped!("the host has no PCLMULQDQ or SSE4.2");
            return;
        }
        // SAFETY: both features were detected just above.
        let want: Vec<String> = unsafe { clmul::clmul_values() }
            .iter()
            .map(u64::to_string)
            .collect();
        let want = want.join(" ");
        for start in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("t.trace");
            let opts = TraceOptions {
                trace_start: start,
                ..TraceOptions::default()
            };
            let o = setup
                .command_with(selftest(), ["clmul"], &out, &opts)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(
                String::from_utf8_lossy(&o.stdout).trim(),
                want,
                "trace-start {start}"
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = setup;
}

#[test]
fn markers_in_order_and_nothing_outside_tracing() {
    let Some(setup) = setup() else { return };
    let (recs, _) = trace(&setup, Path::new(selftest()), &["markers"], false);
    let (probe_scan, insert, delete) = (4, 6, 8);
    assert_eq!(
        markers(&recs),
        [
            (5, 0),
            (3, 11),
            (1, probe_scan),
            (2, probe_scan),
            (1, insert),
            (2, insert),
            (4, 11),
            (6, 0),
            (5, 0),
            (1, delete),
            (2, delete),
            (6, 0),
        ]
    );
    // Outside TRACE_START..TRACE_STOP only MAP and THREAD records.
    let mut on = false;
    for r in &recs {
        match r {
            Rec::Marker { code: 5, .. } => on = true,
            Rec::Marker { code: 6, .. } => on = false,
            Rec::Map { .. } | Rec::Thread { .. } | Rec::End { .. } => {}
            other => assert!(on, "{other:?} outside tracing"),
        }
    }
    // The work between the markers was traced, and the END count is what was traced.
    assert!(ninstr_sum(&recs) > 1000);
    assert_eq!(ninstr_sum(&recs), end_count(&recs));
    // THREAD precedes the first record that is not a MAP.
    let first = recs.iter().find(|r| !matches!(r, Rec::Map { .. })).unwrap();
    assert_eq!(*first, Rec::Thread { tid: 1 });
    check_maps(&recs, selftest());
    check_symbol_traced(&recs, selftest(), "tracer_selftest::work");
}

/// The MAP's bias turns traced addresses into ELF symbol addresses: some IFETCH of the
/// program lands in `symbol` (found with binutils' nm; skipped without it).
fn check_symbol_traced(recs: &[Rec], program: &str, symbol: &str) {
    let nm = match Command::new("nm").args(["-S", "-C", program]).output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => {
            skipped!("(symbol check) nm is not available");
            return;
        }
    };
    let (start, size) = nm
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.splitn(4, ' ').collect();
            (f.len() == 4 && f[3] == symbol).then(|| {
                (
                    u64::from_str_radix(f[0], 16).unwrap(),
                    u64::from_str_radix(f[1], 16).unwrap(),
                )
            })
        })
        .unwrap_or_else(|| panic!("nm does not list {symbol}"));
    let bias = recs
        .iter()
        .find_map(|r| match r {
            Rec::Map { name, bias, .. } if Path::new(name) == Path::new(program) => Some(*bias),
            _ => None,
        })
        .expect("MAP of the program");
    let hits = recs
        .iter()
        .filter(|r| match r {
            Rec::Ifetch { addr, .. } => {
                let elf = addr.wrapping_sub(bias as u64);
                elf >= start && elf < start + size
            }
            _ => false,
        })
        .count();
    assert!(
        hits > 0,
        "no IFETCH inside {symbol} at ELF {start:#x}+{size:#x}, bias {bias:#x}"
    );
}

/// Every IFETCH lies in an object whose MAP came before it; the program itself is mapped.
fn check_maps(recs: &[Rec], program: &str) {
    let mut maps: Vec<(u64, u64)> = Vec::new();
    let mut program_mapped = false;
    for r in recs {
        match r {
            Rec::Map {
                avma,
                size,
                bias,
                name,
            } => {
                assert!(*size > 0);
                if Path::new(name) == Path::new(program) {
                    program_mapped = true;
                    // A PIE: loaded above its ELF addresses.
                    assert!(*bias >= 0);
                }
                maps.push((*avma, avma + size));
            }
            Rec::Ifetch { addr, .. } => {
                assert!(
                    maps.iter().any(|&(lo, hi)| lo <= *addr && *addr < hi),
                    "IFETCH at {addr:#x} before any MAP covering it"
                );
            }
            _ => {}
        }
    }
    assert!(program_mapped, "no MAP for {program}");
}

#[test]
fn known_buffer_accesses_have_exact_addresses_and_sizes() {
    let Some(setup) = setup() else { return };
    let (recs, stdout) = trace(&setup, Path::new(selftest()), &["buffer"], false);
    let base = u64::from_str_radix(
        stdout
            .trim()
            .strip_prefix("buffer 0x")
            .expect("selftest prints the buffer address"),
        16,
    )
    .unwrap();
    let in_page = |a: u64| a >= base && a < base + 4096;
    let accesses: Vec<(char, u64, u32)> = recs
        .iter()
        .filter_map(|r| match *r {
            Rec::Load { addr, size } if in_page(addr) => Some(('L', addr - base, size)),
            Rec::Store { addr, size } if in_page(addr) => Some(('S', addr - base, size)),
            Rec::Modify { addr, size } if in_page(addr) => Some(('M', addr - base, size)),
            _ => None,
        })
        .collect();
    // The mov/load/movups/add/lock xadd sequence of the selftest, in program order.
    assert_eq!(
        accesses[..8],
        [
            ('S', 1, 1),
            ('S', 2, 2),
            ('S', 4, 4),
            ('S', 8, 8),
            ('L', 4, 4),
            ('S', 32, 16),
            ('M', 48, 8),
            ('M', 56, 8),
        ]
    );
    // fxsave [base+128]: valgrind models it as several stores covering the 512-byte area
    // from its start (the last 96 bytes are reserved and not written).
    let fx: Vec<_> = accesses[8..]
        .iter()
        .take_while(|a| a.0 == 'S' && (128..640).contains(&a.1))
        .collect();
    assert_eq!(fx.first().map(|a| a.1), Some(128));
    assert!(
        fx.iter().map(|a| a.2).sum::<u32>() >= 416,
        "fxsave stores: {fx:?}"
    );
    // rep movsb of 100 bytes from +512 to +1024: one byte load and store per iteration.
    let rest = &accesses[8 + fx.len()..];
    let expect: Vec<(char, u64, u32)> = (0..100)
        .flat_map(|i| [('L', 512 + i, 1), ('S', 1024 + i, 1)])
        .collect();
    assert_eq!(rest, &expect[..]);
    // Each access comes after an IFETCH: the first record after TRACE_START is one.
    let start = recs
        .iter()
        .position(|r| *r == Rec::Marker { code: 5, arg: 0 })
        .unwrap();
    let after: Vec<_> = recs[start + 1..]
        .iter()
        .filter(|r| !matches!(r, Rec::Map { .. }))
        .collect();
    assert!(
        matches!(after[0], Rec::Ifetch { .. }),
        "first record after start: {:?}",
        after[0]
    );
}

#[test]
fn threads_get_thread_records() {
    let Some(setup) = setup() else { return };
    let (recs, _) = trace(&setup, Path::new(selftest()), &["threads"], false);
    let mut tids: Vec<u32> = recs
        .iter()
        .filter_map(|r| {
            if let Rec::Thread { tid } = r {
                Some(*tid)
            } else {
                None
            }
        })
        .collect();
    // Consecutive THREAD records never repeat a tid (only switches are written).
    assert!(tids.windows(2).all(|w| w[0] != w[1]), "{tids:?}");
    tids.sort();
    tids.dedup();
    assert_eq!(tids, [1, 2, 3]);
    // Each worker's TXN markers are issued while that worker's THREAD is current.
    let mut current = 0;
    for r in &recs {
        match r {
            Rec::Thread { tid } => current = *tid,
            Rec::Marker { code: 3 | 4, arg } => assert_eq!(current, arg - 100 + 2, "{r:?}"),
            _ => {}
        }
    }
}

#[test]
fn thread_roles_follow_their_thread_records() {
    let Some(setup) = setup() else { return };
    let (recs, _) = trace(&setup, Path::new(selftest()), &["roles"], false);
    // Declared before tracing: main's role follows the THREAD record that TRACE_START
    // writes, before the start marker.
    assert_eq!(
        &recs[..3],
        &[
            Rec::Thread { tid: 1 },
            Rec::Marker { code: 7, arg: 2 },
            Rec::Marker { code: 5, arg: 0 }
        ],
        "{:?}",
        &recs[..recs.len().min(5)]
    );
    let mut current = 0;
    let mut roles = Vec::new();
    let mut role_of = std::collections::HashMap::new();
    for (i, r) in recs.iter().enumerate() {
        match r {
            Rec::Thread { tid } => current = *tid,
            Rec::Marker { code: 7, arg } => {
                // Right after the thread's THREAD record, or declared while tracing.
                assert!(
                    matches!(recs[i - 1], Rec::Thread { tid } if tid == current)
                        || matches!(recs[i - 1], Rec::Marker { code: 7, .. })
                        || *arg == 1,
                    "role marker out of place at {i}: {:?}",
                    &recs[i.saturating_sub(2)..i + 1]
                );
                roles.push((current, *arg));
                role_of.insert(current, *arg);
            }
            Rec::Marker { code: 3 | 4, .. } => {
                assert_eq!(role_of.get(&current), Some(&1), "a TXN marker off a worker")
            }
            _ => {}
        }
    }
    // The cleaner (thread 2, declared before tracing), then the worker that reuses its
    // thread id: reset to no role at creation, then declared while tracing.
    assert_eq!(roles, [(1, 2), (2, 3), (2, 0), (2, 1)], "{roles:?}");
}

#[test]
fn trace_out_to_unwritable_path_fails_cleanly() {
    let Some(setup) = setup() else { return };
    let out = PathBuf::from("/nonexistent-dir/t.trace");
    let o = setup.command(selftest(), ["count"], &out).output().unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("cannot open --trace-out"), "{stderr}");
}

#[test]
fn prepare_is_idempotent() {
    let Some(a) = setup() else { return };
    let b = tracer::prepare().unwrap();
    assert_eq!(a.lib_dir(), b.lib_dir());
    assert!(a.lib_dir().join("oltptrace-amd64-linux").is_file());
    assert!(a.lib_dir().join("cachegrind-amd64-linux").exists());
}

#[test]
fn streams_through_a_fifo() {
    let Some(setup) = setup() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("t.fifo");
    tracer::make_fifo(&fifo).unwrap();
    assert!(tracer::make_fifo(&fifo)
        .unwrap_err()
        .contains("cannot create FIFO"));
    let opts = TraceOptions {
        trace_start: true,
        ..TraceOptions::default()
    };
    let mut child = setup
        .command_with(selftest(), ["count"], &fifo, &opts)
        .spawn()
        .unwrap();
    // Reads while the program runs: the tool writes chunks far larger than the pipe's
    // 64 KiB, so the writer blocks on the FIFO until this reader catches up.
    let bytes = std::fs::read(&fifo).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(bytes.len() > 1 << 20, "stream of {} bytes", bytes.len());
    let recs = parse(&bytes);
    assert_eq!(ninstr_sum(&recs), end_count(&recs));
}

#[test]
fn nothing_is_recorded_without_trace_start() {
    let Some(setup) = setup() else { return };
    let (recs, stdout) = trace(&setup, Path::new(selftest()), &["count"], false);
    assert!(!stdout.is_empty(), "the program ran");
    assert_eq!(recs, [Rec::End { instructions: 0 }]);
}

#[test]
fn helper_and_inline_records_give_the_same_stream() {
    let Some(setup) = setup() else { return };
    let Some(prog) = tracer::test_program() else {
        skipped!("the C test program was not built (see the build warnings)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |mode: &str| {
        let out = dir.path().join(format!("{mode}.trace"));
        let opts = TraceOptions {
            trace_start: true,
            valgrind_args: vec![format!("--inline-records={mode}").into()],
            ..TraceOptions::default()
        };
        let o = setup
            .command_with(prog, [] as [&str; 0], &out, &opts)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(&out).unwrap()
    };
    let (inline, helper) = (run("yes"), run("no"));
    parse(&inline);
    // A static program in the same environment: byte-identical streams.
    assert!(
        inline == helper,
        "streams differ ({} vs {} bytes)",
        inline.len(),
        helper.len()
    );
}
