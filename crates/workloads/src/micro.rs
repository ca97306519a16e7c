//! The micro-benchmark of the "revisited" paper (Section 3): one table of (key, value),
//! transactions that read or update N random rows through the index.
//!
//! Update transactions add 1 to the first value column and subtract 1 from the second
//! (integer columns), or advance a counter stored in both string columns, so the check
//! can prove no update was lost or half-applied.

use crate::util::KitRng;
use crate::util::{load_range, parallel_units, rng_for};
use crate::{Check, RunInfo, Workload};
use api::row::{self, Pod, Zeroable};
use api::typed::{KeyEnc, Part, SqlType};
use api::{
    Database, Dir, Error, IndexKind, Key, Partitioning, Result, Schema, Session, TableDef, TableId,
};
use rand::Rng;
use smallvec::SmallVec;
use std::mem::offset_of;
use std::ops::Bound;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Read,
    Update,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Columns {
    /// Two 8-byte integers (16-byte rows).
    Long,
    /// Two 50-byte strings (100-byte rows) under 50-byte string keys.
    String,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Distribution {
    Uniform,
    Zipf { theta: f64 },
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct MicroConfig {
    pub keys: u64,
    pub rows_per_txn: u32,
    pub mode: Mode,
    pub columns: Columns,
    pub distribution: Distribution,
    pub index: IndexKind,
}

impl MicroConfig {
    pub fn row_size(columns: Columns) -> usize {
        match columns {
            Columns::Long => std::mem::size_of::<LongRow>(),
            Columns::String => std::mem::size_of::<StringRow>(),
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct LongRow {
    pub a: i64,
    pub b: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct StringRow {
    pub a: [u8; 50],
    pub b: [u8; 50],
}

/// Bytes of a string key (`--columns string`).
pub const STRING_KEY_LEN: usize = 50;

/// Row `k`'s string key: 50 letters `a`..`p`, four bits each. The first 16 are `k`
/// through a bijection of u64 (so keys are distinct, and differ from their first bytes,
/// as random strings would: an index cannot lean on a long shared prefix), the other 34
/// come from further mixing of `k`. Cheap on purpose (shifts, no division): the inputs
/// of a read transaction are drawn inside its measured time.
pub fn string_key(k: u64) -> Key {
    // splitmix64's finalizer: a bijection (xor-shifts and odd multipliers invert).
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    // Letter i of a 16-letter group is nibble i of its word (low nibble first): spread
    // 8 nibbles to the low halves of 8 bytes at a time and add 'a' to every byte.
    let spread = |h: u32| {
        let mut v = h as u64;
        v = (v | (v << 16)) & 0x0000_ffff_0000_ffff;
        v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff;
        v = (v | (v << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
        (v + 0x6161_6161_6161_6161).to_le_bytes()
    };
    let mut b = [0u8; 64];
    let mut x = mix(k);
    for g in 0..4 {
        if g > 0 {
            x = mix(x ^ k);
        }
        b[16 * g..16 * g + 8].copy_from_slice(&spread(x as u32));
        b[16 * g + 8..16 * g + 16].copy_from_slice(&spread((x >> 32) as u32));
    }
    Key::from_bytes(&b[..STRING_KEY_LEN])
}

/// `string_key(k)`'s first 16 letters as nibbles: they are a bijection of `k`, so ranks
/// never tie and order rows as their keys.
fn string_key_rank(k: u64) -> u64 {
    string_key(k).as_bytes()[..16]
        .iter()
        .fold(0, |r, &c| r << 4 | (c - b'a') as u64)
}

/// The counter kept in the first 20 bytes of each string column.
fn str_counter(s: &[u8; 50]) -> u64 {
    std::str::from_utf8(&s[..20])
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

fn set_str_counter(s: &mut [u8; 50], v: u64) {
    let t = format!("{v:>20}");
    s[..20].copy_from_slice(t.as_bytes());
}

pub struct Micro {
    cfg: MicroConfig,
    table: TableId,
    zipf: Option<Zipf>,
}

pub struct MicroState {
    rng: KitRng,
}

pub struct MicroInput {
    /// Inline up to 10 keys: no allocation for the common 1- and 10-row transactions.
    /// No more: the driver moves each input a few times, and at 16 keys (136 bytes) every
    /// move was a `memcpy` call, 4% of a point read's time under `--interleave 8`.
    keys: SmallVec<[u64; 10]>,
}

/// Rows per transaction are bounded (inputs are drawn before the transaction starts).
pub const MAX_ROWS: usize = 1000;

impl MicroInput {
    /// The keys this transaction reads or updates, in order.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }
}

impl Micro {
    pub fn new(cfg: MicroConfig) -> std::result::Result<Self, String> {
        if cfg.keys == 0 {
            return Err("the micro-benchmark needs at least one key".into());
        }
        if cfg.rows_per_txn == 0 || cfg.rows_per_txn as usize > MAX_ROWS {
            return Err(format!("--rows must be between 1 and {MAX_ROWS}"));
        }
        if cfg.rows_per_txn as u64 > cfg.keys {
            return Err(format!(
                "--rows {} is more than the {} keys of the table",
                cfg.rows_per_txn, cfg.keys
            ));
        }
        let zipf = match cfg.distribution {
            Distribution::Uniform => None,
            Distribution::Zipf { theta } => {
                if !(theta > 0.0 && theta < 1.0) {
                    return Err(format!("--theta must be in (0, 1), got {theta}"));
                }
                Some(Zipf::new(cfg.keys, theta))
            }
        };
        // The schema has one table, so its id is 0.
        Ok(Micro {
            cfg,
            table: TableId(0),
            zipf,
        })
    }

    pub fn config_struct(&self) -> &MicroConfig {
        &self.cfg
    }

    /// The key of row `k`: 8 bytes big-endian, or a 50-byte string with `--columns
    /// string` (the "revisited" paper's string variant compares string keys too).
    fn key(&self, k: u64) -> Key {
        match self.cfg.columns {
            Columns::Long => {
                let mut key = Key::new();
                key.push_u64(k);
                key
            }
            Columns::String => string_key(k),
        }
    }

    fn initial_row(&self, k: u64) -> Vec<u8> {
        match self.cfg.columns {
            Columns::Long => row::bytes(&LongRow {
                a: k as i64,
                b: -(k as i64),
            })
            .to_vec(),
            Columns::String => {
                let mut r = StringRow {
                    a: [b'x'; 50],
                    b: [b'y'; 50],
                };
                set_str_counter(&mut r.a, 0);
                set_str_counter(&mut r.b, 0);
                row::bytes(&r).to_vec()
            }
        }
    }

    /// The rows in their keys' order, where that is not `0..keys` (string keys).
    fn load_order(&self) -> Option<Vec<u64>> {
        match self.cfg.columns {
            Columns::Long => None,
            Columns::String => {
                let mut ranked: Vec<(u64, u64)> = (0..self.cfg.keys)
                    .map(|k| (string_key_rank(k), k))
                    .collect();
                ranked.sort_unstable();
                Some(ranked.into_iter().map(|(_, k)| k).collect())
            }
        }
    }

    fn draw_key(&self, rng: &mut KitRng) -> u64 {
        match &self.zipf {
            None => rng.gen_range(0..self.cfg.keys),
            Some(z) => z.sample(rng),
        }
    }
}

impl Workload for Micro {
    type Input = MicroInput;
    type WorkerState = MicroState;

    fn name(&self) -> &'static str {
        "micro"
    }

    fn schema(&self) -> Schema {
        let mut s = Schema::new();
        // Partitioned by key range: 8-byte keys by their value; string keys by their
        // first two letters (`a`..`p` each: 256 ranges of the key space).
        let partitioning = match self.cfg.columns {
            Columns::Long => Partitioning {
                values: self.cfg.keys,
                of_key: |_, k| (k.len() >= 8).then(|| api::key::read_u64(k, 0)),
                of_row: None,
            },
            Columns::String => Partitioning {
                values: 256,
                of_key: |_, k| {
                    let l = |b: u8| b.clamp(b'a', b'p') as u64 - b'a' as u64;
                    (k.len() >= 2).then(|| l(k[0]) * 16 + l(k[1]))
                },
                of_row: None,
            },
        };
        // Typed declaration (`api::typed`): the key is not in the row, so it is a
        // key-only part (an 8-byte integer, or the 50 letters of `string_key`).
        let (columns, key) = match self.cfg.columns {
            Columns::Long => {
                let int = SqlType::Int {
                    bytes: 8,
                    signed: true,
                };
                (
                    [
                        ("a", int, offset_of!(LongRow, a)),
                        ("b", int, offset_of!(LongRow, b)),
                    ],
                    Part::key_only("k", KeyEnc::U64),
                )
            }
            Columns::String => (
                [
                    ("a", SqlType::Char(50), offset_of!(StringRow, a)),
                    ("b", SqlType::Char(50), offset_of!(StringRow, b)),
                ],
                Part::key_only("k", KeyEnc::Fixed(STRING_KEY_LEN as u16)),
            ),
        };
        s.add(
            TableDef::new(
                "micro",
                MicroConfig::row_size(self.cfg.columns),
                self.cfg.index,
                self.cfg.keys,
            )
            .columns(&columns)
            .primary_key(&[key])
            .partitioned(partitioning),
        );
        s
    }

    fn txn_types(&self) -> &'static [&'static str] {
        match self.cfg.mode {
            Mode::Read => &["read"],
            Mode::Update => &["update"],
        }
    }

    fn config(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.cfg).unwrap();
        v["row_bytes"] = MicroConfig::row_size(self.cfg.columns).into();
        v["key_bytes"] = self.key(0).len().into();
        v["data_bytes"] = (MicroConfig::row_size(self.cfg.columns) as u64 * self.cfg.keys).into();
        v
    }

    fn load_rows(&self) -> u64 {
        self.cfg.keys
    }

    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        _seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        // Units of 64K keys, dealt round-robin, so every thread loads its share. Rows go in
        // in key order, as a bulk load does: an index is then as dense for string keys as
        // for 8-byte ones, whose rows' order is their keys' (so the two key kinds compare
        // the keys' cost, not two trees' fill).
        const UNIT: u64 = 1 << 16;
        let units = self.cfg.keys.div_ceil(UNIT);
        let order = self.load_order();
        parallel_units(engine, threads, units, |s, u| {
            let lo = u * UNIT;
            let hi = (lo + UNIT).min(self.cfg.keys);
            load_range(s, lo, hi, 512, progress, |s, i| {
                let k = order.as_ref().map_or(i, |o| o[i as usize]);
                s.insert(self.table, &self.key(k), &self.initial_row(k))
            })
        })
    }

    fn worker_state(&self, worker_id: usize, _threads: usize, seed: u64) -> MicroState {
        MicroState {
            rng: rng_for(seed, worker_id as u64 + 1),
        }
    }

    fn next(&self, st: &mut MicroState) -> (u32, MicroInput) {
        let n = self.cfg.rows_per_txn as usize;
        let mut keys = SmallVec::new();
        // Distinct keys per transaction (a row is touched once); rows <= keys is checked.
        while keys.len() < n {
            let k = self.draw_key(&mut st.rng);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        (0, MicroInput { keys })
    }

    fn execute(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        _st: &mut MicroState,
        input: &MicroInput,
    ) -> Result<()> {
        let t = self.table;
        for &k in &input.keys {
            let key = self.key(k);
            let found = match (self.cfg.mode, self.cfg.columns) {
                (Mode::Read, Columns::Long) => {
                    let mut sum = 0i64;
                    let f = s.get(t, &key, |b| {
                        let r: LongRow = row::read(b);
                        sum = r.a.wrapping_add(r.b);
                    })?;
                    std::hint::black_box(sum);
                    f
                }
                (Mode::Read, Columns::String) => {
                    let mut first = 0u8;
                    let f = s.get(t, &key, |b| first = b[0] ^ b[99])?;
                    std::hint::black_box(first);
                    f
                }
                (Mode::Update, Columns::Long) => s.update_row(t, &key, |r: &mut LongRow| {
                    r.a += 1;
                    r.b -= 1;
                })?,
                (Mode::Update, Columns::String) => s.update_row(t, &key, |r: &mut StringRow| {
                    let c = str_counter(&r.a);
                    set_str_counter(&mut r.a, c + 1);
                    set_str_counter(&mut r.b, c + 1);
                })?,
            };
            if !found {
                return Err(Error::fatal(format!("micro: key {k} is missing")));
            }
        }
        Ok(())
    }

    fn encode_input(&self, _st: &MicroState, input: &MicroInput, out: &mut Vec<u8>) {
        let mut e = crate::codec::Enc(out);
        e.u32(input.keys.len() as u32);
        for &k in &input.keys {
            e.u64(k);
        }
    }

    fn decode_input(&self, _st: &mut MicroState, bytes: &[u8]) -> Result<MicroInput> {
        let mut d = crate::codec::Dec::new(bytes, "micro");
        let n = d.count(8)?;
        let mut keys = SmallVec::new();
        for _ in 0..n {
            keys.push(d.u64()?);
        }
        d.end()?;
        Ok(MicroInput { keys })
    }

    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        // Rows 0..keys; transactions only read or update them.
        let n = self.cfg.keys;
        crate::check_extent(
            engine,
            "micro",
            &format!("{n} keys (--keys or --size)"),
            self.table,
            &self.key(n - 1),
            &self.key(n),
            |last| format!("row {}", if last { n - 1 } else { n }),
        )
    }

    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
        let mut s = Session::new(engine.worker(0));
        let (mut rows, mut bad_rows, mut updates) = (0u64, 0u64, 0i128);
        const BATCH: u64 = 4096;
        // One batch of point reads per chunk: an engine that batches (PostgreSQL) answers
        // it in one round trip, not 4,096 (at 100MB, 6.5 million keys: minutes one by
        // one). Integer keys in a B+tree are in the rows' order: one range scan of the
        // chunk reads them along the leaves instead (issue 41: the 1GB shapes' checks
        // took 30-100 s each by point reads).
        let ordered = self.cfg.columns == Columns::Long && self.cfg.index == IndexKind::BTree;
        let mut lo = 0;
        while lo < self.cfg.keys {
            let hi = (lo + BATCH).min(self.cfg.keys);
            let (r, b, u) = s.run_retry(u32::MAX, 100, |s| {
                let (mut b, mut u) = (0u64, 0i128);
                if ordered {
                    let (from, to) = (self.key(lo), self.key(hi));
                    let mut bad_key = None;
                    let found = s.scan(
                        self.table.primary(),
                        Bound::Included(from.as_bytes()),
                        Bound::Excluded(to.as_bytes()),
                        Dir::Forward,
                        (hi - lo) as usize,
                        |key, bytes| {
                            if key.len() != 8 {
                                bad_key = Some(key.len());
                                return false;
                            }
                            let k = api::key::read_u64(key, 0);
                            let row: LongRow = row::read(bytes);
                            if row.a + row.b != 0 {
                                b += 1;
                            }
                            u += (row.a - k as i64) as i128;
                            true
                        },
                    )?;
                    if let Some(n) = bad_key {
                        return Err(Error::fatal(format!("micro: a key of {n} bytes, not 8")));
                    }
                    return Ok((found as u64, b, u));
                }
                let cols = self.cfg.columns;
                let found = s.get_batch(
                    self.table,
                    (hi - lo) as usize,
                    |i| self.key(lo + i as u64),
                    |i, bytes| match cols {
                        Columns::Long => {
                            let row: LongRow = row::read(bytes);
                            if row.a + row.b != 0 {
                                b += 1;
                            }
                            u += (row.a - (lo + i as u64) as i64) as i128;
                        }
                        Columns::String => {
                            let row: StringRow = row::read(bytes);
                            let (ca, cb) = (str_counter(&row.a), str_counter(&row.b));
                            if ca != cb || ca == u64::MAX {
                                b += 1;
                            }
                            u += ca as i128;
                        }
                    },
                )?;
                Ok((found as u64, b, u))
            })?;
            rows += r;
            bad_rows += b;
            updates += u;
            lo = hi;
        }
        let mut checks = vec![
            Check::new(
                "all rows present",
                rows == self.cfg.keys,
                format!("{rows} of {} keys found", self.cfg.keys),
            ),
            Check::new(
                "columns consistent per row",
                bad_rows == 0,
                format!("{bad_rows} rows whose two columns disagree"),
            ),
        ];
        if let Some(committed) = &info.committed {
            let expected = match self.cfg.mode {
                Mode::Read => 0,
                Mode::Update => committed[0] as i128 * self.cfg.rows_per_txn as i128,
            };
            checks.push(Check::new(
                "row updates equal committed updates",
                updates == expected,
                format!("{updates} row updates found, {expected} committed"),
            ));
        }
        Ok(checks)
    }
}

/// Zipfian ranks over `0..n` (Gray et al., "Quickly generating billion-record synthetic
/// databases"), mapped to keys through a fixed permutation so hot keys are spread over
/// the index rather than packed into its first leaves.
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    mult: u64,
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Self {
        let zeta = |m: u64| (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        // A multiplier coprime with n gives a permutation k -> k * mult mod n.
        let mut mult = 0x9E37_79B9_7F4A_7C15u64 % n.max(1);
        while n > 1 && gcd(mult, n) != 1 {
            mult += 1;
        }
        Zipf {
            n,
            theta,
            alpha,
            zetan,
            eta,
            mult: mult.max(1),
        }
    }

    pub fn rank(&self, rng: &mut KitRng) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }

    pub fn sample(&self, rng: &mut KitRng) -> u64 {
        ((self.rank(rng) as u128 * self.mult as u128) % self.n as u128) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let z = Zipf::new(1000, 0.99);
        let mut rng = rng_for(1, 1);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[z.rank(&mut rng) as usize] += 1;
        }
        // Rank 0 of a 0.99-zipf over 1000 items has probability ~1/zeta(1000) ~ 0.13.
        assert!(
            counts[0] > 10_000 && counts[0] < 16_000,
            "rank 0 drawn {} times",
            counts[0]
        );
        assert!(counts[0] > counts[10] && counts[10] > counts[500]);
        let mut seen = std::collections::HashSet::new();
        for r in 0..1000 {
            seen.insert(((r as u128 * z.mult as u128) % 1000) as u64);
        }
        assert_eq!(seen.len(), 1000, "rank-to-key map must be a permutation");
    }

    #[test]
    fn string_keys_follow_their_definition() {
        // Letter i is nibble i % 16 of the word of group i / 16 (low nibble first), the
        // words being mix(k), then mix(previous ^ k): keys stored by earlier versions
        // (a disk database) are found again.
        let mix = |mut z: u64| {
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for k in [0u64, 1, 7, 123_456_789, u64::MAX] {
            let mut want = Vec::new();
            let mut x = mix(k);
            for i in 0..STRING_KEY_LEN {
                if i > 0 && i % 16 == 0 {
                    x = mix(x ^ k);
                }
                want.push(b'a' + ((x >> (4 * (i % 16))) & 15) as u8);
            }
            assert_eq!(string_key(k).as_bytes(), &want[..], "key of row {k}");
        }
    }

    #[test]
    fn string_keys_are_50_letters_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for k in (0..50_000u64).chain([u64::MAX, u64::MAX - 1, 1 << 40]) {
            let key = string_key(k);
            assert_eq!(key.len(), STRING_KEY_LEN);
            assert!(key.iter().all(|c| c.is_ascii_lowercase()), "{key:?}");
            assert!(
                seen.insert(key.as_bytes()[..16].to_vec()),
                "prefix of {k} repeats"
            );
        }
        assert_eq!(
            string_key(7),
            string_key(7),
            "a key is a function of its row"
        );
    }

    #[test]
    fn rows_load_in_their_keys_order() {
        for columns in [Columns::Long, Columns::String] {
            let m = Micro::new(MicroConfig {
                keys: 3000,
                rows_per_txn: 1,
                mode: Mode::Read,
                columns,
                distribution: Distribution::Uniform,
                index: IndexKind::BTree,
            })
            .unwrap();
            let order = m.load_order().unwrap_or_else(|| (0..3000).collect());
            let mut seen: Vec<u64> = order.clone();
            seen.sort_unstable();
            assert_eq!(
                seen,
                (0..3000).collect::<Vec<_>>(),
                "a permutation of the rows"
            );
            for w in order.windows(2) {
                assert!(
                    m.key(w[0]) < m.key(w[1]),
                    "{columns:?}: rows {w:?} out of order"
                );
            }
        }
    }

    #[test]
    fn string_counter_round_trips() {
        let mut s = [b'x'; 50];
        set_str_counter(&mut s, 12345);
        assert_eq!(str_counter(&s), 12345);
    }
}
