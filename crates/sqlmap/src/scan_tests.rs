//! The SQL of scans: the statements written for several bound shapes, and a property
//! test running both forms (`ScanForm::RowValue`, `ScanForm::Prefix`) in an in-memory
//! SQLite against a byte comparison of the index keys.

use super::*;
use api::typed::Part;
use api::{Dir, TableId};
use proptest::prelude::*;

/// An Order-Line-like table: primary key (w, d, o, n), and a non-unique index on a
/// string column (its keys: s ++ primary key).
fn table() -> TableMap {
    let def = TableDef::new("ol", 18, IndexKind::BTree, 100)
        .columns(&[
            (
                "w",
                SqlType::Int {
                    bytes: 2,
                    signed: false,
                },
                0,
            ),
            (
                "d",
                SqlType::Int {
                    bytes: 1,
                    signed: false,
                },
                2,
            ),
            (
                "o",
                SqlType::Int {
                    bytes: 4,
                    signed: false,
                },
                4,
            ),
            (
                "n",
                SqlType::Int {
                    bytes: 1,
                    signed: false,
                },
                8,
            ),
            (
                "amount",
                SqlType::Int {
                    bytes: 4,
                    signed: true,
                },
                10,
            ),
            ("s", SqlType::VarChar(4), 14),
        ])
        .primary_key(&[
            Part::col("w", KeyEnc::U16),
            Part::col("d", KeyEnc::U8),
            Part::col("o", KeyEnc::U32),
            Part::col("n", KeyEnc::U8),
        ])
        .with_secondary("by_s", false, |r, k| {
            let s = &r[14..18];
            let len = s.iter().position(|&b| b == 0).unwrap_or(4);
            k.push_str_fixed(&s[..len], 4);
        })
        .secondary_key("by_s", &[Part::col("s", KeyEnc::Fixed(4))]);
    TableMap::new(&def).unwrap()
}

fn key(w: u16, d: u8, o: Option<u32>, n: Option<u8>) -> Key {
    let mut k = Key::new();
    k.push_u16(w).push_u8(d);
    if let Some(o) = o {
        k.push_u32(o);
    }
    if let Some(n) = n {
        k.push_u8(n);
    }
    k
}

fn sql(
    m: &TableMap,
    d: Dialect,
    index: u16,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    dir: Dir,
    limit: usize,
) -> Option<String> {
    let plan = m
        .plan_scan(d, index, lo, hi, dir == Dir::Forward, limit)
        .unwrap()?;
    Some(m.scan_sql(d, index, &plan, &[0, 2], dir))
}

const ORDER: &str = r#" ORDER BY "w", "d", "o", "n""#;

#[test]
fn order_line_scan_is_equalities_and_one_range() {
    let m = table();
    let (lo, hi) = (key(1, 2, Some(3000), None), key(1, 2, Some(3005), None));
    let s = sql(
        &m,
        Dialect::Postgres,
        0,
        Bound::Included(&lo),
        Bound::Excluded(&hi),
        Dir::Forward,
        usize::MAX,
    )
    .unwrap();
    assert_eq!(
        s,
        format!(
            r#"SELECT "w", "o" FROM "ol" WHERE "w" = $1::int4 AND "d" = $2::int2 AND "o" >= $3::int8 AND "o" < $4::int8{ORDER}"#
        )
    );
    let plan = m
        .plan_scan(
            Dialect::Postgres,
            0,
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            true,
            usize::MAX,
        )
        .unwrap()
        .unwrap();
    let params: Vec<(usize, Value)> = plan
        .params()
        .into_iter()
        .map(|(i, v)| (i, v.clone()))
        .collect();
    assert_eq!(
        params,
        [
            (0, Value::Int(1)),
            (1, Value::Int(2)),
            (2, Value::Int(3000)),
            (2, Value::Int(3005))
        ]
    );
    // SQLite keeps the row values its planner bounds both ends of the range by.
    let s = sql(
        &m,
        Dialect::Sqlite,
        0,
        Bound::Included(&lo),
        Bound::Excluded(&hi),
        Dir::Forward,
        usize::MAX,
    )
    .unwrap();
    assert_eq!(
        s,
        format!(
            r#"SELECT "w", "o" FROM "ol" WHERE ("w", "d", "o") >= (?1, ?2, ?3) AND ("w", "d", "o") < (?4, ?5, ?6){ORDER}"#
        )
    );
}

#[test]
fn bound_shapes() {
    let m = table();
    let pg = |lo: Bound<&[u8]>, hi: Bound<&[u8]>, dir: Dir, limit: usize| {
        sql(&m, Dialect::Postgres, 0, lo, hi, dir, limit)
    };
    // A prefix scan, [prefix, prefix_end): the prefix_end's last part is one higher.
    let p = key(1, 2, None, None);
    let e = p.prefix_end().unwrap();
    assert_eq!(
        pg(
            Bound::Included(&p),
            Bound::Excluded(&e),
            Dir::Forward,
            usize::MAX
        )
        .unwrap(),
        format!(
            r#"SELECT "w", "o" FROM "ol" WHERE "w" = $1::int4 AND "d" >= $2::int2 AND "d" < $3::int2{ORDER}"#
        )
    );
    // Full keys differing in their first part: no equality; a plain range on the first
    // column, row values for the rest.
    let (a, b) = (key(1, 2, Some(3), Some(4)), key(5, 0, Some(0), Some(0)));
    assert_eq!(
        pg(
            Bound::Excluded(&a),
            Bound::Included(&b),
            Dir::Forward,
            usize::MAX
        )
        .unwrap(),
        format!(
            r#"SELECT "w", "o" FROM "ol" WHERE "w" >= $1::int4 AND ("w", "d", "o", "n") > ($1::int4, $2::int2, $3::int8, $4::int2) AND "w" <= $5::int4 AND ("w", "d", "o", "n") <= ($5::int4, $6::int2, $7::int8, $8::int2){ORDER}"#
        )
    );
    // One bound only, backward with a limit.
    assert_eq!(
        pg(Bound::Unbounded, Bound::Excluded(&a), Dir::Backward, 10).unwrap(),
        r#"SELECT "w", "o" FROM "ol" WHERE "w" <= $1::int4 AND ("w", "d", "o", "n") < ($1::int4, $2::int2, $3::int8, $4::int2) ORDER BY "w" DESC, "d" DESC, "o" DESC, "n" DESC LIMIT $5::int8"#
    );
    // The same full key inclusive at both ends: equalities only.
    assert_eq!(
        pg(Bound::Included(&a), Bound::Included(&a), Dir::Forward, 1).unwrap(),
        format!(
            r#"SELECT "w", "o" FROM "ol" WHERE "w" = $1::int4 AND "d" = $2::int2 AND "o" = $3::int8 AND "n" = $4::int2{ORDER} LIMIT $5::int8"#
        )
    );
    // A literal limit (PostgreSQL plans such a statement once): no limit parameter.
    let plan = m
        .plan_scan(
            Dialect::Postgres,
            0,
            Bound::Included(&a),
            Bound::Included(&a),
            true,
            1,
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        m.scan_sql_limit(Dialect::Postgres, 0, &plan, &[0, 2], Dir::Forward, Some(1)),
        format!(
            r#"SELECT "w", "o" FROM "ol" WHERE "w" = $1::int4 AND "d" = $2::int2 AND "o" = $3::int8 AND "n" = $4::int2{ORDER} LIMIT 1"#
        )
    );
    // ... and exclusive at either: nothing can match, nothing is asked.
    assert_eq!(
        pg(Bound::Excluded(&a), Bound::Included(&a), Dir::Forward, 1),
        None
    );
    assert_eq!(
        pg(Bound::Included(&a), Bound::Excluded(&a), Dir::Forward, 1),
        None
    );
    // Bounds sharing two parts, each with two more: a range on the third column and
    // row values over the third and fourth.
    let (a, b) = (key(1, 2, Some(3), Some(4)), key(1, 2, Some(9), Some(0)));
    assert_eq!(
        pg(
            Bound::Included(&a),
            Bound::Excluded(&b),
            Dir::Forward,
            usize::MAX
        )
        .unwrap(),
        format!(
            r#"SELECT "w", "o" FROM "ol" WHERE "w" = $1::int4 AND "d" = $2::int2 AND "o" >= $3::int8 AND ("o", "n") >= ($3::int8, $4::int2) AND "o" <= $5::int8 AND ("o", "n") < ($5::int8, $6::int2){ORDER}"#
        )
    );
    // Customer-by-last-name-like: a prefix of a secondary index's keys (s, then the
    // primary key's w) and its end.
    let mut p = Key::new();
    p.push_str_fixed(b"ab", 4).push_u16(7);
    let e = p.prefix_end().unwrap();
    assert_eq!(
        sql(
            &m,
            Dialect::Postgres,
            1,
            Bound::Included(&p),
            Bound::Excluded(&e),
            Dir::Forward,
            usize::MAX
        )
        .unwrap(),
        r#"SELECT "w", "o" FROM "ol" WHERE "s" = $1::text AND "w" >= $2::int4 AND "w" < $3::int4 ORDER BY "s", "w", "d", "o", "n""#
    );
}

/// The SQLite statements of `m` in memory, holding `rows`.
fn sqlite_with(m: &TableMap, rows: &[(Key, Vec<u8>)]) -> rusqlite::Connection {
    let c = rusqlite::Connection::open_in_memory().unwrap();
    for s in m.ddl(Dialect::Sqlite) {
        c.execute(&s, []).unwrap();
    }
    let mut ins = c.prepare(&m.insert_sql(Dialect::Sqlite)).unwrap();
    for (k, r) in rows {
        let vals = m.row_params(k, r).unwrap();
        ins.execute(rusqlite::params_from_iter(vals.iter().map(sql_value)))
            .unwrap();
    }
    drop(ins);
    c
}

fn sql_value(v: &Value) -> rusqlite::types::Value {
    match v {
        Value::Int(i) => rusqlite::types::Value::Integer(*i),
        Value::Text(s) => rusqlite::types::Value::Text(String::from_utf8(s.clone()).unwrap()),
        Value::Bytes(b) => rusqlite::types::Value::Blob(b.clone()),
    }
}

/// The index keys a scan written in `form` returns, in order.
#[allow(clippy::too_many_arguments)]
fn run_scan(
    c: &rusqlite::Connection,
    m: &TableMap,
    form: ScanForm,
    index: u16,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    dir: Dir,
    limit: usize,
) -> Vec<Vec<u8>> {
    let Some(plan) = m
        .plan_scan_as(form, index, lo, hi, dir == Dir::Forward, limit)
        .unwrap()
    else {
        return Vec::new();
    };
    let sql = m.scan_sql(Dialect::Sqlite, index, &plan, m.all_cols(), dir);
    let mut params: Vec<rusqlite::types::Value> = plan
        .params()
        .into_iter()
        .map(|(_, v)| sql_value(v))
        .collect();
    if plan.limited {
        params.push(rusqlite::types::Value::Integer(limit as i64));
    }
    let mut st = c.prepare(&sql).unwrap();
    let mut rows = st.query(rusqlite::params_from_iter(params)).unwrap();
    let (mut out, mut row, mut pk, mut k) = (Vec::new(), Vec::new(), Key::new(), Key::new());
    while let Some(r) = rows.next().unwrap() {
        let vals: Vec<Value> = (0..m.cols.len())
            .map(|i| match r.get_ref(i).unwrap() {
                rusqlite::types::ValueRef::Integer(x) => Value::Int(x),
                rusqlite::types::ValueRef::Text(s) => Value::Text(s.to_vec()),
                rusqlite::types::ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
                v => panic!("{v:?}"),
            })
            .collect();
        m.decode(&vals, &mut row, &mut pk).unwrap();
        m.index_key(index, &row, &pk, &mut k);
        out.push(k.to_vec());
    }
    out
}

const STRINGS: [&str; 5] = ["", "a", "ab", "abcd", "b"];

fn row_of(w: u16, d: u8, o: u32, n: u8, s: &str) -> (Key, Vec<u8>) {
    let mut r = vec![0u8; 18];
    r[0..2].copy_from_slice(&w.to_le_bytes());
    r[2] = d;
    r[4..8].copy_from_slice(&o.to_le_bytes());
    r[8] = n;
    r[10..14].copy_from_slice(&(o as i32 * 3 - 7).to_le_bytes());
    r[14..14 + s.len()].copy_from_slice(s.as_bytes());
    (key(w, d, Some(o), Some(n)), r)
}

/// A bound made from a key of the domain: cut to `len` bytes, perhaps its prefix end.
fn bound_strategy() -> impl Strategy<Value = (u8, Vec<u8>)> {
    (
        0u8..5,
        0u16..3,
        0u8..3,
        0u32..4,
        0u8..3,
        0usize..5,
        0usize..=12,
        any::<bool>(),
    )
        .prop_map(|(kind, w, d, o, n, s, len, end)| {
            let mut k = Key::new();
            // Keys of the primary index or of the secondary (s, w) ++ primary key.
            if kind % 2 == 1 {
                k.push_str_fixed(STRINGS[s].as_bytes(), 4);
            }
            k.push_u16(w).push_u8(d).push_u32(o).push_u8(n);
            let cut = Key::from_bytes(&k[..len.min(k.len())]);
            let b = if end {
                cut.prefix_end().unwrap_or(cut)
            } else {
                cut
            };
            (kind, b.to_vec())
        })
}

fn to_bound(kind: u8, b: &[u8]) -> Bound<&[u8]> {
    match kind / 2 {
        0 => Bound::Included(b),
        1 => Bound::Excluded(b),
        _ => Bound::Unbounded,
    }
}

fn within(k: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    (match lo {
        Bound::Included(b) => k >= b,
        Bound::Excluded(b) => k > b,
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(b) => k <= b,
        Bound::Excluded(b) => k < b,
        Bound::Unbounded => true,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn prefix_form_selects_what_row_values_select(
        rows in prop::collection::btree_map((0u16..3, 0u8..3, 0u32..4, 0u8..3), 0usize..5, 0..60),
        lo in bound_strategy(),
        hi in bound_strategy(),
        index in 0u16..2,
        backward in any::<bool>(),
        limit in prop_oneof![Just(usize::MAX), 0usize..8],
    ) {
        let m = table();
        let rows: Vec<_> = rows.into_iter().map(|((w, d, o, n), s)| row_of(w, d, o, n, STRINGS[s])).collect();
        let c = sqlite_with(&m, &rows);
        let (lo, hi) = (to_bound(lo.0, &lo.1), to_bound(hi.0, &hi.1));
        let dir = if backward { Dir::Backward } else { Dir::Forward };
        // The truth: the index's keys within the bounds, compared as bytes.
        let mut keys: Vec<Vec<u8>> = rows.iter().map(|(k, r)| {
            let mut out = Key::new();
            m.index_key(index, r, k, &mut out);
            out.to_vec()
        }).filter(|k| within(k, lo, hi)).collect();
        keys.sort();
        if backward {
            keys.reverse();
        }
        keys.truncate(limit);
        let row_value = run_scan(&c, &m, ScanForm::RowValue, index, lo, hi, dir, limit);
        let prefix = run_scan(&c, &m, ScanForm::Prefix, index, lo, hi, dir, limit);
        prop_assert_eq!(&row_value, &keys);
        prop_assert_eq!(&prefix, &keys);
    }
}

/// Partial reads select the columns holding the bytes, and a scan of some bytes the
/// key's columns too.
#[test]
fn partial_columns() {
    let m = table();
    let t = TableId(0);
    // "amount" is bytes 10..14; byte 3 is a gap between d and o.
    assert_eq!(m.part_cols(t, &(10..14)).unwrap(), [4]);
    assert_eq!(m.part_cols(t, &(3..5)).unwrap(), [2]);
    assert_eq!(m.part_cols(t, &(3..4)).unwrap(), Vec::<usize>::new());
    assert!(m.part_cols(t, &(15..19)).is_err());
    assert_eq!(m.scan_cols(t, 0, Some(&(10..14))).unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(
        m.scan_cols(t, 1, Some(&(10..11))).unwrap(),
        [0, 1, 2, 3, 4, 5]
    );
    assert_eq!(m.set_cols_of(&[0, 4, 5]), [4, 5]);
    assert_eq!(
        m.get_cols_sql(Dialect::Postgres, &[4], true),
        r#"SELECT "amount" FROM "ol" WHERE "w" = $1::int4 AND "d" = $2::int2 AND "o" = $3::int8 AND "n" = $4::int2 FOR UPDATE"#
    );
    assert_eq!(
        m.update_some_sql(Dialect::Postgres, &[4]).unwrap(),
        r#"UPDATE "ol" SET "amount" = $1::int4 WHERE "w" = $2::int4 AND "d" = $3::int2 AND "o" = $4::int8 AND "n" = $5::int2"#
    );
    // A row decoded from some columns has the others' bytes zero.
    let (k, r) = row_of(1, 2, 3, 4, "ab");
    let vals = m.row_params(&k, &r).unwrap();
    let (mut row, mut pk) = (Vec::new(), Key::new());
    m.decode_cols(
        &[4, 0, 1, 2, 3],
        &[
            vals[4].clone(),
            vals[0].clone(),
            vals[1].clone(),
            vals[2].clone(),
            vals[3].clone(),
        ],
        &mut row,
        Some(&mut pk),
    )
    .unwrap();
    assert_eq!(pk.as_bytes(), k.as_bytes());
    assert_eq!(&row[..14], &r[..14]);
    assert_eq!(&row[14..], &[0; 4]);
    assert!(m
        .decode_cols(&[4], &[vals[4].clone()], &mut row, Some(&mut pk))
        .is_err());
}

/// Why SQLite keeps row values: its planner bounds both ends of the index range by them
/// (the search names both comparisons), so it reads no more than the range.
#[test]
fn sqlite_bounds_both_ends_by_row_values() {
    let m = table();
    let c = sqlite_with(&m, &[]);
    let (lo, hi) = (key(1, 2, Some(3000), None), key(1, 2, Some(3005), None));
    let plan = m
        .plan_scan(
            Dialect::Sqlite,
            0,
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            true,
            usize::MAX,
        )
        .unwrap()
        .unwrap();
    let sql = m.scan_sql(Dialect::Sqlite, 0, &plan, m.all_cols(), Dir::Forward);
    let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let params = plan.params().into_iter().map(|(_, v)| sql_value(v));
    let detail: Vec<String> = st
        .query_map(rusqlite::params_from_iter(params), |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let detail = detail.join("; ");
    assert!(
        detail.contains("SEARCH")
            && detail.contains("(w,d,o)>(?,?,?)")
            && detail.contains("(w,d,o)<(?,?,?)"),
        "{detail}"
    );
}
