//! What the adapter asks of PostgreSQL, on a private server (one `SKIPPED: ...` line
//! where PostgreSQL is missing or cannot start): the buffers TPC-C's bounded scans read
//! (EXPLAIN (ANALYZE, BUFFERS) of the statements the adapter writes), the statements per
//! transaction type of TPC-B and TPC-C (pinned: later work may only lower them), the
//! read-committed hint in effect, and adds (`add_i64`, kept or not).

use api::typed::Value;
use api::{Engine, EngineOptions, Session, Worker};
use engine_postgres::conn::Conn;
use engine_postgres::{Isolation, PostgresEngine, PostgresOptions};
use postgres_types::ToSql;
use sqlmap::{Dialect, Kind, ScanForm, TableMap};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::schema::{customer_name_prefix, order_key, CUSTOMER, ORDER_LINE, STOCK};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::Workload;

fn server() -> Option<pgserver::PgServer> {
    match pgserver::PgServer::start(&pgserver::PgOptions::default()) {
        Ok(s) => Some(s),
        Err(e) => {
            skipped!("PostgreSQL cannot be started here: {e}");
            None
        }
    }
}

fn open<W: Workload>(wl: &W, url: &str) -> PostgresEngine {
    let opts = EngineOptions {
        threads: 1,
        ..EngineOptions::default()
    }
    .with_own(PostgresOptions {
        isolation: Isolation::Serializable,
        url: Some(url.to_string()),
        copy_load: true,
        synchronous_commit: false,
        batch_inserts: true,
        defer_updates: true,
        prewarm: false,
    });
    let e = PostgresEngine::open(Arc::new(wl.schema()), &opts).unwrap();
    wl.load(&e, 1, 3, &|_| {}).unwrap();
    e.load_done().unwrap();
    e
}

fn statements(e: &PostgresEngine) -> (u64, u64) {
    let s = e.stats();
    (
        s["statements"].as_u64().expect("a statement count"),
        s["round_trips"].as_u64().expect("a round-trip count"),
    )
}

/// Per transaction type: (count, statements, round trips).
type Counts = Vec<(u64, u64, u64)>;

/// Run `n` transactions of `wl` on one worker; per transaction type its counts, and
/// the worker's prepared statements with their plan counts (text, generic, custom).
fn count_statements<W: Workload>(
    wl: &W,
    e: &PostgresEngine,
    n: usize,
) -> (Counts, Vec<(String, i64, i64)>) {
    let mut st = wl.worker_state(0, 1, 11);
    let mut s = Session::new(api::Database::worker(e, 0));
    let mut per = vec![(0u64, 0u64, 0u64); wl.txn_types().len()];
    for _ in 0..n {
        let (ty, input) = wl.next(&mut st);
        let before = statements(e);
        s.begin(ty).unwrap();
        wl.execute(&mut s, &mut st, &input)
            .unwrap_or_else(|err| panic!("{} {}: {err}", wl.name(), wl.txn_types()[ty as usize]));
        s.commit().unwrap();
        let after = statements(e);
        let p = &mut per[ty as usize];
        p.0 += 1;
        p.1 += after.0 - before.0;
        p.2 += after.1 - before.1;
    }
    // The worker's own prepared statements, read on its connection as SQL text (the
    // session holds the worker as any engine's).
    let mut plans = Vec::new();
    s.begin(0).unwrap();
    s.query(
        "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements",
        |r| match r {
            [Value::Text(sql), Value::Int(g), Value::Int(c)] => {
                plans.push((String::from_utf8_lossy(sql).into_owned(), *g, *c))
            }
            other => panic!("pg_prepared_statements gave {other:?}"),
        },
    )
    .unwrap();
    s.commit().unwrap();
    (per, plans)
}

/// Assert each type's mean statements and round trips per transaction are at most
/// their pins (name, statements, round trips).
fn check_pins<W: Workload>(wl: &W, per: &[(u64, u64, u64)], pins: &[(&str, f64, f64)]) {
    let names = wl.txn_types();
    let mut report = BTreeMap::new();
    for (i, &(n, stmts, trips)) in per.iter().enumerate() {
        assert!(n > 0, "{}: no {} ran", wl.name(), names[i]);
        report.insert(names[i], (stmts as f64 / n as f64, trips as f64 / n as f64));
    }
    println!(
        "{} (statements, round trips) per transaction: {report:?}",
        wl.name()
    );
    for (name, pin, pin_trips) in pins {
        let (got, trips) = report[name];
        assert!(
            got <= *pin && trips <= *pin_trips,
            "{} {name}: {got:.2} statements and {trips:.2} round trips per transaction, \
             pinned at {pin} and {pin_trips} (lower a pin when it goes down; it must not go up)",
            wl.name()
        );
    }
}

/// Assert (`strict`) or print that PostgreSQL planned each statement once (its generic
/// plan), not at each execution: at most the 5 custom plans it tries first.
fn check_planned_once(what: &str, plans: &[(String, i64, i64)], strict: bool) {
    for (sql, generic, custom) in plans {
        if *custom > 5 {
            println!("{what}: planned at each execution ({custom} custom plans, {generic} generic): {sql}");
        }
        assert!(
            !strict || *custom <= 5,
            "{what}: PostgreSQL planned this statement {custom} times: {sql}"
        );
    }
}

/// A parameter as the adapter binds it for a column of `kind`.
fn param(kind: Kind, v: &api::typed::Value) -> Box<dyn ToSql + Sync> {
    match (kind, v) {
        (Kind::I16, api::typed::Value::Int(x)) => Box::new(*x as i16),
        (Kind::I32, api::typed::Value::Int(x)) => Box::new(*x as i32),
        (_, api::typed::Value::Int(x)) => Box::new(*x),
        (_, api::typed::Value::Text(s)) => Box::new(String::from_utf8(s.clone()).unwrap()),
        (_, api::typed::Value::Bytes(b)) => Box::new(b.clone()),
    }
}

/// Shared buffers (hit and read) EXPLAIN (ANALYZE, BUFFERS) reports for the scan the
/// adapter writes in `form` over `index` of `map`, between `lo` and `hi`.
fn scan_buffers(
    c: &mut Conn,
    map: &TableMap,
    form: ScanForm,
    index: u16,
    lo: &[u8],
    hi: &[u8],
    part: Option<std::ops::Range<usize>>,
) -> u64 {
    let plan = map
        .plan_scan_as(
            form,
            index,
            Bound::Included(lo),
            Bound::Excluded(hi),
            true,
            usize::MAX,
        )
        .unwrap()
        .expect("a non-empty range");
    let cols = map
        .scan_cols(api::TableId(0), index, part.as_ref())
        .unwrap();
    let sql = map.scan_sql(Dialect::Postgres, index, &plan, &cols, api::Dir::Forward);
    let icols = map.index_cols(index);
    let params: Vec<Box<dyn ToSql + Sync>> = plan
        .params()
        .into_iter()
        .map(|(i, v)| param(map.cols[icols[i]].kind, v))
        .collect();
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
    let lines = explain(c, &sql, &refs);
    // The first Buffers line is the top node's: the whole statement's.
    let line = lines
        .iter()
        .find(|l| l.trim_start().starts_with("Buffers: shared"))
        .unwrap_or_else(|| panic!("no buffer counts in {lines:#?}"));
    let count = |what: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(what))
            .map_or(0, |n| n.trim_end_matches(',').parse().unwrap())
    };
    let n = count("hit=") + count("read=");
    println!("{form:?}: {n} buffers\n  {sql}\n  {}", lines.join("\n  "));
    n
}

/// The plan's lines of `sql` with `params` under EXPLAIN (ANALYZE, BUFFERS).
fn explain(c: &mut Conn, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Vec<String> {
    let st = c
        .prepare(&format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"))
        .unwrap();
    let sent = c.run(&[], &st, params, None).unwrap();
    sent.rows()
        .map(|r| r.try_get::<String>(0).unwrap())
        .collect()
}

/// Shared buffers (hit and read) of `sql` with `params` under EXPLAIN (ANALYZE, BUFFERS).
fn explain_buffers(c: &mut Conn, sql: &str, params: &[&(dyn ToSql + Sync)]) -> u64 {
    let lines = explain(c, sql, params);
    let line = lines
        .iter()
        .find(|l| l.trim_start().starts_with("Buffers: shared"))
        .unwrap_or_else(|| panic!("no buffer counts in {lines:#?}"));
    let count = |what: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(what))
            .map_or(0, |n| n.trim_end_matches(',').parse().unwrap())
    };
    println!("{sql}\n  {}", lines.join("\n  "));
    count("hit=") + count("read=")
}

#[test]
fn tpcc_scans_read_a_handful_of_buffers_and_statements_are_pinned() {
    let Some(server) = server() else { return };
    let url = server.url();
    let tpcc = Tpcc::new(TpccConfig {
        warehouses: 1,
        affinity: false,
        ..TpccConfig::default()
    })
    .unwrap();
    let e = open(&tpcc, &url);
    let schema = tpcc.schema();
    let mut c = Conn::connect(&url).unwrap();
    c.batch_execute(&format!(
        "SET search_path TO {}",
        sqlmap::ident(e.pg_schema())
    ))
    .unwrap();
    // Stock-Level's Order-Line scan: the last 20 orders of district 1 (the load leaves
    // 3,000 per district). Written as row values it ran to the end of the warehouse.
    let ol = TableMap::new(schema.table(ORDER_LINE)).unwrap();
    let (lo, hi) = (order_key(1, 1, 2981), order_key(1, 1, 3001));
    let rows = scan_buffers(&mut c, &ol, ScanForm::RowValue, 0, &lo, &hi, None);
    let eq = scan_buffers(&mut c, &ol, ScanForm::Prefix, 0, &lo, &hi, None);
    assert!(
        eq <= 16,
        "the bounded Order-Line scan read {eq} buffers (row values: {rows})"
    );
    // Payment's and Order-Status' customers by last name (ids only).
    let cu = TableMap::new(schema.table(CUSTOMER)).unwrap();
    let p = customer_name_prefix(1, 1, &workloads::tpcc::gen::last_name(0));
    let end = p.prefix_end().unwrap();
    let rows = scan_buffers(&mut c, &cu, ScanForm::RowValue, 1, &p, &end, Some(0..4));
    let eq = scan_buffers(&mut c, &cu, ScanForm::Prefix, 1, &p, &end, Some(0..4));
    assert!(
        eq <= 16,
        "the Customer-by-last-name scan read {eq} buffers (row values: {rows})"
    );

    // Stock-Level's 200 stock lookups as one statement: an index probe per key, under
    // the planner's custom and generic plans alike (a hash join would read the table).
    let st = TableMap::new(schema.table(STOCK)).unwrap();
    let keys = 200;
    let ws: Vec<i64> = vec![1; keys];
    let is: Vec<i64> = (0..keys as i64).map(|i| 1 + i * 499).collect();
    let q = std::mem::offset_of!(workloads::tpcc::schema::Stock, s_quantity);
    let cols = st.part_cols(STOCK, &(q..q + 4)).unwrap();
    let sql = st.get_many_sql(&cols, false);
    for mode in ["auto", "force_generic_plan"] {
        c.batch_execute(&format!("SET plan_cache_mode = {mode}"))
            .unwrap();
        let n = explain_buffers(&mut c, &sql, &[&ws, &is]);
        assert!(
            n <= 5 * keys as u64,
            "{mode}: the batched lookup of {keys} stock rows read {n} buffers"
        );
    }
    c.batch_execute("RESET plan_cache_mode").unwrap();

    let (per, plans) = count_statements(&tpcc, &e, 300);
    check_pins(
        &tpcc,
        &per,
        &[
            ("new-order", 8.0, 6.0),
            // Means over 300 transactions: a statement's first use on the connection also
            // sends the pending BEGIN alone (a prepare outside a transaction block would be a
            // transaction of its own).
            ("payment", 6.9, 4.8),
            ("order-status", 5.6, 4.6),
            // Ten scans and deletes, then the orders, lines and customers as three batches.
            ("delivery", 26.0, 24.1),
            ("stock-level", 5.0, 4.0),
        ],
    );
    // Delivery's scan of the oldest new order (a range and LIMIT 1) included: its limit
    // is a literal, or PostgreSQL would plan it at each execution.
    check_planned_once("tpcc", &plans, true);
    drop(e);

    let tpcb = tpcb(1);
    let e = open(&tpcb, &url);
    let (per, plans) = count_statements(&tpcb, &e, 200);
    // BEGIN with the Account's add (`UPDATE .. RETURNING` its new balance), then the held
    // writes (the Teller's and Branch's adds and the History insert, one statement) with
    // COMMIT: pgbench sends 7. 2 round trips a transaction, plus the first use of each
    // statement (see TPC-C).
    check_pins(&tpcb, &per, &[("account_update", 4.0, 2.01)]);
    check_planned_once("tpcb", &plans, true);
}

/// After `read_committed()` a transaction sees what others committed since its first
/// read; without it (serializable) it keeps its snapshot.
#[test]
fn read_committed_hint_is_honoured() {
    let Some(server) = server() else { return };
    let tpcb = tpcb(1);
    let e = open(&tpcb, &server.url());
    // Branch 1 (TPC-B's ids start at 1; keys are 8-byte big-endian ids).
    let t = api::TableId(0);
    let mut key = api::Key::new();
    key.push_u64(1);
    let (mut a, mut b) = (e.worker(0), e.worker(0));
    for rc in [false, true] {
        a.begin().unwrap();
        if rc {
            a.read_committed();
        }
        let mut first = Vec::new();
        assert!(a.get(t, &key, &mut |r| first = r.to_vec()).unwrap());
        b.begin().unwrap();
        // The balance: bytes 8..16 of a Branch row.
        let bal = std::mem::offset_of!(workloads::tpcb::Branch, balance);
        b.update(t, &key, &mut |r| r[bal] = r[bal].wrapping_add(1))
            .unwrap();
        b.commit().unwrap();
        let mut second = Vec::new();
        a.get(t, &key, &mut |r| second = r.to_vec()).unwrap();
        a.commit().unwrap();
        assert_eq!(
            first != second,
            rc,
            "read committed {rc}: the second read saw {}the other's commit",
            if first != second { "" } else { "not " }
        );
    }
}

/// `add_i64` returns the new balance (a NUMERIC(12,2) column: integer units both ways),
/// `None` for an absent row; `add_i64_blind` is kept to the commit and then written, and
/// a kept add to an absent row fails the commit (nothing written) with one clear error.
#[test]
fn adds_return_the_new_value_and_a_kept_add_to_no_row_fails_the_commit() {
    let Some(server) = server() else { return };
    let tpcb = tpcb(1);
    let e = open(&tpcb, &server.url());
    let (branch, teller) = (api::TableId(0), api::TableId(1));
    let key = |id: u64| {
        let mut k = api::Key::new();
        k.push_u64(id);
        k
    };
    let bal = std::mem::offset_of!(workloads::tpcb::Branch, balance);
    let tbal = std::mem::offset_of!(workloads::tpcb::Teller, balance);
    let balance = |w: &mut engine_postgres::PostgresWorker<'_>, t, id, at: usize| {
        let mut v = None;
        w.begin().unwrap();
        w.get(t, &key(id), &mut |r| {
            v = Some(i64::from_le_bytes(r[at..at + 8].try_into().unwrap()))
        })
        .unwrap();
        w.commit().unwrap();
        v.unwrap()
    };
    let mut w = e.worker(0);
    let before = balance(&mut w, branch, 1, bal);
    w.begin().unwrap();
    assert_eq!(
        w.add_i64(branch, &key(1), bal, 1_234).unwrap(),
        Some(before + 1_234)
    );
    assert_eq!(
        w.add_i64(branch, &key(1), bal, -34).unwrap(),
        Some(before + 1_200)
    );
    assert_eq!(w.add_i64(branch, &key(99), bal, 1).unwrap(), None);
    w.add_i64_blind(teller, &key(3), tbal, 500).unwrap();
    // A second kept add to the table sends the first.
    w.add_i64_blind(teller, &key(3), tbal, 7).unwrap();
    w.commit().unwrap();
    assert_eq!(balance(&mut w, branch, 1, bal), before + 1_200);
    assert_eq!(balance(&mut w, teller, 3, tbal), 507);
    // A kept add is read back by the transaction's next statement on its table.
    w.begin().unwrap();
    w.add_i64_blind(teller, &key(3), tbal, 3).unwrap();
    let mut seen = 0;
    w.get(teller, &key(3), &mut |r| {
        seen = i64::from_le_bytes(r[tbal..tbal + 8].try_into().unwrap())
    })
    .unwrap();
    assert_eq!(seen, 510);
    w.commit().unwrap();
    // An absent row: the commit fails and nothing of the transaction stays.
    w.begin().unwrap();
    w.add_i64_blind(teller, &key(3), tbal, 1_000).unwrap();
    w.add_i64_blind(branch, &key(99), bal, 1).unwrap();
    let err = w.commit().unwrap_err();
    assert!(
        err.to_string().contains("an add found no row"),
        "unexpected error: {err}"
    );
    w.abort();
    assert_eq!(balance(&mut w, teller, 3, tbal), 510);
}

/// TPC-B at scale 1, padded rows, for `threads` workers.
fn tpcb(threads: usize) -> Tpcb {
    Tpcb::new(
        TpcbConfig {
            scale: 1,
            pad: true,
            affinity: false,
        },
        threads,
    )
    .unwrap()
}
