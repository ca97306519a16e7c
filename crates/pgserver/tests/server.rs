//! Starts real private PostgreSQL servers. Where PostgreSQL is not installed, each test
//! prints one `SKIPPED:` line and returns (CI installs it first with
//! scripts/install-postgres.sh; these tests never run apt-get themselves).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use engine_postgres::conn::Conn;
use pgserver::{PgOptions, PgServer};

/// The first column of the first row of `sql`.
fn one<T: for<'a> postgres_types::FromSql<'a>>(c: &mut Conn, sql: &str) -> T {
    let st = c.prepare(sql).unwrap();
    let sent = c.run(&[], &st, &[], None).unwrap();
    sent.first().unwrap().try_get(0).unwrap()
}

/// Env var that turns `child_holds_a_server` on and names its parent directory.
const CHILD_ENV: &str = "PGSERVER_TEST_CHILD_PARENT";
const CHILD_MARKER: &str = "PGSERVER_CHILD";

fn postgres_missing(test: &str) -> bool {
    if pgserver::find_bindir().is_some() {
        return false;
    }
    println!(
        "SKIPPED: {test}: PostgreSQL server binaries not found (run scripts/install-postgres.sh)"
    );
    true
}

/// Small settings: several tests may run servers at once on a shared machine.
fn small_options(parent: Option<PathBuf>) -> PgOptions {
    PgOptions {
        shared_buffers_mb: 32,
        install_if_missing: false,
        parent_dir: parent,
        ..PgOptions::default()
    }
}

/// A fresh parent directory for one test's servers, so sweeps and checks see only
/// that test's directories; removed when dropped, also when the test fails.
struct TestParent(PathBuf);

impl TestParent {
    fn new(name: &str) -> TestParent {
        let dir = std::env::temp_dir().join(format!("pgt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The server may run as the `postgres` user, which must reach its directory.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        TestParent(dir)
    }
}

impl Drop for TestParent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `pid` is a running (not zombie) process.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn wait_not_running(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while running(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

#[test]
fn start_connect_query_and_drop_cleans_up() {
    if postgres_missing("start_connect_query_and_drop_cleans_up") {
        return;
    }
    let server = PgServer::start(&small_options(None)).unwrap();
    let dir = server.dir().to_path_buf();
    let pid = server.pid().expect("a started server has a postmaster");
    assert!(dir.join("data").join("PG_VERSION").exists());
    assert!(
        dir.join(".s.PGSQL.5432").exists(),
        "the Unix socket is in the private directory"
    );
    assert!(
        server.url().contains("dbname=oltpscope"),
        "{}",
        server.url()
    );

    let mut client = Conn::connect(&server.url()).unwrap();
    client
        .batch_execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT NOT NULL)")
        .unwrap();
    for k in 0..10 {
        let st = client.prepare("INSERT INTO t VALUES ($1, $2)").unwrap();
        client.run(&[], &st, &[&k, &format!("v{k}")], None).unwrap();
    }
    let st = client.prepare("SELECT count(*), max(v) FROM t").unwrap();
    let sent = client.run(&[], &st, &[], None).unwrap();
    let row = sent.first().unwrap();
    assert_eq!(row.try_get::<i64>(0).unwrap(), 10);
    assert_eq!(row.try_get::<String>(1).unwrap(), "v9");
    let db: String = one(&mut client, "SELECT current_database()");
    assert_eq!(db, "oltpscope");
    // Durability is measured: the defaults must not relax it.
    let fsync: String = one(&mut client, "SHOW fsync");
    let sync: String = one(&mut client, "SHOW synchronous_commit");
    let listen: String = one(&mut client, "SHOW listen_addresses");
    assert_eq!(
        (fsync.as_str(), sync.as_str(), listen.as_str()),
        ("on", "on", "")
    );
    let max_conn: String = one(&mut client, "SHOW max_connections");
    assert!(max_conn.parse::<u32>().unwrap() >= 64);

    // Dropping with a client still connected: the fast shutdown disconnects it.
    drop(server);
    assert!(!dir.exists(), "{} must be removed", dir.display());
    assert!(!running(pid), "postmaster {pid} must be stopped");
    assert!(client.batch_execute("SELECT 1").is_err());
}

#[test]
fn a_restart_keeps_the_data_and_the_settings() {
    if postgres_missing("a_restart_keeps_the_data_and_the_settings") {
        return;
    }
    let mut opts = small_options(None);
    opts.extra_settings.push(("work_mem".into(), "5MB".into()));
    let mut server = PgServer::start(&opts).unwrap();
    let pid = server.pid().unwrap();
    let mut client = Conn::connect(&server.url()).unwrap();
    client
        .batch_execute(
            "CREATE TABLE t (k INT PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 100)",
        )
        .unwrap();
    // `simulate` restarts under valgrind; here under nothing, the same path.
    server.restart_under(None, Duration::from_secs(60)).unwrap();
    assert!(!running(pid), "the first postmaster {pid} is stopped");
    let new_pid = server.pid().unwrap();
    assert_ne!(pid, new_pid);
    assert!(
        client.batch_execute("SELECT 1").is_err(),
        "connections are cut"
    );
    let mut client = Conn::connect(&server.url()).unwrap();
    let n: i64 = one(&mut client, "SELECT count(*) FROM t");
    assert_eq!(n, 100, "committed rows survive the restart");
    let wm: String = one(&mut client, "SHOW work_mem");
    assert_eq!(wm, "5MB", "the settings are kept");
    let dir = server.dir().to_path_buf();
    drop(server);
    assert!(
        !dir.exists() && !running(new_pid),
        "dropping still stops and removes"
    );
}

#[test]
fn options_reach_the_server_and_a_panic_still_cleans_up() {
    if postgres_missing("options_reach_the_server_and_a_panic_still_cleans_up") {
        return;
    }
    let opts = PgOptions {
        synchronous_commit: pgserver::SynchronousCommit::Off,
        database: "bench_db".into(),
        ..small_options(None)
    };
    let server = PgServer::start(&opts).unwrap();
    let (dir, pid) = (server.dir().to_path_buf(), server.pid().unwrap());
    let mut client = Conn::connect(&server.url()).unwrap();
    let sync: String = one(&mut client, "SHOW synchronous_commit");
    let db: String = one(&mut client, "SELECT current_database()");
    assert_eq!((sync.as_str(), db.as_str()), ("off", "bench_db"));
    drop(client);
    // A run that panics while holding the server: unwinding drops it.
    let unwound = std::panic::catch_unwind(move || {
        let _held = server;
        panic!("a failing run");
    });
    assert!(unwound.is_err());
    assert!(!dir.exists(), "unwinding removes {}", dir.display());
    assert!(!running(pid), "unwinding stops postmaster {pid}");
}

#[test]
fn a_server_that_cannot_start_is_one_line_and_leaves_nothing() {
    if postgres_missing("a_server_that_cannot_start_is_one_line_and_leaves_nothing") {
        return;
    }
    let guard = TestParent::new("badstart");
    let parent = guard.0.clone();
    let opts = PgOptions {
        extra_settings: vec![("no_such_setting_xyz".into(), "1".into())],
        ..small_options(Some(parent.clone()))
    };
    let err = PgServer::start(&opts).unwrap_err();
    assert!(err.starts_with("postgres exited at start"), "{err}");
    assert!(
        err.contains("no_such_setting_xyz"),
        "the log's last lines are quoted: {err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
    let left: Vec<_> = std::fs::read_dir(&parent).unwrap().collect();
    assert!(left.is_empty(), "nothing left behind: {left:?}");
}

/// Not a test on its own: the process the two tests below start and then signal.
#[test]
#[ignore = "helper process for the signal tests; runs only when they start it"]
fn child_holds_a_server() {
    let parent = std::env::var(CHILD_ENV).expect("started by a signal test");
    let server = PgServer::start(&small_options(Some(parent.into()))).unwrap();
    println!(
        "{CHILD_MARKER} {} {}",
        server.pid().unwrap(),
        server.dir().display()
    );
    // Waits to be signalled; the bound only keeps a forgotten child from living on.
    std::thread::sleep(Duration::from_secs(120));
}

/// Starts `child_holds_a_server` in a new process and returns it with its server's
/// postmaster pid and directory.
fn start_child(parent: &Path) -> (std::process::Child, u32, PathBuf) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holds_a_server",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, parent)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        // The harness's "test child_holds_a_server ... " may precede it on the line.
        if let Some((_, rest)) = line.split_once(CHILD_MARKER) {
            let (pid, dir) = rest.trim().split_once(' ').unwrap();
            return (child, pid.parse().unwrap(), PathBuf::from(dir));
        }
    }
    let status = child.wait().unwrap();
    panic!("the child process ended ({status}) without starting a server");
}

#[test]
fn sigterm_stops_the_server_and_removes_its_directory() {
    if postgres_missing("sigterm_stops_the_server_and_removes_its_directory") {
        return;
    }
    let guard = TestParent::new("sigterm");
    let parent = guard.0.clone();
    let (mut child, pid, dir) = start_child(&parent);
    assert!(running(pid) && dir.exists());
    // SAFETY: signalling our own unreaped child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    let (dir_gone, pid_gone) = (!dir.exists(), wait_not_running(pid, Duration::from_secs(5)));
    assert_eq!(
        status.signal(),
        Some(libc::SIGTERM),
        "dies of the signal: {status}"
    );
    assert!(dir_gone, "the signal path removes {}", dir.display());
    assert!(pid_gone, "the signal path stops postmaster {pid}");
}

#[test]
fn kill_9_stops_the_server_and_the_next_start_removes_its_directory() {
    if postgres_missing("kill_9_stops_the_server_and_the_next_start_removes_its_directory") {
        return;
    }
    let guard = TestParent::new("kill9");
    let parent = guard.0.clone();
    let (mut child, pid, dir) = start_child(&parent);
    child.kill().unwrap();
    child.wait().unwrap();
    // The parent-death signal (SIGQUIT) ends the postmaster without any help.
    let pid_gone = wait_not_running(pid, Duration::from_secs(10));
    let dir_left = dir.exists();
    let server = PgServer::start(&small_options(Some(parent.clone()))).unwrap();
    let dir_swept = !dir.exists();
    server.stop().unwrap();
    assert!(pid_gone, "postmaster {pid} outlived its killed parent");
    assert!(dir_left, "SIGKILL leaves the directory for the next start");
    assert!(dir_swept, "the next start removes {}", dir.display());
}

/// Env var that turns `child_holds_a_kept_server` on: the kept cluster's directory and
/// the parent of its socket directory, separated by a newline.
const KEPT_CHILD_ENV: &str = "PGSERVER_TEST_KEPT_CHILD";

fn kept<'a>(dir: &'a Path, create: bool) -> pgserver::Kept<'a> {
    pgserver::Kept {
        dir,
        label: "the test's table t",
        create,
        reload: false,
    }
}

/// Not a test on its own: the process `kill_9_leaves_a_kept_cluster_to_crash_recovery`
/// starts and kills, holding a server on a kept cluster with 100 committed rows.
#[test]
#[ignore = "helper process for the kept-cluster kill test; runs only when it starts it"]
fn child_holds_a_kept_server() {
    let env = std::env::var(KEPT_CHILD_ENV).expect("started by the kill test");
    let (dir, parent) = env.split_once('\n').unwrap();
    let opts = small_options(Some(parent.into()));
    let (server, had) = PgServer::start_kept(&opts, &kept(Path::new(dir), true)).unwrap();
    assert!(!had, "a fresh cluster");
    let mut c = Conn::connect(&server.url()).unwrap();
    c.batch_execute(
        "CREATE TABLE t (k INT PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 100); CHECKPOINT",
    )
    .unwrap();
    server.mark_loaded().unwrap();
    // Committed after the checkpoint: only the WAL has it when the process is killed.
    c.batch_execute("INSERT INTO t VALUES (101)").unwrap();
    println!(
        "{CHILD_MARKER} {} {}",
        server.pid().unwrap(),
        server.dir().display()
    );
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn kill_9_leaves_a_kept_cluster_to_crash_recovery() {
    if postgres_missing("kill_9_leaves_a_kept_cluster_to_crash_recovery") {
        return;
    }
    let guard = TestParent::new("keptkill");
    let parent = guard.0.join("sockets");
    let cluster = guard.0.join("cluster");
    std::fs::create_dir_all(&parent).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holds_a_kept_server",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            KEPT_CHILD_ENV,
            format!("{}\n{}", cluster.display(), parent.display()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut started = None;
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some((_, rest)) = line.split_once(CHILD_MARKER) {
            let (pid, dir) = rest.trim().split_once(' ').unwrap();
            started = Some((pid.parse::<u32>().unwrap(), PathBuf::from(dir)));
            break;
        }
    }
    let (pid, sockets) = started.expect("the child started a server on the kept cluster");
    assert!(
        sockets.starts_with(&parent) && !sockets.starts_with(&cluster),
        "the socket is apart from the cluster"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let pid_gone = wait_not_running(pid, Duration::from_secs(10));
    let sockets_left = sockets.exists();
    // The next start sweeps the dead process's socket directory, never the cluster,
    // and PostgreSQL recovers the cluster from its WAL.
    let opts = small_options(Some(parent.clone()));
    let started = PgServer::start_kept(&opts, &kept(&cluster, false));
    let sockets_swept = !sockets.exists();
    let (server, had) = started.unwrap();
    assert!(pid_gone, "postmaster {pid} outlived its killed parent");
    assert!(sockets_left, "SIGKILL leaves the socket directory");
    assert!(
        sockets_swept,
        "the next start removes {}",
        sockets.display()
    );
    assert!(had, "the cluster holds its load");
    let mut c = Conn::connect(&server.url()).unwrap();
    let n: i64 = one(&mut c, "SELECT count(*) FROM t");
    assert_eq!(
        n, 101,
        "every committed row, the one after the checkpoint too"
    );
    drop(c);
    let data = server.data_dir().to_path_buf();
    server.stop().unwrap();
    assert!(
        data.join("PG_VERSION").is_file(),
        "stopping keeps the cluster"
    );
    let log = std::fs::read_to_string(cluster.join(pgserver::kept::LOG)).unwrap();
    assert!(
        log.contains("not properly shut down") || log.contains("automatic recovery"),
        "the second start recovered: {log}"
    );
}
