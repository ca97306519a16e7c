//! Results directories: what one `run` or `simulate` leaves behind so it can be kept,
//! compared and merged (docs/results.md describes every file).
//!
//! Owns the layout and the writing order: the manifest is written last, so a directory
//! with a manifest is complete and one without is a run that did not finish. Never
//! overwrites: a directory that holds anything is refused.

use crate::manifest::Manifest;
use driver::{Report, Second};
use std::path::{Path, PathBuf};

pub const REPORT: &str = "report.json";
pub const TIMESERIES: &str = "timeseries.csv";
pub const MANIFEST: &str = "manifest.json";
pub const LATENCY_DIR: &str = "latency";
/// A gated repetition's go and window-end times (`sweep::run_rep`), written by the sweep.
pub const GATE: &str = "gate.txt";

/// A results directory being written.
pub struct ResultsDir {
    path: PathBuf,
    /// It did not exist before: removed again if the command fails.
    created: bool,
    files: Vec<String>,
}

impl ResultsDir {
    /// Take `path` for a new results directory: it must not exist or be empty. Checked
    /// before the run, so a bad path costs nothing.
    pub fn create(path: &Path) -> Result<ResultsDir, String> {
        let shown = path.display();
        let created = match std::fs::read_dir(path) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(format!(
                        "--out {shown}: the directory is not empty (results are never overwritten: choose a new directory)"
                    ));
                }
                false
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(path)
                    .map_err(|e| format!("--out {shown}: cannot create the directory: {e}"))?;
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(format!("--out {shown}: is a file, not a directory"))
            }
            Err(e) => return Err(format!("--out {shown}: cannot read the directory: {e}")),
        };
        Ok(ResultsDir {
            path: path.to_path_buf(),
            created,
            files: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let p = self.path.join(name);
        std::fs::write(&p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        self.files.push(name.to_string());
        Ok(())
    }

    /// The report JSON, exactly as `--json` writes it.
    pub fn write_report(&mut self, v: &serde_json::Value) -> Result<(), String> {
        let text = serde_json::to_string_pretty(v).expect("JSON values serialize") + "\n";
        self.write(REPORT, text.as_bytes())
    }

    /// The per-second CSV of a run.
    pub fn write_timeseries(&mut self, r: &Report) -> Result<(), String> {
        let names: Vec<&str> = r.per_txn.iter().map(|t| t.name.as_str()).collect();
        let bytes = timeseries_csv(&names, r.threads, &r.timeseries)?;
        self.write(TIMESERIES, &bytes)
    }

    /// The measured latency histograms, one file per transaction type, in HdrHistogram's
    /// V2 serialized form (values in nanoseconds): other tools can merge and re-quantile.
    pub fn write_histograms(&mut self, r: &Report) -> Result<(), String> {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let dir = self.path.join(LATENCY_DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for (t, h) in r.per_txn.iter().zip(&r.histograms) {
            let mut buf = Vec::new();
            V2Serializer::new()
                .serialize(h, &mut buf)
                .map_err(|e| format!("cannot serialize the {} histogram: {e:?}", t.name))?;
            self.write(&format!("{LATENCY_DIR}/{}.hdr", file_name(&t.name)), &buf)?;
        }
        Ok(())
    }

    /// The manifest, last: it lists the files and marks the directory complete.
    pub fn finish(mut self, mut m: Manifest) -> Result<PathBuf, String> {
        m.files = std::mem::take(&mut self.files);
        let text = serde_json::to_string_pretty(&m).expect("manifests serialize") + "\n";
        self.write(MANIFEST, text.as_bytes())?;
        self.created = false;
        Ok(self.path.clone())
    }

    /// The command failed: remove the directory if this command created it and wrote
    /// only its own files into it.
    pub fn abandon(self) {
        if !self.created {
            return;
        }
        for f in &self.files {
            let _ = std::fs::remove_file(self.path.join(f));
        }
        let _ = std::fs::remove_dir(self.path.join(LATENCY_DIR));
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// A transaction type's name as a file name: letters, digits, '-' and '_' kept.
pub fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The time series as CSV: one row per second, totals then each type's columns.
pub fn timeseries_csv(names: &[&str], threads: usize, rows: &[Second]) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = [
        "second",
        "phase",
        "interval_s",
        "committed",
        "aborted",
        "user_aborts",
        "throughput_tps",
        "abort_rate",
        "worker_cpu_busy",
        "threads",
        "p50_us",
        "p95_us",
        "p99_us",
        "p999_us",
        "max_us",
    ]
    .map(String::from)
    .to_vec();
    for n in names {
        for col in [
            "committed",
            "aborted",
            "user_aborts",
            "throughput_tps",
            "p50_us",
            "p95_us",
            "p99_us",
            "max_us",
        ] {
            header.push(format!("{n}_{col}"));
        }
    }
    let err = |e: csv::Error| format!("cannot write the time series: {e}");
    w.write_record(&header).map_err(err)?;
    // Percentiles of an empty interval are absent, not zero.
    let lat = |n: u64, v: f64| {
        if n > 0 {
            format!("{v:.3}")
        } else {
            String::new()
        }
    };
    for s in rows {
        let n = s.committed + s.user_aborts;
        let mut rec = vec![
            s.second.to_string(),
            if s.warmup { "warmup" } else { "measure" }.to_string(),
            format!("{:.3}", s.interval_s),
            s.committed.to_string(),
            s.aborted.to_string(),
            s.user_aborts.to_string(),
            format!("{:.1}", s.committed as f64 / s.interval_s),
            if s.committed + s.aborted > 0 {
                format!("{:.5}", s.aborted as f64 / (s.committed + s.aborted) as f64)
            } else {
                "0".into()
            },
            s.worker_cpu_busy
                .map(|b| format!("{b:.3}"))
                .unwrap_or_default(),
            threads.to_string(),
            lat(n, s.latency_us.p50),
            lat(n, s.latency_us.p95),
            lat(n, s.latency_us.p99),
            lat(n, s.latency_us.p999),
            lat(n, s.latency_us.max),
        ];
        for t in &s.per_txn {
            let n = t.committed + t.user_aborts;
            rec.extend([
                t.committed.to_string(),
                t.aborted.to_string(),
                t.user_aborts.to_string(),
                format!("{:.1}", t.committed as f64 / s.interval_s),
                lat(n, t.latency_us.p50),
                lat(n, t.latency_us.p95),
                lat(n, t.latency_us.p99),
                lat(n, t.latency_us.max),
            ]);
        }
        w.write_record(&rec).map_err(err)?;
    }
    w.into_inner()
        .map_err(|e| format!("cannot write the time series: {e}"))
}

/// A report: `path` is a report JSON file or a results directory holding one.
pub fn load_report(path: &Path) -> Result<serde_json::Value, String> {
    let file = if path.is_dir() {
        path.join(REPORT)
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| {
        if path.is_dir() {
            format!(
                "{}: not a results directory (no readable {REPORT}: {e})",
                path.display()
            )
        } else {
            format!("cannot read {}: {e}", file.display())
        }
    })?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a JSON report: {e}", file.display()))?;
    if !v.is_object() {
        return Err(format!(
            "{}: not a JSON report (not an object)",
            file.display()
        ));
    }
    Ok(v)
}

/// A results directory is complete when its manifest is there and parses.
pub fn is_complete(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(MANIFEST))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some()
        && dir.join(REPORT).is_file()
}

/// Is every entry under `dir` a file a results directory (or a sweep's logs of it) can
/// hold? Used before removing the leftover of a killed point.
pub fn only_our_files(dir: &Path) -> Result<bool, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for e in rd {
        let e = e.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let name = e.file_name().to_string_lossy().to_string();
        let ft = e
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if ft.is_dir() && name == LATENCY_DIR {
            for h in std::fs::read_dir(e.path())
                .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            {
                let h = h.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
                if !h.file_name().to_string_lossy().ends_with(".hdr") {
                    return Ok(false);
                }
            }
        } else if !(ft.is_file()
            && [
                REPORT,
                TIMESERIES,
                MANIFEST,
                "stdout.txt",
                "stderr.txt",
                GATE,
            ]
            .contains(&name.as_str()))
        {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver::report::Latency;
    use driver::SecondTxn;

    fn second(k: u64, committed: u64) -> Second {
        Second {
            second: k,
            warmup: k == 0,
            interval_s: 1.0,
            committed,
            aborted: 1,
            user_aborts: 0,
            worker_cpu_busy: Some(0.5),
            latency_us: Latency {
                p50: 10.0,
                ..Latency::default()
            },
            per_txn: vec![SecondTxn {
                committed,
                aborted: 1,
                user_aborts: 0,
                latency_us: Latency::default(),
            }],
        }
    }

    #[test]
    fn timeseries_has_a_column_per_figure_and_a_row_per_second() {
        let bytes = timeseries_csv(&["read"], 2, &[second(0, 9), second(1, 0)]).unwrap();
        let mut r = csv::Reader::from_reader(bytes.as_slice());
        let h = r.headers().unwrap().clone();
        assert_eq!(&h[0], "second");
        assert!(h.iter().any(|c| c == "read_p99_us"));
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        let col = |name: &str| h.iter().position(|c| c == name).unwrap();
        assert_eq!(&rows[0][col("phase")], "warmup");
        assert_eq!(&rows[0][col("throughput_tps")], "9.0");
        assert_eq!(&rows[0][col("p50_us")], "10.000");
        // A second without transactions has no percentiles.
        assert_eq!(&rows[1][col("p50_us")], "");
        assert_eq!(rows[0].len(), h.len());
    }

    #[test]
    fn an_existing_non_empty_directory_is_refused_and_left_alone() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("keep.txt"), "mine").unwrap();
        let e = ResultsDir::create(d.path()).err().unwrap();
        assert!(e.contains("not empty"), "{e}");
        assert_eq!(
            std::fs::read_to_string(d.path().join("keep.txt")).unwrap(),
            "mine"
        );
        // A new one is created, and removed again when abandoned.
        let p = d.path().join("new");
        let mut r = ResultsDir::create(&p).unwrap();
        r.write_report(&serde_json::json!({"a": 1})).unwrap();
        r.abandon();
        assert!(!p.exists());
    }

    #[test]
    fn only_results_files_count_as_ours() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(REPORT), "{}").unwrap();
        std::fs::create_dir(d.path().join(LATENCY_DIR)).unwrap();
        std::fs::write(d.path().join(LATENCY_DIR).join("read.hdr"), "x").unwrap();
        assert!(only_our_files(d.path()).unwrap());
        std::fs::write(d.path().join("notes.txt"), "x").unwrap();
        assert!(!only_our_files(d.path()).unwrap());
    }
}
