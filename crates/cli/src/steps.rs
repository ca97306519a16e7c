//! `oltpscope steps place` (autoSTEPS) and the CTX-point files it writes, which
//! `run --steps-points` and `simulate --steps-points` read.

use crate::args::{PlaceOpts, SimOpts};
use cachesim::autosteps::{self, Collector, Params, Placement};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A CTX-point file (TOML).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointsFile {
    /// What made it (informative).
    #[serde(default)]
    pub made_by: String,
    #[serde(default, rename = "point")]
    pub points: Vec<PointEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointEntry {
    /// The outermost database operation it is reached in (`index_probe`, `update`...).
    pub operation: String,
    /// The engine component whose entry it is (`btree_level`, `buffer_fix`...).
    pub component: String,
    /// The k-th point of that component since the operation's entry, from 1.
    pub ordinal: u16,
    /// Switch here (false: listed for information only).
    pub enabled: bool,
    /// Times autoSTEPS placed a CTX here, and times it was reached, in its trace.
    #[serde(default)]
    pub chosen: u64,
    #[serde(default)]
    pub reached: u64,
}

fn op_name(op: u32) -> String {
    probe::Op::from_u32(op).map_or_else(|| format!("op{op}"), |o| o.name().to_string())
}

fn component_name(c: u8) -> String {
    rt::Component::ALL
        .get(c as usize)
        .map_or_else(|| format!("component{c}"), |c| c.name().to_string())
}

/// Reads a CTX-point file into the set `rt` switches at; every error is one line.
pub fn load_points(path: &Path) -> Result<rt::CtxPoints, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --steps-points {}: {e}", path.display()))?;
    let f: PointsFile = toml::from_str(&text).map_err(|e| {
        format!(
            "--steps-points {}: not a CTX-point file: {}",
            path.display(),
            e.message()
        )
    })?;
    let mut set = rt::CtxPoints::default();
    for p in &f.points {
        let op = probe::Op::ALL
            .iter()
            .find(|o| o.name() == p.operation)
            .ok_or_else(|| {
                format!(
                    "--steps-points {}: unknown operation '{}'",
                    path.display(),
                    p.operation
                )
            })?;
        let c = rt::Component::from_name(&p.component).ok_or_else(|| {
            format!(
                "--steps-points {}: unknown component '{}'",
                path.display(),
                p.component
            )
        })?;
        if p.ordinal == 0 {
            return Err(format!(
                "--steps-points {}: ordinals count from 1",
                path.display()
            ));
        }
        if p.enabled {
            set.insert(*op as u32, c, p.ordinal);
        }
    }
    Ok(set)
}

/// Transactions that warm the modelled L1-I before anything is counted.
const DEFAULT_WARMUP_TXNS: u64 = 300;

pub fn place(o: &PlaceOpts, workload: runspec::Workload) -> Result<(), String> {
    let c: &SimOpts = &o.sim;
    if c.runs_coroutines() {
        return Err("`steps place` traces transactions one at a time: --coroutines, --steps-team and --interleave do not apply".into());
    }
    if c.steps_points.is_some() || c.out.is_some() {
        return Err(
            "`steps place` writes its points to --points; --steps-points and --out do not apply"
                .into(),
        );
    }
    // autoSTEPS counts its warm-up in transactions: automatic warm-up does not apply.
    let warmup = match c.sim.warmup_txns {
        None => DEFAULT_WARMUP_TXNS,
        Some(crate::args::Warmup::Txns(n)) => n,
        Some(crate::args::Warmup::Auto) => return Err(
            "`steps place` warms up for a number of transactions: give --warmup-txns N, not auto"
                .into(),
        ),
    };
    if c.sim.until_settled.is_some() {
        return Err("`steps place` reads its whole trace: --until-settled does not apply".into());
    }
    let mut fixed = c.clone();
    fixed.sim.warmup_txns = Some(crate::args::Warmup::Txns(warmup));
    let c = &fixed;
    if c.db.is_some() {
        return Err("`steps place` loads its traced run's database itself: --db and --load-only are `simulate`'s".into());
    }
    let cfg = crate::simulate::config(c)?;
    let params = Params {
        l1i: cfg.l1i,
        knee_width: o.knee.0,
        knee_height: o.knee.1,
        warmup_txns: cfg.warmup_txns,
    };
    let json = crate::output::JsonOut::open(c.json.as_deref())?;
    let setup = tracer::prepare()?;
    let mut spec = crate::simulate::child_spec(c, workload, cfg.warmup_txns, 1);
    spec.options.trace_ctx = true;
    let args = spec.to_args();
    let mut col = Collector::new();
    let db = if crate::simulate::keeps_files(c) {
        crate::simulate::ChildDb::Child
    } else {
        crate::simulate::ChildDb::Memory
    };
    let ((), _, elapsed) = crate::simulate::trace_with(&setup, &spec, false, db, |r| {
        for rec in r {
            col.record(rec.map_err(|e| e.to_string())?);
        }
        Ok(((), false))
    })?;
    let mut sym = cachesim::symbols::Symbolizer::new(cachesim::symbols::ComponentTable::new(
        &cfg.component_rules(),
    ));
    for (avma, size, bias, path) in &col.maps {
        sym.add_object(*avma, *size, *bias, path);
    }
    let pl = autosteps::place(&col, &params, |a| sym.resolve(a).0);
    if pl.evals[0].counts.candidates == 0 {
        json.abandon();
        return Err(
            "the trace holds no candidate CTX point inside an operation: nothing to place".into(),
        );
    }
    let file = PointsFile {
        made_by: format!(
            "oltpscope steps place {} (L1-I {}, knee {},{}): {}",
            args.join(" "),
            cfg.l1i.spec(),
            o.knee.0,
            o.knee.1,
            "a point is enabled when the knee rule chose it at least half the times it was reached"
        ),
        points: pl
            .points
            .iter()
            .map(|r| PointEntry {
                operation: op_name(r.key.0),
                component: component_name(r.key.1),
                ordinal: r.key.2,
                enabled: r.enabled,
                chosen: r.chosen,
                reached: r.reached,
            })
            .collect(),
    };
    let text =
        toml::to_string_pretty(&file).map_err(|e| format!("cannot encode the points: {e}"))?;
    std::fs::write(&o.points, text)
        .map_err(|e| format!("cannot write {}: {e}", o.points.display()))?;
    json.text(&report_text(&pl, &params, elapsed, &o.points));
    json.write(&report_json(&pl, &params, &args, elapsed))?;
    Ok(())
}

fn per(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn report_text(pl: &Placement, p: &Params, elapsed: f64, path: &Path) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let c0 = &pl.evals[0].counts;
    let _ = writeln!(
        o,
        "autoSTEPS on L1-I {} with knee W={} H={}: {} transactions, {} operations, {} instructions per transaction, {} worker thread(s)",
        p.l1i.spec(),
        p.knee_width,
        p.knee_height,
        c0.txns,
        c0.ops,
        cachesim::report::sep(per(c0.instructions, c0.txns).round() as u64),
        pl.threads
    );
    let mut shown: Vec<&autosteps::PointRow> = pl.points.iter().filter(|r| r.chosen > 0).collect();
    shown.sort_by(|a, b| {
        b.enabled
            .cmp(&a.enabled)
            .then(b.chosen.cmp(&a.chosen))
            .then(a.key.cmp(&b.key))
    });
    let total = shown.len();
    shown.truncate(30);
    let _ = writeln!(
        o,
        "\n{} candidate CTX points reached (operation, component, k-th since the operation's entry); those the knee rule chose{}:",
        pl.points.len(),
        if total > shown.len() { format!(" (first {} of {total})", shown.len()) } else { String::new() }
    );
    let _ = writeln!(
        o,
        "  {:<12} {:<13} {:>3} {:>9} {:>9}  switch",
        "operation", "component", "k", "reached", "chosen"
    );
    for r in &shown {
        let _ = writeln!(
            o,
            "  {:<12} {:<13} {:>3} {:>9} {:>9}  {}",
            op_name(r.key.0),
            component_name(r.key.1),
            r.key.2,
            r.reached,
            r.chosen,
            if r.enabled { "yes" } else { "-" }
        );
    }
    if shown.is_empty() {
        let _ = writeln!(
            o,
            "  (none: every operation's code fits the cache between entries)"
        );
    }
    let _ = writeln!(
        o,
        "\nwhere the knee rule wanted a CTX (function of the knee's first instruction; top 12):"
    );
    for w in pl.wanted.iter().take(12) {
        let _ = writeln!(o, "  {:>7}  {:<12} {}", w.count, op_name(w.op), w.function);
    }
    if pl.deferred > 0 {
        let _ = writeln!(
            o,
            "  ({} knees had no candidate point before them since the last CTX: switched at the next one)",
            pl.deferred
        );
    }
    let _ = writeln!(
        o,
        "\nL1-I misses per transaction: the leader's (the thread alone, warm) and a following team member's:"
    );
    let _ = writeln!(
        o,
        "  {:<30} {:>8} {:>8} {:>9}",
        "switches at", "CTX/txn", "leader", "follower"
    );
    for e in &pl.evals {
        let _ = writeln!(
            o,
            "  {:<30} {:>8.1} {:>8.1} {:>9.1}",
            e.name,
            per(e.counts.ctx, e.counts.txns),
            per(e.counts.misses, e.counts.txns),
            per(e.counts.steps_misses, e.counts.txns)
        );
    }
    let _ = writeln!(
        o,
        "(the last row places CTX calls at any instruction, as the paper's tool did; the others switch only at the engines' candidate points)"
    );
    let _ = writeln!(
        o,
        "wrote {} ({} of {} points enabled); use it with --steps-team N --steps-points {}",
        path.display(),
        pl.points.iter().filter(|r| r.enabled).count(),
        pl.points.len(),
        path.display()
    );
    let _ = writeln!(o, "traced and replayed in {elapsed:.1} s");
    o
}

fn report_json(pl: &Placement, p: &Params, args: &[String], elapsed: f64) -> serde_json::Value {
    serde_json::json!({
        "child_args": args,
        "elapsed_s": elapsed,
        "l1i": p.l1i.spec(),
        "knee_width": p.knee_width,
        "knee_height": p.knee_height,
        "threads": pl.threads,
        "deferred": pl.deferred,
        "points": pl.points.iter().map(|r| serde_json::json!({
            "operation": op_name(r.key.0),
            "component": component_name(r.key.1),
            "ordinal": r.key.2,
            "reached": r.reached,
            "chosen": r.chosen,
            "enabled": r.enabled,
        })).collect::<Vec<_>>(),
        "wanted": pl.wanted.iter().map(|w| serde_json::json!({
            "operation": op_name(w.op),
            "function": w.function,
            "count": w.count,
        })).collect::<Vec<_>>(),
        "evaluations": pl.evals.iter().map(|e| serde_json::json!({
            "switches_at": e.name,
            "transactions": e.counts.txns,
            "operations": e.counts.ops,
            "instructions": e.counts.instructions,
            "ctx_per_txn": per(e.counts.ctx, e.counts.txns),
            "leader_l1i_misses_per_txn": per(e.counts.misses, e.counts.txns),
            "follower_l1i_misses_per_txn": per(e.counts.steps_misses, e.counts.txns),
        })).collect::<Vec<_>>(),
    })
}
