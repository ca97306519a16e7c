use crate::common;
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

/// Transfers between random accounts plus inserts/deletes of a side table, with a pool of
/// 64 pages (so pages are evicted and re-read under concurrency); concurrent
/// scans must always see the same total.
#[test]
fn transfers_keep_the_total_with_a_small_pool() {
    let dir = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(N), &opts(dir.path(), LogMode::Async, Some(64))).unwrap();
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

/// Next-key locking: a transaction that scans a range twice sees the same rows both
/// times while other threads insert into and delete from that range.
#[test]
fn repeated_scans_see_no_phantoms() {
    let dir = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(N), &opts(dir.path(), LogMode::Off, Some(300))).unwrap();
    {
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            for i in (0..2000u64).step_by(10) {
                s.insert(PLAIN, &key(i), &[0u8; 100])?;
            }
            Ok(())
        })
        .unwrap();
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        for t in 0..2u64 {
            let (e, stop) = (&e, &stop);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(1 + t as usize));
                let mut x = t + 3;
                while !stop.load(Ordering::Relaxed) {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let k = (x >> 33) % 2000;
                    let _ = s.run_retry(0, 1000, |s| {
                        if !s.delete(PLAIN, &key(k))? {
                            match s.insert(PLAIN, &key(k), &[1u8; 100]) {
                                Err(Error::Duplicate) => {}
                                r => r?,
                            }
                        }
                        Ok(())
                    });
                }
            });
        }
        let (e, stop) = (&e, &stop);
        sc.spawn(move || {
            // Stop the mutators even if this thread panics.
            struct StopOnDrop<'a>(&'a AtomicBool);
            impl Drop for StopOnDrop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _stop = StopOnDrop(stop);
            let mut s = Session::new(e.worker(5));
            for round in 0..60u64 {
                let lo = key(round * 30 % 1800);
                let hi = key(round * 30 % 1800 + 150);
                let dir = if round % 2 == 0 {
                    Dir::Forward
                } else {
                    Dir::Backward
                };
                s.run_retry(1, 1000, |s| {
                    let mut a = vec![];
                    s.scan(
                        PLAIN.primary(),
                        Bound::Included(&lo),
                        Bound::Excluded(&hi),
                        dir,
                        usize::MAX,
                        |k, _| {
                            a.push(k.to_vec());
                            true
                        },
                    )?;
                    std::thread::yield_now();
                    let mut b = vec![];
                    s.scan(
                        PLAIN.primary(),
                        Bound::Included(&lo),
                        Bound::Excluded(&hi),
                        dir,
                        usize::MAX,
                        |k, _| {
                            b.push(k.to_vec());
                            true
                        },
                    )?;
                    assert_eq!(a, b, "phantom in round {round}");
                    Ok(())
                })
                .unwrap();
            }
        });
    });
}

/// An analytical query's request (`read_only_committed`): a scan gives its read locks
/// back row by row, so a writer does not wait for the reading transaction's end; the
/// read-committed hint TPC-C's Stock-Level gives changes nothing (the scan's 3,000 row
/// locks escalate to a table S lock held to its end, and the writer waits for it); and a
/// short read waits for a writer's uncommitted row instead of reading it (no dirty read).
#[test]
fn short_read_scans_hold_no_row_locks_and_read_no_dirty_rows() {
    let dir = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(N), &opts(dir.path(), LogMode::Async, None)).unwrap();
    load(&e);
    // Whether a writer on another worker updating a row the open reader read commits
    // within `wait` (the reader commits after, letting a waiting writer finish).
    let writer_passes = |r: &mut Session<_>, wait: std::time::Duration| -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut w = Session::new(e.worker(1));
                w.run_retry(0, 100, |s| {
                    s.update_row::<[u8; 24]>(ACC, &key(5), |r| *r = row(bal(r) + 1, 5))
                })
                .unwrap();
                tx.send(()).unwrap();
            });
            let passed = rx.recv_timeout(wait).is_ok();
            r.commit().unwrap();
            passed
        })
    };
    let mut r = Session::new(e.worker(0));
    r.begin(0).unwrap();
    r.read_committed();
    assert_eq!(total(&mut r).unwrap(), (1000 * N as i64, N as usize));
    assert!(
        !writer_passes(&mut r, std::time::Duration::from_millis(300)),
        "Stock-Level's hint let a writer past the scan's locks"
    );
    r.begin(0).unwrap();
    r.read_only_committed();
    assert_eq!(total(&mut r).unwrap(), (1000 * N as i64 + 1, N as usize));
    assert!(
        writer_passes(&mut r, std::time::Duration::from_secs(20)),
        "the writer waited for the short-read scan's transaction"
    );
    // A writer's uncommitted update, then its abort: a short-read reader meanwhile
    // waits for the row's lock, and reads the committed balance, never the update's.
    let mut w = Session::new(e.worker(1));
    w.begin(0).unwrap();
    w.update_row::<[u8; 24]>(ACC, &key(7), |r| *r = row(-1, 7))
        .unwrap();
    std::thread::scope(|sc| {
        let reader = sc.spawn(|| {
            let mut r = Session::new(e.worker(2));
            r.run_retry(0, 100, |s| {
                s.read_only_committed();
                let mut b = None;
                s.get(ACC, &key(7), |row| b = Some(bal(row)))?;
                Ok(b)
            })
            .unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        w.abort();
        assert_eq!(reader.join().unwrap(), Some(1000));
    });
}
