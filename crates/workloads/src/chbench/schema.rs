//! CH-benCHmark's schema: TPC-C's nine tables (`tpcc::schema::build`, unchanged but
//! for the kind of three primary indexes) and the three tables it adds, SUPPLIER,
//! NATION and REGION, with their rows, keys and typed declarations. Owns the byte
//! layout of the three added tables; never generates data.

use crate::tpcc::schema as tpcc;
use crate::tpch::schema as tpch;
use api::key::Key;
use api::typed::{KeyEnc, Part, SqlType};
use api::{IndexKind, Schema, TableDef, TableId};
use bytemuck::{Pod, Zeroable};
use std::mem::{offset_of, size_of};

pub const SUPPLIER: TableId = TableId(9);
pub const NATION: TableId = TableId(10);
pub const REGION: TableId = TableId(11);

/// Suppliers: keys 0..10,000 (stock's supplier is (s_w_id x s_i_id) mod 10,000).
pub const SUPPLIERS: u32 = 10_000;
/// Nations: one per character a C_STATE may start with in the benchmark's definition
/// (`0-9`, `A-Z`, `a-z`), keyed by its character code.
pub const NATIONS: u32 = 62;
pub const REGIONS: u32 = 5;

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Supplier {
    pub su_acctbal: i64,
    pub su_suppkey: u32,
    pub su_nationkey: u32,
    pub su_name: [u8; 25],
    pub su_address: [u8; 40],
    pub su_phone: [u8; 15],
    pub su_comment: [u8; 101],
    pub _pad: [u8; 3],
}

/// NATION's and REGION's rows and declarations are TPC-H's (CH-benCHmark takes them
/// from it, with 62 nations).
pub use crate::tpch::schema::{Nation, Region};

fn id_key(id: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(id);
    k
}

pub fn supplier_key(su: u32) -> Key {
    id_key(su)
}

pub fn nation_key(n: u32) -> Key {
    id_key(n)
}

pub fn region_key(r: u32) -> Key {
    id_key(r)
}

const ID: SqlType = SqlType::Int {
    bytes: 4,
    signed: false,
};

/// TPC-C's nine tables and the three added ones. The analytical queries scan
/// CUSTOMER, STOCK and ITEM, which TPC-C keys in hash indexes (point lookups only:
/// a scan of one is refused); here their primary indexes are B+trees, so both halves
/// of the mix run on the same schema (`run chbench --analytic-streams 0` is TPC-C on
/// it, the baseline the hybrid run is compared with).
pub fn build(warehouses: u32, items: u32) -> Schema {
    let mut s = tpcc::build(warehouses, items);
    for t in [tpcc::CUSTOMER, tpcc::STOCK, tpcc::ITEM] {
        s.tables[t.0 as usize].primary = IndexKind::BTree;
    }
    let supplier = TableDef::new(
        "supplier",
        size_of::<Supplier>(),
        IndexKind::BTree,
        u64::from(SUPPLIERS),
    )
    .columns(&[
        ("su_suppkey", ID, offset_of!(Supplier, su_suppkey)),
        ("su_name", SqlType::Char(25), offset_of!(Supplier, su_name)),
        (
            "su_address",
            SqlType::VarChar(40),
            offset_of!(Supplier, su_address),
        ),
        ("su_nationkey", ID, offset_of!(Supplier, su_nationkey)),
        (
            "su_phone",
            SqlType::Char(15),
            offset_of!(Supplier, su_phone),
        ),
        (
            "su_acctbal",
            SqlType::Decimal {
                bytes: 8,
                precision: 12,
                scale: 2,
            },
            offset_of!(Supplier, su_acctbal),
        ),
        (
            "su_comment",
            SqlType::VarChar(101),
            offset_of!(Supplier, su_comment),
        ),
    ])
    .primary_key(&[Part::col("su_suppkey", KeyEnc::U32)]);
    let nation = tpch::nation_table(u64::from(NATIONS));
    let region = tpch::region_table();
    // Not partitioned: one copy every partition reads (as TPC-C's ITEM).
    let ids = [supplier, nation, region].map(|t| s.add(t));
    assert_eq!(
        ids,
        [SUPPLIER, NATION, REGION],
        "CH-benCHmark's table ids must follow TPC-C's"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_tpccs_and_three_more() {
        assert_eq!(
            [
                size_of::<Supplier>(),
                size_of::<Nation>(),
                size_of::<Region>()
            ],
            [200, 188, 184]
        );
        let s = build(2, 1000);
        assert_eq!(s.tables.len(), 12);
        assert_eq!(s.tables[tpcc::STOCK.0 as usize].primary, IndexKind::BTree);
        assert_eq!(
            s.tables[tpcc::WAREHOUSE.0 as usize].primary,
            IndexKind::Hash,
            "only the scanned tables change"
        );
        assert_eq!(s.tables[SUPPLIER.0 as usize].name, "supplier");
        assert!(supplier_key(1) < supplier_key(256));
    }
}
