//! `output`: where a command's results go (the JSON report of `--json`, the text report,
//! a results directory of `--out`), shared by `run`, `simulate` and `steps` so none of
//! them imports another for it.

use std::path::{Path, PathBuf};

/// The global allocator's name (`main.rs` installs it), for results manifests.
pub const ALLOCATOR: &str = "mimalloc";

/// Where `--json` goes, checked before any work so a bad path is found at once.
pub enum JsonOut {
    None,
    Stdout,
    /// A file opened for writing; `created`: it did not exist before (removed again if
    /// the command fails, so a failed run leaves no empty report).
    File {
        path: PathBuf,
        created: bool,
    },
}

impl JsonOut {
    pub fn open(p: Option<&Path>) -> Result<JsonOut, String> {
        let Some(p) = p else { return Ok(JsonOut::None) };
        if p == Path::new("-") {
            return Ok(JsonOut::Stdout);
        }
        if p.is_dir() {
            return Err(format!("--json {}: is a directory", p.display()));
        }
        let created = !p.exists();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(p)
            .map_err(|e| format!("--json {}: cannot write there: {e}", p.display()))?;
        Ok(JsonOut::File {
            path: p.to_path_buf(),
            created,
        })
    }

    /// The text report goes to standard error when the JSON takes standard output.
    pub fn text(&self, text: &str) {
        match self {
            JsonOut::Stdout => eprint!("{text}"),
            _ => print!("{text}"),
        }
    }

    pub fn write(&self, v: &serde_json::Value) -> Result<(), String> {
        let text = serde_json::to_string_pretty(v).expect("JSON values serialize") + "\n";
        match self {
            JsonOut::None => Ok(()),
            JsonOut::Stdout => {
                print!("{text}");
                Ok(())
            }
            JsonOut::File { path, .. } => std::fs::write(path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display())),
        }
    }

    /// `--json` and `--out` of one command, both checked before any work: a results
    /// directory that cannot be made takes back the JSON file opened for it.
    pub fn open_with_dir(
        json: Option<&Path>,
        out: Option<&Path>,
    ) -> Result<(JsonOut, Option<lab::results::ResultsDir>), String> {
        let json = JsonOut::open(json)?;
        match out.map(lab::results::ResultsDir::create).transpose() {
            Ok(dir) => Ok((json, dir)),
            Err(e) => {
                json.abandon();
                Err(e)
            }
        }
    }

    /// The command failed: remove the file if this command created it.
    pub fn abandon(&self) {
        if let JsonOut::File {
            path,
            created: true,
        } = self
        {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Fill a results directory and seal it with its manifest; on a failure, remove what
/// this command created.
pub fn write_results(
    mut o: lab::results::ResultsDir,
    value: &serde_json::Value,
    report: Option<&driver::Report>,
    config: serde_json::Value,
) -> Result<(), String> {
    let kind = if report.is_some() { "run" } else { "simulate" };
    let mut fill = || -> Result<(), String> {
        o.write_report(value)?;
        if let Some(r) = report {
            o.write_timeseries(r)?;
            o.write_histograms(r)?;
        }
        Ok(())
    };
    if let Err(e) = fill() {
        o.abandon();
        return Err(e);
    }
    let m = lab::manifest::Manifest::new(kind, config, ALLOCATOR);
    let path = o.finish(m)?;
    eprintln!("results in {}", path.display());
    Ok(())
}

pub(crate) fn sim_json(report: &cachesim::Report) -> serde_json::Value {
    serde_json::from_str(&report.to_json()).expect("report JSON parses")
}

pub(crate) fn report_text(report: &cachesim::Report, elapsed: f64) -> String {
    if !report.warmup_completed {
        eprintln!(
            "note: the run ended before {} warm-up transactions: statistics include cold caches",
            report.warmup_txns
        );
    }
    format!(
        "{}simulated {} instructions in {elapsed:.1} s (tracer and simulator together)\n",
        report.to_text(),
        cachesim::report::sep(report.instructions)
    )
}
