//! TPC-B: Branch, Teller, Account and History, and the single AccountUpdate transaction
//! (update an account by a random delta, append a History row, update the account's
//! teller and branch by the same delta).
//!
//! Scaling per branch: 10 tellers, 100,000 accounts. 85% of transactions use an account
//! of the teller's own branch when there is more than one branch. `pad` gives each
//! Branch and Teller row its own cache lines and its own 8 KB page (as the "A to E"
//! paper does against false sharing); `affinity` gives each worker its own home branch.

use crate::util::KitRng;
use crate::util::{load_range, parallel_units, rng_for};
use crate::{Check, RunInfo, Workload};
use api::key::read_u64;
use api::row::{Pod, Zeroable};
use api::typed::{KeyEnc, Part, SqlType};
use api::{
    Database, Dir, Error, IndexKind, Key, Partitioning, Result, Schema, Session, TableDef, TableId,
    Worker,
};
use rand::Rng;
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

pub const TELLERS_PER_BRANCH: u64 = 10;
pub const ACCOUNTS_PER_BRANCH: u64 = 100_000;
/// Padded Branch/Teller rows are bigger than half a page (so one per 8 KB page) and span
/// whole cache lines.
const PAD_BYTES: usize = 4224;

const BRANCH: TableId = TableId(0);
const TELLER: TableId = TableId(1);
const ACCOUNT: TableId = TableId(2);
const HISTORY: TableId = TableId(3);

/// Column types (for adapters to real database systems, `api::typed`): ids are 8-byte
/// unsigned integers, money a decimal in cents.
const ID: SqlType = SqlType::Int {
    bytes: 8,
    signed: false,
};
const MONEY: SqlType = SqlType::Decimal {
    bytes: 8,
    precision: 18,
    scale: 2,
};

#[derive(Debug, Clone, serde::Serialize)]
pub struct TpcbConfig {
    /// Number of branches.
    pub scale: u64,
    pub pad: bool,
    pub affinity: bool,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct Branch {
    pub id: u64,
    pub balance: i64,
    pub filler: [u8; 88],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct Teller {
    pub id: u64,
    pub branch: u64,
    pub balance: i64,
    pub filler: [u8; 80],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct Account {
    pub id: u64,
    pub branch: u64,
    pub balance: i64,
    pub filler: [u8; 80],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct History {
    pub teller: u64,
    pub branch: u64,
    pub account: u64,
    pub delta: i64,
    pub time_us: u64,
    pub filler: [u8; 24],
}

pub struct Tpcb {
    cfg: TpcbConfig,
    /// This run's number: distinguishes its History keys from those of earlier runs on
    /// the same (durable) database. 1 until `begin_run` numbers the run.
    run_id: AtomicU64,
}

/// History keys pack (run, worker, sequence number) into one integer below 2^63 (an
/// SQLite rowid: History is then a table of integer keys appended at its end, not an
/// index B-tree of three-part records, which cost a C loop on SQLite 15-25% of its TPC-B
/// throughput and the adapter 3-5%, docs/PERFORMANCE.md, 2026-11-29; and an 8-byte key
/// on every engine): 17 bits of run, 12 of worker, 34 of sequence.
const RUN_BITS: u32 = 17;
const WORKER_BITS: u32 = 12;
const SEQ_BITS: u32 = 34;
const _: () = assert!(RUN_BITS + WORKER_BITS + SEQ_BITS == 63);

pub struct TpcbState {
    rng: KitRng,
    worker: u32,
    home_branch: Option<u64>,
    seq: u64,
}

#[derive(Debug, Clone, Copy)]
pub struct TpcbInput {
    pub branch: u64,
    pub teller: u64,
    pub account: u64,
    pub delta: i64,
    pub worker: u32,
    pub seq: u64,
    /// The run that drew it (`Tpcb::run_id`): part of the History key, so a command
    /// replayed by a later process inserts the same key.
    pub run_id: u64,
}

impl Tpcb {
    pub fn new(cfg: TpcbConfig, threads: usize) -> std::result::Result<Self, String> {
        if cfg.scale == 0 {
            return Err("--scale must be at least 1".into());
        }
        if cfg.affinity && (cfg.scale as usize) < threads {
            return Err(format!(
                "--affinity gives each worker its own branch: --scale ({}) must be at least --threads ({threads})",
                cfg.scale
            ));
        }
        Ok(Tpcb {
            cfg,
            run_id: AtomicU64::new(1),
        })
    }

    fn id_key(id: u64) -> Key {
        let mut k = Key::new();
        k.push_u64(id);
        k
    }

    /// History key: (run, worker, sequence number of the worker's transaction) packed
    /// into one integer (see `RUN_BITS`); an error when a part does not fit.
    pub fn history_key(run_id: u64, worker: u32, seq: u64) -> Result<Key> {
        let fits = |v: u64, bits: u32| v < 1 << bits;
        if !(fits(run_id, RUN_BITS) && fits(worker as u64, WORKER_BITS) && fits(seq, SEQ_BITS)) {
            return Err(Error::fatal(format!(
                "tpcb: History key (run {run_id}, worker {worker}, transaction {seq}) out of range: at most 2^{RUN_BITS} runs on one database, 2^{WORKER_BITS} workers, 2^{SEQ_BITS} transactions per worker and run"
            )));
        }
        let mut k = Key::new();
        k.push_u64(run_id << (WORKER_BITS + SEQ_BITS) | (worker as u64) << SEQ_BITS | seq);
        Ok(k)
    }

    /// (run, worker, sequence number) of a History key.
    pub fn history_parts(key: &[u8]) -> (u64, u32, u64) {
        let v = read_u64(key, 0);
        let mask = |bits: u32| (1u64 << bits) - 1;
        (
            v >> (WORKER_BITS + SEQ_BITS),
            ((v >> SEQ_BITS) & mask(WORKER_BITS)) as u32,
            v & mask(SEQ_BITS),
        )
    }

    pub fn run_id(&self) -> u64 {
        self.run_id.load(Ordering::Relaxed)
    }

    fn pad_size(&self, base: usize) -> usize {
        if self.cfg.pad {
            PAD_BYTES
        } else {
            base
        }
    }

    /// Branch and Teller rows are the struct, followed by zero padding when `pad` is on.
    fn padded(&self, bytes: &[u8]) -> Vec<u8> {
        let mut v = bytes.to_vec();
        v.resize(self.pad_size(bytes.len()), 0);
        v
    }

    fn accounts(&self) -> u64 {
        self.cfg.scale * ACCOUNTS_PER_BRANCH
    }

    fn tellers(&self) -> u64 {
        self.cfg.scale * TELLERS_PER_BRANCH
    }

    /// Sum of one column of a table, by point gets over ids `1..=n` (the tables use hash
    /// indexes), in read-only transactions of a few thousand rows.
    fn sum_balances<W: Worker>(
        s: &mut Session<W>,
        t: TableId,
        n: u64,
        balance: fn(&[u8]) -> i64,
    ) -> Result<(i128, u64)> {
        let (mut sum, mut found) = (0i128, 0u64);
        let mut lo = 1;
        while lo <= n {
            let hi = (lo + 4096).min(n + 1);
            // One batch of point reads per chunk: an engine that batches (PostgreSQL)
            // answers it in one round trip, not 4,096.
            let (s1, f1) = s.run_retry(u32::MAX, 100, |s| {
                let mut sum = 0i128;
                let found = s.get_batch(
                    t,
                    (hi - lo) as usize,
                    |i| Self::id_key(lo + i as u64),
                    |_, b| sum += balance(b) as i128,
                )?;
                Ok((sum, found as u64))
            })?;
            sum += s1;
            found += f1;
            lo = hi;
        }
        Ok((sum, found))
    }
}

/// The id in an 8-byte id key (branch, teller, account); `None` for a shorter key (a
/// scan bound). Ids start at 1.
fn id_of(k: &[u8]) -> Option<u64> {
    (k.len() >= 8).then(|| api::key::read_u64(k, 0).max(1))
}

impl Workload for Tpcb {
    type Input = TpcbInput;
    type WorkerState = TpcbState;

    fn name(&self) -> &'static str {
        "tpcb"
    }

    fn schema(&self) -> Schema {
        let mut s = Schema::new();
        let sc = self.cfg.scale;
        // Partitioned by branch (value: branch id - 1); ids are dense, each branch
        // owning a run of teller and account ids.
        let by = |of_key: fn(u16, &[u8]) -> Option<u64>| Partitioning {
            values: sc,
            of_key,
            of_row: None,
        };
        let b = s.add(
            TableDef::new(
                "branch",
                self.pad_size(std::mem::size_of::<Branch>()),
                IndexKind::Hash,
                sc,
            )
            .columns(&[
                ("b_id", ID, offset_of!(Branch, id)),
                ("b_balance", MONEY, offset_of!(Branch, balance)),
                ("b_filler", SqlType::Char(88), offset_of!(Branch, filler)),
            ])
            .primary_key(&[Part::col("b_id", KeyEnc::U64)])
            .partitioned(by(|_, k| id_of(k).map(|b| b - 1))),
        );
        let t = s.add(
            TableDef::new(
                "teller",
                self.pad_size(std::mem::size_of::<Teller>()),
                IndexKind::Hash,
                sc * TELLERS_PER_BRANCH,
            )
            .columns(&[
                ("t_id", ID, offset_of!(Teller, id)),
                ("t_b_id", ID, offset_of!(Teller, branch)),
                ("t_balance", MONEY, offset_of!(Teller, balance)),
                ("t_filler", SqlType::Char(80), offset_of!(Teller, filler)),
            ])
            .primary_key(&[Part::col("t_id", KeyEnc::U64)])
            .partitioned(by(|_, k| id_of(k).map(|t| (t - 1) / TELLERS_PER_BRANCH))),
        );
        let a = s.add(
            TableDef::new(
                "account",
                std::mem::size_of::<Account>(),
                IndexKind::Hash,
                sc * ACCOUNTS_PER_BRANCH,
            )
            .columns(&[
                ("a_id", ID, offset_of!(Account, id)),
                ("a_b_id", ID, offset_of!(Account, branch)),
                ("a_balance", MONEY, offset_of!(Account, balance)),
                ("a_filler", SqlType::Char(80), offset_of!(Account, filler)),
            ])
            .primary_key(&[Part::col("a_id", KeyEnc::U64)])
            .partitioned(by(|_, k| id_of(k).map(|a| (a - 1) / ACCOUNTS_PER_BRANCH))),
        );
        // History is scanned by the consistency check, so it needs an ordered index.
        // Its key (run, worker, seq) does not carry the branch: its rows say it.
        let h = s.add(
            TableDef::new(
                "history",
                std::mem::size_of::<History>(),
                IndexKind::BTree,
                sc * ACCOUNTS_PER_BRANCH,
            )
            .columns(&[
                ("h_t_id", ID, offset_of!(History, teller)),
                ("h_b_id", ID, offset_of!(History, branch)),
                ("h_a_id", ID, offset_of!(History, account)),
                ("h_delta", MONEY, offset_of!(History, delta)),
                ("h_time", SqlType::Timestamp, offset_of!(History, time_us)),
                ("h_filler", SqlType::Char(24), offset_of!(History, filler)),
            ])
            // The key (run, worker, sequence number, packed: `Tpcb::history_key`) is not
            // in the row.
            .primary_key(&[Part::key_only("h_id", KeyEnc::U64)])
            .partitioned(Partitioning {
                values: sc,
                of_key: |_, _| None,
                of_row: Some(|r| api::row::read::<History>(r).branch.saturating_sub(1)),
            }),
        );
        assert_eq!((b, t, a, h), (BRANCH, TELLER, ACCOUNT, HISTORY));
        s
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &["account_update"]
    }

    fn config(&self) -> serde_json::Value {
        serde_json::to_value(&self.cfg).unwrap()
    }

    fn load_rows(&self) -> u64 {
        self.cfg.scale + self.tellers() + self.accounts()
    }

    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        _seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        // One unit per branch: the branch, its tellers and its accounts.
        parallel_units(engine, threads, self.cfg.scale, |s, u| {
            let bid = u + 1;
            let branch = Branch {
                id: bid,
                balance: 0,
                filler: [b'b'; 88],
            };
            load_range(s, 0, 1, 1, progress, |s, _| {
                s.insert(
                    BRANCH,
                    &Self::id_key(bid),
                    &self.padded(api::row::bytes(&branch)),
                )
            })?;
            let t0 = u * TELLERS_PER_BRANCH;
            load_range(
                s,
                t0 + 1,
                t0 + TELLERS_PER_BRANCH + 1,
                64,
                progress,
                |s, tid| {
                    let t = Teller {
                        id: tid,
                        branch: bid,
                        balance: 0,
                        filler: [b't'; 80],
                    };
                    s.insert(
                        TELLER,
                        &Self::id_key(tid),
                        &self.padded(api::row::bytes(&t)),
                    )
                },
            )?;
            let a0 = u * ACCOUNTS_PER_BRANCH;
            load_range(
                s,
                a0 + 1,
                a0 + ACCOUNTS_PER_BRANCH + 1,
                512,
                progress,
                |s, aid| {
                    let a = Account {
                        id: aid,
                        branch: bid,
                        balance: 0,
                        filler: [b'a'; 80],
                    };
                    s.insert_row(ACCOUNT, &Self::id_key(aid), &a)
                },
            )
        })
    }

    fn worker_state(&self, worker_id: usize, _threads: usize, seed: u64) -> TpcbState {
        TpcbState {
            rng: rng_for(seed, worker_id as u64 + 1),
            worker: worker_id as u32,
            home_branch: self
                .cfg
                .affinity
                .then(|| worker_id as u64 % self.cfg.scale + 1),
            seq: 0,
        }
    }

    fn next(&self, st: &mut TpcbState) -> (u32, TpcbInput) {
        let r = &mut st.rng;
        let (branch, teller) = match st.home_branch {
            Some(b) => (
                b,
                (b - 1) * TELLERS_PER_BRANCH + r.gen_range(1..=TELLERS_PER_BRANCH),
            ),
            None => {
                let t = r.gen_range(1..=self.tellers());
                ((t - 1) / TELLERS_PER_BRANCH + 1, t)
            }
        };
        // 85% of accounts from the teller's branch, the rest from another branch.
        let acct_branch = if self.cfg.scale > 1 && r.gen_range(0..100) >= 85 {
            let other = r.gen_range(1..self.cfg.scale);
            if other >= branch {
                other + 1
            } else {
                other
            }
        } else {
            branch
        };
        let account =
            (acct_branch - 1) * ACCOUNTS_PER_BRANCH + r.gen_range(1..=ACCOUNTS_PER_BRANCH);
        let delta = r.gen_range(-999_999..=999_999);
        st.seq += 1;
        (
            0,
            TpcbInput {
                branch,
                teller,
                account,
                delta,
                worker: st.worker,
                seq: st.seq,
                run_id: self.run_id(),
            },
        )
    }

    fn execute(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        _st: &mut TpcbState,
        i: &TpcbInput,
    ) -> Result<()> {
        let d = i.delta;
        // Account, History, Teller, Branch: the one Branch row of a small scale is every
        // transaction's last lock, so under two-phase locking it is held only through its
        // own update and the commit, not through the History insert as well. The order
        // does not change the transaction's effect.
        let missing = || Error::fatal("tpcb: a branch, teller or account row is missing");
        // Each balance changes by an add (`Worker::add_i64`): an engine may run it as
        // one `UPDATE .. SET balance = balance + delta`, as pgbench does, instead of a
        // read and a write. The account's new balance comes back (TPC-B's clause 1.2:
        // the transaction returns it); the teller's and branch's are not needed, so an
        // engine may send those with the commit (`add_i64_blind`).
        if s.add_i64(
            ACCOUNT,
            &Self::id_key(i.account),
            offset_of!(Account, balance),
            d,
        )?
        .is_none()
        {
            return Err(missing());
        }
        let h = History {
            teller: i.teller,
            branch: i.branch,
            account: i.account,
            delta: d,
            time_us: 0,
            filler: [b'h'; 24],
        };
        s.insert_row(HISTORY, &Self::history_key(i.run_id, i.worker, i.seq)?, &h)?;
        s.add_i64_blind(
            TELLER,
            &Self::id_key(i.teller),
            offset_of!(Teller, balance),
            d,
        )?;
        s.add_i64_blind(
            BRANCH,
            &Self::id_key(i.branch),
            offset_of!(Branch, balance),
            d,
        )
    }

    fn encode_input(&self, _st: &TpcbState, i: &TpcbInput, out: &mut Vec<u8>) {
        crate::codec::Enc(out)
            .u64(i.branch)
            .u64(i.teller)
            .u64(i.account)
            .i64(i.delta)
            .u32(i.worker)
            .u64(i.seq)
            .u64(i.run_id);
    }

    fn decode_input(&self, _st: &mut TpcbState, bytes: &[u8]) -> Result<TpcbInput> {
        let mut d = crate::codec::Dec::new(bytes, "tpcb");
        let i = TpcbInput {
            branch: d.u64()?,
            teller: d.u64()?,
            account: d.u64()?,
            delta: d.i64()?,
            worker: d.u32()?,
            seq: d.u64()?,
            run_id: d.u64()?,
        };
        d.end()?;
        Ok(i)
    }

    fn txn_tag(&self, _st: &TpcbState, i: &TpcbInput) -> Option<String> {
        Some(format!("{} {} {}", i.run_id, i.worker, i.seq))
    }

    /// The run's number: one more than any run in History or in the acknowledgement
    /// file, so a run never takes the number of one whose rows were lost (its keys would
    /// then answer for the lost ones in the crash check).
    fn begin_run(&self, engine: &dyn Database, acked: &[String]) -> Result<()> {
        let mut s = Session::new(engine.worker(0));
        let mut last = 0;
        s.run_retry(u32::MAX, 100, |s| {
            last = 0;
            s.scan(
                HISTORY.primary(),
                Bound::Unbounded,
                Bound::Unbounded,
                Dir::Backward,
                1,
                |k, _| {
                    last = Self::history_parts(k).0;
                    false
                },
            )?;
            Ok(())
        })?;
        let acked_max = acked
            .iter()
            .filter_map(|l| Self::acked_tag(l))
            .map(|t| t.0)
            .max()
            .unwrap_or(0);
        let run = last.max(acked_max) + 1;
        Self::history_key(run, 0, 0)?;
        self.run_id.store(run, Ordering::Relaxed);
        Ok(())
    }

    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        // Branch ids are 1..=scale; tellers and accounts are loaded with their branch.
        let sc = self.cfg.scale;
        crate::check_extent(
            engine,
            "tpcb",
            &format!("--scale {sc}"),
            BRANCH,
            &Self::id_key(sc),
            &Self::id_key(sc + 1),
            |last| format!("branch {}", if last { sc } else { sc + 1 }),
        )
    }

    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
        let mut s = Session::new(engine.worker(0));
        let bal_branch =
            |b: &[u8]| api::row::read::<Branch>(&b[..std::mem::size_of::<Branch>()]).balance;
        let bal_teller =
            |b: &[u8]| api::row::read::<Teller>(&b[..std::mem::size_of::<Teller>()]).balance;
        let bal_account = |b: &[u8]| api::row::read::<Account>(b).balance;
        let (sb, nb) = Self::sum_balances(&mut s, BRANCH, self.cfg.scale, bal_branch)?;
        let (st, nt) = Self::sum_balances(&mut s, TELLER, self.tellers(), bal_teller)?;
        let (sa, na) = Self::sum_balances(&mut s, ACCOUNT, self.accounts(), bal_account)?;
        // History, scanned in chunks resuming after the last key seen.
        let (mut sh, mut nh) = (0i128, 0u64);
        let mut after: Option<Key> = None;
        // (run, worker, seq) of every History row, only when comparing with acknowledgements.
        let mut present: Option<HashSet<(u64, u32, u64)>> =
            info.acked.as_ref().map(|_| HashSet::new());
        let want_keys = present.is_some();
        loop {
            let (sum, n, last, keys) = s.run_retry(u32::MAX, 100, |s| {
                let (mut sum, mut n, mut last) = (0i128, 0u64, None);
                let mut keys = Vec::new();
                let lo = match &after {
                    Some(k) => Bound::Excluded(k.as_bytes()),
                    None => Bound::Unbounded,
                };
                s.scan(
                    HISTORY.primary(),
                    lo,
                    Bound::Unbounded,
                    Dir::Forward,
                    4096,
                    |k, b| {
                        sum += api::row::read::<History>(b).delta as i128;
                        n += 1;
                        last = Some(Key::from_bytes(k));
                        if want_keys {
                            keys.push(Self::history_parts(k));
                        }
                        true
                    },
                )?;
                Ok((sum, n, last, keys))
            })?;
            if let Some(p) = present.as_mut() {
                p.extend(keys);
            }
            sh += sum;
            nh += n;
            match last {
                Some(k) if n == 4096 => after = Some(k),
                _ => break,
            }
        }
        let mut checks = vec![
            Check::new(
                "all rows present",
                nb == self.cfg.scale && nt == self.tellers() && na == self.accounts(),
                format!("{nb} branches, {nt} tellers, {na} accounts"),
            ),
            Check::new(
                "balances agree",
                sb == st && st == sa && sa == sh,
                format!("sum of balances: branches {sb}, tellers {st}, accounts {sa}; sum of history deltas {sh}"),
            ),
        ];
        match &info.committed {
            Some(c) => checks.push(Check::new(
                "history rows equal committed transactions",
                nh == c[0],
                format!("{nh} history rows, {} committed", c[0]),
            )),
            None => checks.push(Check::new(
                "history rows counted",
                true,
                format!("{nh} history rows (committed count unknown: not compared)"),
            )),
        }
        if let (Some(acked), Some(present)) = (&info.acked, &present) {
            checks.push(Self::check_acked(acked, present));
        }
        Ok(checks)
    }
}

impl Tpcb {
    /// (run, worker, sequence number) of an acknowledgement line (`txn_tag`'s); `None`
    /// for a torn last line of the side file (killed mid-write), which is not an ack.
    fn acked_tag(line: &str) -> Option<(u64, u32, u64)> {
        let f: Vec<u64> = line
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        match f[..] {
            [run, worker, seq] => Some((run, u32::try_from(worker).ok()?, seq)),
            _ => None,
        }
    }

    /// After a crash: every acknowledged commit is present, and nothing else is but at
    /// most one in-flight transaction per worker (committed, not yet acknowledged: the
    /// one after its last acknowledged one).
    fn check_acked(acked: &[String], present: &HashSet<(u64, u32, u64)>) -> Check {
        let mut tags = HashSet::new();
        let mut last: HashMap<(u64, u32), u64> = HashMap::new();
        for t in acked.iter().filter_map(|l| Self::acked_tag(l)) {
            tags.insert(t);
            let e = last.entry((t.0, t.1)).or_insert(0);
            *e = (*e).max(t.2);
        }
        let lost = tags.iter().filter(|t| !present.contains(t)).count();
        let runs: HashSet<u64> = tags.iter().map(|t| t.0).collect();
        let unexplained = present
            .iter()
            .filter(|t| !tags.contains(t))
            .filter(|t| {
                // Rows of runs that acknowledged nothing are judged only by balances.
                runs.contains(&t.0) && t.2 != last.get(&(t.0, t.1)).copied().unwrap_or(0) + 1
            })
            .count();
        Check::new(
            "acknowledged commits durable, nothing else",
            lost == 0 && unexplained == 0,
            format!(
                "{} acknowledged commits: {lost} missing; {} history rows, {unexplained} neither acknowledged nor in flight",
                tags.len(),
                present.len()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[(u64, u32, u64)]) -> HashSet<(u64, u32, u64)> {
        v.iter().copied().collect()
    }

    #[test]
    fn acknowledged_commits_must_survive_and_only_in_flight_extras_are_allowed() {
        let acked: Vec<String> = ["9 0 1", "9 0 2", "9 1 1", "9 1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // Exactly the acknowledged ones, plus one in-flight per worker: fine.
        assert!(Tpcb::check_acked(&acked, &set(&[(9, 0, 1), (9, 0, 2), (9, 1, 1)])).passed);
        assert!(
            Tpcb::check_acked(
                &acked,
                &set(&[(9, 0, 1), (9, 0, 2), (9, 0, 3), (9, 1, 1), (9, 1, 2)])
            )
            .passed
        );
        // A lost acknowledged commit.
        assert!(!Tpcb::check_acked(&acked, &set(&[(9, 0, 1), (9, 1, 1)])).passed);
        // A row that is neither acknowledged nor the next in flight.
        assert!(
            !Tpcb::check_acked(&acked, &set(&[(9, 0, 1), (9, 0, 2), (9, 0, 4), (9, 1, 1)])).passed
        );
    }
}
