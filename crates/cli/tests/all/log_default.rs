//! `run --no-load` on an in-memory engine's database needs no `--log`: the database
//! keeps logging as it was loaded (async), and the commits of such a run survive into
//! the next one. An explicit `--log off` is still refused (nothing would be kept), and
//! the disk engine's default is unchanged.

use crate::common;
use common::oltpscope;

fn committed(json: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["committed"].as_u64().unwrap()
}

#[test]
fn in_memory_databases_keep_logging_without_log() {
    for engine in ["memory", "mvcc", "partitioned"] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let db = db.to_str().unwrap();
        let (code, out, err) = oltpscope(&["load", "tpcb", "--engine", engine, "--db", db]);
        assert_eq!(code, 0, "{engine} load: {out}{err}");
        let run = |extra: &[&str]| {
            let mut a = vec![
                "run",
                "tpcb",
                "--db",
                db,
                "--no-load",
                "--txns",
                "200",
                "--warmup",
                "0",
                "--json",
                "-",
            ];
            a.extend_from_slice(extra);
            oltpscope(&a)
        };
        let acked = dir.path().join("acked");
        let acked = acked.to_str().unwrap();
        let (code, out, err) = run(&["--acked-file", acked]);
        assert_eq!(code, 0, "{engine}: run --no-load without --log: {err}");
        assert_eq!(committed(&out), 200, "{engine}");
        // Every commit the run acknowledged is in the database it left: it was logged.
        let (code, out, err) = oltpscope(&["check", "tpcb", "--db", db, "--acked-file", acked]);
        assert_eq!(code, 0, "{engine}: check after the run: {out}{err}");
        let (code, _, err) = run(&["--log", "off"]);
        assert_eq!(code, 2, "{engine}: --log off on a kept database: {err}");
        assert!(err.contains("--log async or --log sync"), "{engine}: {err}");
    }
}
