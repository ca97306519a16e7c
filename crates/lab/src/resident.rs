//! In-memory designs' shapes loaded once (issue 41): a run sweep's points whose engine
//! keeps its database in memory (memory, mvcc, partitioned, serial) cannot share a
//! directory (reopened, they recover from their log and run slower: docs/reproduce.md),
//! so one *resident* child (`OLTPSCOPE_GATE=resident`, `driver::run_resident`) loads
//! the shape and runs every repetition of the points that share it, one gated window
//! each, each into its own `points/<point>/rep<k>/`, and checks the database once after
//! the last. Points share a shape when equal on every varied key but the run settings
//! [`RUN_SETTINGS`] (`mode`, `rows`): the micro-benchmark's transactions, not its data.

use crate::lanes::{wait_child, Measured, LANES};
use crate::results;
use crate::sweep::{rep_dir, GateTimes, Kind, Outcome, Point, Spec};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Sender};

/// The varied keys a resident child changes between its runs (`run`'s
/// `RESIDENT_RUN_SETTINGS` in the CLI: `--mode`, `--rows`): the other keys shape the
/// database.
pub const RUN_SETTINGS: [&str; 2] = ["mode", "rows"];

/// The engines whose shapes a resident child serves: those that hold the database in
/// memory and cannot share a directory.
pub const ENGINES: [&str; 4] = ["memory", "mvcc", "partitioned", "serial"];

/// `OLTPSCOPE_RESIDENT=off` runs every repetition in its own child, loading again, as
/// before (for A/B measurements of the two).
pub const ENV: &str = "OLTPSCOPE_RESIDENT";

/// What a sweep's worker thread reports to the sweep's loop.
pub(crate) enum Msg {
    Start(Point, u32),
    Rep(Point, u32, Result<Outcome, String>, Option<f64>),
    /// A resident child loaded its shape (seconds, from its first run's `load_s`).
    Loaded(String, f64),
    /// A resident child's database passed its check after its last run.
    Checked(String, f64),
    /// The work item ended (its repetitions all reported): Err stops the sweep.
    Ended(Result<(), String>),
}

fn enabled() -> bool {
    std::env::var(ENV).map_or(true, |v| v != "off")
}

impl Spec {
    /// The shape point `p` shares with the other points of this sweep in one resident
    /// child (its name: the point without its run settings), or None when it runs in a
    /// child of its own: not a `run` sweep of the micro-benchmark, an engine that is not
    /// in memory, a database of its own (`--db`, `--log-dir`, a shared shape), or
    /// varied cores or bandwidth (a control group per repetition).
    pub fn resident_shape(&self, p: &Point) -> Option<String> {
        if !enabled() || self.kind != Kind::Run || self.workload != "micro" {
            return None;
        }
        if self.shared_db(p).is_some()
            || ["--db", "--log-dir", "--pg-url"]
                .iter()
                .any(|f| runspec::gives(&self.args, f))
        {
            return None;
        }
        if self.vary.iter().any(|v| {
            matches!(
                v.key.as_str(),
                "cores" | "write-bw" | "log-write-bw" | "read-bw"
            )
        }) {
            return None;
        }
        let child = p.child_spec(self, Path::new("x"));
        let engine = child.options.engine.as_deref().unwrap_or("memory");
        if !ENGINES.contains(&engine) {
            return None;
        }
        let shape = Point {
            values: (p.values.iter())
                .filter(|(k, _)| !RUN_SETTINGS.contains(&k.as_str()))
                .cloned()
                .collect(),
        };
        Some(shape.name())
    }
}

/// The resident child's command: the first repetition's arguments, gated resident,
/// its pipes ours, ended with the sweep.
fn command(exe: &Path, first: &[String]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(first)
        .env(driver::gate::ENV, driver::gate::RESIDENT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches no memory of ours. A sweep killed
    // takes its resident child with it.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    cmd
}

/// Send each line of `r` (the child's stderr) to `tx` until it closes.
fn read_lines(r: impl std::io::Read, tx: Sender<String>) {
    let mut r = std::io::BufReader::new(r);
    let mut buf = Vec::new();
    while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
        buf.clear();
        if tx.send(line).is_err() {
            break;
        }
    }
}

/// Send each run's text report on `r` (the child's stdout), up to its end marker, to
/// `tx`; what follows the last marker once it closes.
fn read_reports(r: impl std::io::Read, tx: Sender<Vec<u8>>) {
    let mut r = std::io::BufReader::new(r);
    let (mut buf, mut chunk) = (Vec::new(), Vec::new());
    while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
        if String::from_utf8_lossy(&buf).trim_end() == driver::gate::END_OF_RUN {
            let _ = tx.send(std::mem::take(&mut chunk));
        } else {
            chunk.append(&mut buf);
        }
        buf.clear();
    }
    let _ = tx.send(chunk);
}

/// The sweep's side of a resident child: its share of the machine, its stdin, what it
/// says, and its last line of its own.
struct Talk<'a> {
    m: Measured<'a>,
    input: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    chunks: mpsc::Receiver<Vec<u8>>,
    last: String,
    /// The child ended (its stderr closed) before a run's results.
    ended: bool,
}

impl Talk<'_> {
    fn say(&mut self, what: &[u8]) {
        // A child gone already says why on stderr, read after.
        if let Some(inp) = self.input.as_mut() {
            let _ = inp.write_all(what).and_then(|()| inp.flush());
        }
    }

    /// One run: a window at each `gate: ready` (the go once it holds the machine), up to
    /// `gate: run written`. Its stderr, its gate times, and whether it was written (not:
    /// the child ended).
    fn one_run(&mut self) -> (String, Vec<GateTimes>, bool) {
        let (mut text, mut gate) = (String::new(), Vec::new());
        while let Ok(line) = self.lines.recv() {
            text += &line;
            text.push('\n');
            if said(&line) {
                self.last = line.trim().to_string();
            }
            match line.trim() {
                driver::gate::READY => {
                    self.m.ready();
                    let t = std::time::Instant::now();
                    // SAFETY: sync takes no argument and cannot fail.
                    unsafe { libc::sync() };
                    gate.push(GateTimes {
                        go: crate::sweep::unix_now(),
                        sync_s: t.elapsed().as_secs_f64(),
                        window_end: None,
                        stopped: self.m.stopped(),
                    });
                    self.say(b"go\n");
                }
                driver::gate::WINDOW_ENDED => {
                    self.m.window_ended();
                    if let Some(g) = gate.last_mut() {
                        g.window_end = Some(crate::sweep::unix_now());
                    }
                }
                driver::gate::RUN_WRITTEN => {
                    self.m.window_ended();
                    return (text, gate, true);
                }
                _ => {}
            }
        }
        // Whatever happened, no window of this child is open any more.
        self.m.window_ended();
        (text, gate, false)
    }

    /// Repetition `rep` of `p`: its run, then its results directory kept (renamed from
    /// partial) or, failed, removed if it holds results files only. A child that ended
    /// before its results sets `ended` and fails it with its last line.
    fn rep(&mut self, dir: &Path, p: &Point, rep: u32) -> Result<Outcome, String> {
        let (done, partial) = rep_dir(dir, p, rep);
        let outcome = match self.one_run() {
            (text, gate, true) => {
                let stdout = self.chunks.recv().unwrap_or_default();
                finish_rep(&partial, &done, &stdout, &text, &gate)
            }
            _ => {
                // Its stderr closed: the child ended before this run's results.
                self.ended = true;
                Ok(Outcome::Failed(match self.last.as_str() {
                    "" => "the resident child ended without a message".to_string(),
                    l => l.to_string(),
                }))
            }
        };
        if matches!(outcome, Ok(Outcome::Failed(_)))
            && partial.exists()
            && results::only_our_files(&partial).unwrap_or(false)
        {
            let _ = std::fs::remove_dir_all(&partial);
        }
        outcome
    }

    /// What the child says after its last run, up to its end: its output, its stderr.
    fn rest(&mut self) -> String {
        let mut tail = String::new();
        for line in self.lines.iter() {
            tail += &line;
            tail.push('\n');
            if said(&line) {
                self.last = line.trim().to_string();
            }
        }
        let stdout: Vec<u8> = self.chunks.iter().flatten().collect();
        String::from_utf8_lossy(&stdout).to_string() + &tail
    }
}

/// Run `reps` (repetitions of points of one resident `shape`, in order) in one resident
/// child, each reported on `tx` as it ends. A repetition that fails is that
/// repetition's failure; a child that ends early fails the rest with its last error
/// line. `Err`: the database's check after the last run failed (naming the shape; the
/// sweep stops).
pub(crate) fn run_shape(
    exe: &Path,
    dir: &Path,
    spec: &Spec,
    shape: &str,
    reps: &[(Point, u32)],
    tx: &Sender<Msg>,
) -> Result<(), String> {
    let (p0, r0) = &reps[0];
    let first = crate::sweep::rep_command(dir, spec, p0, *r0)?.2;
    let checks = !runspec::gives(&first, runspec::flag::NO_CHECK);
    // Its turn for its whole life: at most `TURNS` resident children hold a database.
    let m = Measured::resident(&LANES);
    let mut child = command(exe, &first)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let send = |m: Msg| {
        // The receiver outlives the sweep's workers.
        let _ = tx.send(m);
    };
    let (err, out) = (child.stderr.take(), child.stdout.take());
    let (lines_tx, lines) = mpsc::channel::<String>();
    let (chunks_tx, chunks) = mpsc::channel::<Vec<u8>>();
    let mut talk = Talk {
        m,
        input: child.stdin.take(),
        lines,
        chunks,
        last: String::new(),
        ended: false,
    };
    talk.m.spawned(child.id());
    std::thread::scope(|sc| {
        sc.spawn(move || read_lines(err.expect("stderr is piped"), lines_tx));
        sc.spawn(move || read_reports(out.expect("stdout is piped"), chunks_tx));
        let mut dead: Option<String> = None;
        for (i, (p, rep)) in reps.iter().enumerate() {
            let rep = *rep;
            if let Some(why) = &dead {
                send(Msg::Rep(
                    p.clone(),
                    rep,
                    Ok(Outcome::Failed(why.clone())),
                    None,
                ));
                continue;
            }
            send(Msg::Start(p.clone(), rep));
            let t0 = std::time::Instant::now();
            if i > 0 {
                let args = crate::sweep::rep_command(dir, spec, p, rep)?.2;
                let line = serde_json::to_string(&args).expect("strings serialize");
                talk.say(format!("run {line}\n").as_bytes());
            }
            let (done, _) = rep_dir(dir, p, rep);
            let outcome = talk.rep(dir, p, rep);
            if talk.ended {
                dead = Some(match &outcome {
                    Ok(Outcome::Failed(why)) => why.clone(),
                    _ => "the resident child ended".into(),
                });
            }
            if i == 0 && matches!(outcome, Ok(Outcome::Done)) {
                if let Some(s) = load_s(&done) {
                    send(Msg::Loaded(shape.to_string(), s));
                }
            }
            if outcome.is_err() {
                dead = Some("the sweep could not keep a repetition's results".into());
            }
            let t = t0.elapsed().as_secs_f64();
            send(Msg::Rep(p.clone(), rep, outcome, Some(t)));
        }
        let t0 = std::time::Instant::now();
        if dead.is_none() {
            talk.say(b"end\n");
        }
        // Closed: a child still waiting for a command ends.
        talk.input = None;
        let text = talk.rest();
        let status = wait_child(&mut child, &LANES);
        match status {
            _ if dead.is_some() => Ok(()),
            Ok(s) if s.success() => {
                if checks {
                    send(Msg::Checked(shape.to_string(), t0.elapsed().as_secs_f64()));
                }
                Ok(())
            }
            _ => {
                let why = (text.lines())
                    .find(|l| l.contains("[FAIL]"))
                    .map_or(talk.last.clone(), |l| l.trim().to_string());
                Err(format!(
                    "{shape}: its consistency check after the runs on it (one resident child) failed ({why})"
                ))
            }
        }
    })
}

/// The seconds of the load a repetition's report holds (its child's first run).
fn load_s(done: &Path) -> Option<f64> {
    let r = results::load_report(done).ok()?;
    r.get("load_s")?.as_f64()
}

/// A line of the child's own (not of the gate's protocol): its last one is why it ended.
fn said(line: &str) -> bool {
    let l = line.trim();
    !l.is_empty()
        && ![
            driver::gate::READY,
            driver::gate::WINDOW_ENDED,
            driver::gate::RUN_WRITTEN,
        ]
        .contains(&l)
}

/// A resident run's repetition written by the child into `partial`: add its output and
/// gate times and rename it `done`.
fn finish_rep(
    partial: &Path,
    done: &Path,
    stdout: &[u8],
    stderr: &str,
    gate: &[GateTimes],
) -> Result<Outcome, String> {
    if !results::is_complete(partial) {
        return Ok(Outcome::Failed(format!(
            "the run succeeded but {} is not a complete results directory",
            partial.display()
        )));
    }
    if !gate.iter().any(|g| g.window_end.is_some()) {
        return Ok(Outcome::Failed(
            "the run never stopped at its gate: its window was not run alone".into(),
        ));
    }
    let gate_text: String = gate.iter().map(GateTimes::line).collect();
    crate::sweep::finish_rep(
        partial,
        done,
        &[
            ("stdout.txt", stdout),
            ("stderr.txt", stderr.as_bytes()),
            (results::GATE, gate_text.as_bytes()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{self, Event};
    use runspec::{RunSpec, Workload};

    /// A resident child standing in for `oltpscope run`: it speaks the gate's protocol
    /// (`driver::gate`), writes a report per run (`load_s` on its first), counts its
    /// starts in `starts`, and fails as the files beside it say: `fail-at` (a run whose
    /// results directory contains its text: `error` says why and exits, `kill` dies
    /// without a word), `fail-check` (the check at the end).
    const CHILD: &str = r#"#!/bin/sh
dir="$(dirname "$0")"
echo x >> "$dir/starts"
out=""; prev=""
for a in "$@"; do [ "$prev" = "--out" ] && out="$a"; prev="$a"; done
n=0
while :; do
  n=$((n+1))
  echo "gate: ready" >&2
  read go || exit 3
  [ "$go" = go ] || exit 3
  if [ -f "$dir/fail-at" ]; then
    case "$out" in *"$(cat "$dir/fail-at")"*)
      [ -f "$dir/kill" ] && kill -9 $$
      echo "error: boom in $out" >&2; exit 2;;
    esac
  fi
  echo "gate: window ended" >&2
  mkdir -p "$out"
  load=null; [ $n = 1 ] && load=1.5
  printf '{"throughput_tps": %s, "abort_rate": 0.0, "load_s": %s}' "$n" "$load" > "$out/report.json"
  echo '{}' > "$out/manifest.json"
  echo "report of run $n"
  echo "gate: end of a run's report"
  echo "gate: run written" >&2
  read cmd || exit 3
  case "$cmd" in
    end) if [ -f "$dir/fail-check" ]; then echo "[FAIL] rows: a row torn"; exit 1; fi; exit 0;;
    run*) out=$(echo "$cmd" | sed 's/.*"--out","\([^"]*\)".*/\1/');;
    *) exit 2;;
  esac
done
"#;

    struct Ran {
        lines: Vec<String>,
        loaded: usize,
        checked: usize,
        result: Result<sweep::Summary, String>,
    }

    /// The fake `oltpscope`, written by a shell of its own. Written by this process, it
    /// could not be started while another test's thread was between a fork and an exec:
    /// that child holds a copy of the descriptor the script was written through, and
    /// running a file open for writing fails ("Text file busy": 1 failed run of this
    /// binary in 648, four copies at once on two cores, session 76).
    fn child(d: &Path) -> std::path::PathBuf {
        use std::io::Write;
        let exe = d.join("child.sh");
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "cat > \"$0\" && chmod 755 \"$0\""])
            .arg(&exe)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        sh.stdin
            .take()
            .unwrap()
            .write_all(CHILD.as_bytes())
            .unwrap();
        assert!(sh.wait().unwrap().success(), "writing {}", exe.display());
        exe
    }

    fn spec(engine: &str) -> Spec {
        let run = RunSpec::new(runspec::Command::Run, Workload::named("micro").unwrap());
        Spec::of(
            &run,
            vec![
                sweep::parse_vary(&format!("engine={engine}")).unwrap(),
                sweep::parse_vary("mode=read,update").unwrap(),
            ],
            2,
        )
    }

    fn sweep(exe: &Path, out: &Path, spec: &Spec) -> Ran {
        let (mut lines, mut loaded, mut checked) = (Vec::new(), 0, 0);
        let result = sweep::run(exe, out, spec, |e| match e {
            Event::Finished {
                point,
                rep,
                outcome,
                ..
            } => lines.push(format!(
                "{point} rep{rep}: {}",
                match outcome {
                    Outcome::Skipped => "skipped".to_string(),
                    Outcome::Done => "done".to_string(),
                    Outcome::Failed(e) => format!("FAILED: {e}"),
                }
            )),
            Event::Loaded { .. } => loaded += 1,
            Event::Checked { .. } => checked += 1,
            Event::Start { .. } => {}
        });
        Ran {
            lines,
            loaded,
            checked,
            result,
        }
    }

    fn starts(d: &Path) -> usize {
        std::fs::read_to_string(d.join("starts"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    #[test]
    fn a_shapes_repetitions_share_one_child_and_one_load() {
        let d = tempfile::tempdir().unwrap();
        let exe = child(d.path());
        let out = d.path().join("sweep");
        let s = spec("memory");
        let pts = s.points();
        assert_eq!(s.resident_shape(&pts[0]), s.resident_shape(&pts[1]));
        assert!(s.resident_shape(&pts[0]).is_some());
        let r = sweep(&exe, &out, &s);
        let sum = r.result.unwrap();
        assert_eq!(starts(d.path()), 1, "one child for the 4 repetitions");
        assert_eq!((r.loaded, r.checked), (1, 1));
        assert!(r.lines.iter().all(|l| l.ends_with("done")), "{:?}", r.lines);
        assert_eq!(r.lines.len(), 4);
        // Each repetition is its own results directory, with its own window and output.
        for p in &pts {
            for rep in 1..=2 {
                let (done, partial) = rep_dir(&out, p, rep);
                assert!(results::is_complete(&done) && !partial.exists());
                let gate = std::fs::read_to_string(done.join(results::GATE)).unwrap();
                assert!(gate.starts_with("go ") && !gate.contains("window_end none"));
                let so = std::fs::read_to_string(done.join("stdout.txt")).unwrap();
                assert!(
                    so.starts_with("report of run ") && !so.contains("gate:"),
                    "{so}"
                );
            }
        }
        // The runs in order: read rep1, rep2, then update's.
        let tps: Vec<f64> = (sum.points.iter())
            .map(|p| p.throughput_tps.unwrap().median)
            .collect();
        assert_eq!(tps, vec![1.5, 3.5]);
    }

    #[test]
    fn a_failing_run_fails_the_rest_of_its_shape_and_a_rerun_runs_only_those() {
        for how in ["error", "kill"] {
            let d = tempfile::tempdir().unwrap();
            let exe = child(d.path());
            let out = d.path().join("sweep");
            let s = spec("mvcc");
            std::fs::write(d.path().join("fail-at"), "mode-update/rep1").unwrap();
            if how == "kill" {
                std::fs::write(d.path().join("kill"), "").unwrap();
            }
            let r = sweep(&exe, &out, &s);
            r.result.unwrap();
            assert_eq!(
                r.lines[..2],
                [
                    "engine-mvcc_mode-read rep1: done",
                    "engine-mvcc_mode-read rep2: done"
                ]
            );
            let why = match how {
                "error" => "error: boom in",
                _ => "the resident child ended without a message",
            };
            for l in &r.lines[2..] {
                assert!(l.contains(&format!("FAILED: {why}")), "{how}: {l}");
                assert_eq!(l.lines().count(), 1);
            }
            assert_eq!((r.loaded, r.checked), (1, 0), "{how}");
            let (_, partial) = rep_dir(&out, &s.points()[1], 1);
            assert!(
                !partial.exists(),
                "{how}: the failed run's leftover removed"
            );
            // The rerun skips what is complete and loads once more for the rest.
            std::fs::remove_file(d.path().join("fail-at")).unwrap();
            let r = sweep(&exe, &out, &s);
            r.result.unwrap();
            assert_eq!(starts(d.path()), 2, "{how}");
            assert_eq!(r.lines.iter().filter(|l| l.ends_with("skipped")).count(), 2);
            assert_eq!(r.lines.iter().filter(|l| l.ends_with("done")).count(), 2);
            assert_eq!((r.loaded, r.checked), (1, 1), "{how}");
        }
    }

    #[test]
    fn a_failed_check_after_the_last_run_stops_the_sweep_naming_the_shape() {
        let d = tempfile::tempdir().unwrap();
        let exe = child(d.path());
        std::fs::write(d.path().join("fail-check"), "").unwrap();
        let r = sweep(&exe, &d.path().join("sweep"), &spec("partitioned"));
        let e = r.result.unwrap_err();
        assert!(
            e.starts_with("engine-partitioned: its consistency check")
                && e.contains("[FAIL] rows: a row torn"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn only_in_memory_engines_of_micro_run_sweeps_are_resident() {
        let s = spec("memory,disk");
        let pts = s.points();
        assert_eq!(s.resident_shape(&pts[0]).as_deref(), Some("engine-memory"));
        assert_eq!(s.resident_shape(&pts[2]), None, "the disk engine");
        let mut sized = spec("mvcc");
        sized.vary.push(sweep::parse_vary("size=1MB,2MB").unwrap());
        let pts = sized.points();
        assert_ne!(sized.resident_shape(&pts[0]), sized.resident_shape(&pts[1]));
        let mut own = spec("memory");
        own.args = vec!["--db".into(), "/x".into()];
        assert_eq!(
            own.resident_shape(&own.points()[0]),
            None,
            "a database of its own"
        );
    }
}
