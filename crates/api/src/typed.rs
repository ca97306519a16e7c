//! Typed declarations of tables: SQL column types laid over the fixed-layout rows, and
//! key parts laid over the byte-encoded keys. The built-in engines never look at them
//! (rows and keys stay bytes on their hot path); adapters to real database systems
//! create real tables, primary keys and secondary indexes from them and convert rows
//! and keys to column values and back. [`crate::TableDef::check_row`] checks that a
//! declaration agrees with the rows and keys a kit really writes.

use crate::error::{Error, Result};
use crate::key::Key;

/// A column's SQL type and how its value is stored in the fixed-layout row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlType {
    /// An integer of `bytes` (1, 2, 4 or 8) bytes, little-endian in the row.
    Int { bytes: u8, signed: bool },
    /// A fixed-point decimal with `scale` digits after the point, `precision` in all:
    /// stored as a signed integer count of 10^-scale units (cents for scale 2).
    Decimal { bytes: u8, precision: u8, scale: u8 },
    /// A fixed-length string (SQL `CHAR(n)`), zero-padded in the row.
    Char(u16),
    /// A string of at most `n` bytes (SQL `VARCHAR(n)`), zero-padded in the row.
    VarChar(u16),
    /// A point in time: `u64` microseconds since the Unix epoch in the row, 0 for NULL.
    Timestamp,
    /// Opaque bytes (filler), `n` of them.
    Binary(u16),
}

impl SqlType {
    /// Bytes the column takes in the row.
    pub fn width(self) -> usize {
        match self {
            SqlType::Int { bytes, .. } | SqlType::Decimal { bytes, .. } => bytes as usize,
            SqlType::Char(n) | SqlType::VarChar(n) | SqlType::Binary(n) => n as usize,
            SqlType::Timestamp => 8,
        }
    }

    fn is_int(self) -> bool {
        matches!(
            self,
            SqlType::Int { .. } | SqlType::Decimal { .. } | SqlType::Timestamp
        )
    }

    fn is_string(self) -> bool {
        matches!(self, SqlType::Char(_) | SqlType::VarChar(_))
    }
}

/// One column of a table's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
    /// Where the column starts in the row.
    pub offset: usize,
}

/// How one part of a key is encoded (see [`crate::key::Key`]): unsigned integers big
/// endian, signed ones big endian with the sign bit flipped, strings and bytes as a
/// fixed-width zero-padded field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEnc {
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    Fixed(u16),
}

impl KeyEnc {
    /// Bytes the part takes in the key.
    pub fn width(self) -> usize {
        match self {
            KeyEnc::U8 => 1,
            KeyEnc::U16 => 2,
            KeyEnc::U32 | KeyEnc::I32 => 4,
            KeyEnc::U64 | KeyEnc::I64 => 8,
            KeyEnc::Fixed(n) => n as usize,
        }
    }
}

/// One part of an index key: a column of the row, or a value only the key holds (e.g.
/// a synthetic sequence number), which an adapter keeps in a column of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPart {
    /// The row column's name, or the key-only column's name.
    pub name: String,
    /// The row column (index into `TableDef::columns`); `None`: held by the key only.
    pub column: Option<usize>,
    pub enc: KeyEnc,
}

/// A key part as a kit declares it, before its column is looked up by name.
#[derive(Debug, Clone, Copy)]
pub struct Part {
    pub name: &'static str,
    pub enc: KeyEnc,
    /// `false`: the key holds a value the row does not.
    pub in_row: bool,
}

impl Part {
    /// A part that is the row's column `name`.
    pub const fn col(name: &'static str, enc: KeyEnc) -> Part {
        Part {
            name,
            enc,
            in_row: true,
        }
    }
    /// A part only the key holds.
    pub const fn key_only(name: &'static str, enc: KeyEnc) -> Part {
        Part {
            name,
            enc,
            in_row: false,
        }
    }
}

/// A column's value, as an adapter passes it to a database system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Integers, decimals (in 10^-scale units) and timestamps (microseconds, 0: NULL).
    /// Unsigned 8-byte columns are reinterpreted as `i64` (bijective; values above
    /// `i64::MAX` come out negative).
    Int(i64),
    /// A string column's bytes up to its first zero byte.
    Text(Vec<u8>),
    /// Opaque bytes, the whole width.
    Bytes(Vec<u8>),
}

impl Value {
    pub fn as_int(&self) -> Result<i64> {
        match self {
            Value::Int(v) => Ok(*v),
            v => Err(Error::fatal(format!(
                "expected an integer value, got {v:?}"
            ))),
        }
    }
}

/// Read column `c` of `row`.
pub fn column_value(c: &Column, row: &[u8]) -> Value {
    let b = &row[c.offset..c.offset + c.ty.width()];
    match c.ty {
        SqlType::Int { .. } | SqlType::Decimal { .. } | SqlType::Timestamp => {
            Value::Int(read_int(b, signed_of(c.ty)))
        }
        SqlType::Char(_) | SqlType::VarChar(_) => Value::Text(crate::row::get_str(b).to_vec()),
        SqlType::Binary(_) => Value::Bytes(b.to_vec()),
    }
}

/// Whether an integer-stored column is signed (decimals are; timestamps are not).
fn signed_of(t: SqlType) -> bool {
    match t {
        SqlType::Int { signed, .. } => signed,
        SqlType::Decimal { .. } => true,
        _ => false,
    }
}

fn read_int(b: &[u8], signed: bool) -> i64 {
    let mut buf = [0u8; 8];
    buf[..b.len()].copy_from_slice(b);
    if signed && b.len() < 8 && b[b.len() - 1] & 0x80 != 0 {
        buf[b.len()..].fill(0xff);
    }
    i64::from_le_bytes(buf)
}

/// Write `v` into column `c` of `row`. Values that do not fit are an error.
pub fn set_column(c: &Column, row: &mut [u8], v: &Value) -> Result<()> {
    let w = c.ty.width();
    let b = &mut row[c.offset..c.offset + w];
    match (c.ty, v) {
        (t, Value::Int(x)) if t.is_int() => {
            let signed = signed_of(t);
            if w < 8 {
                let (lo, hi) = if signed {
                    (-(1i64 << (w * 8 - 1)), (1i64 << (w * 8 - 1)) - 1)
                } else {
                    (0, (1i64 << (w * 8)) - 1)
                };
                if *x < lo || *x > hi {
                    return Err(Error::fatal(format!(
                        "column {}: {x} does not fit in {w} bytes",
                        c.name
                    )));
                }
            }
            b.copy_from_slice(&x.to_le_bytes()[..w]);
        }
        (t, Value::Text(s)) if t.is_string() => {
            if s.len() > w {
                return Err(Error::fatal(format!(
                    "column {}: a {}-byte string in a {w}-byte column",
                    c.name,
                    s.len()
                )));
            }
            crate::row::set_str(b, s);
        }
        (SqlType::Binary(_), Value::Bytes(s)) if s.len() == w => b.copy_from_slice(s),
        (t, v) => {
            return Err(Error::fatal(format!(
                "column {} ({t:?}): cannot hold {v:?}",
                c.name
            )))
        }
    }
    Ok(())
}

/// The values of a key's complete parts, in order, and the bytes left after them (a
/// prefix that ends inside a part: empty for keys and prefixes cut at a part boundary).
pub fn key_values<'k>(
    parts: &[KeyPart],
    columns: &[Column],
    key: &'k [u8],
) -> (Vec<Value>, &'k [u8]) {
    let mut out = Vec::with_capacity(parts.len());
    let mut at = 0;
    for p in parts {
        let w = p.enc.width();
        if at + w > key.len() {
            break;
        }
        let b = &key[at..at + w];
        at += w;
        let string_col = p.column.map(|c| columns[c].ty.is_string()).unwrap_or(false);
        out.push(match p.enc {
            KeyEnc::U8 | KeyEnc::U16 | KeyEnc::U32 | KeyEnc::U64 => {
                let mut buf = [0u8; 8];
                buf[8 - w..].copy_from_slice(b);
                Value::Int(u64::from_be_bytes(buf) as i64)
            }
            KeyEnc::I32 => Value::Int(
                (u32::from_be_bytes(b.try_into().expect("4 bytes")) ^ (1 << 31)) as i32 as i64,
            ),
            KeyEnc::I64 => {
                Value::Int((u64::from_be_bytes(b.try_into().expect("8 bytes")) ^ (1 << 63)) as i64)
            }
            KeyEnc::Fixed(_) if string_col => Value::Text(crate::row::get_str(b).to_vec()),
            KeyEnc::Fixed(_) => Value::Bytes(b.to_vec()),
        });
    }
    (out, &key[at..])
}

/// Append the encoding of `v` as part `p` to `out`.
pub fn push_key_part(p: &KeyPart, v: &Value, out: &mut Key) -> Result<()> {
    let bad = || {
        Error::fatal(format!(
            "key part {} ({:?}): cannot hold {v:?}",
            p.name, p.enc
        ))
    };
    match (p.enc, v) {
        (KeyEnc::Fixed(n), Value::Text(s)) | (KeyEnc::Fixed(n), Value::Bytes(s)) => {
            if s.len() > n as usize {
                return Err(bad());
            }
            out.push_str_fixed(s, n as usize);
        }
        (KeyEnc::I32, Value::Int(x)) => {
            out.push_i32(i32::try_from(*x).map_err(|_| bad())?);
        }
        (KeyEnc::I64, Value::Int(x)) => {
            out.push_i64(*x);
        }
        (KeyEnc::U64, Value::Int(x)) => {
            out.push_u64(*x as u64);
        }
        (e, Value::Int(x)) => {
            let w = e.width();
            if *x < 0 || (*x as u64) >> (w * 8) != 0 {
                return Err(bad());
            }
            out.push_bytes(&(*x as u64).to_be_bytes()[8 - w..]);
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// The key of `parts` for `row`, with `key_only` giving the values of parts the row
/// does not hold (in order).
pub fn key_of_row(
    parts: &[KeyPart],
    columns: &[Column],
    row: &[u8],
    key_only: &[Value],
    out: &mut Key,
) -> Result<()> {
    let mut extra = key_only.iter();
    for p in parts {
        let v = match p.column {
            Some(c) => column_value(&columns[c], row),
            None => extra
                .next()
                .cloned()
                .ok_or_else(|| Error::fatal(format!("no value for key part {}", p.name)))?,
        };
        push_key_part(p, &v, out)?;
    }
    Ok(())
}

/// Check a declaration's shape: columns inside the row and not overlapping, key parts
/// whose encodings fit their columns' types, key parts that fill `MAX_KEY_LEN` at most.
pub fn check_shape(
    table: &str,
    row_size: usize,
    columns: &[Column],
    keys: &[(&str, &[KeyPart])],
) -> std::result::Result<(), String> {
    let mut spans: Vec<(usize, usize, &str)> = columns
        .iter()
        .map(|c| (c.offset, c.offset + c.ty.width(), c.name.as_str()))
        .collect();
    spans.sort();
    for (i, &(lo, hi, name)) in spans.iter().enumerate() {
        if hi > row_size {
            return Err(format!(
                "{table}.{name}: bytes {lo}..{hi} outside the {row_size}-byte row"
            ));
        }
        if let Some(&(nlo, _, next)) = spans.get(i + 1) {
            if nlo < hi {
                return Err(format!("{table}.{name} overlaps {table}.{next}"));
            }
        }
        if columns.iter().filter(|c| c.name == name).count() > 1 {
            return Err(format!("{table}.{name} declared twice"));
        }
    }
    for (index, parts) in keys {
        let len: usize = parts.iter().map(|p| p.enc.width()).sum();
        if len > crate::key::MAX_KEY_LEN {
            return Err(format!("{table} index {index}: {len}-byte keys"));
        }
        for p in parts.iter() {
            let Some(c) = p.column else { continue };
            let ty = columns[c].ty;
            let ok = match p.enc {
                KeyEnc::Fixed(n) => {
                    matches!(ty, SqlType::Char(m) | SqlType::VarChar(m) | SqlType::Binary(m) if m <= n)
                }
                _ => ty.is_int(),
            };
            if !ok {
                return Err(format!(
                    "{table} index {index}: part {} ({:?}) cannot encode a {ty:?} column",
                    p.name, p.enc
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<Column> {
        vec![
            Column {
                name: "a".into(),
                ty: SqlType::Int {
                    bytes: 4,
                    signed: false,
                },
                offset: 0,
            },
            Column {
                name: "bal".into(),
                ty: SqlType::Decimal {
                    bytes: 8,
                    precision: 12,
                    scale: 2,
                },
                offset: 8,
            },
            Column {
                name: "name".into(),
                ty: SqlType::VarChar(6),
                offset: 16,
            },
            Column {
                name: "d".into(),
                ty: SqlType::Int {
                    bytes: 2,
                    signed: true,
                },
                offset: 22,
            },
        ]
    }

    #[test]
    fn rows_round_trip_through_values() {
        let c = cols();
        let mut row = [0u8; 24];
        row[..4].copy_from_slice(&7u32.to_le_bytes());
        row[8..16].copy_from_slice(&(-1234i64).to_le_bytes());
        row[16..19].copy_from_slice(b"abc");
        row[22..24].copy_from_slice(&(-5i16).to_le_bytes());
        let vals: Vec<Value> = c.iter().map(|c| column_value(c, &row)).collect();
        assert_eq!(
            vals,
            vec![
                Value::Int(7),
                Value::Int(-1234),
                Value::Text(b"abc".to_vec()),
                Value::Int(-5)
            ]
        );
        let mut back = [0xAAu8; 24];
        back.fill(0);
        for (c, v) in c.iter().zip(&vals) {
            set_column(c, &mut back, v).unwrap();
        }
        assert_eq!(back, row);
        assert!(set_column(&c[3], &mut back, &Value::Int(40_000)).is_err());
        assert!(set_column(&c[2], &mut back, &Value::Text(b"toolong".to_vec())).is_err());
        assert!(set_column(&c[0], &mut back, &Value::Int(-1)).is_err());
    }

    #[test]
    fn keys_decode_to_values_and_back() {
        let c = cols();
        let parts = vec![
            KeyPart {
                name: "a".into(),
                column: Some(0),
                enc: KeyEnc::U8,
            },
            KeyPart {
                name: "name".into(),
                column: Some(2),
                enc: KeyEnc::Fixed(8),
            },
            KeyPart {
                name: "seq".into(),
                column: None,
                enc: KeyEnc::I64,
            },
        ];
        let mut row = [0u8; 24];
        row[..4].copy_from_slice(&7u32.to_le_bytes());
        row[16..18].copy_from_slice(b"zz");
        let mut k = Key::new();
        key_of_row(&parts, &c, &row, &[Value::Int(-3)], &mut k).unwrap();
        let mut want = Key::new();
        want.push_u8(7).push_str_fixed(b"zz", 8).push_i64(-3);
        assert_eq!(k.as_bytes(), want.as_bytes());
        let (vals, rest) = key_values(&parts, &c, &k);
        assert!(rest.is_empty());
        assert_eq!(
            vals,
            vec![Value::Int(7), Value::Text(b"zz".to_vec()), Value::Int(-3)]
        );
        // A prefix cut inside the second part: one complete value, 3 bytes left.
        let (vals, rest) = key_values(&parts, &c, &k[..4]);
        assert_eq!(vals, vec![Value::Int(7)]);
        assert_eq!(rest.len(), 3);
        let mut again = Key::new();
        for (p, v) in parts.iter().zip(&key_values(&parts, &c, &k).0) {
            push_key_part(p, v, &mut again).unwrap();
        }
        assert_eq!(again.as_bytes(), k.as_bytes());
        assert!(push_key_part(&parts[0], &Value::Int(256), &mut Key::new()).is_err());
    }

    #[test]
    fn shape_errors_are_found() {
        let mut c = cols();
        assert!(check_shape("t", 24, &c, &[]).is_ok());
        assert!(check_shape("t", 23, &c, &[])
            .unwrap_err()
            .contains("outside"));
        c[1].offset = 2;
        assert!(check_shape("t", 24, &c, &[])
            .unwrap_err()
            .contains("overlaps"));
        let c = cols();
        let bad = [KeyPart {
            name: "name".into(),
            column: Some(2),
            enc: KeyEnc::U32,
        }];
        assert!(check_shape("t", 24, &c, &[("primary", &bad)])
            .unwrap_err()
            .contains("cannot encode"));
    }
}
