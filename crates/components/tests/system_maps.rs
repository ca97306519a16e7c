//! The SQLite and PostgreSQL component maps against recorded symbol lists:
//! - SQLite: the function symbols of the bundled SQLite as a real build of oltpscope
//!   holds them, each with the source file its DWARF line names (recorded by
//!   `tools/record_sqlite_symbols.sh`): every function of a file with a component gets
//!   that component, except where a name rule deliberately gives another (the
//!   transaction steps to `xct`, file locks to `lock`), and the generated function list
//!   knows every recorded symbol;
//! - PostgreSQL: the exported functions of the installed server (the names `profile`
//!   and `simulate` can see): well-known functions of each module land in its
//!   component, and every one of them is a real symbol;
//! - no hand-written rule is shadowed by an earlier one (it would be dead).

// Test code: a test walks through its recorded cases one by one; the function-length
// lint (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use components::{postgres, rules_for, sqlite, ComponentTable};

fn component(t: &ComponentTable, f: &str) -> String {
    t.names()[t.classify_demangled(f) as usize].clone()
}

fn recorded(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect()
}

/// An earlier C rule matches every name a later one matches.
fn shadows(earlier: &str, later: &str) -> bool {
    match (earlier.split_once('*'), later.split_once('*')) {
        (Some((p, s)), Some((q, t))) => q.starts_with(p) && t.ends_with(s),
        (_, None) => ComponentTable::c_pattern_matches(earlier, later),
        (None, Some(_)) => false,
    }
}

fn assert_no_shadowed(rules: &[(&str, &str)]) {
    let mut dead = Vec::new();
    for (j, (later, _)) in rules.iter().enumerate() {
        if let Some((earlier, _)) = rules[..j].iter().find(|(e, _)| shadows(e, later)) {
            dead.push(format!("{later} (after {earlier})"));
        }
    }
    assert!(dead.is_empty(), "rules that can never match: {dead:?}");
}

#[test]
fn no_hand_written_rule_is_dead() {
    assert_no_shadowed(postgres::RULES);
    let sqlite: Vec<(&str, &str)> = sqlite::PREFIXES.to_vec();
    assert_no_shadowed(&sqlite);
}

#[test]
fn sqlite_functions_get_their_source_file_s_component() {
    let t = ComponentTable::new(&rules_for("sqlite"));
    let text = include_str!("data/sqlite-symbols.txt");
    let known: std::collections::HashSet<&str> = sqlite::functions().map(|(n, _)| n).collect();
    let (mut checked, mut unlisted, mut wrong, mut overridden) = (0, vec![], vec![], 0);
    for line in recorded(text) {
        let (name, file) = line.split_once(' ').expect("`name file` lines");
        if !known.contains(name) {
            unlisted.push(name);
        }
        let Some(want) = sqlite::file_component(file) else {
            continue;
        };
        checked += 1;
        let got = component(&t, name);
        if got == want {
            continue;
        }
        // A name rule may move a function to the transaction manager or the lock
        // manager; nothing else may disagree with the file.
        let by_rule = sqlite::PREFIXES
            .iter()
            .find(|(p, _)| ComponentTable::c_pattern_matches(p, name));
        match by_rule {
            Some((_, c)) if *c == got && (got == "xct" || got == "lock") => overridden += 1,
            // utf.c's conversion of a VDBE memory cell between encodings: the VDBE's.
            Some((_, c)) if *c == got && name == "sqlite3VdbeMemTranslate" => {}
            _ => wrong.push(format!("{name} ({file}): {got}, want {want}")),
        }
    }
    assert!(checked > 1000, "only {checked} recorded SQLite functions");
    assert!(wrong.is_empty(), "{} misfiled: {wrong:?}", wrong.len());
    assert!(
        unlisted.is_empty(),
        "recorded functions missing from data/sqlite-functions.txt (regenerate it with the recorded list: tools/sqlite_functions.py): {unlisted:?}"
    );
    assert!(overridden > 5, "{overridden} functions moved by name rules");
    // GCC's clones are the function they were cloned from.
    assert_eq!(component(&t, "balance_nonroot.isra.0"), "btree");
    assert_eq!(component(&t, "pcache1Fetch.constprop.0"), "bpool");
}

#[test]
fn sqlite_s_hot_functions_by_name() {
    let t = ComponentTable::new(&rules_for("sqlite"));
    for (f, want) in [
        ("sqlite3BtreeTableMoveto", "btree"),
        ("sqlite3BtreeIndexMoveto", "btree"),
        ("moveToChild", "btree"),
        ("balance_nonroot", "btree"),
        ("sqlite3PagerGet", "bpool"),
        ("getPageNormal", "bpool"),
        ("pcache1Fetch", "bpool"),
        ("sqlite3PcacheFetch", "bpool"),
        ("sqlite3WalFindFrame", "log"),
        ("walIndexAppend", "log"),
        ("walLockShared", "lock"),
        ("unixLock", "lock"),
        ("unixRead", "io"),
        ("pthreadMutexEnter", "latch"),
        ("sqlite3VdbeExec", "executor"),
        ("sqlite3VdbeRecordCompare", "executor"),
        ("sqlite3_step", "executor"),
        ("sqlite3BtreeBeginTrans", "xct"),
        ("sqlite3PagerCommitPhaseOne", "xct"),
        ("sqlite3RunParser", "prepare"),
        ("sqlite3Select", "prepare"),
        ("sqlite3WhereBegin", "prepare"),
        ("sqlite3DbMallocRawNN", "memory"),
        ("sqlite3GetVarint", "util"),
        ("rusqlite::statement::Statement::execute", "adapter"),
        (
            "<engine_sqlite::SqliteWorker as api::engine::Worker>::get",
            "adapter",
        ),
        // oltpscope's own code keeps the default table.
        ("api::session::Session<X>::get", "api"),
        ("workloads::tpcc::new_order", "workload"),
        // An extension SQLite is built with but the kits never use maps to nothing.
        ("fts5ExprNodeNext", "other"),
        ("__memmove_avx_unaligned_erms", "other"),
    ] {
        assert_eq!(component(&t, f), want, "{f}");
    }
}

#[test]
fn postgres_modules_land_in_their_components() {
    let t = ComponentTable::new(&rules_for("postgres"));
    let symbols: std::collections::HashSet<&str> =
        recorded(include_str!("data/postgres-15-functions.txt"))
            .into_iter()
            .collect();
    assert!(symbols.len() > 9000, "{} symbols", symbols.len());
    for (f, want) in [
        ("_bt_search", "btree"),
        ("_bt_compare", "btree"),
        ("btgettuple", "btree"),
        ("index_getnext_tid", "btree"),
        ("index_fetch_heap", "heap"),
        ("ReadBufferExtended", "bpool"),
        ("ReleaseBuffer", "bpool"),
        ("MarkBufferDirty", "bpool"),
        ("StrategyGetBuffer", "bpool"),
        ("BufTableLookup", "bpool"),
        ("PageAddItemExtended", "bpool"),
        ("smgrread", "io"),
        ("mdread", "io"),
        ("LockAcquire", "lock"),
        ("LockRelationOid", "lock"),
        ("XactLockTableInsert", "lock"),
        ("PredicateLockTID", "lock"),
        ("CheckForSerializableConflictIn", "lock"),
        ("LockBuffer", "latch"),
        ("LWLockAcquire", "latch"),
        ("LWLockRelease", "latch"),
        ("s_lock", "latch"),
        ("XLogInsert", "log"),
        ("XLogInsertRecord", "log"),
        ("XLogFlush", "log"),
        ("XLogRegisterBuffer", "log"),
        ("heap_insert", "heap"),
        ("heap_update", "heap"),
        ("heap_hot_search_buffer", "heap"),
        ("HeapTupleSatisfiesVisibility", "heap"),
        ("RelationGetBufferForTuple", "heap"),
        ("CommitTransactionCommand", "xct"),
        ("StartTransactionCommand", "xct"),
        ("TransactionIdIsInProgress", "xct"),
        ("GetSnapshotData", "xct"),
        ("ResourceOwnerForgetBuffer", "xct"),
        ("SearchCatCache1", "catalog"),
        ("SearchSysCache1", "catalog"),
        ("RelationIdGetRelation", "catalog"),
        ("relation_open", "catalog"),
        ("get_typlen", "catalog"),
        ("AcceptInvalidationMessages", "catalog"),
        ("raw_parser", "prepare"),
        ("base_yyparse", "prepare"),
        ("parse_analyze_fixedparams", "prepare"),
        ("transformStmt", "prepare"),
        ("standard_planner", "plan"),
        ("create_index_path", "plan"),
        ("clauselist_selectivity", "plan"),
        ("btcostestimate", "plan"),
        ("GetCachedPlan", "plan"),
        ("ExecInitNode", "executor"),
        ("ExecScan", "q-scan"),
        ("MultiExecHash", "hash-join"),
        ("ExecHashTableInsert", "hash-join"),
        ("ExecScanHashBucket", "hash-join"),
        ("LookupTupleHashEntry", "hash-agg"),
        ("tuplehash_insert", "hash-agg"),
        ("hash_agg_set_limits", "hash-agg"),
        ("tuplesort_puttupleslot", "sort"),
        ("tuplesort_gettupleslot", "sort"),
        ("ExecEvalStepOp", "q-expr"),
        ("ExecReadyInterpretedExpr", "q-expr"),
        ("standard_ExecutorStart", "executor"),
        ("ExecInsertIndexTuples", "executor"),
        ("FunctionCall2Coll", "executor"),
        ("PortalStart", "tcop"),
        ("PortalRun", "tcop"),
        ("PostgresMain", "tcop"),
        ("pq_getmessage", "network"),
        ("pq_getmsgint", "network"),
        ("secure_read", "network"),
        ("WaitEventSetWait", "network"),
        ("palloc", "memory"),
        ("MemoryContextAlloc", "memory"),
        ("MemoryContextReset", "memory"),
        ("numeric_add", "types"),
        ("int4eq", "types"),
        ("texteq", "types"),
        ("hash_search", "util"),
        ("hash_bytes", "util"),
        ("lappend", "util"),
        ("errstart", "util"),
        ("pgstat_report_stat", "stats"),
        ("check_functions_in_node", "plan"),
        ("SS_identify_outer_params", "plan"),
        ("CheckExprStillValid", "executor"),
        ("getTypeBinaryInputInfo", "catalog"),
        ("CopyArrayEls", "types"),
    ] {
        assert!(
            symbols.contains(f),
            "{f} is not in the recorded server's symbols"
        );
        assert_eq!(component(&t, f), want, "{f}");
    }
    // A static function has no symbol in the stripped server: its code matches nothing.
    assert_eq!(component(&t, "(postgres code without a symbol)"), "other");
    // Code between two exported functions has their component when they agree (the
    // static functions of nbtsearch.c lie between its exported ones), none otherwise.
    let gap = "(postgres static code between _bt_parallel_advance_array_keys and _bt_compare)";
    assert_eq!(component(&t, gap), "btree");
    let gap = "(postgres static code between _bt_compare and ExecInitNode)";
    assert_eq!(component(&t, gap), "other");
    // A rule may place the code between two files of different components; its
    // neighbours are exported functions of the recorded server (adjacent there:
    // checked when the rule was written, from `nm -D` of the binary).
    let gap = "(postgres static code between load_tzoffsets and AllocSetContextCreateInternal)";
    assert_eq!(component(&t, gap), "memory");
    // The executor nodes' static code: named by a rule before a node file's first
    // exported function, by agreeing neighbours inside it (nodeHashjoin.c's
    // ExecHashJoin lies between nodeHash.c's last exported function and its own first,
    // which a rule names; nodeAgg.c's agg_retrieve_direct between two of its own).
    let gap = "(postgres static code between ExecReScanSampleScan and ExecInitSeqScan)";
    assert_eq!(component(&t, gap), "q-scan");
    let gap = "(postgres static code between get_hash_memory_limit and ExecInitHashJoin)";
    assert_eq!(component(&t, gap), "hash-join");
    let gap = "(postgres static code between hash_agg_set_limits and ExecInitAgg)";
    assert_eq!(component(&t, gap), "hash-agg");
    for (pattern, _) in components::postgres::RULES {
        if let Some((a, b)) = components::extents::gap_neighbours(pattern) {
            assert!(symbols.contains(&a) && symbols.contains(&b), "{pattern}");
            assert_ne!(component(&t, pattern), "other", "{pattern}");
        }
    }
}

#[test]
fn own_crates_are_the_workspace_members() {
    // Every crate under crates/ by its Rust name (`[lib] name` where it differs).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let manifest = e.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        // The package's name (the first `name`; no crate renames its library: a `[lib]`
        // section, where there is one, names no other).
        if let Some((_, lib)) = text.split_once("\n[lib]\n") {
            let lib = lib.split("\n[").next().unwrap_or_default();
            assert!(
                !lib.lines().any(|l| l.trim_start().starts_with("name")),
                "{}: a [lib] section renaming the library",
                manifest.display()
            );
        }
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .expect("a crate has a name")
            .trim_matches('"')
            .replace('-', "_");
        found.push(name);
    }
    found.sort();
    let mut own: Vec<String> = components::OWN_CRATES
        .iter()
        .map(|s| s.to_string())
        .collect();
    own.sort();
    assert_eq!(
        found, own,
        "components::OWN_CRATES must list the workspace's crates"
    );
}
