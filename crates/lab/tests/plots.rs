//! Sweep summaries that flag noise, and `plot` on recorded directories (tests/fixtures):
//! a run sweep over engines and threads with a noisy and a CPU-starved point, a
//! `simulate --out` directory, and a TPC-C run's per-second series.

use lab::{plot, sweep};
use std::path::{Path, PathBuf};

/// A fixture copied into a fresh directory (plot and summaries write beside it).
fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dest = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &dest);
            } else {
                std::fs::copy(e.path(), dest).unwrap();
            }
        }
    }
    let d = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let dest = d.path().join(name);
    copy(&src, &dest);
    (d, dest)
}

fn summarized(dir: &Path) -> sweep::Summary {
    let spec: sweep::Spec =
        serde_json::from_str(&std::fs::read_to_string(dir.join(sweep::SPEC)).unwrap()).unwrap();
    let s = sweep::summarize(dir, &spec, &[]).unwrap();
    sweep::write_summary(dir, &s).unwrap();
    s
}

#[test]
fn a_sweep_flags_points_whose_repeats_spread_or_whose_workers_waited() {
    let (_d, dir) = fixture("noisy-sweep");
    let s = summarized(&dir);
    let point = |n: &str| s.points.iter().find(|p| p.name == n).unwrap();
    // mvcc at 2 threads: 275 k to 653 k, 2.37x.
    let noisy = point("engine-mvcc_threads-2");
    let r = noisy.spread_ratio.unwrap();
    assert!((r - 653.0 / 275.0).abs() < 1e-9, "{r}");
    let why = noisy.unreliable.as_deref().unwrap();
    assert!(why.contains("spread 2.37x"), "{why}");
    // memory at 2 threads: steady repeats but workers 72% on CPU.
    let starved = point("engine-memory_threads-2");
    assert!(starved.spread_ratio.unwrap() < sweep::MAX_SPREAD_RATIO);
    assert_eq!(starved.worker_cpu_busy.unwrap().median, 0.72);
    let why = starved.unreliable.as_deref().unwrap();
    assert!(
        why.contains("workers on CPU 72%") && !why.contains("spread"),
        "{why}"
    );
    // The others are not flagged.
    let flagged: Vec<&str> = s
        .points
        .iter()
        .filter(|p| p.unreliable.is_some())
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        flagged,
        ["engine-memory_threads-2", "engine-mvcc_threads-2"]
    );

    // The CSV has the CPU share, the spread and the flag with its reason.
    let mut rd = csv::Reader::from_path(dir.join(sweep::SUMMARY_CSV)).unwrap();
    let h: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    let col = |c: &str| {
        h.iter()
            .position(|x| x == c)
            .unwrap_or_else(|| panic!("{c} in {h:?}"))
    };
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let row = |n: &str| rows.iter().find(|r| &r[0] == n).unwrap();
    assert_eq!(&row("engine-mvcc_threads-2")[col("spread_ratio")], "2.375");
    assert!(row("engine-mvcc_threads-2")[col("unreliable")].contains("spread"));
    assert_eq!(
        &row("engine-memory_threads-2")[col("worker_cpu_busy_median")],
        "0.720"
    );
    assert_eq!(&row("engine-memory_threads-1")[col("unreliable")], "");
    assert_eq!(
        &row("engine-memory_threads-1")[col("worker_cpu_busy_min")],
        "0.980"
    );
    // And the JSON reads back with them.
    let back: sweep::Summary =
        serde_json::from_str(&std::fs::read_to_string(dir.join(sweep::SUMMARY_JSON)).unwrap())
            .unwrap();
    assert_eq!(back.points[4].unreliable, noisy.unreliable);
}

/// The text labels plotters wrote (each `<text>` element's content is on its own line).
fn labels(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .map(|(_, rest)| rest.split("</text>").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn one_chart_holds_a_curve_per_engine_with_integer_ticks_and_hollow_unreliable_points() {
    let (_d, dir) = fixture("noisy-sweep");
    summarized(&dir);
    let files = plot::plot(&dir).unwrap();
    let svgs: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "svg"))
        .collect();
    assert_eq!(svgs.len(), 1, "one chart for both engines: {files:?}");
    let svg = std::fs::read_to_string(svgs[0]).unwrap();
    let l = labels(&svg);
    assert!(l.iter().any(|t| t == "engine=memory"), "{l:?}");
    assert!(l.iter().any(|t| t == "engine=mvcc"), "{l:?}");
    // The threads axis is labelled at 1, 2, 3 only: no fractional tick.
    for t in ["1", "2", "3"] {
        assert!(l.iter().any(|x| x == t), "tick {t} in {l:?}");
    }
    assert!(
        !l.iter()
            .any(|x| x.parse::<f64>().is_ok_and(|v| v < 4.0 && v.fract() != 0.0)),
        "{l:?}"
    );
    // Two unreliable points drawn hollow (a circle without fill) and explained.
    assert!(
        l.iter().any(|t| t.starts_with("hollow: unreliable")),
        "{l:?}"
    );
    let hollow = svg
        .split("<circle")
        .skip(1)
        .filter(|c| c.contains("fill=\"none\""))
        .count();
    assert!(hollow >= 2, "{hollow} hollow markers");
    let html = std::fs::read_to_string(dir.join(plot::INDEX)).unwrap();
    assert!(html.contains("Unreliable points"), "{html}");
    assert!(
        html.contains("engine=mvcc, threads=2: repetitions spread 2.37x"),
        "{html}"
    );
}

#[test]
fn a_simulate_results_directory_plots_mpki_per_level_and_stall_shares() {
    let (_d, dir) = fixture("simulate-out");
    let files = plot::plot(&dir).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "mpki.svg",
            "stall-by-component.svg",
            "stall-by-operation.svg",
            "index.html"
        ]
    );
    let mpki = std::fs::read_to_string(&files[0]).unwrap();
    let l = labels(&mpki);
    for t in ["L1-I", "L1-D", "L2", "LLC", "instructions", "data"] {
        assert!(l.iter().any(|x| x == t), "{t} in {l:?}");
    }
    let comp = labels(&std::fs::read_to_string(&files[1]).unwrap());
    for t in ["btree", "lock", "log", "other"] {
        assert!(comp.iter().any(|x| x == t), "{t} in {comp:?}");
    }
    assert!(
        !comp.iter().any(|x| x == "occ"),
        "a component without stall cycles has no bar"
    );
    let html = std::fs::read_to_string(dir.join(plot::INDEX)).unwrap();
    assert!(
        html.contains("1000 transactions, 10000 instructions/txn"),
        "{html}"
    );
    assert_eq!(html.matches("<svg").count(), 3);
}

#[test]
fn btree_levels_plot_each_levels_share_of_the_stall_cycles() {
    let (_d, dir) = fixture("simulate-out");
    let path = dir.join("report.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let row = |name: &str, height: Option<u64>, hint: bool, llc: u64| {
        let m = |n: u64| serde_json::json!({"i": 0, "d": n, "total": n});
        serde_json::json!({
            "name": name, "height": height, "level": height, "hint": hint,
            "visits": 10, "instructions": 1000, "stall_cycles": llc * 100,
            "misses": [["L1-I", m(0)], ["L1-D", m(llc)], ["L2", m(llc)], ["LLC", m(llc)]],
        })
    };
    r["simulation"]["btree_levels"] = serde_json::json!([
        row("order_line 5/5", Some(5), false, 40),
        row("order_line leaf (hint)", None, true, 3),
        // The code outside any level, and a level without stall cycles: no bars.
        row("(no level)", None, false, 9),
        row("order_line 1/5", Some(5), false, 0),
    ]);
    std::fs::write(&path, r.to_string()).unwrap();
    let files = plot::plot(&dir).unwrap();
    let f = files
        .iter()
        .find(|f| f.ends_with("stall-by-btree-level.svg"))
        .expect("a B+tree level chart");
    let l = labels(&std::fs::read_to_string(f).unwrap());
    for t in ["order_line 5/5", "order_line leaf (hint)", "LLC"] {
        assert!(l.iter().any(|x| x == t), "{t} in {l:?}");
    }
    for t in ["(no level)", "order_line 1/5"] {
        assert!(!l.iter().any(|x| x == t), "{t} in {l:?}");
    }
    // Without the table, no chart (the test above).
}

#[test]
fn a_size_sweep_plots_mpki_and_the_stall_share_per_size() {
    let (_d, dir) = fixture("simulate-out");
    let path = dir.join("report.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let point = |kb: u64, i: f64, share: f64| {
        serde_json::json!({
            "level": "L1-I",
            "config": {"size_bytes": kb * 1024, "ways": 8, "line_bytes": 64, "latency_cycles": 4},
            "mpki": {"i": i, "d": 0.0},
            "stall_share": share,
        })
    };
    r["simulation"]["sweep"] = serde_json::json!([
        point(16, 40.0, 0.59),
        point(32, 20.0, 0.41),
        point(64, 5.0, 0.12)
    ]);
    std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    let files = plot::plot(&dir).unwrap();
    let find = |name: &str| {
        files
            .iter()
            .find(|f| f.ends_with(format!("plots/{name}")))
            .unwrap_or_else(|| panic!("{name} in {files:?}"))
    };
    let mpki = labels(&std::fs::read_to_string(find("sweep-l1-i-mpki.svg")).unwrap());
    let share = labels(&std::fs::read_to_string(find("sweep-l1-i-stall-share.svg")).unwrap());
    for t in ["16 KB 8-way", "32 KB 8-way", "64 KB 8-way"] {
        assert!(mpki.iter().any(|x| x == t), "{t} in {mpki:?}");
        assert!(share.iter().any(|x| x == t), "{t} in {share:?}");
    }
    let html = std::fs::read_to_string(dir.join(plot::INDEX)).unwrap();
    assert_eq!(html.matches("<svg").count(), 5);
}

#[test]
fn a_run_plots_p99_latency_per_transaction_type() {
    let (_d, dir) = fixture("run-out");
    let files = plot::plot(&dir).unwrap();
    let lat = files
        .iter()
        .find(|f| f.ends_with("plots/latency-p99.svg"))
        .unwrap();
    let svg = std::fs::read_to_string(lat).unwrap();
    let l = labels(&svg);
    for t in [
        "new-order",
        "payment",
        "order-status",
        "delivery",
        "stock-level",
    ] {
        assert!(l.iter().any(|x| x == t), "{t} in {l:?}");
    }
    // Five lines, one per type (the legend adds a sample line each).
    assert!(svg.matches("<polyline").count() >= 5, "{svg}");
}

#[test]
fn plot_refuses_a_directory_it_cannot_read_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let e = plot::plot(d.path()).unwrap_err();
    assert!(
        e.contains("neither a sweep directory") && !e.contains('\n'),
        "{e}"
    );
}
