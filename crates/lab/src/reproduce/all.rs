//! `oltpscope reproduce all`: every paper at once (their work shared out on `sweep`'s
//! lanes), each into `<out>/<paper>/` as its own run would write it (and resumed the
//! same way), then one index over the five: each paper's verdict counts and time, linked
//! to its own page.

use super::common::{Counts, Ctx, Experiment, Outcome, Scale, PAPERS, RESULT_JSON};
use super::{check_out, reproduce, STARTED};
use std::path::{Path, PathBuf};

/// The name `reproduce all` goes by (in `reproduce.started` and `reproduce.json`).
pub const ALL: &str = "all";

/// The order in which the papers start, each once the one before has asked for its
/// first lane (or ended): lane requests are served in the order asked, so the longest
/// lane work comes first. Wonderland's first simulation is PostgreSQL's, the longest (it
/// was the critical path when STEPS' two asked first: session 63); STEPS' two come
/// next, then A-to-E's and Sensitivity's simulations (their papers run them first);
/// Revisited is all measured points.
const ORDER: [&str; 5] = ["wonderland", "steps", "a-to-e", "sensitivity", "revisited"];

/// One paper's line of the index.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Entry {
    pub paper: String,
    pub title: String,
    pub counts: Counts,
    pub elapsed_s: f64,
    /// The paper's experiments and their times in this run.
    pub experiments: Vec<Experiment>,
}

impl Entry {
    pub fn of(o: &Outcome) -> Entry {
        Entry {
            paper: o.paper.paper.clone(),
            title: o.paper.title.clone(),
            counts: o.counts,
            elapsed_s: o.elapsed_s,
            experiments: o.experiments.clone(),
        }
    }
}

/// Every paper of `PAPERS` into `out/<paper>/`, then the index files of `out`; the
/// papers' lines and the whole run's seconds.
pub fn reproduce_all(
    exe: PathBuf,
    out: &Path,
    scale: Scale,
    say: &mut dyn FnMut(&str),
) -> Result<(Vec<Entry>, f64), String> {
    check_out(out, ALL)?;
    std::fs::create_dir_all(out)
        .map_err(|e| format!("--out {}: cannot create it: {e}", out.display()))?;
    std::fs::write(out.join(STARTED), format!("{ALL}\n"))
        .map_err(|e| format!("--out {}: cannot write {STARTED}: {e}", out.display()))?;
    let t0 = std::time::Instant::now();
    // Every paper at once, each in its own thread: their repetitions share this process's
    // lanes (`crate::lanes`): the simulations of all five fill both cores, and the
    // measured points run one at a time beside them, each window stopping them (nothing
    // of this process runs beside a window).
    let order: Vec<&str> = (ORDER.iter().copied())
        .filter(|p| PAPERS.contains(p))
        .chain(PAPERS.iter().copied().filter(|p| !ORDER.contains(p)))
        .collect();
    say(&format!(
        "== {} papers together: {}\n",
        order.len(),
        order.join(", ")
    ));
    let ended: Vec<std::sync::atomic::AtomicBool> = (order.iter())
        .map(|_| std::sync::atomic::AtomicBool::new(false))
        .collect();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let outcomes: Vec<Result<Outcome, String>> = std::thread::scope(|sc| {
        let mut handles = Vec::new();
        for (i, &paper) in order.iter().enumerate() {
            let (tx, exe, dir, this) = (tx.clone(), exe.clone(), out.join(paper), &ended[i]);
            let asked = crate::sweep::slots_asked();
            handles.push(sc.spawn(move || {
                let mut line = |l: &str| {
                    let _ = tx.send(format!("[{paper}] {l}"));
                };
                let mut ctx = Ctx::new(exe, dir, scale, &mut line);
                let o = reproduce(paper, &mut ctx);
                this.store(true, std::sync::atomic::Ordering::Release);
                if let Ok(o) = &o {
                    let _ = tx.send(format!(
                        "== {paper}: {}, {:.0} s\n",
                        o.counts.text(),
                        o.elapsed_s
                    ));
                }
                o
            }));
            // The next paper starts once this one has asked for a lane (or ended).
            while crate::sweep::slots_asked() == asked
                && !this.load(std::sync::atomic::Ordering::Acquire)
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        drop(tx);
        for line in rx {
            say(&line);
        }
        (handles.into_iter())
            .map(|h| h.join().expect("a paper's thread does not panic"))
            .collect()
    });
    let mut done: Vec<Entry> = Vec::new();
    for (paper, o) in order.iter().zip(outcomes) {
        let o = o.map_err(|e| format!("{paper}: {e}"))?;
        done.push(Entry::of(&o));
    }
    // The index in the papers' own order.
    let entries: Vec<Entry> = (PAPERS.iter())
        .filter_map(|p| done.iter().find(|e| e.paper == *p).cloned())
        .collect();
    let elapsed_s = t0.elapsed().as_secs_f64();
    write(out, scale, &entries, elapsed_s)?;
    Ok((entries, elapsed_s))
}

/// `reproduce.json`, `reproduce.txt` and `index.html` over the papers' `entries`.
pub fn write(out: &Path, scale: Scale, entries: &[Entry], elapsed_s: f64) -> Result<(), String> {
    let w = |name: &str, text: &str| {
        std::fs::write(out.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", out.join(name).display()))
    };
    let json = serde_json::json!({
        "paper": { "paper": ALL },
        "scale": scale,
        "papers": entries,
        "elapsed_s": elapsed_s,
    });
    w(
        RESULT_JSON,
        &(serde_json::to_string_pretty(&json).expect("serializes") + "\n"),
    )?;
    w("reproduce.txt", &to_text(entries, elapsed_s))?;
    w("index.html", &to_html(scale, entries, elapsed_s))
}

pub fn to_text(entries: &[Entry], elapsed_s: f64) -> String {
    let mut t = String::new();
    for e in entries {
        t += &format!(
            "{:<12} {:>6.0} s  {}  ({}/index.html)\n",
            e.paper,
            e.elapsed_s,
            e.counts.text(),
            e.paper
        );
        if !e.experiments.is_empty() {
            t += &format!("{:<12}          {}\n", "", experiments_line(&e.experiments));
        }
    }
    t + &format!("all five papers in {elapsed_s:.0} s\n")
}

/// "size 310 s, index 12 s, ..." in the order they ran.
fn experiments_line(xs: &[Experiment]) -> String {
    (xs.iter())
        .map(|x| format!("{} {:.0} s", x.id, x.elapsed_s))
        .collect::<Vec<_>>()
        .join(", ")
}

fn to_html(scale: Scale, entries: &[Entry], elapsed_s: f64) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut b = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>oltpscope: the five papers reproduced</title></head><body>\n<h1>The five papers reproduced</h1>\n<p>Scale: {scale:?}; {elapsed_s:.0} s in all.</p>\n<table><tr><th>paper</th><th>title</th><th>agree</th><th>disagree</th><th>within noise</th><th>not available</th><th>not measured</th><th>time (s)</th><th>experiments (time in this run)</th></tr>\n"
    );
    for e in entries {
        let c = &e.counts;
        b += &format!(
            "<tr><td><a href=\"{0}/index.html\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td><td>{6}</td><td>{7:.0}</td><td>{8}</td></tr>\n",
            esc(&e.paper),
            esc(&e.title),
            c.agrees,
            c.disagrees,
            c.within_noise,
            c.not_available,
            c.not_measured,
            e.elapsed_s,
            esc(&experiments_line(&e.experiments))
        );
    }
    b + "</table>\n</body></html>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_paper_starts_once_the_longest_lane_work_first() {
        let mut sorted: Vec<&str> = ORDER.to_vec();
        sorted.sort_unstable();
        let mut papers: Vec<&str> = PAPERS.to_vec();
        papers.sort_unstable();
        assert_eq!(sorted, papers);
        // PostgreSQL's simulation (Wonderland's first) asks before STEPS' two.
        assert_eq!(&ORDER[..2], &["wonderland", "steps"]);
    }

    #[test]
    fn the_index_lists_every_paper_with_its_counts_and_links() {
        let d = tempfile::tempdir().unwrap();
        let entries: Vec<Entry> = PAPERS
            .iter()
            .enumerate()
            .map(|(i, p)| Entry {
                paper: p.to_string(),
                title: format!("Title <{i}>"),
                counts: Counts {
                    agrees: i,
                    disagrees: 1,
                    ..Counts::default()
                },
                elapsed_s: 10.0 * i as f64,
                experiments: vec![Experiment {
                    id: format!("sweep{i}"),
                    elapsed_s: 4.0 * i as f64,
                    ran: 1,
                    resumed: 0,
                }],
            })
            .collect();
        write(d.path(), Scale::Tiny, &entries, 123.0).unwrap();
        let html = std::fs::read_to_string(d.path().join("index.html")).unwrap();
        for p in PAPERS {
            assert!(
                html.contains(&format!("<a href=\"{p}/index.html\">{p}</a>")),
                "{p}"
            );
        }
        assert!(html.contains("Title &lt;3&gt;") && !html.contains("<3>"));
        let text = std::fs::read_to_string(d.path().join("reproduce.txt")).unwrap();
        assert_eq!(text.lines().count(), 2 * PAPERS.len() + 1);
        assert!(text.contains("sweep2 8 s\n") && html.contains("<td>sweep3 12 s</td>"));
        assert!(text.contains("steps") && text.ends_with("all five papers in 123 s\n"));
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.path().join(RESULT_JSON)).unwrap())
                .unwrap();
        assert_eq!(j["papers"].as_array().unwrap().len(), PAPERS.len());
        // The directory is then an earlier `all`: resumed, and refused to a paper.
        assert!(check_out(d.path(), ALL).is_ok());
        assert!(check_out(d.path(), "steps").is_err());
    }
}
