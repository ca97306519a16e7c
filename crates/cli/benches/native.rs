//! The SQL adapters side by side with the systems' own clients (issue 38), pairs run
//! back to back on one machine:
//!
//! - PostgreSQL: `pgbench` (TPC-B-like, scale 1, prepared statements) against
//!   `oltpscope run tpcb --engine postgres --pg-url URL` on the same private server
//!   (`pgserver`'s settings), at 1 and 2 clients, at read committed (pgbench's default)
//!   and serializable, with commit waiting for the WAL and with it off. A one-client
//!   pair runs with the client and its backend on CPU 0 (`taskset`; `--no-pin` not):
//!   unpinned, every round trip woke an idle core of this VM, which cost pgbench (7 round
//!   trips a transaction) 482 txn/s against 3,443 pinned (2026-11-29, no WAL wait), so
//!   the pair measured the VM's wake-ups, not the clients.
//! - SQLite: a loop of the same TPC-B transaction over prepared statements on the
//!   bundled library (the cheapest client there is: no kit, no typed rows) against
//!   `oltpscope run tpcb --engine sqlite`, at 1 and 2 threads, with the adapter's
//!   settings (WAL, `synchronous=NORMAL`, `BEGIN IMMEDIATE`, the same busy timeout and
//!   page cache). `--loop plain,adapter,...` runs loops doing one or more things as the
//!   adapter does them (`WITHOUT ROWID` tables, History keyed, the account's balance by
//!   `RETURNING`, reads before writes, History's rowid packed as the kit packs it, a
//!   pause between transactions, the adapter's writer gate), each beside the same
//!   adapter run. `--adapter-first`
//!   runs the adapter before the loops (alternate it across passes).
//!
//! Run: `cargo bench -p oltpscope --bench native [-- postgres|sqlite] [--duration S]
//! [--clients 1,2] [--no-pin] [--loop plain,adapter] [--adapter-first]`. Prints one line
//! per pair and the ratio adapter / native; the figures and their machine go into
//! docs/PERFORMANCE.md by hand. `OLTPSCOPE_BIN=PATH` runs another oltpscope binary as the adapter (an earlier
//! build, to compare builds against the same native runs' kind).

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
    /// The SQLite loops to run beside the adapter (`--loop`): the plain loop, and loops
    /// doing one or more things the adapter does, so that the gap splits by cause.
    loops: Vec<LoopShape>,
    /// One-client PostgreSQL pairs with the client and its backend on CPU 0 (`--no-pin`
    /// turns it off).
    pin: bool,
    /// SQLite: the adapter's run before the loops of its thread count instead of after
    /// them (`--adapter-first`), so that alternating passes cancel what the run before
    /// leaves behind (the disk's queued writes, the page cache).
    adapter_first: bool,
}

/// What a SQLite loop does the way the adapter does it (`--loop`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct LoopShape {
    /// Branch, Teller and Account `WITHOUT ROWID`, as the adapter made them before
    /// 2026-11-29 (the plain loop and the adapter now: rowid tables, the integer key an
    /// alias of the rowid).
    without_rowid: bool,
    /// Each balance read, then written (`SELECT` of the whole row, `UPDATE .. SET
    /// balance = ?`), as the kit's updates were before its adds: 9 statements per
    /// transaction against 7 (the plain loop adds the delta in SQL).
    read_write: bool,
    /// The account's new balance from its update (`UPDATE .. RETURNING`), as the adapter's
    /// `add_i64`, not from a `SELECT` after it (pgbench's): 6 statements against 7.
    returning: bool,
    /// History keyed by (run, worker, sequence number) `WITHOUT ROWID`, as the kit's and
    /// the adapter's were until 2026-11-29 (the plain loop, and the kit now: rows
    /// appended by rowid; the kit's rowid is its packed History key).
    history_key: bool,
    /// History rows inserted with the kit's rowid (`Tpcb::history_key`: run, worker,
    /// sequence number packed into one integer, the worker above the sequence number):
    /// at two threads the first worker's rows go into the middle of the table.
    kit_rowid: bool,
    /// History rows inserted with the rowid packed as (run, sequence number, worker):
    /// every worker's rows go near the table's end.
    seq_rowid: bool,
    /// A 5 us spin between COMMIT and the next BEGIN, as the driver's and kit's work
    /// between the adapter's transactions (the write lock is free meanwhile).
    gap: bool,
    /// The adapter's writer gate (`engine_sqlite::gate`): taken before `BEGIN
    /// IMMEDIATE`, given up when the write lock is free, a waiter woken when the writer
    /// before it starts a checkpoint.
    gate: bool,
}

impl LoopShape {
    const ADAPTER: LoopShape = LoopShape {
        without_rowid: false,
        read_write: false,
        returning: true,
        history_key: false,
        kit_rowid: false,
        seq_rowid: false,
        gap: false,
        gate: false,
    };

    fn parse(v: &str) -> Result<LoopShape, String> {
        let mut s = LoopShape::default();
        for part in v.split('+') {
            match part.trim() {
                "plain" => {}
                "adapter" => s = LoopShape::ADAPTER,
                "without-rowid" => s.without_rowid = true,
                "read-write" => s.read_write = true,
                "returning" => s.returning = true,
                "history-key" => s.history_key = true,
                "kit-rowid" => s.kit_rowid = true,
                "seq-rowid" => s.seq_rowid = true,
                "gap" => s.gap = true,
                "gate" => s.gate = true,
                p => {
                    return Err(format!(
                        "--loop: unknown shape {p} (plain, adapter, without-rowid, read-write, returning, history-key, kit-rowid, seq-rowid, gap, gate, joined by +)"
                    ))
                }
            }
        }
        Ok(s)
    }

    fn name(self) -> String {
        if self == LoopShape::default() {
            return "plain loop".into();
        }
        if self == LoopShape::ADAPTER {
            return "loop as the adapter".into();
        }
        let parts: Vec<&str> = [
            (self.without_rowid, "without-rowid"),
            (self.read_write, "read-write"),
            (self.returning, "returning"),
            (self.history_key, "history-key"),
            (self.kit_rowid, "kit-rowid"),
            (self.seq_rowid, "seq-rowid"),
            (self.gap, "gap"),
            (self.gate, "gate"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        format!("loop {}", parts.join("+"))
    }
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
        loops: vec![LoopShape::default()],
        pin: true,
        adapter_first: false,
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
            "--no-pin" => o.pin = false,
            "--adapter-first" => o.adapter_first = true,
            "--loop" => {
                let v = args.next().ok_or("--loop needs a list such as plain,adapter")?;
                o.loops = v
                    .split(',')
                    .map(LoopShape::parse)
                    .collect::<Result<_, _>>()?;
            }
            _ => {
                return Err(format!(
                    "unknown argument {a} (postgres|sqlite|all, --duration S, --clients 1,2, --loop plain,adapter, --adapter-first)"
                ))
            }
        }
    }
    Ok(o)
}

/// Runs the oltpscope binary and returns (committed per second, abort rate, workers'
/// CPU share) from its JSON report.
fn adapter(args: &[&str], json: &Path) -> Result<(f64, f64, Option<f64>), String> {
    adapter_cmd(Command::new(bin()), args, json)
}

/// `adapter` through `cmd` (the binary, or a launcher of it).
fn adapter_cmd(
    mut cmd: Command,
    args: &[&str],
    json: &Path,
) -> Result<(f64, f64, Option<f64>), String> {
    let bin = bin();
    let out = cmd
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
                let pin = o.pin && c == 1;
                let pm = server.pid().ok_or("the server has no postmaster")?;
                // Backends are forked by the postmaster: they inherit its CPUs.
                set_cpus(pm, pin)?;
                let native = pgbench_tps(&pgbench, &url, c, &d, sync, iso_opt, pin);
                let ours = native.as_ref().map_err(String::clone).and_then(|_| {
                    adapter_on(
                        pin,
                        &[
                            "run",
                            "tpcb",
                            "--engine",
                            "postgres",
                            "--pg-url",
                            &url,
                            "--threads",
                            &c.to_string(),
                            "--duration",
                            &d,
                            "--isolation",
                            iso,
                            "--pg-sync",
                            sync,
                        ],
                        &json,
                    )
                });
                set_cpus(pm, false)?;
                let on = if pin { ", client+backend on CPU 0" } else { "" };
                line(
                    &format!("{c} client(s), {iso}, synchronous_commit {sync}{on}"),
                    native?,
                    ours?,
                );
            }
        }
    }
    server.stop()
}

/// pgbench's TPC-B rate at `c` clients (`pin`: on CPU 0).
fn pgbench_tps(
    pgbench: &Path,
    url: &str,
    c: usize,
    d: &str,
    sync: &str,
    iso_opt: &str,
    pin: bool,
) -> Result<f64, String> {
    let cs = c.to_string();
    let mut cmd = on_cpu0(pin, pgbench);
    let out = cmd
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
            d,
            url,
        ])
        .output()
        .map_err(|e| format!("pgbench: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l["tps = ".len()..].split_whitespace().next())
        .and_then(|t| t.parse::<f64>().ok())
        .ok_or_else(|| {
            format!(
                "pgbench printed no tps: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
}

/// A command for `program`, run on CPU 0 when `pin` (`taskset -c 0`).
fn on_cpu0(pin: bool, program: impl AsRef<std::ffi::OsStr>) -> Command {
    if pin {
        let mut c = Command::new("taskset");
        c.args(["-c", "0"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// The adapter's run (`pin`: on CPU 0).
fn adapter_on(pin: bool, args: &[&str], json: &Path) -> Result<(f64, f64, Option<f64>), String> {
    adapter_cmd(on_cpu0(pin, bin()), args, json)
}

/// Puts process `pid` on CPU 0 (`pin`) or on every CPU (`taskset -p`).
fn set_cpus(pid: u32, pin: bool) -> Result<(), String> {
    let cpus = if pin {
        "0".to_string()
    } else {
        format!(
            "0-{}",
            std::thread::available_parallelism().map_or(1, |n| n.get()) - 1
        )
    };
    let out = Command::new("taskset")
        .args(["-p", "-c", &cpus, &pid.to_string()])
        .output()
        .map_err(|e| format!("cannot run taskset: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "taskset -p -c {cpus} {pid}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// TPC-B on the bundled SQLite with nothing between the loop and the library.
fn sqlite(o: &Opts) -> Result<(), String> {
    println!(
        "SQLite TPC-B scale 1 (100,000 accounts), {} s runs, WAL, synchronous=NORMAL, the loops on the bundled library then the adapter",
        o.duration
    );
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("run.json");
    for &c in &o.clients {
        let cs = c.to_string();
        let d = o.duration.to_string();
        let run_adapter = || {
            adapter(
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
            )
        };
        let first = if o.adapter_first {
            Some(run_adapter()?)
        } else {
            None
        };
        let mut natives = Vec::new();
        for (i, &shape) in o.loops.iter().enumerate() {
            let db = dir.path().join(format!("loop-{c}-{i}.sqlite"));
            sqlite_load(&db, shape).map_err(|e| format!("sqlite load: {e}"))?;
            let tps = sqlite_loop(&db, shape, c, Duration::from_secs(o.duration))
                .map_err(|e| format!("sqlite loop: {e}"))?;
            // Removed at once, as the adapter removes its temporary database: its pages
            // still waiting to be written would otherwise load the disk under the run
            // that follows.
            for f in ["", "-wal", "-shm"] {
                let p = dir.path().join(format!("loop-{c}-{i}.sqlite{f}"));
                if p.exists() {
                    std::fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                }
            }
            natives.push((shape, tps));
        }
        let ours = match first {
            Some(r) => r,
            None => run_adapter()?,
        };
        for (shape, tps) in natives {
            line(&format!("{c} thread(s), {}", shape.name()), tps, ours);
        }
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

fn sqlite_load(db: &Path, shape: LoopShape) -> rusqlite::Result<()> {
    let mut c = sqlite_conn(db)?;
    c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
    let t = c.transaction()?;
    // The adapter's declarations (sqlmap) when the shape asks for them.
    let (pk, tail) = if shape.without_rowid {
        ("INTEGER NOT NULL", " WITHOUT ROWID")
    } else {
        ("INTEGER PRIMARY KEY", "")
    };
    let key = |c: &str| {
        if shape.without_rowid {
            format!(", PRIMARY KEY ({c})")
        } else {
            String::new()
        }
    };
    let history = if shape.history_key {
        "CREATE TABLE history (h_t_id INTEGER NOT NULL, h_b_id INTEGER NOT NULL, h_a_id INTEGER NOT NULL, h_delta INTEGER NOT NULL, h_time INTEGER NOT NULL, h_filler TEXT NOT NULL, h_run INTEGER NOT NULL, h_worker INTEGER NOT NULL, h_seq INTEGER NOT NULL, PRIMARY KEY (h_run, h_worker, h_seq)) WITHOUT ROWID".to_string()
    } else {
        "CREATE TABLE history (h_t_id INTEGER, h_b_id INTEGER, h_a_id INTEGER, h_delta INTEGER, h_time INTEGER, h_filler TEXT, h_run INTEGER, h_worker INTEGER, h_seq INTEGER)".into()
    };
    t.execute_batch(&format!(
        "CREATE TABLE branch (b_id {pk}, b_balance INTEGER NOT NULL, b_filler TEXT NOT NULL{}){tail};
         CREATE TABLE teller (t_id {pk}, t_b_id INTEGER NOT NULL, t_balance INTEGER NOT NULL, t_filler TEXT NOT NULL{}){tail};
         CREATE TABLE account (a_id {pk}, a_b_id INTEGER NOT NULL, a_balance INTEGER NOT NULL, a_filler TEXT NOT NULL{}){tail};
         {history};
         INSERT INTO branch VALUES (1, 0, printf('%.88c', 'b'));",
        key("b_id"),
        key("t_id"),
        key("a_id"),
    ))?;
    {
        let mut st = t.prepare("INSERT INTO teller VALUES (?1, 1, 0, printf('%.80c', 't'))")?;
        for i in 1..=TELLERS {
            st.execute([i])?;
        }
        let mut st = t.prepare("INSERT INTO account VALUES (?1, 1, 0, printf('%.80c', 'a'))")?;
        for i in 1..=ACCOUNTS {
            st.execute([i])?;
        }
    }
    t.commit()
}

fn sqlite_loop(db: &Path, shape: LoopShape, threads: usize, d: Duration) -> Result<f64, String> {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let failed = std::sync::Mutex::new(None::<String>);
    let gate = shape
        .gate
        .then(std::sync::Arc::<engine_sqlite::gate::WriterGate>::default);
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..threads {
            let (stop, done, failed, gate) = (&stop, &done, &failed, gate.clone());
            s.spawn(move || {
                if let Err(e) = sqlite_worker(db, shape, w as u64, gate, stop, done) {
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

/// One balance change: by delta in SQL (the plain loop), or the row read then the new
/// balance written (`LoopShape::read_write`).
fn change(
    shape: LoopShape,
    (read, col): &mut (rusqlite::Statement<'_>, usize),
    write: &mut rusqlite::Statement<'_>,
    id: i64,
    delta: i64,
    returns: bool,
) -> rusqlite::Result<i64> {
    if shape.read_write {
        // The whole row, as the adapter's get read it.
        let bal: i64 = read.query_row([id], |r| r.get(*col))?;
        write.execute([bal + delta, id])?;
        Ok(bal + delta)
    } else if shape.returning && returns {
        write.query_row([delta, id], |r| r.get(0))
    } else {
        write.execute([delta, id])?;
        Ok(0)
    }
}

fn sqlite_worker(
    db: &Path,
    shape: LoopShape,
    w: u64,
    gate: Option<std::sync::Arc<engine_sqlite::gate::WriterGate>>,
    stop: &AtomicBool,
    done: &AtomicU64,
) -> rusqlite::Result<()> {
    let c = sqlite_conn(db)?;
    let writer = gate
        .map(|g| engine_sqlite::gate::Writer::install(&c, g))
        .transpose()?;
    let (set, whole) = if shape.read_write {
        ("= ?1", "*")
    } else {
        ("= {} + ?1", "")
    };
    let upd = |t: &str, p: &str| {
        let col = format!("{p}_balance");
        let v = set.replace("{}", &col);
        // The account's update returns its new balance in the `returning` shape.
        let ret = if shape.returning && t == "account" {
            format!(" RETURNING {col}")
        } else {
            String::new()
        };
        c.prepare(&format!("UPDATE {t} SET {col} {v} WHERE {p}_id = ?2{ret}"))
    };
    let sel = |t: &str, p: &str| -> rusqlite::Result<(rusqlite::Statement<'_>, usize)> {
        // The plain loop reads the account's balance after its update (pgbench's
        // SELECT); the read-write loop reads each row before changing it.
        let (cols, col) = if whole.is_empty() {
            (format!("{p}_id, {p}_balance"), 1)
        } else {
            // The balance is the second column of a branch, the third of the others.
            (whole.to_string(), if t == "branch" { 1 } else { 2 })
        };
        Ok((
            c.prepare(&format!("SELECT {cols} FROM {t} WHERE {p}_id = ?1"))?,
            col,
        ))
    };
    let mut begin = c.prepare("BEGIN IMMEDIATE")?;
    let (mut acct, mut acct_r) = (upd("account", "a")?, sel("account", "a")?);
    let (mut tell, mut tell_r) = (upd("teller", "t")?, sel("teller", "t")?);
    let (mut branch, mut branch_r) = (upd("branch", "b")?, sel("branch", "b")?);
    let mut hist = c.prepare(if shape.kit_rowid || shape.seq_rowid {
        "INSERT INTO history (h_t_id, h_b_id, h_a_id, h_delta, h_time, h_filler, h_run, h_worker, h_seq, rowid) VALUES (?1, 1, ?2, ?3, ?4, printf('%.24c', 'h'), 1, ?5, ?6, ?7)"
    } else {
        "INSERT INTO history VALUES (?1, 1, ?2, ?3, ?4, printf('%.24c', 'h'), 1, ?5, ?6)"
    })?;
    let mut commit = c.prepare("COMMIT")?;
    // xorshift: the loop's own draw, as cheap as pgbench's.
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (w + 1);
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seq = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let a = (next() % ACCOUNTS as u64) as i64 + 1;
        let t = (next() % TELLERS as u64) as i64 + 1;
        let delta = (next() % 10_000) as i64 - 5_000;
        seq += 1;
        if let Some(w) = &writer {
            if !w.enter(engine_sqlite::BUSY_TIMEOUT) {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    Some("the writer gate stayed taken".into()),
                ));
            }
        }
        begin.execute([])?;
        change(shape, &mut acct_r, &mut acct, a, delta, true)?;
        if !shape.read_write && !shape.returning {
            let _bal: i64 = acct_r.0.query_row([a], |r| r.get(1))?;
        }
        change(shape, &mut tell_r, &mut tell, t, delta, false)?;
        change(shape, &mut branch_r, &mut branch, 1, delta, false)?;
        // The kit's packing (run 1): 12 bits of worker, 34 of sequence number.
        let p = [t, a, delta, 0, w as i64, seq];
        if shape.kit_rowid {
            hist.execute(rusqlite::params_from_iter(
                p.iter().chain([&(1 << 46 | (w as i64) << 34 | seq)]),
            ))?;
        } else if shape.seq_rowid {
            hist.execute(rusqlite::params_from_iter(
                p.iter().chain([&(1 << 46 | seq << 12 | w as i64)]),
            ))?;
        } else {
            hist.execute(p)?;
        }
        commit.execute([])?;
        if let Some(w) = &writer {
            w.committed();
        }
        done.fetch_add(1, Ordering::Relaxed);
        if shape.gap {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_micros(5) {
                std::hint::spin_loop();
            }
        }
    }
    Ok(())
}
