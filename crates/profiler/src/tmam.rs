//! Intel's Top-down Microarchitecture Analysis Method (TMAM, Yasin, ISPASS 2014) and the
//! usual ratios (IPC, misses and branch mispredictions per 1000 instructions, memory-level
//! parallelism) from raw counter values: pure arithmetic, fed either by `profile
//! --counters` (the events a machine lets the process open, `counters`) or by a
//! recorded file (`profile --counters-from FILE`).
//!
//! Formulas, for a 4-wide Intel core with Skylake's event names (the "revisited" paper
//! used a Broadwell: its `ICACHE.IFDATA_STALL` is accepted for `ICACHE_16B.IFDATA_STALL`):
//! - SLOTS = 4 x CPU_CLK_UNHALTED.THREAD; Frontend bound = IDQ_UOPS_NOT_DELIVERED.CORE /
//!   SLOTS; Bad speculation = (UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + 4 x
//!   INT_MISC.RECOVERY_CYCLES) / SLOTS; Retiring = UOPS_RETIRED.RETIRE_SLOTS / SLOTS;
//!   Backend bound = 1 - the three others (level 1).
//! - Fetch latency = 4 x IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE / SLOTS, fetch
//!   bandwidth = Frontend bound - fetch latency; within fetch latency: I-cache misses =
//!   ICACHE_16B.IFDATA_STALL / CLKS, ITLB misses = ICACHE_64B.IFTAG_STALL / CLKS, branch
//!   resteers = (INT_MISC.CLEAR_RESTEER_CYCLES + 9 x BACLEARS.ANY) / CLKS.
//! - Branch mispredicts = Bad speculation x BR_MISP_RETIRED.ALL_BRANCHES /
//!   (BR_MISP_RETIRED.ALL_BRANCHES + MACHINE_CLEARS.COUNT); machine clears the rest.
//! - Memory bound = Backend bound x (CYCLE_ACTIVITY.STALLS_MEM_ANY +
//!   EXE_ACTIVITY.BOUND_ON_STORES) / (CYCLE_ACTIVITY.STALLS_TOTAL +
//!   EXE_ACTIVITY.1_PORTS_UTIL + [Retiring > 0.1] EXE_ACTIVITY.2_PORTS_UTIL +
//!   EXE_ACTIVITY.BOUND_ON_STORES); Core bound = Backend bound - Memory bound.
//! - Within memory (shares of clocks, Yasin's Section IV): L1 = (STALLS_MEM_ANY -
//!   STALLS_L1D_MISS), L2 = (STALLS_L1D_MISS - STALLS_L2_MISS), L3 = (STALLS_L2_MISS -
//!   STALLS_L3_MISS), DRAM = STALLS_L3_MISS, stores = EXE_ACTIVITY.BOUND_ON_STORES, each
//!   over CLKS (CYCLE_ACTIVITY.* events).
//! - MLP = L1D_PEND_MISS.PENDING / L1D_PEND_MISS.PENDING_CYCLES (outstanding L1-D
//!   misses when there is at least one).
//! - The "revisited" paper's categories (its Appendix C, Table 18): Dcache = Memory
//!   bound, Resource/dependency = Core bound, Icache = I-cache + ITLB misses, Branch
//!   misprediction = Bad speculation + branch resteers, Decoding = the rest of the
//!   frontend (fetch latency's other parts and fetch bandwidth), Retiring.
//!
//! A metric whose events are missing is `None` and the events are listed, never guessed.
//! Owns no I/O but parsing a recorded file's text.

use std::collections::BTreeMap;

/// Issue width of the cores these formulas are for (Skylake and its predecessors).
pub const PIPELINE_WIDTH: f64 = 4.0;

/// Raw counter values by canonical event name (Intel's, upper case; generic perf
/// names are mapped to the Intel event they stand for, see `canonical`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Counters(pub BTreeMap<String, f64>);

/// perf's generic names and their Intel equivalents (for the ratios; generic events are
/// what `profile --counters` can open on any Intel or AMD core).
const ALIASES: &[(&str, &str)] = &[
    ("CYCLES", "CPU_CLK_UNHALTED.THREAD"),
    ("CPU-CYCLES", "CPU_CLK_UNHALTED.THREAD"),
    ("CPU_CLK_UNHALTED.THREAD_P", "CPU_CLK_UNHALTED.THREAD"),
    ("INSTRUCTIONS", "INST_RETIRED.ANY"),
    ("BRANCH-MISSES", "BR_MISP_RETIRED.ALL_BRANCHES"),
    ("L1-ICACHE-LOAD-MISSES", "ICACHE_64B.IFTAG_MISS"),
    ("L1-DCACHE-LOAD-MISSES", "MEM_LOAD_RETIRED.L1_MISS"),
    ("LLC-LOAD-MISSES", "MEM_LOAD_RETIRED.L3_MISS"),
    // Broadwell's name of the I-cache stall event.
    ("ICACHE.IFDATA_STALL", "ICACHE_16B.IFDATA_STALL"),
];

/// The canonical name of an event as perf or a user writes it: modifiers (`:u`, `:k`,
/// `:ppp`) and a `cpu/.../` wrapper dropped, upper case, aliases resolved.
pub fn canonical(name: &str) -> String {
    let mut n = name.trim();
    if let Some(inner) = n
        .strip_prefix("cpu/")
        .or_else(|| n.strip_prefix("cpu_core/"))
    {
        n = inner.trim_end_matches('/');
    }
    let n = n.split(':').next().unwrap_or(n).to_ascii_uppercase();
    ALIASES
        .iter()
        .find(|(a, _)| *a == n)
        .map_or(n, |(_, c)| c.to_string())
}

impl Counters {
    pub fn insert(&mut self, event: &str, value: f64) {
        *self.0.entry(canonical(event)).or_default() += value;
    }

    fn get(&self, e: &str) -> Option<f64> {
        self.0.get(e).copied()
    }
}

/// Level 1 and 2 of TMAM, shares of the pipeline slots (sum of level 1 = 1).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Tmam {
    pub retiring: f64,
    pub bad_speculation: f64,
    pub frontend_bound: f64,
    pub backend_bound: f64,
    pub fetch_latency: Option<f64>,
    pub fetch_bandwidth: Option<f64>,
    pub icache_misses: Option<f64>,
    pub itlb_misses: Option<f64>,
    pub branch_resteers: Option<f64>,
    pub branch_mispredicts: Option<f64>,
    pub machine_clears: Option<f64>,
    pub memory_bound: Option<f64>,
    pub core_bound: Option<f64>,
    pub l1_bound: Option<f64>,
    pub l2_bound: Option<f64>,
    pub l3_bound: Option<f64>,
    pub dram_bound: Option<f64>,
    pub store_bound: Option<f64>,
}

/// The "revisited" paper's simplified categories (Table 18), shares of the slots.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PaperCategories {
    pub retiring: f64,
    pub branch_misprediction: f64,
    pub icache: f64,
    pub decoding: f64,
    pub dcache: f64,
    pub resource_dependency: f64,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Metrics {
    pub ipc: Option<f64>,
    pub branch_mispredictions_pki: Option<f64>,
    pub l1i_mpki: Option<f64>,
    pub l1d_mpki: Option<f64>,
    pub l2_mpki: Option<f64>,
    pub llc_mpki: Option<f64>,
    pub mlp: Option<f64>,
    pub tmam: Option<Tmam>,
    pub revisited_categories: Option<PaperCategories>,
    /// Events that would complete the figures left out (None above).
    pub missing: Vec<String>,
}

const CLKS: &str = "CPU_CLK_UNHALTED.THREAD";
const INST: &str = "INST_RETIRED.ANY";

/// Every figure the counters allow.
pub fn compute(c: &Counters) -> Metrics {
    let mut need = Need {
        c,
        missing: Vec::new(),
    };
    let mut m = Metrics {
        ipc: need.all(&[INST, CLKS]).map(|v| ratio(v[0], v[1])),
        branch_mispredictions_pki: need.pki("BR_MISP_RETIRED.ALL_BRANCHES"),
        l1i_mpki: need.pki("ICACHE_64B.IFTAG_MISS"),
        l1d_mpki: need.pki("MEM_LOAD_RETIRED.L1_MISS"),
        l2_mpki: need.pki("MEM_LOAD_RETIRED.L2_MISS"),
        llc_mpki: need.pki("MEM_LOAD_RETIRED.L3_MISS"),
        mlp: need
            .all(&["L1D_PEND_MISS.PENDING", "L1D_PEND_MISS.PENDING_CYCLES"])
            .map(|v| ratio(v[0], v[1])),
        ..Metrics::default()
    };
    if let Some(t) = tmam(&mut need) {
        m.revisited_categories = paper_categories(&t);
        m.tmam = Some(t);
    }
    m.missing = need.missing;
    m
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The counters, and the events a figure needed that they lack.
struct Need<'a> {
    c: &'a Counters,
    missing: Vec<String>,
}

impl Need<'_> {
    /// All of `events`, or None with the absent ones noted.
    fn all(&mut self, events: &[&str]) -> Option<Vec<f64>> {
        let v: Vec<Option<f64>> = events.iter().map(|e| self.c.get(e)).collect();
        if v.iter().all(Option::is_some) {
            return Some(v.into_iter().flatten().collect());
        }
        for (e, x) in events.iter().zip(&v) {
            if x.is_none() && !self.missing.iter().any(|m| m == e) {
                self.missing.push(e.to_string());
            }
        }
        None
    }

    /// `miss` events per 1000 instructions.
    fn pki(&mut self, miss: &str) -> Option<f64> {
        self.all(&[miss, INST]).map(|v| ratio(v[0] * 1000.0, v[1]))
    }
}

/// TMAM's level 1, and of level 2 what the counters allow.
fn tmam(need: &mut Need) -> Option<Tmam> {
    let v = need.all(&[
        CLKS,
        "IDQ_UOPS_NOT_DELIVERED.CORE",
        "UOPS_ISSUED.ANY",
        "UOPS_RETIRED.RETIRE_SLOTS",
        "INT_MISC.RECOVERY_CYCLES",
    ])?;
    let (clks, idq, issued, retired, recovery) = (v[0], v[1], v[2], v[3], v[4]);
    let slots = PIPELINE_WIDTH * clks;
    let frontend = ratio(idq, slots);
    let bad = ratio(issued - retired + PIPELINE_WIDTH * recovery, slots);
    let retiring = ratio(retired, slots);
    let backend = 1.0 - (frontend + bad + retiring);
    let mut t = Tmam {
        retiring,
        bad_speculation: bad,
        frontend_bound: frontend,
        backend_bound: backend,
        ..Tmam::default()
    };
    frontend_and_bad_speculation(need, &mut t, clks);
    backend_level2(need, &mut t, clks);
    Some(t)
}

/// Level 2 under the front end and under bad speculation.
fn frontend_and_bad_speculation(need: &mut Need, t: &mut Tmam, clks: f64) {
    let slots = PIPELINE_WIDTH * clks;
    let of_clks = |x: f64| ratio(x, clks);
    if let Some(v) = need.all(&["IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE"]) {
        let lat = ratio(PIPELINE_WIDTH * v[0], slots);
        t.fetch_latency = Some(lat);
        t.fetch_bandwidth = Some(t.frontend_bound - lat);
    }
    t.icache_misses = need
        .all(&["ICACHE_16B.IFDATA_STALL"])
        .map(|v| of_clks(v[0]));
    t.itlb_misses = need.all(&["ICACHE_64B.IFTAG_STALL"]).map(|v| of_clks(v[0]));
    t.branch_resteers = need
        .all(&["INT_MISC.CLEAR_RESTEER_CYCLES", "BACLEARS.ANY"])
        .map(|v| of_clks(v[0] + 9.0 * v[1]));
    if let Some(v) = need.all(&["BR_MISP_RETIRED.ALL_BRANCHES", "MACHINE_CLEARS.COUNT"]) {
        let bad = t.bad_speculation;
        let bm = bad * ratio(v[0], v[0] + v[1]);
        t.branch_mispredicts = Some(bm);
        t.machine_clears = Some(bad - bm);
    }
}

/// Level 2 (and the memory levels below it) under the back end.
fn backend_level2(need: &mut Need, t: &mut Tmam, clks: f64) {
    let of_clks = |x: f64| ratio(x, clks);
    let Some(v) = need.all(&[
        "CYCLE_ACTIVITY.STALLS_TOTAL",
        "CYCLE_ACTIVITY.STALLS_MEM_ANY",
        "EXE_ACTIVITY.1_PORTS_UTIL",
        "EXE_ACTIVITY.2_PORTS_UTIL",
        "EXE_ACTIVITY.BOUND_ON_STORES",
    ]) else {
        return;
    };
    let (total, mem, one, two, stores) = (v[0], v[1], v[2], v[3], v[4]);
    let few = one + if t.retiring > 0.1 { two } else { 0.0 };
    let mb = t.backend_bound * ratio(mem + stores, total + few + stores);
    t.memory_bound = Some(mb);
    t.core_bound = Some(t.backend_bound - mb);
    t.store_bound = Some(of_clks(stores));
    if let Some(v) = need.all(&[
        "CYCLE_ACTIVITY.STALLS_L1D_MISS",
        "CYCLE_ACTIVITY.STALLS_L2_MISS",
        "CYCLE_ACTIVITY.STALLS_L3_MISS",
    ]) {
        let (l1m, l2m, l3m) = (v[0], v[1], v[2]);
        t.l1_bound = Some(of_clks(mem - l1m));
        t.l2_bound = Some(of_clks(l1m - l2m));
        t.l3_bound = Some(of_clks(l2m - l3m));
        t.dram_bound = Some(of_clks(l3m));
    }
}

/// The "revisited" paper's categories, when every level 2 figure they add up is known.
fn paper_categories(t: &Tmam) -> Option<PaperCategories> {
    let (Some(lat), Some(bw), Some(ic), Some(itlb), Some(rs), Some(mb), Some(cb)) = (
        t.fetch_latency,
        t.fetch_bandwidth,
        t.icache_misses,
        t.itlb_misses,
        t.branch_resteers,
        t.memory_bound,
        t.core_bound,
    ) else {
        return None;
    };
    Some(PaperCategories {
        retiring: t.retiring,
        branch_misprediction: t.bad_speculation + rs,
        icache: ic + itlb,
        decoding: (lat - ic - itlb - rs) + bw,
        dcache: mb,
        resource_dependency: cb,
    })
}

/// Parses a recorded counter file: a TOML or JSON table of event = value (by the
/// file's extension, `.toml` / `.json`), or otherwise the output of `perf stat` (its
/// human form, "  1,744,441,333  cycles  # ...", or `perf stat -x,`'s CSV). Lines perf
/// marks `<not counted>` or `<not supported>` are left out (their events are then
/// missing). An error is one line naming the file's problem.
pub fn parse(name: &str, text: &str) -> Result<Counters, String> {
    let mut c = Counters::default();
    let lower = name.to_ascii_lowercase();
    let table: Option<Vec<(String, serde_json::Value)>> = if lower.ends_with(".json") {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{name}: not valid JSON: {e}"))?;
        let serde_json::Value::Object(o) = v else {
            return Err(format!("{name}: expected a JSON object of event: value"));
        };
        Some(o.into_iter().collect())
    } else if lower.ends_with(".toml") {
        let v: toml::Table = toml::from_str(text)
            .map_err(|e| format!("{name}: not valid TOML: {}", one_line(&e.to_string())))?;
        // `CPU_CLK_UNHALTED.THREAD = 1` is a dotted key: nested tables, joined again.
        fn flatten(prefix: &str, t: toml::Table, out: &mut Vec<(String, serde_json::Value)>) {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k
                } else {
                    format!("{prefix}.{k}")
                };
                match v {
                    toml::Value::Table(inner) => flatten(&key, inner, out),
                    toml::Value::Integer(i) => out.push((key, serde_json::Value::from(i))),
                    toml::Value::Float(f) => out.push((key, serde_json::Value::from(f))),
                    other => out.push((key, serde_json::Value::String(other.to_string()))),
                }
            }
        }
        let mut rows = Vec::new();
        flatten("", v, &mut rows);
        Some(rows)
    } else {
        None
    };
    match table {
        Some(rows) => {
            for (k, v) in rows {
                let x = v
                    .as_f64()
                    .ok_or_else(|| format!("{name}: the value of {k} is not a number ({v})"))?;
                if !x.is_finite() || x < 0.0 {
                    return Err(format!("{name}: the value of {k} is not a count ({x})"));
                }
                c.insert(&k, x);
            }
        }
        None => parse_perf_stat(name, text, &mut c)?,
    }
    if c.0.is_empty() {
        return Err(format!(
            "{name}: no counter values found (expected event = value in TOML or JSON, or perf stat output)"
        ));
    }
    Ok(c)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn parse_perf_stat(name: &str, text: &str, c: &mut Counters) -> Result<(), String> {
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.contains("<not ") {
            continue;
        }
        // `perf stat -x,`: value,unit,event,...
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        let event_like = |f: &str| {
            f.chars().any(|ch| ch.is_ascii_alphabetic()) && !f.contains(char::is_whitespace)
        };
        // (A human line's thousands separators split into digit groups, not an event.)
        if fields.len() >= 3
            && fields[0].parse::<f64>().is_ok()
            && !fields[1].contains(char::is_whitespace)
            && event_like(fields[2])
        {
            c.insert(fields[2], fields[0].parse::<f64>().expect("checked"));
            continue;
        }
        // Human form: the count (with thousands separators), then the event.
        let mut words = l.split_whitespace();
        let (Some(count), Some(event)) = (words.next(), words.next()) else {
            continue;
        };
        let digits = count.replace(',', "");
        if digits.is_empty() || !digits.chars().all(|ch| ch.is_ascii_digit() || ch == '.') {
            continue; // a header or the elapsed-time lines
        }
        let x: f64 = digits
            .parse()
            .map_err(|_| format!("{name}:{}: cannot read the count {count}", i + 1))?;
        if event.starts_with('#') || event.chars().all(|ch| ch.is_ascii_digit()) {
            continue;
        }
        // "seconds time elapsed" and "msec task-clock" carry units, not events.
        if matches!(event, "seconds" | "msec") {
            continue;
        }
        c.insert(event, x);
    }
    Ok(())
}

/// The figures as text lines (shares in percent of the pipeline slots).
pub fn to_text(m: &Metrics) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    let p = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
    let _ = writeln!(
        o,
        "  IPC {}   branch mispredictions per 1000 instructions {}   MLP {}",
        f(m.ipc, 2),
        f(m.branch_mispredictions_pki, 2),
        f(m.mlp, 2)
    );
    let _ = writeln!(
        o,
        "  misses per 1000 instructions: L1-I {}  L1-D {}  L2 {}  LLC {}",
        f(m.l1i_mpki, 2),
        f(m.l1d_mpki, 2),
        f(m.l2_mpki, 2),
        f(m.llc_mpki, 2)
    );
    match &m.tmam {
        None => {
            let _ = writeln!(o, "  TMAM: needs the level-1 events (see missing)");
        }
        Some(t) => {
            let _ = writeln!(
                o,
                "  TMAM level 1: retiring {}  bad speculation {}  frontend bound {}  backend bound {}",
                p(Some(t.retiring)),
                p(Some(t.bad_speculation)),
                p(Some(t.frontend_bound)),
                p(Some(t.backend_bound))
            );
            let _ = writeln!(
                o,
                "  frontend: fetch latency {} (I-cache {}, ITLB {}, branch resteers {}), fetch bandwidth {}",
                p(t.fetch_latency),
                p(t.icache_misses),
                p(t.itlb_misses),
                p(t.branch_resteers),
                p(t.fetch_bandwidth)
            );
            let _ = writeln!(
                o,
                "  bad speculation: branch mispredicts {}, machine clears {}",
                p(t.branch_mispredicts),
                p(t.machine_clears)
            );
            let _ = writeln!(
                o,
                "  backend: memory {} (L1 {}, L2 {}, L3 {}, DRAM {}, stores {}), core {}",
                p(t.memory_bound),
                p(t.l1_bound),
                p(t.l2_bound),
                p(t.l3_bound),
                p(t.dram_bound),
                p(t.store_bound),
                p(t.core_bound)
            );
        }
    }
    if let Some(r) = &m.revisited_categories {
        let _ = writeln!(
            o,
            "  as the revisited paper's Table 18: retiring {}  branch misprediction {}  icache {}  decoding {}  dcache {}  resource/dependency {}",
            p(Some(r.retiring)),
            p(Some(r.branch_misprediction)),
            p(Some(r.icache)),
            p(Some(r.decoding)),
            p(Some(r.dcache)),
            p(Some(r.resource_dependency))
        );
    }
    if !m.missing.is_empty() {
        let _ = writeln!(
            o,
            "  not computed, missing events: {}",
            m.missing.join(", ")
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("computed");
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    /// Hand-made counts (not a measurement) chosen so every formula of the module doc
    /// comes out round; the expected values are worked out in the comments.
    fn constructed() -> Counters {
        let mut c = Counters::default();
        for (e, v) in [
            ("CPU_CLK_UNHALTED.THREAD", 1000.0), // SLOTS = 4000
            ("INST_RETIRED.ANY", 800.0),
            ("IDQ_UOPS_NOT_DELIVERED.CORE", 1200.0),
            ("UOPS_ISSUED.ANY", 1100.0),
            ("UOPS_RETIRED.RETIRE_SLOTS", 1000.0),
            ("INT_MISC.RECOVERY_CYCLES", 25.0),
            ("IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE", 200.0),
            ("ICACHE_16B.IFDATA_STALL", 100.0),
            ("ICACHE_64B.IFTAG_STALL", 30.0),
            ("INT_MISC.CLEAR_RESTEER_CYCLES", 20.0),
            ("BACLEARS.ANY", 2.0),
            ("BR_MISP_RETIRED.ALL_BRANCHES", 30.0),
            ("MACHINE_CLEARS.COUNT", 10.0),
            ("CYCLE_ACTIVITY.STALLS_TOTAL", 350.0),
            ("CYCLE_ACTIVITY.STALLS_MEM_ANY", 250.0),
            ("EXE_ACTIVITY.1_PORTS_UTIL", 50.0),
            ("EXE_ACTIVITY.2_PORTS_UTIL", 50.0),
            ("EXE_ACTIVITY.BOUND_ON_STORES", 50.0),
            ("CYCLE_ACTIVITY.STALLS_L1D_MISS", 180.0),
            ("CYCLE_ACTIVITY.STALLS_L2_MISS", 120.0),
            ("CYCLE_ACTIVITY.STALLS_L3_MISS", 90.0),
            ("L1D_PEND_MISS.PENDING", 600.0),
            ("L1D_PEND_MISS.PENDING_CYCLES", 200.0),
            ("MEM_LOAD_RETIRED.L1_MISS", 40.0),
            ("MEM_LOAD_RETIRED.L2_MISS", 8.0),
            ("MEM_LOAD_RETIRED.L3_MISS", 2.0),
            ("ICACHE_64B.IFTAG_MISS", 16.0),
        ] {
            c.insert(e, v);
        }
        c
    }

    #[test]
    fn tmam_levels_one_and_two_by_hand() {
        let m = compute(&constructed());
        // The same counts as a TOML file with Intel's dotted names give the same.
        let file: String = constructed()
            .0
            .iter()
            .map(|(k, v)| format!("{k} = {v}\n"))
            .collect();
        assert_eq!(compute(&parse("c.toml", &file).unwrap()), m);
        assert!(m.missing.is_empty(), "{:?}", m.missing);
        close(m.ipc, 0.8); // 800 / 1000
        close(m.mlp, 3.0); // 600 / 200
        close(m.l1d_mpki, 50.0); // 40 x 1000 / 800
        close(m.l2_mpki, 10.0);
        close(m.llc_mpki, 2.5);
        close(m.l1i_mpki, 20.0);
        close(m.branch_mispredictions_pki, 37.5); // 30 x 1000 / 800
        let t = m.tmam.expect("level 1 computed");
        close(Some(t.frontend_bound), 0.30); // 1200 / 4000
        close(Some(t.bad_speculation), 0.05); // (1100 - 1000 + 4 x 25) / 4000
        close(Some(t.retiring), 0.25); // 1000 / 4000
        close(Some(t.backend_bound), 0.40); // 1 - 0.60
        close(t.fetch_latency, 0.20); // 4 x 200 / 4000
        close(t.fetch_bandwidth, 0.10); // 0.30 - 0.20
        close(t.icache_misses, 0.10); // 100 / 1000
        close(t.itlb_misses, 0.03);
        close(t.branch_resteers, 0.038); // (20 + 9 x 2) / 1000
        close(t.branch_mispredicts, 0.0375); // 0.05 x 30 / 40
        close(t.machine_clears, 0.0125);
        // Retiring 0.25 > 0.1: 2-port cycles count. (250 + 50) / (350 + 50 + 50 + 50).
        close(t.memory_bound, 0.24); // 0.40 x 0.6
        close(t.core_bound, 0.16);
        close(t.l1_bound, 0.07); // (250 - 180) / 1000
        close(t.l2_bound, 0.06);
        close(t.l3_bound, 0.03);
        close(t.dram_bound, 0.09);
        close(t.store_bound, 0.05);
        let r = m.revisited_categories.expect("every event given");
        close(Some(r.dcache), 0.24);
        close(Some(r.resource_dependency), 0.16);
        close(Some(r.icache), 0.13);
        close(Some(r.branch_misprediction), 0.088); // 0.05 + 0.038
        close(Some(r.decoding), 0.132); // (0.20 - 0.10 - 0.03 - 0.038) + 0.10
        close(Some(r.retiring), 0.25);
        let sum = r.dcache + r.resource_dependency + r.icache + r.branch_misprediction;
        close(Some(sum + r.decoding + r.retiring), 1.0);
    }

    #[test]
    fn low_retiring_leaves_out_two_port_cycles() {
        let mut c = constructed();
        // Retiring 200 / 4000 = 0.05, bad speculation (300 - 200 + 4 x 25) / 4000 = 0.05.
        c.0.insert("UOPS_RETIRED.RETIRE_SLOTS".into(), 200.0);
        c.0.insert("UOPS_ISSUED.ANY".into(), 300.0);
        let t = compute(&c).tmam.unwrap();
        close(Some(t.backend_bound), 0.60); // 1 - (0.30 + 0.05 + 0.05)
                                            // (250 + 50) / (350 + 50 + 50): the 2-port cycles are not backend-bound cycles.
        close(t.memory_bound, 0.60 * 300.0 / 450.0);
    }

    #[test]
    fn missing_events_are_named_and_nothing_is_guessed() {
        let mut c = Counters::default();
        c.insert("cycles", 10.0);
        c.insert("instructions", 5.0);
        let m = compute(&c);
        close(m.ipc, 0.5);
        assert!(m.tmam.is_none() && m.revisited_categories.is_none());
        assert!(m.l1d_mpki.is_none());
        for e in ["IDQ_UOPS_NOT_DELIVERED.CORE", "MEM_LOAD_RETIRED.L1_MISS"] {
            assert!(m.missing.iter().any(|x| x == e), "{e} in {:?}", m.missing);
        }
        assert!(to_text(&m).contains("missing events"));
    }

    /// A recorded `perf stat -d md5sum *` on a 3 GHz Intel core, as published by Bojan
    /// Nikolic, "How to monitor the full range of CPU performance events"
    /// (http://www.bnikolic.co.uk/blog/hpc-prof-events.html): the counts below are that
    /// page's; perf itself printed "1.38 insns per cycle" for them.
    fn recorded_perf_stat() -> Counters {
        let mut c = Counters::default();
        for (e, v) in [
            ("cycles", 1_744_441_333.0),
            ("instructions", 2_401_954_846.0),
            ("branch-misses", 109_768.0),
            ("L1-dcache-load-misses", 13_539_746.0),
            ("LLC-load-misses", 0.0),
        ] {
            c.insert(e, v);
        }
        c
    }

    #[test]
    fn ratios_of_a_recorded_perf_stat() {
        let m = compute(&recorded_perf_stat());
        // 2,401,954,846 / 1,744,441,333 = 1.37692...; perf printed 1.38.
        let ipc = m.ipc.unwrap();
        assert!((ipc - 1.376_92).abs() < 1e-5 && format!("{ipc:.2}") == "1.38");
        // 13,539,746 x 1000 / 2,401,954,846 = 5.63697...
        assert!((m.l1d_mpki.unwrap() - 5.636_97).abs() < 1e-5);
        // 109,768 x 1000 / 2,401,954,846 = 0.0456994...
        assert!((m.branch_mispredictions_pki.unwrap() - 0.045_699).abs() < 1e-6);
        assert_eq!(m.llc_mpki, Some(0.0));
    }

    #[test]
    fn perf_stat_text_csv_toml_and_json_give_the_same_counters() {
        let want = recorded_perf_stat();
        let human = "\n Performance counter stats for 'md5sum':\n\n     1,744,441,333 cycles                    #    3.013 GHz\n     2,401,954,846 instructions              #    1.38  insns per cycle\n           109,768 branch-misses             #    0.76% of all branches\n        13,539,746 L1-dcache-load-misses\n                 0 LLC-load-misses\n     <not counted> LLC-loads\n\n       0.581869522 seconds time elapsed\n";
        assert_eq!(parse("capture.txt", human).unwrap(), want);
        let csv = "1744441333,,cycles,580000000,100.00,,\n2401954846,,instructions,580000000,100.00,,\n109768,,branch-misses:u,580000000,100.00,,\n13539746,,L1-dcache-load-misses,580000000,100.00,,\n0,,LLC-load-misses,580000000,100.00,,\n<not supported>,,topdown-fetch-bubbles,0,100.00,,\n";
        assert_eq!(parse("capture.csv", csv).unwrap(), want);
        let toml = "cycles = 1744441333\ninstructions = 2401954846\n\"branch-misses\" = 109768\n\"L1-dcache-load-misses\" = 13539746\n\"LLC-load-misses\" = 0\n";
        assert_eq!(parse("c.toml", toml).unwrap(), want);
        let json = r#"{"cycles": 1744441333, "instructions": 2401954846, "branch-misses": 109768, "L1-dcache-load-misses": 13539746, "LLC-load-misses": 0}"#;
        assert_eq!(parse("c.JSON", json).unwrap(), want);
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        for (name, text, says) in [
            ("a.toml", "cycles = ", "not valid TOML"),
            ("a.toml", "cycles = \"many\"", "not a number"),
            ("a.toml", "cycles = -5", "not a count"),
            ("a.json", "[1, 2]", "expected a JSON object"),
            ("a.json", "{", "not valid JSON"),
            ("a.txt", "hello world\n", "no counter values"),
            ("a.toml", "", "no counter values"),
        ] {
            let e = parse(name, text).unwrap_err();
            assert!(
                e.contains(says) && !e.contains('\n'),
                "{name} {text:?}: {e}"
            );
        }
    }

    #[test]
    fn event_names_are_canonical() {
        assert_eq!(canonical("cpu/cycles/"), "CPU_CLK_UNHALTED.THREAD");
        assert_eq!(
            canonical("idq_uops_not_delivered.core:u"),
            "IDQ_UOPS_NOT_DELIVERED.CORE"
        );
        assert_eq!(canonical("ICACHE.IFDATA_STALL"), "ICACHE_16B.IFDATA_STALL");
    }
}
