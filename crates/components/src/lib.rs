//! The one map from code to storage-manager components, used by `simulate` (cache misses
//! by component) and `profile` (time by component), so both name the same things.
//!
//! Owns: the default ordered rule table (module-path pattern -> component name), the
//! compiled table that classifies a demangled function name, and the reading of a
//! demangled name as the module path it is classified by; and ([`extents`]) which
//! addresses of an object file a sized symbol covers, so both symbolizers refuse the same
//! names. Knows nothing of samples or traces: callers resolve addresses to names first
//! (with `addr2line`).
//!
//! Two kinds of rule: a pattern holding `::` is looked for in `::` + a Rust module path
//! (oltpscope's own code); a pattern without `::` names C functions (the code of SQLite
//! and PostgreSQL): `prefix*` matches a C name that starts with `prefix`, anything else
//! matches that exact name. C rules never match a Rust path and Rust rules never a C
//! name (a C name holds no `::`), so one table can hold both. The systems' own tables
//! ([`sqlite`], [`postgres`]) come before the default table for their engine
//! ([`rules_for`]).

pub mod extents;
pub mod postgres;
pub mod sqlite;

use std::collections::HashMap;

/// The component tables of the external systems, by engine name: one line per system.
/// A system's component rules: (pattern, component) pairs.
type Rules = fn() -> Vec<(String, String)>;
const SYSTEMS: &[(&str, Rules)] = &[("sqlite", sqlite::rules), ("postgres", postgres::rules)];

/// The rule table for code run by `engine`: the system's own rules (SQLite's, the
/// PostgreSQL server's) first, then the default table (oltpscope's own code, which runs
/// with every engine).
pub fn rules_for(engine: &str) -> Vec<(String, String)> {
    let mut v = SYSTEMS
        .iter()
        .find(|(name, _)| *name == engine)
        .map_or_else(Vec::new, |(_, rules)| rules());
    v.extend(default_components());
    v
}

/// Whether the engine's time is spent in another system's code with a table of its own.
pub fn has_system_rules(engine: &str) -> bool {
    SYSTEMS.iter().any(|(name, _)| *name == engine)
}

/// A C function name as a symbol table gives it, without GCC's clone suffixes
/// (`foo.isra.0`, `foo.part.1`, `foo.constprop.0`, `foo.cold`).
pub fn c_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// The default component table, in matching order.
pub fn default_components() -> Vec<(String, String)> {
    [
        // The query executor's operators (crate `exec`, one module each), named apart
        // from the `scan` *operation* (an `api::Session` call, which a `q-scan` makes).
        // First, so no engine pattern below (`::hash::`, `::index::`) can take them.
        ("::exec::scan::", "q-scan"),
        ("::exec::join::", "hash-join"),
        ("::exec::aggregate::", "hash-agg"),
        ("::exec::sort::", "sort"),
        // Datums and expressions: work for the operator calling them ([`CALLBACK`]).
        ("::exec::expr::", "q-expr"),
        ("::exec::", "exec"),
        ("::btree::", "btree"),
        ("::bpool::", "bpool"),
        ("::lock::", "lock"),
        ("::log::", "log"),
        ("::heap::", "heap"),
        ("::latch::", "latch"),
        ("::xct::", "xct"),
        ("::catalog::", "catalog"),
        ("::hash::", "index"),
        ("::index::", "index"),
        ("::occ::", "occ"),
        // The mvcc engine: version chains, commit validation, garbage collection.
        ("::version::", "version"),
        ("::validate::", "validate"),
        ("::gc::", "gc"),
        // The partitioned engine: owning partitions (its executors' place).
        ("::partition::", "partition"),
        ("::rbtree::", "rbtree"),
        ("::epoch::", "epoch"),
        ("::recovery::", "recovery"),
        // Checkpoints of every engine (the partitioned engine's is a snapshot) and
        // the shared value log's checkpoint file.
        ("::checkpoint::", "checkpoint"),
        ("::snapshot::", "checkpoint"),
        // The partitioned engine's command log and durable mark.
        ("::durable::", "log"),
        ("::record::", "record"),
        // The memory engine's record allocator and its huge-page reservations.
        ("::arena::", "record"),
        ("::huge::", "memory"),
        // The disk engine's page format and checksums, written and read by the pool.
        ("::page::", "bpool"),
        // An optimistic transaction's node set: the commit's check against phantoms.
        ("::nodeset::", "validate"),
        // The in-memory engines' shared log files (after `::checkpoint::`, which takes
        // the value log's checkpoint file).
        ("::logfile::", "log"),
        ("::logdir::", "log"),
        ("::valuelog::", "log"),
        ("::workloads::", "workload"),
        ("::api::session", "api"),
        ("::driver::", "driver"),
        // Last: what an engine crate's modules above do not take (its root: opening,
        // recovery's driving, shutdown, the shared state), the indexes' crate root, and
        // the files and disks of `storage` (the I/O under every durable engine).
        ("::engine_disk::", "engine"),
        ("::engine_memory::", "engine"),
        ("::engine_mvcc::", "engine"),
        ("::engine_partitioned::", "engine"),
        ("::engine_serial::", "engine"),
        ("::memindex::", "index"),
        ("::storage::", "io"),
    ]
    .iter()
    .map(|(p, n)| (p.to_string(), n.to_string()))
    .collect()
}

pub const OTHER: &str = "other";

/// The query operators' components, by the default table's names and PostgreSQL's
/// (`postgres::RULES` maps its executor nodes to the same names).
pub const OPERATORS: &[&str] = &["q-scan", "hash-join", "hash-agg", "sort"];

/// Components whose code works for the query operator that calls it: expression and
/// datum code (`q-expr`), and a plan's closures (`workload` code named `{{closure}}`:
/// the predicate and projection a scan runs on each row the engine passes it, a sort's
/// or join's key code). See [`ComponentTable::charge_chain`].
pub const CALLBACK: &str = "q-expr";

/// Ordered `pattern -> component` rules; index 0 is always `other`.
pub struct ComponentTable {
    names: Vec<String>,
    /// Rust path patterns and C prefix patterns: (rule number, pattern, component).
    rules: Vec<(usize, Rule, u16)>,
    /// Exact C names: name -> (rule number of its first rule, component).
    exact: HashMap<String, (usize, u16)>,
}

enum Rule {
    /// Looked for in `::` + the module path.
    Path(String),
    /// A C name starting with the first string and ending with the second (a pattern
    /// with one `*`).
    CGlob(String, String),
}

impl Rule {
    fn matches_c(&self, name: &str) -> bool {
        match self {
            Rule::CGlob(p, s) => {
                name.len() >= p.len() + s.len()
                    && name.starts_with(p.as_str())
                    && name.ends_with(s.as_str())
            }
            Rule::Path(_) => false,
        }
    }
}

impl ComponentTable {
    pub fn new(rules: &[(String, String)]) -> ComponentTable {
        let mut names = vec![OTHER.to_string()];
        let mut out = Vec::new();
        let mut exact = HashMap::new();
        for (pat, name) in rules {
            let idx = match names.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    names.push(name.clone());
                    names.len() - 1
                }
            };
            let number = out.len() + exact.len();
            if pat.contains("::") {
                out.push((number, Rule::Path(pat.clone()), idx as u16));
            } else if let Some((prefix, suffix)) = pat.split_once('*') {
                let glob = Rule::CGlob(prefix.to_string(), suffix.to_string());
                out.push((number, glob, idx as u16));
            } else {
                exact.entry(pat.clone()).or_insert((number, idx as u16));
            }
        }
        ComponentTable {
            names,
            rules: out,
            exact,
        }
    }

    /// Whether the C name `name` matches rule `pattern` (a C pattern: `a*b` or exact).
    pub fn c_pattern_matches(pattern: &str, name: &str) -> bool {
        match pattern.split_once('*') {
            Some((p, s)) => Rule::CGlob(p.into(), s.into()).matches_c(name),
            None => pattern == name,
        }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Component of a demangled function name; path patterns are matched against
    /// `::` + name so `::btree::` also matches a top-level `btree::f`; a name without
    /// `::` is a C function, matched by the C rules (clone suffixes removed).
    pub fn classify(&self, function: &str) -> u16 {
        if let Some((a, b)) = extents::gap_neighbours(function) {
            // Code between two symbols: a rule naming it, else theirs if both have the
            // same component.
            if let Some(&(_, i)) = self.exact.get(function) {
                return i;
            }
            let (ca, cb) = (self.classify_demangled(a), self.classify_demangled(b));
            return if ca == cb { ca } else { 0 };
        }
        if function.contains("::") {
            let s = format!("::{function}");
            return self
                .rules
                .iter()
                .find(|(_, r, _)| matches!(r, Rule::Path(p) if s.contains(p.as_str())))
                .map_or(0, |(_, _, i)| *i);
        }
        let name = c_name(function);
        let by_prefix = self
            .rules
            .iter()
            .find(|(_, r, _)| r.matches_c(name))
            .map(|(n, _, i)| (*n, *i));
        let by_name = self.exact.get(name).copied();
        match (by_prefix, by_name) {
            (Some(a), Some(b)) => a.min(b).1,
            (Some((_, i)), None) | (None, Some((_, i))) => i,
            (None, None) => 0,
        }
    }

    /// Which of a chain of frames (demangled names, innermost first: the functions
    /// inlined at an address, then its callers where a stack is known) decides the
    /// chain's component, and that component; `None` if no frame classifies.
    ///
    /// The first frame the map classifies decides (callee-based: the engine's B+tree
    /// code under a scan is `btree`; library code is skipped, so it counts for its
    /// caller), with one exception: code that a query operator calls back for each row
    /// (a plan's `{{closure}}`, classified `workload`, and `q-expr`'s datum and
    /// expression code) counts for that operator when the next classified frame
    /// outward is an operator ([`OPERATORS`]): evaluating Q6's predicate on a row the
    /// engine handed to a scan is scan work, and hashing a key is the join's. When the
    /// next classified frame is something else (`api` around a TPC-C transaction
    /// body's closure), the callback's own component stands.
    pub fn charge_chain<'a>(
        &self,
        frames: impl IntoIterator<Item = &'a str>,
    ) -> Option<(usize, u16)> {
        let mut pending: Option<(usize, u16)> = None;
        for (i, name) in frames.into_iter().enumerate() {
            let c = self.classify_demangled(name);
            if c == 0 {
                continue;
            }
            let comp = self.names[c as usize].as_str();
            let callback = comp == CALLBACK || (comp == "workload" && name.contains("{{closure}}"));
            match pending {
                None if callback => pending = Some((i, c)),
                None => return Some((i, c)),
                Some(_) if callback => {}
                Some(p) => {
                    return Some(if OPERATORS.contains(&comp) { (i, c) } else { p });
                }
            }
        }
        pending
    }

    /// Component of a demangled function name as it comes from the symbols: read as its
    /// module path, and `other` for standard-library code (which is charged to the
    /// component of the engine code around it by the caller).
    pub fn classify_demangled(&self, name: &str) -> u16 {
        if extents::gap_neighbours(name).is_some() {
            return self.classify(name);
        }
        let path = module_path(name);
        if is_std(&path) {
            0
        } else {
            self.classify(&path)
        }
    }
}

/// Whether an object file is a shared library (`lib*.so*`, the dynamic loader `ld-*`),
/// by its file name: its code is library code.
pub fn is_shared_library(file_name: &str) -> bool {
    file_name.starts_with("lib") && file_name.contains(".so") || file_name.starts_with("ld-")
}

/// oltpscope's own crates (the workspace's members, by crate name). Rust code of any
/// other crate (the standard library, hash functions, random number generators) is
/// library code. `tests/system_maps.rs` checks the list against the workspace.
pub const OWN_CRATES: &[&str] = &[
    "api",
    "cachesim",
    "components",
    "conformance",
    "crashtest",
    "driver",
    "engine_disk",
    "engine_memory",
    "engine_mvcc",
    "engine_partitioned",
    "engine_postgres",
    "engine_serial",
    "engine_sqlite",
    "exec",
    "lab",
    "memindex",
    "oltpscope",
    "pgserver",
    "probe",
    "profiler",
    "rt",
    "runspec",
    "sqlmap",
    "storage",
    "tracer",
    "txnstats",
    "workloads",
];

/// Library code by its name (a demangled function name): Rust code of crates other than
/// oltpscope's own (the standard library, dependencies, methods of primitive types) and
/// the C allocator linked into oltpscope's binary (mimalloc's `mi_*`, `_mi_*`,
/// `__mi_*`). Like a shared library's code (libc), it has no component of its own and
/// counts for the code that called it.
pub fn is_library_code(name: &str) -> bool {
    if !name.contains("::") {
        return ["mi_", "_mi_", "__mi_"].iter().any(|p| name.starts_with(p));
    }
    let path = module_path(name);
    let krate = path.split("::").next().unwrap_or("");
    !OWN_CRATES.contains(&krate)
}

/// Rust standard-library code (`core::slice::index::...`, `<alloc::vec::Vec<T> as ..>`)
/// inlined into a function is charged to that function's component, so its own module
/// path (which may contain `::index::` or `::hash::`) must not classify it. Takes a
/// `module_path`.
pub fn is_std(path: &str) -> bool {
    ["core::", "alloc::", "std::"]
        .iter()
        .any(|p| path.starts_with(p))
}

/// Removes generic argument lists: `a::B<c::D>::f` -> `a::B::f` (`->` is not a bracket).
fn strip_generics(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    let mut prev = ' ';
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        prev = c;
    }
    out
}

/// The module path a demangled function name is classified by: generic arguments
/// removed, `<T as Trait>::f` read as `T::f` (as `Trait::f` when T is a primitive, slice,
/// tuple or pointer type), references and pointers looked through.
pub fn module_path(name: &str) -> String {
    let name = name.trim();
    if !name.starts_with('<') {
        return strip_generics(name);
    }
    let (mut depth, mut as_at, mut end) = (0usize, None, None);
    let mut prev = ' ';
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    end = Some(i);
                    break;
                }
            }
            _ => {}
        }
        if depth == 1 && as_at.is_none() && name[i..].starts_with(" as ") {
            as_at = Some(i);
        }
        prev = c;
    }
    let Some(end) = end else {
        return strip_generics(name);
    };
    let (self_ty, trait_ty) = match as_at {
        Some(a) => (&name[1..a], Some(&name[a + 4..end])),
        None => (&name[1..end], None),
    };
    let mut t = self_ty.trim();
    for p in ["&", "*mut ", "*const ", "mut ", "dyn "] {
        while let Some(r) = t.strip_prefix(p) {
            t = r.trim_start();
        }
    }
    let plain = strip_generics(t);
    let base = if plain.contains("::") && !plain.starts_with(['[', '(']) {
        plain
    } else {
        trait_ty.map_or(plain, module_path)
    };
    base + &strip_generics(&name[end + 1..])
}

/// The name a symbolizer reports for one (possibly inlined) frame: the demangled
/// `function` when it holds its module path (full debug information, the symbol table),
/// else, for Rust code, the short name DWARF gives under `debug = "line-tables-only"`
/// (`fix`, `get<u32>`) prefixed with the module path of the source `file` that holds its
/// code ([`source_module`]): `engine_disk::bpool::frame::fix`. The folder layout is the
/// component map, so the file says as much as the namespace did. C names (SQLite's,
/// PostgreSQL's) and names without a known file are returned as they are.
pub fn frame_name(function: &str, file: Option<&str>) -> String {
    // A short name may still hold paths in its generic arguments (`get<a::B>`).
    if function.starts_with('<') || strip_generics(function).contains("::") {
        return function.to_string();
    }
    match file.and_then(source_module) {
        Some(m) => format!("{m}::{function}"),
        None => function.to_string(),
    }
}

/// The module path of a Rust source file, by the Cargo layout `<crate>/src/<modules>.rs`
/// (the last `src` in the path): a workspace member under `crates/` by its crate name
/// (`crates/engine-disk/src/bpool/frame.rs` -> `engine_disk::bpool::frame`; the binary's
/// `crates/cli` is `oltpscope`), a registry crate without its version
/// (`hashbrown-0.15.2/src/raw/mod.rs` -> `hashbrown::raw`), the standard library by its
/// crate (`library/core/src/slice/mod.rs` -> `core::slice`). `None` for anything else (C
/// sources, build scripts' generated files, paths without `src`).
pub fn source_module(file: &str) -> Option<String> {
    let file = file.strip_suffix(".rs")?;
    let parts: Vec<&str> = file.split(['/', '\\']).collect();
    let src = parts.iter().rposition(|p| *p == "src")?;
    let dir = *parts.get(src.checked_sub(1)?)?;
    let krate = if dir == "cli" && src >= 2 && parts[src - 2] == "crates" {
        "oltpscope".to_string()
    } else {
        // A registry crate's directory ends in `-<version>`.
        let name = match dir.rsplit_once('-') {
            Some((n, v)) if v.starts_with(|c: char| c.is_ascii_digit()) => n,
            _ => dir,
        };
        name.replace('-', "_")
    };
    if krate.is_empty() {
        return None;
    }
    let mut path = krate;
    let mods = &parts[src + 1..];
    for (i, m) in mods.iter().enumerate() {
        let last = i + 1 == mods.len();
        // A crate root and a directory module's `mod.rs` add no module of their own.
        if last && (*m == "mod" || (i == 0 && (*m == "lib" || *m == "main"))) {
            break;
        }
        path.push_str("::");
        path.push_str(m);
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_dwarf_names_take_their_source_file_s_module() {
        for (file, module) in [
            ("/w/crates/engine-disk/src/bpool/frame.rs", "engine_disk::bpool::frame"),
            ("crates/engine-disk/src/lib.rs", "engine_disk"),
            ("/w/crates/cli/src/main.rs", "oltpscope"),
            ("/w/crates/cli/src/simulate.rs", "oltpscope::simulate"),
            ("/w/crates/memindex/src/btree/mod.rs", "memindex::btree"),
            (
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hashbrown-0.15.2/src/raw/mod.rs",
                "hashbrown::raw",
            ),
            (
                "/rustc/59807616e1fa/library/core/src/slice/mod.rs",
                "core::slice",
            ),
            ("/home/u/crates/x/crates/api/src/session.rs", "api::session"),
        ] {
            assert_eq!(source_module(file).as_deref(), Some(module), "{file}");
        }
        for none in ["/x/sqlite3/sqlite3.c", "/x/build/out/bindgen.rs", "main.rs"] {
            assert_eq!(source_module(none), None, "{none}");
        }
        let t = ComponentTable::new(&default_components());
        let comp = |f: &str, file: &str| {
            t.names()[t.classify_demangled(&frame_name(f, Some(file))) as usize].clone()
        };
        assert_eq!(
            comp("fix", "/w/crates/engine-disk/src/bpool/frame.rs"),
            "bpool"
        );
        assert_eq!(comp("get<u64>", "/w/crates/memindex/src/btree.rs"), "btree");
        assert_eq!(
            frame_name(
                "get<engine_memory::catalog::RecKeys>",
                Some("/w/crates/memindex/src/hash.rs")
            ),
            "memindex::hash::get<engine_memory::catalog::RecKeys>"
        );
        assert_eq!(
            comp("next<u64>", "/rustc/h/library/core/src/iter/range.rs"),
            OTHER
        );
        // A full name keeps its own path; C names are left alone.
        assert_eq!(
            frame_name(
                "engine_memory::occ::commit",
                Some("/w/crates/api/src/session.rs")
            ),
            "engine_memory::occ::commit"
        );
        assert_eq!(
            frame_name("sqlite3BtreeNext", Some("/x/sqlite3.c")),
            "sqlite3BtreeNext"
        );
        assert_eq!(frame_name("get", None), "get");
    }

    #[test]
    fn library_code_is_told_by_its_name() {
        for lib in [
            "mi_page_malloc_zero",
            "_mi_page_map_at",
            "<mimalloc::MiMalloc as core::alloc::global::GlobalAlloc>::dealloc",
            "core::ptr::drop_in_place<alloc::vec::Vec<u8>>",
            "<alloc::vec::Vec<T> as core::clone::Clone>::clone",
            "<ahash::fallback_hash::AHasher as core::hash::Hasher>::write",
            "<u64>::wrapping_add",
            "__mi_prim_thread_id",
        ] {
            assert!(is_library_code(lib), "{lib}");
        }
        for own in [
            "sqlite3BtreeNext",
            "mixed_case",
            "engine_memory::occ::commit",
            "<engine_disk::btree::Tree as api::Index>::get",
            "oltpscope::commands::run_with",
            "workloads::tpcc::new_order::{{closure}}",
        ] {
            assert!(!is_library_code(own), "{own}");
        }
    }

    #[test]
    fn default_table_classifies_module_paths() {
        let t = ComponentTable::new(&default_components());
        let name = |f: &str| t.names()[t.classify(f) as usize].clone();
        assert_eq!(name("engine_disk::btree::BTree::probe"), "btree");
        assert_eq!(name("btree::work"), "btree");
        assert_eq!(
            name("<engine_memory::bpool::Pool as core::ops::Drop>::drop"),
            "bpool"
        );
        assert_eq!(name("engine_disk::lock::LockManager::acquire"), "lock");
        assert_eq!(name("parking_lot::raw_mutex::RawMutex::lock_slow"), "other");
        assert_eq!(name("memindex::hash::Table::get"), "index");
        assert_eq!(name("workloads::tpcc::new_order"), "workload");
        assert_eq!(name("api::session::Session::get"), "api");
        assert_eq!(name("core::slice::sort::quicksort"), "other");
        // Every engine module has a component (none falls into "other").
        assert_eq!(
            name("engine_disk::checkpoint::control::Control::write"),
            "checkpoint"
        );
        assert_eq!(
            name("storage::valuelog::checkpoint::Writer::put"),
            "checkpoint"
        );
        assert_eq!(name("engine_partitioned::snapshot::write"), "checkpoint");
        assert_eq!(name("engine_partitioned::durable::Mark::advance"), "log");
        assert_eq!(name("memindex::arena::Arena::alloc"), "record");
        assert_eq!(name("engine_memory::huge::reserve"), "memory");
        assert_eq!(name("engine_disk::page::verify"), "bpool");
        assert_eq!(name("memindex::nodeset::NodeSet::unchanged"), "validate");
        assert_eq!(name("storage::logfile::Watermark::advance"), "log");
        assert_eq!(name("storage::sim::SimFile::write_at"), "io");
        assert_eq!(name("engine_disk::db::Inner::begin"), "engine");
        assert_eq!(name("engine_memory::MemoryEngine::open"), "engine");
    }

    /// The operators of `exec` by module; names recorded from a memory-engine TPC-H
    /// profile (release build, `debug = "line-tables-only"`: short names prefixed with
    /// their source file's module).
    #[test]
    fn query_operators_are_components() {
        let t = ComponentTable::new(&default_components());
        let name = |f: &str| t.names()[t.classify_demangled(f) as usize].clone();
        assert_eq!(name("exec::scan::scan_each::{{closure}}"), "q-scan");
        assert_eq!(name("exec::join::hash_join"), "hash-join");
        assert_eq!(name("exec::aggregate::Aggregator::add"), "hash-agg");
        assert_eq!(name("<exec::aggregate::Aggregator>::finish"), "hash-agg");
        assert_eq!(name("exec::sort::compare"), "sort");
        assert_eq!(name("exec::sort::top_n"), "sort");
        assert_eq!(
            name("<exec::expr::Datum as core::hash::Hash>::hash"),
            "q-expr"
        );
        assert_eq!(name("exec::sql::query_rows"), "exec");
        for op in OPERATORS {
            assert!(t.names().iter().any(|n| n == op), "{op}");
        }
    }

    #[test]
    fn an_operator_s_callbacks_count_for_the_operator() {
        let t = ComponentTable::new(&default_components());
        let charged = |frames: &[&str]| {
            t.charge_chain(frames.iter().copied())
                .map(|(i, c)| (i, t.names()[c as usize].clone()))
        };
        // Q6's predicate inlined into the scan's callback, which the engine calls.
        let q6 = [
            "workloads::tpch::queries::q06::plan::{{closure}}",
            "exec::scan::scan::{{closure}}",
            "exec::scan::scan_each::{{closure}}",
            "engine_memory::btree::Tree::scan",
            "api::session::Session::scan",
        ];
        assert_eq!(charged(&q6), Some((1, "q-scan".into())));
        // Library code inside the predicate (a slice copy) is skipped as before.
        let mut with_lib = vec!["core::slice::copy_from_slice"];
        with_lib.extend(q6);
        assert_eq!(charged(&with_lib), Some((2, "q-scan".into())));
        // A datum's hash inside the join: the join's.
        let join = [
            "<exec::expr::Datum as core::hash::Hash>::hash",
            "hashbrown::map::HashMap::get",
            "exec::join::hash_join",
            "workloads::tpch::queries::q03::plan",
        ];
        assert_eq!(charged(&join), Some((2, "hash-join".into())));
        // The engine's own code under a scan is the engine's (callee-based).
        let btree = [
            "engine_memory::btree::Tree::next",
            "engine_memory::btree::Tree::scan",
            "exec::scan::scan_each",
        ];
        assert_eq!(charged(&btree), Some((0, "btree".into())));
        // A callback not called by an operator keeps its component: TPC-C's body.
        let tpcc = [
            "workloads::tpcc::new_order::{{closure}}",
            "api::session::Session::run",
        ];
        assert_eq!(charged(&tpcc), Some((0, "workload".into())));
        // A plan's own (non-closure) code is the workload's, even under a sort.
        let plan = ["workloads::tpch::queries::q01::plan", "exec::sort::sort"];
        assert_eq!(charged(&plan), Some((0, "workload".into())));
        // A callback with nothing classified outside it (no stack: `simulate`).
        assert_eq!(
            charged(&["exec::expr::Expr::eval"]),
            Some((0, "q-expr".into()))
        );
        assert_eq!(charged(&["core::ptr::drop_in_place"]), None);
    }

    /// The module path of each source file of the storage engines' crates (`engine-*`
    /// but the SQL systems', which have tables of their own, `memindex`, `storage`), as
    /// a function in it demangles: `engine_disk::lock::table::f`.
    fn engine_module_paths() -> Vec<String> {
        let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&crates).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let ours = name.starts_with("engine-")
                && !["engine-sqlite", "engine-postgres"].contains(&name.as_str());
            if !(ours || name == "memindex" || name == "storage") {
                continue;
            }
            let src = crates.join(&name).join("src");
            let mut dirs = vec![src.clone()];
            while let Some(d) = dirs.pop() {
                for e in std::fs::read_dir(&d).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        dirs.push(p);
                        continue;
                    }
                    let rel = p.strip_prefix(&src).unwrap().with_extension("");
                    let mut parts: Vec<String> = rel
                        .iter()
                        .map(|c| c.to_string_lossy().into_owned())
                        .collect();
                    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                        parts.pop();
                    }
                    if parts.last().is_some_and(|l| l == "tests") {
                        continue;
                    }
                    let krate = name.replace('-', "_");
                    out.push(
                        [krate]
                            .into_iter()
                            .chain(parts)
                            .chain(["f".to_string()])
                            .collect::<Vec<_>>()
                            .join("::"),
                    );
                }
            }
        }
        out
    }

    #[test]
    fn every_engine_module_has_a_component() {
        let t = ComponentTable::new(&default_components());
        let paths = engine_module_paths();
        assert!(paths.len() > 50, "{paths:?}");
        let other: Vec<&String> = paths.iter().filter(|p| t.classify(p) == 0).collect();
        assert!(
            other.is_empty(),
            "modules that profiles would call other: {other:?}"
        );
    }

    #[test]
    fn c_rules_match_c_names_only_and_the_first_rule_wins() {
        let rules: Vec<(String, String)> = [
            ("walLock*", "lock"),
            ("::log::", "log"),
            ("wal*", "walog"),
            ("*_selectivity", "plan"),
            ("sqlite3BtreeNext", "btree"),
            ("sqlite3BtreeNext", "never"),
            ("walIndexAppend", "late"),
        ]
        .iter()
        .map(|(p, n)| (p.to_string(), n.to_string()))
        .collect();
        let t = ComponentTable::new(&rules);
        let name = |f: &str| t.names()[t.classify_demangled(f) as usize].clone();
        assert_eq!(name("walLockShared"), "lock");
        assert_eq!(
            name("walIndexAppend"),
            "walog",
            "an earlier prefix beats a later exact name"
        );
        assert_eq!(
            name("walFrames.isra.0"),
            "walog",
            "clone suffixes are dropped"
        );
        assert_eq!(name("eqsel_selectivity"), "plan");
        assert_eq!(name("_selectivity"), "plan");
        assert_eq!(name("sqlite3BtreeNext"), "btree");
        assert_eq!(name("sqlite3BtreeNextx"), "other", "an exact rule is exact");
        // A C rule never matches a Rust path, a path rule never a C name.
        assert_eq!(name("engine::wal::Writer::append"), "other");
        assert_eq!(name("engine::log::Writer::append"), "log");
        assert_eq!(name("log"), "other");
        assert!(ComponentTable::c_pattern_matches(
            "pg_*_aclmask",
            "pg_class_aclmask"
        ));
        assert!(!ComponentTable::c_pattern_matches(
            "pg_*_aclmask",
            "pg_aclmask"
        ));
    }

    #[test]
    fn systems_rules_come_before_the_defaults() {
        let sqlite = rules_for("sqlite");
        let d = default_components();
        assert!(sqlite.ends_with(&d) && sqlite.len() > d.len() + 1000);
        assert_eq!(rules_for("disk"), d);
        assert!(has_system_rules("postgres") && !has_system_rules("memory"));
    }

    #[test]
    fn module_paths_of_demangled_names() {
        let cases = [
            ("engine::btree::Tree<K, V>::get", "engine::btree::Tree::get"),
            (
                "<engine::btree::Node as core::fmt::Debug>::fmt",
                "engine::btree::Node::fmt",
            ),
            (
                "<&mut engine::bpool::Pool<T> as api::Engine>::get",
                "engine::bpool::Pool::get",
            ),
            (
                "<[u8] as core::ops::index::Index<core::ops::range::RangeTo<usize>>>::index",
                "core::ops::index::Index::index",
            ),
            (
                "<*mut core::option::Option<alloc::collections::btree::node::X>>::write",
                "core::option::Option::write",
            ),
            (
                "core::ptr::drop_in_place<engine::btree::Node>",
                "core::ptr::drop_in_place",
            ),
            (
                "<u64 as engine::hash::Hashable>::h",
                "engine::hash::Hashable::h",
            ),
            (
                "workloads::tpcc::run::{{closure}}",
                "workloads::tpcc::run::{{closure}}",
            ),
            ("a::f<fn(u8) -> u8>", "a::f"),
        ];
        for (name, want) in cases {
            assert_eq!(module_path(name), want, "{name}");
        }
        assert!(is_std(&module_path(
            "<[u8] as core::ops::index::Index<usize>>::index"
        )));
        assert!(!is_std(&module_path(
            "<engine::btree::Node as core::fmt::Debug>::fmt"
        )));
    }

    #[test]
    fn demangled_names_are_read_as_module_paths_and_std_is_other() {
        let t = ComponentTable::new(&default_components());
        let name = |f: &str| t.names()[t.classify_demangled(f) as usize].clone();
        assert_eq!(name("<engine_disk::lock::Manager<K>>::acquire"), "lock");
        assert_eq!(
            name("<engine_disk::btree::Node as core::fmt::Debug>::fmt"),
            "btree"
        );
        // std's own `index` and `hash` modules are not the engine's index component.
        assert_eq!(
            name("<[u8] as core::slice::index::SliceIndex<usize>>::index"),
            "other"
        );
        assert_eq!(name("std::collections::hash::map::HashMap::get"), "other");
    }
}
