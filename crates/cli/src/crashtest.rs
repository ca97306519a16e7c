//! `oltpscope crashtest`: run TPC-B with synchronous logging in a child process, kill it
//! with SIGKILL at a random moment, recover, and check that TPC-B's consistency holds,
//! that every commit the driver acknowledged (written to a side file after commit
//! returned) is present, and that nothing else is. Some trials also kill the recovering
//! process, to show that a crash during recovery is safe.

use crate::args::CrashArgs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn engine_arg(a: &CrashArgs) -> String {
    use clap::ValueEnum;
    a.engine
        .to_possible_value()
        .expect("engines have names")
        .get_name()
        .to_string()
}

/// A tiny xorshift for kill times (the run's own inputs come from its --seed).
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn spawn(args: &[String], stderr_to: &Path) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let err = std::fs::File::create(stderr_to)
        .map_err(|e| format!("cannot create {}: {e}", stderr_to.display()))?;
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start a child run: {e}"))
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

pub fn crashtest(a: &CrashArgs) -> Result<(), String> {
    let engine = engine_arg(a);
    if engine != "disk" {
        return Err(format!("crashtest needs a durable engine: the {engine} engine does not recover (use --engine disk)"));
    }
    let mut seed = a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let base = tempfile_dir(a)?;
    let mut failures = 0;
    for trial in 0..a.trials {
        let dir = base.join(format!("trial-{trial}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let db = dir.join("db");
        let acked = dir.join("acked");
        let s = |x: &str| x.to_string();
        let common = vec![
            s("--engine"),
            engine.clone(),
            s("--db"),
            db.display().to_string(),
            s("--scale"),
            a.scale.to_string(),
        ];
        let mut run_args = vec![s("run"), s("tpcb")];
        run_args.extend(common.clone());
        run_args.extend([
            s("--log"),
            s("sync"),
            s("--threads"),
            a.threads.to_string(),
            s("--duration"),
            s("3600"),
            s("--warmup"),
            s("0"),
            s("--no-check"),
            s("--seed"),
            (a.seed + trial as u64).to_string(),
            s("--acked-file"),
            acked.display().to_string(),
        ]);
        let mut child = spawn(&run_args, &dir.join("run.stderr"))?;
        // Wait for loading to finish and commits to be acknowledged.
        let t0 = Instant::now();
        while file_len(&acked) == 0 {
            if let Ok(Some(st)) = child.try_wait() {
                let err = std::fs::read_to_string(dir.join("run.stderr")).unwrap_or_default();
                return Err(format!(
                    "trial {trial}: the run exited ({st}) before any commit: {}",
                    err.trim()
                ));
            }
            if t0.elapsed() > Duration::from_secs(300) {
                let _ = child.kill();
                return Err(format!(
                    "trial {trial}: no commit acknowledged within 300 s"
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let kill_after = next(&mut seed) % a.max_kill_ms;
        std::thread::sleep(Duration::from_millis(kill_after));
        child
            .kill()
            .map_err(|e| format!("cannot kill the child run: {e}"))?;
        let _ = child.wait();

        let mut check_args = vec![s("check"), s("tpcb")];
        check_args.extend(common.clone());
        check_args.extend([s("--acked-file"), acked.display().to_string()]);
        // Every third trial also crashes the recovery itself, early.
        let recovery_killed = trial % 3 == 1;
        if recovery_killed {
            let mut rec = spawn(&check_args, &dir.join("recovery.stderr"))?;
            std::thread::sleep(Duration::from_millis(next(&mut seed) % 50));
            let _ = rec.kill();
            let _ = rec.wait();
        }
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let out = Command::new(exe)
            .args(&check_args)
            .output()
            .map_err(|e| format!("cannot start the check: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let acks = std::fs::read_to_string(&acked)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        let ok = out.status.success();
        println!(
            "trial {trial:>3}: killed {kill_after:>4} ms after the first ack, {acks:>6} acks{}: {}",
            if recovery_killed {
                ", recovery killed once"
            } else {
                ""
            },
            if ok { "ok" } else { "FAILED" }
        );
        if !ok {
            failures += 1;
            for l in text.lines() {
                println!("    {l}");
            }
        } else if a.keep.is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if a.keep.is_none() {
        let _ = std::fs::remove_dir_all(&base);
    }
    if failures > 0 {
        eprintln!("error: {failures} of {} crash trials failed", a.trials);
        std::process::exit(1);
    }
    println!("all {} crash trials passed", a.trials);
    Ok(())
}

fn tempfile_dir(a: &CrashArgs) -> Result<std::path::PathBuf, String> {
    let base = match &a.keep {
        Some(k) => k.clone(),
        None => std::env::temp_dir().join(format!("oltpscope-crashtest-{}", std::process::id())),
    };
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    Ok(base)
}
