//! The refresh functions (clause 2.5): RF1 inserts SF x 1,500 new orders with their line
//! items, RF2 deletes as many old orders with theirs; a refresh pair is one of each.
//! Owns the refresh key sets (which orders pair n inserts and deletes), the
//! transactions each function is cut into (`BATCH` orders each), and how many pairs a
//! database has had, derived from its keys so that a run continues where the last one
//! ended. It never times (the kit's `execute` does) and never decides when a function
//! runs (`power`'s stream lists do).
//!
//! Keys: the load fills the first 8 keys of each 32 (`gen::order_key_of`); the new
//! orders take the other 24, in order (`new_order_key`), so they never collide with a
//! loaded order nor with the key `check_loaded` probes for a larger scale factor. The
//! delete set of pair n is the loaded orders (n-1) x R + 1 ..= n x R by number (R =
//! SF x 1,500), oldest first; so a database holds at most `max_pairs` pairs in its life
//! (the last loaded order, which `check_loaded` looks for, is never deleted).

use super::gen::{lines_of_new_order, lines_of_order, order_key_of};
use super::load::new_order_rows;
use super::schema::{lineitem_key, orders_key, LINEITEM, ORDERS};
use super::Tpch;
use api::{Dir, Error, Result, Session, Worker};
use std::ops::Bound;

/// Orders per refresh transaction.
pub const BATCH: u64 = 100;

/// Which refresh function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rf {
    /// Insert new orders and their line items.
    Rf1,
    /// Delete old orders and their line items.
    Rf2,
}

/// One transaction of a refresh function: batch `batch` (0-based) of pair `pair`
/// (1-based over the database's life).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub rf: Rf,
    pub pair: u64,
    pub batch: u64,
}

/// Orders each refresh function inserts or deletes: SF x 1,500 (clause 2.5.2).
pub fn per_pair(t: &Tpch) -> u64 {
    t.scaled(1_500.0)
}

/// Transactions per refresh function.
pub fn batches(t: &Tpch) -> u64 {
    per_pair(t).div_ceil(BATCH)
}

/// The most refresh pairs a database takes: each deletes R loaded orders, and the last
/// loaded order stays.
pub fn max_pairs(t: &Tpch) -> u64 {
    (t.sizes().orders - 1) / per_pair(t)
}

/// The key of the `m`-th new order (1-based over all pairs): the keys 9 to 32 of each
/// 32, which the load leaves unused.
pub fn new_order_key(m: u64) -> u64 {
    let z = m - 1;
    (z / 24) * 32 + 8 + z % 24 + 1
}

/// Which new order a key is (`None`: a loaded order's key).
pub fn new_order_number(key: u64) -> Option<u64> {
    let z = key.checked_sub(1)?;
    let off = z % 32;
    (off >= 8).then(|| (z / 32) * 24 + off - 8 + 1)
}

/// Which loaded order a key is (`None`: a new order's key).
pub fn loaded_order_number(key: u64) -> Option<u64> {
    let z = key.checked_sub(1)?;
    let off = z % 32;
    (off < 8).then(|| (z / 32) * 8 + off + 1)
}

/// The order numbers a step inserts (RF1: new orders) or deletes (RF2: loaded ones).
pub fn orders_of(t: &Tpch, step: Step) -> std::ops::RangeInclusive<u64> {
    let r = per_pair(t);
    let first = (step.pair - 1) * r + step.batch * BATCH + 1;
    first..=(first + BATCH - 1).min(step.pair * r)
}

/// Run one step inside the caller's transaction; returns the rows it inserted or
/// deleted. A row RF2 should delete and does not find is an error (the database is
/// not in the state its refresh count says).
pub fn run_step<W: Worker>(t: &Tpch, s: &mut Session<W>, step: Step) -> Result<u64> {
    let salt = t.cfg.load_salt;
    let mut rows = 0;
    for n in orders_of(t, step) {
        match step.rf {
            Rf::Rf1 => {
                let (o, lines) = new_order_rows(t, n);
                s.insert_row(ORDERS, &orders_key(o.o_orderkey), &o)?;
                for l in &lines {
                    s.insert_row(LINEITEM, &lineitem_key(l.l_orderkey, l.l_linenumber), l)?;
                }
                rows += 1 + lines.len() as u64;
            }
            Rf::Rf2 => {
                let key = order_key_of(n);
                let lines = lines_of_order(salt, n);
                let gone = |what: String| {
                    Error::fatal(format!(
                        "tpch RF2 of refresh pair {}: {what} is not in the database (another run refreshing it at the same time?)",
                        step.pair
                    ))
                };
                for j in 1..=lines {
                    if !s.delete(LINEITEM, lineitem_key(key, j).as_bytes())? {
                        return Err(gone(format!("line item ({key}, {j})")));
                    }
                }
                if !s.delete(ORDERS, orders_key(key).as_bytes())? {
                    return Err(gone(format!("order {key}")));
                }
                rows += 1 + lines as u64;
            }
        }
    }
    Ok(rows)
}

/// Every step of refresh pair `pair`, RF1's then RF2's.
pub fn pair_steps(t: &Tpch, pair: u64) -> Vec<Step> {
    [Rf::Rf1, Rf::Rf2]
        .into_iter()
        .flat_map(|rf| (0..batches(t)).map(move |batch| Step { rf, pair, batch }))
        .collect()
}

/// Run refresh pair `pair` through `s`, a transaction per step (retrying conflicts);
/// returns the rows written. Tests and tools use it; a run's streams run the steps as
/// the driver's transactions.
pub fn run_pair<W: Worker>(t: &Tpch, s: &mut Session<W>, pair: u64) -> Result<u64> {
    let mut rows = 0;
    for step in pair_steps(t, pair) {
        rows += s.run_retry(ty(step.rf), 100, |s| run_step(t, s, step))?;
    }
    Ok(rows)
}

/// A refresh function's transaction type number (after the 22 queries').
pub fn ty(rf: Rf) -> u32 {
    match rf {
        Rf::Rf1 => 22,
        Rf::Rf2 => 23,
    }
}

/// How many times each refresh function has run on a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Done {
    pub rf1: u64,
    pub rf2: u64,
}

impl Done {
    /// Line items expected: the load's, less the deleted orders', plus the new ones'.
    pub fn lineitems(&self, t: &Tpch) -> u64 {
        let (r, salt) = (per_pair(t), t.cfg.load_salt);
        let gone: u64 = (1..=self.rf2 * r)
            .map(|i| lines_of_order(salt, i) as u64)
            .sum();
        let new: u64 = (1..=self.rf1 * r)
            .map(|m| lines_of_new_order(salt, m) as u64)
            .sum();
        t.lineitems() - gone + new
    }

    /// Orders expected.
    pub fn orders(&self, t: &Tpch) -> u64 {
        t.sizes().orders + (self.rf1 - self.rf2) * per_pair(t)
    }

    /// Whether `key` belongs in the database: a loaded order not yet deleted or a new
    /// order already inserted.
    pub fn holds(&self, t: &Tpch, key: u64) -> bool {
        let r = per_pair(t);
        match (loaded_order_number(key), new_order_number(key)) {
            (Some(i), _) => i > self.rf2 * r && i <= t.sizes().orders,
            (_, Some(m)) => m <= self.rf1 * r,
            _ => false,
        }
    }
}

/// The refresh functions a database has had, read from its keys in one read-only
/// transaction: RF2 has run k times when the first loaded order present is the first of
/// pair k + 1's delete set; RF1 as often, or once more, by the presence of the last
/// and the next new order. `Ok(Err(why))`: the keys fit no whole number of refresh
/// functions (a refresh cut short, or keys from elsewhere).
pub fn done<W: Worker>(t: &Tpch, s: &mut Session<W>) -> Result<std::result::Result<Done, String>> {
    let r = per_pair(t);
    s.run_retry(u32::MAX, 100, |s| {
        let mut first = None;
        s.scan(
            ORDERS.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            usize::MAX,
            |k, _| {
                first = loaded_order_number(super::schema::order_of_key(k));
                first.is_none()
            },
        )?;
        let Some(i) = first else {
            return Ok(Err("no loaded order is left".to_string()));
        };
        if (i - 1) % r != 0 {
            return Ok(Err(format!(
                "the first loaded order present is order {i}, not the first of a refresh pair's {r}"
            )));
        }
        let rf2 = (i - 1) / r;
        let mut has = |m: u64| s.get(ORDERS, orders_key(new_order_key(m)).as_bytes(), |_| {});
        let rf1 = if has(rf2 * r + 1)? { rf2 + 1 } else { rf2 };
        if (rf1 > 0 && !has(rf1 * r)?) || has(rf1 * r + 1)? {
            return Ok(Err(format!(
                "RF2 ran {rf2} times, but the new orders present are not those of {rf1} whole RF1s"
            )));
        }
        Ok(Ok(Done { rf1, rf2 }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpch::TpchConfig;

    #[test]
    fn new_keys_fill_the_gaps_and_never_meet_a_loaded_key() {
        assert_eq!(new_order_key(1), 9);
        assert_eq!(new_order_key(24), 32);
        assert_eq!(new_order_key(25), 41);
        for m in 1..5_000 {
            let k = new_order_key(m);
            assert_eq!(new_order_number(k), Some(m));
            assert_eq!(loaded_order_number(k), None);
        }
        for i in 1..5_000 {
            let k = order_key_of(i);
            assert_eq!(loaded_order_number(k), Some(i));
            assert_eq!(new_order_number(k), None);
        }
    }

    #[test]
    fn steps_cover_a_pair_s_orders_once() {
        for sf in [0.01, 0.1, 0.37] {
            let t = Tpch::new(TpchConfig {
                scale_factor: sf,
                ..TpchConfig::default()
            })
            .unwrap();
            let r = per_pair(&t);
            for pair in [1, 2, 7] {
                let mut all = Vec::new();
                for st in pair_steps(&t, pair).iter().filter(|s| s.rf == Rf::Rf1) {
                    all.extend(orders_of(&t, *st));
                }
                let want: Vec<u64> = ((pair - 1) * r + 1..=pair * r).collect();
                assert_eq!(all, want, "SF {sf} pair {pair}");
            }
            assert!(max_pairs(&t) * r < t.sizes().orders);
        }
    }
}
