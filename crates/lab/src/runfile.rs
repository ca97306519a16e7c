//! `run|simulate|profile --file F`: one run's settings from a file, so an experiment is
//! kept as a file and a results directory's manifest can be fed back to repeat its run.
//!
//! Two forms, with the keys their own files use: a TOML experiment file with a sweep
//! file's run keys (`kind`, `workload`, `args`, `out`; `vary` and `repeat` make a
//! sweep and are refused here), or a results directory's `manifest.json` (its
//! `command_line` is taken, without `--out`: results are never overwritten). Unknown
//! keys are refused. Merging with the command line is the CLI's job: this module only
//! reads.

use crate::results;
use runspec::flag;
use std::path::{Path, PathBuf};

/// One run's settings, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFile {
    /// `run`, `simulate` or `profile`, when the file says.
    pub kind: Option<String>,
    pub workload: String,
    /// Options, in the command line's form (`["--threads", "2"]`).
    pub args: Vec<String>,
}

/// The TOML form: a sweep file's keys for one run.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Toml {
    kind: Option<String>,
    workload: String,
    #[serde(default)]
    args: Vec<String>,
    out: Option<PathBuf>,
    // Sweep keys: read only to refuse them with a pointer to `sweep --file`.
    vary: Option<toml::Value>,
    repeat: Option<toml::Value>,
}

/// The manifest's keys (docs/results.md); only `kind` and `command_line` are used, the
/// rest describe how the run was made.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ManifestKeys {
    schema_version: serde_json::Value,
    kind: String,
    command_line: Vec<String>,
    config: Option<serde_json::Value>,
    config_hash: Option<serde_json::Value>,
    build: Option<serde_json::Value>,
    machine: Option<serde_json::Value>,
    created_unix_s: Option<serde_json::Value>,
    files: Option<serde_json::Value>,
}

/// Read `path`: a TOML experiment file, a `manifest.json`, or a results directory (its
/// manifest). Errors are one line naming the file.
pub fn read(path: &Path) -> Result<RunFile, String> {
    let file = if path.is_dir() {
        path.join(results::MANIFEST)
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("--file {}: cannot read it: {e}", file.display()))?;
    let one_line = |e: String| {
        format!(
            "--file {}: {}",
            file.display(),
            e.lines().map(str::trim).collect::<Vec<_>>().join(" ")
        )
    };
    if text.trim_start().starts_with('{') {
        let m: ManifestKeys =
            serde_json::from_str(&text).map_err(|e| one_line(format!("not a manifest: {e}")))?;
        return from_command_line(&m.command_line, &m.kind).map_err(one_line);
    }
    let t: Toml = toml::from_str(&text).map_err(|e| one_line(e.to_string()))?;
    if t.vary.is_some() || t.repeat.is_some() {
        return Err(one_line(
            "`vary` and `repeat` make a sweep: give this file to `oltpscope sweep --file`".into(),
        ));
    }
    let mut args = t.args;
    if let Some(out) = t.out {
        args.extend([flag::OUT.to_string(), out.display().to_string()]);
    }
    Ok(RunFile {
        kind: t.kind,
        workload: t.workload,
        args,
    })
}

/// A manifest's command line `[exe, command, workload, options...]` as a run file,
/// without `--out DIR` (that directory holds the recorded run).
fn from_command_line(line: &[String], kind: &str) -> Result<RunFile, String> {
    let [_, cmd, workload, rest @ ..] = line else {
        return Err(format!(
            "its command_line {line:?} names no command and workload"
        ));
    };
    let mut args = Vec::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        if a == flag::OUT {
            it.next();
        } else if !runspec::gives(std::slice::from_ref(a), flag::OUT) {
            args.push(a.clone());
        }
    }
    Ok(RunFile {
        kind: Some(
            if cmd.starts_with('-') {
                kind
            } else {
                cmd.as_str()
            }
            .to_string(),
        ),
        workload: workload.clone(),
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_manifest_forms_read_alike_and_unknown_keys_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("run.toml");
        std::fs::write(
            &t,
            "kind = \"run\"\nworkload = \"tpcb\"\nargs = [\"--threads\", \"2\"]\nout = \"r\"\n",
        )
        .unwrap();
        let f = read(&t).unwrap();
        assert_eq!(f.workload, "tpcb");
        assert_eq!(f.args, ["--threads", "2", "--out", "r"]);
        let m = d.path().join("manifest.json");
        std::fs::write(
            &m,
            r#"{"schema_version": 1, "kind": "run", "command_line": ["oltpscope", "run", "tpcb",
                "--threads", "2", "--out", "r1", "--seed", "7"], "config": {}, "files": []}"#,
        )
        .unwrap();
        let f = read(&m).unwrap();
        assert_eq!(f.kind.as_deref(), Some("run"));
        assert_eq!(f.args, ["--threads", "2", "--seed", "7"], "no --out");
        // A results directory reads as its manifest.
        assert_eq!(read(d.path()).unwrap(), f);
        std::fs::write(&t, "workload = \"tpcb\"\nthreads = 2\n").unwrap();
        let e = read(&t).unwrap_err();
        assert!(
            e.contains("unknown field `threads`") && !e.contains('\n'),
            "{e}"
        );
        std::fs::write(&t, "workload = \"tpcb\"\nvary = [\"threads=1,2\"]\n").unwrap();
        assert!(read(&t).unwrap_err().contains("sweep --file"));
        std::fs::write(&m, r#"{"kind": "run", "command_line": [], "extra": 1}"#).unwrap();
        let e = read(&m).unwrap_err();
        assert!(e.contains("unknown field `extra`"), "{e}");
    }
}
