//! `oltpscope`: the command line. Parses arguments, picks the engine and workload, and
//! hands them to the driver. Every user error ends here as one line and exit code 2.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod args;
mod commands;
mod crashtest;
mod simulate;

use clap::Parser;

fn main() {
    let cli = match args::Cli::try_parse() {
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
            // One line: clap's first line names the problem; the usage that follows is
            // what --help is for.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{} (see --help)", first.trim_end());
            std::process::exit(2);
        }
    };
    if let Err(msg) = commands::dispatch(cli) {
        eprintln!("error: {msg}");
        std::process::exit(2);
    }
}
