//! The SQL adapters side by side with the systems' own clients (issue 38), pairs run
//! back to back on one machine:
//!
//! - PostgreSQL: `pgbench` (TPC-B-like, scale 1, prepared statements) against
//!   `oltpscope run tpcb --engine postgres --pg-url URL` on the same private server
//!   (`pgserver`'s settings), at 1 and 2 clients, at read committed (pgbench's default)
//!   and serializable, with commit waiting for the WAL and with it off.
//! - SQLite: a loop of the same TPC-B transaction over prepared statements on the
//!   bundled library (the cheapest client there is: no kit, no typed rows) against
//!   `oltpscope run tpcb --engine sqlite`, at 1 and 2 threads, with the adapter's
//!   settings (WAL, `synchronous=NORMAL`, `BEGIN IMMEDIATE`, the same busy timeout and
//!   page cache).
//!
//! Run: `cargo bench -p oltpscope --bench native [-- postgres|sqlite] [--duration S]
//! [--clients 1,2]`. Prints one line per pair and the ratio adapter / native; the
//! figures and their machine go into docs/PERFORMANCE.md by hand. `OLTPSCOPE_BIN=PATH`
//! runs another oltpscope binary as the adapter (an earlier build, to compare builds
//! against the same native runs' kind).

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_oltpscope");

/// The oltpscope binary the adapter runs on: this build's, or `OLTPSCOPE_BIN`.
fn bin() -> String {
    std::env::var("OLTPSCOPE_BIN").unwrap_or_else(|_| BIN.to_string())
}

struct Opts {
    which: String,
    duration: u64,
    clients: Vec<usize>,
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let r = match opts.which.as_str() {
        "postgres" => postgres(&opts),
        "sqlite" => sqlite(&opts),
        _ => postgres(&opts).and_then(|_| sqlite(&opts)),
    };
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        which: "all".into(),
        duration: 10,
        clients: vec![1, 2],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            // cargo bench passes --bench to every harness-less bench.
            "--bench" => {}
            "postgres" | "sqlite" | "all" => o.which = a,
            "--duration" => {
                let v = args.next().ok_or("--duration needs seconds")?;
                o.duration = v
                    .parse()
                    .map_err(|_| format!("--duration: not a number of seconds: {v}"))?;
                if o.duration == 0 {
                    return Err("--duration must be at least 1".into());
                }
            }
            "--clients" => {
                let v = args.next().ok_or("--clients needs a list such as 1,2")?;
                o.clients = v
                    .split(',')
                    .map(|c| {
                        c.trim()
                            .parse::<usize>()
                            .ok()
                            .filter(|n| (1..=64).contains(n))
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!("--clients: not a list of 1..64: {v}"))?;
            }
            _ => {
                return Err(format!(
                    "unknown argument {a} (postgres|sqlite|all, --duration S, --clients 1,2)"
                ))
            }
        }
    }
    Ok(o)
}

/// Runs the oltpscope binary and returns (committed per second, abort rate, workers'
/// CPU share) from its JSON report.
fn adapter(args: &[&str], json: &Path) -> Result<(f64, f64, Option<f64>), String> {
    let bin = bin();
    let out = Command::new(&bin)
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .map_err(|e| format!("cannot run {bin}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "oltpscope {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = std::fs::read_to_string(json).map_err(|e| format!("{}: {e}", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("report: {e}"))?;
    let tps = v["throughput_tps"]
        .as_f64()
        .ok_or("report without throughput_tps")?;
    Ok((
        tps,
        v["abort_rate"].as_f64().unwrap_or(0.0),
        v["worker_cpu_busy"].as_f64(),
    ))
}

fn line(what: &str, native: f64, ours: (f64, f64, Option<f64>)) {
    let cpu = ours
        .2
        .map(|c| format!("{:.0}%", c * 100.0))
        .unwrap_or_else(|| "n/a".into());
    println!(
        "{what:<46} native {native:>9.0}  adapter {:>9.0}  ratio {:.2}  (adapter aborts {:.1}%, workers on CPU {cpu})",
        ours.0,
        ours.0 / native,
        ours.1 * 100.0
    );
}

fn postgres(o: &Opts) -> Result<(), String> {
    let server = pgserver::PgServer::start(&pgserver::PgOptions::default())?;
    let url = server.url();
    let pgbench = server.bindir().join("pgbench");
    let init = Command::new(&pgbench)
        .args(["-i", "-s", "1", "-q", &url])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", pgbench.display()))?;
    if !init.status.success() {
        return Err(format!(
            "pgbench -i: {}",
            String::from_utf8_lossy(&init.stderr).trim()
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("run.json");
    let d = o.duration.to_string();
    println!(
        "PostgreSQL TPC-B scale 1, {} s runs, pgbench then the adapter, one private server",
        o.duration
    );
    for sync in ["on", "off"] {
        // PGOPTIONS splits on spaces: read committed is the server's default, so it
        // needs no option of its own.
        for (iso, iso_opt) in [
            ("read-committed", ""),
            (
                "serializable",
                " -c default_transaction_isolation=serializable",
            ),
        ] {
            for &c in &o.clients {
                let cs = c.to_string();
                let out = Command::new(&pgbench)
                    .env(
                        "PGOPTIONS",
                        format!("-c synchronous_commit={sync}{iso_opt}"),
                    )
                    // Retry serialization failures as the adapter does (PostgreSQL 15+).
                    .args([
                        "-n",
                        "-M",
                        "prepared",
                        "--max-tries=0",
                        "-c",
                        &cs,
                        "-j",
                        &cs,
                        "-T",
                        &d,
                        &url,
                    ])
                    .output()
                    .map_err(|e| format!("pgbench: {e}"))?;
                let text = String::from_utf8_lossy(&out.stdout);
                let tps = text
                    .lines()
                    .find(|l| l.starts_with("tps = "))
                    .and_then(|l| l["tps = ".len()..].split_whitespace().next())
                    .and_then(|t| t.parse::<f64>().ok())
                    .ok_or_else(|| {
                        format!(
                            "pgbench printed no tps: {}",
                            String::from_utf8_lossy(&out.stderr).trim()
                        )
                    })?;
                let ours = adapter(
                    &[
                        "run",
                        "tpcb",
                        "--engine",
                        "postgres",
                        "--pg-url",
                        &url,
                        "--threads",
                        &cs,
                        "--duration",
                        &d,
                        "--isolation",
                        iso,
                        "--pg-sync",
                        sync,
                    ],
                    &json,
                )?;
                line(
                    &format!("{c} client(s), {iso}, synchronous_commit {sync}"),
                    tps,
                    ours,
                );
            }
        }
    }
    server.stop()
}

/// TPC-B on the bundled SQLite with nothing between the loop and the library.
fn sqlite(o: &Opts) -> Result<(), String> {
    println!(
        "SQLite TPC-B scale 1 (100,000 accounts), {} s runs, WAL, synchronous=NORMAL, a loop on the bundled library then the adapter",
        o.duration
    );
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("run.json");
    for &c in &o.clients {
        let db = dir.path().join(format!("loop-{c}.sqlite"));
        sqlite_load(&db).map_err(|e| format!("sqlite load: {e}"))?;
        let tps = sqlite_loop(&db, c, Duration::from_secs(o.duration))
            .map_err(|e| format!("sqlite loop: {e}"))?;
        let cs = c.to_string();
        let d = o.duration.to_string();
        let ours = adapter(
            &[
                "run",
                "tpcb",
                "--engine",
                "sqlite",
                "--threads",
                &cs,
                "--duration",
                &d,
            ],
            &json,
        )?;
        line(&format!("{c} thread(s), BEGIN IMMEDIATE"), tps, ours);
    }
    Ok(())
}

const ACCOUNTS: i64 = 100_000;
const TELLERS: i64 = 10;

fn sqlite_conn(db: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let c = rusqlite::Connection::open(db)?;
    // The adapter's settings (engine_sqlite): busy timeout, page cache, synchronous.
    c.busy_timeout(engine_sqlite::BUSY_TIMEOUT)?;
    c.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536;")?;
    Ok(c)
}

fn sqlite_load(db: &Path) -> rusqlite::Result<()> {
    let mut c = sqlite_conn(db)?;
    c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
    let t = c.transaction()?;
    t.execute_batch(
        "CREATE TABLE branch (b_id INTEGER PRIMARY KEY, b_balance INTEGER NOT NULL, b_filler TEXT);
         CREATE TABLE teller (t_id INTEGER PRIMARY KEY, t_b_id INTEGER NOT NULL, t_balance INTEGER NOT NULL, t_filler TEXT);
         CREATE TABLE account (a_id INTEGER PRIMARY KEY, a_b_id INTEGER NOT NULL, a_balance INTEGER NOT NULL, a_filler TEXT);
         CREATE TABLE history (h_t_id INTEGER, h_b_id INTEGER, h_a_id INTEGER, h_delta INTEGER, h_time INTEGER, h_filler TEXT);
         INSERT INTO branch VALUES (1, 0, printf('%.88c', 'b'));",
    )?;
    {
        let mut st = t.prepare("INSERT INTO teller VALUES (?1, 1, 0, printf('%.84c', 't'))")?;
        for i in 1..=TELLERS {
            st.execute([i])?;
        }
        let mut st = t.prepare("INSERT INTO account VALUES (?1, 1, 0, printf('%.84c', 'a'))")?;
        for i in 1..=ACCOUNTS {
            st.execute([i])?;
        }
    }
    t.commit()
}

fn sqlite_loop(db: &Path, threads: usize, d: Duration) -> Result<f64, String> {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let failed = std::sync::Mutex::new(None::<String>);
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..threads {
            let (stop, done, failed) = (&stop, &done, &failed);
            s.spawn(move || {
                if let Err(e) = sqlite_worker(db, w as u64, stop, done) {
                    *failed.lock().unwrap() = Some(e.to_string());
                    stop.store(true, Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(d);
        stop.store(true, Ordering::Relaxed);
    });
    let secs = start.elapsed().as_secs_f64();
    if let Some(e) = failed.into_inner().unwrap() {
        return Err(e);
    }
    Ok(done.load(Ordering::Relaxed) as f64 / secs)
}

fn sqlite_worker(db: &Path, w: u64, stop: &AtomicBool, done: &AtomicU64) -> rusqlite::Result<()> {
    let c = sqlite_conn(db)?;
    let mut begin = c.prepare("BEGIN IMMEDIATE")?;
    let mut acct = c.prepare("UPDATE account SET a_balance = a_balance + ?1 WHERE a_id = ?2")?;
    let mut read = c.prepare("SELECT a_balance FROM account WHERE a_id = ?1")?;
    let mut tell = c.prepare("UPDATE teller SET t_balance = t_balance + ?1 WHERE t_id = ?2")?;
    let mut branch = c.prepare("UPDATE branch SET b_balance = b_balance + ?1 WHERE b_id = 1")?;
    let mut hist =
        c.prepare("INSERT INTO history VALUES (?1, 1, ?2, ?3, ?4, printf('%.22c', 'h'))")?;
    let mut commit = c.prepare("COMMIT")?;
    // xorshift: the loop's own draw, as cheap as pgbench's.
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (w + 1);
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    while !stop.load(Ordering::Relaxed) {
        let a = (next() % ACCOUNTS as u64) as i64 + 1;
        let t = (next() % TELLERS as u64) as i64 + 1;
        let delta = (next() % 10_000) as i64 - 5_000;
        begin.execute([])?;
        acct.execute([delta, a])?;
        let _bal: i64 = read.query_row([a], |r| r.get(0))?;
        tell.execute([delta, t])?;
        branch.execute([delta])?;
        hist.execute([t, a, delta, 0])?;
        commit.execute([])?;
        done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
