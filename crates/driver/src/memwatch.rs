//! The run's memory footprint against the memory it may use.
//!
//! An in-memory database grows with every insert (TPC-C: about 1 KB per transaction),
//! and a process that outgrows its memory is killed by the kernel without a word. The
//! driver's main thread samples the process's resident memory (`/proc/self/statm`) at
//! every turn of its loop (at most 100 ms apart, never on the transaction path) and
//! gives each sample to a [`Watch`], which decides: fine, warn once after the warm-up
//! that the measured growth will not fit the run, or stop the run.
//!
//! The budget is the smallest of `--mem-limit`, the cgroup's memory limit and the
//! machine's available memory plus what the process already holds (`MemAvailable` is
//! what others could still take; our own resident memory is ours already). The run stops
//! at [`STOP_SHARE`] of it, so the report can still be made and printed. The footprint
//! is this process's alone: a PostgreSQL server's memory is not in it.
//!
//! The decisions are pure functions of recorded samples (unit-tested); only
//! [`read_sample`] and [`cgroup_limit`] read the system.

use std::path::{Path, PathBuf};

/// Share of the budget at which the run is stopped: the rest is headroom for the
/// consistency check and the report.
pub const STOP_SHARE: f64 = 0.9;

/// The forecast is made once the run has lasted this long (and the warm-up is over):
/// growth over a shorter stretch says little.
pub const FORECAST_AFTER_S: f64 = 1.0;

/// Where a budget comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    MemLimit,
    Cgroup,
    Available,
}

impl Source {
    pub fn describe(self) -> &'static str {
        match self {
            Source::MemLimit => "--mem-limit",
            Source::Cgroup => "the cgroup's memory limit",
            Source::Available => "the machine's available memory",
        }
    }
}

/// The memory a run may use, and whose limit it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    pub source: Source,
}

impl Budget {
    /// Where the run stops.
    pub fn stop_at(&self) -> u64 {
        (self.bytes as f64 * STOP_SHARE) as u64
    }

    fn describe(&self) -> String {
        format!(
            "{} ({:.0}% of {} {})",
            fmt_bytes(self.stop_at()),
            STOP_SHARE * 100.0,
            self.source.describe(),
            fmt_bytes(self.bytes)
        )
    }
}

/// The smallest of the limits known: `--mem-limit`, the cgroup's, and the machine's
/// available memory plus the process's resident memory `rss` (None: unknown).
pub fn budget(
    mem_limit: Option<u64>,
    cgroup: Option<u64>,
    available: Option<u64>,
    rss: u64,
) -> Option<Budget> {
    [
        mem_limit.map(|b| (b, Source::MemLimit)),
        cgroup.map(|b| (b, Source::Cgroup)),
        available.map(|a| (a.saturating_add(rss), Source::Available)),
    ]
    .into_iter()
    .flatten()
    // min_by_key keeps the first of equal ones: --mem-limit is named before the others.
    .min_by_key(|&(b, _)| b)
    .map(|(bytes, source)| Budget { bytes, source })
}

/// One look at the process: seconds into the run, resident bytes, and the machine's
/// available memory (None: unknown).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub at_s: f64,
    pub rss: u64,
    pub available: Option<u64>,
}

/// What the driver does after a sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Fine,
    /// Print this line once; the run goes on.
    Warn(String),
    /// Stop the run; this says why (after "stopped: ").
    Stop(String),
}

/// The memory figures of a run, for its report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MemoryReport {
    /// Resident bytes when the run (warm-up) began, after the load.
    pub rss_start_bytes: u64,
    /// The largest resident size sampled during the run.
    pub rss_peak_bytes: u64,
    /// The budget at the last sample and where it comes from (None: no limit known).
    pub limit_bytes: Option<u64>,
    pub limit_source: Option<Source>,
}

/// The decisions over one run's samples.
#[derive(Debug)]
pub struct Watch {
    mem_limit: Option<u64>,
    cgroup: Option<u64>,
    /// The first sample (the run's start): growth is measured from it.
    first: Option<Sample>,
    forecast_done: bool,
    report: MemoryReport,
}

impl Watch {
    pub fn new(mem_limit: Option<u64>, cgroup: Option<u64>) -> Self {
        Watch {
            mem_limit,
            cgroup,
            first: None,
            forecast_done: false,
            report: MemoryReport::default(),
        }
    }

    /// Take sample `s` of a run with `warm_s` seconds of warm-up and `total_s` seconds
    /// in all (None: it ends after a number of transactions, so no forecast).
    pub fn observe(&mut self, s: Sample, warm_s: f64, total_s: Option<f64>) -> Verdict {
        let first = *self.first.get_or_insert(s);
        if self.report.rss_start_bytes == 0 {
            self.report.rss_start_bytes = s.rss;
        }
        self.report.rss_peak_bytes = self.report.rss_peak_bytes.max(s.rss);
        let Some(b) = budget(self.mem_limit, self.cgroup, s.available, s.rss) else {
            return Verdict::Fine;
        };
        self.report.limit_bytes = Some(b.bytes);
        self.report.limit_source = Some(b.source);
        if s.rss >= b.stop_at() {
            return Verdict::Stop(format!(
                "resident memory {} reached the limit {}",
                fmt_bytes(s.rss),
                b.describe()
            ));
        }
        if self.forecast_done || s.at_s < warm_s.max(FORECAST_AFTER_S) {
            return Verdict::Fine;
        }
        self.forecast_done = true;
        let Some(total) = total_s else {
            return Verdict::Fine;
        };
        let span = s.at_s - first.at_s;
        if span <= 0.0 || s.rss <= first.rss {
            return Verdict::Fine;
        }
        let rate = (s.rss - first.rss) as f64 / span;
        let reach_s = s.at_s + (b.stop_at() - s.rss) as f64 / rate;
        if reach_s >= total {
            return Verdict::Fine;
        }
        let raise = match b.source {
            Source::MemLimit => "raise --mem-limit",
            Source::Cgroup => "give the cgroup more memory",
            Source::Available => "free memory",
        };
        Verdict::Warn(format!(
            "warning: resident memory grows about {}/s ({} now): at this pace it reaches the limit {} about {:.0} s into this {:.0} s run, which then stops; lower --rate, shorten --duration or {raise}",
            fmt_bytes(rate as u64),
            fmt_bytes(s.rss),
            b.describe(),
            reach_s,
            total
        ))
    }

    pub fn report(&self) -> MemoryReport {
        self.report.clone()
    }
}

/// Bytes in binary units, three significant figures or so.
pub fn fmt_bytes(b: u64) -> String {
    const K: f64 = 1024.0;
    let v = b as f64;
    if v >= K * K * K {
        format!("{:.2} GiB", v / (K * K * K))
    } else if v >= K * K {
        format!("{:.0} MiB", v / (K * K))
    } else {
        format!("{:.0} KiB", v / K)
    }
}

/// A cgroup limit file's value: none for `max` (v2) or for v1's "no limit", which is
/// the largest page-aligned 63-bit number (anything from 2^60 on is taken as none).
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    t.parse::<u64>().ok().filter(|&v| v > 0 && v < 1 << 60)
}

/// The limit files that bound a process in the cgroups `proc_cgroup` (the text of
/// `/proc/self/cgroup`) names, under the cgroup file system at `root`: for v1 the
/// memory hierarchy's `memory.limit_in_bytes`, for v2 `memory.max`, in the process's
/// cgroup and every ancestor (a parent's limit binds its children too).
pub fn limit_files(proc_cgroup: &str, root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (base, file) = if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else if id == "0" && controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else {
            continue;
        };
        let mut dir = Some(Path::new(path.trim_start_matches('/')));
        while let Some(d) = dir {
            files.push(base.join(d).join(file));
            dir = d.parent();
        }
    }
    files
}

/// The tightest cgroup memory limit on this process (None: none, or not Linux).
pub fn cgroup_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    limit_files(&text, Path::new("/sys/fs/cgroup"))
        .iter()
        .filter_map(|f| parse_limit(&std::fs::read_to_string(f).ok()?))
        .min()
}

/// This process's resident bytes (None where `/proc` is missing).
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(1) as u64)
}

/// A sample now, `at_s` seconds into the run (None where `/proc` is missing).
pub fn read_sample(at_s: f64) -> Option<Sample> {
    let available = crate::machine::available_memory_bytes();
    Some(Sample {
        at_s,
        rss: rss_bytes()?,
        available: (available > 0).then_some(available),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn at(at_s: f64, rss: u64, available: u64) -> Sample {
        Sample {
            at_s,
            rss,
            available: Some(available),
        }
    }

    #[test]
    fn the_budget_is_the_smallest_limit_with_its_source() {
        let b = budget(Some(3 * GIB), Some(2 * GIB), Some(10 * GIB), GIB).unwrap();
        assert_eq!((b.bytes, b.source), (2 * GIB, Source::Cgroup));
        // Available memory counts what the process holds already.
        let b = budget(None, None, Some(GIB), GIB).unwrap();
        assert_eq!((b.bytes, b.source), (2 * GIB, Source::Available));
        let b = budget(Some(GIB), None, Some(GIB), 0).unwrap();
        assert_eq!(b.source, Source::MemLimit, "a tie names --mem-limit");
        assert_eq!(budget(None, None, None, GIB), None);
        assert_eq!(b.stop_at(), (GIB as f64 * 0.9) as u64);
    }

    /// The case: TPC-C on the memory engine grows about 80 MB/s; under a 1.5 GB
    /// limit a 30 s run is killed after about 15 s. The samples below are that run's
    /// shape: 300 MiB after the load, 80 MiB more per second.
    #[test]
    fn growth_that_will_not_fit_warns_once_after_the_warm_up_and_then_stops() {
        let mut w = Watch::new(Some(1536 * MIB), None);
        let big = 20 * GIB;
        let rss = |t: f64| 300 * MIB + (80.0 * t) as u64 * MIB;
        let mut warned = Vec::new();
        let mut stopped = None;
        for i in 0..=300 {
            let t = i as f64 * 0.1;
            match w.observe(at(t, rss(t), big), 1.0, Some(31.0)) {
                Verdict::Fine => {}
                Verdict::Warn(m) => warned.push((t, m)),
                Verdict::Stop(m) => {
                    stopped = Some((t, m));
                    break;
                }
            }
        }
        assert_eq!(warned.len(), 1, "{warned:?}");
        let (t, m) = &warned[0];
        assert!(
            (t - 1.0).abs() < 1e-9,
            "warned at {t}, not after the warm-up"
        );
        // 1382 MiB (90% of 1536) at 80 MiB/s from 300 MiB: about 13.5 s in.
        assert!(
            m.contains("80 MiB/s") && m.contains("about 14 s into this 31 s run"),
            "{m}"
        );
        assert!(
            m.contains("--mem-limit 1.50 GiB") && m.contains("raise --mem-limit"),
            "{m}"
        );
        let (t, m) = stopped.expect("the run is stopped at the limit");
        assert!((13.5..13.7).contains(&t), "stopped at {t}");
        assert!(
            m == "resident memory 1.36 GiB reached the limit 1.35 GiB (90% of --mem-limit 1.50 GiB)",
            "{m}"
        );
        let r = w.report();
        assert_eq!(r.rss_start_bytes, 300 * MIB);
        assert_eq!(r.limit_source, Some(Source::MemLimit));
        assert!(r.rss_peak_bytes >= (1536.0 * 0.9) as u64 * MIB);
    }

    #[test]
    fn growth_that_fits_or_no_growth_says_nothing() {
        // 80 MiB/s for 10 s from 300 MiB: 1.1 GiB, under 90% of 1.5 GiB.
        let mut w = Watch::new(Some(1536 * MIB), None);
        for i in 0..=100 {
            let t = i as f64 * 0.1;
            let v = w.observe(
                at(t, 300 * MIB + (800.0 * t) as u64 * MIB / 10, 20 * GIB),
                1.0,
                Some(11.0),
            );
            assert_eq!(v, Verdict::Fine, "at {t}");
        }
        // Shrinking or flat memory never warns.
        let mut w = Watch::new(Some(GIB), None);
        for i in 0..=30 {
            let t = i as f64 * 0.1;
            assert_eq!(
                w.observe(at(t, 500 * MIB - i * MIB, 20 * GIB), 1.0, Some(100.0)),
                Verdict::Fine
            );
        }
        // A run of a number of transactions has no end to forecast to.
        let mut w = Watch::new(Some(GIB), None);
        for i in 0..=20 {
            let t = i as f64 * 0.1;
            assert_eq!(
                w.observe(at(t, 100 * MIB + i * 10 * MIB, 20 * GIB), 1.0, None),
                Verdict::Fine
            );
        }
    }

    #[test]
    fn the_forecast_waits_for_the_end_of_a_long_warm_up() {
        let mut w = Watch::new(Some(2 * GIB), None);
        let mut warned_at = None;
        for i in 0..=60 {
            let t = i as f64 * 0.1;
            if let Verdict::Warn(_) =
                w.observe(at(t, 100 * MIB + i * 10 * MIB, 20 * GIB), 5.0, Some(65.0))
            {
                warned_at.get_or_insert(t);
            }
        }
        let t = warned_at.expect("a warning");
        assert!((t - 5.0).abs() < 1e-9, "{t}");
    }

    #[test]
    fn the_machine_running_short_stops_the_run_too() {
        // No --mem-limit, no cgroup limit: 4 GiB free at the start, taken by the run.
        let mut w = Watch::new(None, None);
        assert_eq!(
            w.observe(at(0.0, GIB, 4 * GIB), 0.0, Some(60.0)),
            Verdict::Fine
        );
        // The run holds 4.6 GiB and 0.4 GiB is left: 4.6 >= 90% of 5.0.
        let v = w.observe(at(0.5, 4 * GIB + 600 * MIB, 424 * MIB), 0.0, Some(60.0));
        let Verdict::Stop(m) = v else { panic!("{v:?}") };
        assert!(m.contains("the machine's available memory 5.00 GiB"), "{m}");
    }

    #[test]
    fn cgroup_limits_are_read_from_the_process_cgroup_and_its_ancestors() {
        let root = Path::new("/sys/fs/cgroup");
        // This machine's shape: cgroup v1 with a memory hierarchy, and the v2 line.
        let v1 = "9:name=systemd:/\n4:memory:/process_api/33f0\n3:cpuset:/\n0::/\n";
        let files = limit_files(v1, root);
        assert_eq!(
            files,
            [
                "/sys/fs/cgroup/memory/process_api/33f0/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory.max",
            ]
            .map(PathBuf::from)
        );
        let v2 = "0::/user.slice/run.scope\n";
        assert_eq!(
            limit_files(v2, root),
            [
                "/sys/fs/cgroup/user.slice/run.scope/memory.max",
                "/sys/fs/cgroup/user.slice/memory.max",
                "/sys/fs/cgroup/memory.max",
            ]
            .map(PathBuf::from)
        );
        // Joined controllers name the memory hierarchy too.
        assert_eq!(limit_files("5:cpu,memory:/\n", root).len(), 1);
        assert_eq!(parse_limit("1610612736\n"), Some(1536 * MIB));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None, "v1's no limit");
        assert_eq!(parse_limit("junk"), None);
    }

    #[test]
    fn this_process_has_a_resident_size() {
        if Path::new("/proc/self/statm").exists() {
            assert!(rss_bytes().unwrap() > MIB);
        }
    }
}
