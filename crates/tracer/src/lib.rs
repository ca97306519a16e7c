//! Runs programs under oltptrace, the valgrind tool (c/ot_main.c, built by build.rs) that
//! streams the oltpscope trace (docs/design/trace-format.md) to a file or FIFO.
//!
//! Owns: locating valgrind, the VALGRIND_LIB directory that holds the tool beside the
//! stock valgrind files, and the command line of a traced run.
//! Must never: read or interpret the trace (that is `cachesim`'s job), or fail the build
//! when valgrind is missing (the error is reported by `prepare()`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool's name, as in `valgrind --tool=oltptrace`.
pub const TOOL_NAME: &str = "oltptrace";
const TOOL_FILE: &str = "oltptrace-amd64-linux";
/// A file every usable stock valgrind library directory has (the core preload).
const STOCK_MARKER: &str = "vgpreload_core-amd64-linux.so";

/// The tool binary, embedded so that a built oltpscope does not depend on its target/
/// directory (empty when build.rs could not build it).
static TOOL_BYTES: &[u8] = include_bytes!(env!("OLTPTRACE_TOOL"));

/// Ok when build.rs built the tool; otherwise the one-line reason.
pub fn build_status() -> Result<(), String> {
    match env!("OLTPTRACE_BUILD") {
        "ok" if !TOOL_BYTES.is_empty() => Ok(()),
        "ok" => Err("oltptrace: the tool binary is empty; rebuild oltpscope".to_string()),
        reason => Err(format!(
            "oltptrace (the valgrind tool) was not built: {reason}; after fixing that, \
             rebuild (cargo clean -p tracer && cargo build --release)"
        )),
    }
}

/// Options of a traced run beyond the program and the output path.
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// Trace from the first instruction (`--trace-start=yes`) instead of from the
    /// program's first `probe::tracing_start()`.
    pub trace_start: bool,
    /// Pass `-q` to valgrind (only errors on stderr).
    pub quiet: bool,
    /// More valgrind core options, e.g. `--fair-sched=yes` for spinning threads.
    pub valgrind_args: Vec<OsString>,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            trace_start: false,
            quiet: true,
            valgrind_args: Vec::new(),
        }
    }
}

/// A ready-to-use valgrind with the oltptrace tool.
#[derive(Debug, Clone)]
pub struct TracerSetup {
    valgrind: PathBuf,
    lib_dir: PathBuf,
}

/// Locates valgrind and prepares a VALGRIND_LIB directory (under the system temp
/// directory, reused across runs) holding the tool beside links to every stock file.
/// Errors are one line saying what to install or rebuild.
pub fn prepare() -> Result<TracerSetup, String> {
    build_status()?;
    let valgrind = find_valgrind()?;
    check_version(&valgrind)?;
    let stock = find_stock_lib_dir(&valgrind)?;
    let lib_dir = make_lib_dir(&stock).map_err(|e| format!("oltptrace: {e}"))?;
    Ok(TracerSetup { valgrind, lib_dir })
}

impl TracerSetup {
    /// The valgrind launcher.
    pub fn valgrind(&self) -> &Path {
        &self.valgrind
    }

    /// The directory to pass as VALGRIND_LIB (it also serves the stock tools, e.g.
    /// cachegrind, so that runs to compare see the same environment).
    pub fn lib_dir(&self) -> &Path {
        &self.lib_dir
    }

    /// `valgrind --tool=oltptrace --trace-out=TRACE_OUT -q program args`, tracing from
    /// the program's first `probe::tracing_start()`.
    pub fn command<I, S>(&self, program: impl AsRef<OsStr>, args: I, trace_out: &Path) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command_with(program, args, trace_out, &TraceOptions::default())
    }

    /// As `command`, with options.
    pub fn command_with<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        trace_out: &Path,
        opts: &TraceOptions,
    ) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.valgrind_command(TOOL_NAME);
        let mut out_opt = OsString::from("--trace-out=");
        out_opt.push(trace_out);
        cmd.arg(out_opt);
        cmd.arg(if opts.trace_start {
            "--trace-start=yes"
        } else {
            "--trace-start=no"
        });
        if opts.quiet {
            cmd.arg("-q");
        }
        cmd.args(&opts.valgrind_args);
        cmd.arg(program);
        cmd.args(args);
        cmd
    }

    /// The pieces of `command_with` for another launcher to use (pgserver starts the
    /// postmaster under them): the valgrind program, its arguments up to (without) the
    /// traced program, and the environment it needs.
    pub fn prefix(
        &self,
        trace_out: &Path,
        opts: &TraceOptions,
    ) -> (PathBuf, Vec<OsString>, Vec<(OsString, OsString)>) {
        let cmd = self.command_with("", std::iter::empty::<&str>(), trace_out, opts);
        let mut args: Vec<OsString> = cmd.get_args().map(|a| a.to_os_string()).collect();
        // command_with appended the (empty) program last.
        args.pop();
        let env = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_os_string(), v?.to_os_string())))
            .collect();
        (PathBuf::from(cmd.get_program()), args, env)
    }

    /// `valgrind --tool=TOOL` with VALGRIND_LIB set (any stock tool or oltptrace); the
    /// caller adds the options and the program.
    pub fn valgrind_command(&self, tool: &str) -> Command {
        let mut cmd = Command::new(&self.valgrind);
        cmd.env("VALGRIND_LIB", &self.lib_dir);
        cmd.arg(format!("--tool={tool}"));
        cmd
    }
}

/// Creates a FIFO at `path` (mode 0600) for streaming a trace to a reader in another
/// process or thread: open it for reading, then start the traced run (the tool's open
/// for writing waits for the reader).
pub fn make_fifo(path: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("FIFO path {} contains a NUL byte", path.display()))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    if r == 0 {
        Ok(())
    } else {
        let e = std::io::Error::last_os_error();
        Err(format!("cannot create FIFO {}: {e}", path.display()))
    }
}

/// The static C test program built by build.rs (for this crate's tests).
#[doc(hidden)]
pub fn test_program() -> Option<&'static Path> {
    let p = env!("OLTPTRACE_TESTPROG");
    (!p.is_empty()).then(|| Path::new(p))
}

fn find_valgrind() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("OLTPSCOPE_VALGRIND") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("OLTPSCOPE_VALGRIND={} is not a file", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("valgrind"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "valgrind is not installed (not in PATH): apt-get install -y valgrind".into()
        })
}

fn check_version(valgrind: &Path) -> Result<(), String> {
    let out = Command::new(valgrind)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", valgrind.display()))?;
    let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let built = env!("OLTPTRACE_VALGRIND_VERSION");
    if found.strip_prefix("valgrind-") == Some(built) {
        Ok(())
    } else {
        Err(format!(
            "oltptrace was built against valgrind {built} but {} reports '{found}'; \
             rebuild oltpscope",
            valgrind.display()
        ))
    }
}

/// The launcher's default VALGRIND_LIB: where the stock tools and preloads live.
fn find_stock_lib_dir(valgrind: &Path) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(valgrind).unwrap_or_else(|_| valgrind.to_path_buf());
    let prefix = real.parent().and_then(Path::parent).map(Path::to_path_buf);
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(prefix) = prefix {
        candidates.push(prefix.join("libexec/valgrind"));
        candidates.push(prefix.join("lib/valgrind"));
        candidates.push(prefix.join("lib/x86_64-linux-gnu/valgrind"));
    }
    for d in [
        "/usr/libexec/valgrind",
        "/usr/lib/valgrind",
        "/usr/local/libexec/valgrind",
    ] {
        candidates.push(PathBuf::from(d));
    }
    candidates
        .into_iter()
        .find(|d| d.join(STOCK_MARKER).is_file())
        .ok_or_else(|| {
            format!("valgrind's library directory ({STOCK_MARKER}) not found: reinstall valgrind")
        })
}

/// FNV-1a: names the directory after the tool's bytes and the stock directory, so a
/// rebuilt tool or another valgrind gets a fresh directory.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

fn lib_dir_is_complete(dir: &Path, stock: &Path) -> bool {
    let tool_ok = std::fs::metadata(dir.join(TOOL_FILE))
        .map(|m| m.len() == TOOL_BYTES.len() as u64)
        .unwrap_or(false);
    tool_ok && dir.join(STOCK_MARKER).is_file() && stock.join(STOCK_MARKER).is_file()
}

fn make_lib_dir(stock: &Path) -> std::io::Result<PathBuf> {
    make_lib_dir_in(&std::env::temp_dir(), stock)
}

fn make_lib_dir_in(base: &Path, stock: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let hash = fnv1a(&[TOOL_BYTES, stock.as_os_str().as_encoded_bytes()]);
    let final_dir = base.join(format!("oltpscope-valgrind-{hash:016x}"));
    if lib_dir_is_complete(&final_dir, stock) {
        return Ok(final_dir);
    }
    // Build in a private directory, then rename into place: concurrent preparations
    // never see a half-filled directory.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = base.join(format!(
        "oltpscope-valgrind-{hash:016x}.{}.{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&tmp)?;
    for entry in std::fs::read_dir(stock)? {
        let entry = entry?;
        if entry.file_name() == OsStr::new(TOOL_FILE) {
            continue;
        }
        symlink(entry.path(), tmp.join(entry.file_name()))?;
    }
    let tool = tmp.join(TOOL_FILE);
    std::fs::write(&tool, TOOL_BYTES)?;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755))?;
    match std::fs::rename(&tmp, &final_dir) {
        Ok(()) => Ok(final_dir),
        Err(_) if lib_dir_is_complete(&final_dir, stock) => {
            // Another process won the race; use its directory.
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(final_dir)
        }
        // The final name is taken by something unusable (e.g. another user's
        // directory): keep the private one.
        Err(_) => Ok(tmp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_differs_for_different_inputs() {
        assert_ne!(fnv1a(&[b"a"]), fnv1a(&[b"b"]));
        assert_eq!(fnv1a(&[b"ab"]), fnv1a(&[b"a", b"b"]));
    }

    #[test]
    fn concurrent_lib_dir_preparations_agree() {
        // A fake stock directory: the marker file and one tool.
        let stock = tempfile::tempdir().unwrap();
        std::fs::write(stock.path().join(STOCK_MARKER), b"x").unwrap();
        std::fs::write(stock.path().join("none-amd64-linux"), b"y").unwrap();
        let base = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| make_lib_dir_in(base.path(), stock.path()).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let expected = dirs[0].clone();
        for d in &dirs {
            assert_eq!(d, &expected, "every caller gets the one final directory");
            assert!(lib_dir_is_complete(d, stock.path()));
            assert_eq!(std::fs::read(d.join("none-amd64-linux")).unwrap(), b"y");
            assert_eq!(std::fs::read(d.join(TOOL_FILE)).unwrap(), TOOL_BYTES);
        }
        // Losers of the rename race removed their private directories.
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 1);
    }

    #[test]
    fn command_line_has_the_tool_options() {
        let setup = TracerSetup {
            valgrind: PathBuf::from("/usr/bin/valgrind"),
            lib_dir: PathBuf::from("/tmp/x"),
        };
        let cmd = setup.command("/bin/true", ["a", "b"], Path::new("/tmp/t.trace"));
        let args: Vec<_> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--tool=oltptrace",
                "--trace-out=/tmp/t.trace",
                "--trace-start=no",
                "-q",
                "/bin/true",
                "a",
                "b"
            ]
        );
        let env: Vec<_> = cmd.get_envs().collect();
        assert_eq!(
            env,
            [(OsStr::new("VALGRIND_LIB"), Some(OsStr::new("/tmp/x")))]
        );
    }
}
