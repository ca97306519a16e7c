//! SQLite's code (the bundled amalgamation, run inside oltpscope's process) by
//! component.
//!
//! Owns: which of SQLite's source files is which component (`FILES`), the name prefixes
//! of its naming convention (`PREFIXES`, e.g. `sqlite3Btree*`), and the Rust code that
//! drives it (`RUST`). Every function of the amalgamation is listed with its source file
//! in `data/sqlite-functions.txt` (generated from the amalgamation by
//! `tools/sqlite_functions.py`), so a static helper such as `balance_nonroot` is charged
//! by the file it is written in, not guessed from its name. A function of a file
//! without a component (the extensions: FTS, R-tree, JSON, sessions, Windows) matches no
//! rule and is listed as unmapped by the reports.

/// SQLite's source files and their components. The storage-manager names are the ones
/// of oltpscope's own engines (`btree`, `bpool`, `log`, `lock`, `latch`, `xct`); the rest
/// name what SQLite has and they do not: the VDBE (`executor`), the SQL compiler
/// (`prepare`), the OS layer (`io`), the allocator (`memory`), helpers (`util`) and the
/// connection-level API (`connection`).
pub const FILES: &[(&str, &str)] = &[
    ("btree.c", "btree"),
    ("btmutex.c", "btree"),
    ("backup.c", "btree"),
    // The pager and its page cache are SQLite's buffer pool.
    ("pager.c", "bpool"),
    ("pcache.c", "bpool"),
    ("pcache1.c", "bpool"),
    ("bitvec.c", "bpool"),
    ("memjournal.c", "bpool"),
    ("memdb.c", "bpool"),
    ("wal.c", "log"),
    ("mutex.c", "latch"),
    ("mutex_unix.c", "latch"),
    ("mutex_noop.c", "latch"),
    ("os.c", "io"),
    ("os_unix.c", "io"),
    ("os_kv.c", "io"),
    ("vdbe.c", "executor"),
    ("vdbeaux.c", "executor"),
    ("vdbeapi.c", "executor"),
    ("vdbemem.c", "executor"),
    ("vdbesort.c", "executor"),
    ("vdbeblob.c", "executor"),
    ("vdbetrace.c", "executor"),
    ("vdbevtab.c", "executor"),
    ("rowset.c", "executor"),
    ("func.c", "executor"),
    ("date.c", "executor"),
    // The tokenizer, parser, name resolution and code generators (the planner
    // included: `where*.c` chooses the indexes while it generates the program).
    ("tokenize.c", "prepare"),
    ("parse.c", "prepare"),
    ("complete.c", "prepare"),
    ("prepare.c", "prepare"),
    ("resolve.c", "prepare"),
    ("walker.c", "prepare"),
    ("expr.c", "prepare"),
    ("select.c", "prepare"),
    ("where.c", "prepare"),
    ("wherecode.c", "prepare"),
    ("whereexpr.c", "prepare"),
    ("insert.c", "prepare"),
    ("update.c", "prepare"),
    ("upsert.c", "prepare"),
    ("delete.c", "prepare"),
    ("trigger.c", "prepare"),
    ("window.c", "prepare"),
    ("fkey.c", "prepare"),
    ("build.c", "prepare"),
    ("callback.c", "prepare"),
    ("alter.c", "prepare"),
    ("attach.c", "prepare"),
    ("auth.c", "prepare"),
    ("analyze.c", "prepare"),
    ("pragma.c", "prepare"),
    ("vacuum.c", "prepare"),
    ("vtab.c", "prepare"),
    ("treeview.c", "prepare"),
    ("malloc.c", "memory"),
    ("mem0.c", "memory"),
    ("mem1.c", "memory"),
    ("mem2.c", "memory"),
    ("mem3.c", "memory"),
    ("mem5.c", "memory"),
    ("fault.c", "memory"),
    ("util.c", "util"),
    ("utf.c", "util"),
    ("printf.c", "util"),
    ("hash.c", "util"),
    ("random.c", "util"),
    ("global.c", "util"),
    ("status.c", "util"),
    ("threads.c", "util"),
    ("ctime.c", "util"),
    ("opcodes.c", "util"),
    ("main.c", "connection"),
    ("legacy.c", "connection"),
    ("table.c", "connection"),
    ("loadext.c", "connection"),
    ("notify.c", "connection"),
];

/// Name prefixes of SQLite's convention, matched before the per-file list (first match
/// wins): the file-local names of a component go with it even where the list missed a
/// definition. Only prefixes no other file uses: `sqlite3Wal*` and `wal*` would take the
/// parser's tree walkers (`sqlite3WalkExpr`, `walkWindowList`), `unix*` the date
/// function `unixepochFunc`; wal.c and os_unix.c go by the per-file list instead. The transaction steps of the B-tree and the pager come first: they are
/// the transaction manager's work (`xct`), as in oltpscope's engines.
pub const PREFIXES: &[(&str, &str)] = &[
    ("sqlite3BtreeBeginTrans", "xct"),
    ("sqlite3BtreeCommit*", "xct"),
    ("sqlite3BtreeRollback", "xct"),
    ("sqlite3PagerBegin", "xct"),
    ("sqlite3PagerCommitPhase*", "xct"),
    ("sqlite3PagerRollback", "xct"),
    ("sqlite3VdbeHalt", "xct"),
    ("vdbeCommit", "xct"),
    // File locks (POSIX advisory locks on the database, the WAL index's shared-memory
    // locks) are SQLite's lock manager; its in-memory table locks are the B-tree's.
    ("unixLock", "lock"),
    ("unixUnlock", "lock"),
    ("posixUnlock", "lock"),
    ("unixShmLock", "lock"),
    ("unixFileLock", "lock"),
    ("unixCheckReservedLock", "lock"),
    ("osSetPosixAdvisoryLock", "lock"),
    ("walLock*", "lock"),
    ("walUnlock*", "lock"),
    ("walBusyLock", "lock"),
    ("sqlite3Btree*", "btree"),
    ("btree*", "btree"),
    ("sqlite3Pager*", "bpool"),
    ("pager*", "bpool"),
    ("sqlite3Pcache*", "bpool"),
    ("sqlite3PCache*", "bpool"),
    ("pcache*", "bpool"),
    ("sqlite3Vdbe*", "executor"),
    ("vdbe*", "executor"),
    ("sqlite3_step", "executor"),
    ("sqlite3_bind_*", "executor"),
    ("sqlite3_column_*", "executor"),
    ("sqlite3_reset", "executor"),
    ("sqlite3_prepare*", "prepare"),
    ("sqlite3Prepare*", "prepare"),
    ("sqlite3RunParser", "prepare"),
    ("sqlite3Parser*", "prepare"),
    ("yy_*", "prepare"),
    ("sqlite3Expr*", "prepare"),
    ("sqlite3Select*", "prepare"),
    ("sqlite3Where*", "prepare"),
    ("sqlite3_mutex_*", "latch"),
    ("pthreadMutex*", "latch"),
    ("robust_*", "io"),
    ("seekAndRead*", "io"),
    ("seekAndWrite*", "io"),
    ("sqlite3Os*", "io"),
    ("sqlite3Malloc*", "memory"),
    ("sqlite3DbMalloc*", "memory"),
    ("sqlite3DbFree*", "memory"),
    ("sqlite3_malloc*", "memory"),
    ("sqlite3_free", "memory"),
    ("sqlite3MemMalloc", "memory"),
    ("sqlite3MemFree", "memory"),
];

/// The Rust code between the kits and SQLite: the adapter, the SQL mapping and
/// rusqlite (the bindings).
pub const RUST: &[(&str, &str)] = &[
    ("::engine_sqlite::", "adapter"),
    ("::sqlmap::", "adapter"),
    ("::rusqlite::", "adapter"),
    ("::libsqlite3_sys::", "adapter"),
    // The typed rows the SQL adapters convert to and from columns.
    ("::api::typed::", "adapter"),
];

/// `name file` lines: every function of the amalgamation and the file it is defined in.
pub const FUNCTIONS: &str = include_str!("../data/sqlite-functions.txt");

/// The source file of each function of the amalgamation (a name defined in several
/// files, under different `#if`s, gives several pairs).
pub fn functions() -> impl Iterator<Item = (&'static str, &'static str)> {
    FUNCTIONS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once(' '))
}

/// The component of a source file of SQLite's, if it has one.
pub fn file_component(file: &str) -> Option<&'static str> {
    FILES.iter().find(|(f, _)| *f == file).map(|(_, c)| *c)
}

/// SQLite's rules, in matching order: the Rust side, the prefixes, then every function
/// of a file with a component, by its exact name.
pub fn rules() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = RUST
        .iter()
        .chain(PREFIXES)
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    for (name, file) in functions() {
        if let Some(c) = file_component(file) {
            v.push((name.to_string(), c.to_string()));
        }
    }
    v
}
