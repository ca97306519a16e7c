//! Finding the PostgreSQL server binaries, and installing them when missing.
//!
//! Owns the search order and the embedded install script; it never starts a server.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The project's install script, embedded so the binary works from any directory.
const INSTALL_SCRIPT: &str = include_str!("../../../scripts/install-postgres.sh");

/// Environment variable naming a bin directory to use before any other.
pub const BINDIR_ENV: &str = "OLTPSCOPE_PG_BINDIR";

/// The programs a bin directory must hold to count as a server installation.
const REQUIRED: [&str; 4] = ["initdb", "postgres", "pg_isready", "createdb"];

/// Returns the bin directory of the PostgreSQL server to use, if one is installed:
/// `$OLTPSCOPE_PG_BINDIR`, then `pg_config --bindir`, then the newest
/// `/usr/lib/postgresql/*/bin`, then the directory of `initdb` on `PATH`.
pub fn find_bindir() -> Option<PathBuf> {
    candidates().into_iter().find(|dir| is_server_bindir(dir))
}

/// Like [`find_bindir`], but when nothing is found and `install` is true, runs
/// `scripts/install-postgres.sh` (apt-get) and looks again.
pub fn find_or_install_bindir(install: bool) -> Result<PathBuf, String> {
    if let Some(dir) = find_bindir() {
        return Ok(dir);
    }
    if !install {
        return Err(
            "PostgreSQL server binaries (initdb, postgres) not found; run \
                    scripts/install-postgres.sh or pass --pg-url"
                .to_string(),
        );
    }
    run_install_script()?;
    find_bindir().ok_or_else(|| {
        "PostgreSQL install script succeeded but initdb/postgres are still not found".to_string()
    })
}

/// Runs the embedded install script; its one-line report goes to stderr so a run's
/// stdout (results) stays clean.
fn run_install_script() -> Result<(), String> {
    let out = Command::new("bash")
        .arg("-c")
        .arg(INSTALL_SCRIPT)
        .output()
        .map_err(|e| format!("cannot run bash for the PostgreSQL install script: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        if let Some(line) = stdout.lines().last() {
            eprintln!("{line}");
        }
        Ok(())
    } else {
        let line = stderr
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        Err(format!(
            "PostgreSQL is not installed and installing it failed: {line}"
        ))
    }
}

fn candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os(BINDIR_ENV) {
        dirs.push(PathBuf::from(dir));
    }
    // pg_config may come from libpq-dev without a server; is_server_bindir checks.
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !dir.is_empty() {
                dirs.push(PathBuf::from(dir));
            }
        }
    }
    dirs.extend(debian_bindirs(Path::new("/usr/lib/postgresql")));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs
}

/// `<root>/<version>/bin` directories, newest version first.
fn debian_bindirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versioned: Vec<(Vec<u32>, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let version: Option<Vec<u32>> = name.split('.').map(|p| p.parse().ok()).collect();
            Some((version?, e.path().join("bin")))
        })
        .collect();
    versioned.sort_by(|a, b| b.0.cmp(&a.0));
    versioned.into_iter().map(|(_, dir)| dir).collect()
}

fn is_server_bindir(dir: &Path) -> bool {
    REQUIRED.iter().all(|p| is_executable(&dir.join(p)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_bindirs_are_newest_first_and_skip_non_versions() {
        let root = std::env::temp_dir().join(format!("pgserver-find-{}", std::process::id()));
        for v in ["9.6", "15", "16", "common", "13"] {
            std::fs::create_dir_all(root.join(v).join("bin")).unwrap();
        }
        let dirs = debian_bindirs(&root);
        let names: Vec<String> = dirs
            .iter()
            .map(|d| {
                d.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .to_string()
            })
            .collect();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(names, ["16", "15", "13", "9.6"]);
    }

    #[test]
    fn a_directory_without_the_server_is_not_a_bindir() {
        assert!(!is_server_bindir(Path::new("/nonexistent-pgserver-dir")));
        assert!(!is_server_bindir(&std::env::temp_dir()));
    }
}
