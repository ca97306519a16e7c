//! A private, temporary PostgreSQL server for `--engine postgres`.
//!
//! [`PgServer::start`] finds (or installs) the server binaries, runs `initdb` in a
//! fresh temporary directory, starts `postgres` listening on a Unix socket in that
//! directory only (no TCP), waits until it accepts connections and creates the
//! benchmark database. Dropping the [`PgServer`] stops the server and removes the
//! directory; so do Ctrl-C, SIGTERM and SIGHUP (registry.rs). If oltpscope is killed
//! with SIGKILL, the postmaster gets SIGQUIT from its parent-death signal (spawn.rs)
//! and the next start removes the directory (stale.rs). See docs/design/postgres.md.
//!
//! [`PgServer::start_kept`] starts one on a cluster kept in a directory instead (`--db
//! DIR`, kept.rs): made there by `initdb` once, loaded once, started again by later
//! runs; only its socket lives in a temporary directory, which is all that is removed.
//!
//! Every failure is one line (`Err(String)`), never a panic.

mod find;
pub mod kept;
mod registry;
mod spawn;
mod stale;

use std::ffi::CString;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use find::{find_bindir, find_or_install_bindir, BINDIR_ENV};

/// A cluster kept in a directory ([`PgServer::start_kept`]).
#[derive(Debug, Clone, Copy)]
pub struct Kept<'a> {
    /// The directory (`--db DIR`): `data/`, `postgres.log` and the marker.
    pub dir: &'a Path,
    /// What loads it, one line in the marker (the engine: its tables' definitions); a
    /// cluster of another label is refused.
    pub label: &'a str,
    /// Make a cluster in an absent or empty directory (else refuse: nothing to open).
    pub create: bool,
    /// Discard our cluster there first (`--reload`).
    pub reload: bool,
}

/// The database superuser `initdb` creates; trust auth lets any local client use it.
pub const SUPERUSER: &str = "oltpscope";
/// The port number; it only names the socket file (`.s.PGSQL.<port>`), no TCP.
pub const PORT: u16 = 5432;
/// Longest Unix socket path the kernel accepts (`sun_path` is 108 bytes with the NUL).
const MAX_SOCKET_PATH_BYTES: usize = 107;
/// How many lines of the server log an error message quotes.
const LOG_TAIL_LINES: usize = 3;

/// PostgreSQL's `synchronous_commit`: whether a commit waits for its WAL to be flushed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SynchronousCommit {
    /// Wait for the WAL flush (PostgreSQL's default; durable commits).
    #[default]
    On,
    /// Return before the flush; a crash may lose the last commits (not corrupt data).
    Off,
    /// Same as `On` for a server without replicas.
    Local,
}

impl SynchronousCommit {
    /// The setting's value as PostgreSQL spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SynchronousCommit::On => "on",
            SynchronousCommit::Off => "off",
            SynchronousCommit::Local => "local",
        }
    }
}

impl std::str::FromStr for SynchronousCommit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(SynchronousCommit::On),
            "off" => Ok(SynchronousCommit::Off),
            "local" => Ok(SynchronousCommit::Local),
            _ => Err(format!(
                "synchronous_commit must be on, off or local, not '{s}'"
            )),
        }
    }
}

/// How to start a private server.
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// `shared_buffers` in MiB. 512 MiB holds TPC-C with 2 warehouses (~200 MB of
    /// tables and indexes at load, growing with the run) without evictions.
    pub shared_buffers_mb: u32,
    /// `max_connections`; at least 64 so one connection per worker fits.
    pub max_connections: u32,
    /// `synchronous_commit`; `fsync` always stays on: durability is measured.
    pub synchronous_commit: SynchronousCommit,
    /// The database to create for the benchmark.
    pub database: String,
    /// Where the temporary directory goes (default: `std::env::temp_dir()`).
    pub parent_dir: Option<PathBuf>,
    /// Run `scripts/install-postgres.sh` (apt-get) when no server is installed.
    pub install_if_missing: bool,
    /// How long to wait for the server to accept connections.
    pub start_timeout: Duration,
    /// More `name=value` settings passed as `-c name=value`, after the ones above.
    pub extra_settings: Vec<(String, String)>,
    /// Start the postmaster under another program (`simulate`: valgrind with the
    /// oltpscope tracer): `program args... postgres -D ...`, with `env` added.
    pub launcher: Option<Launcher>,
}

/// A program the postmaster runs under (see `PgOptions::launcher`).
#[derive(Debug, Clone, Default)]
pub struct Launcher {
    pub program: PathBuf,
    pub args: Vec<std::ffi::OsString>,
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            shared_buffers_mb: 512,
            max_connections: 100,
            synchronous_commit: SynchronousCommit::On,
            database: "oltpscope".to_string(),
            parent_dir: None,
            install_if_missing: true,
            start_timeout: Duration::from_secs(60),
            extra_settings: Vec::new(),
            launcher: None,
        }
    }
}

/// A running private PostgreSQL server; dropping it stops the server and removes its
/// directory.
#[derive(Debug)]
pub struct PgServer {
    id: u64,
    /// The temporary directory: the socket, and for a temporary cluster its data and log.
    dir: PathBuf,
    /// The data directory (`dir/data`, or a kept cluster's `DIR/data`).
    data: PathBuf,
    /// The server log (`dir/postgres.log`, or a kept cluster's `DIR/postgres.log`).
    log: PathBuf,
    /// A kept cluster's directory (`DIR`).
    kept: Option<PathBuf>,
    bindir: PathBuf,
    database: String,
    /// How it was started: a restart keeps the settings.
    opts: PgOptions,
    run_as: Option<RunAs>,
}

/// The account `initdb` and `postgres` run as: they refuse to run as root.
#[derive(Clone, Copy, Debug)]
struct RunAs {
    uid: u32,
    gid: u32,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl PgServer {
    /// Starts a private server as described in the crate documentation.
    pub fn start(opts: &PgOptions) -> Result<PgServer, String> {
        check_options(opts)?;
        let bindir = find::find_or_install_bindir(opts.install_if_missing)?;
        let run_as = run_as()?;
        let (id, dir) = temp_dir(opts, run_as)?;
        // From here on an early return drops `server`, which removes the directory and
        // stops the postmaster if it was started.
        let server = PgServer {
            id,
            data: dir.join("data"),
            log: dir.join("postgres.log"),
            kept: None,
            dir,
            bindir,
            database: opts.database.clone(),
            opts: opts.clone(),
            run_as,
        };
        server.initdb(run_as)?;
        registry::attach(id, server.spawn_postgres(opts, run_as)?);
        server.wait_ready(opts.start_timeout)?;
        server.create_database()?;
        Ok(server)
    }

    /// Starts a private server on the cluster kept in `k.dir` (`--db DIR`): in an absent
    /// or empty directory (when `k.create`) `initdb` makes one there, marked as
    /// oltpscope's with `k.label` (what loads it) and not loaded yet; a cluster there
    /// already must be ours (its marker), made by this PostgreSQL major version, loaded
    /// ([`PgServer::mark_loaded`]) and of the same label, else one line refuses it and
    /// nothing there is touched. `k.reload` discards our cluster first (kept.rs). Only
    /// the socket is in a temporary directory (Unix socket paths are short). Returns the
    /// server and whether the cluster held a finished load. A server killed with it is
    /// left to PostgreSQL's crash recovery at the next start: the cluster is never
    /// removed here.
    pub fn start_kept(opts: &PgOptions, k: &Kept) -> Result<(PgServer, bool), String> {
        check_options(opts)?;
        let bindir = find::find_or_install_bindir(opts.install_if_missing)?;
        let major = kept::installed_major(&bindir)?;
        let run_as = run_as()?;
        let mut found = kept::inspect(k.dir)?;
        if k.reload && matches!(found, kept::Found::Ours(_)) {
            kept::discard(k.dir)?;
            found = kept::Found::Empty;
        }
        let fresh = match &found {
            kept::Found::Empty if !k.create => {
                return Err(format!(
                    "{} holds no PostgreSQL cluster: load one first (`oltpscope load ... --db {}`)",
                    k.dir.display(),
                    k.dir.display()
                ))
            }
            kept::Found::Empty => {
                prepare_kept_dir(k.dir, run_as)?;
                kept::write_marker(
                    k.dir,
                    &kept::Marker {
                        major,
                        loaded: false,
                        label: k.label.to_string(),
                    },
                )?;
                true
            }
            kept::Found::Ours(m) => {
                kept::check_existing(k.dir, m, major, k.label)?;
                false
            }
        };
        let (id, dir) = temp_dir(opts, run_as)?;
        let server = PgServer {
            id,
            data: k.dir.join(kept::DATA),
            log: k.dir.join(kept::LOG),
            kept: Some(k.dir.to_path_buf()),
            dir,
            bindir,
            database: opts.database.clone(),
            opts: opts.clone(),
            run_as,
        };
        // For the sweep of a killed process's socket directory (stale.rs).
        let cluster = server.dir.join(stale::CLUSTER_FILE);
        std::fs::write(&cluster, format!("{}\n", server.data.display()))
            .map_err(|e| format!("cannot write {}: {e}", cluster.display()))?;
        if fresh {
            server.initdb(run_as)?;
        }
        registry::attach(id, server.spawn_postgres(opts, run_as)?);
        server.wait_ready(opts.start_timeout)?;
        if fresh {
            server.create_database()?;
        }
        Ok((server, !fresh))
    }

    /// A kept cluster's load finished (and was made durable by the caller's checkpoint):
    /// its marker says so from now on. Nothing to do for a temporary cluster.
    pub fn mark_loaded(&self) -> Result<(), String> {
        let Some(dir) = &self.kept else {
            return Ok(());
        };
        let m = match kept::inspect(dir)? {
            kept::Found::Ours(m) => m,
            kept::Found::Empty => return Err(format!("{}: the marker is gone", dir.display())),
        };
        kept::write_marker(dir, &kept::Marker { loaded: true, ..m })
    }

    /// The kept cluster's directory (`--db DIR`), if the server runs on one.
    pub fn kept_dir(&self) -> Option<&Path> {
        self.kept.as_deref()
    }

    /// The data directory the server runs on.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// Stops the postmaster with a fast shutdown (open transactions rolled back, a
    /// shutdown checkpoint written) and starts it again on the same data directory,
    /// under `launcher` (or none), waiting up to `timeout` for it to accept connections.
    /// `simulate` loads natively and traces only the run: a load under valgrind would
    /// take hundreds of times longer. Every client connection is cut; reconnect after.
    /// A postmaster that needed SIGKILL to stop is an error (its data would go through
    /// crash recovery, which is not what the run should measure).
    pub fn restart_under(
        &mut self,
        launcher: Option<Launcher>,
        timeout: Duration,
    ) -> Result<(), String> {
        if let Some(mut child) = registry::detach(self.id) {
            registry::stop_within(&mut child, registry::RESTART_STOP_TIMEOUT)
                .map_err(|e| format!("restarting the server: {e}"))?;
        }
        self.opts.launcher = launcher;
        let child = self.spawn_postgres(&self.opts, self.run_as)?;
        registry::attach(self.id, child);
        self.wait_ready(timeout)
    }

    /// The temporary directory holding the data directory (`data/`), the socket and
    /// the server log (`postgres.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of the Unix socket (the `host` of [`PgServer::url`]).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The PostgreSQL bin directory in use.
    pub fn bindir(&self) -> &Path {
        &self.bindir
    }

    /// The postmaster's process id (always `Some` for a server `start` returned).
    pub fn pid(&self) -> Option<u32> {
        registry::pid(self.id)
    }

    /// Connection string for the `postgres` crate (and libpq):
    /// `host=<dir> port=5432 user=oltpscope dbname=<database>`.
    pub fn url(&self) -> String {
        format!(
            "host={} port={PORT} user={SUPERUSER} dbname={}",
            quote_conninfo(&self.dir.to_string_lossy()),
            quote_conninfo(&self.database)
        )
    }

    /// Stops the server and removes its directory, reporting what went wrong (Drop
    /// does the same silently).
    pub fn stop(self) -> Result<(), String> {
        // Drop then finds nothing left to do.
        registry::remove(self.id)
    }

    fn log_path(&self) -> PathBuf {
        self.log.clone()
    }

    fn initdb(&self, run_as: Option<RunAs>) -> Result<(), String> {
        let mut cmd = Command::new(self.bindir.join("initdb"));
        cmd.arg("-D")
            .arg(&self.data)
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .current_dir(&self.dir);
        if self.kept.is_none() {
            // The cluster is thrown away at the end: no need to fsync its creation.
            cmd.arg("--no-sync");
        }
        apply_run_as(&mut cmd, run_as);
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "initdb failed ({}): {}",
            out.status,
            last_stderr_line(&out)
        ))
    }

    fn spawn_postgres(
        &self,
        opts: &PgOptions,
        run_as: Option<RunAs>,
    ) -> Result<std::process::Child, String> {
        // Appended to: a restarted server's log follows the first one's.
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| format!("cannot create {}: {e}", self.log_path().display()))?;
        let log2 = log
            .try_clone()
            .map_err(|e| format!("cannot open the server log: {e}"))?;
        let mut cmd = match &opts.launcher {
            None => Command::new(self.bindir.join("postgres")),
            Some(l) => {
                let mut c = Command::new(&l.program);
                c.args(&l.args).arg(self.bindir.join("postgres"));
                c.envs(l.env.iter().map(|(k, v)| (k, v)));
                c
            }
        };
        cmd.arg("-D").arg(&self.data);
        for (name, value) in settings(opts, &self.dir) {
            cmd.arg("-c").arg(format!("{name}={value}"));
        }
        cmd.current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            // Its own process group: a terminal's Ctrl-C reaches oltpscope only, which
            // then shuts the server down in order (registry.rs).
            .process_group(0);
        apply_run_as(&mut cmd, run_as);
        spawn::spawn_tied_to_process(cmd).map_err(|e| format!("cannot start postgres: {e}"))
    }

    fn wait_ready(&self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = registry::exited(self.id) {
                return Err(format!(
                    "postgres exited at start ({status}): {}",
                    self.log_tail()
                ));
            }
            let ready = Command::new(self.bindir.join("pg_isready"))
                .arg("-h")
                .arg(&self.dir)
                .args([
                    "-p",
                    &PORT.to_string(),
                    "-U",
                    SUPERUSER,
                    "-d",
                    "postgres",
                    "-q",
                ])
                .stdin(Stdio::null())
                .status()
                .map_err(|e| format!("cannot run pg_isready: {e}"))?;
            if ready.success() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "postgres did not accept connections within {} s: {}",
                    timeout.as_secs(),
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn create_database(&self) -> Result<(), String> {
        if self.database == "postgres" {
            return Ok(()); // initdb made it.
        }
        let out = Command::new(self.bindir.join("createdb"))
            .arg("-h")
            .arg(&self.dir)
            .args(["-p", &PORT.to_string(), "-U", SUPERUSER])
            .arg(&self.database)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run createdb: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "createdb {} failed: {}",
            self.database,
            last_stderr_line(&out)
        ))
    }

    /// The last lines of the server log, joined into one line for an error message.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
        if tail.is_empty() {
            "(server log empty)".to_string()
        } else {
            format!("server log: {}", tail.join(" | "))
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Err(e) = registry::remove(self.id) {
            eprintln!("warning: {e}");
        }
    }
}

fn check_options(opts: &PgOptions) -> Result<(), String> {
    if opts.max_connections < 64 {
        return Err(format!(
            "max_connections must be at least 64, not {}",
            opts.max_connections
        ));
    }
    if opts.shared_buffers_mb < 16 {
        return Err(format!(
            "shared_buffers must be at least 16 MiB, not {}",
            opts.shared_buffers_mb
        ));
    }
    let valid_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    if !valid_name(&opts.database) {
        return Err(format!(
            "database name '{}' must be letters, digits and _",
            opts.database
        ));
    }
    for (name, _) in &opts.extra_settings {
        if !valid_name(name) {
            return Err(format!("'{name}' is not a PostgreSQL setting name"));
        }
    }
    Ok(())
}

/// The server settings, in the order passed.
fn settings(opts: &PgOptions, socket_dir: &Path) -> Vec<(String, String)> {
    let mut s: Vec<(String, String)> = vec![
        ("listen_addresses".into(), String::new()),
        (
            "unix_socket_directories".into(),
            socket_dir.to_string_lossy().into_owned(),
        ),
        ("port".into(), PORT.to_string()),
        (
            "shared_buffers".into(),
            format!("{}MB", opts.shared_buffers_mb),
        ),
        ("max_connections".into(), opts.max_connections.to_string()),
        ("fsync".into(), "on".into()),
        (
            "synchronous_commit".into(),
            opts.synchronous_commit.as_str().into(),
        ),
        // Everything goes to stderr, which is the log file; no collector process.
        ("logging_collector".into(), "off".into()),
    ];
    s.extend(opts.extra_settings.iter().cloned());
    s
}

/// Quotes a conninfo value when it holds spaces, quotes or backslashes.
fn quote_conninfo(value: &str) -> String {
    if !value.is_empty() && !value.contains([' ', '\'', '\\']) {
        return value.to_string();
    }
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Creates `<parent>/oltpscope-pg-<pid>-<n>` (mode 0700, owned by the account the
/// server runs as) and returns the server id and the directory.
/// A server's temporary directory under `opts`' parent (a killed process's swept
/// first), registered for removal on exit and on signals.
fn temp_dir(opts: &PgOptions, run_as: Option<RunAs>) -> Result<(u64, PathBuf), String> {
    let parent = opts.parent_dir.clone().unwrap_or_else(std::env::temp_dir);
    stale::sweep(&parent);
    let (id, dir) = make_dir(&parent, run_as)?;
    registry::register_dir(id, dir.clone());
    Ok((id, dir))
}

fn make_dir(parent: &Path, run_as: Option<RunAs>) -> Result<(u64, PathBuf), String> {
    if let Some(r) = run_as {
        check_reachable(parent, r.uid)?;
    }
    let pid = std::process::id();
    for _ in 0..1000 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(stale::dir_name(pid, id));
        let socket = dir.join(format!(".s.PGSQL.{PORT}"));
        if socket.as_os_str().len() > MAX_SOCKET_PATH_BYTES {
            return Err(format!(
                "the socket path {} is too long for a Unix socket; set TMPDIR to a shorter \
                 directory",
                socket.display()
            ));
        }
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            // A directory left by an earlier process with the same pid.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
        let prepared = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .and_then(|()| match run_as {
                Some(r) => std::os::unix::fs::chown(&dir, Some(r.uid), Some(r.gid)),
                None => Ok(()),
            });
        if let Err(e) = prepared {
            let _ = std::fs::remove_dir(&dir);
            return Err(format!("cannot prepare {}: {e}", dir.display()));
        }
        return Ok((id, dir));
    }
    Err(format!(
        "cannot find a free directory name under {}",
        parent.display()
    ))
}

/// Creates a kept cluster's directory if absent (mode 0700, owned by the account the
/// server runs as, which must reach it).
fn prepare_kept_dir(dir: &Path, run_as: Option<RunAs>) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some(r) = run_as {
        if let Some(parent) = dir.canonicalize().ok().as_deref().and_then(Path::parent) {
            check_reachable(parent, r.uid)?;
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .and_then(|()| match run_as {
            Some(r) => std::os::unix::fs::chown(dir, Some(r.uid), Some(r.gid)),
            None => Ok(()),
        })
        .map_err(|e| format!("cannot prepare {}: {e}", dir.display()))
}

/// Checks that `uid` may enter every directory on the way to `parent` (a root-only
/// TMPDIR would otherwise fail later, inside initdb, with a less clear message).
fn check_reachable(parent: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let parent = parent.canonicalize().map_err(|e| {
        format!(
            "cannot use {} for the server directory: {e}",
            parent.display()
        )
    })?;
    for dir in parent.ancestors() {
        let meta =
            std::fs::metadata(dir).map_err(|e| format!("cannot stat {}: {e}", dir.display()))?;
        // Owner x bit for its owner, otherwise the "others" x bit (group is ignored:
        // rarely shared with the postgres account, and erring safe costs only a message).
        let enterable = if meta.uid() == uid {
            meta.mode() & 0o100 != 0
        } else {
            meta.mode() & 0o001 != 0
        };
        if !enterable {
            return Err(format!(
                "the postgres user cannot enter {}; set TMPDIR to a directory it can reach \
                 (e.g. /tmp)",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// As root, the `postgres` system user (created by Debian's package); otherwise the
/// current user (`None`: no switch).
fn run_as() -> Result<Option<RunAs>, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = CString::new("postgres").expect("no NUL in a literal");
    // SAFETY: getpwnam returns null or a pointer to a static record that stays valid
    // until the next getpw* call; the two fields are copied out at once. Start-up is
    // the only place this crate calls getpw*.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(
            "running as root, but there is no 'postgres' system user to run the \
                    server as (Debian's postgresql package creates it)"
                .to_string(),
        );
    }
    // SAFETY: pw is non-null and points to a valid passwd record (see above).
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok(Some(RunAs { uid, gid }))
}

fn apply_run_as(cmd: &mut Command, run_as: Option<RunAs>) {
    if let Some(r) = run_as {
        // std sets the gid, drops supplementary groups (as root), then the uid.
        cmd.gid(r.gid).uid(r.uid);
    }
}

/// The last non-empty line a finished command wrote to its standard error.
fn last_stderr_line(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conninfo_values_are_quoted_only_when_needed() {
        assert_eq!(
            quote_conninfo("/tmp/oltpscope-pg-1-0"),
            "/tmp/oltpscope-pg-1-0"
        );
        assert_eq!(quote_conninfo("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(quote_conninfo("it's"), "'it\\'s'");
    }

    #[test]
    fn settings_keep_durability_and_stay_off_tcp() {
        let opts = PgOptions {
            synchronous_commit: SynchronousCommit::Off,
            ..PgOptions::default()
        };
        let s = settings(&opts, Path::new("/tmp/x"));
        let get = |n: &str| s.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("listen_addresses"), Some(""));
        assert_eq!(get("unix_socket_directories"), Some("/tmp/x"));
        assert_eq!(get("fsync"), Some("on"));
        assert_eq!(get("synchronous_commit"), Some("off"));
    }

    #[test]
    fn a_directory_others_cannot_enter_is_refused() {
        let dir = std::env::temp_dir().join(format!("pgserver-reach-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        // uid 4242 owns neither directory, so only the "others" bits count.
        let closed = check_reachable(&dir.join("inner"), 4242);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let open = check_reachable(&dir.join("inner"), 4242);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(closed.unwrap_err().contains("cannot enter"));
        assert!(open.is_ok());
    }

    #[test]
    fn bad_options_are_one_line_errors() {
        let few = PgOptions {
            max_connections: 10,
            ..PgOptions::default()
        };
        assert!(check_options(&few).unwrap_err().contains("max_connections"));
        let db = PgOptions {
            database: "a;drop".into(),
            ..PgOptions::default()
        };
        assert!(check_options(&db).unwrap_err().contains("database name"));
        assert!(check_options(&PgOptions::default()).is_ok());
        assert_eq!(
            "off".parse::<SynchronousCommit>(),
            Ok(SynchronousCommit::Off)
        );
        assert!("maybe".parse::<SynchronousCommit>().is_err());
    }
}
