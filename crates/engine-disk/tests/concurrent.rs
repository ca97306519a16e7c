mod common;
use api::{Dir, Engine, Error, LogMode, Session, TableId};
use common::*;
use engine_disk::DiskEngine;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const ACC: TableId = TableId(0);
const PLAIN: TableId = TableId(1);
const N: u64 = 3000;

fn load(e: &DiskEngine) {
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    for i in 0..N {
        s.insert(ACC, &key(i), &row(1000, (i % 10) as u32)).unwrap();
    }
    s.commit().unwrap();
}

fn total(s: &mut Session<engine_disk::DiskWorker<'_>>) -> Result<(i64, usize), Error> {
    let mut sum = 0;
    let n = s.scan(
        ACC.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        Dir::Forward,
        usize::MAX,
        |_, r| {
            sum += bal(r);
            true
        },
    )?;
    Ok((sum, n))
}

/// Transfers between random accounts plus inserts/deletes of a side table, with a pool of
/// a few hundred pages (so pages are evicted and re-read under concurrency); concurrent
/// scans must always see the same total.
#[test]
fn transfers_keep_the_total_with_a_small_pool() {
    let dir = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(N), &opts(dir.path(), LogMode::Async, Some(200))).unwrap();
    load(&e);
    let done = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    std::thread::scope(|sc| {
        for t in 0..3u64 {
            let (e, commits) = (&e, &commits);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(t as usize));
                let mut x = t * 7919 + 1;
                for i in 0..300 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let (a, b) = ((x >> 33) % N, (x >> 13) % N);
                    let amt = (x % 50) as i64;
                    let side = t * 100_000 + i;
                    s.run_retry(0, 1000, |s| {
                        s.update_row::<[u8; 24]>(ACC, &key(a), |r| {
                            *r = row(bal(r) - amt, (a % 10) as u32)
                        })?;
                        s.update_row::<[u8; 24]>(ACC, &key(b), |r| {
                            *r = row(bal(r) + amt, (b % 10) as u32)
                        })?;
                        s.insert(PLAIN, &key(side), &[7u8; 100])?;
                        if i % 3 == 0 {
                            s.delete(PLAIN, &key(side))?;
                        }
                        Ok(())
                    })
                    .unwrap();
                    commits.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let (e, done) = (&e, &done);
        sc.spawn(move || {
            let mut s = Session::new(e.worker(9));
            let mut checks = 0;
            while !done.load(Ordering::Relaxed) && checks < 20 {
                let r = s.run_retry(1, 1000, total);
                let (sum, n) = r.unwrap();
                assert_eq!(
                    (sum, n),
                    (1000 * N as i64, N as usize),
                    "scan saw a partial transfer"
                );
                checks += 1;
            }
        });
    });
    done.store(true, Ordering::Relaxed);
    let mut s = Session::new(e.worker(0));
    let (sum, _) = s.run(1, total).unwrap();
    assert_eq!(sum, 1000 * N as i64);
    let side = s
        .run(1, |s| {
            s.scan(
                PLAIN.primary(),
                Bound::Unbounded,
                Bound::Unbounded,
                Dir::Forward,
                usize::MAX,
                |_, _| true,
            )
        })
        .unwrap();
    assert_eq!(side, 3 * 200);
    let st = e.stats();
    assert!(
        st["evictions"].as_u64().unwrap() > 0,
        "pool must have evicted: {st}"
    );
    assert_eq!(commits.load(Ordering::Relaxed), 900);
}
