//! The SQL of adds (`api::Worker::add_i64`): which columns take them, and the statements;
//! and SQLite's table form for a key of one integer column (the rowid).

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

/// A key of one integer column is SQLite's rowid (no `WITHOUT ROWID`); any other key
/// keeps the table clustered in it `WITHOUT ROWID`.
#[test]
fn sqlite_tables_keyed_by_one_integer_have_rowids() {
    let m = table();
    assert!(m.rowid_key());
    assert_eq!(
        m.ddl(Dialect::Sqlite)[0],
        r#"CREATE TABLE "acct" ("id" INTEGER NOT NULL, "bal" INTEGER NOT NULL, "n" INTEGER NOT NULL, "u" INTEGER NOT NULL, "small" INTEGER NOT NULL, PRIMARY KEY ("id"))"#
    );
    let two = TableDef::new("pair", 16, IndexKind::BTree, 10)
        .columns(&[
            (
                "a",
                SqlType::Int {
                    bytes: 8,
                    signed: true,
                },
                0,
            ),
            (
                "b",
                SqlType::Int {
                    bytes: 8,
                    signed: true,
                },
                8,
            ),
        ])
        .primary_key(&[Part::col("a", KeyEnc::I64), Part::col("b", KeyEnc::I64)]);
    let two = TableMap::new(&two).unwrap();
    assert!(!two.rowid_key());
    assert!(two.ddl(Dialect::Sqlite)[0].ends_with(" WITHOUT ROWID"));
    let text = TableDef::new("named", 8, IndexKind::BTree, 10)
        .columns(&[("s", SqlType::Char(8), 0)])
        .primary_key(&[Part::col("s", KeyEnc::Fixed(8))]);
    assert!(!TableMap::new(&text).unwrap().rowid_key());
}

/// PostgreSQL's bulk load creates the table without keys and builds them after: the
/// same columns as `ddl`'s table, its primary key first, then the secondary indexes.
#[test]
fn pg_bulk_ddl_defers_the_keys() {
    let m = table();
    let (create, keys) = m.pg_bulk_ddl();
    let full = m.ddl(Dialect::Postgres);
    assert!(!create.contains("PRIMARY KEY"), "{create}");
    assert_eq!(
        full[0],
        format!(
            "{}, PRIMARY KEY (\"id\"))",
            create.strip_suffix(')').unwrap()
        )
    );
    assert_eq!(keys[0], r#"ALTER TABLE "acct" ADD PRIMARY KEY ("id")"#);
    assert_eq!(keys[1..], full[1..]);
}
