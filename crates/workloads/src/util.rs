//! Shared pieces of the kits: seeded random number generators, parallel loading, the
//! analytical kits' query lists and SQL text pieces.

use api::{Database, DynWorker, Result, Session, Worker};
use rand::SeedableRng;

/// The kits' generator: an algorithm fixed by name (xoshiro256++), so a seed repeats the
/// same inputs on every platform and version (`rand`'s `SmallRng` promises neither).
pub type KitRng = rand_xoshiro::Xoshiro256PlusPlus;

/// A worker's generator: distinct, repeatable streams per (seed, stream).
pub fn rng_for(seed: u64, stream: u64) -> KitRng {
    // splitmix64 of the pair, so nearby streams are unrelated.
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    KitRng::seed_from_u64(z ^ (z >> 31))
}

/// Run `unit(session, i)` for every `i` in `0..units`, spread over `threads` threads
/// (unit `i` goes to thread `i % threads`). Each unit runs its own transactions.
pub fn parallel_units(
    engine: &dyn Database,
    threads: usize,
    units: u64,
    unit: impl Fn(&mut Session<DynWorker<'_>>, u64) -> Result<()> + Sync,
) -> Result<()> {
    let threads = threads.max(1).min(units.max(1) as usize);
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let unit = &unit;
                sc.spawn(move || {
                    let mut s = Session::new(engine.worker(t));
                    let mut i = t as u64;
                    while i < units {
                        unit(&mut s, i)?;
                        i += threads as u64;
                    }
                    Ok(())
                })
            })
            .collect();
        let mut out = Ok(());
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(api::Error::fatal("loader thread panicked")));
            if out.is_ok() {
                out = r;
            }
        }
        out
    })
}

/// Insert rows in transactions of at most `batch` rows, retrying conflicts.
/// `row(i, session)` inserts row `i` of `lo..hi`.
pub fn load_range<W: Worker>(
    s: &mut Session<W>,
    lo: u64,
    hi: u64,
    batch: u64,
    progress: &(dyn Fn(u64) + Sync),
    mut row: impl FnMut(&mut Session<W>, u64) -> Result<()>,
) -> Result<()> {
    let mut at = lo;
    while at < hi {
        let end = (at + batch).min(hi);
        s.run_retry(u32::MAX, 100, |s| {
            for i in at..end {
                row(s, i)?;
            }
            Ok(())
        })?;
        progress(end - at);
        at = end;
    }
    Ok(())
}

/// The queries of `implemented` that `chosen` names (all of them without a choice), in
/// `implemented`'s order.
pub fn chosen_in_order(implemented: &[u32], chosen: Option<&[u32]>) -> Vec<u32> {
    implemented
        .iter()
        .copied()
        .filter(|n| chosen.is_none_or(|c| c.contains(n)))
        .collect()
}

/// Query numbers as the reports and messages write them: `1, 4, 6`.
pub fn query_list(q: &[u32]) -> String {
    q.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// Parse a list of query numbers (`--queries 1,6,3`) of a kit with queries 1 to 22:
/// each a number in 1..=22, among `implemented`, none twice; anything else is one line
/// (exit 2 upstream). `kit` names the benchmark in messages.
pub fn parse_query_list(
    s: &str,
    kit: &str,
    implemented: &[u32],
) -> std::result::Result<Vec<u32>, String> {
    parse_query_list_of(s, kit, implemented, 22)
}

/// [`parse_query_list`] for a kit with queries 1 to `max`.
pub fn parse_query_list_of(
    s: &str,
    kit: &str,
    implemented: &[u32],
    max: u32,
) -> std::result::Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let n: u32 = part
            .trim()
            .parse()
            .map_err(|_| format!("query '{part}' is not a number"))?;
        if !(1..=max).contains(&n) {
            return Err(format!(
                "query {n} is out of range: {kit} has queries 1 to {max}"
            ));
        }
        if !implemented.contains(&n) {
            return Err(format!(
                "{kit} query {n} is not implemented yet (implemented: {})",
                query_list(implemented)
            ));
        }
        if out.contains(&n) {
            return Err(format!("query {n} is named twice"));
        }
        out.push(n);
    }
    Ok(out)
}

/// A decimal column as integer cents in SQL text: SQLite stores the cents already,
/// PostgreSQL a NUMERIC (docs/design/sql-adapters.md).
pub fn sql_cents(d: api::SqlDialect, col: &str) -> String {
    match d {
        api::SqlDialect::Sqlite => col.to_string(),
        api::SqlDialect::Postgres => format!("({col} * 100)::int8"),
    }
}

/// `sum(e)` of integers in SQL text, an integer (0 over no rows).
pub fn sql_int_sum(d: api::SqlDialect, e: &str) -> String {
    match d {
        api::SqlDialect::Sqlite => format!("coalesce(sum({e}), 0)"),
        api::SqlDialect::Postgres => format!("coalesce(sum({e}), 0)::int8"),
    }
}

/// A row's 4-byte unsigned column (ids, dates, sizes) as the plans' integer.
pub fn u32c(r: &[u8], off: usize) -> i64 {
    i64::from(api::row::field::<u32>(r, off))
}

/// A row's 8-byte column (decimals in cents, keys, timestamps).
pub fn i64c(r: &[u8], off: usize) -> i64 {
    api::row::field(r, off)
}

/// A row's string column of `len` bytes, up to its first zero byte (as the SQL
/// adapters store it).
pub fn strc(r: &[u8], off: usize, len: usize) -> &[u8] {
    api::row::get_str(&r[off..off + len])
}
