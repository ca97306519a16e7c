//! TPC-H schema (specification 3.0.x, clause 1.4): the eight tables' rows (fixed-layout
//! Pod structs), their key encodings and index definitions, with the typed declarations
//! the SQL adapters create real tables from. Owns the byte layout of every TPC-H row and
//! key; it never generates data or runs queries.
//!
//! Representation: decimals (prices, balances, quantities, discounts, taxes) are `i64`
//! counts of cents (DECIMAL(15,2) scaled by 100); dates are `u32` days since 1970-01-01
//! (an INTEGER column in SQL); identifiers are `u32`, order keys `u64` (sparse keys
//! reach 6,000,000 x SF). Strings are zero-padded fields of the specification's widths
//! (VARCHAR(n) / CHAR(n)).

use api::key::Key;
use api::typed::{KeyEnc, SqlType};
use api::{IndexKind, Schema, TableDef, TableId};
use bytemuck::{Pod, Zeroable};
use std::mem::{offset_of, size_of};

pub const PART: TableId = TableId(0);
pub const SUPPLIER: TableId = TableId(1);
pub const PARTSUPP: TableId = TableId(2);
pub const CUSTOMER: TableId = TableId(3);
pub const ORDERS: TableId = TableId(4);
pub const LINEITEM: TableId = TableId(5);
pub const NATION: TableId = TableId(6);
pub const REGION: TableId = TableId(7);

/// The index of ORDERS by O_CUSTKEY (`ORDERS.secondary(ORDERS_BY_CUSTOMER)`).
pub const ORDERS_BY_CUSTOMER: u16 = 0;

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Part {
    pub p_retailprice: i64,
    pub p_partkey: u32,
    pub p_size: u32,
    pub p_name: [u8; 55],
    pub p_mfgr: [u8; 25],
    pub p_brand: [u8; 10],
    pub p_type: [u8; 25],
    pub p_container: [u8; 10],
    pub p_comment: [u8; 23],
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Supplier {
    pub s_acctbal: i64,
    pub s_suppkey: u32,
    pub s_nationkey: u32,
    pub s_name: [u8; 25],
    pub s_address: [u8; 40],
    pub s_phone: [u8; 15],
    pub s_comment: [u8; 101],
    pub _pad: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PartSupp {
    pub ps_supplycost: i64,
    pub ps_partkey: u32,
    pub ps_suppkey: u32,
    pub ps_availqty: u32,
    pub ps_comment: [u8; 199],
    pub _pad: [u8; 5],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Customer {
    pub c_acctbal: i64,
    pub c_custkey: u32,
    pub c_nationkey: u32,
    pub c_name: [u8; 25],
    pub c_address: [u8; 40],
    pub c_phone: [u8; 15],
    pub c_mktsegment: [u8; 10],
    pub c_comment: [u8; 117],
    pub _pad: [u8; 1],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Orders {
    pub o_orderkey: u64,
    pub o_totalprice: i64,
    pub o_custkey: u32,
    pub o_orderdate: u32,
    pub o_shippriority: u32,
    pub o_orderstatus: [u8; 1],
    pub o_orderpriority: [u8; 15],
    pub o_clerk: [u8; 15],
    pub o_comment: [u8; 79],
    pub _pad: [u8; 6],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Lineitem {
    pub l_orderkey: u64,
    pub l_quantity: i64,
    pub l_extendedprice: i64,
    pub l_discount: i64,
    pub l_tax: i64,
    pub l_partkey: u32,
    pub l_suppkey: u32,
    pub l_linenumber: u32,
    pub l_shipdate: u32,
    pub l_commitdate: u32,
    pub l_receiptdate: u32,
    pub l_returnflag: [u8; 1],
    pub l_linestatus: [u8; 1],
    pub l_shipinstruct: [u8; 25],
    pub l_shipmode: [u8; 10],
    pub l_comment: [u8; 44],
    pub _pad: [u8; 7],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Nation {
    pub n_nationkey: u32,
    pub n_regionkey: u32,
    pub n_name: [u8; 25],
    pub n_comment: [u8; 152],
    pub _pad: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Region {
    pub r_regionkey: u32,
    pub r_name: [u8; 25],
    pub r_comment: [u8; 152],
    pub _pad: [u8; 3],
}

// ---- primary keys (order-preserving; see api::key) ----

/// The key of PART, SUPPLIER, CUSTOMER, NATION and REGION: their one integer id.
pub fn id_key(id: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(id);
    k
}

pub fn partsupp_key(part: u32, supp: u32) -> Key {
    let mut k = id_key(part);
    k.push_u32(supp);
    k
}

pub fn orders_key(order: u64) -> Key {
    let mut k = Key::new();
    k.push_u64(order);
    k
}

pub fn lineitem_key(order: u64, line: u32) -> Key {
    let mut k = orders_key(order);
    k.push_u32(line);
    k
}

/// The order key of an ORDERS or LINEITEM primary key.
pub fn order_of_key(k: &[u8]) -> u64 {
    api::key::read_u64(k, 0)
}

/// The prefix of the orders-by-customer index for customer `c`.
pub fn orders_by_customer_prefix(c: u32) -> Key {
    id_key(c)
}

/// ORDERS' secondary key: (O_CUSTKEY), non-unique (the engine appends O_ORDERKEY).
fn orders_by_customer_key_of(row: &[u8], out: &mut Key) {
    out.push_u32(api::row::field::<u32>(row, offset_of!(Orders, o_custkey)));
}

const ID: SqlType = SqlType::Int {
    bytes: 4,
    signed: false,
};
const ORDERKEY: SqlType = SqlType::Int {
    bytes: 8,
    signed: false,
};
/// DECIMAL(15,2) in cents.
const MONEY: SqlType = SqlType::Decimal {
    bytes: 8,
    precision: 15,
    scale: 2,
};
/// DATE as days since 1970-01-01.
const DATE: SqlType = ID;

fn id_part(name: &'static str) -> api::typed::Part {
    api::typed::Part::col(name, KeyEnc::U32)
}

/// Table sizes for the scale factor (the specification's cardinalities, clause 4.2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub parts: u32,
    pub suppliers: u32,
    pub customers: u32,
    pub orders: u64,
    /// Line items expected (4 per order; the population draws 1 to 7 per order).
    pub lineitems: u64,
}

/// The eight tables, in the order of the `TableId` constants above.
// A table of data (one declaration per table of the schema): exempt from the length lint.
#[allow(clippy::too_many_lines)]
pub fn build(z: Sizes) -> Schema {
    let mut s = Schema::new();
    let part = TableDef::new("part", size_of::<Part>(), IndexKind::BTree, z.parts as u64)
        .columns(&[
            ("p_partkey", ID, offset_of!(Part, p_partkey)),
            ("p_name", SqlType::VarChar(55), offset_of!(Part, p_name)),
            ("p_mfgr", SqlType::Char(25), offset_of!(Part, p_mfgr)),
            ("p_brand", SqlType::Char(10), offset_of!(Part, p_brand)),
            ("p_type", SqlType::VarChar(25), offset_of!(Part, p_type)),
            ("p_size", ID, offset_of!(Part, p_size)),
            (
                "p_container",
                SqlType::Char(10),
                offset_of!(Part, p_container),
            ),
            ("p_retailprice", MONEY, offset_of!(Part, p_retailprice)),
            (
                "p_comment",
                SqlType::VarChar(23),
                offset_of!(Part, p_comment),
            ),
        ])
        .primary_key(&[id_part("p_partkey")]);
    let supplier = TableDef::new(
        "supplier",
        size_of::<Supplier>(),
        IndexKind::BTree,
        z.suppliers as u64,
    )
    .columns(&[
        ("s_suppkey", ID, offset_of!(Supplier, s_suppkey)),
        ("s_name", SqlType::Char(25), offset_of!(Supplier, s_name)),
        (
            "s_address",
            SqlType::VarChar(40),
            offset_of!(Supplier, s_address),
        ),
        ("s_nationkey", ID, offset_of!(Supplier, s_nationkey)),
        ("s_phone", SqlType::Char(15), offset_of!(Supplier, s_phone)),
        ("s_acctbal", MONEY, offset_of!(Supplier, s_acctbal)),
        (
            "s_comment",
            SqlType::VarChar(101),
            offset_of!(Supplier, s_comment),
        ),
    ])
    .primary_key(&[id_part("s_suppkey")]);
    let partsupp = TableDef::new(
        "partsupp",
        size_of::<PartSupp>(),
        IndexKind::BTree,
        4 * z.parts as u64,
    )
    .columns(&[
        ("ps_partkey", ID, offset_of!(PartSupp, ps_partkey)),
        ("ps_suppkey", ID, offset_of!(PartSupp, ps_suppkey)),
        ("ps_availqty", ID, offset_of!(PartSupp, ps_availqty)),
        ("ps_supplycost", MONEY, offset_of!(PartSupp, ps_supplycost)),
        (
            "ps_comment",
            SqlType::VarChar(199),
            offset_of!(PartSupp, ps_comment),
        ),
    ])
    .primary_key(&[id_part("ps_partkey"), id_part("ps_suppkey")]);
    let customer = TableDef::new(
        "customer",
        size_of::<Customer>(),
        IndexKind::BTree,
        z.customers as u64,
    )
    .columns(&[
        ("c_custkey", ID, offset_of!(Customer, c_custkey)),
        ("c_name", SqlType::VarChar(25), offset_of!(Customer, c_name)),
        (
            "c_address",
            SqlType::VarChar(40),
            offset_of!(Customer, c_address),
        ),
        ("c_nationkey", ID, offset_of!(Customer, c_nationkey)),
        ("c_phone", SqlType::Char(15), offset_of!(Customer, c_phone)),
        ("c_acctbal", MONEY, offset_of!(Customer, c_acctbal)),
        (
            "c_mktsegment",
            SqlType::Char(10),
            offset_of!(Customer, c_mktsegment),
        ),
        (
            "c_comment",
            SqlType::VarChar(117),
            offset_of!(Customer, c_comment),
        ),
    ])
    .primary_key(&[id_part("c_custkey")]);
    let orders = TableDef::new("orders", size_of::<Orders>(), IndexKind::BTree, z.orders)
        .columns(&[
            ("o_orderkey", ORDERKEY, offset_of!(Orders, o_orderkey)),
            ("o_custkey", ID, offset_of!(Orders, o_custkey)),
            (
                "o_orderstatus",
                SqlType::Char(1),
                offset_of!(Orders, o_orderstatus),
            ),
            ("o_totalprice", MONEY, offset_of!(Orders, o_totalprice)),
            ("o_orderdate", DATE, offset_of!(Orders, o_orderdate)),
            (
                "o_orderpriority",
                SqlType::Char(15),
                offset_of!(Orders, o_orderpriority),
            ),
            ("o_clerk", SqlType::Char(15), offset_of!(Orders, o_clerk)),
            ("o_shippriority", ID, offset_of!(Orders, o_shippriority)),
            (
                "o_comment",
                SqlType::VarChar(79),
                offset_of!(Orders, o_comment),
            ),
        ])
        .primary_key(&[api::typed::Part::col("o_orderkey", KeyEnc::U64)])
        .with_secondary("orders_by_customer", false, orders_by_customer_key_of)
        .secondary_key("orders_by_customer", &[id_part("o_custkey")]);
    let lineitem = TableDef::new(
        "lineitem",
        size_of::<Lineitem>(),
        IndexKind::BTree,
        z.lineitems,
    )
    .columns(&[
        ("l_orderkey", ORDERKEY, offset_of!(Lineitem, l_orderkey)),
        ("l_partkey", ID, offset_of!(Lineitem, l_partkey)),
        ("l_suppkey", ID, offset_of!(Lineitem, l_suppkey)),
        ("l_linenumber", ID, offset_of!(Lineitem, l_linenumber)),
        ("l_quantity", MONEY, offset_of!(Lineitem, l_quantity)),
        (
            "l_extendedprice",
            MONEY,
            offset_of!(Lineitem, l_extendedprice),
        ),
        ("l_discount", MONEY, offset_of!(Lineitem, l_discount)),
        ("l_tax", MONEY, offset_of!(Lineitem, l_tax)),
        (
            "l_returnflag",
            SqlType::Char(1),
            offset_of!(Lineitem, l_returnflag),
        ),
        (
            "l_linestatus",
            SqlType::Char(1),
            offset_of!(Lineitem, l_linestatus),
        ),
        ("l_shipdate", DATE, offset_of!(Lineitem, l_shipdate)),
        ("l_commitdate", DATE, offset_of!(Lineitem, l_commitdate)),
        ("l_receiptdate", DATE, offset_of!(Lineitem, l_receiptdate)),
        (
            "l_shipinstruct",
            SqlType::Char(25),
            offset_of!(Lineitem, l_shipinstruct),
        ),
        (
            "l_shipmode",
            SqlType::Char(10),
            offset_of!(Lineitem, l_shipmode),
        ),
        (
            "l_comment",
            SqlType::VarChar(44),
            offset_of!(Lineitem, l_comment),
        ),
    ])
    .primary_key(&[
        api::typed::Part::col("l_orderkey", KeyEnc::U64),
        id_part("l_linenumber"),
    ]);
    let nation = nation_table(25);
    let region = region_table();
    let ids = [
        part, supplier, partsupp, customer, orders, lineitem, nation, region,
    ]
    .map(|t| s.add(t));
    let want = [
        PART, SUPPLIER, PARTSUPP, CUSTOMER, ORDERS, LINEITEM, NATION, REGION,
    ];
    assert_eq!(ids, want, "TPC-H table ids must follow the constants");
    s
}

/// NATION with `rows` rows (TPC-H's 25; CH-benCHmark's 62 share its layout).
pub fn nation_table(rows: u64) -> TableDef {
    TableDef::new("nation", size_of::<Nation>(), IndexKind::BTree, rows)
        .columns(&[
            ("n_nationkey", ID, offset_of!(Nation, n_nationkey)),
            ("n_name", SqlType::Char(25), offset_of!(Nation, n_name)),
            ("n_regionkey", ID, offset_of!(Nation, n_regionkey)),
            (
                "n_comment",
                SqlType::VarChar(152),
                offset_of!(Nation, n_comment),
            ),
        ])
        .primary_key(&[id_part("n_nationkey")])
}

/// REGION's five rows (TPC-H's and CH-benCHmark's).
pub fn region_table() -> TableDef {
    TableDef::new("region", size_of::<Region>(), IndexKind::BTree, 5)
        .columns(&[
            ("r_regionkey", ID, offset_of!(Region, r_regionkey)),
            ("r_name", SqlType::Char(25), offset_of!(Region, r_name)),
            (
                "r_comment",
                SqlType::VarChar(152),
                offset_of!(Region, r_comment),
            ),
        ])
        .primary_key(&[id_part("r_regionkey")])
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::row;

    #[test]
    fn row_sizes_and_keys() {
        let sizes = [
            size_of::<Part>(),
            size_of::<Supplier>(),
            size_of::<PartSupp>(),
            size_of::<Customer>(),
            size_of::<Orders>(),
            size_of::<Lineitem>(),
            size_of::<Nation>(),
            size_of::<Region>(),
        ];
        assert_eq!(sizes, [168, 200, 224, 224, 144, 152, 188, 184]);
        assert!(lineitem_key(5, 7) < orders_key(6));
        assert!(orders_key(255) < orders_key(256));
        assert_eq!(order_of_key(&lineitem_key(1 << 40, 3)), 1 << 40);
        let mut o = Orders::zeroed();
        o.o_custkey = 77;
        let mut k = Key::new();
        orders_by_customer_key_of(row::bytes(&o), &mut k);
        assert_eq!(k, orders_by_customer_prefix(77));
    }
}
