//! The profile: shares of the sampled time by component, operation and transaction type
//! (A-to-E's Figure 1 is the component column), as text and JSON.

use crate::attribute::charge;
use components::ComponentTable;
use probe::Op;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Samples with no transaction (read when the thread stopped).
pub const NO_TXN: u32 = u32::MAX;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Share {
    pub name: String,
    pub samples: u64,
    pub share: f64,
}

/// One slice of the samples (a transaction type, an operation) and its components.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Breakdown {
    pub name: String,
    pub samples: u64,
    pub share: f64,
    pub components: Vec<Share>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Profile {
    pub event: &'static str,
    pub frequency_hz: u64,
    /// Whether time in the kernel was sampled (else user time only).
    pub kernel_sampled: bool,
    pub threads: usize,
    pub samples: u64,
    pub lost: u64,
    /// Share of the samples taken in the kernel (charged to the engine code that
    /// entered it).
    pub kernel_share: f64,
    /// Mean user-space frames per sample: near 1 means the call chains were cut (a build
    /// without frame pointers) and library time is charged to `other`.
    pub mean_frames: f64,
    /// Time the workers spent reading their samples, over their measured time.
    pub read_overhead: f64,
    /// Every component, in the map's order.
    pub components: Vec<Share>,
    pub operations: Vec<Share>,
    pub txn_types: Vec<Breakdown>,
    pub by_operation: Vec<Breakdown>,
    /// Innermost functions with the most samples.
    pub top_functions: Vec<Share>,
    /// The innermost functions of the samples no frame of which matches a component
    /// rule (the samples charged to `other`), most samples first: what the map misses.
    /// (A sample in libc or in a function without a symbol whose caller has a component
    /// counts for that component, as everywhere in the profile.)
    pub unmapped_functions: Vec<Share>,
    /// Samples charged to `other` whose innermost function is the system's own code, over
    /// all samples: what the map misses.
    pub unmapped_share: f64,
    /// Samples charged to `other` whose innermost function is library code (a shared
    /// library such as libc, Rust code of other crates, the allocator) and whose call
    /// chain holds no mapped caller (libc has no frame pointers, so a chain through it
    /// is often cut), over all samples; with `unmapped_share`, the share of `other`.
    #[serde(default)]
    pub library_share: f64,
    /// Their innermost functions, most samples first.
    #[serde(default)]
    pub library_functions: Vec<Share>,
    /// The server processes sampled instead of the workers (PostgreSQL's backends), if
    /// any: then operations are not known (they are marked in oltpscope's process).
    pub sampled_processes: Option<Vec<u32>>,
    pub warnings: Vec<String>,
}

const OUTSIDE: &str = "(between operations)";
const NO_TYPE: &str = "(no transaction)";
const TOP: usize = 15;
/// Unmapped functions kept in the JSON (the text shows `TOP`).
const UNMAPPED_KEPT: usize = 2000;

/// Accumulates charged samples.
pub struct Builder {
    table: ComponentTable,
    txn_names: Vec<String>,
    pub lost: u64,
    samples: u64,
    kernel: u64,
    frames: u64,
    comp: Vec<u64>,
    /// [slot][component]; slot = txn type, then one for no transaction.
    by_txn: Vec<Vec<u64>>,
    /// [op index (0 = outside)][component].
    by_op: Vec<Vec<u64>>,
    leaves: HashMap<String, u64>,
    /// Samples by innermost function that matches no rule.
    unmapped: HashMap<String, u64>,
    /// Names of library code the symbolizers found (`Symbolizer::library`).
    pub library: HashSet<String>,
}

fn op_slot(op: Option<Op>) -> usize {
    op.map_or(0, |o| Op::ALL.iter().position(|x| *x == o).unwrap() + 1)
}

fn op_name(slot: usize) -> &'static str {
    if slot == 0 {
        OUTSIDE
    } else {
        Op::ALL[slot - 1].name()
    }
}

impl Builder {
    /// `rules`: the component table (`components::rules_for(engine)`).
    pub fn new(txn_types: &[&str], rules: &[(String, String)]) -> Builder {
        let table = ComponentTable::new(rules);
        let nc = table.names().len();
        Builder {
            txn_names: txn_types.iter().map(|s| s.to_string()).collect(),
            lost: 0,
            samples: 0,
            kernel: 0,
            frames: 0,
            comp: vec![0; nc],
            by_txn: vec![vec![0; nc]; txn_types.len() + 1],
            by_op: vec![vec![0; nc]; Op::ALL.len() + 1],
            leaves: HashMap::new(),
            unmapped: HashMap::new(),
            library: HashSet::new(),
            table,
        }
    }

    /// One sample: its transaction type (`NO_TXN` for none), whether it was taken in the
    /// kernel, and its symbolized user frames (innermost first).
    pub fn add(&mut self, txn_type: u32, kernel: bool, frames: &[Vec<String>]) {
        let c = charge(&self.table, frames);
        let ci = c.component as usize;
        self.samples += 1;
        self.kernel += kernel as u64;
        self.frames += frames.len() as u64;
        self.comp[ci] += 1;
        let slot = if txn_type == NO_TXN || txn_type as usize >= self.txn_names.len() {
            self.txn_names.len()
        } else {
            txn_type as usize
        };
        self.by_txn[slot][ci] += 1;
        self.by_op[op_slot(c.op)][ci] += 1;
        let leaf_name = c.leaf.unwrap_or_else(|| "(unknown)".into());
        if c.component == 0 {
            *self.unmapped.entry(leaf_name.clone()).or_default() += 1;
        }
        let leaf = if kernel {
            "(kernel)".to_string()
        } else {
            leaf_name
        };
        *self.leaves.entry(leaf).or_default() += 1;
    }

    pub fn finish(
        self,
        frequency_hz: u64,
        kernel_sampled: bool,
        threads: usize,
        read_overhead: f64,
        warnings: Vec<String>,
    ) -> Profile {
        let total = self.samples.max(1) as f64;
        let names = self.table.names();
        let shares = |counts: &[u64], of: u64| -> Vec<Share> {
            counts
                .iter()
                .enumerate()
                .map(|(i, &n)| Share {
                    name: names[i].clone(),
                    samples: n,
                    share: n as f64 / of.max(1) as f64,
                })
                .collect()
        };
        let breakdown = |name: &str, counts: &[u64]| {
            let n: u64 = counts.iter().sum();
            Breakdown {
                name: name.to_string(),
                samples: n,
                share: n as f64 / total,
                components: shares(counts, n),
            }
        };
        let mut txn_types: Vec<Breakdown> = self
            .by_txn
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let name = self.txn_names.get(i).map_or(NO_TYPE, |s| s.as_str());
                breakdown(name, c)
            })
            .collect();
        txn_types.retain(|b| b.samples > 0 || b.name != NO_TYPE);
        let by_operation: Vec<Breakdown> = self
            .by_op
            .iter()
            .enumerate()
            .map(|(i, c)| breakdown(op_name(i), c))
            .filter(|b| b.samples > 0)
            .collect();
        let operations = by_operation
            .iter()
            .map(|b| Share {
                name: b.name.clone(),
                samples: b.samples,
                share: b.share,
            })
            .collect();
        let ranked = |m: HashMap<String, u64>, keep: usize| -> Vec<Share> {
            let mut v: Vec<(String, u64)> = m.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            v.into_iter()
                .take(keep)
                .map(|(name, n)| Share {
                    name,
                    samples: n,
                    share: n as f64 / total,
                })
                .collect()
        };
        let library = &self.library;
        let (library_map, unmapped_map): (HashMap<String, u64>, HashMap<String, u64>) = self
            .unmapped
            .into_iter()
            .partition(|(name, _)| library.contains(name) || components::is_library_code(name));
        let unmapped_samples: u64 = unmapped_map.values().sum();
        let library_samples: u64 = library_map.values().sum();
        let top_functions = ranked(self.leaves, TOP);
        let unmapped_functions = ranked(unmapped_map, UNMAPPED_KEPT);
        let library_functions = ranked(library_map, UNMAPPED_KEPT);
        Profile {
            event: "cpu-clock",
            frequency_hz,
            kernel_sampled,
            threads,
            samples: self.samples,
            lost: self.lost,
            kernel_share: self.kernel as f64 / total,
            mean_frames: self.frames as f64 / total,
            read_overhead,
            components: shares(&self.comp, self.samples),
            operations,
            txn_types,
            by_operation,
            top_functions,
            unmapped_functions,
            unmapped_share: unmapped_samples as f64 / total,
            library_share: library_samples as f64 / total,
            library_functions,
            sampled_processes: None,
            warnings,
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:5.1}%", 100.0 * x)
}

impl Profile {
    /// Figure 1's view: one row per component, one column for all the time and one per
    /// transaction type; then operations and the top functions.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.header_text(&mut s);
        if self.samples == 0 {
            let _ = writeln!(
                s,
                "no samples: run longer (--duration) or sample faster (--frequency)"
            );
            return s;
        }
        self.components_text(&mut s);
        self.operations_text(&mut s);
        self.functions_text(&mut s);
        s
    }

    /// What was sampled, and what sampling cost.
    fn header_text(&self, s: &mut String) {
        let whom = match &self.sampled_processes {
            None => format!("{} worker thread(s)", self.threads),
            Some(pids) => format!(
                "{} server process(es) serving the workers' connections (pids {})",
                pids.len(),
                pids.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let _ = writeln!(
            s,
            "\nprofile: {} samples of {} at {} Hz on {}, {} lost; {} in the kernel{}",
            self.samples,
            self.event,
            self.frequency_hz,
            whom,
            self.lost,
            pct(self.kernel_share).trim(),
            if self.kernel_sampled {
                ""
            } else {
                " (kernel time not sampled: not allowed here)"
            }
        );
        let _ = writeln!(
            s,
            "(sampling's own reading cost in the workers: {} of their time; mean {:.1} frames per sample)",
            pct(self.read_overhead).trim(),
            self.mean_frames
        );
    }

    /// Time by component, for all the time and per transaction type.
    fn components_text(&self, s: &mut String) {
        let types: Vec<&Breakdown> = self.txn_types.iter().filter(|b| b.samples > 0).collect();
        let _ = write!(s, "\ntime by component  {:>9}", "all");
        for t in &types {
            let _ = write!(s, " {:>12}", trunc(&t.name, 12));
        }
        let _ = writeln!(s);
        for (i, c) in self.components.iter().enumerate() {
            if c.samples == 0 && types.iter().all(|t| t.components[i].samples == 0) {
                continue;
            }
            let _ = write!(s, "  {:<16} {:>9}", c.name, pct(c.share));
            for t in &types {
                let _ = write!(s, " {:>12}", pct(t.components[i].share));
            }
            let _ = writeln!(s);
        }
        let _ = write!(s, "  {:<16} {:>9}", "(share of time)", pct(1.0));
        for t in &types {
            let _ = write!(s, " {:>12}", pct(t.share));
        }
        let _ = writeln!(s);
    }

    /// Time by operation, with each operation's three main components.
    fn operations_text(&self, s: &mut String) {
        let _ = writeln!(s, "\ntime by operation");
        if self.sampled_processes.is_some() {
            let _ = writeln!(
                s,
                "  not measured: the operations are marked in oltpscope's process, the samples are the server's"
            );
        }
        for o in self
            .operations
            .iter()
            .filter(|_| self.sampled_processes.is_none())
        {
            let top: Vec<String> = self
                .by_operation
                .iter()
                .find(|b| b.name == o.name)
                .map(|b| {
                    let mut c: Vec<&Share> =
                        b.components.iter().filter(|c| c.samples > 0).collect();
                    c.sort_by_key(|c| std::cmp::Reverse(c.samples));
                    c.iter()
                        .take(3)
                        .map(|c| format!("{} {}", c.name, pct(c.share).trim()))
                        .collect()
                })
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:<22} {}   ({})",
                o.name,
                pct(o.share),
                top.join(", ")
            );
        }
    }

    /// The top functions, the unmapped code's functions, and the warnings.
    fn functions_text(&self, s: &mut String) {
        let _ = writeln!(s, "\ntop functions (innermost frame)");
        for f in &self.top_functions {
            let _ = writeln!(s, "  {}  {}", pct(f.share), trunc(&f.name, 100));
        }
        let _ = writeln!(
            s,
            "\nlibrary code with no mapped caller: {} of the samples are in library code (libc, Rust's standard library, the allocator) whose call chain holds no function a component rule maps ('other'; libc has no frame pointers, so chains through it are often cut; JSON: profile.library_functions){}",
            pct(self.library_share).trim(),
            self.library_functions
                .iter()
                .take(3)
                .map(|f| format!("; {} {}", trunc(&f.name, 60), pct(f.share).trim()))
                .collect::<String>()
        );
        let _ = writeln!(
            s,
            "unmapped code: {} of the samples have no function on their stack that a component rule maps ('other') and are the system's own code; their innermost functions ({}; JSON: profile.unmapped_functions):",
            pct(self.unmapped_share).trim(),
            self.unmapped_functions.len()
        );
        for f in self.unmapped_functions.iter().take(TOP) {
            let _ = writeln!(s, "  {}  {}", pct(f.share), trunc(&f.name, 100));
        }
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
    }
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn samples_are_split_by_component_type_and_operation() {
        let mut b = Builder::new(&["new_order", "payment"], &components::default_components());
        let lock = vec![
            f(&["engine_disk::lock::LockManager::acquire"]),
            f(&["api::session::Session<X>::update"]),
        ];
        let btree = vec![
            f(&["engine_disk::btree::BTree::probe"]),
            f(&["api::session::Session<X>::get"]),
        ];
        b.add(0, false, &lock);
        b.add(0, false, &btree);
        b.add(1, true, &lock);
        b.add(NO_TXN, false, &[f(&["driver::run::Shared::stream"])]);
        let p = b.finish(1000, true, 1, 0.0, vec![]);
        let comp = |n: &str| p.components.iter().find(|c| c.name == n).unwrap().samples;
        assert_eq!((comp("lock"), comp("btree"), comp("driver")), (2, 1, 1));
        assert_eq!(p.samples, 4);
        assert!((p.kernel_share - 0.25).abs() < 1e-9);
        let no = &p.txn_types[0];
        assert_eq!((no.name.as_str(), no.samples), ("new_order", 2));
        assert!(
            (no.components
                .iter()
                .find(|c| c.name == "lock")
                .unwrap()
                .share
                - 0.5)
                .abs()
                < 1e-9
        );
        assert_eq!(p.txn_types[2].name, NO_TYPE);
        let op = |n: &str| p.operations.iter().find(|o| o.name == n).map(|o| o.samples);
        assert_eq!(
            (op("update"), op("index_probe"), op(OUTSIDE)),
            (Some(2), Some(1), Some(1))
        );
        let top = |n: &str| {
            p.top_functions
                .iter()
                .find(|f| f.name == n)
                .map(|f| f.samples)
        };
        // A sample in the kernel is named so; its component comes from the user frames.
        assert_eq!(top("(kernel)"), Some(1));
        assert_eq!(top("engine_disk::lock::LockManager::acquire"), Some(1));
        let text = p.to_text();
        assert!(text.contains("time by component"), "{text}");
        assert!(text.contains("new_order"), "{text}");
    }
}
