//! Records the git commit the binary was built from (`OLTPSCOPE_GIT_COMMIT`, "unknown"
//! outside a git checkout or without git) and the build profile (`OLTPSCOPE_PROFILE`),
//! for the results manifest.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Rebuild when HEAD moves (a commit, a checkout): HEAD and the ref it names.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
                println!("cargo:rerun-if-changed={common}/{r}");
            }
        }
    }
    println!("cargo:rustc-env=OLTPSCOPE_GIT_COMMIT={commit}");
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=OLTPSCOPE_PROFILE={profile}");
}
