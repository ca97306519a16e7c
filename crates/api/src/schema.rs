//! Schemas: tables with a fixed row size, a primary index (B+tree or hash, chosen per
//! table) and secondary indexes maintained by the engine.

use crate::key::Key;
use crate::typed::{Column, KeyPart, Part, SqlType};

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
    /// The key's typed parts (`key_of`'s output; not the appended primary key). Empty:
    /// undeclared ([`crate::typed`]).
    pub parts: Vec<KeyPart>,
}

impl std::fmt::Debug for SecondaryDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecondaryDef")
            .field("name", &self.name)
            .field("unique", &self.unique)
            .field("parts", &self.parts)
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
    /// The row's typed columns ([`crate::typed`]); gaps between them are zero bytes.
    /// Empty: undeclared (the built-in engines need no declaration; adapters to real
    /// database systems refuse such a table).
    pub columns: Vec<Column>,
    /// The primary key's typed parts. Empty: undeclared.
    pub primary_key: Vec<KeyPart>,
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
            columns: Vec::new(),
            primary_key: Vec::new(),
        }
    }

    /// Declare the row's typed columns: (name, type, byte offset in the row).
    pub fn columns(mut self, cols: &[(&str, SqlType, usize)]) -> Self {
        self.columns = cols
            .iter()
            .map(|&(name, ty, offset)| Column {
                name: name.to_string(),
                ty,
                offset,
            })
            .collect();
        self
    }

    /// Declare the primary key's typed parts (after [`TableDef::columns`]).
    pub fn primary_key(mut self, parts: &[Part]) -> Self {
        self.primary_key = self.resolve(parts);
        self
    }

    /// Declare the typed parts of secondary index `name` (after it is added).
    pub fn secondary_key(mut self, name: &str, parts: &[Part]) -> Self {
        let parts = self.resolve(parts);
        let sec = self
            .secondary
            .iter_mut()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("table {}: no secondary index {name}", self.name));
        sec.parts = parts;
        self
    }

    fn resolve(&self, parts: &[Part]) -> Vec<KeyPart> {
        parts
            .iter()
            .map(|p| KeyPart {
                name: p.name.to_string(),
                column: p.in_row.then(|| {
                    self.column_index(p.name).unwrap_or_else(|| {
                        panic!("table {}: key part {} is not a column", self.name, p.name)
                    })
                }),
                enc: p.enc,
            })
            .collect()
    }

    /// The position of column `name` in [`TableDef::columns`].
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// True when the columns, the primary key and every secondary key are declared.
    pub fn is_typed(&self) -> bool {
        !self.columns.is_empty()
            && !self.primary_key.is_empty()
            && self.secondary.iter().all(|s| !s.parts.is_empty())
    }

    /// Check the typed declaration's shape (columns inside the row, no overlaps, key
    /// encodings that fit their columns).
    pub fn check_declaration(&self) -> std::result::Result<(), String> {
        let mut keys: Vec<(&str, &[KeyPart])> = vec![("primary", &self.primary_key)];
        for s in &self.secondary {
            keys.push((&s.name, &s.parts));
        }
        crate::typed::check_shape(&self.name, self.row_size, &self.columns, &keys)
    }

    /// Check that the declaration agrees with one row the kit wrote under `key`: the
    /// row survives a trip through column values, the primary key's parts that are
    /// columns hold the row's values, and every secondary key computed from the
    /// declared parts equals the kit's `key_of`.
    pub fn check_row(&self, key: &[u8], row: &[u8]) -> std::result::Result<(), String> {
        use crate::typed::{column_value, key_values, push_key_part, set_column};
        let name = &self.name;
        let mut back = vec![0u8; row.len()];
        for c in &self.columns {
            set_column(c, &mut back, &column_value(c, row)).map_err(|e| format!("{name}: {e}"))?;
        }
        if back != row {
            let at = back.iter().zip(row).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!(
                "{name}: byte {at} of the row is in no declared column (or a column does not read back)"
            ));
        }
        let (vals, rest) = key_values(&self.primary_key, &self.columns, key);
        if !rest.is_empty() || vals.len() != self.primary_key.len() {
            return Err(format!(
                "{name}: a {}-byte key does not split into the declared primary key parts",
                key.len()
            ));
        }
        for (p, v) in self.primary_key.iter().zip(&vals) {
            if let Some(c) = p.column {
                let mut from_row = Key::new();
                push_key_part(p, &column_value(&self.columns[c], row), &mut from_row)
                    .map_err(|e| format!("{name}: {e}"))?;
                let mut from_key = Key::new();
                push_key_part(p, v, &mut from_key).map_err(|e| format!("{name}: {e}"))?;
                if from_row.as_bytes() != from_key.as_bytes() {
                    return Err(format!(
                        "{name}: key part {} is {v:?} in the key but not in the row",
                        p.name
                    ));
                }
            }
        }
        for s in &self.secondary {
            let mut want = Key::new();
            (s.key_of)(row, &mut want);
            let mut got = Key::new();
            crate::typed::key_of_row(&s.parts, &self.columns, row, &[], &mut got)
                .map_err(|e| format!("{name}.{}: {e}", s.name))?;
            if got.as_bytes() != want.as_bytes() {
                return Err(format!(
                    "{name}.{}: the declared parts give another key than key_of",
                    s.name
                ));
            }
        }
        Ok(())
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
            parts: Vec::new(),
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

    /// What the rows of a log or checkpoint of this schema mean: a CRC-32 of the table
    /// names, row sizes, index kinds and secondary indexes, kept in the in-memory
    /// engines' file headers so that a file is never read into another workload's
    /// tables (`storage::logfile::schema_fingerprint`; its value never changes).
    pub fn fingerprint(&self) -> u32 {
        storage::logfile::schema_fingerprint(self.tables.iter().map(|t| {
            storage::logfile::TableShape {
                name: &t.name,
                row_size: t.row_size,
                primary: t.primary as u8,
                secondary: t.secondary.iter().map(|x| (x.name.as_str(), x.unique)),
            }
        }))
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
