//! The workers' own protocol client (`conn`) logs in with a password as well as through
//! trust: md5 and SCRAM-SHA-256 roles on a private server whose `pg_hba.conf` asks for
//! them, a micro-benchmark run through each, and a wrong password refused in one line. Where
//! PostgreSQL cannot be started, one `SKIPPED: ...` line.

use api::IndexKind;
use driver::RunConfig;
use engine_postgres::{Isolation, PostgresEngine, PostgresOptions};
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};

/// A short one-worker run through `url` (read committed, no WAL wait).
fn run_config(url: String) -> RunConfig {
    let own = PostgresOptions {
        isolation: Isolation::ReadCommitted,
        url: Some(url),
        copy_load: true,
        synchronous_commit: false,
        batch_inserts: true,
        defer_updates: true,
        prewarm: false,
    };
    crate::postgres::cfg(1, own)
}

#[test]
fn password_logins_md5_and_scram() {
    let server = match pgserver::PgServer::start(&pgserver::PgOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            skipped!("PostgreSQL cannot be started here: {e}");
            return;
        }
    };
    let mut admin = engine_postgres::conn::Conn::connect(&server.url()).unwrap();
    admin
        .batch_execute(
            "SET password_encryption = 'md5';
             CREATE ROLE u_md5 LOGIN SUPERUSER PASSWORD 'pw-md5';
             SET password_encryption = 'scram-sha-256';
             CREATE ROLE u_scram LOGIN SUPERUSER PASSWORD 'pw-scram';",
        )
        .unwrap();
    // Rewritten in place (owner and mode kept), then reloaded: the superuser the test
    // connects as keeps trust, the two roles must give their passwords.
    let hba = server.dir().join("data").join("pg_hba.conf");
    std::fs::write(
        &hba,
        "local all u_md5 md5\nlocal all u_scram scram-sha-256\nlocal all all trust\n",
    )
    .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    let as_user = |user: &str, pw: &str| {
        let url = server.url();
        assert!(url.contains("user=oltpscope"), "{url}");
        url.replace("user=oltpscope", &format!("user={user} password={pw}"))
    };
    // The postmaster reloads on a signal, after the call returns: wait until a wrong
    // password is refused, so that every login below goes through the new rules.
    let t0 = std::time::Instant::now();
    while engine_postgres::conn::Conn::connect(&as_user("u_md5", "wrong")).is_ok() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "pg_hba.conf never reloaded"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A small micro-benchmark: what is tested is the login, not the load.
    let wl = Micro::new(MicroConfig {
        keys: 1_000,
        rows_per_txn: 4,
        mode: Mode::Update,
        columns: Columns::String,
        distribution: Distribution::Uniform,
        index: IndexKind::BTree,
    })
    .unwrap();
    for (user, pw) in [("u_md5", "pw-md5"), ("u_scram", "pw-scram")] {
        let r = driver::run::<PostgresEngine, _>(&wl, &run_config(as_user(user, pw)))
            .unwrap_or_else(|e| panic!("micro as {user}: {e}"));
        assert!(
            r.committed > 0 && r.checks.passed,
            "as {user}: {:#?}",
            r.checks
        );
    }
    for (user, pw) in [("u_md5", "wrong"), ("u_scram", "wrong")] {
        let err = match driver::run::<PostgresEngine, _>(&wl, &run_config(as_user(user, pw))) {
            Ok(_) => panic!("{user} logged in with a wrong password"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains("password") && !err.contains('\n'),
            "{user}, wrong password: {err}"
        );
    }
}
