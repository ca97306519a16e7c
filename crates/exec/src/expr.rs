//! Typed values, rows and expressions over them.

use std::cmp::Ordering;

/// One column's value: integers (also decimals in 10^-scale units and dates as day
/// numbers) and byte strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Datum {
    Int(i64),
    Str(Vec<u8>),
}

impl From<&api::typed::Value> for Datum {
    /// A SQL system's value (its integers, decimals in cents, dates as day numbers).
    fn from(v: &api::typed::Value) -> Datum {
        match v {
            api::typed::Value::Int(i) => Datum::Int(*i),
            api::typed::Value::Text(b) | api::typed::Value::Bytes(b) => Datum::Str(b.clone()),
        }
    }
}

impl Datum {
    /// The integer; a string is a plan's error (its types are fixed when it is written).
    pub fn int(&self) -> i64 {
        match self {
            Datum::Int(v) => *v,
            Datum::Str(s) => panic!("plan error: {s:?} used as an integer"),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            Datum::Str(s) => s,
            Datum::Int(v) => panic!("plan error: {v} used as a string"),
        }
    }
}

pub type Row = Vec<Datum>;

/// An expression over a row's columns.
#[derive(Debug, Clone)]
pub enum Expr {
    Col(usize),
    Int(i64),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Mul(Box<Expr>, Box<Expr>),
    /// Integer division rounded half away from zero (decimal rescaling).
    DivRound(Box<Expr>, Box<Expr>),
    Cmp(Box<Expr>, Ordering, Box<Expr>),
    /// `a <= x <= b`.
    Between(Box<Expr>, Box<Expr>, Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    /// The string column contains `needle`.
    Contains(Box<Expr>, Vec<u8>),
    /// The string starts with `prefix`.
    StartsWith(Box<Expr>, Vec<u8>),
    /// `x IN (list)`.
    In(Box<Expr>, Vec<Datum>),
    /// `CASE WHEN c THEN a ELSE b END`.
    If(Box<Expr>, Box<Expr>, Box<Expr>),
}

// `a + b`, `a - b`, `a * b` build expressions (plans read like the SQL they implement).
impl std::ops::Add for Expr {
    type Output = Expr;
    fn add(self, b: Expr) -> Expr {
        Expr::Add(Box::new(self), Box::new(b))
    }
}

impl std::ops::Sub for Expr {
    type Output = Expr;
    fn sub(self, b: Expr) -> Expr {
        Expr::Sub(Box::new(self), Box::new(b))
    }
}

impl std::ops::Mul for Expr {
    type Output = Expr;
    fn mul(self, b: Expr) -> Expr {
        Expr::Mul(Box::new(self), Box::new(b))
    }
}

/// Round half away from zero: `a / b` for `b > 0`.
pub fn div_round(a: i64, b: i64) -> i64 {
    assert!(b > 0, "division by {b}");
    let (q, r) = (a / b, a % b);
    if 2 * r.abs() >= b {
        q + a.signum()
    } else {
        q
    }
}

impl Expr {
    pub fn col(i: usize) -> Expr {
        Expr::Col(i)
    }
    pub fn cmp(a: Expr, o: Ordering, b: Expr) -> Expr {
        Expr::Cmp(Box::new(a), o, Box::new(b))
    }

    pub fn eval(&self, r: &[Datum]) -> Datum {
        match self {
            Expr::Col(i) => r[*i].clone(),
            Expr::Int(v) => Datum::Int(*v),
            Expr::Add(a, b) => Datum::Int(a.int(r) + b.int(r)),
            Expr::Sub(a, b) => Datum::Int(a.int(r) - b.int(r)),
            Expr::Mul(a, b) => Datum::Int(a.int(r) * b.int(r)),
            Expr::DivRound(a, b) => Datum::Int(div_round(a.int(r), b.int(r))),
            Expr::If(c, a, b) => {
                if c.test(r) {
                    a.eval(r)
                } else {
                    b.eval(r)
                }
            }
            e => Datum::Int(i64::from(e.test(r))),
        }
    }

    /// The value as an integer (without cloning strings).
    pub fn int(&self, r: &[Datum]) -> i64 {
        match self {
            Expr::Col(i) => r[*i].int(),
            Expr::Int(v) => *v,
            e => e.eval(r).int(),
        }
    }

    /// The value as a condition.
    pub fn test(&self, r: &[Datum]) -> bool {
        match self {
            Expr::Cmp(a, o, b) => a.eval(r).cmp(&b.eval(r)) == *o,
            Expr::Between(x, a, b) => {
                let x = x.eval(r);
                a.eval(r) <= x && x <= b.eval(r)
            }
            Expr::And(v) => v.iter().all(|e| e.test(r)),
            Expr::Or(v) => v.iter().any(|e| e.test(r)),
            Expr::Not(e) => !e.test(r),
            Expr::Contains(e, n) => {
                let s = e.eval(r);
                n.is_empty() || s.bytes().windows(n.len()).any(|w| w == n.as_slice())
            }
            Expr::StartsWith(e, p) => e.eval(r).bytes().starts_with(p),
            Expr::In(e, list) => list.contains(&e.eval(r)),
            e => e.int(r) != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_compute_and_compare() {
        let r = vec![
            Datum::Int(1050),
            Datum::Int(6),
            Datum::Str(b"special requests".to_vec()),
        ];
        // 10.50 x (1 - 0.06) = 9.87 in cents, rounded.
        let e = Expr::DivRound(
            Box::new(Expr::col(0) * (Expr::Int(100) - Expr::col(1))),
            Box::new(Expr::Int(100)),
        );
        assert_eq!(e.int(&r), 987);
        assert!(Expr::cmp(Expr::col(1), Ordering::Less, Expr::Int(7)).test(&r));
        assert!(Expr::Contains(Box::new(Expr::col(2)), b"requests".to_vec()).test(&r));
        assert!(!Expr::StartsWith(Box::new(Expr::col(2)), b"req".to_vec()).test(&r));
        assert!(Expr::In(Box::new(Expr::col(1)), vec![Datum::Int(5), Datum::Int(6)]).test(&r));
        assert_eq!(div_round(-15, 10), -2);
        assert_eq!(div_round(14, 10), 1);
        assert_eq!(div_round(15, 10), 2);
    }
}
