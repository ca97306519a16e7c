//! `compare`, `sweep` and `plot`: parse, hand to the lab crate, print.

use crate::args::{Cli, CompareArgs, MergeArgs, PlotArgs, ReproduceArgs, SweepArgs};
use clap::Parser;
use lab::sweep::{self, Event, Spec};
use std::io::{IsTerminal, Write};

/// Print to standard output; a closed output (`| head`) must not stop a sweep whose
/// results go to its directory anyway.
fn say(text: &str) {
    let _ = std::io::stdout().write_all(text.as_bytes());
}

pub fn compare(a: &CompareArgs) -> Result<(), String> {
    use workloads::tpch::answers;
    if answers::is_set(&a.a) || answers::is_set(&a.b) {
        return compare_answers(a);
    }
    // Two reproductions (`reproduce` output directories): their tables and verdicts.
    if lab::reproduce::result_file(&a.a).is_some() || lab::reproduce::result_file(&a.b).is_some() {
        say(&lab::reproduce::compare_results(&a.a, &a.b, a.all)?);
        return Ok(());
    }
    let ra = lab::results::load_report(&a.a)?;
    let rb = lab::results::load_report(&a.b)?;
    let (ka, kb) = (lab::compare::kind(&ra), lab::compare::kind(&rb));
    if !lab::compare::comparable(ka, kb) {
        return Err(format!(
            "{} is a {ka} report and {} a {kb} report: compare reports of one kind",
            a.a.display(),
            a.b.display()
        ));
    }
    let c = lab::compare::arrange(&ra, &rb);
    say(&lab::compare::to_text(
        &c,
        &a.a.display().to_string(),
        &a.b.display().to_string(),
        a.all,
    ));
    Ok(())
}

/// Two directories of TPC-H answers, query by query; exit 1 when any query is not
/// equal on both sides.
fn compare_answers(a: &CompareArgs) -> Result<(), String> {
    use workloads::tpch::answers;
    for p in [&a.a, &a.b] {
        if !answers::is_set(p) {
            return Err(format!(
                "{} holds no TPC-H answers (qNN.tsv files of `run tpch --answers`): compare two answer directories",
                p.display()
            ));
        }
    }
    let v = answers::compare(&a.a, &a.b)?;
    let (lines, all) = answers::to_text(&v, &a.a.display().to_string(), &a.b.display().to_string());
    say(&(lines.join("\n") + "\n"));
    if !all {
        std::process::exit(1);
    }
    Ok(())
}

/// The sweep's specification from the command line or the experiment file.
fn spec_of(a: &SweepArgs) -> Result<(Spec, std::path::PathBuf), String> {
    // Everything after the first run option is the runs': a sweep option there was
    // meant for the sweep.
    if let Some(own) = a.run_args.iter().find(|x| {
        [
            "--vary",
            "--repeat",
            "--file",
            "--out",
            "--simulate",
            "--profile",
            "--emit",
        ]
        .iter()
        .any(|o| x == o || x.starts_with(&format!("{o}=")))
    }) {
        return Err(format!(
            "{own} after the runs' options: give the sweep's own options (--simulate or --profile, --vary, --repeat, --out, --file, --emit) first, then the options of every run"
        ));
    }
    let (spec, file_out) = match &a.file {
        Some(f) => {
            if !a.run_args.is_empty() {
                return Err(format!(
                    "with --file the runs' options go in the file's args (got {})",
                    a.run_args.join(" ")
                ));
            }
            sweep::read_file(f)?
        }
        None => {
            let workload = a.workload.clone().ok_or(
                "`oltpscope sweep` needs a workload (micro, tpcb, tpcc, tpce, tpch or chbench) or --file exp.toml",
            )?;
            let vary = a
                .vary
                .iter()
                .map(|v| sweep::parse_vary(v))
                .collect::<Result<Vec<_>, _>>()?;
            let spec = Spec {
                kind: if a.simulate {
                    sweep::Kind::Simulate
                } else if a.profile {
                    sweep::Kind::Profile
                } else {
                    sweep::Kind::Run
                },
                workload,
                vary,
                repeat: a.repeat.unwrap_or(1),
                args: a.run_args.clone(),
                load_once: None,
            };
            (spec, None)
        }
    };
    let out = a
        .out
        .clone()
        .or(file_out)
        .ok_or("`oltpscope sweep` needs --out DIR (where the runs and the summary go)")?;
    spec.validate()?;
    // The options every run gets must parse as `oltpscope run` options: one line now
    // instead of a failure per point. (Varied values are checked by each run: a key
    // this build lacks fails its points, each with the run's own message.)
    let mut line = vec![
        "oltpscope".to_string(),
        spec.kind.as_str().into(),
        spec.workload.clone(),
    ];
    line.extend(spec.args.iter().cloned());
    if let Err(e) = Cli::try_parse_from(&line) {
        return Err(format!(
            "the runs' options ({}): {}",
            spec.args.join(" "),
            crate::args::one_line(&e.to_string())
        ));
    }
    Ok((spec, out))
}

pub fn sweep(a: &SweepArgs) -> Result<(), String> {
    let (spec, out) = spec_of(a)?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    if let [format, dir] = a.emit.as_slice() {
        if format != "slurm" {
            return Err(format!("--emit {format}: unknown format (slurm)"));
        }
        let path = lab::campaign::emit_slurm(&spec, &exe, &out, std::path::Path::new(dir))?;
        say(&format!(
            "{} points: submit with `sbatch {}`; when all are done, `oltpscope merge {}/* --out CAMPAIGN_DIR`\n",
            spec.points().len(),
            path.display(),
            out.display()
        ));
        return Ok(());
    }
    let total = (spec.points().len() * spec.repeat as usize) as u64;
    let bar = if std::io::stderr().is_terminal() {
        crate::commands::bar(total, "sweep [{bar:20}] {pos}/{len} runs, eta {eta}  {msg}")
    } else {
        indicatif::ProgressBar::hidden()
    };
    let summary = sweep::run(&exe, &out, &spec, |ev| match ev {
        Event::Start { point, rep } => bar.set_message(format!("{point} rep{rep}")),
        Event::Finished {
            point,
            rep,
            outcome,
            headline,
            seconds,
        } => {
            let line = sweep::rep_line(point, rep, outcome, headline, seconds, None);
            bar.suspend(|| say(&format!("{line}\n")));
            bar.inc(1);
        }
        Event::Loaded { shape, seconds } => {
            bar.suspend(|| say(&format!("{shape}: loaded once in {seconds:.1} s\n")))
        }
        Event::Checked { shape, seconds } => {
            bar.suspend(|| say(&format!("{shape}: checked in {seconds:.1} s\n")))
        }
    });
    bar.finish_and_clear();
    let summary = summary?;
    say(&format!(
        "\n{}summary in {} and {}\n",
        summary_text(&summary),
        out.join(sweep::SUMMARY_CSV).display(),
        out.join(sweep::SUMMARY_JSON).display()
    ));
    let failed: u32 = summary.points.iter().map(|p| p.reps_failed).sum();
    if failed > 0 {
        return Err(format!(
            "{failed} run(s) failed (their points are marked in the summary; rerun the same command to retry them)"
        ));
    }
    Ok(())
}

fn summary_text(s: &sweep::Summary) -> String {
    let mut o = String::new();
    let w = s
        .points
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    // (heading, figure, its spread shown as median/min/max)
    let cols = summary_columns(s);
    o += &format!("{:<w$}  {:>4}", "point", "runs");
    for (i, (h, _)) in cols.iter().enumerate() {
        if i == 0 {
            o += &format!(
                "  {:>14}  {:>12}  {:>12}",
                format!("median {h}"),
                "min",
                "max"
            );
        } else {
            o += &format!("  {h:>10}");
        }
    }
    let cpu = s.spec.kind != sweep::Kind::Simulate;
    if cpu {
        o += &format!("  {:>5}", "CPU");
    }
    o += "\n";
    for p in &s.points {
        o += &format!("{:<w$}  {:>4}", p.name, p.reps_done);
        for (i, (_, fig)) in cols.iter().enumerate() {
            let sp = sweep::figure(p, fig);
            if i == 0 {
                let (m, lo, hi) = match sp {
                    Some(t) => (num(t.median), num(t.min), num(t.max)),
                    None => ("-".into(), "-".into(), "-".into()),
                };
                o += &format!("  {m:>14}  {lo:>12}  {hi:>12}");
            } else {
                o += &format!("  {:>10}", sp.map_or("-".into(), |t| num(t.median)));
            }
        }
        if cpu {
            let c = p
                .worker_cpu_busy
                .map_or("-".into(), |c| format!("{:.0}%", 100.0 * c.median));
            o += &format!("  {c:>5}");
        }
        if p.unreliable.is_some() {
            o += "  unreliable";
        }
        o += "\n";
    }
    for p in s.points.iter().filter(|p| p.unreliable.is_some()) {
        o += &format!(
            "unreliable: {}: {}\n",
            p.name,
            p.unreliable.as_deref().unwrap_or_default()
        );
    }
    if s.spec.kind == sweep::Kind::Profile {
        o += &profile_text(s);
    }
    o += &curves_text(s);
    o
}

/// The summary's figure columns for the sweep's kind: (heading, figure); a simulation's
/// MPKI per level any point reports, in order of first appearance.
fn summary_columns(s: &sweep::Summary) -> Vec<(String, String)> {
    match s.spec.kind {
        sweep::Kind::Run | sweep::Kind::Profile => {
            vec![("txn/s".into(), "throughput_tps".into())]
        }
        sweep::Kind::Simulate => {
            let mut c = vec![("stall cyc/txn".into(), "stall_cycles_per_txn".into())];
            let mut levels: Vec<String> = Vec::new();
            for p in &s.points {
                for l in p.simulation.iter().flat_map(|m| &m.levels) {
                    if !levels.contains(&l.level) {
                        levels.push(l.level.clone());
                    }
                }
            }
            for l in levels {
                c.push((
                    format!("{l} MPKI"),
                    format!("{}_mpki", sweep::level_key(&l)),
                ));
            }
            c
        }
    }
}

/// A sweep figure as the summary prints it: whole numbers from 100 up, else two decimals.
fn num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// One line per curve of the summary: its best, 90% and 95% points and its knee.
fn curves_text(s: &sweep::Summary) -> String {
    let mut o = String::new();
    for c in &s.curves {
        let fixed: Vec<String> = c.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let label = |x: f64| {
            c.points
                .iter()
                .find(|p| p.1 == x)
                .map_or(format!("{x}"), |p| p.0.clone())
        };
        let what = sweep::figure_label(&c.figure);
        o += &format!(
            "curve of {what} over {}{}: ",
            c.over,
            if fixed.is_empty() {
                String::new()
            } else {
                format!(" ({})", fixed.join(", "))
            }
        );
        match &c.analysis {
            Some(a) => {
                let (best, share) = if c.lower_is_better {
                    ("least", "within 90% (cost at most best/0.90)")
                } else {
                    ("best", "90% of it")
                };
                o += &format!(
                    "{best} {} {what} at {}={}; {share} from {}={}, 95% from {}={}; knee {}\n",
                    num(a.best_y),
                    c.over,
                    label(a.best_x),
                    c.over,
                    label(a.x_90),
                    c.over,
                    label(a.x_95),
                    a.knee_x
                        .map_or("none (too few points or no bend)".into(), |k| format!(
                            "at {}={}",
                            c.over,
                            label(k)
                        ))
                );
            }
            None => o += &format!("no {what} measured\n"),
        }
    }
    o
}

/// A profile sweep's Figure 1 and 2 as text: one row per component (those any point
/// sampled), one column per point, the median share of the samples; then the lock
/// split as shares of the workers' time.
fn profile_text(s: &sweep::Summary) -> String {
    let pts: Vec<(&sweep::PointSummary, &sweep::ProfileFigures)> = s
        .points
        .iter()
        .filter_map(|p| Some((p, p.profile.as_ref()?)))
        .collect();
    if pts.is_empty() {
        return String::new();
    }
    let w = pts
        .iter()
        .map(|(p, _)| p.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let pct =
        |x: Option<sweep::Spread>| x.map_or("-".into(), |t| format!("{:.1}%", 100.0 * t.median));
    let mut o = format!(
        "\ntime by component (median share of the CPU samples)\n{:<16}",
        ""
    );
    for (p, _) in &pts {
        o += &format!("  {:>w$}", p.name);
    }
    o += "\n";
    let mut names: Vec<&str> = Vec::new();
    for (_, f) in &pts {
        for c in &f.components {
            if c.share.is_some_and(|t| t.max > 0.0) && !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
    }
    for n in names {
        o += &format!("{n:<16}");
        for (_, f) in &pts {
            let sh = f
                .components
                .iter()
                .find(|c| c.name == n)
                .and_then(|c| c.share);
            o += &format!("  {:>w$}", pct(sh));
        }
        o += "\n";
    }
    if pts.iter().any(|(_, f)| f.lock_split.is_some()) {
        o += "\nlock manager (median share of the workers' time)\n";
        for (k, label) in sweep::LOCK_SPLIT {
            o += &format!("{label:<16}");
            for (p, _) in &pts {
                let fig = format!("lock_split_{k}_share");
                o += &format!("  {:>w$}", pct(sweep::figure(p, &fig)));
            }
            o += "\n";
        }
    }
    o
}

pub fn plot(a: &PlotArgs) -> Result<(), String> {
    let files = lab::plot::plot(&a.dir)?;
    for f in files {
        say(&format!("{}\n", f.display()));
    }
    Ok(())
}

pub fn reproduce(a: &ReproduceArgs) -> Result<(), String> {
    use lab::reproduce::{self, Scale};
    // Refuse an unknown paper before making any directory.
    if a.paper != reproduce::ALL {
        reproduce::load_paper(&a.paper)?;
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from(format!("reproduce-{}", a.paper)));
    let scale = if a.tiny {
        Scale::Tiny
    } else if a.quick {
        Scale::Quick
    } else {
        Scale::Full
    };
    let mut progress = |line: &str| {
        let _ = std::io::stderr().write_all(line.as_bytes());
    };
    if a.paper == reproduce::ALL {
        let (entries, secs) = reproduce::reproduce_all(exe, &out, scale, &mut progress)?;
        say(&reproduce::all_text(&entries, secs));
        say(&format!(
            "results in {} (index.html over the papers, each paper's own directory)\n",
            out.display()
        ));
        return Ok(());
    }
    let mut ctx = reproduce::Ctx::new(exe, out.clone(), scale, &mut progress);
    let o = reproduce::reproduce(&a.paper, &mut ctx)?;
    say(&reproduce::to_text(&o));
    say(&format!(
        "results in {} (index.html, reproduce.json, reproduce.txt)\n",
        out.display()
    ));
    Ok(())
}

pub fn merge(a: &MergeArgs) -> Result<(), String> {
    let s = lab::campaign::merge(&a.dirs, &a.out)?;
    say(&format!(
        "{}summary in {} and {}\n",
        summary_text(&s),
        a.out.join(sweep::SUMMARY_CSV).display(),
        a.out.join(sweep::SUMMARY_JSON).display()
    ));
    Ok(())
}
