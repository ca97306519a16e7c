//! `oltpscope`: the command line. Parses arguments, picks the engine and workload, and
//! hands them to the driver. Every user error ends here as one line and exit code 2.
//!
//! A library under a one-line binary (`main.rs`), so that its tests are integration
//! tests (`tests/all`) built against the one compiled library: a binary's unit tests
//! compile the whole command line a second time (issue 39, the test build's cost).
//! Only what those tests reach is public.

mod alone;
#[doc(hidden)]
pub mod args;
mod commands;
mod dbdir;
#[doc(hidden)]
pub mod engines;
mod labcmd;
mod output;
mod profile;
mod simulate;
mod simulate_pg;
#[doc(hidden)]
pub mod spec;
mod stats;
mod steps;

use clap::Parser;

#[doc(hidden)]
pub use commands::check_fits_in;
#[doc(hidden)]
pub use simulate::child_spec;

/// The command line's `main`: parse, dispatch, and exit 2 with one line on any error.
pub fn main() {
    // `--file F` puts the file's workload and options in first (args::expand_file).
    let argv = match args::expand_file(std::env::args().collect()) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("error: {msg}");
            std::process::exit(2);
        }
    };
    if argv.iter().ne(std::env::args().collect::<Vec<_>>().iter()) {
        lab::manifest::set_command_line(argv.clone());
    }
    let cli = match args::Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                std::process::exit(
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        2
                    } else {
                        0
                    },
                );
            }
            eprintln!("{}", args::one_line(&e.to_string()));
            std::process::exit(2);
        }
    };
    // Ctrl-C and SIGTERM stop a run with its report and remove its temporary files
    // (driver::interrupt). A traced run is `simulate`'s child: its parent handles them.
    let run = match &cli.cmd {
        args::Cmd::Run { workload: Some(w) } => Some(w.common()),
        args::Cmd::Profile { workload: Some(w) } => Some(&w.common().run),
        _ => None,
    };
    if run.is_some_and(|r| !r.trace_measured) {
        driver::interrupt::install();
    }
    if let Err(msg) = commands::dispatch(cli) {
        // An interrupted run that then failed (its server stopped, or its temporary
        // database removed under the load by the interrupt) still dies of the signal,
        // as the caller expects of an interrupt; the failure is the interrupt's doing,
        // so its "stopped:" line stays the last word.
        if let Some(sig) = driver::interrupt::taken() {
            driver::interrupt::die(sig);
        }
        eprintln!("error: {msg}");
        std::process::exit(2);
    }
}
