//! Campaigns beyond one machine: `sweep ... --emit slurm DIR` writes a SLURM job-array
//! script (one array task per point, each on an exclusive node, each writing its own
//! one-point sweep directory under the shared `--out`), and `merge` joins sweep
//! directories into one campaign directory with its summary recomputed.
//!
//! Owns: the script's text and the merge. Must never: change or remove an input of a
//! merge (repetitions are copied), or merge sweeps that differ in anything but their
//! points (the workload, kind, runs' options, repetitions and varied keys must agree).

use crate::results;
use crate::sweep::{self, Spec, Vary};
use std::path::{Path, PathBuf};

pub const SCRIPT: &str = "sweep.sbatch";

/// A word for bash, quoted when it needs to be.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The job-array script for `spec`: task i runs point i (every repetition) as a
/// one-point sweep into `<shared>/<point>`; `exe` is the oltpscope every node runs
/// (the same path on every node: a shared file system), overridable by $OLTPSCOPE.
pub fn slurm_script(spec: &Spec, exe: &Path, shared: &Path, logs: &Path) -> String {
    let points = spec.points();
    let n = points.len();
    assert!(n > 0, "a sweep has at least one point");
    let mut s = String::new();
    s += "#!/bin/bash\n";
    s += "# Written by `oltpscope sweep --emit slurm`: one array task per point of the sweep.\n";
    s += "# Submit: sbatch this file. When every task is done, join the points:\n";
    s += &format!(
        "#   oltpscope merge {}/* --out CAMPAIGN_DIR\n",
        shell_quote(&shared.display().to_string())
    );
    s += "#SBATCH --job-name=oltpscope-sweep\n";
    s += &format!("#SBATCH --array=0-{}\n", n - 1);
    // A node to itself: other jobs' cores, caches and disks would be noise.
    s += "#SBATCH --exclusive\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n";
    s += &format!("#SBATCH --output={}/%A_%a.out\n", logs.display());
    s += "set -euo pipefail\n";
    s += &format!(
        "OLTPSCOPE=\"${{OLTPSCOPE:-{}}}\"\n",
        exe.display().to_string().replace('"', "\\\"")
    );
    s += &format!("SHARED={}\n", shell_quote(&shared.display().to_string()));
    s += "case \"$SLURM_ARRAY_TASK_ID\" in\n";
    for (i, p) in points.iter().enumerate() {
        let vary: Vec<String> = p
            .values
            .iter()
            .map(|(k, v)| format!("--vary {}", shell_quote(&format!("{k}={v}"))))
            .collect();
        s += &format!(
            "  {i}) POINT={}; VARY=({}) ;;\n",
            shell_quote(&p.name()),
            vary.join(" ")
        );
    }
    s += "  *) echo \"no point for task $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\nesac\n";
    let mut cmd = vec!["\"$OLTPSCOPE\"".to_string(), "sweep".into()];
    match spec.kind {
        sweep::Kind::Run => {}
        sweep::Kind::Simulate => cmd.push("--simulate".into()),
        sweep::Kind::Profile => cmd.push("--profile".into()),
    }
    cmd.push(shell_quote(&spec.workload));
    cmd.push("\"${VARY[@]}\"".into());
    cmd.extend([
        "--repeat".into(),
        spec.repeat.to_string(),
        "--out".into(),
        "\"$SHARED/$POINT\"".into(),
    ]);
    cmd.extend(spec.args.iter().map(|a| shell_quote(a)));
    s += &format!("exec {}\n", cmd.join(" "));
    s
}

/// Write the script into `dir` (with a `logs` directory beside it); returns its path.
pub fn emit_slurm(spec: &Spec, exe: &Path, shared: &Path, dir: &Path) -> Result<PathBuf, String> {
    spec.validate()?;
    let abs = |p: &Path| {
        std::path::absolute(p).map_err(|e| format!("{}: cannot resolve: {e}", p.display()))
    };
    let (shared, dir) = (abs(shared)?, abs(dir)?);
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| format!("--emit slurm {}: cannot create it: {e}", dir.display()))?;
    let path = dir.join(SCRIPT);
    if path.exists() {
        return Err(format!(
            "{}: already there (never overwritten: choose a new directory)",
            path.display()
        ));
    }
    std::fs::write(&path, slurm_script(spec, exe, &shared, &logs))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn read_spec(dir: &Path) -> Result<Spec, String> {
    let p = dir.join(sweep::SPEC);
    let text = std::fs::read_to_string(&p).map_err(|e| {
        format!(
            "{}: not a sweep directory ({}: {e})",
            dir.display(),
            sweep::SPEC
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: damaged: {e}", p.display()))
}

/// Copy a directory tree into `to` (created): files and directories only, anything else
/// refused (also `simulate`'s copy of a natively loaded database).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let rd = std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for e in rd {
        let e = e.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let t = e
            .file_type()
            .map_err(|err| format!("{}: {err}", e.path().display()))?;
        let dst = to.join(e.file_name());
        if t.is_dir() {
            copy_tree(&e.path(), &dst)?;
        } else if t.is_file() {
            std::fs::copy(e.path(), &dst).map_err(|err| {
                format!(
                    "cannot copy {} to {}: {err}",
                    e.path().display(),
                    dst.display()
                )
            })?;
        } else {
            return Err(format!(
                "{}: neither a file nor a directory: not copied",
                e.path().display()
            ));
        }
    }
    Ok(())
}

/// Join sweep directories into `out`: the specs must agree but for the varied values,
/// whose union (in order of first appearance) makes the campaign's; each input's
/// complete repetitions are copied; a point in two inputs is refused. The summary is
/// recomputed over the whole product (points no input has are listed with no runs).
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<sweep::Summary, String> {
    if inputs.is_empty() {
        return Err("`oltpscope merge` needs at least one sweep directory".into());
    }
    let specs: Vec<Spec> = inputs
        .iter()
        .map(|d| read_spec(d))
        .collect::<Result<_, _>>()?;
    let merged = merged_spec(inputs, &specs)?;
    merged.validate()?;
    // Who has which point, before anything is written.
    let owner = point_owners(inputs, &specs)?;
    match std::fs::read_dir(out) {
        Ok(mut e) => {
            if e.next().is_some() {
                return Err(format!(
                    "--out {}: not empty (a merge writes a new campaign directory)",
                    out.display()
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("--out {}: {e}", out.display())),
    }
    std::fs::create_dir_all(out.join(sweep::POINTS))
        .map_err(|e| format!("--out {}: cannot create it: {e}", out.display()))?;
    std::fs::write(
        out.join(sweep::SPEC),
        serde_json::to_string_pretty(&merged).expect("specs serialize") + "\n",
    )
    .map_err(|e| format!("cannot write {}: {e}", out.join(sweep::SPEC).display()))?;
    for (i, s) in specs.iter().enumerate() {
        for p in s.points() {
            if !owner.iter().any(|(n, j)| *n == p.name() && *j == i) {
                continue;
            }
            for r in 1..=s.repeat {
                let (src, _) = sweep::rep_dir(&inputs[i], &p, r);
                if !results::is_complete(&src) {
                    continue;
                }
                let (dst, _) = sweep::rep_dir(out, &p, r);
                std::fs::create_dir_all(dst.parent().expect("a point directory"))
                    .map_err(|e| format!("cannot create {}: {e}", dst.display()))?;
                copy_tree(&src, &dst)?;
            }
        }
    }
    let s = sweep::summarize(out, &merged, &[])?;
    sweep::write_summary(out, &s)?;
    Ok(s)
}

/// The campaign's spec: the inputs' spec (which must agree but for the varied values)
/// with the union of their varied values, in order of first appearance.
fn merged_spec(inputs: &[PathBuf], specs: &[Spec]) -> Result<Spec, String> {
    let first = &specs[0];
    let keys: Vec<&str> = first.vary.iter().map(|v| v.key.as_str()).collect();
    for (d, s) in inputs.iter().zip(specs).skip(1) {
        let their: Vec<&str> = s.vary.iter().map(|v| v.key.as_str()).collect();
        let same = s.kind == first.kind
            && s.workload == first.workload
            && s.args == first.args
            && s.repeat == first.repeat
            && their == keys;
        if !same {
            return Err(format!(
                "{} is not the same sweep as {} (kind, workload, runs' options, repetitions and varied keys must agree)",
                d.display(),
                inputs[0].display()
            ));
        }
    }
    let mut vary: Vec<Vary> = keys
        .iter()
        .map(|k| Vary {
            key: k.to_string(),
            values: vec![],
        })
        .collect();
    for s in specs {
        for (i, v) in s.vary.iter().enumerate() {
            for x in &v.values {
                if !vary[i].values.contains(x) {
                    vary[i].values.push(x.clone());
                }
            }
        }
    }
    Ok(Spec {
        kind: first.kind,
        workload: first.workload.clone(),
        vary,
        repeat: first.repeat,
        args: first.args.clone(),
        load_once: first.load_once.clone(),
    })
}

/// Which input holds each point with at least one complete repetition: (point, input);
/// a point in two inputs is refused.
fn point_owners(inputs: &[PathBuf], specs: &[Spec]) -> Result<Vec<(String, usize)>, String> {
    let mut owner: Vec<(String, usize)> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        for p in s.points() {
            let name = p.name();
            let has_any =
                (1..=s.repeat).any(|r| results::is_complete(&sweep::rep_dir(&inputs[i], &p, r).0));
            if !has_any {
                continue;
            }
            if let Some((_, j)) = owner.iter().find(|(n, _)| *n == name) {
                return Err(format!(
                    "the point {name} is in both {} and {}: merge each point once",
                    inputs[*j].display(),
                    inputs[i].display()
                ));
            }
            owner.push((name, i));
        }
    }
    Ok(owner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{parse_vary, Kind};

    fn spec(vary: &[&str]) -> Spec {
        Spec {
            kind: Kind::Run,
            workload: "micro".into(),
            vary: vary.iter().map(|v| parse_vary(v).unwrap()).collect(),
            repeat: 2,
            args: vec![
                "--txns".into(),
                "200".into(),
                "--db".into(),
                "/my dir".into(),
            ],
            load_once: None,
        }
    }

    #[test]
    fn the_script_has_one_array_task_per_point_on_exclusive_nodes() {
        let s = spec(&["threads=1,2", "size=1MB,10MB"]);
        let text = slurm_script(
            &s,
            Path::new("/opt/oltpscope"),
            Path::new("/shared/c"),
            Path::new("/shared/logs"),
        );
        assert!(text.starts_with("#!/bin/bash\n"));
        assert!(text.contains("#SBATCH --array=0-3\n"), "{text}");
        assert!(text.contains("#SBATCH --exclusive\n"));
        assert!(text.contains("#SBATCH --output=/shared/logs/%A_%a.out"));
        assert!(
            text.contains(
                "  3) POINT=threads-2_size-10MB; VARY=(--vary threads=2 --vary size=10MB) ;;"
            ),
            "{text}"
        );
        assert!(text.contains(
            "exec \"$OLTPSCOPE\" sweep micro \"${VARY[@]}\" --repeat 2 --out \"$SHARED/$POINT\" --txns 200 --db '/my dir'"
        ), "{text}");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        // A profile sweep's tasks are profile sweeps.
        let mut p = spec(&["threads=1,2"]);
        p.kind = Kind::Profile;
        let ptext = slurm_script(
            &p,
            Path::new("/opt/oltpscope"),
            Path::new("/shared/c"),
            Path::new("/shared/logs"),
        );
        assert!(
            ptext.contains("exec \"$OLTPSCOPE\" sweep --profile micro \"${VARY[@]}\""),
            "{ptext}"
        );
        // bash itself reads it (when bash is here).
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.sh");
        std::fs::write(&f, &text).unwrap();
        if let Ok(o) = std::process::Command::new("bash")
            .arg("-n")
            .arg(&f)
            .output()
        {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }

    fn fake_rep(dir: &Path, p: &sweep::Point, rep: u32, tps: f64) {
        let (d, _) = sweep::rep_dir(dir, p, rep);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(results::REPORT),
            format!(r#"{{"throughput_tps": {tps}, "abort_rate": 0.0}}"#),
        )
        .unwrap();
        std::fs::write(d.join(results::MANIFEST), "{}").unwrap();
    }

    #[test]
    fn merge_joins_point_directories_and_recomputes_the_summary() {
        let d = tempfile::tempdir().unwrap();
        let mut inputs = Vec::new();
        for (i, t) in ["1", "2", "4"].iter().enumerate() {
            let s = spec(&[&format!("threads={t}")]);
            let dir = d.path().join(format!("task-{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(sweep::SPEC), serde_json::to_string(&s).unwrap()).unwrap();
            let p = &s.points()[0];
            fake_rep(&dir, p, 1, 100.0 * (i + 1) as f64);
            fake_rep(&dir, p, 2, 100.0 * (i + 1) as f64 + 10.0);
            inputs.push(dir);
        }
        let out = d.path().join("campaign");
        let s = merge(&inputs, &out).unwrap();
        assert_eq!(s.spec.vary[0].values, ["1", "2", "4"]);
        assert_eq!(s.points.len(), 3);
        assert_eq!(s.points[2].throughput_tps.unwrap().median, 305.0);
        assert_eq!(s.curves.len(), 1);
        assert!(out.join(sweep::SUMMARY_CSV).is_file());
        assert!(
            inputs[0]
                .join("points/threads-1/rep1/report.json")
                .is_file(),
            "inputs are kept"
        );
        // Not again into the same directory; not the same point twice; not other sweeps.
        assert!(merge(&inputs, &out).unwrap_err().contains("not empty"));
        let twice = [inputs[0].clone(), inputs[0].clone()];
        assert!(merge(&twice, &d.path().join("c2"))
            .unwrap_err()
            .contains("both"));
        let other = d.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let mut o = spec(&["threads=8"]);
        o.repeat = 3;
        std::fs::write(other.join(sweep::SPEC), serde_json::to_string(&o).unwrap()).unwrap();
        let e = merge(&[inputs[0].clone(), other], &d.path().join("c3")).unwrap_err();
        assert!(e.contains("not the same sweep"), "{e}");
        assert!(
            !d.path().join("c3").exists(),
            "a refused merge writes nothing"
        );
        let e = merge(&[d.path().join("nothing")], &d.path().join("c4")).unwrap_err();
        assert!(e.contains("not a sweep directory"), "{e}");
    }
}
