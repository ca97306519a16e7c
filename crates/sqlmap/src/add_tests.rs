//! The SQL of adds (`api::Worker::add_i64`): which columns take them, and the statements.

use super::*;
use api::typed::Part;

/// An account-like table: key `id`, a decimal balance, a signed and an unsigned counter,
/// a 4-byte integer.
fn table() -> TableMap {
    let int = |bytes, signed| SqlType::Int { bytes, signed };
    let def = TableDef::new("acct", 36, IndexKind::BTree, 10)
        .columns(&[
            ("id", int(8, false), 0),
            (
                "bal",
                SqlType::Decimal {
                    bytes: 8,
                    precision: 12,
                    scale: 2,
                },
                8,
            ),
            ("n", int(8, true), 16),
            ("u", int(8, false), 24),
            ("small", int(4, true), 32),
        ])
        .primary_key(&[Part::col("id", KeyEnc::U64)]);
    TableMap::new(&def).unwrap()
}

#[test]
fn adds_take_signed_eight_byte_columns_outside_the_key() {
    let m = table();
    assert_eq!(m.add_col(8), Some(1));
    assert_eq!(m.add_col(16), Some(2));
    // Unsigned, 4 bytes, the key, a column's middle: read and written as any update.
    assert_eq!(m.add_col(24), None);
    assert_eq!(m.add_col(32), None);
    assert_eq!(m.add_col(0), None);
    assert_eq!(m.add_col(12), None);
}

#[test]
fn add_statements() {
    let m = table();
    assert_eq!(
        m.add_sql(Dialect::Postgres, 1, 1, true),
        r#"UPDATE "acct" SET "bal" = "bal" + ($1::int8 * 0.01) WHERE "id" = $2::int8 RETURNING ("bal" * 100)::int8"#
    );
    assert_eq!(
        m.add_sql(Dialect::Postgres, 2, 4, false),
        r#"UPDATE "acct" SET "n" = "n" + $4::int8 WHERE "id" = $5::int8"#
    );
    assert_eq!(
        m.add_sql(Dialect::Sqlite, 1, 1, true),
        r#"UPDATE "acct" SET "bal" = "bal" + ?1 WHERE "id" = ?2 RETURNING "bal""#
    );
}
