//! sqlmap: maps a kit's typed schema ([`api::typed`]) to SQL for the adapters to real
//! database systems (SQLite, PostgreSQL): the DDL of a table and its indexes, the
//! statement texts of the [`api::Worker`] operations per dialect, the conversion of
//! rows and keys to column values and back, and the translation of a scan's byte
//! bounds into a WHERE over row values.
//!
//! It owns no connection and runs no statement: the engine crates do. It must never
//! accept an undeclared table (one clear error instead).

use api::schema::{IndexKind, TableDef};
use api::typed::{column_value, set_column, KeyEnc, KeyPart, SqlType, Value};
use api::Key;
use std::cmp::Ordering;
use std::fmt::Write;
use std::ops::Bound;

#[cfg(test)]
mod add_tests;
pub mod bounds;
#[cfg(test)]
mod scan_tests;

pub use bounds::{Cond, Op};

/// The SQL dialect statements are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Placeholders `?N`; integers, decimals and timestamps are INTEGER, strings TEXT
    /// (binary collation: byte order), bytes BLOB.
    Sqlite,
    /// Placeholders `$N` with explicit casts; decimals NUMERIC(p,s), strings
    /// VARCHAR(n) COLLATE "C" (byte order), bytes BYTEA.
    Postgres,
}

/// How a SQL column's values are bound and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    I16,
    I32,
    I64,
    /// A fixed-point number bound and read as an integer count of 10^-scale units.
    Decimal {
        precision: u8,
        scale: u8,
    },
    Text,
    Bytes,
}

impl Kind {
    fn of_type(t: SqlType) -> Kind {
        match t {
            SqlType::Int { bytes: 1, .. }
            | SqlType::Int {
                bytes: 2,
                signed: true,
            } => Kind::I16,
            SqlType::Int { bytes: 2, .. }
            | SqlType::Int {
                bytes: 4,
                signed: true,
            } => Kind::I32,
            SqlType::Int { .. } | SqlType::Timestamp => Kind::I64,
            SqlType::Decimal {
                precision, scale, ..
            } => Kind::Decimal { precision, scale },
            SqlType::Char(_) | SqlType::VarChar(_) => Kind::Text,
            SqlType::Binary(_) => Kind::Bytes,
        }
    }

    fn of_enc(e: KeyEnc) -> Kind {
        match e {
            KeyEnc::U8 => Kind::I16,
            KeyEnc::U16 | KeyEnc::I32 => Kind::I32,
            KeyEnc::U32 | KeyEnc::U64 | KeyEnc::I64 => Kind::I64,
            KeyEnc::Fixed(_) => Kind::Bytes,
        }
    }
}

/// Where a SQL column's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Column `i` of the row ([`TableDef::columns`]).
    Row(usize),
    /// Part `i` of the primary key, a value only the key holds.
    KeyOnly(usize),
}

/// One column of the SQL table.
#[derive(Debug, Clone)]
pub struct SqlCol {
    pub name: String,
    pub kind: Kind,
    pub source: Source,
    /// The declared SQL type per dialect.
    sqlite_ty: String,
    pg_ty: String,
}

/// One index of the table as a scan sees it: the parts of the key a scan reports
/// (a non-unique secondary index's key is its own parts followed by the primary key's).
#[derive(Debug, Clone)]
struct IndexMap {
    name: String,
    unique: bool,
    parts: Vec<KeyPart>,
    /// The SQL column of each part.
    cols: Vec<usize>,
    /// How many of `parts` are the index's own (the rest: the primary key appended).
    own: usize,
}

/// A typed table mapped to SQL.
#[derive(Debug, Clone)]
pub struct TableMap {
    pub def: TableDef,
    pub cols: Vec<SqlCol>,
    /// The SQL column of each primary key part.
    pk: Vec<usize>,
    /// Index 0: the primary key; `i > 0`: secondary index `i - 1`.
    indexes: Vec<IndexMap>,
    /// Columns an UPDATE sets: those not in the primary key.
    set_cols: Vec<usize>,
    /// Every column, in order.
    all: Vec<usize>,
}

/// Quote an identifier (names come from the kits; quoting keeps SQL keywords usable).
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl TableMap {
    /// Map table `def`. An undeclared table, or a declaration SQL cannot hold, is an
    /// error naming the table.
    pub fn new(def: &TableDef) -> Result<TableMap, String> {
        if !def.is_typed() {
            return Err(format!(
                "table {} has no typed declaration (columns, primary key and secondary key \
                 parts), so it cannot be created in a SQL database",
                def.name
            ));
        }
        def.check_declaration()?;
        let mut cols: Vec<SqlCol> = def
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| SqlCol {
                name: c.name.clone(),
                kind: Kind::of_type(c.ty),
                source: Source::Row(i),
                sqlite_ty: sqlite_type(c.ty).into(),
                pg_ty: pg_type(c.ty),
            })
            .collect();
        let mut pk = Vec::new();
        for (i, p) in def.primary_key.iter().enumerate() {
            match p.column {
                Some(c) => pk.push(c),
                None => {
                    if cols.iter().any(|c| c.name == p.name) {
                        return Err(format!(
                            "table {}: key-only part {} has the name of a column",
                            def.name, p.name
                        ));
                    }
                    let kind = Kind::of_enc(p.enc);
                    pk.push(cols.len());
                    cols.push(SqlCol {
                        name: p.name.clone(),
                        kind,
                        source: Source::KeyOnly(i),
                        sqlite_ty: if kind == Kind::Bytes {
                            "BLOB"
                        } else {
                            "INTEGER"
                        }
                        .into(),
                        pg_ty: match kind {
                            Kind::I16 => "SMALLINT",
                            Kind::I32 => "INTEGER",
                            Kind::Bytes => "BYTEA",
                            _ => "BIGINT",
                        }
                        .into(),
                    });
                }
            }
        }
        let mut indexes = vec![IndexMap {
            name: format!("{}_pkey", def.name),
            unique: true,
            parts: def.primary_key.clone(),
            cols: pk.clone(),
            own: pk.len(),
        }];
        for s in &def.secondary {
            let mut parts = s.parts.clone();
            let mut icols = Vec::new();
            for p in &s.parts {
                match p.column {
                    Some(c) => icols.push(c),
                    None => {
                        return Err(format!(
                            "table {} index {}: part {} is not a column (a secondary key is \
                             computed from the row)",
                            def.name, s.name, p.name
                        ))
                    }
                }
            }
            let own = parts.len();
            if !s.unique {
                parts.extend(def.primary_key.iter().cloned());
                icols.extend(pk.iter().copied());
            }
            indexes.push(IndexMap {
                name: format!("{}_{}", def.name, s.name),
                unique: s.unique,
                parts,
                cols: icols,
                own,
            });
        }
        let set_cols = (0..cols.len()).filter(|c| !pk.contains(c)).collect();
        Ok(TableMap {
            def: def.clone(),
            all: (0..cols.len()).collect(),
            cols,
            pk,
            indexes,
            set_cols,
        })
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// Number of indexes (the primary one and the secondary ones).
    pub fn index_count(&self) -> usize {
        self.indexes.len()
    }

    /// `CREATE TABLE` and `CREATE INDEX` statements. Non-unique secondary indexes hold
    /// the primary key's columns after their own, so that a scan comes out in the order
    /// of the keys it reports.
    pub fn ddl(&self, d: Dialect) -> Vec<String> {
        let mut t = self.create_table(d);
        t.pop();
        let _ = write!(t, ", PRIMARY KEY ({}))", self.col_list(&self.pk));
        if d == Dialect::Sqlite && !self.rowid_key() {
            // Rows clustered in the primary key's B-tree, as the built-in engines'
            // B+tree primary indexes keep them.
            t.push_str(" WITHOUT ROWID");
        }
        let mut out = vec![t];
        out.extend(self.secondary_ddl());
        out
    }

    /// PostgreSQL's bulk load: the table without its keys, then the statements that
    /// build its primary key and secondary indexes once the rows are in (one sort each
    /// instead of an index insert and its WAL per row). The built table equals
    /// [`ddl`](Self::ddl)'s, the primary key's index named as there (`<table>_pkey`).
    pub fn pg_bulk_ddl(&self) -> (String, Vec<String>) {
        let mut keys = vec![format!(
            "ALTER TABLE {} ADD PRIMARY KEY ({})",
            ident(self.name()),
            self.col_list(&self.pk)
        )];
        keys.extend(self.secondary_ddl());
        (self.create_table(Dialect::Postgres), keys)
    }

    /// `CREATE TABLE` with the columns only.
    fn create_table(&self, d: Dialect) -> String {
        let cols: Vec<String> = self
            .cols
            .iter()
            .map(|c| {
                let ty = match d {
                    Dialect::Sqlite => &c.sqlite_ty,
                    Dialect::Postgres => &c.pg_ty,
                };
                format!("{} {ty} NOT NULL", ident(&c.name))
            })
            .collect();
        format!("CREATE TABLE {} ({})", ident(self.name()), cols.join(", "))
    }

    fn secondary_ddl(&self) -> Vec<String> {
        self.indexes[1..]
            .iter()
            .map(|ix| {
                format!(
                    "CREATE {}INDEX {} ON {} ({})",
                    if ix.unique { "UNIQUE " } else { "" },
                    ident(&ix.name),
                    ident(self.name()),
                    self.col_list(&ix.cols)
                )
            })
            .collect()
    }

    /// SQLite: whether the primary key is one integer column, which a table with rowids
    /// makes the rowid (its declared type is exactly `INTEGER`): rows clustered in the
    /// key's order all the same, in a B-tree of integer keys, where `WITHOUT ROWID` keeps
    /// an index B-tree comparing records (TPC-B's tables, `benches/native.rs`).
    pub fn rowid_key(&self) -> bool {
        matches!(self.pk[..], [c] if self.cols[c].sqlite_ty == "INTEGER")
    }

    fn col_list(&self, cols: &[usize]) -> String {
        let names: Vec<String> = cols.iter().map(|&c| ident(&self.cols[c].name)).collect();
        names.join(", ")
    }

    /// The select list of SQL columns `cols` (in that order), decimals as integer units.
    fn select_cols(&self, d: Dialect, cols: &[usize]) -> String {
        self.select_cols_of(d, cols, "")
    }

    /// [`TableMap::select_cols`] with each column qualified by `qual` (e.g. `t.`).
    fn select_cols_of(&self, d: Dialect, cols: &[usize], qual: &str) -> String {
        let items: Vec<String> = cols
            .iter()
            .map(|&c| {
                let c = &self.cols[c];
                match (d, c.kind) {
                    (Dialect::Postgres, Kind::Decimal { scale, .. }) => {
                        format!(
                            "({qual}{} * 1{})::int8",
                            ident(&c.name),
                            "0".repeat(scale as usize)
                        )
                    }
                    _ => format!("{qual}{}", ident(&c.name)),
                }
            })
            .collect();
        items.join(", ")
    }

    /// PostgreSQL: insert of many rows in one statement, each column's values an array
    /// parameter numbered from `first` (one per column, in column order, of
    /// [`TableMap::row_params`]' values: [`array_placeholder`]), unnested row by row. Its text depends on
    /// the table only, not on the number of rows.
    pub fn insert_many_sql(&self, first: usize) -> String {
        let n = self.cols.len();
        let arrays: Vec<String> = (0..n)
            .map(|c| array_placeholder(self.cols[c].kind, first + c))
            .collect();
        let names: Vec<String> = (0..n).map(|c| format!("c{c}")).collect();
        let vals: Vec<String> = (0..n)
            .map(|c| from_array(self.cols[c].kind, &format!("u.c{c}")))
            .collect();
        format!(
            "INSERT INTO {} ({}) SELECT {} FROM unnest({}) AS u({})",
            ident(self.name()),
            self.col_list(&self.all),
            vals.join(", "),
            arrays.join(", "),
            names.join(", ")
        )
    }

    /// PostgreSQL: insert of one row as `INSERT ... SELECT` (a `WHERE` may follow),
    /// parameters as [`TableMap::insert_sql`]'s numbered from `first`. Unlike
    /// [`TableMap::insert_many_sql`] its generic plan is its custom plan, so PostgreSQL
    /// plans it once per connection (the array form's estimate of 10 rows makes the
    /// server plan it again at every execution).
    pub fn insert_one_sql(&self, first: usize) -> String {
        let ph: Vec<String> = (0..self.cols.len())
            .map(|c| self.placeholder(Dialect::Postgres, c, first + c))
            .collect();
        format!(
            "INSERT INTO {} ({}) SELECT {}",
            ident(self.name()),
            self.col_list(&self.all),
            ph.join(", ")
        )
    }

    /// PostgreSQL: point lookups of many keys in one statement, selecting SQL columns
    /// `cols` (in that order) and then the key's position (1-based, `bigint`) in the
    /// arrays. Parameters: one array per primary key column ([`TableMap::key_params`]'
    /// values). A key given twice returns its row twice; an absent key returns nothing.
    /// `lock`: `FOR UPDATE` of the rows (the read of an update at read committed).
    pub fn get_many_sql(&self, cols: &[usize], lock: bool) -> String {
        let k = self.pk.len();
        let arrays: Vec<String> = (0..k)
            .map(|i| array_placeholder(self.cols[self.pk[i]].kind, i + 1))
            .collect();
        let names: Vec<String> = (0..k).map(|i| format!("k{i}")).collect();
        let on: Vec<String> = (0..k)
            .map(|i| {
                let c = &self.cols[self.pk[i]];
                format!(
                    "t.{} = {}",
                    ident(&c.name),
                    from_array(c.kind, &format!("u.k{i}"))
                )
            })
            .collect();
        format!(
            "SELECT {}, u.ord FROM unnest({}) WITH ORDINALITY AS u({}, ord) JOIN {} AS t ON {}{}",
            self.select_cols_of(Dialect::Postgres, cols, "t."),
            arrays.join(", "),
            names.join(", "),
            ident(self.name()),
            on.join(" AND "),
            if lock { " FOR UPDATE OF t" } else { "" }
        )
    }

    /// PostgreSQL: update of many rows in one statement, setting SQL columns `set`
    /// (outside the primary key). Parameters, numbered from `first`: one array per
    /// column of `set` and then per primary key column ([`TableMap::update_some_params`]'
    /// values, row by row); each key at most once. `None` for no column.
    pub fn update_many_sql(&self, set: &[usize], first: usize) -> Option<String> {
        if set.is_empty() {
            return None;
        }
        let all: Vec<usize> = set.iter().chain(&self.pk).copied().collect();
        let arrays: Vec<String> = all
            .iter()
            .enumerate()
            .map(|(i, &c)| array_placeholder(self.cols[c].kind, first + i))
            .collect();
        let names: Vec<String> = (0..all.len()).map(|i| format!("v{i}")).collect();
        let sets: Vec<String> = set
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let c = &self.cols[c];
                format!(
                    "{} = {}",
                    ident(&c.name),
                    from_array(c.kind, &format!("u.v{i}"))
                )
            })
            .collect();
        let on: Vec<String> = self
            .pk
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let c = &self.cols[c];
                format!(
                    "t.{} = {}",
                    ident(&c.name),
                    from_array(c.kind, &format!("u.v{}", set.len() + i))
                )
            })
            .collect();
        Some(format!(
            "UPDATE {} AS t SET {} FROM unnest({}) AS u({}) WHERE {}",
            ident(self.name()),
            sets.join(", "),
            arrays.join(", "),
            names.join(", "),
            on.join(" AND ")
        ))
    }

    /// Every SQL column, in order (what the statements select by default).
    pub fn all_cols(&self) -> &[usize] {
        &self.all
    }

    /// The SQL columns holding any of the row's bytes `part`, in column order: what a
    /// partial read (`get_part`, `update_part`) selects. Out of the row: an error.
    pub fn part_cols(
        &self,
        table: api::TableId,
        part: &std::ops::Range<usize>,
    ) -> api::Result<Vec<usize>> {
        if part.start > part.end || part.end > self.def.row_size {
            return Err(api::engine::part_out_of_row(table, part, self.def.row_size));
        }
        Ok(self
            .cols
            .iter()
            .enumerate()
            .filter(|(_, c)| match c.source {
                Source::Row(i) => {
                    let col = &self.def.columns[i];
                    col.offset < part.end && part.start < col.offset + col.ty.width()
                }
                Source::KeyOnly(_) => false,
            })
            .map(|(i, _)| i)
            .collect())
    }

    /// What a scan of `index` selects: every column, or for a scan of the bytes `part`
    /// only, the columns holding them and those the reported key is made of (the primary
    /// key's and the index's), in column order.
    pub fn scan_cols(
        &self,
        table: api::TableId,
        index: u16,
        part: Option<&std::ops::Range<usize>>,
    ) -> api::Result<Vec<usize>> {
        let Some(part) = part else {
            return Ok(self.all.clone());
        };
        let mut cols = self.part_cols(table, part)?;
        cols.extend(&self.pk);
        cols.extend(&self.indexes[index as usize].cols);
        cols.sort_unstable();
        cols.dedup();
        Ok(cols)
    }

    fn placeholder(&self, d: Dialect, col: usize, n: usize) -> String {
        placeholder(d, self.cols[col].kind, n)
    }

    /// `WHERE` over the primary key, its parameters numbered from `first`.
    fn pk_where(&self, d: Dialect, first: usize) -> String {
        let conds: Vec<String> = self
            .pk
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                format!(
                    "{} = {}",
                    ident(&self.cols[c].name),
                    self.placeholder(d, c, first + i)
                )
            })
            .collect();
        conds.join(" AND ")
    }

    /// Point lookup; parameters: [`TableMap::key_params`]; result: every column.
    pub fn get_sql(&self, d: Dialect) -> String {
        self.get_cols_sql(d, self.all_cols(), false)
    }

    /// Point lookup of SQL columns `cols` (in that order); parameters:
    /// [`TableMap::key_params`]. `lock`: `FOR UPDATE` (PostgreSQL), for a read that an
    /// update of the row follows.
    pub fn get_cols_sql(&self, d: Dialect, cols: &[usize], lock: bool) -> String {
        format!(
            "SELECT {} FROM {} WHERE {}{}",
            self.select_cols(d, cols),
            ident(self.name()),
            self.pk_where(d, 1),
            if lock { " FOR UPDATE" } else { "" }
        )
    }

    /// Insert; parameters: [`TableMap::row_params`].
    pub fn insert_sql(&self, d: Dialect) -> String {
        let ph: Vec<String> = (0..self.cols.len())
            .map(|c| self.placeholder(d, c, c + 1))
            .collect();
        format!(
            "INSERT INTO {} ({}) VALUES ({})",
            ident(self.name()),
            self.col_list(&(0..self.cols.len()).collect::<Vec<_>>()),
            ph.join(", ")
        )
    }

    /// Update of every column outside the primary key; parameters:
    /// [`TableMap::update_params`]. `None`: every column is in the primary key (an
    /// update can change nothing).
    pub fn update_sql(&self, d: Dialect) -> Option<String> {
        self.update_some_sql(d, &self.set_cols)
    }

    /// Update of SQL columns `cols` (outside the primary key; [`TableMap::set_cols_of`]);
    /// parameters: their values, then the key. `None` for no column.
    pub fn update_some_sql(&self, d: Dialect, cols: &[usize]) -> Option<String> {
        self.update_some_sql_from(d, cols, 1)
    }

    /// [`TableMap::update_some_sql`] with its parameters numbered from `first` (a part
    /// of a longer statement).
    pub fn update_some_sql_from(&self, d: Dialect, cols: &[usize], first: usize) -> Option<String> {
        if cols.is_empty() {
            return None;
        }
        let sets: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                format!(
                    "{} = {}",
                    ident(&self.cols[c].name),
                    self.placeholder(d, c, first + i)
                )
            })
            .collect();
        Some(format!(
            "UPDATE {} SET {} WHERE {}",
            ident(self.name()),
            sets.join(", "),
            self.pk_where(d, first + cols.len())
        ))
    }

    /// The SQL column an add to the 8 bytes at `at` of the row changes
    /// ([`api::Worker::add_i64`]): a column outside the primary key that is exactly
    /// those bytes, a signed 8-byte integer or an 8-byte decimal. `None`: no such column
    /// (the adapter then reads and writes the row as any update).
    pub fn add_col(&self, at: usize) -> Option<usize> {
        self.set_cols
            .iter()
            .copied()
            .find(|&c| match self.cols[c].source {
                Source::Row(i) => {
                    let col = &self.def.columns[i];
                    col.offset == at
                        && matches!(
                            col.ty,
                            SqlType::Int {
                                bytes: 8,
                                signed: true
                            } | SqlType::Decimal { bytes: 8, .. }
                        )
                }
                Source::KeyOnly(_) => false,
            })
    }

    /// An add to column `col` ([`TableMap::add_col`]): `UPDATE t SET c = c + delta WHERE
    /// pk`, the delta (in the column's integer units) parameter `first`, the key's from
    /// `first + 1`; `returning`: the new value comes back (as integer units).
    pub fn add_sql(&self, d: Dialect, col: usize, first: usize, returning: bool) -> String {
        let name = ident(&self.cols[col].name);
        let ret = if returning {
            format!(" RETURNING {}", self.select_cols(d, &[col]))
        } else {
            String::new()
        };
        format!(
            "UPDATE {} SET {name} = {name} + {} WHERE {}{ret}",
            ident(self.name()),
            self.placeholder(d, col, first),
            self.pk_where(d, first + 1)
        )
    }

    /// Delete; parameters: [`TableMap::key_params`].
    pub fn delete_sql(&self, d: Dialect) -> String {
        format!(
            "DELETE FROM {} WHERE {}",
            ident(self.name()),
            self.pk_where(d, 1)
        )
    }

    /// Row count.
    pub fn count_sql(&self) -> String {
        format!("SELECT count(*) FROM {}", ident(self.name()))
    }

    /// The scan `plan` of `index` (from [`TableMap::plan_scan`]) in `dir` order, selecting
    /// `cols` (SQL columns, in the order given: [`TableMap::scan_cols`]); parameters:
    /// [`ScanPlan::params`], then the limit (an integer) when the plan is limited.
    pub fn scan_sql(
        &self,
        d: Dialect,
        index: u16,
        plan: &ScanPlan,
        cols: &[usize],
        dir: api::Dir,
    ) -> String {
        self.scan_sql_limit(d, index, plan, cols, dir, None)
    }

    /// [`TableMap::scan_sql`], with a limited plan's limit written as the literal
    /// `limit` when given (no limit parameter then). PostgreSQL's generic plan for a
    /// `LIMIT $n` assumes a tenth of the rows, so its plan cache keeps to custom plans
    /// and plans such a statement at every execution; with a literal it plans once.
    pub fn scan_sql_limit(
        &self,
        d: Dialect,
        index: u16,
        plan: &ScanPlan,
        cols: &[usize],
        dir: api::Dir,
        limit: Option<usize>,
    ) -> String {
        let ix = &self.indexes[index as usize];
        let name = |i: usize| ident(&self.cols[ix.cols[i]].name);
        let ph = |i: usize, n: usize| self.placeholder(d, ix.cols[i], n);
        let mut n = 1;
        let mut conds = Vec::new();
        // Equalities on the shared leading parts: each value is a parameter once.
        for i in 0..plan.eq.len() {
            conds.push(format!("{} = {}", name(i), ph(i, n)));
            n += 1;
        }
        for c in [&plan.lo, &plan.hi] {
            match c {
                Cond::All => {}
                Cond::Nothing => conds.push("1 = 0".to_string()),
                Cond::Cmp { op, vals } => {
                    // The parts after the equalities (`plan_scan` dropped the conditions
                    // the equalities alone decide).
                    let (from, k) = (plan.eq.len(), vals.len());
                    if k - from == 1 {
                        conds.push(format!("{} {} {}", name(from), op.sql(), ph(from, n)));
                    } else {
                        if plan.form == ScanForm::Prefix {
                            // A plain range on the first remaining column as well: the
                            // row-value comparison alone lets PostgreSQL's B-tree stop
                            // the scan on its first column only.
                            let wide = match op {
                                Op::Ge | Op::Gt => Op::Ge,
                                Op::Le | Op::Lt => Op::Le,
                            };
                            conds.push(format!("{} {} {}", name(from), wide.sql(), ph(from, n)));
                        }
                        let names: Vec<String> = (from..k).map(name).collect();
                        let phs: Vec<String> = (from..k).map(|i| ph(i, n + i - from)).collect();
                        conds.push(format!(
                            "({}) {} ({})",
                            names.join(", "),
                            op.sql(),
                            phs.join(", ")
                        ));
                    }
                    n += k - from;
                }
            }
        }
        let mut s = format!(
            "SELECT {} FROM {}",
            self.select_cols(d, cols),
            ident(self.name())
        );
        if !conds.is_empty() {
            let _ = write!(s, " WHERE {}", conds.join(" AND "));
        }
        let order = match dir {
            api::Dir::Forward => "",
            api::Dir::Backward => " DESC",
        };
        let ord: Vec<String> = ix
            .cols
            .iter()
            .map(|&c| format!("{}{order}", ident(&self.cols[c].name)))
            .collect();
        let _ = write!(s, " ORDER BY {}", ord.join(", "));
        match (plan.limited, limit) {
            (false, _) => {}
            (true, Some(l)) => {
                let _ = write!(s, " LIMIT {l}");
            }
            (true, None) => {
                let _ = write!(s, " LIMIT {}", placeholder(d, Kind::I64, n));
            }
        }
        s
    }

    /// The primary key's values, for [`TableMap::get_sql`] and [`TableMap::delete_sql`].
    pub fn key_params(&self, key: &[u8]) -> api::Result<Vec<Value>> {
        let (vals, rest) = api::typed::key_values(&self.def.primary_key, &self.def.columns, key);
        if !rest.is_empty() || vals.len() != self.def.primary_key.len() {
            return Err(api::Error::fatal(format!(
                "a {}-byte key is not a key of table {}",
                key.len(),
                self.name()
            )));
        }
        Ok(vals)
    }

    /// Every column's value for row `row` under primary key `key` ([`TableMap::insert_sql`]).
    pub fn row_params(&self, key: &[u8], row: &[u8]) -> api::Result<Vec<Value>> {
        self.check_row_len(row)?;
        let kv = self.key_params(key)?;
        // The row is stored under its columns' values: they must be the key's.
        for (p, v) in self.def.primary_key.iter().zip(&kv) {
            if let Some(c) = p.column {
                let in_row = column_value(&self.def.columns[c], row);
                if in_row != *v {
                    return Err(api::Error::fatal(format!(
                        "table {}: key part {} is {v:?} in the key but {in_row:?} in the row",
                        self.name(),
                        p.name
                    )));
                }
            }
        }
        Ok(self
            .cols
            .iter()
            .map(|c| match c.source {
                Source::Row(i) => column_value(&self.def.columns[i], row),
                Source::KeyOnly(p) => kv[p].clone(),
            })
            .collect())
    }

    /// The values of [`TableMap::update_sql`]: the columns it sets, then the key.
    pub fn update_params(&self, key: &[u8], row: &[u8]) -> api::Result<Vec<Value>> {
        self.update_some_params(&self.set_cols, key, row)
    }

    /// Of SQL columns `cols`, those an UPDATE may set (outside the primary key).
    pub fn set_cols_of(&self, cols: &[usize]) -> Vec<usize> {
        cols.iter()
            .copied()
            .filter(|c| self.set_cols.contains(c))
            .collect()
    }

    /// The SQL columns an UPDATE may set whose bytes differ between `old` and `new`
    /// (rows of this table), in [`TableMap::set_cols`] order, into `out`.
    pub fn changed_cols(&self, old: &[u8], new: &[u8], out: &mut Vec<usize>) {
        out.clear();
        for &c in &self.set_cols {
            if let Source::Row(i) = self.cols[c].source {
                let col = &self.def.columns[i];
                let r = col.offset..col.offset + col.ty.width();
                if old.get(r.clone()) != new.get(r) {
                    out.push(c);
                }
            }
        }
    }

    /// The values of [`TableMap::update_some_sql`] for `cols`: theirs, then the key.
    pub fn update_some_params(
        &self,
        cols: &[usize],
        key: &[u8],
        row: &[u8],
    ) -> api::Result<Vec<Value>> {
        self.check_row_len(row)?;
        let mut v: Vec<Value> = cols
            .iter()
            .map(|&c| match self.cols[c].source {
                Source::Row(i) => column_value(&self.def.columns[i], row),
                Source::KeyOnly(_) => unreachable!("key-only columns are primary key columns"),
            })
            .collect();
        v.extend(self.key_params(key)?);
        Ok(v)
    }

    fn check_row_len(&self, row: &[u8]) -> api::Result<()> {
        if row.len() != self.def.row_size {
            return Err(api::Error::fatal(format!(
                "a {}-byte row for table {} of {}-byte rows",
                row.len(),
                self.name(),
                self.def.row_size
            )));
        }
        Ok(())
    }

    /// Rebuild a row and its primary key from the values of every column (a select's
    /// result, in column order).
    pub fn decode(&self, vals: &[Value], row: &mut Vec<u8>, pk: &mut Key) -> api::Result<()> {
        self.decode_cols(self.all_cols(), vals, row, Some(pk))
    }

    /// [`TableMap::decode`] from the values of SQL columns `cols` only (`vals[i]` is
    /// column `cols[i]`'s): the other bytes of the row are zero. The primary key is
    /// rebuilt when `pk` is given (then `cols` must hold its columns).
    pub fn decode_cols(
        &self,
        cols: &[usize],
        vals: &[Value],
        row: &mut Vec<u8>,
        pk: Option<&mut Key>,
    ) -> api::Result<()> {
        row.clear();
        row.resize(self.def.row_size, 0);
        for (&c, v) in cols.iter().zip(vals) {
            if let Source::Row(i) = self.cols[c].source {
                set_column(&self.def.columns[i], row, v)?;
            }
        }
        if let Some(pk) = pk {
            pk.clear();
            for (p, c) in self.def.primary_key.iter().zip(&self.pk) {
                let at = cols.iter().position(|x| x == c).ok_or_else(|| {
                    api::Error::fatal(format!(
                        "table {}: the key's column {} was not selected",
                        self.name(),
                        self.cols[*c].name
                    ))
                })?;
                api::typed::push_key_part(p, &vals[at], pk)?;
            }
        }
        Ok(())
    }

    /// The key a scan of `index` reports for a row: the primary key, or the secondary
    /// index's key (followed by the primary key for a non-unique index).
    pub fn index_key(&self, index: u16, row: &[u8], pk: &Key, out: &mut Key) {
        out.clear();
        if index == 0 {
            out.push_bytes(pk);
            return;
        }
        let s = &self.def.secondary[index as usize - 1];
        (s.key_of)(row, out);
        if !s.unique {
            out.push_bytes(pk);
        }
    }

    /// Whether a scan of `index` is allowed (a hash primary index has no order).
    pub fn scannable(&self, index: u16) -> bool {
        index as usize >= 1 || self.def.primary != IndexKind::Hash
    }

    /// Whether `index` exists.
    pub fn has_index(&self, index: u16) -> bool {
        (index as usize) < self.indexes.len()
    }

    /// The condition a scan bound of `index` puts on the index's columns.
    pub fn bound(&self, index: u16, b: Bound<&[u8]>, is_lo: bool) -> Cond {
        bounds::translate(
            &self.indexes[index as usize].parts,
            &self.def.columns,
            b,
            is_lo,
        )
    }

    /// Plan a scan of `index` between byte bounds `lo` and `hi` for dialect `d` (its
    /// [`Dialect::scan_form`]): the engines' checks (the index exists and is ordered) and
    /// both bounds as conditions. `None`: no row can match (a zero limit or an empty
    /// range), so nothing need be asked.
    pub fn plan_scan(
        &self,
        d: Dialect,
        index: u16,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        limit: usize,
    ) -> api::Result<Option<ScanPlan>> {
        self.plan_scan_as(d.scan_form(), index, lo, hi, forward, limit)
    }

    /// [`TableMap::plan_scan`] written in `form`.
    pub fn plan_scan_as(
        &self,
        form: ScanForm,
        index: u16,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        limit: usize,
    ) -> api::Result<Option<ScanPlan>> {
        if !self.has_index(index) {
            return Err(api::Error::fatal(format!(
                "table {} has no index {index}",
                self.name()
            )));
        }
        if !self.scannable(index) {
            return Err(api::Error::fatal(format!(
                "scan over table {}'s hash primary index",
                self.name()
            )));
        }
        if limit == 0 {
            return Ok(None);
        }
        let (mut lo, mut hi) = (self.bound(index, lo, true), self.bound(index, hi, false));
        if lo == Cond::Nothing || hi == Cond::Nothing {
            return Ok(None);
        }
        let mut eq_vals = Vec::new();
        if form == ScanForm::Prefix {
            if let (Cond::Cmp { vals: l, .. }, Cond::Cmp { vals: h, .. }) = (&lo, &hi) {
                // A row meeting both has these leading values: (c1..ck) >= (l1..lk)
                // implies (c1..cp) >= (l1..lp), and (c1..cm) < or <= (h1..hm) implies
                // (c1..cp) <= (h1..hp).
                let p = l.iter().zip(h).take_while(|(a, b)| a == b).count();
                eq_vals = l[..p].to_vec();
            }
            // Given the equalities, a condition on no further column compares equal
            // tuples: true for >= and <=, false for > and <.
            for c in [&mut lo, &mut hi] {
                if let Cond::Cmp { op, vals } = c {
                    if vals.len() == eq_vals.len() {
                        match op {
                            Op::Ge | Op::Le => *c = Cond::All,
                            Op::Gt | Op::Lt => return Ok(None),
                        }
                    }
                }
            }
        }
        let eq = eq_vals.len();
        let limited = limit < i64::MAX as usize;
        let shape = ScanShape {
            index,
            eq,
            lo: lo.shape(),
            hi: hi.shape(),
            forward,
            limited,
        };
        Ok(Some(ScanPlan {
            eq: eq_vals,
            lo,
            hi,
            limited,
            form,
            shape,
        }))
    }

    /// An update may not change a row's secondary keys (the `Worker::update` contract).
    pub fn check_update(&self, old: &[u8], new: &[u8]) -> api::Result<()> {
        for s in &self.def.secondary {
            let (mut a, mut b) = (Key::new(), Key::new());
            (s.key_of)(old, &mut a);
            (s.key_of)(new, &mut b);
            if a.as_bytes() != b.as_bytes() {
                return Err(api::Error::fatal(format!(
                    "update changed secondary key {} of table {}",
                    s.name,
                    self.name()
                )));
            }
        }
        Ok(())
    }

    /// The SQL column of each primary key part.
    pub fn pk_cols(&self) -> &[usize] {
        &self.pk
    }

    /// The SQL column of each part of `index`'s keys (as a scan reports them).
    pub fn index_cols(&self, index: u16) -> &[usize] {
        &self.indexes[index as usize].cols
    }

    /// The SQL columns [`TableMap::update_sql`] sets, in order.
    pub fn set_cols(&self) -> &[usize] {
        &self.set_cols
    }

    /// The SQL columns of [`TableMap::update_params`], in order.
    pub fn update_cols(&self) -> Vec<usize> {
        self.set_cols.iter().chain(&self.pk).copied().collect()
    }

    /// The secondary index's own part count (without the appended primary key).
    pub fn own_parts(&self, index: u16) -> usize {
        self.indexes[index as usize].own
    }
}

/// How a scan's bounds are written in SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanForm {
    /// Each bound one row-value comparison over the index's leading columns:
    /// `(c1, c2, c3) >= (l1, l2, l3) AND (c1, c2, c3) < (h1, h2, h3)`.
    RowValue,
    /// Equalities on the leading columns both bounds share, then per bound a plain
    /// comparison on the next column, and a row-value comparison over the columns after
    /// the equalities only when a bound has more than one of them:
    /// `c1 = l1 AND c2 = l2 AND c3 >= l3 AND c3 < h3`.
    Prefix,
}

impl Dialect {
    /// The form a dialect's scans are written in. PostgreSQL's B-tree ends a scan bounded
    /// by a row-value comparison on its first column only (TPC-C's Order-Line scan read
    /// the rest of the warehouse: 856 buffers); SQLite's planner bounds both ends of an
    /// index range by row values, so it keeps them (docs/design/sql-adapters.md).
    pub fn scan_form(self) -> ScanForm {
        match self {
            Dialect::Sqlite => ScanForm::RowValue,
            Dialect::Postgres => ScanForm::Prefix,
        }
    }
}

/// A planned scan ([`TableMap::plan_scan`]).
pub struct ScanPlan {
    /// The values of the leading index columns both bounds fix (`ScanForm::Prefix`).
    pub eq: Vec<Value>,
    /// The bounds; in `ScanForm::Prefix` a `Cmp` compares more than `eq.len()` columns
    /// and its first `eq.len()` values are `eq`.
    pub lo: Cond,
    pub hi: Cond,
    pub form: ScanForm,
    /// Whether the statement takes a LIMIT (the limit is below `i64::MAX`).
    pub limited: bool,
    /// What the statement's text depends on (within its table): a key for a cache of
    /// prepared scan statements.
    pub shape: ScanShape,
}

impl ScanPlan {
    /// The statement's parameters in order ([`TableMap::scan_sql`]), each with the
    /// position (in [`TableMap::index_cols`]) of the index column it is compared with;
    /// the limit, if any, comes after them.
    pub fn params(&self) -> Vec<(usize, &Value)> {
        let eq = self.eq.len();
        let mut v: Vec<(usize, &Value)> = self.eq.iter().enumerate().collect();
        for c in [&self.lo, &self.hi] {
            if let Cond::Cmp { vals, .. } = c {
                v.extend(vals.iter().enumerate().skip(eq));
            }
        }
        v
    }
}

/// The shape of a scan statement of one table: its text depends on nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScanShape {
    pub index: u16,
    /// Leading columns compared by equality.
    pub eq: usize,
    pub lo: (u8, usize),
    pub hi: (u8, usize),
    pub forward: bool,
    pub limited: bool,
}

/// A placeholder for parameter `n` of kind `k`.
pub fn placeholder(d: Dialect, k: Kind, n: usize) -> String {
    match d {
        Dialect::Sqlite => format!("?{n}"),
        Dialect::Postgres => match k {
            Kind::I16 => format!("${n}::int2"),
            Kind::I32 => format!("${n}::int4"),
            Kind::I64 => format!("${n}::int8"),
            Kind::Decimal { scale: 0, .. } => format!("${n}::int8::numeric"),
            Kind::Decimal { scale, .. } => {
                format!("(${n}::int8 * 0.{}1)", "0".repeat(scale as usize - 1))
            }
            Kind::Text => format!("${n}::text"),
            Kind::Bytes => format!("${n}::bytea"),
        },
    }
}

/// PostgreSQL: an array parameter `n` of the element type a column of `kind` is bound
/// as (decimals as integer units, as [`placeholder`]).
pub fn array_placeholder(k: Kind, n: usize) -> String {
    let ty = match k {
        Kind::I16 => "int2",
        Kind::I32 => "int4",
        Kind::I64 | Kind::Decimal { .. } => "int8",
        Kind::Text => "text",
        Kind::Bytes => "bytea",
    };
    format!("${n}::{ty}[]")
}

/// PostgreSQL: the column value of an element `expr` of an array bound by
/// [`array_placeholder`] (decimal units scaled back).
pub fn from_array(k: Kind, expr: &str) -> String {
    match k {
        Kind::Decimal { scale: 0, .. } => format!("{expr}::numeric"),
        Kind::Decimal { scale, .. } => {
            format!("({expr} * 0.{}1)", "0".repeat(scale as usize - 1))
        }
        _ => expr.to_string(),
    }
}

fn sqlite_type(t: SqlType) -> &'static str {
    match Kind::of_type(t) {
        Kind::Text => "TEXT",
        Kind::Bytes => "BLOB",
        // Decimals as their integer count of units: exact, and SQLite has no
        // fixed-point type (its NUMERIC affinity would store reals).
        _ => "INTEGER",
    }
}

fn pg_type(t: SqlType) -> String {
    match t {
        SqlType::Decimal {
            precision, scale, ..
        } => format!("NUMERIC({precision},{scale})"),
        // VARCHAR for fixed-length strings too: CHAR(n) pads with blanks and compares
        // ignoring them. The "C" collation compares bytes, as the keys do.
        SqlType::Char(n) | SqlType::VarChar(n) => format!("VARCHAR({n}) COLLATE \"C\""),
        SqlType::Timestamp => "BIGINT".into(),
        SqlType::Binary(_) => "BYTEA".into(),
        t => match Kind::of_type(t) {
            Kind::I16 => "SMALLINT".into(),
            Kind::I32 => "INTEGER".into(),
            _ => "BIGINT".into(),
        },
    }
}

/// Compare two values as SQL does with the types above (integers numerically, strings
/// and bytes byte-wise).
pub fn cmp_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) | (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        _ => panic!("comparing values of different kinds: {a:?} and {b:?}"),
    }
}
