//! A new database's load (issue 41, session 70): not logged and without torn-page
//! protection until `load_done`, which makes every page durable before it marks the
//! database ready; from then on the session logs in its own mode and writes through the
//! double-write file. A load cut short is refused, never recovered.

use crate::common;
use api::{Engine, LogMode, Session};
use common::*;
use engine_disk::DiskEngine;
use std::path::Path;

const ACC: api::TableId = api::TableId(0);
const N: u64 = 20_000;

/// Load `N` accounts in transactions of 500 (a 100-page pool: pages are evicted and
/// cleaned while loading).
fn load_rows(e: &DiskEngine) {
    let mut s = Session::new(e.worker(0));
    for lo in (0..N).step_by(500) {
        s.run(0, |s| {
            for i in lo..lo + 500 {
                s.insert(ACC, &key(i), &row(100, (i % 7) as u32))?;
            }
            Ok(())
        })
        .unwrap();
        if lo % 5000 == 0 {
            e.clean_now().unwrap();
        }
    }
}

fn flushes(e: &DiskEngine) -> u64 {
    e.stats()["log_flushes"].as_u64().unwrap()
}

fn dw_bytes(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("dw")).unwrap()
}

#[test]
fn a_load_writes_no_log_and_no_double_write_then_the_session_logs() {
    for mode in [LogMode::Sync, LogMode::Async] {
        let d = tempfile::tempdir().unwrap();
        let e = DiskEngine::open(schema(N), &opts(d.path(), mode, Some(100))).unwrap();
        let dw_at_creation = dw_bytes(d.path());
        load_rows(&e);
        assert!(e.stats()["evictions"].as_u64().unwrap() > 0, "{mode:?}");
        assert_eq!(flushes(&e), 0, "{mode:?}: the load's records were written");
        assert_eq!(
            dw_bytes(d.path()),
            dw_at_creation,
            "{mode:?}: a loading page went through the double-write file"
        );
        e.load_done().unwrap();
        // From here on: logged, and page writes protected.
        let mut s = Session::new(e.worker(0));
        for i in 0..50u64 {
            s.run(0, |s| {
                s.update_row::<[u8; 24]>(ACC, &key(i * 37 % N), |r| {
                    *r = row(bal(r) + 1, (i * 37 % N % 7) as u32)
                })
                .map(|_| ())
            })
            .unwrap();
        }
        e.inner().log.flush_to(e.inner().log.next_lsn()).unwrap();
        assert!(flushes(&e) > 0, "{mode:?}: the session logs nothing");
        e.clean_now().unwrap();
        assert_ne!(
            dw_bytes(d.path()),
            dw_at_creation,
            "{mode:?}: a page written after the load bypassed the double-write file"
        );
        drop(s);
        e.crash();
        // Every loaded row and every update durable in the log comes back.
        let e = DiskEngine::open(schema(N), &opts(d.path(), mode, Some(100))).unwrap();
        assert!(e.has_data());
        let mut s = Session::new(e.worker(0));
        s.begin(0).unwrap();
        let (sum, n) = total(&mut s).unwrap();
        assert_eq!((n as u64, sum), (N, 100 * N as i64 + 50), "{mode:?}");
        s.commit().unwrap();
    }
}

#[test]
fn a_load_cut_short_is_refused_even_after_pages_reached_the_disk() {
    let d = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(N), &opts(d.path(), LogMode::Sync, Some(100))).unwrap();
    load_rows(&e);
    e.checkpoint().unwrap();
    e.crash();
    let err = DiskEngine::open(schema(N), &opts(d.path(), LogMode::Sync, Some(100)))
        .err()
        .expect("a database whose load did not finish was opened");
    assert!(err.to_string().contains("the load did not finish"), "{err}");
    // --reload starts over.
    let mut o = opts(d.path(), LogMode::Sync, Some(100));
    o.reload = true;
    let e = DiskEngine::open(schema(N), &o).unwrap();
    assert!(!e.has_data());
    load_rows(&e);
    e.load_done().unwrap();
    e.shutdown().unwrap();
    let e = DiskEngine::open(schema(N), &opts(d.path(), LogMode::Sync, Some(100))).unwrap();
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    assert_eq!(total(&mut s).unwrap(), (100 * N as i64, N as usize));
    s.commit().unwrap();
}
