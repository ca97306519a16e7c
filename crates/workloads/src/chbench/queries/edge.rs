//! Rows a loaded database lacks for some queries, for tests comparing answers: TPC-C's
//! load gives every customer an order, so Q22 (customers without one) is empty; and
//! at one warehouse the about 26 items whose I_DATA begins with `co` are supplied from
//! Germany with a chance of 1 in 62 each, so Q20 is mostly empty, and Q8's German
//! share mostly 0 (its about 16 items below 1,000 ending in `b`). Tests that load a
//! tenth of the items (to load in a fraction of the time) also find no item ending in
//! `BB` for Q9. [`add_edge_rows`] writes the same rows on every engine, inside the
//! caller's transaction.

use crate::chbench::load::{nation_key_of, NATION_LIST};
use crate::chbench::schema::{Supplier, SUPPLIER};
use crate::tpcc::schema::{customer_key, item_key, Customer, Item, CUSTOMER, ITEM};
use api::{Result, Session, Worker};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Customers added to warehouse 1, district 1, after TPC-C's 3,000.
pub const NEW_CUSTOMERS: u32 = 3;

/// German suppliers whose items (stock (1, i)'s supplier is i mod 10,000) are renamed.
pub const GERMAN_SUPPLIERS: usize = 5;

/// Items (and stock rows per warehouse) the answers tests load: a tenth of the
/// specification's, which every query still finds rows in with the rows added here.
pub const TEST_ITEMS: u32 = 10_000;

/// The answers tests' CH-benCHmark: the default with [`TEST_ITEMS`] items.
pub fn test_config() -> crate::chbench::ChConfig {
    crate::chbench::ChConfig {
        tpcc: crate::tpcc::TpccConfig {
            items: TEST_ITEMS,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Items, the highest ids, whose I_DATA is made to end in `BB` (Q9).
pub const BB_ITEMS: u32 = 5;

/// Add [`NEW_CUSTOMERS`] customers without orders (copies of customer (1, 1, 1) with
/// ids 3,001 on, phones beginning 1, 2, 3, states A.., balances of 1,000,000.00 and
/// more, above any average), make the I_DATA of the items of the first
/// [`GERMAN_SUPPLIERS`] German suppliers begin with `co`, and that of the German
/// suppliers' items below 1,000 (item k of supplier k) end in `b`, and that of the
/// [`BB_ITEMS`] highest of the database's `items` end in `BB`.
pub fn add_edge_rows<W: Worker>(s: &mut Session<W>, items: u32) -> Result<()> {
    assert!(
        items > 1000 + BB_ITEMS,
        "the edge rows need over 1,005 items"
    );
    let base: Customer = s
        .get_row(CUSTOMER, &customer_key(1, 1, 1))?
        .ok_or_else(|| api::Error::Fatal("customer (1, 1, 1) missing".into()))?;
    for k in 0..NEW_CUSTOMERS {
        let mut c = base;
        c.c_id = 3001 + k;
        c.c_phone[0] = b'1' + k as u8;
        c.c_state[0] = b'A' + k as u8;
        c.c_balance = 100_000_000 + i64::from(k);
        s.insert_row(CUSTOMER, &customer_key(1, 1, c.c_id), &c)?;
    }
    let place = NATION_LIST.iter().position(|n| n.0 == "Germany");
    let germany = i64::from(nation_key_of(place.expect("Germany is a nation")));
    let mut suppliers = Vec::new();
    exec::scan_each(s, SUPPLIER.primary(), Unbounded, Unbounded, |r| {
        if super::u32c(r, offset_of!(Supplier, su_nationkey)) == germany {
            suppliers.push(super::u32c(r, offset_of!(Supplier, su_suppkey)) as u32);
        }
    })?;
    suppliers.retain(|&k| k > 0);
    for &su in suppliers.iter().filter(|&&k| k < 1000) {
        s.update_row(ITEM, &item_key(su), |it: &mut Item| {
            let n = api::row::get_str(&it.i_data).len();
            it.i_data[n - 1] = b'b';
        })?;
    }
    for su in suppliers.into_iter().take(GERMAN_SUPPLIERS) {
        for i in (su..=items).step_by(10_000) {
            s.update_row(ITEM, &item_key(i), |it: &mut Item| {
                it.i_data[..2].copy_from_slice(b"co");
            })?;
        }
    }
    for i in items - BB_ITEMS + 1..=items {
        s.update_row(ITEM, &item_key(i), |it: &mut Item| {
            let n = api::row::get_str(&it.i_data).len();
            it.i_data[n - 2..n].copy_from_slice(b"BB");
        })?;
    }
    Ok(())
}
