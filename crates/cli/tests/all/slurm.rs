//! `sweep --emit slurm` and `merge` against a real single-node SLURM (Debian's
//! slurm-wlm and munge, started by scripts/slurm-single-node.sh). Behind
//! OLTPSCOPE_SLURM_TESTS=1: it installs packages and starts daemons (needs root).

use crate::common;
use common::{oltpscope, OLTPSCOPE};

use std::path::Path;
use std::process::Command;

#[test]
fn a_two_point_sweep_runs_as_a_job_array_and_merges() {
    if std::env::var("OLTPSCOPE_SLURM_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set OLTPSCOPE_SLURM_TESTS=1 (installs and starts SLURM)");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-single-node.sh");
    let st = Command::new("bash")
        .arg(&script)
        .status()
        .expect("run the script");
    assert!(st.success(), "{} failed", script.display());

    let d = tempfile::tempdir().unwrap();
    let shared = d.path().join("shared");
    let jobdir = d.path().join("job");
    let (code, out, err) = oltpscope(&[
        "sweep",
        "micro",
        "--vary",
        "engine=disk,memory",
        "--out",
        shared.to_str().unwrap(),
        "--emit",
        "slurm",
        jobdir.to_str().unwrap(),
        "--txns",
        "200",
        "--keys",
        "1000",
        "--warmup",
        "0",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("sbatch"), "{out}");
    let sbatch = jobdir.join("sweep.sbatch");
    let o = Command::new("sbatch")
        .arg("--wait")
        .arg(&sbatch)
        .env("OLTPSCOPE", OLTPSCOPE)
        .output()
        .expect("sbatch runs");
    assert!(
        o.status.success(),
        "sbatch --wait: {}{}\nlogs: {:?}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        std::fs::read_dir(jobdir.join("logs")).map(|rd| rd
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect::<Vec<_>>())
    );
    let parts: Vec<String> = ["engine-disk", "engine-memory"]
        .iter()
        .map(|p| shared.join(p).to_str().unwrap().to_string())
        .collect();
    for p in &parts {
        assert!(
            Path::new(p).join("summary.json").is_file(),
            "{p}: the task wrote no sweep"
        );
    }
    let campaign = d.path().join("campaign");
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["--out", campaign.to_str().unwrap()]);
    let (code, out, err) = oltpscope(&args);
    assert_eq!(code, 0, "{out}\n{err}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(campaign.join("summary.json")).unwrap())
            .unwrap();
    let pts = s["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    for p in pts {
        assert_eq!(p["reps_done"], 1, "{p}");
        assert!(p["throughput_tps"]["median"].as_f64().unwrap() > 0.0);
    }
}
