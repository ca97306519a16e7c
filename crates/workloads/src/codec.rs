//! `codec`: the compact byte format of transaction inputs in a command log
//! (`Workload::encode_input` / `decode_input`): fixed-width little-endian integers and
//! length-prefixed byte strings, written and read in the same order by each kit. The
//! log checksums the bytes; a decoder still checks every length, so a command from
//! another workload or version is an error, never a panic or a wrong transaction.

use api::{Error, Result};

/// Appends values to a command's bytes.
pub struct Enc<'a>(pub &'a mut Vec<u8>);

impl Enc<'_> {
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.u64(v as u64)
    }
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.u32(v as u32)
    }
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u8(v as u8)
    }
    /// A byte string with its length (`u32`) before it.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
        self
    }
}

/// Reads values back in the order they were appended.
pub struct Dec<'a> {
    p: &'a [u8],
    what: &'static str,
}

impl<'a> Dec<'a> {
    /// `what` names the workload in errors.
    pub fn new(p: &'a [u8], what: &'static str) -> Self {
        Dec { p, what }
    }

    fn bad(&self, why: &str) -> Error {
        Error::fatal(format!(
            "a logged {} command cannot be decoded ({why}): the log was written by another workload or version",
            self.what
        ))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.p.len() < n {
            return Err(self.bad("cut short"));
        }
        let (a, b) = self.p.split_at(n);
        self.p = b;
        Ok(a)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn i64(&mut self) -> Result<i64> {
        Ok(self.u64()? as i64)
    }
    pub fn i32(&mut self) -> Result<i32> {
        Ok(self.u32()? as i32)
    }
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.bad(&format!("boolean byte {b}"))),
        }
    }
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// A byte string of exactly `N` bytes.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.bytes()?;
        b.try_into()
            .map_err(|_| self.bad(&format!("{} bytes where {N} were expected", b.len())))
    }
    /// A count of items that follow, each at least `min_item_bytes` long: refused when
    /// the bytes left cannot hold them (so a damaged count never allocates wildly).
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item_bytes.max(1)) > self.p.len() {
            return Err(self.bad(&format!("{n} items do not fit")));
        }
        Ok(n)
    }
    /// An unknown tag (an enum variant number).
    pub fn bad_tag(&self, tag: u32) -> Error {
        self.bad(&format!("unknown variant {tag}"))
    }
    /// Every byte must have been read.
    pub fn end(self) -> Result<()> {
        if self.p.is_empty() {
            Ok(())
        } else {
            Err(self.bad(&format!("{} bytes left over", self.p.len())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_damage_is_an_error() {
        let mut v = Vec::new();
        Enc(&mut v)
            .u8(7)
            .u32(0xDEAD_BEEF)
            .u64(u64::MAX - 1)
            .i64(-5)
            .i32(-9)
            .bool(true)
            .bytes(b"abc");
        let mut d = Dec::new(&v, "test");
        assert_eq!(d.u8().unwrap(), 7);
        assert_eq!(d.u32().unwrap(), 0xDEAD_BEEF);
        assert_eq!(d.u64().unwrap(), u64::MAX - 1);
        assert_eq!(d.i64().unwrap(), -5);
        assert_eq!(d.i32().unwrap(), -9);
        assert!(d.bool().unwrap());
        assert_eq!(d.array::<3>().unwrap(), *b"abc");
        d.end().unwrap();
        // Cut short, and a wrong length, are errors.
        assert!(Dec::new(&v[..5], "test").u64().is_err());
        let mut d = Dec::new(&v[..2], "test");
        d.u8().unwrap();
        assert!(d.bool().is_err());
        let mut big = Vec::new();
        Enc(&mut big).u32(1 << 30);
        assert!(Dec::new(&big, "test").count(1).is_err());
    }
}
