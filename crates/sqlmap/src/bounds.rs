//! A scan bound over byte keys as a condition over an index's column values.
//!
//! An index's keys all have the same length N (fixed-width parts). A bound B of length
//! L is a full key (L = N), a prefix cut at a part boundary, a prefix cut inside a part
//! (e.g. `Key::prefix_end()` of a prefix), or bytes that no key encodes (a string part
//! `"AB\0\0\x01"`: zero padding followed by a non-zero byte). For a key K:
//!
//! * L < N: K > B and K >= B both mean K[..L] >= B (a key that starts with B is
//!   longer, so greater); K < B and K <= B both mean K[..L] < B. Inclusion does not
//!   matter.
//! * L = N and every part canonical: the four comparisons over the whole tuple.
//! * L > N: K >= B means K > B[..N]; K <= B means K <= B[..N].
//!
//! K[..L] >= B is a comparison of the first k part values against B's, where the last
//! part j may be partial or non-canonical: it is rounded up to the smallest canonical
//! value c with c[..len] >= B_j (always exists: B_j padded with zeros, or for a string
//! part whose padding is followed by non-zero bytes, the string up to its first zero
//! followed by byte 1), after which the parts of B beyond j do not matter (no key's
//! part j equals B_j over its length unless that is the rounded value itself).
//! The encodings are order preserving, so comparing values compares keys.

use api::typed::{Column, KeyEnc, KeyPart, Value};
use std::ops::Bound;

/// A comparison operator over row values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Op {
    pub fn sql(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
        }
    }
}

/// What one bound of a scan requires of the index's column values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cond {
    /// Every row.
    All,
    /// No row.
    Nothing,
    /// `(c1, .., ck) op (v1, .., vk)` over the index's first k columns.
    Cmp { op: Op, vals: Vec<Value> },
}

impl Cond {
    /// What the condition's SQL text depends on: its kind and how many columns it compares.
    pub fn shape(&self) -> (u8, usize) {
        match self {
            Cond::All => (0, 0),
            Cond::Nothing => (1, 0),
            Cond::Cmp { op, vals } => (2 + *op as u8, vals.len()),
        }
    }

    /// Whether a row whose index columns hold `key_vals` meets the condition (as the
    /// SQL the engines run evaluates it).
    pub fn holds(&self, key_vals: &[Value]) -> bool {
        match self {
            Cond::All => true,
            Cond::Nothing => false,
            Cond::Cmp { op, vals } => {
                let mut ord = std::cmp::Ordering::Equal;
                for (a, b) in key_vals.iter().zip(vals) {
                    ord = crate::cmp_values(a, b);
                    if ord.is_ne() {
                        break;
                    }
                }
                match op {
                    Op::Ge => ord.is_ge(),
                    Op::Gt => ord.is_gt(),
                    Op::Le => ord.is_le(),
                    Op::Lt => ord.is_lt(),
                }
            }
        }
    }
}

/// The value of a part from `chunk` (its bytes, perhaps fewer than its width), rounded
/// up to the smallest canonical value whose encoding's first `chunk.len()` bytes are
/// at least `chunk`; `true` when no rounding was needed (a whole canonical part).
fn part_value(p: &KeyPart, columns: &[Column], chunk: &[u8]) -> (Value, bool) {
    let w = p.enc.width();
    let mut padded = chunk.to_vec();
    padded.resize(w, 0);
    let whole = chunk.len() == w;
    let string = p
        .column
        .map(|c| {
            matches!(
                columns[c].ty,
                api::typed::SqlType::Char(_) | api::typed::SqlType::VarChar(_)
            )
        })
        .unwrap_or(false);
    match p.enc {
        KeyEnc::Fixed(_) if string => {
            let z = padded.iter().position(|&b| b == 0).unwrap_or(w);
            if padded[z..].iter().all(|&b| b == 0) {
                (Value::Text(padded[..z].to_vec()), whole)
            } else {
                // Zero padding followed by a non-zero byte: no string encodes to it; the
                // next string that does is the one up to the zero followed by byte 1.
                let mut s = padded[..z].to_vec();
                s.push(1);
                (Value::Text(s), false)
            }
        }
        KeyEnc::Fixed(_) => (Value::Bytes(padded), whole),
        _ => {
            let (v, _) = api::typed::key_values(std::slice::from_ref(p), columns, &padded);
            (v.into_iter().next().expect("a whole part"), whole)
        }
    }
}

/// The condition bound `b` (the lower one when `is_lo`) of a scan over keys made of
/// `parts` puts on the parts' values.
pub fn translate(parts: &[KeyPart], columns: &[Column], b: Bound<&[u8]>, is_lo: bool) -> Cond {
    let (bytes, incl) = match b {
        Bound::Unbounded => return Cond::All,
        Bound::Included(x) => (x, true),
        Bound::Excluded(x) => (x, false),
    };
    let full: usize = parts.iter().map(|p| p.enc.width()).sum();
    // The "prefix" comparisons: K[..L] >= B for a lower bound, K[..L] < B for an upper.
    let prefix = |vals: Vec<Value>| {
        if vals.is_empty() {
            // Every key starts with the empty string.
            return if is_lo { Cond::All } else { Cond::Nothing };
        }
        let op = if is_lo { Op::Ge } else { Op::Lt };
        Cond::Cmp { op, vals }
    };
    let mut vals = Vec::with_capacity(parts.len());
    let mut at = 0;
    for p in parts {
        if at == bytes.len() {
            break;
        }
        let end = (at + p.enc.width()).min(bytes.len());
        let (v, exact) = part_value(p, columns, &bytes[at..end]);
        vals.push(v);
        at = end;
        if !exact {
            return prefix(vals);
        }
    }
    match bytes.len().cmp(&full) {
        std::cmp::Ordering::Less => prefix(vals),
        std::cmp::Ordering::Equal => {
            let op = match (is_lo, incl) {
                (true, true) => Op::Ge,
                (true, false) => Op::Gt,
                (false, true) => Op::Le,
                (false, false) => Op::Lt,
            };
            Cond::Cmp { op, vals }
        }
        // Longer than any key: compared on the first N bytes, a key equal to them is
        // the smaller.
        std::cmp::Ordering::Greater => Cond::Cmp {
            op: if is_lo { Op::Gt } else { Op::Le },
            vals,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::typed::{key_values, push_key_part, SqlType};
    use api::Key;
    use rand::{Rng, SeedableRng};

    fn columns() -> Vec<Column> {
        vec![
            Column {
                name: "a".into(),
                ty: SqlType::Int {
                    bytes: 1,
                    signed: false,
                },
                offset: 0,
            },
            Column {
                name: "s".into(),
                ty: SqlType::VarChar(3),
                offset: 1,
            },
            Column {
                name: "i".into(),
                ty: SqlType::Int {
                    bytes: 4,
                    signed: true,
                },
                offset: 4,
            },
            Column {
                name: "b".into(),
                ty: SqlType::Binary(2),
                offset: 8,
            },
        ]
    }

    fn parts() -> Vec<KeyPart> {
        vec![
            KeyPart {
                name: "a".into(),
                column: Some(0),
                enc: KeyEnc::U8,
            },
            KeyPart {
                name: "s".into(),
                column: Some(1),
                enc: KeyEnc::Fixed(3),
            },
            KeyPart {
                name: "i".into(),
                column: Some(2),
                enc: KeyEnc::I32,
            },
            KeyPart {
                name: "b".into(),
                column: Some(3),
                enc: KeyEnc::Fixed(2),
            },
        ]
    }

    /// Every key over small domains of each part (strings without NUL bytes).
    fn all_keys() -> Vec<Key> {
        let (c, p) = (columns(), parts());
        let mut out = Vec::new();
        for a in [0i64, 1, 2, 255] {
            for s in ["", "a", "ab", "abc", "b", "\u{1}", "\u{7f}zz"] {
                for i in [i32::MIN as i64, -1, 0, 1, 256] {
                    for b in [[0u8, 0], [0, 1], [1, 0], [255, 255]] {
                        let mut k = Key::new();
                        let vals = [
                            Value::Int(a),
                            Value::Text(s.as_bytes().to_vec()),
                            Value::Int(i),
                            Value::Bytes(b.to_vec()),
                        ];
                        for (p, v) in p.iter().zip(&vals) {
                            push_key_part(p, v, &mut k).unwrap();
                        }
                        let (back, rest) = key_values(&p, &c, &k);
                        assert!(rest.is_empty());
                        assert_eq!(back, vals);
                        out.push(k);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn bounds_agree_with_byte_comparison() {
        let (c, p) = (columns(), parts());
        let keys = all_keys();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(18);
        let mut bounds: Vec<Vec<u8>> = vec![vec![], vec![0xff; 12], vec![0; 12]];
        for _ in 0..600 {
            let k = &keys[rng.gen_range(0..keys.len())];
            let len = rng.gen_range(0..=k.len());
            let prefix = Key::from_bytes(&k[..len]);
            bounds.push(prefix.to_vec());
            if let Some(e) = prefix.prefix_end() {
                bounds.push(e.to_vec());
            }
            // Random bytes (from a small alphabet, so they meet the keys' bytes).
            let n = rng.gen_range(0..=12);
            let alphabet = [0u8, 1, 2, b'a', b'b', b'c', 0x7f, 0x80, 0xff];
            bounds.push(
                (0..n)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect(),
            );
        }
        let mut checked = 0;
        for b in &bounds {
            for incl in [true, false] {
                for is_lo in [true, false] {
                    let bound = if incl {
                        Bound::Included(&b[..])
                    } else {
                        Bound::Excluded(&b[..])
                    };
                    let cond = translate(&p, &c, bound, is_lo);
                    for k in &keys {
                        let k = k.as_bytes();
                        let want = match (is_lo, incl) {
                            (true, true) => k >= &b[..],
                            (true, false) => k > &b[..],
                            (false, true) => k <= &b[..],
                            (false, false) => k < &b[..],
                        };
                        let (vals, _) = key_values(&p, &c, k);
                        assert_eq!(
                            cond.holds(&vals),
                            want,
                            "bound {b:?} (lo {is_lo}, included {incl}) gives {cond:?}; key {k:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1_000_000, "{checked} comparisons");
    }

    #[test]
    fn unbounded_and_empty_bounds() {
        let (c, p) = (columns(), parts());
        assert_eq!(translate(&p, &c, Bound::Unbounded, true), Cond::All);
        assert_eq!(translate(&p, &c, Bound::Unbounded, false), Cond::All);
        assert_eq!(translate(&p, &c, Bound::Included(&[]), true), Cond::All);
        assert_eq!(
            translate(&p, &c, Bound::Excluded(&[]), false),
            Cond::Nothing
        );
        // A string part's prefix end rounds up to the next string.
        let mut k = Key::new();
        k.push_u8(1).push_str_fixed(b"ab", 3);
        let e = k.prefix_end().unwrap();
        assert_eq!(
            translate(&p, &c, Bound::Excluded(&e), false),
            Cond::Cmp {
                op: Op::Lt,
                vals: vec![Value::Int(1), Value::Text(b"ab\x01".to_vec())]
            }
        );
    }
}
