//! `--pg-url` as libpq reads it: both forms, lists of hosts and ports, quoting and
//! percent-encoding, and the refusals (no server needed).

use engine_postgres::conninfo::{parse, Host};
use std::path::PathBuf;
use std::time::Duration;

#[test]
fn keyword_value_strings_with_quotes_and_escapes() {
    // A backslash escapes outside quotes too.
    let c = parse("host=/tmp/pg\\ dir").unwrap();
    assert_eq!(c.hosts, vec![Host::Unix(PathBuf::from("/tmp/pg dir"))]);
    let c =
        parse("host='/tmp/pg dir' port=5433 user=bob password='a \\'pw\\'' dbname=bench").unwrap();
    assert_eq!(c.hosts, vec![Host::Unix(PathBuf::from("/tmp/pg dir"))]);
    assert_eq!(c.port(0), 5433);
    assert_eq!(c.user.as_deref(), Some("bob"));
    assert_eq!(c.password.as_deref(), Some("a 'pw'"));
    assert_eq!(c.dbname.as_deref(), Some("bench"));
    let c = parse("host = localhost  port= 6000 connect_timeout=3").unwrap();
    assert_eq!(c.hosts, vec![Host::Tcp("localhost".into())]);
    assert_eq!(c.port(0), 6000);
    assert_eq!(c.connect_timeout, Some(Duration::from_secs(3)));
    assert_eq!(parse("").unwrap().hosts, vec![]);
}

#[test]
fn uris_with_user_hosts_ports_database_and_parameters() {
    let c = parse(
        "postgresql://u:p%40ss@db1:5001,[::1]:5002,db3/my%20db?sslmode=disable&application_name=a",
    )
    .unwrap();
    assert_eq!(c.user.as_deref(), Some("u"));
    assert_eq!(c.password.as_deref(), Some("p@ss"));
    assert_eq!(
        c.hosts,
        vec![
            Host::Tcp("db1".into()),
            Host::Tcp("::1".into()),
            Host::Tcp("db3".into())
        ]
    );
    assert_eq!((c.port(0), c.port(1), c.port(2)), (5001, 5002, 5432));
    assert_eq!(c.dbname.as_deref(), Some("my db"));
    assert_eq!(c.application_name.as_deref(), Some("a"));
    // A socket directory as the host, percent-encoded or as a parameter.
    let c = parse("postgres://%2Fvar%2Frun%2Fpostgresql/x").unwrap();
    assert_eq!(c.hosts, vec![Host::Unix("/var/run/postgresql".into())]);
    let c = parse("postgres:///x?host=/tmp&port=5440").unwrap();
    assert_eq!(c.hosts, vec![Host::Unix("/tmp".into())]);
    assert_eq!(c.port(0), 5440);
    // One port for every host.
    let c = parse("host=a,b port=7000").unwrap();
    assert_eq!((c.port(0), c.port(1)), (7000, 7000));
}

#[test]
fn what_cannot_be_honoured_is_refused_by_name() {
    for (s, says) in [
        ("host=/tmp sslmode=require", "no TLS"),
        ("postgres://h/d?sslmode=verify-full", "no TLS"),
        ("host=/tmp sslmode=sometimes", "sslmode"),
        ("host=/tmp target_session_attrs=any", "target_session_attrs"),
        ("host=/tmp port=x", "port"),
        ("host=/tmp port=0", "port"),
        ("host=a,b,c port=1,2", "ports"),
        ("host=/tmp password='open", "quote"),
        ("host", "no value"),
        ("postgres://h/d?k", "no value"),
        ("postgres://[::1/d", "not closed"),
        ("postgres://h/%zz", "hex"),
        ("connect_timeout=soon", "seconds"),
    ] {
        let e = parse(s).expect_err(s);
        assert!(e.contains(says), "{s}: {e}");
    }
}
