//! TPC-C schema: the nine tables' rows (fixed-layout Pod structs), their key encodings
//! and the index definitions. Owns the byte layout of every TPC-C row and key; it must
//! never contain transaction logic.
//!
//! Representation (clause 1.3 columns, all present): money is `i64` cents, rates (tax,
//! discount) are `u32` in units of 1/10000, dates are `u64` microseconds since the Unix
//! epoch with 0 meaning NULL, carrier id 0 means NULL. Ids are `u32` in rows; in keys the
//! district id and order-line number take one byte (they are at most 10 and 15).

use api::key::Key;
use api::row::field;
use api::typed::{KeyEnc, Part, SqlType};
use api::{IndexKind, Partitioning, Schema, TableDef, TableId};
use bytemuck::{Pod, Zeroable};
use std::mem::{offset_of, size_of};

pub const WAREHOUSE: TableId = TableId(0);
pub const DISTRICT: TableId = TableId(1);
pub const CUSTOMER: TableId = TableId(2);
pub const HISTORY: TableId = TableId(3);
pub const NEW_ORDER: TableId = TableId(4);
pub const ORDER: TableId = TableId(5);
pub const ORDER_LINE: TableId = TableId(6);
pub const ITEM: TableId = TableId(7);
pub const STOCK: TableId = TableId(8);

/// Districts per warehouse, customers per district, initial orders per district
/// (clause 1.2 / 4.3.3.1); fixed by the specification.
pub const DISTRICTS: u32 = 10;
pub const CUSTOMERS: u32 = 3000;
pub const INITIAL_ORDERS: u32 = 3000;
/// Orders 2101..=3000 of each district start undelivered (in New-Order).
pub const FIRST_UNDELIVERED: u32 = 2101;
/// The specification's item count (and stock rows per warehouse).
pub const ITEMS: u32 = 100_000;
pub const MAX_OL_CNT: usize = 15;

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Warehouse {
    pub w_ytd: i64,
    pub w_tax: u32,
    pub w_id: u32,
    pub w_name: [u8; 10],
    pub w_street_1: [u8; 20],
    pub w_street_2: [u8; 20],
    pub w_city: [u8; 20],
    pub w_state: [u8; 2],
    pub w_zip: [u8; 9],
    pub _pad: [u8; 7],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct District {
    pub d_ytd: i64,
    pub d_tax: u32,
    pub d_id: u32,
    pub d_w_id: u32,
    pub d_next_o_id: u32,
    pub d_name: [u8; 10],
    pub d_street_1: [u8; 20],
    pub d_street_2: [u8; 20],
    pub d_city: [u8; 20],
    pub d_state: [u8; 2],
    pub d_zip: [u8; 9],
    pub _pad: [u8; 7],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Customer {
    pub c_since: u64,
    pub c_credit_lim: i64,
    pub c_balance: i64,
    pub c_ytd_payment: i64,
    pub c_id: u32,
    pub c_d_id: u32,
    pub c_w_id: u32,
    pub c_discount: u32,
    pub c_payment_cnt: u32,
    pub c_delivery_cnt: u32,
    pub c_first: [u8; 16],
    pub c_middle: [u8; 2],
    pub c_last: [u8; 16],
    pub c_street_1: [u8; 20],
    pub c_street_2: [u8; 20],
    pub c_city: [u8; 20],
    pub c_state: [u8; 2],
    pub c_zip: [u8; 9],
    pub c_phone: [u8; 16],
    pub c_credit: [u8; 2],
    pub c_data: [u8; 500],
    pub _pad: [u8; 1],
}

/// The head of a Customer row: every column before `c_data` (and, to end on a word, the
/// first bytes of `c_data`). Payment, Delivery, New-Order and Order-Status read or change
/// only these; through [`api::Session::get_head`] an engine may leave the 500 bytes of
/// `c_data` (eight of the row's eleven cache lines) alone.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CustomerHead {
    pub c_since: u64,
    pub c_credit_lim: i64,
    pub c_balance: i64,
    pub c_ytd_payment: i64,
    pub c_id: u32,
    pub c_d_id: u32,
    pub c_w_id: u32,
    pub c_discount: u32,
    pub c_payment_cnt: u32,
    pub c_delivery_cnt: u32,
    pub c_first: [u8; 16],
    pub c_middle: [u8; 2],
    pub c_last: [u8; 16],
    pub c_street_1: [u8; 20],
    pub c_street_2: [u8; 20],
    pub c_city: [u8; 20],
    pub c_state: [u8; 2],
    pub c_zip: [u8; 9],
    pub c_phone: [u8; 16],
    pub c_credit: [u8; 2],
    /// The first bytes of `c_data`, read and written back unchanged.
    pub c_data_start: [u8; 5],
}

/// The bytes of a Customer row its head covers (for `Session::prefetch_part`).
pub const CUSTOMER_HEAD: std::ops::Range<usize> = 0..std::mem::size_of::<CustomerHead>();

// The head is laid out as the row's leading columns.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<CustomerHead>().is_multiple_of(8));
    assert!(offset_of!(CustomerHead, c_data_start) == offset_of!(Customer, c_data));
    assert!(size_of::<CustomerHead>() < size_of::<Customer>());
    assert!(offset_of!(CustomerHead, c_since) == offset_of!(Customer, c_since));
    assert!(offset_of!(CustomerHead, c_credit_lim) == offset_of!(Customer, c_credit_lim));
    assert!(offset_of!(CustomerHead, c_balance) == offset_of!(Customer, c_balance));
    assert!(offset_of!(CustomerHead, c_ytd_payment) == offset_of!(Customer, c_ytd_payment));
    assert!(offset_of!(CustomerHead, c_id) == offset_of!(Customer, c_id));
    assert!(offset_of!(CustomerHead, c_d_id) == offset_of!(Customer, c_d_id));
    assert!(offset_of!(CustomerHead, c_w_id) == offset_of!(Customer, c_w_id));
    assert!(offset_of!(CustomerHead, c_discount) == offset_of!(Customer, c_discount));
    assert!(offset_of!(CustomerHead, c_payment_cnt) == offset_of!(Customer, c_payment_cnt));
    assert!(offset_of!(CustomerHead, c_delivery_cnt) == offset_of!(Customer, c_delivery_cnt));
    assert!(offset_of!(CustomerHead, c_first) == offset_of!(Customer, c_first));
    assert!(offset_of!(CustomerHead, c_middle) == offset_of!(Customer, c_middle));
    assert!(offset_of!(CustomerHead, c_last) == offset_of!(Customer, c_last));
    assert!(offset_of!(CustomerHead, c_street_1) == offset_of!(Customer, c_street_1));
    assert!(offset_of!(CustomerHead, c_street_2) == offset_of!(Customer, c_street_2));
    assert!(offset_of!(CustomerHead, c_city) == offset_of!(Customer, c_city));
    assert!(offset_of!(CustomerHead, c_state) == offset_of!(Customer, c_state));
    assert!(offset_of!(CustomerHead, c_zip) == offset_of!(Customer, c_zip));
    assert!(offset_of!(CustomerHead, c_phone) == offset_of!(Customer, c_phone));
    assert!(offset_of!(CustomerHead, c_credit) == offset_of!(Customer, c_credit));
};

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct History {
    pub h_date: u64,
    pub h_amount: i64,
    pub h_c_id: u32,
    pub h_c_d_id: u32,
    pub h_c_w_id: u32,
    pub h_d_id: u32,
    pub h_w_id: u32,
    pub h_data: [u8; 24],
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct NewOrder {
    pub no_o_id: u32,
    pub no_d_id: u32,
    pub no_w_id: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Order {
    pub o_entry_d: u64,
    pub o_id: u32,
    pub o_d_id: u32,
    pub o_w_id: u32,
    pub o_c_id: u32,
    /// 0 = NULL (not delivered).
    pub o_carrier_id: u32,
    pub o_ol_cnt: u32,
    pub o_all_local: u32,
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct OrderLine {
    /// 0 = NULL (not delivered).
    pub ol_delivery_d: u64,
    pub ol_amount: i64,
    pub ol_o_id: u32,
    pub ol_d_id: u32,
    pub ol_w_id: u32,
    pub ol_number: u32,
    pub ol_i_id: u32,
    pub ol_supply_w_id: u32,
    pub ol_quantity: u32,
    pub ol_dist_info: [u8; 24],
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Item {
    pub i_price: i64,
    pub i_id: u32,
    pub i_im_id: u32,
    pub i_name: [u8; 24],
    pub i_data: [u8; 50],
    pub _pad: [u8; 6],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Stock {
    pub s_i_id: u32,
    pub s_w_id: u32,
    pub s_quantity: i32,
    pub s_ytd: u32,
    pub s_order_cnt: u32,
    pub s_remote_cnt: u32,
    pub s_dist: [[u8; 24]; 10],
    pub s_data: [u8; 50],
    pub _pad: [u8; 2],
}

// ---- primary keys (order-preserving; see api::key) ----

pub fn warehouse_key(w: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(w);
    k
}

pub fn district_key(w: u32, d: u32) -> Key {
    let mut k = warehouse_key(w);
    k.push_u8(d as u8);
    k
}

pub fn customer_key(w: u32, d: u32, c: u32) -> Key {
    let mut k = district_key(w, d);
    k.push_u32(c);
    k
}

/// History has no key in the specification; this synthetic one is unique per row:
/// (h_w_id, h_d_id, nonce, worker, seq). Loaded rows use nonce 0, worker 0, seq = c_id;
/// a run's worker uses a nonzero per-worker nonce and a per-worker sequence number.
pub fn history_key(w: u32, d: u32, nonce: u64, worker: u32, seq: u64) -> Key {
    let mut k = district_key(w, d);
    k.push_u64(nonce).push_u32(worker).push_u64(seq);
    k
}

pub fn order_key(w: u32, d: u32, o: u32) -> Key {
    let mut k = district_key(w, d);
    k.push_u32(o);
    k
}

/// New-Order rows use the same key as their order.
pub fn new_order_key(w: u32, d: u32, o: u32) -> Key {
    order_key(w, d, o)
}

pub fn order_line_key(w: u32, d: u32, o: u32, n: u32) -> Key {
    let mut k = order_key(w, d, o);
    k.push_u8(n as u8);
    k
}

pub fn item_key(i: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(i);
    k
}

pub fn stock_key(w: u32, i: u32) -> Key {
    let mut k = warehouse_key(w);
    k.push_u32(i);
    k
}

/// Prefix of the customer-name index for a (warehouse, district, last name).
pub fn customer_name_prefix(w: u32, d: u32, last: &[u8; 16]) -> Key {
    let mut k = district_key(w, d);
    k.push_bytes(last);
    k
}

/// Prefix of the order-customer index for a (warehouse, district, customer).
pub fn order_customer_prefix(w: u32, d: u32, c: u32) -> Key {
    customer_key(w, d, c)
}

/// Decode the order id of an Order / New-Order primary key.
pub fn order_id_of_key(k: &[u8]) -> u32 {
    api::key::read_u32(k, 5)
}

/// Customer secondary key: (c_w_id, c_d_id, c_last, c_first); non-unique, so the
/// engine appends the primary key. Reads fields in place (no row copy).
fn customer_name_key_of(row: &[u8], out: &mut Key) {
    let w = field::<u32>(row, offset_of!(Customer, c_w_id));
    let d = field::<u32>(row, offset_of!(Customer, c_d_id));
    let last = offset_of!(Customer, c_last);
    let first = offset_of!(Customer, c_first);
    out.push_u32(w)
        .push_u8(d as u8)
        .push_bytes(&row[last..last + 16])
        .push_bytes(&row[first..first + 16]);
}

/// Order secondary key: (o_w_id, o_d_id, o_c_id, o_id), unique.
fn order_customer_key_of(row: &[u8], out: &mut Key) {
    out.push_u32(field::<u32>(row, offset_of!(Order, o_w_id)))
        .push_u8(field::<u32>(row, offset_of!(Order, o_d_id)) as u8)
        .push_u32(field::<u32>(row, offset_of!(Order, o_c_id)))
        .push_u32(field::<u32>(row, offset_of!(Order, o_id)));
}

/// Column types (clause 1.3) for the typed declarations (`api::typed`): ids are the
/// rows' 4-byte unsigned integers; money is `i64` cents; rates are 1/10000 units.
const ID: SqlType = SqlType::Int {
    bytes: 4,
    signed: false,
};
/// Signed numeric(12,2): balances and year-to-date totals.
const MONEY_12: SqlType = SqlType::Decimal {
    bytes: 8,
    precision: 12,
    scale: 2,
};
/// Signed numeric(6,2): payment and order-line amounts.
const MONEY_6: SqlType = SqlType::Decimal {
    bytes: 8,
    precision: 6,
    scale: 2,
};
/// Numeric(5,2): item prices.
const PRICE: SqlType = SqlType::Decimal {
    bytes: 8,
    precision: 5,
    scale: 2,
};
/// Signed numeric(4,4): tax and discount rates.
const RATE: SqlType = SqlType::Decimal {
    bytes: 4,
    precision: 4,
    scale: 4,
};
/// Integer counts and quantities (numeric(n) in the specification), unsigned in rows.
const COUNT: SqlType = ID;
const DATE: SqlType = SqlType::Timestamp;
const C2: SqlType = SqlType::Char(2);
const C9: SqlType = SqlType::Char(9);
const V10: SqlType = SqlType::VarChar(10);
const V20: SqlType = SqlType::VarChar(20);

/// Key parts: warehouse ids take 4 bytes; district ids and order-line numbers one.
fn w_part(name: &'static str) -> Part {
    Part::col(name, KeyEnc::U32)
}
fn d_part(name: &'static str) -> Part {
    Part::col(name, KeyEnc::U8)
}
fn id_part(name: &'static str) -> Part {
    Part::col(name, KeyEnc::U32)
}

/// The nine tables, in the order of the `TableId` constants above.
// A table of data (one declaration per table of the schema): exempt from the length lint.
#[allow(clippy::too_many_lines)]
pub fn build(warehouses: u32, items: u32) -> Schema {
    let w = warehouses as u64;
    let dists = w * DISTRICTS as u64;
    let custs = dists * CUSTOMERS as u64;
    let mut s = Schema::new();
    let warehouse = TableDef::new("warehouse", size_of::<Warehouse>(), IndexKind::Hash, w)
        .columns(&[
            ("w_id", ID, offset_of!(Warehouse, w_id)),
            ("w_name", V10, offset_of!(Warehouse, w_name)),
            ("w_street_1", V20, offset_of!(Warehouse, w_street_1)),
            ("w_street_2", V20, offset_of!(Warehouse, w_street_2)),
            ("w_city", V20, offset_of!(Warehouse, w_city)),
            ("w_state", C2, offset_of!(Warehouse, w_state)),
            ("w_zip", C9, offset_of!(Warehouse, w_zip)),
            ("w_tax", RATE, offset_of!(Warehouse, w_tax)),
            ("w_ytd", MONEY_12, offset_of!(Warehouse, w_ytd)),
        ])
        .primary_key(&[w_part("w_id")]);
    let district = TableDef::new("district", size_of::<District>(), IndexKind::Hash, dists)
        .columns(&[
            ("d_id", ID, offset_of!(District, d_id)),
            ("d_w_id", ID, offset_of!(District, d_w_id)),
            ("d_name", V10, offset_of!(District, d_name)),
            ("d_street_1", V20, offset_of!(District, d_street_1)),
            ("d_street_2", V20, offset_of!(District, d_street_2)),
            ("d_city", V20, offset_of!(District, d_city)),
            ("d_state", C2, offset_of!(District, d_state)),
            ("d_zip", C9, offset_of!(District, d_zip)),
            ("d_tax", RATE, offset_of!(District, d_tax)),
            ("d_ytd", MONEY_12, offset_of!(District, d_ytd)),
            ("d_next_o_id", ID, offset_of!(District, d_next_o_id)),
        ])
        .primary_key(&[w_part("d_w_id"), d_part("d_id")]);
    let customer = TableDef::new("customer", size_of::<Customer>(), IndexKind::Hash, custs)
        .columns(&[
            ("c_id", ID, offset_of!(Customer, c_id)),
            ("c_d_id", ID, offset_of!(Customer, c_d_id)),
            ("c_w_id", ID, offset_of!(Customer, c_w_id)),
            (
                "c_first",
                SqlType::VarChar(16),
                offset_of!(Customer, c_first),
            ),
            ("c_middle", C2, offset_of!(Customer, c_middle)),
            ("c_last", SqlType::VarChar(16), offset_of!(Customer, c_last)),
            ("c_street_1", V20, offset_of!(Customer, c_street_1)),
            ("c_street_2", V20, offset_of!(Customer, c_street_2)),
            ("c_city", V20, offset_of!(Customer, c_city)),
            ("c_state", C2, offset_of!(Customer, c_state)),
            ("c_zip", C9, offset_of!(Customer, c_zip)),
            ("c_phone", SqlType::Char(16), offset_of!(Customer, c_phone)),
            ("c_since", DATE, offset_of!(Customer, c_since)),
            ("c_credit", C2, offset_of!(Customer, c_credit)),
            ("c_credit_lim", MONEY_12, offset_of!(Customer, c_credit_lim)),
            ("c_discount", RATE, offset_of!(Customer, c_discount)),
            ("c_balance", MONEY_12, offset_of!(Customer, c_balance)),
            (
                "c_ytd_payment",
                MONEY_12,
                offset_of!(Customer, c_ytd_payment),
            ),
            ("c_payment_cnt", COUNT, offset_of!(Customer, c_payment_cnt)),
            (
                "c_delivery_cnt",
                COUNT,
                offset_of!(Customer, c_delivery_cnt),
            ),
            (
                "c_data",
                SqlType::VarChar(500),
                offset_of!(Customer, c_data),
            ),
        ])
        .primary_key(&[w_part("c_w_id"), d_part("c_d_id"), id_part("c_id")])
        .with_secondary("customer_name", false, customer_name_key_of)
        .secondary_key(
            "customer_name",
            &[
                w_part("c_w_id"),
                d_part("c_d_id"),
                Part::col("c_last", KeyEnc::Fixed(16)),
                Part::col("c_first", KeyEnc::Fixed(16)),
            ],
        );
    // Scanned by (warehouse, district) for consistency conditions 8-10. The key's
    // (nonce, worker, seq) tail is not in the row (see `history_key`).
    let history = TableDef::new("history", size_of::<History>(), IndexKind::BTree, custs * 2)
        .columns(&[
            ("h_c_id", ID, offset_of!(History, h_c_id)),
            ("h_c_d_id", ID, offset_of!(History, h_c_d_id)),
            ("h_c_w_id", ID, offset_of!(History, h_c_w_id)),
            ("h_d_id", ID, offset_of!(History, h_d_id)),
            ("h_w_id", ID, offset_of!(History, h_w_id)),
            ("h_date", DATE, offset_of!(History, h_date)),
            ("h_amount", MONEY_6, offset_of!(History, h_amount)),
            ("h_data", SqlType::VarChar(24), offset_of!(History, h_data)),
        ])
        .primary_key(&[
            w_part("h_w_id"),
            d_part("h_d_id"),
            Part::key_only("h_nonce", KeyEnc::U64),
            Part::key_only("h_worker", KeyEnc::U32),
            Part::key_only("h_seq", KeyEnc::U64),
        ]);
    let new_order = TableDef::new(
        "new_order",
        size_of::<NewOrder>(),
        IndexKind::BTree,
        dists * 900,
    )
    .columns(&[
        ("no_o_id", ID, offset_of!(NewOrder, no_o_id)),
        ("no_d_id", ID, offset_of!(NewOrder, no_d_id)),
        ("no_w_id", ID, offset_of!(NewOrder, no_w_id)),
    ])
    .primary_key(&[w_part("no_w_id"), d_part("no_d_id"), id_part("no_o_id")]);
    let order = TableDef::new("order", size_of::<Order>(), IndexKind::BTree, custs * 2)
        .columns(&[
            ("o_id", ID, offset_of!(Order, o_id)),
            ("o_d_id", ID, offset_of!(Order, o_d_id)),
            ("o_w_id", ID, offset_of!(Order, o_w_id)),
            ("o_c_id", ID, offset_of!(Order, o_c_id)),
            ("o_entry_d", DATE, offset_of!(Order, o_entry_d)),
            // 0 stands for NULL (not delivered).
            ("o_carrier_id", ID, offset_of!(Order, o_carrier_id)),
            ("o_ol_cnt", COUNT, offset_of!(Order, o_ol_cnt)),
            ("o_all_local", COUNT, offset_of!(Order, o_all_local)),
        ])
        .primary_key(&[w_part("o_w_id"), d_part("o_d_id"), id_part("o_id")])
        .with_secondary("order_customer", true, order_customer_key_of)
        .secondary_key(
            "order_customer",
            &[
                w_part("o_w_id"),
                d_part("o_d_id"),
                id_part("o_c_id"),
                id_part("o_id"),
            ],
        );
    let order_line = TableDef::new(
        "order_line",
        size_of::<OrderLine>(),
        IndexKind::BTree,
        custs * 20,
    )
    .columns(&[
        ("ol_o_id", ID, offset_of!(OrderLine, ol_o_id)),
        ("ol_d_id", ID, offset_of!(OrderLine, ol_d_id)),
        ("ol_w_id", ID, offset_of!(OrderLine, ol_w_id)),
        ("ol_number", ID, offset_of!(OrderLine, ol_number)),
        ("ol_i_id", ID, offset_of!(OrderLine, ol_i_id)),
        ("ol_supply_w_id", ID, offset_of!(OrderLine, ol_supply_w_id)),
        ("ol_delivery_d", DATE, offset_of!(OrderLine, ol_delivery_d)),
        ("ol_quantity", COUNT, offset_of!(OrderLine, ol_quantity)),
        ("ol_amount", MONEY_6, offset_of!(OrderLine, ol_amount)),
        (
            "ol_dist_info",
            SqlType::Char(24),
            offset_of!(OrderLine, ol_dist_info),
        ),
    ])
    .primary_key(&[
        w_part("ol_w_id"),
        d_part("ol_d_id"),
        id_part("ol_o_id"),
        Part::col("ol_number", KeyEnc::U8),
    ]);
    let item = TableDef::new("item", size_of::<Item>(), IndexKind::Hash, items as u64)
        .columns(&[
            ("i_id", ID, offset_of!(Item, i_id)),
            ("i_im_id", ID, offset_of!(Item, i_im_id)),
            ("i_name", SqlType::VarChar(24), offset_of!(Item, i_name)),
            ("i_price", PRICE, offset_of!(Item, i_price)),
            ("i_data", SqlType::VarChar(50), offset_of!(Item, i_data)),
        ])
        .primary_key(&[id_part("i_id")]);
    let dist = offset_of!(Stock, s_dist);
    let stock = TableDef::new(
        "stock",
        size_of::<Stock>(),
        IndexKind::Hash,
        w * items as u64,
    )
    .columns(&[
        ("s_i_id", ID, offset_of!(Stock, s_i_id)),
        ("s_w_id", ID, offset_of!(Stock, s_w_id)),
        (
            "s_quantity",
            SqlType::Int {
                bytes: 4,
                signed: true,
            },
            offset_of!(Stock, s_quantity),
        ),
        ("s_dist_01", SqlType::Char(24), dist),
        ("s_dist_02", SqlType::Char(24), dist + 24),
        ("s_dist_03", SqlType::Char(24), dist + 2 * 24),
        ("s_dist_04", SqlType::Char(24), dist + 3 * 24),
        ("s_dist_05", SqlType::Char(24), dist + 4 * 24),
        ("s_dist_06", SqlType::Char(24), dist + 5 * 24),
        ("s_dist_07", SqlType::Char(24), dist + 6 * 24),
        ("s_dist_08", SqlType::Char(24), dist + 7 * 24),
        ("s_dist_09", SqlType::Char(24), dist + 8 * 24),
        ("s_dist_10", SqlType::Char(24), dist + 9 * 24),
        ("s_ytd", COUNT, offset_of!(Stock, s_ytd)),
        ("s_order_cnt", COUNT, offset_of!(Stock, s_order_cnt)),
        ("s_remote_cnt", COUNT, offset_of!(Stock, s_remote_cnt)),
        ("s_data", SqlType::VarChar(50), offset_of!(Stock, s_data)),
    ])
    .primary_key(&[w_part("s_w_id"), id_part("s_i_id")]);
    let ids = [
        warehouse, district, customer, history, new_order, order, order_line, item, stock,
    ]
    .map(|t| s.add(t));
    let want = [
        WAREHOUSE, DISTRICT, CUSTOMER, HISTORY, NEW_ORDER, ORDER, ORDER_LINE, ITEM, STOCK,
    ];
    assert_eq!(ids, want, "TPC-C table ids must follow the constants");
    // Partitioned by warehouse (value: w_id - 1): every key of every index but ITEM's
    // starts with the warehouse id. ITEM is read-only after the load: not partitioned
    // (one copy every partition reads).
    let by_warehouse = Partitioning {
        values: w,
        of_key: |_, k| (k.len() >= 4).then(|| (api::key::read_u32(k, 0) as u64).saturating_sub(1)),
        of_row: None,
    };
    for t in ids {
        if t != ITEM {
            s.tables[t.0 as usize].partitioning = Some(by_warehouse);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::row;

    #[test]
    fn secondary_keys_read_the_right_fields() {
        let mut c = Customer::zeroed();
        c.c_w_id = 7;
        c.c_d_id = 3;
        row::set_str(&mut c.c_last, b"BARBARBAR");
        row::set_str(&mut c.c_first, b"ALICE");
        let mut k = Key::new();
        customer_name_key_of(row::bytes(&c), &mut k);
        let mut want = customer_name_prefix(7, 3, &c.c_last);
        want.push_bytes(&c.c_first);
        assert_eq!(k, want);

        let mut o = Order::zeroed();
        o.o_w_id = 2;
        o.o_d_id = 9;
        o.o_c_id = 1234;
        o.o_id = 3001;
        let mut k = Key::new();
        order_customer_key_of(row::bytes(&o), &mut k);
        let mut want = order_customer_prefix(2, 9, 1234);
        want.push_u32(3001);
        assert_eq!(k, want);
        assert_eq!(order_id_of_key(&order_key(2, 9, 3001)), 3001);
    }

    #[test]
    fn row_sizes_match_the_design_document() {
        use std::mem::size_of;
        let sizes = [
            size_of::<Warehouse>(),
            size_of::<District>(),
            size_of::<Customer>(),
            size_of::<History>(),
            size_of::<NewOrder>(),
            size_of::<Order>(),
            size_of::<OrderLine>(),
            size_of::<Item>(),
            size_of::<Stock>(),
        ];
        assert_eq!(sizes, [104, 112, 680, 64, 12, 40, 72, 96, 316]);
        let s = build(1, ITEMS);
        let longest =
            customer_name_prefix(1, 1, &[b'Z'; 16]).len() + 16 + customer_key(1, 1, 1).len();
        assert!(longest <= api::key::MAX_KEY_LEN);
        assert_eq!(s.tables.len(), 9);
    }

    #[test]
    fn keys_order_like_their_tuples() {
        assert!(order_key(1, 10, 5) < order_key(2, 1, 1));
        assert!(order_line_key(1, 1, 5, 15) < order_key(1, 1, 6));
        assert!(stock_key(1, 100_000) < stock_key(2, 1));
    }
}
