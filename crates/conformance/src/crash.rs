//! `conformance::crash`: an engine-generic crash test on the simulated disk (`storage::sim`),
//! for the engines that keep a database in files through `EngineOptions::storage`.
//! One seed: a small bank (accounts in a hash table, one journal row per transfer in a
//! B+tree) is loaded fault-free; then the disk is given the seed's faults (a crash at
//! the Nth storage operation, short writes, failed writes or fsyncs) and `Sync`
//! transfers run until one fails; the process then dies (every storage call fails from
//! there: nothing more reaches the disk) and the machine loses power or the process is
//! killed. Reopened on the same disk, the database must open (a crash never makes it
//! refused) and hold exactly the acknowledged transfers, plus at most the one whose
//! commit failed (all of it or none of it). Then more transfers, a clean stop, a power
//! loss, and the same check.
//!
//! Each seed replays with the same seed (the engines' background threads make the
//! exact call sequence depend on timing, so a replay is likely, not certain, to hit the
//! same interleaving). Must never: accept a lost acknowledged transfer, a half
//! transfer, or a refusal after a crash.

use api::{
    Dir, Engine, EngineOptions, IndexKind, Result, Schema, Session, TableDef, TableId, Worker,
};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::sim::{Faults, SimStorage};
use storage::Storage;

const ACCT: TableId = TableId(0);
const JOURNAL: TableId = TableId(1);
const ACCTS: u64 = 16;
const START: i64 = 1000;
/// Transfers under faults, then after recovery.
const STEPS: u64 = 60;
const MORE: u64 = 10;
/// A seed taking longer than this is a hang.
const HANG: Duration = Duration::from_secs(60);

fn schema() -> Schema {
    let mut s = Schema::new();
    s.add(TableDef::new("acct", 8, IndexKind::Hash, ACCTS));
    s.add(TableDef::new("journal", 8, IndexKind::BTree, 1000));
    s
}

fn key(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// xorshift64*: the seed's choices (no dependency for a test helper).
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / ((1u64 << 53) as f64) < p
    }
}

/// Transfer number `i`: (from, to, amount).
fn transfer(i: u64) -> (u64, u64, i64) {
    let from = (i * 7 + 3) % ACCTS;
    let to = (from + 1 + i % (ACCTS - 1)) % ACCTS;
    (from, to, 1 + (i % 9) as i64)
}

/// The state a run of acknowledged transfers must leave.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bank {
    bal: Vec<i64>,
    journal: BTreeSet<u64>,
}

impl Bank {
    fn new() -> Bank {
        Bank {
            bal: vec![START; ACCTS as usize],
            journal: BTreeSet::new(),
        }
    }
    fn apply(&mut self, i: u64) {
        let (f, t, a) = transfer(i);
        self.bal[f as usize] -= a;
        self.bal[t as usize] += a;
        self.journal.insert(i);
    }
}

fn run_transfer<W: Worker>(s: &mut Session<W>, i: u64) -> Result<()> {
    let (from, to, amount) = transfer(i);
    s.run(0, |s| {
        for (a, d) in [(from, -amount), (to, amount)] {
            let found = s.update(ACCT, &key(a), |r| {
                let b = i64::from_le_bytes(r[..8].try_into().unwrap()) + d;
                r.copy_from_slice(&b.to_le_bytes());
            })?;
            assert!(found, "account {a} missing");
        }
        s.insert(JOURNAL, &key(i), &amount.to_le_bytes())?;
        // A command-logging engine logs the transfer's number (others ignore it).
        s.command(0, &i.to_le_bytes());
        Ok(())
    })
}

/// Reopen: a command-logging engine's recovered commands are run again, in order.
fn reopen<E: Engine>(e: &E) -> std::result::Result<(), String> {
    let cmds = e
        .recovered_commands()
        .map_err(|err| format!("recovered commands: {err}"))?;
    let mut s = Session::new(e.worker(0));
    for c in &cmds {
        let i = u64::from_le_bytes(
            c.input
                .as_slice()
                .try_into()
                .map_err(|_| "a command of another length".to_string())?,
        );
        run_transfer(&mut s, i).map_err(|err| format!("replaying transfer {i}: {err}"))?;
    }
    drop(s);
    e.replay_done().map_err(|err| format!("replay_done: {err}"))
}

fn read_bank<E: Engine>(e: &E) -> Result<Bank> {
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        let mut b = Bank::new();
        for a in 0..ACCTS {
            let found = s.get(ACCT, &key(a), |r| {
                b.bal[a as usize] = i64::from_le_bytes(r[..8].try_into().unwrap())
            })?;
            assert!(found, "account {a} lost");
        }
        s.scan(
            JOURNAL.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            usize::MAX,
            |k, _| {
                b.journal.insert(u64::from_be_bytes(k.try_into().unwrap()));
                true
            },
        )?;
        Ok(b)
    })
}

/// The recovered bank must be `acked`, or `acked` plus transfer `maybe` (whole).
fn check(
    stage: &str,
    got: &Bank,
    acked: &Bank,
    maybe: Option<u64>,
) -> std::result::Result<(), String> {
    if got == acked {
        return Ok(());
    }
    if let Some(i) = maybe {
        let mut with = acked.clone();
        with.apply(i);
        if *got == with {
            return Ok(());
        }
    }
    let lost: Vec<_> = acked.journal.difference(&got.journal).collect();
    let extra: Vec<_> = got.journal.difference(&acked.journal).collect();
    Err(format!(
        "{stage}: recovered state differs from the acknowledged transfers (uncertain: {maybe:?}); journal lost {lost:?}, extra {extra:?}; balances {:?}, want {:?}",
        got.bal, acked.bal
    ))
}

/// What one seed did.
#[derive(Debug, Default, Clone, Copy)]
pub struct SeedStats {
    pub acked: u64,
    pub faults: u64,
    pub power_losses: u64,
    pub kills: u64,
    /// Storage operations after the load (fault-free, for the calibration).
    pub mutations: u64,
}

/// One seed of engine `E`; `opts(storage, create)` gives its options for a database on
/// `storage` (logging `Sync`). `budget`: storage operations a fault-free run makes after
/// the load (the crash point is drawn below it; 0: no faults, for calibration).
pub fn trial<E: Engine>(
    seed: u64,
    budget: u64,
    opts: &dyn Fn(Arc<dyn Storage>, bool) -> EngineOptions,
    hook: fn(&E),
) -> std::result::Result<SeedStats, String> {
    let sim = SimStorage::new(seed);
    let mut rng = Rng::new(seed);
    let mut st = SeedStats::default();
    let schema = Arc::new(schema());
    let open = |create: bool| E::open(schema.clone(), &opts(sim.as_storage(), create));
    let e = open(true).map_err(|err| format!("fault-free open: {err}"))?;
    {
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            for a in 0..ACCTS {
                s.insert(ACCT, &key(a), &START.to_le_bytes())?;
            }
            Ok(())
        })
        .map_err(|err| format!("load: {err}"))?;
    }
    e.load_done().map_err(|err| format!("load_done: {err}"))?;
    e.replay_done()
        .map_err(|err| format!("replay_done: {err}"))?;
    let before = sim.stats().mutations;
    if budget > 0 {
        let mut f = Faults {
            crash_after_writes: Some(rng.below(budget)),
            ..Faults::default()
        };
        if rng.chance(0.3) {
            f.short_write = 0.2;
        }
        if rng.chance(0.1) {
            f.write_error = 0.02;
        }
        if rng.chance(0.1) {
            f.sync_error = 0.02;
        }
        sim.set_faults(f);
    }
    let mut acked = Bank::new();
    let mut maybe = None;
    let hook_at = rng.below(STEPS);
    {
        let mut s = Session::new(e.worker(0));
        for i in 0..STEPS {
            if i == hook_at {
                hook(&e);
            }
            match run_transfer(&mut s, i) {
                Ok(()) => acked.apply(i),
                Err(_) => {
                    maybe = Some(i);
                    break;
                }
            }
        }
    }
    st.acked = acked.journal.len() as u64;
    if maybe.is_none() && rng.chance(0.5) {
        let _ = e.shutdown();
    }
    st.mutations = sim.stats().mutations - before;
    st.faults = sim.stats().faults_injected();
    // The process dies: from here nothing it does reaches the disk.
    sim.set_faults(Faults {
        crash_after_writes: Some(0),
        ..Faults::default()
    });
    drop(e);
    if rng.chance(0.5) {
        sim.crash();
        st.power_losses += 1;
    } else {
        sim.kill();
        st.kills += 1;
    }
    sim.set_faults(Faults::default());
    let e = open(true).map_err(|err| format!("reopen after the crash was refused: {err}"))?;
    reopen(&e)?;
    let got = read_bank(&e).map_err(|err| format!("read after recovery: {err}"))?;
    check("after the crash", &got, &acked, maybe)?;
    let mut acked = got;
    {
        let mut s = Session::new(e.worker(0));
        for i in STEPS..STEPS + MORE {
            if i == STEPS + MORE / 2 {
                hook(&e);
            }
            run_transfer(&mut s, i).map_err(|err| format!("transfer after recovery: {err}"))?;
            acked.apply(i);
        }
    }
    e.shutdown().map_err(|err| format!("clean stop: {err}"))?;
    drop(e);
    sim.crash();
    st.power_losses += 1;
    let e = open(false).map_err(|err| format!("read-only open after a clean stop: {err}"))?;
    reopen(&e)?;
    let got = read_bank(&e).map_err(|err| format!("read after the second recovery: {err}"))?;
    check("after a clean stop and a power loss", &got, &acked, None)?;
    Ok(st)
}

/// Run seeds `first..first + n` of engine `E` (each on a thread of its own, so a hang
/// fails the seed instead of the test run). Panics naming the first failing seed.
pub fn run_seeds<E: Engine + 'static>(
    first: u64,
    n: u64,
    opts: fn(Arc<dyn Storage>, bool) -> EngineOptions,
) -> SeedStats {
    run_seeds_with::<E>(first, n, opts, |_| {})
}

/// [`run_seeds`] calling `hook` on the engine once at a seed-chosen step under faults
/// and once after recovery (an engine's own background work done there, such as a
/// checkpoint, so that crashes land inside it).
pub fn run_seeds_with<E: Engine + 'static>(
    first: u64,
    n: u64,
    opts: fn(Arc<dyn Storage>, bool) -> EngineOptions,
    hook: fn(&E),
) -> SeedStats {
    let calib = trial::<E>(u64::MAX, 0, &opts, hook)
        .unwrap_or_else(|err| panic!("crash suite, {}: the fault-free run failed: {err}", E::NAME));
    // Crash points spread over the run and a little past it (a run with no crash).
    let budget = calib.mutations + calib.mutations / 8 + 2;
    let mut sum = SeedStats::default();
    for seed in first..first + n {
        let (tx, rx) = std::sync::mpsc::channel();
        let t0 = Instant::now();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| trial::<E>(seed, budget, &opts, hook));
            let _ = tx.send(r);
        });
        let r = match rx.recv_timeout(HANG) {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => panic!("crash suite, {}: seed {seed} panicked", E::NAME),
            Err(_) => panic!(
                "crash suite, {}: seed {seed} hung ({:?})",
                E::NAME,
                t0.elapsed()
            ),
        };
        match r {
            Ok(s) => {
                sum.acked += s.acked;
                sum.faults += s.faults;
                sum.power_losses += s.power_losses;
                sum.kills += s.kills;
                sum.mutations += s.mutations;
            }
            Err(msg) => panic!(
                "crash suite, {}: seed {seed} (replay: OLTPSCOPE_SIM_FIRST={seed} OLTPSCOPE_SIM_SEEDS=1): {msg}",
                E::NAME
            ),
        }
    }
    sum
}

/// Seeds from the environment: `OLTPSCOPE_SIM_SEEDS` (default `default`) starting at
/// `OLTPSCOPE_SIM_FIRST` (default 0).
pub fn seeds_from_env(default: u64) -> (u64, u64) {
    let get = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    (
        get("OLTPSCOPE_SIM_FIRST").unwrap_or(0),
        get("OLTPSCOPE_SIM_SEEDS").unwrap_or(default),
    )
}
