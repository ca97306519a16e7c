//! The gate a parent holds a run at between its load and its warm-up (the lab's sweep:
//! `docs/reproduce.md`). With `OLTPSCOPE_GATE=stdin` in its environment, a run opens
//! and loads its database, prints [`READY`] on stderr and reads one line on stdin: `go`
//! starts its warm-up. Its measured window's end is [`WINDOW_ENDED`]. A parent can so
//! run loads and checks beside other work and hold the machine for the window only.
//!
//! A closed gate (end of file: the parent died) or any other line ends the run with one
//! error line instead of waiting forever. Without the variable nothing changes.

use api::{Error, Result};

/// The environment variable that gates a run; its one accepted value is `stdin`.
pub const ENV: &str = "OLTPSCOPE_GATE";
/// The run's line (stderr) once it is loaded and waits for its go.
pub const READY: &str = "gate: ready";
/// The run's line (stderr) once its measured window is over (its close and checks follow).
pub const WINDOW_ENDED: &str = "gate: window ended";

/// Is this run gated? An unknown value is an error (a typo would silently not gate).
pub fn gated() -> Result<bool> {
    match std::env::var(ENV) {
        Err(std::env::VarError::NotPresent) => Ok(false),
        Ok(v) if v == "stdin" => Ok(true),
        Ok(v) => Err(Error::fatal(format!(
            "{ENV}={v}: the gate's one value is `stdin` (the run reads its go there)"
        ))),
        Err(e) => Err(Error::fatal(format!("{ENV}: {e}"))),
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
}
