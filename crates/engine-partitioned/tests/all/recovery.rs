//! The partitioned engine's durability: a snapshot after the load plus the command log,
//! replayed by the caller. A killed child process loses no acknowledged `Sync` commit
//! and logs no aborted one; a recovered database equals the one that stopped (with
//! another partition count too); a torn tail is cut (only when not read-only); damage
//! in the middle, a damaged snapshot, a missing, foreign or other database's log are
//! refused in one line; a writing transaction without its command is refused; a
//! commit that finds the log buffer full waits until the flusher has taken it (a stuck
//! disk holds commits back). With checkpoints: a checkpoint plus the commands after
//! it recovers the same database, the log before it is freed, killed processes
//! checkpointing all the time lose nothing, and a log cut behind a snapshot, an older
//! snapshot put back, or another database's snapshot are refused.

use api::key::Key;
use api::{
    Engine, EngineOptions, Error, IndexKind, LogMode, Partitioning, Schema, Session, TableDef,
    TableId, Worker,
};
use engine_partitioned::{PartitionedEngine, PartitionedOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ACCTS: u32 = 64;
const START: i64 = 1000;
const ACCT: TableId = TableId(0);
const SEEN: TableId = TableId(1);
const LEDGER: TableId = TableId(2);

/// Accounts partitioned by number, a shared (unpartitioned) table of command ids
/// that every tenth command writes (so it owns every partition), and a ledger of every
/// committed command's id, placed with its source account.
fn schema() -> Schema {
    let mut s = Schema::new();
    s.add(
        TableDef::new("acct", 8, IndexKind::Hash, ACCTS as u64).partitioned(Partitioning {
            values: ACCTS as u64,
            of_key: |_, k| (k.len() >= 4).then(|| api::key::read_u32(k, 0) as u64),
            of_row: None,
        }),
    );
    s.add(TableDef::new("seen", 8, IndexKind::BTree, 1000));
    s.add(
        TableDef::new("ledger", 8, IndexKind::BTree, 100_000).partitioned(Partitioning {
            values: ACCTS as u64,
            of_key: |_, k| (k.len() >= 4).then(|| api::key::read_u32(k, 0) as u64),
            of_row: None,
        }),
    );
    s
}

fn k32(v: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(v);
    k
}

fn k64(v: u64) -> Key {
    let mut k = Key::new();
    k.push_u64(v);
    k
}

/// A command: transfer `amount` from `from` to `to` (id, from, to, amount).
fn cmd(id: u64, from: u32, to: u32, amount: i64) -> Vec<u8> {
    let mut v = id.to_le_bytes().to_vec();
    v.extend(from.to_le_bytes());
    v.extend(to.to_le_bytes());
    v.extend(amount.to_le_bytes());
    v
}

fn id_of(c: &[u8]) -> u64 {
    u64::from_le_bytes(c[0..8].try_into().unwrap())
}

/// The body of a command (a replay runs exactly this).
fn apply<W: Worker>(s: &mut Session<W>, c: &[u8]) -> api::Result<()> {
    let id = id_of(c);
    let from = u32::from_le_bytes(c[8..12].try_into().unwrap());
    let to = u32::from_le_bytes(c[12..16].try_into().unwrap());
    let amount = i64::from_le_bytes(c[16..24].try_into().unwrap());
    for (a, d) in [(from, -amount), (to, amount)] {
        let found = s.update(ACCT, &k32(a), |r| {
            let b = i64::from_le_bytes(r[..8].try_into().unwrap()) + d;
            r.copy_from_slice(&b.to_le_bytes());
        })?;
        assert!(found, "account {a}");
    }
    if id.is_multiple_of(10) {
        s.insert(SEEN, &k64(id), &id.to_le_bytes())?;
    }
    let mut k = k32(from);
    k.push_u64(id);
    s.insert(LEDGER, &k, &id.to_le_bytes())?;
    Ok(())
}

/// Run command `c` as a transaction that hands its command to the engine; ids that
/// are multiples of 7 roll back after the body.
fn run_cmd<W: Worker>(s: &mut Session<W>, c: &[u8]) -> api::Result<()> {
    s.run(0, |s| {
        apply(s, c)?;
        s.command(0, c);
        if id_of(c).is_multiple_of(7) {
            return Err(Error::UserAbort);
        }
        Ok(())
    })
}

fn opts(dir: &Path, log: LogMode, threads: usize) -> EngineOptions {
    EngineOptions {
        threads,
        log,
        db_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
}

fn check_opts(dir: &Path) -> EngineOptions {
    EngineOptions {
        create: false,
        read_only: true,
        ..opts(dir, LogMode::Off, 1)
    }
}

fn open(o: &EngineOptions, parts: usize) -> api::Result<PartitionedEngine> {
    open_ckpt(o, parts, None)
}

/// `open` with a checkpoint threshold (`Some(u64::MAX)`: only `take`'s checkpoints).
fn open_ckpt(
    o: &EngineOptions,
    parts: usize,
    checkpoint_log_bytes: Option<u64>,
) -> api::Result<PartitionedEngine> {
    PartitionedEngine::open_with(
        Arc::new(schema()),
        o,
        PartitionedOptions {
            partitions: Some(parts),
            checkpoint_log_bytes,
            ..Default::default()
        },
    )
}

/// Load the accounts and mark the load done (a new database), or replay the recovered
/// commands; returns the recovered commands.
fn load_or_replay(e: &PartitionedEngine) -> Vec<api::Command> {
    let mut s = Session::new(e.worker(0));
    if !e.has_data() {
        s.run(0, |s| {
            for a in 0..ACCTS {
                s.insert(ACCT, &k32(a), &START.to_le_bytes())?;
            }
            Ok(())
        })
        .unwrap();
        e.load_done().unwrap();
        e.replay_done().unwrap();
        return Vec::new();
    }
    let cmds = e.recovered_commands().unwrap();
    for c in &cmds {
        s.run(c.txn_type, |s| apply(s, &c.input)).unwrap();
    }
    e.replay_done().unwrap();
    cmds
}

/// Sum of balances and the number of rows of `seen`.
fn totals(e: &PartitionedEngine) -> (i64, u64) {
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        let mut sum = 0;
        for a in 0..ACCTS {
            s.get(ACCT, &k32(a), |r| {
                sum += i64::from_le_bytes(r[..8].try_into().unwrap())
            })?;
        }
        let seen = s.scan(
            SEEN.primary(),
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            api::Dir::Forward,
            usize::MAX,
            |_, _| true,
        )?;
        Ok((sum, seen as u64))
    })
    .unwrap()
}

/// The ids in the ledger: every committed command's.
fn ledger_ids(e: &PartitionedEngine) -> std::collections::HashSet<u64> {
    let mut s = Session::new(e.worker(0));
    let mut ids = std::collections::HashSet::new();
    s.run(0, |s| {
        ids.clear();
        s.scan(
            LEDGER.primary(),
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            api::Dir::Forward,
            usize::MAX,
            |k, _| {
                ids.insert(api::key::read_u64(k, 4));
                true
            },
        )?;
        Ok(())
    })
    .unwrap();
    ids
}

/// `threads` workers each running `n` commands with ids `base + worker * 1e6 + i`.
fn run_commands(e: &PartitionedEngine, threads: usize, n: u64, base: u64) {
    std::thread::scope(|sc| {
        for w in 0..threads {
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w));
                for i in 0..n {
                    let id = base + w as u64 * 1_000_000 + i;
                    let (from, to) = (
                        (id * 7 % ACCTS as u64) as u32,
                        (id * 13 % ACCTS as u64) as u32,
                    );
                    let c = cmd(
                        id,
                        from,
                        (to + (to == from) as u32) % ACCTS,
                        (id % 50) as i64,
                    );
                    loop {
                        match run_cmd(&mut s, &c) {
                            Err(Error::Conflict(_)) => continue,
                            Ok(()) | Err(Error::UserAbort) => break,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
}

const CHILD_ENV: &str = "PARTITIONED_RECOVERY_CHILD";

/// The child process: open (load or recover) with `Sync` logging, then commit commands
/// from two threads forever, appending each acknowledged id to `acked` after commit.
/// `checkpoints`: one whenever the log grew (every `CHECK_INTERVAL`), so kills land
/// in their copies, files, renames and the freeing of the log.
fn child(dir: &Path, round: u64, checkpoints: bool) -> ! {
    let every = checkpoints.then_some(0);
    let e = open_ckpt(&opts(dir, LogMode::Sync, 2), 2, every).unwrap();
    load_or_replay(&e);
    // A line the previous child was killed in the middle of was never an
    // acknowledgement: cut it, or this child's first line would run on from it.
    let path = dir.join("acked");
    let text = std::fs::read(&path).unwrap_or_default();
    let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if whole < text.len() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(whole as u64)
            .unwrap();
    }
    let acked = std::sync::Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap(),
    );
    std::thread::scope(|sc| {
        for w in 0..2u64 {
            let (e, acked) = (&e, &acked);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w as usize));
                for i in 0.. {
                    let id = round * 1_000_000_000 + w * 100_000_000 + i;
                    let c = cmd(id, (i % 64) as u32, ((i * 5 + 1) % 64) as u32, 3);
                    match run_cmd(&mut s, &c) {
                        // One write per line, so a kill cuts no line but the last.
                        Ok(()) => acked
                            .lock()
                            .unwrap()
                            .write_all(format!("{id}\n").as_bytes())
                            .unwrap(),
                        Err(Error::UserAbort) | Err(Error::Conflict(_)) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    unreachable!("the child runs until killed")
}

fn acked_ids(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("acked")).unwrap_or_default();
    // A line cut by the kill is not an acknowledgement.
    let whole = text.rfind('\n').map_or("", |i| &text[..i]);
    whole.lines().map(|l| l.parse().unwrap()).collect()
}

#[test]
fn killed_processes_lose_no_acknowledged_commit() {
    killed("killed_processes_lose_no_acknowledged_commit", false);
}

#[test]
fn killed_processes_checkpointing_lose_no_acknowledged_commit() {
    killed(
        "killed_processes_checkpointing_lose_no_acknowledged_commit",
        true,
    );
}

/// `test`'s name as the harness knows it: its module path in the test binary (the
/// crate's tests are one binary, `tests/all`), then its own name.
fn harness_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    }
}

fn killed(test: &str, checkpoints: bool) {
    if let Ok(v) = std::env::var(CHILD_ENV) {
        let (dir, round) = v.split_once('|').unwrap();
        child(Path::new(dir), round.parse().unwrap(), checkpoints);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    for round in 1..=3u64 {
        let before = acked_ids(tmp.path()).len();
        let mut c = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &harness_name(test), "--nocapture"])
            .env(CHILD_ENV, format!("{}|{round}", dir.display()))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The child writes `acked` in the database directory; wait for some commits.
        let t0 = Instant::now();
        while acked_ids(&dir).len() < before + 30 {
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "the child committed nothing"
            );
            if let Some(st) = c.try_wait().unwrap() {
                panic!("the child exited: {st}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(round * 7));
        c.kill().unwrap();
        c.wait().unwrap();
        // Keep the acknowledgements apart from the database between rounds.
        std::fs::copy(dir.join("acked"), tmp.path().join("acked")).unwrap();

        let e = open(&check_opts(&dir), 3).unwrap();
        assert!(e.has_data());
        let cmds = load_or_replay(&e);
        let logged: std::collections::HashSet<u64> = cmds.iter().map(|c| id_of(&c.input)).collect();
        assert_eq!(logged.len(), cmds.len(), "a command logged twice");
        assert!(
            logged.iter().all(|i| i % 7 != 0),
            "a rolled-back command was logged"
        );
        let (sum, seen) = totals(&e);
        assert_eq!(
            sum,
            ACCTS as i64 * START,
            "round {round}: money made or lost"
        );
        // Every acknowledged command is in the ledger (replayed from the log after the
        // snapshot, or in the snapshot), and no rolled-back one.
        let in_db = ledger_ids(&e);
        assert!(in_db.iter().all(|i| i % 7 != 0), "a rollback in the ledger");
        assert!(logged.is_subset(&in_db));
        let acked = acked_ids(&dir);
        let lost: Vec<&u64> = acked.iter().filter(|i| !in_db.contains(i)).collect();
        assert!(
            lost.is_empty(),
            "round {round}: acknowledged commits lost: {lost:?}"
        );
        if !checkpoints {
            let lost: Vec<&u64> = acked.iter().filter(|i| !logged.contains(i)).collect();
            assert!(
                lost.is_empty(),
                "round {round}: acknowledged commits lost: {lost:?}"
            );
            assert_eq!(seen, logged.iter().filter(|i| *i % 10 == 0).count() as u64);
        }
    }
}

#[test]
fn a_recovered_database_equals_the_one_that_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let e = open(&opts(dir, LogMode::Async, 2), 2).unwrap();
    load_or_replay(&e);
    run_commands(&e, 2, 300, 0);
    let d1 = e.digest();
    let t1 = totals(&e);
    e.shutdown().unwrap();
    drop(e);
    // Another partition count: the snapshot's rows are placed again, the commands
    // replayed in log order.
    let e = open(&opts(dir, LogMode::Sync, 3), 3).unwrap();
    assert!(e.has_data());
    let n = load_or_replay(&e).len();
    assert_eq!(
        e.digest(),
        d1,
        "replaying {n} commands gave another database"
    );
    assert_eq!(totals(&e), t1);
    run_commands(&e, 3, 100, 10_000_000);
    let d2 = e.digest();
    e.shutdown().unwrap();
    drop(e);
    let e = open(&check_opts(dir), 1).unwrap();
    let m = load_or_replay(&e).len();
    assert!(
        m > n,
        "the second run's commands were appended ({m} vs {n})"
    );
    assert_eq!(e.digest(), d2);
    assert_eq!(totals(&e).0, ACCTS as i64 * START);
}

/// A clean database in `dir` with a few blocks of commands.
fn small_db(dir: &Path) {
    let e = open(&opts(dir, LogMode::Sync, 1), 1).unwrap();
    load_or_replay(&e);
    run_commands(&e, 1, 30, 0);
    e.shutdown().unwrap();
}

fn err_of(r: api::Result<PartitionedEngine>) -> String {
    match r {
        Ok(_) => panic!("opened"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_torn_tail_is_cut_and_damage_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    small_db(dir);
    let log = dir.join(engine_partitioned::log::LOG_FILE);
    let snap = dir.join(engine_partitioned::snapshot::SNAPSHOT_FILE);
    let good = std::fs::read(&log).unwrap();
    let n_good = {
        let e = open(&check_opts(dir), 1).unwrap();
        load_or_replay(&e).len()
    };
    assert!(n_good > 10);

    // A torn tail: half a block. Read-only opening leaves it; a run cuts it.
    let mut torn = good.clone();
    torn.extend_from_slice(&good[32..32 + 20]);
    std::fs::write(&log, &torn).unwrap();
    let e = open(&check_opts(dir), 1).unwrap();
    assert_eq!(load_or_replay(&e).len(), n_good);
    drop(e);
    assert_eq!(std::fs::read(&log).unwrap(), torn, "check wrote to the log");
    let e = open(&opts(dir, LogMode::Async, 1), 1).unwrap();
    assert_eq!(load_or_replay(&e).len(), n_good);
    e.shutdown().unwrap();
    drop(e);
    assert_eq!(
        std::fs::read(&log).unwrap(),
        good,
        "the torn tail was not cut"
    );

    // A flipped byte in the first block, valid blocks after it: refused, left alone.
    let mut bad = good.clone();
    bad[32 + engine_partitioned::log::BLOCK_HEADER_BYTES + 3] ^= 0x20;
    std::fs::write(&log, &bad).unwrap();
    let e = err_of(open(&opts(dir, LogMode::Async, 1), 1));
    assert!(
        e.contains("is damaged at byte 32") && e.contains("refused"),
        "{e}"
    );
    assert_eq!(std::fs::read(&log).unwrap(), bad);
    std::fs::write(&log, &good).unwrap();

    // A damaged snapshot.
    let snap_good = std::fs::read(&snap).unwrap();
    let mut s = snap_good.clone();
    let mid = s.len() / 2;
    s[mid] ^= 1;
    std::fs::write(&snap, &s).unwrap();
    let e = err_of(open(&check_opts(dir), 1));
    assert!(
        e.contains("checksum mismatch") && e.contains("refused"),
        "{e}"
    );
    std::fs::write(&snap, &snap_good).unwrap();

    // A foreign log, and another database's log.
    std::fs::write(
        &log,
        b"OLTPVLOG\x01\x00\x00\x00mvcc and more bytes here....",
    )
    .unwrap();
    let e = err_of(open(&check_opts(dir), 1));
    assert!(e.contains("not a partitioned-engine command log"), "{e}");
    let other = tmp.path().join("other");
    small_db(&other);
    std::fs::copy(other.join(engine_partitioned::log::LOG_FILE), &log).unwrap();
    let e = err_of(open(&check_opts(dir), 1));
    assert!(e.contains("belongs to another database"), "{e}");

    // A log of format 1 (an earlier build's, its own 24-byte block headers): refused
    // in one line naming --reload, before the snapshot is read, the files left alone.
    let mut old = good.clone();
    old[8..12].copy_from_slice(&1u32.to_le_bytes());
    let c = storage::logfile::crc(&[&old[0..28]]);
    old[28..32].copy_from_slice(&c.to_le_bytes());
    std::fs::write(&log, &old).unwrap();
    for o in [check_opts(dir), opts(dir, LogMode::Async, 1)] {
        let e = err_of(open(&o, 1));
        assert!(
            e.contains("log format 1, this oltpscope reads format 2")
                && e.contains("--reload")
                && !e.contains('\n'),
            "{e}"
        );
        assert_eq!(std::fs::read(&log).unwrap(), old);
        assert_eq!(std::fs::read(&snap).unwrap(), snap_good);
    }
    std::fs::write(&log, &good).unwrap();

    // The log missing beside its snapshot.
    std::fs::remove_file(&log).unwrap();
    let e = err_of(open(&opts(dir, LogMode::Async, 1), 1));
    assert!(e.contains("is missing"), "{e}");
    std::fs::write(&log, &good).unwrap();

    // --log off on a database would not log: refused; a check (read-only) is fine.
    let e = err_of(open(&opts(dir, LogMode::Off, 1), 1));
    assert!(e.contains("--log sync or --log async"), "{e}");

    // --reload starts over; a log without a snapshot is a load that did not finish.
    let e = open(
        &EngineOptions {
            reload: true,
            ..opts(dir, LogMode::Async, 1)
        },
        1,
    )
    .unwrap();
    assert!(!e.has_data());
    drop(e);
    assert!(!snap.exists() && !log.exists());
    std::fs::write(&log, &good).unwrap();
    let e = err_of(open(&check_opts(dir), 1));
    assert!(e.contains("nothing to check"), "{e}");
    let e = open(&opts(dir, LogMode::Async, 1), 1).unwrap();
    assert!(!e.has_data(), "an unfinished load was taken for data");
}

#[test]
fn a_writing_transaction_without_its_command_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let e = open(&opts(tmp.path(), LogMode::Async, 1), 1).unwrap();
    load_or_replay(&e);
    let mut s = Session::new(e.worker(0));
    let r = s.run(0, |s| s.update(ACCT, &k32(1), |r| r[0] ^= 1));
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("without its command"), "{msg}");
    // Rolled back: the balance is unchanged. A read-only one needs no command.
    assert_eq!(totals(&e).0, ACCTS as i64 * START);
    assert!(s.wants_commands());
}

use storage::gated::{commit_against_stuck_log, Gate, Gated};

/// With the disk stuck (the flusher held in a write), `Async` commits run ahead of
/// the log only until the shared buffer is full: then a commit waits, its partitions
/// let go, until the flusher has taken it, and goes on once the disk does. (Without the
/// wait all of the three buffer limits of commands below would be committed against a stuck log.)
/// Every command is in the log at the end.
#[test]
fn a_full_log_buffer_holds_its_committer_until_the_flusher_took_it() {
    const INPUT: usize = 64 << 10;
    let limit = storage::logfile::BUFFER_LIMIT;
    let n = (3 * limit / INPUT + 1) as u64;
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let o = EngineOptions {
        storage: Arc::new(Gated {
            name: engine_partitioned::log::LOG_FILE,
            gate: gate.clone(),
        }),
        ..opts(dir.path(), LogMode::Async, 1)
    };
    let e = open(&o, 2).unwrap();
    load_or_replay(&e);
    let seen = commit_against_stuck_log(&gate, n, || {
        let mut s = Session::new(e.worker(0));
        move |i| {
            s.run(0, |s| {
                let a = (i % ACCTS as u64) as u32;
                assert!(s.update(ACCT, &k32(a), |r| r[0] ^= 1)?);
                s.command(0, &[i as u8; INPUT]);
                Ok(())
            })
            .unwrap()
        }
    });
    seen.assert_held_within_two_buffers(INPUT, &format!("commands of {INPUT} bytes"));
    e.shutdown().unwrap();
    let path = dir.path().join(engine_partitioned::log::LOG_FILE);
    let c = engine_partitioned::log::read_log(&std::fs::read(&path).unwrap(), &path).unwrap();
    assert_eq!(c.commands.len() as u64, n);
}

/// A log cut before its durable mark lost acknowledged commits, which a crash never
/// does: refused by `check` and by a run, the file left as it is; the mark follows the
/// log while it runs and reaches its end at a clean stop. A missing mark, or another
/// database's, is refused too. (Before the mark, each of these cuts was accepted and
/// the commands after it silently lost.)
#[test]
fn a_log_cut_before_its_durable_mark_is_refused() {
    use engine_partitioned::log::{MARK, MARK_FILE};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mark_of = |d: &Path| {
        let p = d.join(MARK_FILE);
        MARK.decode(&std::fs::read(&p).unwrap(), &p)
            .unwrap()
            .log_bytes
    };
    let e = open(&opts(&dir, LogMode::Sync, 1), 1).unwrap();
    load_or_replay(&e);
    let load_end = mark_of(&dir);
    assert_eq!(load_end, engine_partitioned::log::FILE_HEADER_BYTES as u64);
    run_commands(&e, 1, 20, 0);
    std::thread::sleep(storage::logfile::MARK_INTERVAL + Duration::from_millis(100));
    run_commands(&e, 1, 20, 100);
    assert!(
        mark_of(&dir) > load_end,
        "the mark did not advance while running"
    );
    e.shutdown().unwrap();
    drop(e);
    let log = dir.join(engine_partitioned::log::LOG_FILE);
    let whole = std::fs::read(&log).unwrap();
    assert_eq!(
        mark_of(&dir),
        whole.len() as u64,
        "a clean stop marks the log's end"
    );
    for cut in [whole.len() - 10, whole.len() / 2, 40] {
        std::fs::write(&log, &whole[..cut]).unwrap();
        for o in [check_opts(&dir), opts(&dir, LogMode::Sync, 1)] {
            let e = err_of(open(&o, 1));
            assert!(
                e.contains("records as durable") && e.contains("refused"),
                "{e}"
            );
            assert_eq!(e.lines().count(), 1, "{e}");
            assert_eq!(
                std::fs::read(&log).unwrap(),
                &whole[..cut],
                "a refused log changed"
            );
        }
    }
    std::fs::write(&log, &whole).unwrap();
    let mark = std::fs::read(dir.join(MARK_FILE)).unwrap();
    std::fs::remove_file(dir.join(MARK_FILE)).unwrap();
    let e = err_of(open(&check_opts(&dir), 1));
    assert!(e.contains("is missing") && e.contains(MARK_FILE), "{e}");
    let other = tmp.path().join("other");
    small_db(&other);
    std::fs::copy(other.join(MARK_FILE), dir.join(MARK_FILE)).unwrap();
    let e = err_of(open(&check_opts(&dir), 1));
    assert!(e.contains("belongs to another database"), "{e}");
    std::fs::write(dir.join(MARK_FILE), &mark).unwrap();
    let e = open(&check_opts(&dir), 1).unwrap();
    let committed = (0..20).chain(100..120).filter(|i| i % 7 != 0).count();
    assert_eq!(
        load_or_replay(&e).len(),
        committed,
        "every commit but the rollbacks"
    );
}

/// The log's commands durable so far (statistics).
fn durable_commands(e: &PartitionedEngine) -> u64 {
    e.stats()["log"]["commands_durable"].as_u64().unwrap()
}

/// A checkpoint taken between commands, more commands, a clean stop: recovery reads
/// the checkpoint and replays only the commands after it, and gives the database that
/// stopped; the log before the checkpoint's position is freed (zeros); recovering and
/// checkpointing again works the same.
#[test]
fn a_checkpoint_and_the_commands_after_it_recover_the_same_database() {
    use engine_partitioned::log::LOG_FILE;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let e = open_ckpt(&opts(dir, LogMode::Async, 2), 2, Some(u64::MAX)).unwrap();
    load_or_replay(&e);
    run_commands(&e, 2, 400, 0);
    let done = e.checkpointer().unwrap().take().unwrap().unwrap();
    assert_eq!(done.position.commands, durable_commands(&e));
    assert_eq!(
        done.rows,
        ACCTS as u64 + totals(&e).1 + ledger_ids(&e).len() as u64
    );
    run_commands(&e, 2, 150, 5_000_000);
    let (d1, t1) = (e.digest(), totals(&e));
    let stats = e.stats();
    assert_eq!(stats["log"]["checkpoints"], 1, "{stats}");
    assert_eq!(
        stats["log"]["log_freed_to"].as_u64().unwrap(),
        done.position.offset / 4096 * 4096,
        "{stats}"
    );
    e.shutdown().unwrap();
    let n1 = durable_commands(&e);
    drop(e);
    // The freed prefix reads as zeros (ext4 and tmpfs punch holes); the header stays.
    let log = std::fs::read(dir.join(LOG_FILE)).unwrap();
    let freed = &log[4096..(done.position.offset / 4096 * 4096) as usize];
    assert!(freed.len() >= 4096 && freed.iter().all(|&b| b == 0));
    assert!(engine_partitioned::log::HEADER
        .looks_like(&log[..engine_partitioned::log::FILE_HEADER_BYTES]));
    let e = open(&check_opts(dir), 3).unwrap();
    let replayed = load_or_replay(&e).len() as u64;
    assert_eq!(
        replayed,
        n1 - done.position.commands,
        "only the commands after it"
    );
    assert_eq!(
        e.digest(),
        d1,
        "the checkpoint plus its log is another database"
    );
    assert_eq!(totals(&e), t1);
    drop(e);
    // Reopened to write: more commands, a second checkpoint, then a stop.
    let e = open_ckpt(&opts(dir, LogMode::Sync, 2), 2, Some(u64::MAX)).unwrap();
    load_or_replay(&e);
    run_commands(&e, 2, 100, 9_000_000);
    let second = e.checkpointer().unwrap().take().unwrap().unwrap();
    assert!(second.position.offset > done.position.offset);
    assert_eq!(second.position.commands, durable_commands(&e));
    let d2 = e.digest();
    e.shutdown().unwrap();
    drop(e);
    let e = open(&check_opts(dir), 1).unwrap();
    assert_eq!(
        load_or_replay(&e).len(),
        0,
        "nothing after the second checkpoint"
    );
    assert_eq!(e.digest(), d2);
}

/// The checkpointer's thread: with a threshold of 0 it checkpoints whenever the log
/// grew; the database recovered after a stop is the one that stopped.
#[test]
fn the_checkpointer_thread_checkpoints_while_commands_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let e = open_ckpt(&opts(dir, LogMode::Async, 2), 2, Some(0)).unwrap();
    load_or_replay(&e);
    let t0 = Instant::now();
    let mut base = 0;
    while e.checkpointer().unwrap().count() < 3 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no checkpoints");
        run_commands(&e, 2, 50, base);
        base += 10_000_000;
    }
    run_commands(&e, 2, 50, base);
    let d = e.digest();
    let stats = e.stats();
    assert!(stats["log"]["checkpoint_error"].is_null(), "{stats}");
    assert!(
        stats["log"]["checkpoint_pause_us_max"].as_u64().unwrap() > 0,
        "{stats}"
    );
    e.shutdown().unwrap();
    drop(e);
    let e = open(&check_opts(dir), 2).unwrap();
    load_or_replay(&e);
    assert_eq!(e.digest(), d);
    assert_eq!(totals(&e).0, ACCTS as i64 * START);
}

/// What recovery refuses once checkpoints exist, each in one line with every file
/// left as it was: the log cut before the snapshot's position, or after it but before
/// the durable mark; the load's snapshot put back after a checkpoint freed the log it
/// needs; another database's snapshot.
#[test]
fn checkpoints_refuse_a_cut_log_an_older_snapshot_and_another_database() {
    use engine_partitioned::log::LOG_FILE;
    use engine_partitioned::snapshot::SNAPSHOT_FILE;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let e = open_ckpt(&opts(&dir, LogMode::Async, 1), 1, Some(u64::MAX)).unwrap();
    load_or_replay(&e);
    let load_snapshot = std::fs::read(dir.join(SNAPSHOT_FILE)).unwrap();
    run_commands(&e, 1, 600, 0);
    let done = e.checkpointer().unwrap().take().unwrap().unwrap();
    run_commands(&e, 1, 100, 1_000_000);
    e.shutdown().unwrap();
    drop(e);
    let files = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|f| {
                let f = f.unwrap();
                (
                    f.file_name().into_string().unwrap(),
                    std::fs::read(f.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let refused = |want: &str| {
        let before = files(&dir);
        for o in [check_opts(&dir), opts(&dir, LogMode::Sync, 1)] {
            let e = err_of(open(&o, 1));
            assert!(e.contains(want) && e.contains("refused"), "{want}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(
                files(&dir) == before,
                "{want}: a refused open changed a file"
            );
        }
    };
    let log_path = dir.join(LOG_FILE);
    let log = std::fs::read(&log_path).unwrap();
    let pos = done.position.offset as usize;
    for cut in [pos - 1, pos / 2, 100] {
        std::fs::write(&log_path, &log[..cut]).unwrap();
        refused("snapshot's commands end");
    }
    std::fs::write(&log_path, &log[..pos + 10]).unwrap();
    refused("records as durable");
    std::fs::write(&log_path, &log).unwrap();
    // The load's snapshot back in place: the commands it needs were freed.
    let snap = std::fs::read(dir.join(SNAPSHOT_FILE)).unwrap();
    std::fs::write(dir.join(SNAPSHOT_FILE), &load_snapshot).unwrap();
    refused("damaged");
    // Another database's snapshot.
    let other = tmp.path().join("other");
    small_db(&other);
    std::fs::copy(other.join(SNAPSHOT_FILE), dir.join(SNAPSHOT_FILE)).unwrap();
    refused("belongs to another database");
    std::fs::write(dir.join(SNAPSHOT_FILE), &snap).unwrap();
    let e = open(&check_opts(&dir), 1).unwrap();
    assert_eq!(totals(&e).0, ACCTS as i64 * START);
}
