//! Cache-hierarchy configuration: presets for the papers' machines, overrides parsed from
//! strings like `32K:8:64[:latency]`, the L1-I sweep and the component table.
//!
//! Owns validation: everything the simulator builds from a `Config` has passed
//! `Config::validate`. Must never panic on user input: every parse or validation failure
//! is an `Err(String)` of one clear line.

use serde::{Deserialize, Serialize};

/// Limits, checked in `validate` (so a typo cannot allocate gigabytes).
pub const MAX_LEVEL_BYTES: u64 = 1 << 32;
pub const MAX_LINE_BYTES: u32 = 4096;
pub const MIN_LINE_BYTES: u32 = 8;
pub const MAX_SWEEP_POINTS: usize = 16;
pub const MAX_COMPONENTS: usize = 64;
/// Fully-associative levels are scanned linearly per access; keep them small.
pub const MAX_WAYS: u32 = 1024;

/// One cache level: geometry and hit latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelConfig {
    pub size_bytes: u64,
    pub ways: u32,
    pub line_bytes: u32,
    /// Cycles to hit in this level; the stall charged to a miss in the level above.
    pub latency_cycles: u32,
}

impl LevelConfig {
    pub const fn new(size_bytes: u64, ways: u32, line_bytes: u32, latency_cycles: u32) -> Self {
        LevelConfig {
            size_bytes,
            ways,
            line_bytes,
            latency_cycles,
        }
    }

    pub fn lines(&self) -> u64 {
        self.size_bytes / self.line_bytes as u64
    }

    pub fn sets(&self) -> u64 {
        self.lines() / self.ways as u64
    }

    /// `32K:8:64:4` style, the form the overrides are parsed from.
    pub fn spec(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            format_size(self.size_bytes),
            self.ways,
            self.line_bytes,
            self.latency_cycles
        )
    }

    /// Checks geometry; `what` names the level in the message.
    pub fn validate(&self, what: &str) -> Result<(), String> {
        let l = self.line_bytes;
        if !l.is_power_of_two() || !(MIN_LINE_BYTES..=MAX_LINE_BYTES).contains(&l) {
            return Err(format!(
                "{what}: line size {l} is not a power of two between {MIN_LINE_BYTES} and \
                 {MAX_LINE_BYTES}"
            ));
        }
        if self.ways == 0 || self.ways > MAX_WAYS {
            return Err(format!(
                "{what}: associativity {} is not in 1..={MAX_WAYS}",
                self.ways
            ));
        }
        if self.size_bytes == 0 || self.size_bytes > MAX_LEVEL_BYTES {
            return Err(format!(
                "{what}: size {} is not in 1..={}",
                self.size_bytes,
                format_size(MAX_LEVEL_BYTES)
            ));
        }
        let way_bytes = self.ways as u64 * l as u64;
        if !self.size_bytes.is_multiple_of(way_bytes) {
            return Err(format!(
                "{what}: size {} is not a multiple of ways x line ({} x {l})",
                format_size(self.size_bytes),
                self.ways
            ));
        }
        let sets = self.sets();
        if !sets.is_power_of_two() {
            return Err(format!(
                "{what}: {} / ({} ways x {l} B) gives {sets} sets, not a power of two",
                format_size(self.size_bytes),
                self.ways
            ));
        }
        Ok(())
    }
}

/// Which unified levels exist below the L1s and how the last one behaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Preset the configuration started from (overrides are applied on top).
    pub preset: String,
    pub l1i: LevelConfig,
    pub l1d: LevelConfig,
    pub l2: Option<LevelConfig>,
    pub llc: Option<LevelConfig>,
    /// The last level present back-invalidates the levels above when it evicts.
    pub last_level_inclusive: bool,
    /// Cycles charged to a miss in the last level.
    pub memory_latency_cycles: u32,
    /// Extra L1-I caches fed the same instruction stream (each with its own 3C).
    pub sweep_l1i: Vec<LevelConfig>,
    /// Extra last-level caches fed the stream of misses of the level above the last one
    /// (exact for a non-inclusive last level; see docs/design/cachesim.md).
    pub sweep_llc: Vec<LevelConfig>,
    /// Statistics reset after this many TXN_END markers (caches keep their state).
    /// With `warmup_auto`, the most transactions warm-up may take instead.
    pub warmup_txns: u64,
    /// Warm up until the miss rates settle (see `sim::AUTO_*`), at most `warmup_txns`
    /// transactions.
    #[serde(default)]
    pub warmup_auto: bool,
    /// Stop reading the trace after this many transactions past warm-up.
    #[serde(default)]
    pub measure_txns: Option<u64>,
    /// Stop measuring once the figures have settled (`settle`), `measure_txns` being
    /// the cap.
    #[serde(default)]
    pub settle: Option<crate::settle::Rule>,
    /// Threads that declared a background role run on a core of their own: private
    /// L1s and L2 (every level above the last), sharing the last level with the
    /// workers. Off: they share the workers' hierarchy. Either way they are counted
    /// apart from the workers.
    #[serde(default = "yes")]
    pub background_own_core: bool,
    /// Count every thread as a worker whatever role it declared (whole-program
    /// comparisons, e.g. with cachegrind).
    #[serde(default)]
    pub ignore_roles: bool,
    /// Code charged to `other` (libc, non-inlined std code) counts for the component
    /// of the thread's last code that was not `other`: its caller, as far as the trace
    /// can tell.
    #[serde(default)]
    pub caller_attribution: bool,
    /// Tree pseudo-LRU replacement in every level (ways must be powers of two <= 32)
    /// instead of true LRU.
    pub tree_plru: bool,
    /// Keep a fully-associative shadow and a first-touch set per level (3C).
    pub three_c: bool,
    /// Count an access that straddles lines once (a miss if any line missed) and send all
    /// its lines to the next level on a miss, as cachegrind does. Off: every line is an
    /// access of its own, as hardware counts line fetches.
    pub cachegrind_compat: bool,
    /// Ordered (pattern, component) rules: the first pattern found in `::` + the
    /// demangled function name wins; no match is `other`.
    pub components: Vec<(String, String)>,
    /// The external system whose code the trace holds (`sqlite`, `postgres`): its rule
    /// table (`components::rules_for`) goes between the user's rules and the default
    /// table. Kept as a name so the report's configuration stays small.
    #[serde(default)]
    pub system: Option<String>,
}

fn yes() -> bool {
    true
}

/// Preset names, for help texts.
pub const PRESETS: [&str; 9] = [
    "xeon-e5-2660",
    "broadwell-e5-2680v4",
    "athlonxp",
    "pentium3",
    "skylake-sp",
    "zen3",
    "xeon-e5-2660-lean16k",
    "xeon-e5-2660-lean8k",
    "athlonxp-lean16k",
];

const K: u64 = 1024;
const M: u64 = 1024 * 1024;

/// The lean presets: a paper's machine with a smaller L1-I, so that oltpscope's lean
/// engines (the disk engine's hot TPC-C code is ~48 KB) overflow it about as the papers'
/// systems overflowed theirs (Wonderland: ~128 KB of code on a 32 KB L1-I, ~4:1). Every
/// other level is the machine's. How the sizes were chosen: docs/design/cachesim.md,
/// "Lean presets". (name, machine preset, L1-I, what the report header says)
const LEAN: [(&str, &str, LevelConfig, &str); 3] = [
    (
        "xeon-e5-2660-lean16k",
        "xeon-e5-2660",
        LevelConfig::new(16 * K, 8, 64, 4),
        "the Wonderland machine with a 16K 8-way L1-I: ~48 KB of hot code to 16 KB (3:1), \
         near Wonderland's ~128 KB to 32 KB (4:1)",
    ),
    (
        "xeon-e5-2660-lean8k",
        "xeon-e5-2660",
        LevelConfig::new(8 * K, 8, 64, 4),
        "the Wonderland machine with an 8K 8-way L1-I: ~48 KB of hot code to 8 KB (6:1), \
         beyond Wonderland's ~128 KB to 32 KB (4:1)",
    ),
    (
        "athlonxp-lean16k",
        "athlonxp",
        LevelConfig::new(16 * K, 2, 64, 3),
        "the STEPS AthlonXP with a 16K 2-way L1-I (a geometry STEPS simulated, Fig. 10): \
         ~48 KB of hot code to 16 KB (3:1), near Wonderland's ~128 KB to 32 KB (4:1)",
    ),
];

/// What a lean preset stands for, while its L1-I is still the preset's (None for the
/// papers' machines as built, or once `--l1i` replaced the L1-I).
pub fn preset_note(c: &Config) -> Option<String> {
    LEAN.iter()
        .find(|(n, _, l1i, _)| *n == c.preset && *l1i == c.l1i)
        .map(|(n, _, _, note)| {
            format!("{n} is a lean preset, keeping the papers' code-footprint-to-L1-I ratio for oltpscope's lean engines: {note}")
        })
}

/// The default component table, in matching order (kept in the `components` crate,
/// shared with `profile`).
pub use components::default_components;

impl Config {
    /// A named preset. Latencies not given by the papers are typical published values
    /// (see docs/design/cachesim.md).
    pub fn preset(name: &str) -> Result<Config, String> {
        if let Some((_, machine, l1i, _)) = LEAN.iter().find(|(n, ..)| *n == name) {
            let mut c = Config::preset(machine)?;
            c.preset = name.to_string();
            c.l1i = *l1i;
            return Ok(c);
        }
        let l = LevelConfig::new;
        let (l1i, l1d, l2, llc, incl, mem) = match name {
            // OLTP in Wonderland, Table 1.
            "xeon-e5-2660" => (
                l(32 * K, 8, 64, 4),
                l(32 * K, 8, 64, 4),
                Some(l(256 * K, 8, 64, 8)),
                Some(l(20 * M, 20, 64, 19)),
                true,
                167,
            ),
            // Revisited, Table 1: miss latencies 16 / 26 / 160 are the next level's hit
            // latency. 35 MB is 14 slices x 20 ways x 2048 sets; modelled as one 35-way
            // cache of 16384 sets (same capacity, power-of-two sets).
            "broadwell-e5-2680v4" => (
                l(32 * K, 8, 64, 4),
                l(32 * K, 8, 64, 4),
                Some(l(256 * K, 8, 64, 16)),
                Some(l(35 * M, 35, 64, 26)),
                true,
                160,
            ),
            // STEPS, Table 1: 64 KB + 64 KB 2-way 64 B L1s, 256 KB L2 (exclusive on the
            // real chip: modelled non-inclusive). Two levels.
            "athlonxp" => (
                l(64 * K, 2, 64, 3),
                l(64 * K, 2, 64, 3),
                Some(l(256 * K, 16, 64, 20)),
                None,
                false,
                200,
            ),
            // STEPS, Table 1: 16 KB + 16 KB 4-way 32 B L1s, 256 KB 8-way L2. Two levels.
            "pentium3" => (
                l(16 * K, 4, 32, 3),
                l(16 * K, 4, 32, 3),
                Some(l(256 * K, 8, 32, 7)),
                None,
                false,
                100,
            ),
            // A 16-core Skylake-SP (1.375 MB LLC per core, 11 ways, non-inclusive).
            "skylake-sp" => (
                l(32 * K, 8, 64, 4),
                l(32 * K, 8, 64, 4),
                Some(l(M, 16, 64, 14)),
                Some(l(22 * M, 11, 64, 50)),
                false,
                200,
            ),
            // One Zen 3 CCD: 512 KB L2, 32 MB 16-way victim L3 (non-inclusive).
            "zen3" => (
                l(32 * K, 8, 64, 4),
                l(32 * K, 8, 64, 4),
                Some(l(512 * K, 8, 64, 12)),
                Some(l(32 * M, 16, 64, 46)),
                false,
                300,
            ),
            _ => {
                return Err(format!(
                    "unknown cache preset '{name}' (known: {})",
                    PRESETS.join(", ")
                ))
            }
        };
        Ok(Config {
            preset: name.to_string(),
            l1i,
            l1d,
            l2,
            llc,
            last_level_inclusive: incl,
            memory_latency_cycles: mem,
            sweep_l1i: Vec::new(),
            sweep_llc: Vec::new(),
            warmup_txns: 0,
            warmup_auto: false,
            measure_txns: None,
            settle: None,
            background_own_core: true,
            ignore_roles: false,
            caller_attribution: false,
            tree_plru: false,
            three_c: true,
            cachegrind_compat: false,
            components: default_components(),
            system: None,
        })
    }

    /// The rule table the simulator classifies with: the user's rules, the system's
    /// (`system`), then the default table.
    pub fn component_rules(&self) -> Vec<(String, String)> {
        let Some(sys) = &self.system else {
            return self.components.clone();
        };
        let user = self.components.len() - self.default_rule_count();
        let d = default_components().len();
        let own = components::rules_for(sys);
        let mut v = self.components[..user].to_vec();
        v.extend(own[..own.len() - d].iter().cloned());
        v.extend(self.components[user..].iter().cloned());
        v
    }

    /// Overrides one level (`l1i`, `l1d`, `l2`, `llc`) from `SIZE:WAYS:LINE[:LATENCY]`;
    /// `none` removes `l2` or `llc`. A missing latency keeps the level's current one.
    pub fn set_level(&mut self, level: &str, spec: &str) -> Result<(), String> {
        let current = match level {
            "l1i" => Some(self.l1i),
            "l1d" => Some(self.l1d),
            "l2" => self.l2,
            "llc" => self.llc,
            _ => {
                return Err(format!(
                    "unknown cache level '{level}' (use l1i, l1d, l2, llc)"
                ))
            }
        };
        if spec.trim() == "none" {
            return match level {
                "l2" => {
                    self.l2 = None;
                    Ok(())
                }
                "llc" => {
                    self.llc = None;
                    Ok(())
                }
                _ => Err(format!("--{level} none: the L1 caches cannot be removed")),
            };
        }
        let cfg = parse_level(spec, current.map(|c| c.latency_cycles), None)
            .map_err(|e| format!("--{level} {spec}: {e}"))?;
        cfg.validate(&format!("--{level} {spec}"))?;
        match level {
            "l1i" => self.l1i = cfg,
            "l1d" => self.l1d = cfg,
            "l2" => self.l2 = Some(cfg),
            _ => self.llc = Some(cfg),
        }
        Ok(())
    }

    /// `l1i=8K,16K,32K` or `llc=8M,16M` (sizes inherit the swept level's ways, line and
    /// latency) or full specs `l1i=16K:4:64,32K:8:64`. `llc` is the last level present.
    pub fn set_sweep(&mut self, spec: &str) -> Result<(), String> {
        let (list, base, is_llc) = if let Some(l) = spec.strip_prefix("l1i=") {
            (l, self.l1i, false)
        } else if let Some(l) = spec.strip_prefix("llc=") {
            let last = self.llc.or(self.l2).ok_or_else(|| {
                format!("--sweep {spec}: this hierarchy has no unified level to sweep")
            })?;
            (l, last, true)
        } else {
            return Err(format!(
                "--sweep {spec}: expected l1i=SIZE,SIZE,... or llc=SIZE,..."
            ));
        };
        let mut out = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let cfg = parse_level(item, Some(base.latency_cycles), Some(base))
                .map_err(|e| format!("--sweep {spec}: {item}: {e}"))?;
            cfg.validate(&format!("--sweep {item}")).map_err(|e| {
                if item.contains(':') {
                    e
                } else {
                    format!("{e} (give SIZE:WAYS:LINE to choose another geometry)")
                }
            })?;
            out.push(cfg);
        }
        if out.is_empty() || out.len() > MAX_SWEEP_POINTS {
            return Err(format!(
                "--sweep {spec}: give 1 to {MAX_SWEEP_POINTS} sizes"
            ));
        }
        if is_llc {
            self.sweep_llc = out;
        } else {
            self.sweep_l1i = out;
        }
        Ok(())
    }

    /// `PATTERN=NAME`, matched before the default table (first match wins).
    pub fn add_component(&mut self, rule: &str) -> Result<(), String> {
        let (p, n) = rule
            .split_once('=')
            .filter(|(p, n)| !p.is_empty() && !n.trim().is_empty())
            .ok_or_else(|| format!("--component {rule}: expected PATTERN=NAME"))?;
        let user_rules = self.components.len() - self.default_rule_count();
        self.components
            .insert(user_rules, (p.to_string(), n.trim().to_string()));
        self.validate_components()
    }

    fn default_rule_count(&self) -> usize {
        let d = default_components();
        if self.components.ends_with(&d) {
            d.len()
        } else {
            0
        }
    }

    fn validate_components(&self) -> Result<(), String> {
        let rules = self.component_rules();
        let mut names: Vec<&str> = rules.iter().map(|(_, n)| n.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        if names.len() + 1 > MAX_COMPONENTS {
            return Err(format!("more than {MAX_COMPONENTS} component names"));
        }
        Ok(())
    }

    /// Checks every level and the relations between them.
    pub fn validate(&self) -> Result<(), String> {
        self.l1i.validate("L1-I")?;
        self.l1d.validate("L1-D")?;
        if let Some(l2) = &self.l2 {
            l2.validate("L2")?;
        }
        if let Some(llc) = &self.llc {
            llc.validate("LLC")?;
        }
        for s in &self.sweep_l1i {
            s.validate("sweep L1-I")?;
        }
        for s in &self.sweep_llc {
            s.validate("sweep LLC")?;
        }
        let l1_line = self.l1i.line_bytes.max(self.l1d.line_bytes);
        if !self.sweep_llc.is_empty() {
            if self.llc.or(self.l2).is_none() {
                return Err("an LLC sweep needs a unified level".to_string());
            }
            let above = self
                .l2
                .filter(|_| self.llc.is_some())
                .map_or(l1_line, |l| l.line_bytes);
            if self.sweep_llc.iter().any(|s| s.line_bytes < above) {
                return Err(format!(
                    "LLC sweep: line size below the {above}-byte lines of the level above"
                ));
            }
        }
        let mut upper = ("L1", l1_line);
        for (name, lvl) in [("L2", &self.l2), ("LLC", &self.llc)] {
            if let Some(l) = lvl {
                if l.line_bytes < upper.1 {
                    return Err(format!(
                        "{name} line size {} is smaller than {}'s {}: line sizes must not \
                         shrink going down the hierarchy",
                        l.line_bytes, upper.0, upper.1
                    ));
                }
                upper = (name, l.line_bytes);
            }
        }
        if self.tree_plru {
            let levels = [
                Some(&self.l1i),
                Some(&self.l1d),
                self.l2.as_ref(),
                self.llc.as_ref(),
            ];
            let all = levels
                .into_iter()
                .flatten()
                .chain(&self.sweep_l1i)
                .chain(&self.sweep_llc);
            for l in all {
                if !l.ways.is_power_of_two() || l.ways > 32 {
                    return Err(format!(
                        "tree pseudo-LRU needs a power-of-two associativity up to 32, not {} \
                         ({})",
                        l.ways,
                        l.spec()
                    ));
                }
            }
        }
        if self.cachegrind_compat && self.last_level_inclusive {
            return Err(
                "cachegrind-compatible counting models a non-inclusive last level: \
                        turn inclusion off"
                    .to_string(),
            );
        }
        self.validate_components()
    }
}

/// The `oltpscope simulate` options as strings, turned into a validated `Config` in one
/// call (so the CLI stays a thin layer).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// Preset name; empty means `xeon-e5-2660`, the Wonderland machine.
    pub preset: String,
    pub l1i: Option<String>,
    pub l1d: Option<String>,
    /// `SIZE:WAYS:LINE[:LAT]` or `none`.
    pub l2: Option<String>,
    pub llc: Option<String>,
    /// `l1i=8K,16K,...` and/or `llc=8M,16M,...` (one entry per swept level).
    pub sweep: Vec<String>,
    /// `PATTERN=NAME` rules, matched in order before the defaults.
    pub components: Vec<String>,
    pub warmup_txns: u64,
    /// Warm up until the miss rates settle, at most `warmup_txns` transactions.
    pub warmup_auto: bool,
    pub measure_txns: Option<u64>,
    /// Stop measuring once the figures have settled (at most `measure_txns`).
    #[serde(default)]
    pub settle: Option<crate::settle::Rule>,
    /// Background threads share the workers' L1s and L2.
    pub background_shared_core: bool,
    pub caller_attribution: bool,
    /// Turn 3C classification off (faster).
    pub no_three_c: bool,
    /// Tree pseudo-LRU instead of true LRU.
    pub tree_plru: bool,
    /// Override the preset's inclusion of the last level.
    pub inclusive: Option<bool>,
    pub memory_latency_cycles: Option<u32>,
}

impl Options {
    pub fn to_config(&self) -> Result<Config, String> {
        let preset = if self.preset.is_empty() {
            "xeon-e5-2660"
        } else {
            &self.preset
        };
        let mut c = Config::preset(preset)?;
        for (lvl, spec) in [
            ("l1i", &self.l1i),
            ("l1d", &self.l1d),
            ("l2", &self.l2),
            ("llc", &self.llc),
        ] {
            if let Some(s) = spec {
                c.set_level(lvl, s)?;
            }
        }
        for s in &self.sweep {
            c.set_sweep(s)?;
        }
        for r in &self.components {
            c.add_component(r)?;
        }
        c.warmup_txns = self.warmup_txns;
        c.warmup_auto = self.warmup_auto;
        c.measure_txns = self.measure_txns;
        c.settle = self.settle;
        c.background_own_core = !self.background_shared_core;
        c.caller_attribution = self.caller_attribution;
        c.three_c = !self.no_three_c;
        c.tree_plru = self.tree_plru;
        if let Some(i) = self.inclusive {
            c.last_level_inclusive = i;
        }
        if let Some(m) = self.memory_latency_cycles {
            c.memory_latency_cycles = m;
        }
        c.validate()?;
        Ok(c)
    }
}

/// `SIZE[:WAYS:LINE[:LATENCY]]`; a lone size needs `inherit` (the sweep), and WAYS may be
/// `full` (one set).
fn parse_level(
    spec: &str,
    default_latency: Option<u32>,
    inherit: Option<LevelConfig>,
) -> Result<LevelConfig, String> {
    let parts: Vec<&str> = spec.trim().split(':').map(str::trim).collect();
    let size_bytes = parse_size(parts[0])?;
    let (ways_s, line_s, lat_s) = match (parts.len(), inherit) {
        (1, Some(base)) => {
            let ways = base
                .ways
                .min((size_bytes / base.line_bytes as u64).max(1) as u32);
            return Ok(LevelConfig {
                size_bytes,
                ways,
                ..base
            });
        }
        (3, _) => (parts[1], parts[2], None),
        (4, _) => (parts[1], parts[2], Some(parts[3])),
        _ => return Err("expected SIZE:WAYS:LINE or SIZE:WAYS:LINE:LATENCY".to_string()),
    };
    let line_bytes: u32 = line_s
        .parse()
        .map_err(|_| format!("line size '{line_s}' is not a number of bytes"))?;
    let ways = if ways_s == "full" {
        let lines = size_bytes / line_bytes.max(1) as u64;
        u32::try_from(lines).map_err(|_| "too many lines for a fully-associative level")?
    } else {
        ways_s
            .parse()
            .map_err(|_| format!("associativity '{ways_s}' is not a number"))?
    };
    let latency_cycles = match (lat_s, default_latency) {
        (Some(s), _) => s
            .parse()
            .map_err(|_| format!("latency '{s}' is not a number of cycles"))?,
        (None, Some(d)) => d,
        (None, None) => return Err("this level is new here: give its latency".to_string()),
    };
    Ok(LevelConfig {
        size_bytes,
        ways,
        line_bytes,
        latency_cycles,
    })
}

/// Sizes in bytes, the one parser of oltpscope (cache levels here, database and buffer
/// pool sizes in the CLI): `512`, `32K`, `32KB`, `32KiB`, `1.5M`, `1G`, `1T`; every unit
/// is a power of 1024, case does not matter.
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_size::Config::new()
        .with_binary()
        .parse_size(s)
        .map_err(|e| {
            format!("malformed size '{s}' ({e}; e.g. 32K, 64MB, 1.5G: units are powers of 1024)")
        })
}

/// Shortest exact binary-unit form: 32768 -> `32K`, 23068672 -> `22M`, 1000 -> `1000`.
pub fn format_size(b: u64) -> String {
    if b >= 1024 * M && b.is_multiple_of(1024 * M) {
        format!("{}G", b / (1024 * M))
    } else if b >= M && b.is_multiple_of(M) {
        format!("{}M", b / M)
    } else if b >= K && b.is_multiple_of(K) {
        format!("{}K", b / K)
    } else {
        format!("{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_validates() {
        for p in PRESETS {
            let c = Config::preset(p).unwrap();
            c.validate().unwrap_or_else(|e| panic!("preset {p}: {e}"));
        }
    }

    #[test]
    fn lean_presets_are_their_machine_with_a_smaller_l1i() {
        for (lean, machine, l1i) in [
            ("xeon-e5-2660-lean16k", "xeon-e5-2660", "16K:8:64:4"),
            ("xeon-e5-2660-lean8k", "xeon-e5-2660", "8K:8:64:4"),
            ("athlonxp-lean16k", "athlonxp", "16K:2:64:3"),
        ] {
            let c = Options {
                preset: lean.into(),
                ..Options::default()
            }
            .to_config()
            .unwrap();
            let m = Config::preset(machine).unwrap();
            assert_eq!((c.preset.as_str(), c.l1i.spec()), (lean, l1i.to_string()));
            assert_eq!((c.l1d, c.l2, c.llc), (m.l1d, m.l2, m.llc));
            assert_eq!(c.memory_latency_cycles, m.memory_latency_cycles);
            assert!(preset_note(&c).unwrap().contains("lean preset"));
            assert!(preset_note(&m).is_none());
        }
        let e = Config::preset("xeon-lean").unwrap_err();
        assert!(e.contains("athlonxp-lean16k"), "{e}");
    }

    #[test]
    fn overrides_and_sweep_parse() {
        let mut c = Config::preset("xeon-e5-2660").unwrap();
        c.set_level("l1i", "64K:8:64").unwrap();
        assert_eq!(c.l1i, LevelConfig::new(64 * K, 8, 64, 4));
        c.set_level("llc", "8MB:16:64:30").unwrap();
        assert_eq!(c.llc, Some(LevelConfig::new(8 * M, 16, 64, 30)));
        c.set_level("l2", "none").unwrap();
        assert_eq!(c.l2, None);
        c.set_sweep("l1i=8K,16K,256K,4K:full:64").unwrap();
        assert_eq!(c.sweep_l1i.len(), 4);
        assert_eq!(c.sweep_l1i[0], LevelConfig::new(8 * K, 8, 64, 4));
        assert_eq!(c.sweep_l1i[3].ways, 64);
        c.validate().unwrap();
        assert_eq!(c.l1i.spec(), "64K:8:64:4");
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let e = Config::preset("pentium9").unwrap_err();
        assert!(e.contains("unknown cache preset 'pentium9'"), "{e}");
        let mut c = Config::preset("zen3").unwrap();
        let e = c.set_level("l1d", "32Q:8:64").unwrap_err();
        assert!(e.contains("malformed size"), "{e}");
        let e = c.set_level("l1d", "x:8:64").unwrap_err();
        assert!(e.contains("malformed size"), "{e}");
        let e = c.set_level("l1d", "1e30:8:64").unwrap_err();
        assert!(e.contains("malformed size"), "{e}");
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert_eq!(parse_size("32KiB"), Ok(32 << 10));
        let e = c.set_level("l1d", "48K:8:64").unwrap_err();
        assert!(e.contains("96 sets, not a power of two"), "{e}");
        let e = c.set_level("l1d", "32K:8:48").unwrap_err();
        assert!(e.contains("line size 48 is not a power of two"), "{e}");
        let e = c.set_level("l1d", "32K:8").unwrap_err();
        assert!(e.contains("expected SIZE:WAYS:LINE"), "{e}");
        let e = c.set_level("l1d", "32K:0:64").unwrap_err();
        assert!(e.contains("associativity 0"), "{e}");
        let e = c.set_level("l3", "32K:8:64").unwrap_err();
        assert!(e.contains("unknown cache level"), "{e}");
        let e = c.set_sweep("l2=8K").unwrap_err();
        assert!(e.contains("expected l1i="), "{e}");
        let mut two = Config::preset("athlonxp").unwrap();
        two.set_sweep("llc=128K,1M").unwrap();
        assert_eq!(two.sweep_llc[0].ways, 16);
        two.set_level("l2", "none").unwrap();
        let e = two.set_sweep("llc=1M").unwrap_err();
        assert!(e.contains("no unified level"), "{e}");
        let e = c.add_component("noequals").unwrap_err();
        assert!(e.contains("PATTERN=NAME"), "{e}");
        c.set_level("l2", "512K:8:32").unwrap();
        let e = c.validate().unwrap_err();
        assert!(e.contains("line sizes must not shrink"), "{e}");
        let mut bw = Config::preset("broadwell-e5-2680v4").unwrap();
        bw.tree_plru = true;
        let e = bw.validate().unwrap_err();
        assert!(
            e.contains("power-of-two associativity up to 32, not 35"),
            "{e}"
        );
        let mut p3 = Config::preset("pentium3").unwrap();
        let e = p3.set_level("llc", "1M:8:64").unwrap_err();
        assert!(e.contains("give its latency"), "{e}");
    }

    #[test]
    fn options_build_a_config() {
        let o = Options {
            l2: Some("none".into()),
            llc: Some("8M:16:64".into()),
            sweep: vec!["l1i=16K,64K".into(), "llc=4M,16M".into()],
            components: vec!["::mytree::=btree".into()],
            warmup_txns: 1000,
            inclusive: Some(false),
            ..Options::default()
        };
        let c = o.to_config().unwrap();
        assert_eq!(c.preset, "xeon-e5-2660");
        assert_eq!(
            (c.l2, c.llc),
            (None, Some(LevelConfig::new(8 * M, 16, 64, 19)))
        );
        assert_eq!(
            (c.sweep_l1i.len(), c.warmup_txns, c.three_c),
            (2, 1000, true)
        );
        assert!(!c.last_level_inclusive);
        assert_eq!(
            c.components[0],
            ("::mytree::".to_string(), "btree".to_string())
        );
        let bad = Options {
            preset: "486".into(),
            ..Options::default()
        };
        assert!(bad
            .to_config()
            .unwrap_err()
            .contains("unknown cache preset"));
    }

    #[test]
    fn user_components_come_before_defaults() {
        let mut c = Config::preset("zen3").unwrap();
        c.add_component("::bpool::evict=evict").unwrap();
        c.add_component("mycrate::=mine").unwrap();
        assert_eq!(c.components[0].1, "evict");
        assert_eq!(c.components[1].1, "mine");
        assert_eq!(c.components[2].0, "::exec::scan::");
        assert_eq!(c.components[2..], components::default_components());
    }

    #[test]
    fn a_system_s_rules_go_between_the_user_s_and_the_defaults() {
        let mut c = Config::preset("zen3").unwrap();
        c.add_component("sqlite3BtreeNext=mine").unwrap();
        c.system = Some("sqlite".into());
        let rules = c.component_rules();
        assert_eq!(rules[0], ("sqlite3BtreeNext".into(), "mine".into()));
        assert!(rules.ends_with(&default_components()));
        assert!(rules
            .iter()
            .any(|(p, n)| p == "sqlite3Btree*" && n == "btree"));
        // The report's configuration names the system, not its thousands of rules.
        assert_eq!(c.components.len(), default_components().len() + 1);
        c.validate().unwrap();
    }
}
