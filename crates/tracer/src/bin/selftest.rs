//! Target program of the tracer's end-to-end tests (tests/trace.rs): each mode does a
//! known piece of work between probe markers, so the test can check the trace.
//! Usage: tracer-selftest markers|buffer|threads|roles|count

use probe::Op;

#[path = "../clmul.rs"]
mod clmul;
use std::hint::black_box;

#[inline(never)] // a symbol of its own: the tests find it through the MAP bias
fn work(n: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(black_box(i));
    }
    x
}

fn markers() {
    black_box(work(1000)); // not traced: before the first start
    probe::tracing_start();
    probe::txn_begin(11);
    {
        let _g = probe::op(Op::IndexProbe);
        black_box(work(100));
    }
    {
        let _g = probe::op(Op::Insert);
        black_box(work(100));
    }
    probe::txn_end(11, true);
    probe::tracing_stop();
    black_box(work(1000)); // not traced
    probe::txn_begin(98); // not traced: markers only while tracing
    probe::tracing_start();
    {
        let _g = probe::op(Op::Delete);
        black_box(work(10));
    }
    probe::tracing_stop();
    probe::txn_end(99, true); // not traced
    black_box(work(1000));
}

/// Known accesses to a page-aligned buffer; prints its address after tracing stops.
fn buffer() {
    #[repr(C, align(4096))]
    struct Page([u8; 4096]);
    let mut page = Box::new(Page([0; 4096]));
    let p = page.0.as_mut_ptr();
    probe::tracing_start();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: every access is inside the 4096-byte page (fxsave at 128 writes 512 bytes,
    // 16-byte aligned; rep movsb copies 100 bytes from 512 to 1024).
    unsafe {
        std::arch::asm!(
            "mov byte ptr [{p} + 1], 7",
            "mov word ptr [{p} + 2], 7",
            "mov dword ptr [{p} + 4], 7",
            "mov qword ptr [{p} + 8], 7",
            "mov {t:e}, dword ptr [{p} + 4]",
            "movups xmmword ptr [{p} + 32], xmm0",
            "add qword ptr [{p} + 48], 1",
            "lock xadd qword ptr [{p} + 56], {t}",
            "fxsave [{p} + 128]",
            "lea rsi, [{p} + 512]",
            "lea rdi, [{p} + 1024]",
            "mov rcx, 100",
            "rep movsb",
            p = in(reg) p,
            t = out(reg) _,
            out("xmm0") _,
            out("rsi") _,
            out("rdi") _,
            out("rcx") _,
        );
    }
    probe::tracing_stop();
    black_box(&page);
    println!("buffer {:#x}", p as usize);
}

fn threads() {
    probe::tracing_start();
    // Both workers live at once, so valgrind gives them distinct thread ids (2 and 3, in
    // creation order; an exited thread's id is reused).
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = (0..2u32)
        .map(|i| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                probe::txn_begin(100 + i);
                let r = work(20_000);
                probe::txn_end(100 + i, true);
                r
            })
        })
        .collect();
    for h in handles {
        black_box(h.join().expect("worker thread panicked"));
    }
    probe::tracing_stop();
}

/// Roles declared before tracing (the main thread, a "cleaner" already running) and
/// while tracing (a worker started after TRACE_START).
fn roles() {
    probe::thread_role(probe::Role::Main);
    let declared = std::sync::Arc::new(std::sync::Barrier::new(2));
    let go = std::sync::Arc::new(std::sync::Barrier::new(2));
    let cleaner = {
        let (declared, go) = (declared.clone(), go.clone());
        std::thread::spawn(move || {
            probe::thread_role(probe::Role::PageCleaner);
            declared.wait();
            go.wait(); // tracing has started
            work(5_000)
        })
    };
    declared.wait();
    probe::tracing_start();
    go.wait();
    black_box(cleaner.join().expect("cleaner thread panicked"));
    let worker = std::thread::spawn(|| {
        probe::thread_role(probe::Role::Worker);
        probe::txn_begin(7);
        let r = work(5_000);
        probe::txn_end(7, true);
        r
    });
    black_box(worker.join().expect("worker thread panicked"));
    black_box(work(100));
    probe::tracing_stop();
}

/// Carry-less products and CRC-32C steps of fixed inputs with the host's instructions
/// (which VEX emulates and the tool runs natively: both must give these values; the
/// test computes them natively). Prints one line of numbers, or "unsupported".
fn clmul() {
    #[cfg(target_arch = "x86_64")]
    {
        if !(std::is_x86_feature_detected!("pclmulqdq") && std::is_x86_feature_detected!("sse4.2"))
        {
            println!("unsupported");
            return;
        }
        // SAFETY: both features were detected just above.
        let v = unsafe { clmul::clmul_values() };
        let line: Vec<String> = v.iter().map(u64::to_string).collect();
        println!("{}", line.join(" "));
    }
    #[cfg(not(target_arch = "x86_64"))]
    println!("unsupported");
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    // The tests always run this under valgrind: checks the core request's answer path.
    if !probe::running_on_valgrind() {
        eprintln!("tracer-selftest: probe::running_on_valgrind() is false");
        std::process::exit(3);
    }
    match mode.as_str() {
        "markers" => markers(),
        "buffer" => buffer(),
        "threads" => threads(),
        "roles" => roles(),
        "count" => println!("{}", work(50_000)),
        "clmul" => clmul(),
        _ => {
            eprintln!("usage: tracer-selftest markers|buffer|threads|roles|count|clmul");
            std::process::exit(2);
        }
    }
}
