//! STEPS: only where `simulate --steps-team` exists.

use super::common::*;
use crate::sweep::{self, Spec, Summary};
use serde_json::Value;
use std::path::Path;

/// Does this build's `simulate` take `--steps-team`? (clap refuses an unknown option
/// before it looks at --help.)
fn has_steps_team(exe: &Path) -> bool {
    std::process::Command::new(exe)
        .args(probe_args())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `simulate tpcb --steps-team 2 --help` (help last: after the option it probes).
fn probe_args() -> Vec<String> {
    let mut probe = RunSpec::new(runspec::Command::Simulate, workload("tpcb"));
    probe.options.steps_team = vec![2];
    let mut a = probe.to_args();
    a.push("--help".into());
    a
}

/// STEPS' team size and the coroutines every run keeps (the baseline, team 1, too: a
/// team of one switches only where a transaction waits, so the two runs differ by the
/// teams alone).
const STEPS_TEAM: u32 = 8;
/// "Most" of the misses (the paper's 60-65% on Payment).
const STEPS_MOST: f64 = 0.5;

/// What one repetition of the STEPS simulation measured: team 1 and team 8 runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepsRep {
    /// L1-I misses per committed transaction, team 1 and team 8.
    pub l1i_base: f64,
    pub l1i_team: f64,
    /// Instructions per committed transaction, team 1 and team 8.
    pub instr_base: f64,
    pub instr_team: f64,
    pub mpki_base: f64,
    pub mpki_team: f64,
    /// Mean team size formed and conflict aborts per commit, team 8.
    pub avg_team: f64,
    pub aborts_per_commit: f64,
}

impl StepsRep {
    /// From a `simulate --steps-team 1,8` report: None when a run or a figure is
    /// missing (never read as 0).
    pub fn of(report: &Value) -> Option<StepsRep> {
        let run = |team: u32| {
            report["runs"]
                .as_array()?
                .iter()
                .find(|r| r["steps_team"].as_u64() == Some(team as u64))
        };
        let (b, t) = (run(1)?, run(STEPS_TEAM)?);
        let f = |r: &Value, k: &str| r[k].as_f64();
        Some(StepsRep {
            l1i_base: f(b, "l1i_misses_per_committed_txn")?,
            l1i_team: f(t, "l1i_misses_per_committed_txn")?,
            instr_base: f(b, "instructions_per_committed_txn")?,
            instr_team: f(t, "instructions_per_committed_txn")?,
            mpki_base: f(b, "l1i_mpki")?,
            mpki_team: f(t, "l1i_mpki")?,
            avg_team: t["run_steps"]["avg_team_size"].as_f64()?,
            aborts_per_commit: f(t, "aborts_per_commit")?,
        })
    }

    /// The share of the baseline's L1-I misses per committed transaction that STEPS
    /// removes.
    pub fn reduction(&self) -> f64 {
        assert!(
            self.l1i_base > 0.0,
            "a baseline without L1-I misses: {self:?}"
        );
        1.0 - self.l1i_team / self.l1i_base
    }
}

/// The STEPS verdicts from the repetitions: the reduction against "most" (50%), and the
/// mean team against half the coroutines, each margin against its spread.
pub fn steps_verdicts(reps: &[StepsRep]) -> Vec<(&'static str, Status, String)> {
    assert!(!reps.is_empty(), "verdicts need a repetition");
    let red: Vec<f64> = reps.iter().map(StepsRep::reduction).collect();
    let m = Margin::paired(&red.iter().map(|r| r - STEPS_MOST).collect::<Vec<_>>())
        .expect("repetitions");
    let each =
        |xs: &[f64], f: fn(f64) -> String| xs.iter().map(|x| f(*x)).collect::<Vec<_>>().join(", ");
    let med = |xs: &[f64]| sweep::Spread::of(xs).expect("repetitions").median;
    let base: Vec<f64> = reps.iter().map(|r| r.l1i_base).collect();
    let team: Vec<f64> = reps.iter().map(|r| r.l1i_team).collect();
    let ib: Vec<f64> = reps.iter().map(|r| r.instr_base).collect();
    let it: Vec<f64> = reps.iter().map(|r| r.instr_team).collect();
    let payment = format!(
        "L1-I misses per committed transaction {} alone, {} in teams of {STEPS_TEAM} (same {STEPS_TEAM} coroutines; medians): {} fewer (repetitions: {}; the paper: 60-65%); instructions per committed transaction {} -> {} ({:+.1}%); {} (agreement needs more than {} removed by more than the spread)",
        f2(med(&base)),
        f2(med(&team)),
        pct(med(&red)),
        each(&red, pct),
        f2(med(&ib)),
        f2(med(&it)),
        100.0 * (med(&it) / med(&ib) - 1.0),
        m.describe(|x| format!("{:.1} points", 100.0 * x)),
        pct(STEPS_MOST)
    );
    let half = STEPS_TEAM as f64 / 2.0;
    let teams: Vec<f64> = reps.iter().map(|r| r.avg_team).collect();
    let t =
        Margin::paired(&teams.iter().map(|x| x - half).collect::<Vec<_>>()).expect("repetitions");
    let teams_why = format!(
        "mean team size {} of {STEPS_TEAM} coroutines (repetitions: {}; the paper: 8.6 of 15, 15.9 of 28, 26.4 of 48.4 ready threads); {} (agreement needs more than {half} by more than the spread)",
        f2(med(&teams)),
        each(&teams, f2),
        t.describe(|x| format!("{x:.2} threads"))
    );
    vec![
        ("payment-fewer-l1i-misses", m.status(), payment),
        ("payment-teams-half", t.status(), teams_why),
    ]
}

/// Every complete repetition's report of the point with these values.
fn reports(dir: &Path, s: &Summary, values: &[(&str, &str)]) -> Vec<Value> {
    let Some(p) = s.points.iter().find(|p| {
        values
            .iter()
            .all(|(k, v)| p.values.iter().any(|(pk, pv)| pk == k && pv == v))
    }) else {
        return Vec::new();
    };
    let point = sweep::Point {
        values: p.values.clone(),
    };
    (1..=s.spec.repeat)
        .filter_map(|rep| {
            let (d, _) = sweep::rep_dir(dir, &point, rep);
            crate::results::load_report(&d).ok()
        })
        .collect()
}

/// STEPS as the paper ran it on TPC-C (Section 4.3): Payment alone over several
/// warehouses, teams of 8 against the same 8 coroutines without teams, on the
/// AthlonXP's caches; repeated, judged per committed transaction.
pub(super) fn steps(
    ctx: &mut Ctx,
    v: &mut Verdicts,
    tables: &mut Vec<Table>,
) -> Result<(), String> {
    let ids = ["payment-fewer-l1i-misses", "payment-teams-half"];
    if !has_steps_team(&ctx.exe) {
        for id in ids {
            v.set(
                id,
                Status::NotAvailable,
                "needs STEPS: this build's `simulate` refuses --steps-team".into(),
            );
        }
        return Ok(());
    }
    // Loading TPC-C under valgrind takes many minutes in a debug build, TPC-B's 100,000
    // accounts 12 s a simulation: the test scale runs a micro-benchmark of 64 KB of
    // updated rows through the same steps and judges nothing.
    let payments = |warehouses| {
        Workload::Tpcc(runspec::Tpcc {
            warehouses: Some(warehouses),
            mix: Some("payment=100".into()),
            ..Default::default()
        })
    };
    let (w, txns, warm) = match ctx.scale {
        Scale::Tiny => (
            Workload::Micro(runspec::Micro {
                size: Some(64 << 10),
                mode: Some(runspec::MicroMode::Update),
                ..Default::default()
            }),
            5,
            2,
        ),
        Scale::Quick => (payments(4), 300, 200),
        Scale::Full => (payments(8), 1000, 500),
    };
    let workload = w.name();
    let mut sim = RunSpec::new(runspec::Command::Simulate, w);
    sim.options = Options {
        engine: disk(),
        cpu: Some("athlonxp".into()),
        coroutines: Some(STEPS_TEAM),
        steps_team: vec![1, STEPS_TEAM],
        txns: Some(txns),
        warmup_txns: Some(runspec::WarmupTxns::Txns(warm)),
        no_3c: true,
        ..Options::default()
    };
    // A fixed count at every scale, not `--until-settled`: each team size's run must end
    // by itself (its run report holds the team statistics).
    // The simulation is nearly deterministic (its repetitions agree to the digits
    // printed): at --quick two repetitions, which run side by side, give the spread.
    let reps = match ctx.scale {
        Scale::Quick => 2,
        _ => ctx.repeat_for_margin(),
    };
    let id = format!("{workload}-teams");
    // The database is loaded once, natively, and every team size's traced run of every
    // repetition opens a copy of it (`simulate --db`): a load under valgrind was most
    // of a STEPS simulation. The disk engine reopens with its lock table and log buffers
    // as a load leaves them, so the figures are a load's of their own to within 0.6%
    // (docs/design/simulate-validation.md, session 71).
    let db = ctx.out.join(format!("{id}.db"));
    let loaded = native_load(&ctx.exe, &sim, &db);
    if let Err(e) = &loaded {
        for id in ids {
            v.unmeasured(id, e);
        }
        return Ok(());
    }
    sim.options.db = Some(db.clone());
    let spec = Spec::of(&sim, vec![], reps);
    let swept = ctx.sweep(&id, spec);
    // The copies were the runs'; the kept load is no result.
    if let Err(e) = crate::shapes::remove_load(&db) {
        (ctx.say)(&format!("  {id}: {e}\n"));
    }
    let s = match swept {
        Ok(s) => s,
        Err(e) => {
            for id in ids {
                v.unmeasured(id, &e);
            }
            return Ok(());
        }
    };
    let all = reports(&ctx.out.join(&id), &s, &[]);
    let reps: Vec<StepsRep> = all.iter().filter_map(StepsRep::of).collect();
    steps_tables(tables, &reps, all.first(), workload);
    if ctx.scale == Scale::Tiny {
        for id in ids {
            v.unmeasured(id, "TPC-C Payment is not simulated at the tiny (test) scale (a micro-benchmark was, through the same steps)");
        }
    } else if reps.is_empty() || reps.len() < all.len() || reps.iter().any(|r| r.l1i_base <= 0.0) {
        for id in ids {
            v.unmeasured(
                id,
                "a repetition failed or its report lacks the figures (see the sweep's summary)",
            );
        }
    } else {
        for (id, st, why) in steps_verdicts(&reps) {
            v.set(id, st, why);
        }
    }
    Ok(())
}

/// `simulate SIM --db DB --load-only`: the simulation's database loaded natively (not
/// traced) into `db`, marked loaded; kept when a finished load of it is there already
/// (a resumed run; `simulate` refuses it if the marker names another load), refused when
/// `db` is there without its marker (an interrupted load: not removed silently).
fn native_load(exe: &Path, sim: &RunSpec, db: &Path) -> Result<(), String> {
    let marker = sweep::loaded_marker(db);
    if marker.exists() && db.is_dir() {
        return Ok(());
    }
    if db.exists() || marker.exists() {
        return Err(format!(
            "{} or {} is there without the other (an interrupted load?): remove both to load again",
            db.display(),
            marker.display()
        ));
    }
    let mut load = sim.clone();
    load.options.db = Some(db.to_path_buf());
    let mut args = load.to_args();
    args.push("--load-only".into());
    let mut cmd = std::process::Command::new(exe);
    cmd.args(&args);
    // Beside the lanes, stopped by a measured window, as a shared shape's load.
    crate::lanes::stoppable_run(cmd)
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?
        .map_err(|why| format!("loading the STEPS simulations' database natively failed: {why}"))
}

/// The measured tables: one row per repetition beside the paper's TPC-C figures, and
/// the first repetition's team statistics beside its Table 4.
fn steps_tables(tables: &mut Vec<Table>, reps: &[StepsRep], first: Option<&Value>, workload: &str) {
    let what = if workload == "tpcc" {
        "TPC-C Payment"
    } else {
        "micro-benchmark (test scale)"
    };
    tables.push(Table {
        beside: Some("tpcc".into()),
        caption: format!("Measured: {what}, disk engine, AthlonXP caches, {STEPS_TEAM} coroutines, team 1 against team {STEPS_TEAM}; per committed transaction"),
        columns: [
            "L1-I team 1",
            "L1-I team 8",
            "L1-I reduction",
            "instr. team 1",
            "instr. team 8",
            "L1-I MPKI 1 / 8",
            "mean team",
            "aborts/commit",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: reps
            .iter()
            .enumerate()
            .map(|(i, r)| Row {
                name: format!("repetition {}", i + 1),
                values: vec![
                    f2(r.l1i_base),
                    f2(r.l1i_team),
                    if r.l1i_base > 0.0 {
                        pct(r.reduction())
                    } else {
                        "-".into()
                    },
                    format!("{:.0}", r.instr_base),
                    format!("{:.0}", r.instr_team),
                    format!("{} / {}", f2(r.mpki_base), f2(r.mpki_team)),
                    f2(r.avg_team),
                    f2(r.aborts_per_commit),
                ],
            })
            .collect(),
    });
    let Some(steps) = first.and_then(|r| {
        r["runs"]
            .as_array()?
            .iter()
            .find(|x| x["steps_team"].as_u64() == Some(STEPS_TEAM as u64))
            .map(|x| x["run_steps"].clone())
    }) else {
        return;
    };
    let mut rows: Vec<Row> = steps["per_operation"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| Row {
            name: o["operation"].as_str().unwrap_or("?").to_string(),
            values: vec![
                opt(o["avg_in"].as_f64(), f2),
                opt(o["avg_out"].as_f64(), f2),
            ],
        })
        .collect();
    rows.push(Row {
        name: "average team size".into(),
        values: vec![opt(steps["avg_team_size"].as_f64(), f2), "-".into()],
    });
    rows.push(Row {
        name: "# of ready threads (coroutines parked or stray)".into(),
        values: vec![opt(steps["avg_ready"].as_f64(), f2), "-".into()],
    });
    tables.push(Table {
        beside: Some("teams".into()),
        caption: format!(
            "Measured team sizes per operation, {what}, team {STEPS_TEAM}, repetition 1"
        ),
        columns: vec!["in".into(), "out".into()],
        rows,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A `simulate --steps-team 1,8` report as recorded, with the figures the verdicts
    /// read (per committed transaction).
    fn steps_report(base: f64, team: f64, avg_team: f64) -> Value {
        serde_json::json!({"runs": [
            {"steps_team": 1, "l1i_misses_per_committed_txn": base,
             "instructions_per_committed_txn": 60000.0, "l1i_mpki": base / 60.0,
             "aborts_per_commit": 0.0, "run_steps": {"avg_team_size": 1.0}},
            {"steps_team": 8, "l1i_misses_per_committed_txn": team,
             "instructions_per_committed_txn": 66000.0, "l1i_mpki": team / 66.0,
             "aborts_per_commit": 0.01, "run_steps": {"avg_team_size": avg_team}},
        ]})
    }

    #[test]
    fn steps_verdicts_agree_disagree_and_stay_within_noise() {
        let reps = |xs: &[(f64, f64, f64)]| -> Vec<StepsRep> {
            xs.iter()
                .map(|(b, t, a)| StepsRep::of(&steps_report(*b, *t, *a)).unwrap())
                .collect()
        };
        let verdict =
            |r: &[StepsRep], id: &str| steps_verdicts(r).into_iter().find(|v| v.0 == id).unwrap();
        let pay = "payment-fewer-l1i-misses";
        let teams = "payment-teams-half";
        // 64-66% fewer, as the paper's 60-65%: agrees.
        let r = reps(&[
            (1000.0, 350.0, 6.0),
            (1000.0, 340.0, 6.2),
            (1000.0, 360.0, 5.9),
        ]);
        let (_, st, why) = verdict(&r, pay);
        assert_eq!(st, Status::Agrees, "{why}");
        assert!(
            why.contains("65.0% fewer") && why.contains("60-65%"),
            "{why}"
        );
        assert!(why.contains("60000 -> 66000 (+10.0%)"), "{why}");
        assert_eq!(verdict(&r, teams).1, Status::Agrees);
        // About a quarter fewer, as measured before this rule: disagrees.
        let r = reps(&[
            (1924.0, 1428.0, 1.4),
            (1900.0, 1450.0, 1.5),
            (1950.0, 1400.0, 1.4),
        ]);
        assert_eq!(verdict(&r, pay).1, Status::Disagrees);
        assert_eq!(verdict(&r, teams).1, Status::Disagrees);
        // 45%, 55%, 52%: the margin over 50% (2 points) is inside the spread (10).
        let r = reps(&[
            (1000.0, 550.0, 4.5),
            (1000.0, 450.0, 3.0),
            (1000.0, 480.0, 5.0),
        ]);
        let (_, st, why) = verdict(&r, pay);
        assert_eq!(st, Status::WithinNoise, "{why}");
        assert_eq!(verdict(&r, teams).1, Status::WithinNoise);
        // A single repetition is never decided.
        let r = reps(&[(1000.0, 100.0, 8.0)]);
        assert_eq!(verdict(&r, pay).1, Status::WithinNoise);
        // A report without a figure is not read as 0.
        let mut bad = steps_report(1000.0, 300.0, 6.0);
        bad["runs"][1]
            .as_object_mut()
            .unwrap()
            .remove("l1i_misses_per_committed_txn");
        assert_eq!(StepsRep::of(&bad), None);
        assert_eq!(StepsRep::of(&serde_json::json!({"runs": []})), None);
    }
}
