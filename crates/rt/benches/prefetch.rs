//! What a software prefetch costs the thread that issues it, by the size of the region
//! it prefetches in: the ceiling of `--interleave` on a machine. Each iteration draws a
//! random line, prefetches it (or not, or loads it) and then does independent work of
//! about W ns. If the prefetch only started a miss, "+prefetch" stays near "work": the
//! miss overlaps the work, as interleaving needs. Where it is far above, the prefetch
//! held the core, typically while its page walk completed (a prefetch cannot retire
//! before its address is translated), so the walk is not hidden by switching
//! coroutines. "+8 at once" issues eight such prefetches back to back, then does the
//! eight iterations' work (what `--interleave-group 8` does with eight transactions'
//! probes): where it is below "+prefetch", the walks overlap each other when issued
//! together. Run: `cargo bench -p rt --bench prefetch [-- 4k]` (default: regions on
//! transparent huge pages).

use std::hint::black_box;
use std::time::Instant;

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[inline(never)]
fn work(n: u32, acc: &mut u64) {
    let mut a = *acc;
    for i in 0..n {
        a = a
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(i as u64);
    }
    *acc = a;
}

fn main() {
    let small_pages = std::env::args().any(|a| a == "4k");
    let iters = 1_000_000u64;
    for mb in [64usize, 256, 1024, 4096] {
        let bytes = mb << 20;
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED, "mmap {mb} MB");
        let p = p as *mut u8;
        let advice = if small_pages {
            libc::MADV_NOHUGEPAGE
        } else {
            libc::MADV_HUGEPAGE
        };
        // SAFETY: the range is the mapping's.
        unsafe { libc::madvise(p as *mut _, bytes, advice) };
        for off in (0..bytes).step_by(4096) {
            // SAFETY: inside the mapping.
            unsafe { *p.add(off) = 1 };
        }
        let lines = bytes / 64;
        for w in [0u32, 20, 80, 320] {
            let (mut x, mut acc) = (0x9e37_79b9_7f4a_7c15u64, 0u64);
            let time = |f: &mut dyn FnMut()| {
                let t = Instant::now();
                for _ in 0..iters {
                    f();
                }
                t.elapsed().as_nanos() as f64 / iters as f64
            };
            let base = time(&mut || {
                black_box(next(&mut x) as usize % lines);
                work(w, &mut acc);
            });
            let pf = time(&mut || {
                let r = next(&mut x) as usize % lines;
                // SAFETY: inside the mapping (and a prefetch never faults anyway).
                rt::prefetch(unsafe { p.add(r * 64) });
                work(w, &mut acc);
            });
            // Eight prefetches, then eight iterations' work: timed per iteration.
            let grouped = time(&mut || {
                for _ in 0..8 {
                    let r = next(&mut x) as usize % lines;
                    // SAFETY: as above.
                    rt::prefetch(unsafe { p.add(r * 64) });
                }
                for _ in 0..8 {
                    work(w, &mut acc);
                }
            }) / 8.0;
            let mut sum = 0u64;
            let ld = time(&mut || {
                let r = next(&mut x) as usize % lines;
                // SAFETY: inside the mapping.
                sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(p.add(r * 64)) } as u64);
                work(w, &mut acc);
            });
            black_box((acc, sum));
            println!(
                "{} pages, {mb:>5} MB, work {w:>3}: work {base:6.1} ns   +prefetch {pf:6.1} ns   +8 at once {grouped:6.1} ns   +load {ld:6.1} ns",
                if small_pages { "4 KiB" } else { "huge" }
            );
        }
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(p as *mut _, bytes) };
    }
}
