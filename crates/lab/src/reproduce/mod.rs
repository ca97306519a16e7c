//! `oltpscope reproduce <paper>`: a paper's key experiments at this machine's scale,
//! through the sweep machinery (`sweep::run`, so every point is a kept results
//! directory), each table printed beside the paper's own (transcribed in
//! `papers/<paper>.toml`, each with its source table or figure), and a verdict per
//! qualitative finding computed from the measured numbers.
//!
//! Owns: the experiments of each paper, the verdict rules, the text and the HTML page.
//! Must never: state an agreement that was not computed from a measurement, or pass a
//! finding that needs a capability oltpscope lacks (TPC-E, other engine designs,
//! hardware counters) as measured: those are listed as not available.

mod a_to_e;
mod all;
mod common;
mod diff;
mod output;
mod revisited;
mod sensitivity;
mod steps;
mod wonderland;

pub use all::{reproduce_all, to_text as all_text, Entry as AllEntry, ALL};
pub use common::{
    combine, load_paper, Counts, Ctx, Experiment, FindingText, Margin, Outcome, Paper, PaperTable,
    Row, Scale, Status, Table, Verdict, PAPERS, RESULT_JSON,
};
pub use diff::compare as compare_results;
pub use diff::result_file;
pub use output::{to_html, to_text};
pub use steps::{steps_verdicts, StepsRep};

use common::Verdicts;
use serde_json::Value;
use std::path::Path;

/// Written first into a new output directory, with the paper's name: a run stopped
/// before its `reproduce.json` can still be resumed, and nothing else is mistaken for it.
const STARTED: &str = "reproduce.started";

/// The output directory must be new, empty, or an earlier reproduction of the same
/// paper (resumed, finished or stopped): its files are rewritten, so anything else is
/// refused.
fn check_out(out: &Path, paper: &str) -> Result<(), String> {
    let mut entries = match std::fs::read_dir(out) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("--out {}: {e}", out.display())),
    };
    if entries.next().is_none() {
        return Ok(());
    }
    let prev = out.join(RESULT_JSON);
    if !prev.exists() {
        if let Ok(started) = std::fs::read_to_string(out.join(STARTED)) {
            return match started.trim() {
                p if p == paper => Ok(()),
                other => Err(format!(
                    "--out {}: a reproduction of {other} (choose a new directory for {paper})",
                    out.display()
                )),
            };
        }
    }
    let text = std::fs::read_to_string(&prev).map_err(|_| {
        format!(
            "--out {}: holds other files and no {RESULT_JSON}: not a reproduction (choose a new directory)",
            out.display()
        )
    })?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: damaged ({e}): refusing to resume", prev.display()))?;
    match v["paper"]["paper"].as_str() {
        Some(p) if p == paper => Ok(()),
        other => Err(format!(
            "--out {}: a reproduction of {} (choose a new directory for {paper})",
            out.display(),
            other.unwrap_or("something else")
        )),
    }
}

/// Run `paper`'s experiments into `out` and compute its verdicts.
pub fn reproduce(paper: &str, ctx: &mut Ctx) -> Result<Outcome, String> {
    let p = load_paper(paper)?;
    let t0 = std::time::Instant::now();
    check_out(&ctx.out, paper)?;
    std::fs::create_dir_all(&ctx.out)
        .map_err(|e| format!("--out {}: cannot create it: {e}", ctx.out.display()))?;
    std::fs::write(ctx.out.join(STARTED), format!("{paper}\n"))
        .map_err(|e| format!("--out {}: cannot write {STARTED}: {e}", ctx.out.display()))?;
    let mut v = Verdicts::new(&p);
    let mut tables = Vec::new();
    let mut figures = Vec::new();
    match paper {
        "wonderland" => wonderland::wonderland(ctx, &mut v, &mut tables, &mut figures)?,
        "revisited" => revisited::revisited(ctx, &mut v, &mut tables)?,
        "sensitivity" => sensitivity::sensitivity(ctx, &mut v, &mut tables)?,
        "a-to-e" => a_to_e::a_to_e(ctx, &mut v, &mut tables, &mut figures)?,
        "steps" => steps::steps(ctx, &mut v, &mut tables)?,
        _ => unreachable!("load_paper knows the papers"),
    }
    let verdicts = v.finish();
    let o = Outcome {
        paper: p,
        scale: ctx.scale,
        tables,
        counts: Counts::of(&verdicts),
        verdicts,
        figures,
        sweeps: ctx.sweeps.clone(),
        experiments: ctx.experiments.clone(),
        elapsed_s: t0.elapsed().as_secs_f64(),
    };
    // Lane work (its figures drawn): never beside a measured run of another paper.
    crate::sweep::lane_work(|| output::write(&ctx.out, &o))?;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_output_directory_is_new_or_the_same_papers() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_out(&d.path().join("new"), "steps").is_ok());
        assert!(check_out(d.path(), "steps").is_ok(), "empty");
        std::fs::write(d.path().join("index.html"), "mine").unwrap();
        let e = check_out(d.path(), "steps").unwrap_err();
        assert!(e.contains("not a reproduction"), "{e}");
        std::fs::write(
            d.path().join(RESULT_JSON),
            r#"{"paper": {"paper": "wonderland"}}"#,
        )
        .unwrap();
        assert!(check_out(d.path(), "wonderland").is_ok());
        assert!(check_out(d.path(), "steps")
            .unwrap_err()
            .contains("reproduction of wonderland"));
        // A run stopped before its reproduce.json resumes from its marker.
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("tpcb-simulate")).unwrap();
        assert!(check_out(d.path(), "wonderland").is_err(), "no marker");
        std::fs::write(d.path().join(STARTED), "wonderland\n").unwrap();
        assert!(check_out(d.path(), "wonderland").is_ok());
        assert!(check_out(d.path(), "steps")
            .unwrap_err()
            .contains("reproduction of wonderland"));
    }
}
