//! What every paper's reproduction shares: the transcribed papers, the verdict types
//! and the margin rule, the experiment context (`Ctx`), and small helpers to read
//! results and format numbers.
//!
//! Owns: the verdict rules common to all papers. Must never: know a paper's experiments
//! (it imports no paper file).

use crate::plot;
use crate::sweep::{self, Kind, Spec, Summary};
pub(crate) use runspec::{Options, RunSpec, Workload};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const PAPERS: &[&str] = &["wonderland", "revisited", "sensitivity", "a-to-e", "steps"];
pub const RESULT_JSON: &str = "reproduce.json";

/// How large the experiments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// For tests: the smallest runs that exercise every step (seconds each).
    Tiny,
    /// A few minutes per paper.
    Quick,
    /// Under an hour per paper.
    Full,
}

pub(crate) fn paper_text(name: &str) -> Option<&'static str> {
    Some(match name {
        "wonderland" => include_str!("../papers/wonderland.toml"),
        "revisited" => include_str!("../papers/revisited.toml"),
        "sensitivity" => include_str!("../papers/sensitivity.toml"),
        "a-to-e" => include_str!("../papers/a-to-e.toml"),
        "steps" => include_str!("../papers/steps.toml"),
        _ => return None,
    })
}

/// A paper as transcribed.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    pub paper: String,
    pub title: String,
    pub file: String,
    pub setup: String,
    #[serde(default)]
    pub table: Vec<PaperTable>,
    #[serde(default)]
    pub finding: Vec<FindingText>,
}

#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PaperTable {
    pub id: String,
    pub source: String,
    pub caption: String,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FindingText {
    pub id: String,
    pub source: String,
    pub claim: String,
    /// The capability the finding needs and oltpscope lacks.
    pub needs: Option<String>,
}

pub fn load_paper(name: &str) -> Result<Paper, String> {
    let text = paper_text(name).ok_or_else(|| {
        format!(
            "unknown paper '{name}' (one of: {}; or all)",
            PAPERS.join(", ")
        )
    })?;
    let p: Paper = toml::from_str(text).map_err(|e| format!("papers/{name}.toml: {e}"))?;
    for t in &p.table {
        for r in &t.rows {
            assert_eq!(
                r.values.len(),
                t.columns.len(),
                "papers/{name}.toml table {}: row {} has not one value per column",
                t.id,
                r.name
            );
        }
    }
    Ok(p)
}

/// A table of measured values, shown beside the paper's table `beside` (an id).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Table {
    pub beside: Option<String>,
    pub caption: String,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Agrees,
    Disagrees,
    /// Rests on a difference no larger than its spread over repeated measurements (or
    /// measured once, so its spread is unknown): neither agreement nor disagreement.
    WithinNoise,
    /// Needs a capability oltpscope lacks.
    NotAvailable,
    /// Its experiment failed or could not run here (the reason is given).
    NotMeasured,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Agrees => "agrees",
            Status::Disagrees => "DISAGREES",
            Status::WithinNoise => "within noise",
            Status::NotAvailable => "not available",
            Status::NotMeasured => "not measured",
        }
    }
}

/// A difference measured over repetitions, signed so that above zero the claim holds:
/// its median and its spread (how far the repetitions move it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Margin {
    pub median: f64,
    pub spread: f64,
    /// Repetitions behind the figure (the fewest of its terms').
    pub n: usize,
}

impl Margin {
    /// One value per repetition of the same difference (paired: each repetition
    /// measured both sides): median and range.
    pub fn paired(values: &[f64]) -> Option<Margin> {
        let s = sweep::Spread::of(values)?;
        Some(Margin {
            median: s.median,
            spread: s.max - s.min,
            n: s.n,
        })
    }

    /// The sum of `plus` minus the sum of `minus`, each term repeated apart (unpaired):
    /// the spread is the sum of the terms' ranges, the widest the difference can move.
    pub fn of_terms(plus: &[sweep::Spread], minus: &[sweep::Spread]) -> Option<Margin> {
        if plus.is_empty() && minus.is_empty() {
            return None;
        }
        let all = plus.iter().chain(minus);
        Some(Margin {
            median: plus.iter().map(|s| s.median).sum::<f64>()
                - minus.iter().map(|s| s.median).sum::<f64>(),
            spread: all.clone().map(|s| s.max - s.min).sum(),
            n: all.map(|s| s.n).min().expect("a term"),
        })
    }

    /// The rule: decided only when the margin exceeds the spread, on at least two
    /// repetitions; a margin of exactly zero never agrees.
    pub fn status(&self) -> Status {
        assert!(self.spread >= 0.0, "a negative spread: {self:?}");
        if self.n < 2 || self.median.abs() <= self.spread {
            Status::WithinNoise
        } else if self.median > 0.0 {
            Status::Agrees
        } else {
            Status::Disagrees
        }
    }

    /// "+4.1 points, spread 1.2 over 3" with `unit` formatting both numbers.
    pub fn describe(&self, unit: fn(f64) -> String) -> String {
        format!(
            "margin {}, spread {} over {} repetition{}",
            unit(self.median),
            unit(self.spread),
            self.n,
            if self.n == 1 { "" } else { "s" }
        )
    }
}

/// Several parts of one finding: one decided disagreement decides it; else any part
/// within noise leaves it within noise; else it agrees. Parts that did not run are not
/// passed in.
pub fn combine(parts: &[Status]) -> Status {
    assert!(
        parts
            .iter()
            .all(|s| matches!(s, Status::Agrees | Status::Disagrees | Status::WithinNoise)),
        "combine takes judged parts only: {parts:?}"
    );
    assert!(
        !parts.is_empty(),
        "a finding with no judged part is not measured"
    );
    if parts.contains(&Status::Disagrees) {
        Status::Disagrees
    } else if parts.contains(&Status::WithinNoise) {
        Status::WithinNoise
    } else {
        Status::Agrees
    }
}

/// A boolean test as a judged part.
pub(crate) fn holds(b: bool) -> Status {
    if b {
        Status::Agrees
    } else {
        Status::Disagrees
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Verdict {
    pub id: String,
    pub source: String,
    pub claim: String,
    /// The system the verdict is about when a finding is judged per system (Wonderland:
    /// the disk engine apart from the memory engine); None when judged once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub status: Status,
    /// The measured numbers the verdict rests on, or why there is none.
    pub why: String,
}

/// What a reproduction produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub paper: Paper,
    pub scale: Scale,
    pub tables: Vec<Table>,
    pub verdicts: Vec<Verdict>,
    /// How many verdicts have each status (from `verdicts`).
    pub counts: Counts,
    /// (caption, SVG) drawn from the measurements.
    #[serde(skip)]
    pub figures: Vec<(String, String)>,
    /// The sweep directories, relative to the output directory.
    pub sweeps: Vec<String>,
    /// Each experiment's time in this run, in the order they ran.
    pub experiments: Vec<Experiment>,
    pub elapsed_s: f64,
}

/// One experiment (a sweep) of a reproduction: how long it took in this run and how
/// many of its repetitions ran then (a resumed run skips those already done).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Experiment {
    pub id: String,
    pub elapsed_s: f64,
    /// Repetitions run (failed ones included).
    pub ran: usize,
    /// Repetitions found done by an earlier run.
    pub resumed: usize,
}

/// The verdicts counted by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub agrees: usize,
    pub disagrees: usize,
    pub within_noise: usize,
    pub not_available: usize,
    pub not_measured: usize,
}

impl Counts {
    pub fn of(verdicts: &[Verdict]) -> Counts {
        let n = |st: Status| verdicts.iter().filter(|f| f.status == st).count();
        Counts {
            agrees: n(Status::Agrees),
            disagrees: n(Status::Disagrees),
            within_noise: n(Status::WithinNoise),
            not_available: n(Status::NotAvailable),
            not_measured: n(Status::NotMeasured),
        }
    }

    /// "2 agree, 1 disagrees, 1 within noise, ..."
    pub fn text(&self) -> String {
        format!(
            "{} agree, {} disagree, {} within noise, {} not available, {} not measured",
            self.agrees, self.disagrees, self.within_noise, self.not_available, self.not_measured
        )
    }
}

/// Runs the experiments: sweeps into `out/<id>/`, other commands' output.
pub struct Ctx<'a> {
    pub exe: PathBuf,
    pub out: PathBuf,
    pub scale: Scale,
    /// Progress lines (one per finished repetition).
    pub say: &'a mut dyn FnMut(&str),
    pub(crate) sweeps: Vec<String>,
    pub(crate) experiments: Vec<Experiment>,
}

impl<'a> Ctx<'a> {
    pub fn new(exe: PathBuf, out: PathBuf, scale: Scale, say: &'a mut dyn FnMut(&str)) -> Ctx<'a> {
        Ctx {
            exe,
            out,
            scale,
            say,
            sweeps: Vec::new(),
            experiments: Vec::new(),
        }
    }

    /// Run (or resume) a sweep into `out/<id>`.
    pub(crate) fn sweep(&mut self, id: &str, spec: Spec) -> Result<Summary, String> {
        let mut r = self.sweeps_together(vec![(id.to_string(), spec)])?;
        Ok(r.pop().expect("one sweep given, one summary"))
    }

    /// Run (or resume) several sweeps at once, each into `out/<id>`; their summaries in
    /// the order given. Their repetitions share the machine's slots (`sweep::run`):
    /// simulations of different sweeps fill both cores, a measured run still runs
    /// alone. List the longest first: slots are served in the order asked for. Each
    /// experiment's time is its own start to end, so times of sweeps run together
    /// overlap.
    pub(crate) fn sweeps_together(
        &mut self,
        list: Vec<(String, Spec)>,
    ) -> Result<Vec<Summary>, String> {
        self.sweeps_each(list).into_iter().collect()
    }

    /// [`Ctx::sweeps_together`], with each sweep's own result: one that failed does not
    /// hide the others' summaries.
    pub(crate) fn sweeps_each(
        &mut self,
        list: Vec<(String, Spec)>,
    ) -> Vec<Result<Summary, String>> {
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let exe = &self.exe;
        let out = &self.out;
        let done: Vec<(Result<Summary, String>, Experiment)> = std::thread::scope(|sc| {
            let handles: Vec<_> = list
                .iter()
                .map(|(id, spec)| {
                    let tx = tx.clone();
                    sc.spawn(move || run_one(exe, &out.join(id), id, spec, &tx))
                })
                .collect();
            drop(tx);
            // Progress lines as they come, from whichever sweep.
            for line in rx {
                (self.say)(&line);
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("a sweep's thread does not panic"))
                .collect()
        });
        let mut summaries = Vec::new();
        for ((id, _), (r, e)) in list.iter().zip(done) {
            let r = r.and_then(|s| {
                (self.say)(&format!(
                    "  {id}: {:.0} s ({} repetitions run, {} already done)\n",
                    e.elapsed_s, e.ran, e.resumed
                ));
                self.experiments.push(e);
                self.sweeps.push(id.to_string());
                // Figures of the sweep itself (curves, normalized table) in its directory:
                // lane work, never beside a measured run of another paper.
                sweep::lane_work(|| plot::plot(&self.out.join(id)))?;
                Ok(s)
            });
            summaries.push(r);
        }
        summaries
    }

    pub(crate) fn repeat(&self) -> u32 {
        match self.scale {
            Scale::Full => 3,
            _ => 1,
        }
    }

    /// Repetitions of an experiment whose verdict rests on a difference of a few points
    /// (`Margin`): never one, which has no spread; two at the test scale.
    pub(crate) fn repeat_for_margin(&self) -> u32 {
        match self.scale {
            Scale::Tiny => 2,
            Scale::Quick | Scale::Full => 3,
        }
    }
}

/// One sweep of `Ctx::sweeps_together`, its progress lines sent to `say`; its summary and
/// its time.
fn run_one(
    exe: &Path,
    dir: &Path,
    id: &str,
    spec: &Spec,
    say: &std::sync::mpsc::Sender<String>,
) -> (Result<Summary, String>, Experiment) {
    let t0 = std::time::Instant::now();
    let (mut ran, mut resumed) = (0, 0);
    let r = sweep::run(exe, dir, spec, |ev| {
        if let sweep::Event::Finished {
            point,
            rep,
            outcome,
            headline,
            seconds,
        } = ev
        {
            match outcome {
                sweep::Outcome::Skipped => resumed += 1,
                _ => ran += 1,
            }
            let into = (id, t0.elapsed().as_secs_f64());
            let line = sweep::rep_line(point, rep, outcome, headline, seconds, Some(into));
            let _ = say.send(format!("  {id}/{line}\n"));
        } else if let sweep::Event::Loaded { shape, seconds } = ev {
            let _ = say.send(format!("  {id}/{shape}: loaded once in {seconds:.1} s\n"));
        } else if let sweep::Event::Checked { shape, seconds } = ev {
            // A resident child's shape (`resident`), checked after its last run.
            let _ = say.send(format!(
                "  {id}/{shape}: checked once after its runs in {seconds:.1} s\n"
            ));
        }
    });
    let e = Experiment {
        id: id.to_string(),
        elapsed_s: t0.elapsed().as_secs_f64(),
        ran,
        resumed,
    };
    (r, e)
}

/// The first complete repetition's report of the point with these values.
pub(crate) fn report(dir: &Path, s: &Summary, values: &[(&str, &str)]) -> Option<Value> {
    let p = s.points.iter().find(|p| {
        values
            .iter()
            .all(|(k, v)| p.values.iter().any(|(pk, pv)| pk == k && pv == v))
    })?;
    let point = sweep::Point {
        values: p.values.clone(),
    };
    (1..=s.spec.repeat).find_map(|rep| {
        let (d, _) = sweep::rep_dir(dir, &point, rep);
        crate::results::load_report(&d).ok()
    })
}

/// The median of a figure at the point with these values.
pub(crate) fn median(s: &Summary, values: &[(&str, &str)], fig: &str) -> Option<f64> {
    s.points
        .iter()
        .find(|p| {
            values
                .iter()
                .all(|(k, v)| p.values.iter().any(|(pk, pv)| pk == k && pv == v))
        })
        .and_then(|p| sweep::figure(p, fig))
        .map(|t| t.median)
}

pub(crate) fn f2(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub(crate) fn pct(v: f64) -> String {
    // + 0.0: an empty sum is -0.0, which would print as "-0.0%".
    format!("{:.1}%", 100.0 * v + 0.0)
}

pub(crate) fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or("-".into(), f)
}

/// Verdicts for one paper: a finding not listed by the experiment code is one whose
/// capability is missing (its `needs`) — a finding with neither is a bug here.
pub(crate) struct Verdicts {
    pub(crate) paper: Paper,
    pub(crate) out: Vec<Verdict>,
}

impl Verdicts {
    pub(crate) fn new(paper: &Paper) -> Verdicts {
        Verdicts {
            paper: paper.clone(),
            out: Vec::new(),
        }
    }

    pub(crate) fn text(&self, id: &str) -> &FindingText {
        self.paper
            .finding
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("finding {id} is not in papers/{}.toml", self.paper.paper))
    }

    pub(crate) fn set(&mut self, id: &str, status: Status, why: String) {
        self.set_case(id, None, status, why);
    }

    /// A verdict about one system of several (each judged apart).
    pub(crate) fn set_case(&mut self, id: &str, case: Option<&str>, status: Status, why: String) {
        let t = self.text(id).clone();
        assert!(
            !self
                .out
                .iter()
                .any(|x| x.id == id && x.case.as_deref() == case),
            "finding {id} ({case:?}) judged twice"
        );
        self.out.push(Verdict {
            id: t.id,
            source: t.source,
            claim: t.claim,
            case: case.map(str::to_string),
            status,
            why,
        });
    }

    /// Agrees iff `holds`; `why` gives the numbers either way.
    pub(crate) fn check(&mut self, id: &str, holds: bool, why: String) {
        self.set(
            id,
            if holds {
                Status::Agrees
            } else {
                Status::Disagrees
            },
            why,
        );
    }

    pub(crate) fn unmeasured(&mut self, id: &str, why: &str) {
        self.set(id, Status::NotMeasured, why.to_string());
    }

    /// Every finding in paper order; those with `needs` as not available.
    pub(crate) fn finish(mut self) -> Vec<Verdict> {
        let mut v = Vec::new();
        for f in &self.paper.finding {
            // Its verdicts, per case in the order they were set.
            let (mine, rest): (Vec<Verdict>, Vec<Verdict>) =
                self.out.drain(..).partition(|x| x.id == f.id);
            self.out = rest;
            if !mine.is_empty() {
                v.extend(mine);
            } else {
                let needs = f.needs.clone().unwrap_or_else(|| {
                    panic!(
                        "finding {} of {} has neither a measurement nor a `needs`",
                        f.id, self.paper.paper
                    )
                });
                v.push(Verdict {
                    id: f.id.clone(),
                    source: f.source.clone(),
                    claim: f.claim.clone(),
                    case: None,
                    status: Status::NotAvailable,
                    why: format!("needs {needs}"),
                });
            }
        }
        v
    }
}

/// Which of the papers' systems the real ones stand for, said in every report that
/// measures them (docs/reproduce.md says the same).
pub(crate) const POSTGRES_ROLE: &str = "PostgreSQL (a disk-based system with a large legacy code base: the revisited paper's DBMS D, the commercial systems the papers cite)";
pub(crate) const SQLITE_ROLE: &str =
    "SQLite (an embedded system, in the process: no counterpart in the papers)";
/// A PostgreSQL case where no server is installed: never 0, never dropped.
pub(crate) const PG_NOT_INSTALLED: &str =
    "not measured: PostgreSQL not installed (scripts/install-postgres.sh installs it)";

/// Are PostgreSQL's server binaries here? (The runs themselves would try to install
/// it; a reproduction only says it is missing.)
pub(crate) fn postgres_installed() -> bool {
    pgserver::find_bindir().is_some()
}

/// A child of `workload` with the options shared by the papers that measure
/// throughput: a short run on one thread.
pub(crate) fn short_run(ctx: &Ctx, kind: Kind, workload: Workload) -> RunSpec {
    let (d, w) = match ctx.scale {
        Scale::Tiny => (0.1, 0.0),
        Scale::Quick => (2.0, 0.5),
        Scale::Full => (5.0, 1.0),
    };
    let mut s = RunSpec::new(kind.command(), workload);
    s.options.duration = Some(d);
    s.options.warmup = Some(w);
    s.options.threads = Some(1);
    // The consistency check runs after the measurement; at the test scale it is most
    // of the time of a debug build.
    s.options.no_check = ctx.scale == Scale::Tiny;
    s
}

/// The workload `name`, no option given.
pub(crate) fn workload(name: &str) -> Workload {
    Workload::named(name).expect("a workload's name")
}

/// The disk engine, as `Options::engine` names it.
pub(crate) fn disk() -> Option<String> {
    Some("disk".into())
}

/// A size of the papers' tables (`"64MB"`) in bytes.
pub(crate) fn bytes(size: &str) -> u64 {
    cachesim::config::parse_size(size).expect("a size written in this crate")
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn every_paper_parses_and_its_tables_are_rectangular() {
        for p in PAPERS {
            let paper = load_paper(p).unwrap();
            assert_eq!(paper.paper, *p);
            assert!(!paper.finding.is_empty(), "{p}");
            for f in &paper.finding {
                assert!(!f.source.is_empty() && !f.claim.is_empty(), "{p} {}", f.id);
            }
        }
        assert!(load_paper("nope").unwrap_err().contains("wonderland"));
    }

    fn sp(median: f64, min: f64, max: f64, n: usize) -> sweep::Spread {
        sweep::Spread {
            median,
            min,
            max,
            n,
        }
    }

    #[test]
    fn a_margin_decides_only_beyond_its_spread() {
        let st = |xs: &[f64]| Margin::paired(xs).unwrap().status();
        assert_eq!(st(&[0.10, 0.12, 0.11]), Status::Agrees);
        assert_eq!(st(&[-0.10, -0.12, -0.11]), Status::Disagrees);
        // Median 0.02 against a spread of 0.04.
        assert_eq!(st(&[0.02, -0.01, 0.03]), Status::WithinNoise);
        // A margin equal to its spread is not beyond it.
        assert_eq!(st(&[0.0, 0.1]), Status::WithinNoise);
        // One repetition has no spread to compare with: never decided.
        assert_eq!(st(&[0.5]), Status::WithinNoise);
        assert_eq!(Margin::paired(&[]), None);
        // Unpaired terms: the spread is the sum of their ranges.
        let m = Margin::of_terms(
            &[sp(0.30, 0.29, 0.31, 3)],
            &[sp(0.02, 0.01, 0.03, 3), sp(0.01, 0.01, 0.01, 3)],
        )
        .unwrap();
        assert!((m.median - 0.27).abs() < 1e-12 && (m.spread - 0.04).abs() < 1e-12);
        assert_eq!(m.status(), Status::Agrees);
        let n = Margin::of_terms(&[sp(0.30, 0.20, 0.40, 2)], &[sp(0.25, 0.2, 0.3, 3)]).unwrap();
        assert_eq!((n.n, n.status()), (2, Status::WithinNoise));
        assert!(m
            .describe(|x| format!("{x:.2}"))
            .contains("0.27, spread 0.04 over 3"));
    }

    #[test]
    fn parts_combine_disagreement_first_then_noise() {
        use Status::*;
        assert_eq!(combine(&[Agrees, Agrees]), Agrees);
        assert_eq!(combine(&[Agrees, WithinNoise]), WithinNoise);
        assert_eq!(combine(&[WithinNoise, Disagrees, Agrees]), Disagrees);
    }

    #[test]
    #[should_panic(expected = "neither a measurement nor a `needs`")]
    fn a_finding_left_unjudged_is_a_bug() {
        let p = load_paper("revisited").unwrap();
        Verdicts::new(&p).finish();
    }
}
