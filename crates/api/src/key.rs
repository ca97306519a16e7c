//! Order-preserving key encoding: comparing two encoded keys byte-wise (memcmp) gives the
//! same order as comparing the tuples they encode. Keys live on the stack (no heap
//! allocation per operation) and are at most [`MAX_KEY_LEN`] bytes.

use std::fmt;

/// The longest key any index accepts. Engines may rely on it (fixed-size node slots).
pub const MAX_KEY_LEN: usize = 64;

#[derive(Clone, Copy)]
pub struct Key {
    len: u8,
    buf: [u8; MAX_KEY_LEN],
}

impl Default for Key {
    fn default() -> Self {
        Self::new()
    }
}

impl Key {
    pub const fn new() -> Self {
        Key {
            len: 0,
            buf: [0; MAX_KEY_LEN],
        }
    }

    /// A key holding `bytes` verbatim. Panics if longer than [`MAX_KEY_LEN`] (a schema
    /// bug, never user input).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut k = Key::new();
        k.push_bytes(bytes);
        k
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    pub fn truncate(&mut self, len: usize) {
        assert!(len <= self.len as usize);
        self.len = len as u8;
    }

    pub fn push_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        let at = self.len as usize;
        assert!(
            at + bytes.len() <= MAX_KEY_LEN,
            "key longer than MAX_KEY_LEN ({MAX_KEY_LEN})"
        );
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len() as u8;
        self
    }

    pub fn push_u8(&mut self, v: u8) -> &mut Self {
        self.push_bytes(&[v])
    }
    pub fn push_u16(&mut self, v: u16) -> &mut Self {
        self.push_bytes(&v.to_be_bytes())
    }
    pub fn push_u32(&mut self, v: u32) -> &mut Self {
        self.push_bytes(&v.to_be_bytes())
    }
    pub fn push_u64(&mut self, v: u64) -> &mut Self {
        self.push_bytes(&v.to_be_bytes())
    }
    /// Signed integers: flipping the sign bit makes two's complement sort as unsigned.
    pub fn push_i32(&mut self, v: i32) -> &mut Self {
        self.push_u32((v as u32) ^ (1 << 31))
    }
    pub fn push_i64(&mut self, v: i64) -> &mut Self {
        self.push_u64((v as u64) ^ (1 << 63))
    }
    /// A string in a fixed-width field, zero-padded: order-preserving for strings
    /// without NUL bytes, and keeps the following fields aligned. Longer strings are cut.
    pub fn push_str_fixed(&mut self, s: &[u8], width: usize) -> &mut Self {
        let n = s.len().min(width);
        let at = self.len as usize;
        assert!(
            at + width <= MAX_KEY_LEN,
            "key longer than MAX_KEY_LEN ({MAX_KEY_LEN})"
        );
        self.buf[at..at + n].copy_from_slice(&s[..n]);
        self.buf[at + n..at + width].fill(0);
        self.len += width as u8;
        self
    }

    /// The smallest key greater than every key that starts with `self` (for prefix scans
    /// as `[prefix, prefix.prefix_end())`). `None` when the prefix is all 0xff.
    pub fn prefix_end(&self) -> Option<Key> {
        let mut k = *self;
        while k.len > 0 {
            let i = k.len as usize - 1;
            if k.buf[i] != 0xff {
                k.buf[i] += 1;
                return Some(k);
            }
            k.len -= 1;
        }
        None
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for Key {
    fn eq(&self, o: &Self) -> bool {
        self.as_bytes() == o.as_bytes()
    }
}
impl Eq for Key {}
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_bytes().hash(h)
    }
}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(o.as_bytes())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// Decoders for the fields [`Key`] encodes, reading at a byte offset.
pub fn read_u32(k: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(k[at..at + 4].try_into().unwrap())
}
pub fn read_u64(k: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(k[at..at + 8].try_into().unwrap())
}
pub fn read_i64(k: &[u8], at: usize) -> i64 {
    (read_u64(k, at) ^ (1 << 63)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn integer_tuples_keep_their_order(a: (i64, u32, u64), b: (i64, u32, u64)) {
            let enc = |t: (i64, u32, u64)| {
                let mut k = Key::new();
                k.push_i64(t.0).push_u32(t.1).push_u64(t.2);
                k
            };
            prop_assert_eq!(a.cmp(&b), enc(a).cmp(&enc(b)));
            prop_assert_eq!(read_i64(&enc(a), 0), a.0);
        }

        #[test]
        fn fixed_strings_keep_their_order(a in "[A-Z]{0,16}", b in "[A-Z]{0,16}") {
            let enc = |s: &str| {
                let mut k = Key::new();
                k.push_str_fixed(s.as_bytes(), 16).push_u32(7);
                k
            };
            prop_assert_eq!(a.cmp(&b), enc(&a).cmp(&enc(&b)));
        }
    }

    #[test]
    fn prefix_end_bounds_the_prefix() {
        let mut p = Key::new();
        p.push_u32(5);
        let end = p.prefix_end().unwrap();
        let mut inside = p;
        inside.push_u64(u64::MAX);
        assert!(inside < end);
        assert!(p < end);
        assert_eq!(Key::from_bytes(&[0xff, 0xff]).prefix_end(), None);
    }
}
