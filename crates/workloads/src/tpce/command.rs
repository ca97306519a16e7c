//! `command`: TPC-E transaction inputs as logged commands (`Workload::encode_input`):
//! the type number, the variant's fields in declaration order, then what the body took
//! besides them (`Taken`: the clock, Trade-Order's trade id, the run's first trade id),
//! so that a replay makes the same writes.

use super::schema::{Symb, Tt};
use super::txn::*;
use crate::codec::{Dec, Enc};
use api::Result;

fn lookup(e: &mut Enc<'_>, l: &Lookup) {
    match l {
        Lookup::Trades(v) => {
            e.u8(0).u32(v.len() as u32);
            for &t in v {
                e.u64(t);
            }
        }
        Lookup::Account(a, s, t) => {
            e.u8(1).u64(*a).u64(*s).u64(*t);
        }
        Lookup::Symbol(sy, s, t) => {
            e.u8(2).bytes(sy).u64(*s).u64(*t);
        }
        Lookup::History(a, s) => {
            e.u8(3).u64(*a).u64(*s);
        }
    }
}

fn de_lookup(d: &mut Dec<'_>) -> Result<Lookup> {
    Ok(match d.u8()? {
        0 => {
            let n = d.count(8)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(d.u64()?);
            }
            Lookup::Trades(v)
        }
        1 => Lookup::Account(d.u64()?, d.u64()?, d.u64()?),
        2 => Lookup::Symbol(
            d.array::<{ std::mem::size_of::<Symb>() }>()?,
            d.u64()?,
            d.u64()?,
        ),
        3 => Lookup::History(d.u64()?, d.u64()?),
        t => return Err(d.bad_tag(t as u32)),
    })
}

/// Append `input` and what its body took (`taken`).
pub fn encode(input: &TpceInput, taken: &Taken, out: &mut Vec<u8>) {
    let mut e = Enc(out);
    e.u32(input.txn_type());
    match input {
        TpceInput::BrokerVolume(brokers, sector) => {
            e.u32(brokers.len() as u32);
            for b in brokers {
                e.bytes(b);
            }
            e.bytes(sector);
        }
        TpceInput::CustomerPosition(c, h, a) => {
            match c {
                CustomerBy::Id(id) => e.u8(0).u64(*id),
                CustomerBy::TaxId(t) => e.u8(1).bytes(t),
            };
            e.bool(*h).u64(*a);
        }
        TpceInput::MarketFeed(entries) => {
            e.u32(entries.len() as u32);
            for (sy, price, qty) in entries {
                e.bytes(sy).i64(*price).u32(*qty);
            }
        }
        TpceInput::MarketWatch(w, d) => {
            match w {
                WatchBy::Customer(c) => e.u8(0).u64(*c),
                WatchBy::Account(a) => e.u8(1).u64(*a),
                WatchBy::Industry(name, lo, hi) => e.u8(2).bytes(name).u64(*lo).u64(*hi),
            };
            e.u64(*d);
        }
        TpceInput::SecurityDetail(sy, n, d, lob) => {
            e.bytes(sy).u32(*n).u64(*d).bool(*lob);
        }
        TpceInput::TradeLookup(l) | TpceInput::TradeUpdate(l) => lookup(&mut e, l),
        TpceInput::TradeOrder(i) => {
            e.u64(i.ca_id);
            match &i.exec {
                None => e.u8(0),
                Some(t) => e.u8(1).bytes(t),
            };
            match &i.security {
                SecurityBy::Symbol(sy) => e.u8(0).bytes(sy),
                SecurityBy::Company(co, issue) => e.u8(1).bytes(co).bytes(issue),
            };
            e.u64(i.sec)
                .bytes(&i.tt)
                .u32(i.qty)
                .i64(i.limit_price)
                .bool(i.lifo)
                .bool(i.margin)
                .bool(i.roll_back);
        }
        TpceInput::TradeResult(t, p) => {
            e.u64(*t).i64(*p);
        }
        TpceInput::TradeStatus(a) => {
            e.u64(*a);
        }
        TpceInput::DataMaintenance(t, a, b) => {
            e.u32(*t).u64(*a).u64(*b);
        }
        TpceInput::TradeCleanup => {}
    }
    e.u64(taken.now).u64(taken.t_id).u64(taken.first_tid);
}

/// Decode a command written by [`encode`]: the input, and what its body took.
pub fn decode(bytes: &[u8]) -> Result<(TpceInput, Taken)> {
    let mut d = Dec::new(bytes, "tpce");
    let input = match d.u32()? {
        BROKER_VOLUME => {
            let n = d.count(4)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(d.array::<49>()?);
            }
            TpceInput::BrokerVolume(v, d.array::<30>()?)
        }
        CUSTOMER_POSITION => {
            let c = match d.u8()? {
                0 => CustomerBy::Id(d.u64()?),
                1 => CustomerBy::TaxId(d.array::<20>()?),
                t => return Err(d.bad_tag(t as u32)),
            };
            TpceInput::CustomerPosition(c, d.bool()?, d.u64()?)
        }
        MARKET_FEED => {
            let n = d.count(16)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let sy: Symb = d.array()?;
                v.push((sy, d.i64()?, d.u32()?));
            }
            TpceInput::MarketFeed(v)
        }
        MARKET_WATCH => {
            let w = match d.u8()? {
                0 => WatchBy::Customer(d.u64()?),
                1 => WatchBy::Account(d.u64()?),
                2 => WatchBy::Industry(d.array::<50>()?, d.u64()?, d.u64()?),
                t => return Err(d.bad_tag(t as u32)),
            };
            TpceInput::MarketWatch(w, d.u64()?)
        }
        SECURITY_DETAIL => {
            let sy: Symb = d.array()?;
            TpceInput::SecurityDetail(sy, d.u32()?, d.u64()?, d.bool()?)
        }
        TRADE_LOOKUP => TpceInput::TradeLookup(de_lookup(&mut d)?),
        TRADE_UPDATE => TpceInput::TradeUpdate(de_lookup(&mut d)?),
        TRADE_ORDER => {
            let ca_id = d.u64()?;
            let exec = match d.u8()? {
                0 => None,
                1 => Some(d.array::<20>()?),
                t => return Err(d.bad_tag(t as u32)),
            };
            let security = match d.u8()? {
                0 => SecurityBy::Symbol(d.array()?),
                1 => SecurityBy::Company(d.array::<60>()?, d.array::<6>()?),
                t => return Err(d.bad_tag(t as u32)),
            };
            let sec = d.u64()?;
            let tt: Tt = d.array()?;
            TpceInput::TradeOrder(TradeOrderIn {
                ca_id,
                exec,
                security,
                sec,
                tt,
                qty: d.u32()?,
                limit_price: d.i64()?,
                lifo: d.bool()?,
                margin: d.bool()?,
                roll_back: d.bool()?,
            })
        }
        TRADE_RESULT => TpceInput::TradeResult(d.u64()?, d.i64()?),
        TRADE_STATUS => TpceInput::TradeStatus(d.u64()?),
        DATA_MAINTENANCE => TpceInput::DataMaintenance(d.u32()?, d.u64()?, d.u64()?),
        TRADE_CLEANUP => TpceInput::TradeCleanup,
        t => return Err(d.bad_tag(t)),
    };
    let taken = Taken {
        now: d.u64()?,
        t_id: d.u64()?,
        first_tid: d.u64()?,
    };
    d.end()?;
    Ok((input, taken))
}
