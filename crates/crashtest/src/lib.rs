//! The crash harness behind `oltpscope crashtest`: run TPC-B or TPC-C with synchronous
//! logging in a child process on a durable engine (disk, memory, mvcc or partitioned),
//! kill it with SIGKILL at a random moment, recover, and check the workload's consistency
//! and that every commit the driver acknowledged (one line per commit in a side file,
//! written after commit returned) is present, and nothing else but in-flight ones.
//! Trials continue on the same database: the first run loads, every later one recovers
//! (`run --no-load`), so recovery of a recovered database is tested too. Some trials
//! also kill a recovery. The disk engine gets a random checkpoint interval per trial
//! (10 ms to 2 s), the memory, mvcc and partitioned engines a random log growth between
//! checkpoints (1 KB to 4 MB).
//!
//! `--enospc` replaces kills by a full disk: the database lives on a small tmpfs grown
//! only a little above its size; the run must fail with one "no space left" line and
//! exit code 2, and after the tmpfs is grown every acknowledged commit must be there.
//! It needs root and `mount`; without them it says so (an error, never faked).
//!
//! Owns the trials and their checks; the child command lines are `runspec`'s. Knows no
//! engine: `cli` says what the chosen engine is ([`Config`]) and passes its own
//! executable, whose `run` and `check` are the children.

use runspec::{Command as Child, Options, RunSpec, Workload};
use std::path::{Path, PathBuf};
use std::process::{Child as Process, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The workload of the killed runs, with its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashWorkload {
    /// TPC-B with this many branches.
    Tpcb { scale: u64 },
    /// TPC-C with this many warehouses.
    Tpcc { warehouses: u32 },
}

/// How the engine under test takes checkpoints, so trials vary them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoints {
    /// Every `--checkpoint-ms` (the disk engine).
    Interval,
    /// When the log has grown by `--checkpoint-log` (the engines whose log is their
    /// database).
    LogGrowth,
    /// None of its own.
    None,
}

/// A crash test, as `cli` parsed and resolved it.
#[derive(Clone, Debug)]
pub struct Config {
    /// The oltpscope executable whose `run` and `check` are the children.
    pub exe: PathBuf,
    /// The engine, by its registry name (a durable one of oltpscope's own).
    pub engine: String,
    /// Its database goes in `--log-dir` rather than `--db`.
    pub db_in_log_dir: bool,
    pub checkpoints: Checkpoints,
    pub workload: CrashWorkload,
    pub trials: u32,
    pub threads: u32,
    pub max_kill_ms: u64,
    pub seed: u64,
    /// Work here and keep it, instead of a temporary directory.
    pub keep: Option<PathBuf>,
    /// Fill the disk instead of killing (root only).
    pub enospc: bool,
}

/// How the trials ended (an error is something that kept them from running).
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// The one line to end with (exit code 1).
    Failed(String),
}

/// A tiny xorshift for kill times (the run's own inputs come from its --seed).
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn spawn(exe: &Path, spec: &RunSpec, stderr_to: &Path) -> Result<Process, String> {
    let err = std::fs::File::create(stderr_to)
        .map_err(|e| format!("cannot create {}: {e}", stderr_to.display()))?;
    Command::new(exe)
        .args(spec.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start a child run: {e}"))
}

fn output(exe: &Path, spec: &RunSpec) -> Result<Output, String> {
    Command::new(exe)
        .args(spec.to_args())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start a child run: {e}"))
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Cut the acknowledgement file after its last complete line: a run killed in the middle
/// of writing a line must not leave half a tag for the next run to continue.
fn cut_torn_line(p: &Path) -> Result<(), String> {
    let Ok(data) = std::fs::read(p) else {
        return Ok(());
    };
    let keep = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if keep < data.len() {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .map_err(|e| format!("cannot open {}: {e}", p.display()))?;
        f.set_len(keep as u64)
            .map_err(|e| format!("cannot cut {}: {e}", p.display()))?;
    }
    Ok(())
}

/// From a `check` output: (acknowledged commits checked, missing).
pub fn acked_counts(text: &str) -> Option<(u64, u64)> {
    let line = text
        .lines()
        .find(|l| l.contains("acknowledged commits durable"))?;
    let detail = line.split_once("nothing else: ")?.1;
    let acked = detail.split_whitespace().next()?.parse().ok()?;
    let before_missing = detail.split(" missing").next()?;
    let lost = before_missing.rsplit(' ').next()?.parse().ok()?;
    Some((acked, lost))
}

/// The children of one crash test: workload, engine and database.
struct Setup {
    exe: PathBuf,
    /// The workload and engine options shared by `run` and `check`.
    base: RunSpec,
}

impl Setup {
    fn new(c: &Config, db: &Path) -> Setup {
        let workload = match c.workload {
            CrashWorkload::Tpcb { scale } => Workload::Tpcb(runspec::Tpcb {
                scale: Some(scale),
                ..Default::default()
            }),
            CrashWorkload::Tpcc { warehouses } => Workload::Tpcc(runspec::Tpcc {
                warehouses: Some(warehouses),
                ..Default::default()
            }),
        };
        let mut base = RunSpec::new(Child::Run, workload);
        base.options.engine = Some(c.engine.clone());
        if c.db_in_log_dir {
            base.options.log_dir = Some(db.to_path_buf());
        } else {
            base.options.db = Some(db.to_path_buf());
        }
        Setup {
            exe: c.exe.clone(),
            base,
        }
    }

    fn workload(&self) -> &'static str {
        self.base.workload.name()
    }

    fn engine(&self) -> &str {
        self.base.options.engine.as_deref().unwrap_or("?")
    }

    /// A `run`: sync logging, acknowledgements to `acked`, loading first when `load`;
    /// `stop` sets its length.
    fn run(
        &self,
        c: &Config,
        seed: u64,
        load: bool,
        acked: &Path,
        stop: impl FnOnce(&mut Options),
    ) -> RunSpec {
        let mut r = self.base.clone();
        let o = &mut r.options;
        o.log = Some(runspec::LogMode::Sync);
        o.threads = Some(c.threads);
        o.warmup = Some(0.0);
        o.no_check = true;
        o.seed = Some(seed);
        o.acked_file = Some(acked.to_path_buf());
        // The harness reads the run's stderr for its one error line: no progress.
        o.report_interval = Some(0.0);
        o.no_load = !load;
        stop(o);
        r
    }

    /// The `check` of every acknowledged commit in `acked` (recovering first).
    fn check(&self, acked: &Path) -> RunSpec {
        let mut r = self.base.clone();
        r.command = Child::Check;
        r.options.acked_file = Some(acked.to_path_buf());
        r
    }
}

/// Totals printed at the end.
#[derive(Default)]
struct Totals {
    trials: u32,
    acked_checked: u64,
    lost: u64,
    recoveries_killed: u32,
    failures: u32,
}

impl Totals {
    fn report(&self, s: &Setup, acked_distinct: u64) {
        println!(
            "crashtest {} on {}: {} trials, {} acknowledged commits checked ({} distinct, each re-checked after every later crash), {} lost, {} recoveries killed and re-run",
            s.workload(),
            s.engine(),
            self.trials,
            self.acked_checked,
            acked_distinct,
            self.lost,
            self.recoveries_killed
        );
    }
}

fn lines_in(p: &Path) -> u64 {
    std::fs::read_to_string(p)
        .map(|t| t.lines().count() as u64)
        .unwrap_or(0)
}

/// The check after a crash.
struct Checked {
    /// It passed and reported on the acknowledged commits.
    ok: bool,
    /// Its output (printed when it failed).
    text: String,
    /// Acknowledged commits checked, and missing.
    checked: u64,
    lost: u64,
}

fn run_check(s: &Setup, acked: &Path) -> Result<Checked, String> {
    let out = output(&s.exe, &s.check(acked))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let counts = acked_counts(&text);
    let (checked, lost) = counts.unwrap_or((0, 0));
    Ok(Checked {
        ok: out.status.success() && counts.is_some() && lost == 0,
        text,
        checked,
        lost,
    })
}

/// Run the trials of `a` (killing runs, or filling the disk with `enospc`), printing a
/// line per trial and the totals.
pub fn crashtest(a: &Config) -> Result<Outcome, String> {
    let (_tmp, base) = base_dir(a)?;
    if a.enospc {
        return enospc(a, &base);
    }
    let setup = Setup::new(a, &base.join("db"));
    let acked = base.join("acked");
    let mut seed = a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut t = Totals::default();
    for trial in 0..a.trials {
        t.trials += 1;
        let (ck, mut note) = checkpoint_args(a, &mut seed);
        let load = trial == 0;
        let run = setup.run(a, a.seed + trial as u64, load, &acked, |o| {
            o.duration = Some(3600.0);
            o.checkpoint_ms = ck.checkpoint_ms;
            o.checkpoint_log = ck.checkpoint_log;
        });
        // Some trials first kill a run while it recovers (before it commits anything).
        if !load && trial % 3 == 2 {
            let early_err = base.join(format!("trial-{trial}.early.stderr"));
            let mut early = spawn(&setup.exe, &run, &early_err)?;
            std::thread::sleep(Duration::from_millis(next(&mut seed) % 150));
            let _ = early.kill();
            let _ = early.wait();
            cut_torn_line(&acked)?;
            t.recoveries_killed += 1;
            note.push_str(", a recovering run killed");
        }
        let stderr = base.join(format!("trial-{trial}.stderr"));
        let before = file_len(&acked);
        let mut child = spawn(&setup.exe, &run, &stderr)?;
        wait_first_ack(&mut child, &acked, before, &stderr, trial)?;
        let kill_after = next(&mut seed) % a.max_kill_ms;
        std::thread::sleep(Duration::from_millis(kill_after));
        child
            .kill()
            .map_err(|e| format!("cannot kill the child run: {e}"))?;
        let _ = child.wait();
        cut_torn_line(&acked)?;

        // Every third trial also crashes the recovery itself, early.
        if trial % 3 == 1 {
            let mut rec = spawn(
                &setup.exe,
                &setup.check(&acked),
                &base.join(format!("trial-{trial}.recovery.stderr")),
            )?;
            std::thread::sleep(Duration::from_millis(next(&mut seed) % 100));
            let _ = rec.kill();
            let _ = rec.wait();
            t.recoveries_killed += 1;
            note.push_str(", recovery killed once");
        }
        let Checked {
            ok,
            text,
            checked,
            lost,
        } = run_check(&setup, &acked)?;
        t.acked_checked += checked;
        t.lost += lost;
        println!(
            "trial {trial:>3}: killed {kill_after:>4} ms after the first ack{note}; {checked} acks checked, {lost} lost: {}",
            if ok { "ok" } else { "FAILED" }
        );
        if !ok {
            t.failures += 1;
            for l in text.lines() {
                println!("    {l}");
            }
            // The database cannot be trusted for further trials.
            break;
        }
    }
    t.report(&setup, lines_in(&acked));
    Ok(finish(a, &t))
}

/// A trial's checkpoint interval, drawn from `seed`: the run options it sets
/// (`checkpoint_ms` or `checkpoint_log`; none for an engine without checkpoints of its
/// own) and the trial line's note.
fn checkpoint_args(a: &Config, seed: &mut u64) -> (Options, String) {
    match a.checkpoints {
        Checkpoints::Interval => {
            let ms = 10 + next(seed) % 1991;
            let o = Options {
                checkpoint_ms: Some(ms),
                ..Options::default()
            };
            (o, format!(", checkpoint every {ms} ms"))
        }
        Checkpoints::LogGrowth => {
            // Checkpoints (and the freeing of the log) every 1 KB-4 MB of log, so kills
            // land inside them and recovery starts from them (0 is not a size the
            // option takes: one trial in 4,096 once stopped a soak).
            let kb = 1 + next(seed) % 4096;
            let o = Options {
                checkpoint_log: Some(kb << 10),
                ..Options::default()
            };
            (o, format!(", checkpoint every {kb} KB of log"))
        }
        Checkpoints::None => (Options::default(), String::new()),
    }
}

/// Wait for loading or recovery to finish and this run's first acknowledgement (the
/// acknowledgement file grown past `before` bytes). The limit counts only time in which
/// the harness itself ran: a soak paused with SIGSTOP (while a measurement needs the
/// machine) must not time out.
fn wait_first_ack(
    child: &mut Process,
    acked: &Path,
    before: u64,
    stderr: &Path,
    trial: u32,
) -> Result<(), String> {
    let mut waited = Duration::ZERO;
    let mut last = Instant::now();
    while file_len(acked) == before {
        if let Ok(Some(st)) = child.try_wait() {
            let err = std::fs::read_to_string(stderr).unwrap_or_default();
            return Err(format!(
                "trial {trial}: the run exited ({st}) before any commit: {}",
                err.trim()
            ));
        }
        let step = last.elapsed();
        last = Instant::now();
        if step < Duration::from_secs(1) {
            waited += step;
        }
        if waited > Duration::from_secs(600) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "trial {trial}: no commit acknowledged within 600 s"
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn finish(a: &Config, t: &Totals) -> Outcome {
    if t.failures > 0 || t.lost > 0 {
        if a.keep.is_none() {
            println!("(rerun with --keep DIR to keep the database and the trials' files)");
        }
        return Outcome::Failed(format!(
            "{} of {} crash trials failed, {} acknowledged commits lost",
            t.failures, t.trials, t.lost
        ));
    }
    println!("all {} crash trials passed", t.trials);
    Outcome::Passed
}

/// The directory the trials work in: `--keep DIR`, or a process-owned temp dir removed
/// at the end (and, if this process is killed, by the next oltpscope that makes one).
fn base_dir(a: &Config) -> Result<(Option<storage::temp::TempDir>, PathBuf), String> {
    match &a.keep {
        Some(k) => {
            std::fs::create_dir_all(k)
                .map_err(|e| format!("cannot create {}: {e}", k.display()))?;
            Ok((None, k.clone()))
        }
        None => {
            let t = storage::temp::create("crashtest")
                .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
            let p = t.path().to_path_buf();
            Ok((Some(t), p))
        }
    }
}

// ---------------------------------------------------------------- full disk (ENOSPC)

/// A tmpfs mounted by this process, unmounted on drop.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, bytes: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| {
                format!("--enospc is unavailable on this machine: cannot run mount: {e}")
            })?;
        if !out.status.success() {
            return Err(format!(
                "--enospc is unavailable on this machine: mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            dir: dir.to_path_buf(),
        })
    }

    fn resize(&self, bytes: u64) -> Result<(), String> {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={bytes}")])
            .arg(&self.dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cannot resize the tmpfs at {} to {bytes} bytes: {}",
                self.dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(())
    }

    /// Bytes in use.
    fn used(&self) -> Result<u64, String> {
        let c = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes())
            .map_err(|_| "a path with a NUL byte".to_string())?;
        // SAFETY: statvfs writes only the struct we pass; the path is NUL-terminated.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        if rc != 0 {
            return Err(format!(
                "statvfs {}: {}",
                self.dir.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok((st.f_blocks - st.f_bfree) as u64 * st.f_frsize as u64)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).output();
    }
}

/// Size of the tmpfs while loading: a limit, not a reservation.
const ROOMY: u64 = 8 << 30;

fn enospc(a: &Config, base: &Path) -> Result<Outcome, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(
            "--enospc is unavailable here: it mounts a small tmpfs, which needs root".into(),
        );
    }
    let fs = Tmpfs::mount(&base.join("mnt"), ROOMY)?;
    let setup = Setup::new(a, &fs.dir.join("db"));
    let acked = base.join("acked");
    let mut seed = a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut t = Totals::default();
    // Load (and one transaction) with room to spare.
    let load = setup.run(a, a.seed, true, &acked, |o| o.txns = Some(1));
    let out = output(&setup.exe, &load)?;
    if !out.status.success() {
        return Err(format!(
            "the load on the tmpfs failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    for trial in 0..a.trials {
        t.trials += 1;
        let used = fs.used()?;
        // Room for a few hundred to a few thousand commits.
        let margin = (64 << 10) + (next(&mut seed) % 16) * (64 << 10);
        fs.resize(used + margin)?;
        let interval =
            (a.checkpoints == Checkpoints::Interval).then(|| 10 + next(&mut seed) % 1991);
        let run = setup.run(a, a.seed + 1 + trial as u64, false, &acked, |o| {
            o.duration = Some(120.0);
            o.checkpoint_ms = interval;
        });
        let before = lines_in(&acked);
        let out = output(&setup.exe, &run)?;
        cut_torn_line(&acked)?;
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("note:")).collect();
        let one_clear_line = out.status.code() == Some(2)
            && lines.len() == 1
            && lines[0].starts_with("error:")
            && lines[0].to_ascii_lowercase().contains("no space left")
            && !err.contains("panicked");
        fs.resize(ROOMY)?;
        let Checked {
            ok,
            text,
            checked,
            lost,
        } = run_check(&setup, &acked)?;
        t.acked_checked += checked;
        t.lost += lost;
        let ok = ok && one_clear_line;
        println!(
            "trial {trial:>3}: disk full after {} acks ({margin} bytes free); {checked} acks checked, {lost} lost: {}",
            lines_in(&acked) - before,
            if ok { "ok" } else { "FAILED" }
        );
        if !one_clear_line {
            println!(
                "    the full disk did not end the run with one \"no space left\" line and exit code 2 ({}); its stderr:",
                out.status
            );
            for l in err.lines() {
                println!("      {l}");
            }
        }
        if !ok {
            t.failures += 1;
            for l in text.lines() {
                println!("    {l}");
            }
            break;
        }
    }
    t.report(&setup, lines_in(&acked));
    drop(fs);
    Ok(finish(a, &t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acked_counts_parse_both_workloads_lines() {
        let tpcb = "  [ok] acknowledged commits durable, nothing else: 1234 acknowledged commits: 0 missing; 5 history rows, 0 neither";
        assert_eq!(acked_counts(tpcb), Some((1234, 0)));
        let tpcc = "  [FAIL] acknowledged commits durable, nothing else: 77 acknowledged commits (40 New-Orders, 37 Payments): 3 missing; 0 history rows";
        assert_eq!(acked_counts(tpcc), Some((77, 3)));
        assert_eq!(acked_counts("nothing here"), None);
    }

    #[test]
    fn a_torn_last_line_is_cut() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("acked");
        std::fs::write(&p, b"1 0 1\n1 0 2\n1 0").unwrap();
        cut_torn_line(&p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"1 0 1\n1 0 2\n");
        cut_torn_line(&p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"1 0 1\n1 0 2\n");
    }
}
