//! TPC-E consistency checks on a quiescent database: the broker and holding-summary
//! conditions of the specification (B_NUM_TRADES and B_COMM_TOTAL follow the completed
//! trades, HS_QTY is the sum of the holdings), and invariants that catch a broken
//! transaction: each trade's state agrees with its history, its request and its
//! settlement; holdings follow the completed trades; cash balances follow the cash
//! settlements; row counts follow the committed transactions. Reads through read-only
//! transactions of bounded size; never writes.

use super::gen::*;
use super::schema::*;
use super::txn::{TRADE_ORDER, TRADE_RESULT};
use super::Tpce;
use crate::{Check, Cond, RunInfo};
use api::row;
use api::{Database, Dir, Error, Result, Session, Worker};
use std::collections::HashMap;
use std::ops::Bound;

const CHECK_TXN: u32 = u32::MAX;
/// Trades read per checking transaction.
const TRADES_PER_TXN: u64 = 5_000;

fn st(s: &St) -> String {
    String::from_utf8_lossy(s).into_owned()
}

/// The conditions, each a [`Cond`] filled as the passes go.
struct Conds {
    broker_n: Cond,
    broker_comm: Cond,
    hs: Cond,
    state: Cond,
    settle: Cond,
    hold: Cond,
    cash: Cond,
}

impl Conds {
    fn new() -> Conds {
        Conds {
            broker_n: Cond::new(
                "broker: B_NUM_TRADES = completed trades of its accounts",
                "brokers",
            ),
            broker_comm: Cond::new(
                "broker: B_COMM_TOTAL = sum(T_COMM) of its completed trades",
                "brokers",
            ),
            hs: Cond::new(
                "holding summary: HS_QTY = sum(H_QTY), no holding without a summary",
                "(account, security) pairs",
            ),
            state: Cond::new(
                "trade state agrees with its history and its request",
                "trades",
            ),
            settle: Cond::new(
                "completed trades have a settlement (and cash ones a cash transaction of the same amount); others none",
                "trades",
            ),
            hold: Cond::new(
                "holdings follow trades: HS_QTY = sum of completed buys - sells",
                "(account, security) pairs",
            ),
            cash: Cond::new(
                "cash follows settlements: CA_BAL = initial balance + sum(CT_AMT)",
                "accounts",
            ),
        }
    }
}

/// What the pass over the trades adds up for the later passes.
#[derive(Default)]
struct Tally {
    /// Account -> (broker, balance).
    accounts: HashMap<u64, (u64, i64)>,
    trades: u64,
    settlements: u64,
    /// Broker -> (completed trades, sum of their commissions).
    completed: HashMap<u64, (u64, i64)>,
    /// (account, security) -> completed buys minus sells.
    signed: HashMap<(u64, Symb), i64>,
    /// Account -> sum of its cash transactions.
    cash: HashMap<u64, i64>,
    /// Trade requests found for a trade.
    requests_seen: u64,
}

pub fn check(t: &Tpce, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
    let mut s = Session::new(engine.worker(0));
    let mut c = Conds::new();
    let mut tally = Tally {
        accounts: read_accounts(t, &mut s)?,
        ..Tally::default()
    };
    check_trades(&mut s, &mut c, &mut tally)?;
    check_requests(&mut s, &mut c, &tally)?;
    check_brokers(t, &mut s, &mut c, &tally)?;
    for unit in 0..t.units() {
        check_holdings(unit, &mut s, &mut c, &tally)?;
    }
    check_cash(t, &mut c, &tally);
    let mut out: Vec<Check> = [
        c.broker_n,
        c.broker_comm,
        c.hs,
        c.state,
        c.settle,
        c.hold,
        c.cash,
    ]
    .into_iter()
    .map(Cond::finish)
    .collect();
    if let Some(committed) = &info.committed {
        let initial = t.initial_max_trade_id();
        let orders = committed.get(TRADE_ORDER as usize).copied().unwrap_or(0);
        let results = committed.get(TRADE_RESULT as usize).copied().unwrap_or(0);
        let (trades, settlements) = (tally.trades, tally.settlements);
        out.push(Check::new(
            "trades = initial + committed Trade-Orders",
            trades == initial + orders,
            format!("{trades} trades; {initial} loaded + {orders} committed Trade-Orders"),
        ));
        out.push(Check::new(
            "settlements = initial + committed Trade-Results",
            settlements == initial + results,
            format!(
                "{settlements} settlements; {initial} loaded + {results} committed Trade-Results"
            ),
        ));
    }
    Ok(out)
}

/// Every account's broker and balance, one load unit of customers per transaction.
fn read_accounts<W: Worker>(t: &Tpce, s: &mut Session<W>) -> Result<HashMap<u64, (u64, i64)>> {
    let mut accounts = HashMap::new();
    for unit in 0..t.units() {
        let lo = k_u64(unit * LOAD_UNIT + 1);
        let hi = k_u64((unit + 1) * LOAD_UNIT + 1);
        s.run(CHECK_TXN, |s| {
            s.scan(
                CUSTOMER_ACCOUNT.secondary(ACCOUNT_BY_CUSTOMER),
                Bound::Included(&lo),
                Bound::Excluded(&hi),
                Dir::Forward,
                usize::MAX,
                |_, r| {
                    let a = row::read::<CustomerAccount>(r);
                    accounts.insert(a.ca_id, (a.ca_b_id, a.ca_bal));
                    true
                },
            )
        })?;
    }
    Ok(accounts)
}

/// Trades in id order, [`TRADES_PER_TXN`] per transaction, each with its history,
/// request, settlement and cash transaction.
fn check_trades<W: Worker>(s: &mut Session<W>, c: &mut Conds, tally: &mut Tally) -> Result<()> {
    let mut next = 0u64;
    loop {
        let mut batch: Vec<Trade> = Vec::new();
        let from = k_u64(next);
        s.run(CHECK_TXN, |s| {
            batch.clear();
            s.scan(
                TRADE.primary(),
                Bound::Included(&from),
                Bound::Unbounded,
                Dir::Forward,
                TRADES_PER_TXN as usize,
                |_, r| {
                    batch.push(row::read::<Trade>(r));
                    true
                },
            )?;
            for tr in &batch {
                check_trade(s, tr, c, tally)?;
            }
            Ok(())
        })?;
        tally.trades += batch.len() as u64;
        match batch.last() {
            Some(l) if batch.len() as u64 == TRADES_PER_TXN => next = l.t_id + 1,
            _ => return Ok(()),
        }
    }
}

fn check_trade<W: Worker>(
    s: &mut Session<W>,
    tr: &Trade,
    c: &mut Conds,
    tally: &mut Tally,
) -> Result<()> {
    let k = k_u64(tr.t_id);
    let mut hist: Vec<St> = Vec::with_capacity(4);
    let end = k.prefix_end().expect("id prefix");
    s.scan(
        TRADE_HISTORY.primary(),
        Bound::Included(&k),
        Bound::Excluded(&end),
        Dir::Forward,
        8,
        |_, r| {
            hist.push(row::read::<TradeHistory>(r).th_st_id);
            true
        },
    )?;
    let has = |x: St| hist.contains(&x);
    let req = s.get_row::<TradeRequest>(TRADE_REQUEST, &k)?;
    tally.requests_seen += req.is_some() as u64;
    let se = s.get_row::<Settlement>(SETTLEMENT, &k)?;
    let ct = s.get_row::<CashTransaction>(CASH_TRANSACTION, &k)?;
    tally.settlements += se.is_some() as u64;
    let id = tr.t_id;
    let ok = match tr.t_st_id {
        ST_COMPLETED => {
            has(ST_SUBMITTED) && has(ST_COMPLETED) && !has(ST_CANCELED) && req.is_none()
        }
        ST_SUBMITTED => {
            has(ST_SUBMITTED) && !has(ST_COMPLETED) && !has(ST_CANCELED) && req.is_none()
        }
        ST_PENDING => hist == [ST_PENDING] && req.is_some(),
        ST_CANCELED => has(ST_CANCELED) && !has(ST_COMPLETED) && req.is_none(),
        _ => false,
    };
    c.state.record(ok, || {
        format!(
            "trade {id}: state {} history {:?} request {}",
            st(&tr.t_st_id),
            hist.iter().map(st).collect::<Vec<_>>(),
            req.is_some()
        )
    });
    let done = tr.t_st_id == ST_COMPLETED;
    let is_cash = tr.t_is_cash == 1;
    let settle_ok = match (done, &se, &ct) {
        (true, Some(se), Some(ct)) => is_cash && ct.ct_amt == se.se_amt,
        (true, Some(_), None) => !is_cash,
        (false, None, None) => true,
        _ => false,
    };
    c.settle.record(settle_ok, || {
        format!(
            "trade {id} ({}, cash {is_cash}): settlement {:?}, cash transaction {:?}",
            st(&tr.t_st_id),
            se.map(|x| x.se_amt),
            ct.map(|x| x.ct_amt)
        )
    });
    if done {
        let q = tr.t_qty as i64;
        let sell = is_sell(&tr.t_tt_id);
        *tally.signed.entry((tr.t_ca_id, tr.t_s_symb)).or_default() += if sell { -q } else { q };
        let b = tally.accounts.get(&tr.t_ca_id).map_or(0, |a| a.0);
        let e = tally.completed.entry(b).or_default();
        e.0 += 1;
        e.1 += tr.t_comm;
    }
    if let Some(ct) = ct {
        *tally.cash.entry(tr.t_ca_id).or_default() += ct.ct_amt;
    }
    Ok(())
}

/// No trade request without a pending trade.
fn check_requests<W: Worker>(s: &mut Session<W>, c: &mut Conds, tally: &Tally) -> Result<()> {
    let mut requests = 0u64;
    s.run(CHECK_TXN, |s| {
        requests = 0;
        s.scan(
            TRADE_REQUEST.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            usize::MAX,
            |_, _| {
                requests += 1;
                true
            },
        )
    })?;
    let seen = tally.requests_seen;
    c.state.record(requests == seen, || {
        format!("{requests} trade requests, {seen} of them for a trade")
    });
    Ok(())
}

fn check_brokers<W: Worker>(
    t: &Tpce,
    s: &mut Session<W>,
    c: &mut Conds,
    tally: &Tally,
) -> Result<()> {
    for b in 1..=t.brokers() {
        let br: Broker = s
            .run(CHECK_TXN, |s| s.get_row(BROKER, &k_u64(b)))?
            .ok_or_else(|| Error::fatal(format!("tpce check: broker {b} missing")))?;
        let (n, comm) = tally.completed.get(&b).copied().unwrap_or_default();
        c.broker_n.record(br.b_num_trades == n, || {
            format!(
                "broker {b}: B_NUM_TRADES={} completed trades={n}",
                br.b_num_trades
            )
        });
        c.broker_comm.record(br.b_comm_total == comm, || {
            format!(
                "broker {b}: B_COMM_TOTAL={} sum(T_COMM)={comm}",
                br.b_comm_total
            )
        });
    }
    Ok(())
}

/// Holdings and summaries of one load unit of accounts.
fn check_holdings<W: Worker>(
    unit: u64,
    s: &mut Session<W>,
    c: &mut Conds,
    tally: &Tally,
) -> Result<()> {
    let lo = k_u64(account_id(unit * LOAD_UNIT + 1, 0));
    let hi = k_u64(account_id((unit + 1) * LOAD_UNIT + 1, 0));
    let mut lots: HashMap<(u64, Symb), i64> = HashMap::new();
    let mut sums: HashMap<(u64, Symb), i64> = HashMap::new();
    s.run(CHECK_TXN, |s| {
        lots.clear();
        sums.clear();
        s.scan(
            HOLDING.secondary(HOLDING_BY_ACCOUNT),
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            Dir::Forward,
            usize::MAX,
            |_, r| {
                let h = row::read::<Holding>(r);
                *lots.entry((h.h_ca_id, h.h_s_symb)).or_default() += h.h_qty;
                true
            },
        )?;
        s.scan(
            HOLDING_SUMMARY.primary(),
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            Dir::Forward,
            usize::MAX,
            |_, r| {
                let h = row::read::<HoldingSummary>(r);
                sums.insert((h.hs_ca_id, h.hs_s_symb), h.hs_qty);
                true
            },
        )?;
        Ok(())
    })?;
    let name =
        |k: &(u64, Symb)| format!("({}, {})", k.0, String::from_utf8_lossy(row::get_str(&k.1)));
    for (k, q) in &sums {
        let l = lots.get(k).copied().unwrap_or(0);
        c.hs.record(*q == l && *q != 0, || {
            format!("{}: HS_QTY={q} sum(H_QTY)={l}", name(k))
        });
    }
    for (k, l) in &lots {
        if !sums.contains_key(k) {
            c.hs.record(false, || {
                format!("{}: holdings of {l} without a summary", name(k))
            });
        }
    }
    // Every pair with a summary or with completed trades of this unit.
    let mut pairs: Vec<&(u64, Symb)> = sums.keys().collect();
    let in_unit = |ca: u64| {
        let cu = customer_of_account(ca);
        cu > unit * LOAD_UNIT && cu <= (unit + 1) * LOAD_UNIT
    };
    pairs.extend(
        tally
            .signed
            .keys()
            .filter(|k| in_unit(k.0) && !sums.contains_key(k)),
    );
    for k in pairs {
        let q = sums.get(k).copied().unwrap_or(0);
        let tq = tally.signed.get(k).copied().unwrap_or(0);
        c.hold.record(q == tq, || {
            format!("{}: HS_QTY={q} completed trades net {tq}", name(k))
        });
    }
    Ok(())
}

/// Every account's balance against its initial balance and its cash transactions, and
/// no account missing.
fn check_cash(t: &Tpce, c: &mut Conds, tally: &Tally) {
    for (&ca, &(_, bal)) in &tally.accounts {
        let ct = tally.cash.get(&ca).copied().unwrap_or(0);
        let base = initial_balance(ca);
        c.cash.record(bal == base + ct, || {
            format!("account {ca}: CA_BAL={bal} initial={base} sum(CT_AMT)={ct}")
        });
    }
    let expected_accounts: u64 = (1..=t.cfg.customers).map(accounts_of).sum();
    let n = tally.accounts.len() as u64;
    c.cash.record(n == expected_accounts, || {
        format!("{n} accounts, {expected_accounts} loaded")
    });
}
