//! The arithmetic of completing a trade, shared by the load (which completes the
//! initial trades in memory) and Trade-Result (which completes them in the database):
//! how a trade consumes or creates holding lots (FIFO or LIFO, long or short), its tax,
//! commission and settlement amount. Pure functions; never touches a Session.

/// One holding lot (a HOLDING row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lot {
    pub h_t_id: u64,
    pub dts: u64,
    pub price: i64,
    /// Negative for a short position.
    pub qty: i64,
}

/// What completing a trade does to the lots of its (account, security).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LotChanges {
    /// HOLDING_SUMMARY quantity before and after (0: no row).
    pub hs_before: i64,
    pub hs_after: i64,
    /// Lots whose quantity changes (h_t_id, new qty) or that go (qty 0).
    pub updates: Vec<(u64, i64)>,
    pub deletes: Vec<u64>,
    /// A new lot: the trade's own (h_t_id = the trade's id).
    pub insert: Option<Lot>,
    /// HOLDING_HISTORY rows: (h_t_id, before, after).
    pub history: Vec<(u64, i64, i64)>,
    /// Cost basis and proceeds of the closed part, in cents.
    pub buy_value: i64,
    pub sell_value: i64,
}

/// Complete a trade against `lots` (ordered oldest first): a sell closes long lots
/// (a buy, short lots) newest first when `lifo`, else oldest first; whatever quantity
/// is left opens a new lot of the trade. `hs` is the summary quantity (the lots' sum).
#[allow(clippy::too_many_arguments)]
pub fn apply(
    lots: &[Lot],
    hs: i64,
    sell: bool,
    qty: u32,
    lifo: bool,
    price: i64,
    t_id: u64,
    dts: u64,
) -> LotChanges {
    debug_assert_eq!(lots.iter().map(|l| l.qty).sum::<i64>(), hs);
    let q = qty as i64;
    let mut c = LotChanges {
        hs_before: hs,
        hs_after: if sell { hs - q } else { hs + q },
        ..LotChanges::default()
    };
    let mut needed = q;
    // Only lots on the opposite side close: long lots for a sell, short for a buy.
    let closing = if sell { hs > 0 } else { hs < 0 };
    if closing {
        let order: Box<dyn Iterator<Item = &Lot>> = if lifo {
            Box::new(lots.iter().rev())
        } else {
            Box::new(lots.iter())
        };
        for l in order {
            if needed == 0 {
                break;
            }
            let held = l.qty.abs();
            let sign = l.qty.signum();
            let take = held.min(needed);
            let after = sign * (held - take);
            c.history.push((l.h_t_id, l.qty, after));
            if after == 0 {
                c.deletes.push(l.h_t_id);
            } else {
                c.updates.push((l.h_t_id, after));
            }
            if sell {
                c.buy_value += take * l.price;
                c.sell_value += take * price;
            } else {
                c.sell_value += take * l.price;
                c.buy_value += take * price;
            }
            needed -= take;
        }
    }
    if needed > 0 {
        let signed = if sell { -needed } else { needed };
        c.history.push((t_id, 0, signed));
        c.insert = Some(Lot {
            h_t_id: t_id,
            dts,
            price,
            qty: signed,
        });
    }
    c
}

/// Tax on a sell's gain (rates in 1/10,000), for taxable accounts (status 1 or 2).
pub fn tax(tax_status: u8, buy_value: i64, sell_value: i64, rates_sum: u32) -> i64 {
    if tax_status == 0 || sell_value <= buy_value {
        return 0;
    }
    (sell_value - buy_value) * rates_sum as i64 / 10_000
}

/// Commission: CR_RATE (1/100 of a percent) of the trade's value.
pub fn commission(qty: u32, price: i64, cr_rate: u32) -> i64 {
    qty as i64 * price * cr_rate as i64 / 10_000
}

/// SE_AMT: what the account receives (negative: pays). Tax is withheld only for
/// accounts of tax status 1.
pub fn settlement_amount(
    sell: bool,
    qty: u32,
    price: i64,
    charge: i64,
    comm: i64,
    tax_status: u8,
    tax: i64,
) -> i64 {
    let value = qty as i64 * price;
    let mut amt = if sell { value } else { -value } - charge - comm;
    if tax_status == 1 {
        amt -= tax;
    }
    amt
}

/// Replay `changes` on an in-memory lot list (the load's bookkeeping).
pub fn replay(lots: &mut Vec<Lot>, c: &LotChanges) {
    for id in &c.deletes {
        lots.retain(|l| l.h_t_id != *id);
    }
    for (id, q) in &c.updates {
        if let Some(l) = lots.iter_mut().find(|l| l.h_t_id == *id) {
            l.qty = *q;
        }
    }
    if let Some(l) = c.insert {
        lots.push(l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lot(id: u64, qty: i64, price: i64) -> Lot {
        Lot {
            h_t_id: id,
            dts: id,
            price,
            qty,
        }
    }

    #[test]
    fn sells_close_long_lots_fifo_or_lifo_then_go_short() {
        let lots = [lot(1, 100, 10), lot(2, 200, 20)];
        let c = apply(&lots, 300, true, 150, false, 30, 9, 9);
        assert_eq!(c.hs_after, 150);
        assert_eq!(c.deletes, vec![1]);
        assert_eq!(c.updates, vec![(2, 150)]);
        assert_eq!((c.buy_value, c.sell_value), (100 * 10 + 50 * 20, 150 * 30));
        assert!(c.insert.is_none());
        let c = apply(&lots, 300, true, 150, true, 30, 9, 9);
        assert_eq!(c.updates, vec![(2, 50)]);
        assert!(c.deletes.is_empty());
        // More than held: the rest opens a short lot.
        let c = apply(&lots, 300, true, 400, false, 30, 9, 9);
        assert_eq!(c.deletes, vec![1, 2]);
        assert_eq!(c.insert.unwrap().qty, -100);
        assert_eq!(c.hs_after, -100);
        let mut l = lots.to_vec();
        replay(&mut l, &c);
        assert_eq!(l.iter().map(|x| x.qty).sum::<i64>(), c.hs_after);
    }

    #[test]
    fn buys_cover_short_lots_and_open_long_ones() {
        let lots = [lot(1, -100, 10)];
        let c = apply(&lots, -100, false, 300, false, 5, 7, 7);
        assert_eq!(c.deletes, vec![1]);
        assert_eq!(c.insert.unwrap().qty, 200);
        assert_eq!(c.hs_after, 200);
        assert_eq!((c.sell_value, c.buy_value), (1_000, 500));
        let c = apply(&[], 0, false, 100, true, 5, 8, 8);
        assert_eq!(c.history, vec![(8, 0, 100)]);
        assert_eq!(tax(1, 100, 300, 1_000), 20);
        assert_eq!(tax(0, 100, 300, 1_000), 0);
        assert_eq!(settlement_amount(true, 10, 100, 5, 7, 1, 3), 1_000 - 15);
        assert_eq!(settlement_amount(false, 10, 100, 5, 7, 2, 3), -1_012);
    }
}
