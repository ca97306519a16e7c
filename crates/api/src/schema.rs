//! Schemas: tables with a fixed row size, a primary index (B+tree or hash, chosen per
//! table) and secondary indexes maintained by the engine.

use crate::key::Key;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub u32);

/// An index of a table: `index` 0 is the primary index, `i > 0` is `secondary[i - 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexId {
    pub table: TableId,
    pub index: u16,
}

impl TableId {
    pub fn primary(self) -> IndexId {
        IndexId {
            table: self,
            index: 0,
        }
    }
    pub fn secondary(self, i: u16) -> IndexId {
        IndexId {
            table: self,
            index: i + 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexKind {
    /// Ordered index: point lookups and range scans.
    BTree,
    /// Point lookups only (a scan over it is an error).
    Hash,
}

/// A secondary index. Its key is computed from the row by `key_of`. For a non-unique
/// index the engine appends the row's primary key to make entries unique, so the
/// key a scan reports is `key_of(row) ++ primary_key`. Rows' secondary keys must not
/// change on update (engines return a `Fatal` error if they do).
#[derive(Clone)]
pub struct SecondaryDef {
    pub name: String,
    pub unique: bool,
    pub key_of: fn(row: &[u8], out: &mut Key),
}

impl std::fmt::Debug for SecondaryDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecondaryDef")
            .field("name", &self.name)
            .field("unique", &self.unique)
            .finish()
    }
}

#[derive(Debug, Clone)]
pub struct TableDef {
    pub name: String,
    /// Every row of the table has exactly this many bytes.
    pub row_size: usize,
    pub primary: IndexKind,
    pub secondary: Vec<SecondaryDef>,
    /// Expected number of rows (sizing hint for hash tables and memory estimates).
    pub expected_rows: u64,
    /// How rows map to partitions, for a partitioned engine. `None`: not partitioned
    /// (one copy shared by all partitions). Other engines ignore it.
    pub partitioning: Option<Partitioning>,
}

/// A table's partition key: each row has a partition value in `0..values`; an engine
/// with `n` partitions keeps value `v` in partition `v * n / values` (contiguous ranges).
#[derive(Clone, Copy)]
pub struct Partitioning {
    pub values: u64,
    /// The partition value of key `key` of index `index` (0: primary, `i > 0`:
    /// `secondary[i - 1]`), or `None` when the key does not tell (a short scan bound,
    /// or an index whose keys do not carry it). Must be non-decreasing in key order
    /// (range scans rely on it), and a row's secondary keys must give its primary
    /// key's value.
    pub of_key: fn(index: u16, key: &[u8]) -> Option<u64>,
    /// The partition value of a row, for tables whose primary keys do not carry it.
    pub of_row: Option<fn(row: &[u8]) -> u64>,
}

impl Partitioning {
    /// The partition, among `n`, that holds partition value `v`.
    pub fn partition(&self, v: u64, n: usize) -> usize {
        let p =
            (v.min(self.values.saturating_sub(1)) as u128 * n as u128) / self.values.max(1) as u128;
        (p as usize).min(n.saturating_sub(1))
    }
}

impl std::fmt::Debug for Partitioning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partitioning")
            .field("values", &self.values)
            .finish()
    }
}

impl TableDef {
    pub fn new(name: &str, row_size: usize, primary: IndexKind, expected_rows: u64) -> Self {
        assert!(
            row_size > 0,
            "table {name}: rows must have at least one byte"
        );
        TableDef {
            name: name.to_string(),
            row_size,
            primary,
            secondary: Vec::new(),
            expected_rows,
            partitioning: None,
        }
    }

    /// Declare the table's partition key ([`Partitioning`]).
    pub fn partitioned(mut self, p: Partitioning) -> Self {
        self.partitioning = Some(p);
        self
    }

    pub fn with_secondary(mut self, name: &str, unique: bool, key_of: fn(&[u8], &mut Key)) -> Self {
        self.secondary.push(SecondaryDef {
            name: name.to_string(),
            unique,
            key_of,
        });
        self
    }
}

#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub tables: Vec<TableDef>,
}

impl Schema {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a table; its id is its position.
    pub fn add(&mut self, t: TableDef) -> TableId {
        assert!(
            self.table_by_name(&t.name).is_none(),
            "table {} defined twice",
            t.name
        );
        self.tables.push(t);
        TableId(self.tables.len() as u32 - 1)
    }

    pub fn table(&self, id: TableId) -> &TableDef {
        &self.tables[id.0 as usize]
    }

    pub fn table_by_name(&self, name: &str) -> Option<TableId> {
        self.tables
            .iter()
            .position(|t| t.name == name)
            .map(|i| TableId(i as u32))
    }

    pub fn table_ids(&self) -> impl Iterator<Item = TableId> {
        (0..self.tables.len() as u32).map(TableId)
    }

    /// Rough bytes the data needs in memory (rows plus index entries): the basis of the
    /// driver's "does it fit" check. Engines may add their own overhead factor.
    pub fn estimated_bytes(&self) -> u64 {
        self.tables
            .iter()
            .map(|t| {
                let per_row = t.row_size as u64 + 64 + 48 * (1 + t.secondary.len() as u64);
                per_row * t.expected_rows
            })
            .sum()
    }
}
