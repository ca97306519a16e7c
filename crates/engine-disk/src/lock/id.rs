//! Lock names: the resource hierarchy Database > Table > Page > Record and
//! Database > Table > Key (index keys, for key-range locking), with the parent relation
//! and the hash that picks a lock-table partition.
//!
//! Pure values; this module must never touch the lock table or wait.

/// A lockable resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockId {
    Database,
    Table(u32),
    Page {
        table: u32,
        page: u64,
    },
    Record {
        table: u32,
        page: u64,
        slot: u16,
    },
    /// An index key (by hash of its encoded bytes): next-key / key-range locks. Two keys
    /// with the same hash share a lock, which is safe (it only adds false conflicts).
    Key {
        table: u32,
        index: u16,
        hash: u64,
    },
}

/// The `hash` of the end-of-index key lock (the "next key" after the last key).
pub const END_OF_INDEX: u64 = u64::MAX;

impl LockId {
    /// The key lock of encoded key `key` in index `index` of `table` (never collides with
    /// [`LockId::end_of_index`]; other collisions only add false conflicts).
    #[inline]
    pub fn key(table: u32, index: u16, key: &[u8]) -> LockId {
        // 8 bytes at a time, multiply-mix, murmur3 finalizer: cheap for keys <= 64 bytes.
        let mut h: u64 = 0x243f_6a88_85a3_08d3 ^ key.len() as u64;
        let mut chunks = key.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().expect("chunks_exact yields 8 bytes"));
            h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        if h == END_OF_INDEX {
            h -= 1;
        }
        LockId::Key {
            table,
            index,
            hash: h,
        }
    }

    /// The lock standing for "past the last key" of an index (next-key locking at the end).
    #[inline]
    pub fn end_of_index(table: u32, index: u16) -> LockId {
        LockId::Key {
            table,
            index,
            hash: END_OF_INDEX,
        }
    }

    /// The next coarser resource, `None` for the root.
    #[inline]
    pub fn parent(self) -> Option<LockId> {
        match self {
            LockId::Database => None,
            LockId::Table(_) => Some(LockId::Database),
            LockId::Page { table, .. } | LockId::Key { table, .. } => Some(LockId::Table(table)),
            LockId::Record { table, page, .. } => Some(LockId::Page { table, page }),
        }
    }

    /// The table this resource belongs to (`None` for the database).
    #[inline]
    pub fn table(self) -> Option<u32> {
        match self {
            LockId::Database => None,
            LockId::Table(t)
            | LockId::Page { table: t, .. }
            | LockId::Record { table: t, .. }
            | LockId::Key { table: t, .. } => Some(t),
        }
    }

    /// Record and key locks: the ones counted for escalation.
    #[inline]
    pub fn is_fine(self) -> bool {
        matches!(self, LockId::Record { .. } | LockId::Key { .. })
    }

    /// Ancestors, root first (at most three: Database, Table, Page).
    #[inline]
    pub(super) fn ancestors(self) -> ([LockId; 3], usize) {
        let db = LockId::Database;
        match self {
            LockId::Database => ([db; 3], 0),
            LockId::Table(_) => ([db; 3], 1),
            LockId::Page { table, .. } | LockId::Key { table, .. } => {
                ([db, LockId::Table(table), db], 2)
            }
            LockId::Record { table, page, .. } => {
                ([db, LockId::Table(table), LockId::Page { table, page }], 3)
            }
        }
    }

    /// A well-mixed 64-bit hash (murmur3 finalizer): picks the lock-table partition.
    #[inline]
    pub(super) fn hash64(self) -> u64 {
        let (a, b) = match self {
            LockId::Database => (0u64, 0u64),
            LockId::Table(t) => (1 << 60 | t as u64, 0),
            LockId::Page { table, page } => (2 << 60 | table as u64, page),
            LockId::Record { table, page, slot } => {
                (3 << 60 | (slot as u64) << 32 | table as u64, page)
            }
            LockId::Key { table, index, hash } => {
                (4 << 60 | (index as u64) << 32 | table as u64, hash)
            }
        };
        let mut h = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}
