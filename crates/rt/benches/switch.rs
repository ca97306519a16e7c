//! The cost of one switch at an interleaving point (`rt::prefetch_point` under
//! `rt::coro::Policy::Interleave`): N coroutines on one thread, each reaching M probe
//! points on a line already in cache, so the time is the switch alone. Also the cost of a
//! probe point with no scheduler (the `--interleave 1` path). Run: `cargo bench -p rt`.

use std::hint::black_box;
use std::time::Instant;

fn main() {
    const POINTS: u64 = 2_000_000;
    let line = 0u64;
    // No scheduler: a prefetch, a thread-local load and a branch.
    let t = Instant::now();
    for _ in 0..POINTS * 8 {
        rt::prefetch_point(black_box(&line));
    }
    let alone_ns = t.elapsed().as_nanos() as f64 / (POINTS * 8) as f64;
    println!("probe point, no scheduler: {alone_ns:.2} ns");
    for n in [2usize, 4, 8, 16] {
        let per = POINTS / n as u64;
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..n)
            .map(|_| {
                let line = &line;
                Box::new(move || {
                    for _ in 0..per {
                        rt::prefetch_point(black_box(line));
                    }
                }) as Box<dyn FnOnce() + '_>
            })
            .collect();
        let t = Instant::now();
        let st = rt::coro::run(rt::coro::Policy::INTERLEAVE, bodies);
        let ns = t.elapsed().as_nanos() as f64 / st.probe_switches as f64;
        println!(
            "interleave {n:>2}: {ns:.1} ns per switch ({} switches)",
            st.probe_switches
        );
    }
}
