//! The gate a parent holds a run at between its load and its warm-up (the lab's sweep:
//! `docs/reproduce.md`). With `OLTPSCOPE_GATE=stdin` in its environment, a run opens
//! and loads its database, prints [`READY`] on stderr and reads one line on stdin: `go`
//! starts its warm-up. Its measured window's end is [`WINDOW_ENDED`]. A parent can so
//! run loads and checks beside other work and hold the machine for the window only.
//!
//! A closed gate (end of file: the parent died) or any other line ends the run with one
//! error line instead of waiting forever. Without the variable nothing changes.
//!
//! `OLTPSCOPE_GATE=resident` (issue 41): the same gate before each of several runs on
//! one loaded database (`run_resident`). After each run's report (its text on stdout
//! followed by the line [`END_OF_RUN`], its results directory written) the child says
//! [`RUN_WRITTEN`] on stderr and reads its next command on stdin: `run ARGS` (the next
//! run's arguments after the executable, as a JSON array of strings) or `end` (check the
//! database once and exit). Anything else, or a closed gate, ends it with one line.

use api::{Error, Result};

/// The environment variable that gates a run; its one accepted value is `stdin`.
pub const ENV: &str = "OLTPSCOPE_GATE";
/// The run's line (stderr) once it is loaded and waits for its go.
pub const READY: &str = "gate: ready";
/// The run's line (stderr) once its measured window is over (its close and checks follow).
pub const WINDOW_ENDED: &str = "gate: window ended";

/// The value of [`ENV`] for a resident run: gated, several runs on one load.
pub const RESIDENT: &str = "resident";
/// A resident run's line (stderr) once a run's report and results are written.
pub const RUN_WRITTEN: &str = "gate: run written";
/// A resident run's line (stdout) after each run's text report.
pub const END_OF_RUN: &str = "gate: end of a run's report";

/// Is this run gated? An unknown value is an error (a typo would silently not gate).
pub fn gated() -> Result<bool> {
    Ok(mode()?.is_some())
}

/// Is this a resident run (`OLTPSCOPE_GATE=resident`)?
pub fn resident() -> Result<bool> {
    Ok(mode()? == Some(RESIDENT))
}

fn mode() -> Result<Option<&'static str>> {
    match std::env::var(ENV) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(v) if v == "stdin" => Ok(Some("stdin")),
        Ok(v) if v == RESIDENT => Ok(Some(RESIDENT)),
        Ok(v) => Err(Error::fatal(format!(
            "{ENV}={v}: the gate's values are `stdin` (the run reads its go there) and `{RESIDENT}` (several runs on one load)"
        ))),
        Err(e) => Err(Error::fatal(format!("{ENV}: {e}"))),
    }
}

/// A resident run's next command, read from `input`: `Some(args)` for the next run's
/// arguments, `None` for `end`.
pub fn next_command(input: &mut impl std::io::BufRead) -> Result<Option<Vec<String>>> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) => Err(Error::fatal(
            "the gate closed before the next command (the parent process ended): the resident run stops",
        )),
        Ok(_) if line.trim() == "end" => Ok(None),
        Ok(_) => {
            let bad = || {
                Error::fatal(format!(
                    "the gate sent {:?}: a resident run takes `run [ARGS as a JSON array of strings]` or `end`",
                    line.trim()
                ))
            };
            let args = line.trim().strip_prefix("run ").ok_or_else(bad)?;
            serde_json::from_str::<Vec<String>>(args)
                .map(Some)
                .map_err(|_| bad())
        }
        Err(e) => Err(Error::fatal(format!("cannot read the gate: {e}"))),
    }
}

/// When gated: say the run is ready and wait for the go on stdin.
pub fn wait_for_go() -> Result<()> {
    if !gated()? {
        return Ok(());
    }
    eprintln!("{READY}");
    go(&mut std::io::stdin().lock())
}

/// Read the parent's go from `input`.
fn go(input: &mut impl std::io::BufRead) -> Result<()> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) => Err(Error::fatal(
            "the gate closed before its go (the parent process ended): the run stops after its load",
        )),
        Ok(_) if line.trim() == "go" => Ok(()),
        Ok(_) => Err(Error::fatal(format!(
            "the gate sent {:?} instead of `go`: the run stops after its load",
            line.trim()
        ))),
        Err(e) => Err(Error::fatal(format!("cannot read the gate: {e}"))),
    }
}

/// When gated: say the measured window is over.
pub fn window_ended() {
    if gated().unwrap_or(false) {
        eprintln!("{WINDOW_ENDED}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_go_opens_the_gate_and_a_closed_one_ends_the_run() {
        assert!(go(&mut "go\n".as_bytes()).is_ok());
        let closed = go(&mut "".as_bytes()).unwrap_err().to_string();
        assert!(closed.contains("gate closed"), "{closed}");
        let other = go(&mut "stop\n".as_bytes()).unwrap_err().to_string();
        assert!(other.contains("instead of `go`"), "{other}");
    }

    #[test]
    fn a_resident_run_takes_a_run_or_the_end_and_refuses_anything_else() {
        let run = next_command(&mut "run [\"run\", \"micro\"]\n".as_bytes()).unwrap();
        assert_eq!(run, Some(vec!["run".to_string(), "micro".to_string()]));
        assert_eq!(next_command(&mut "end\n".as_bytes()).unwrap(), None);
        let closed = next_command(&mut "".as_bytes()).unwrap_err().to_string();
        assert!(closed.contains("gate closed"), "{closed}");
        for bad in [
            "go\n",
            "run micro --mode read\n",
            "run [1, 2]\n",
            "ending\n",
        ] {
            let e = next_command(&mut bad.as_bytes()).unwrap_err().to_string();
            assert!(e.contains("takes `run"), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
