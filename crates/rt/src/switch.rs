//! The context switch under [`crate::coro`]: save this context's callee-saved registers
//! on its stack, store its stack pointer, load another's and return into it.
//!
//! Hand-written rather than a coroutine crate's asymmetric resume/suspend because a
//! hand-over between two transactions must cost a few nanoseconds (`--interleave`
//! switches two or three times per single-row read). The asymmetric scheme goes through
//! a loop on the thread's own stack, so every switch makes the CPU's return-address
//! predictor (which holds the call chain of the context that ran last) mispredict each
//! return on the way out of the switch, on both sides: measured at about 30 ns per
//! hand-over against 3 ns for the bare stack switch. With a symmetric switch
//! (coroutine to coroutine) contexts that wait at the same call site have the same
//! return addresses, so those predictions hold.
//!
//! x86-64 System V only (the project's platform: the tracer is a valgrind tool for it).
//! MXCSR and the x87 control word, callee-saved in that ABI, are not switched: nothing in
//! the project changes them.

use corosensei::stack::{DefaultStack, Stack};
use std::cell::Cell;

#[cfg(not(all(target_arch = "x86_64", unix)))]
compile_error!("rt's context switch (crates/rt/src/switch.rs) is written for x86-64 Unix");

// `oltpscope_rt_switch(save: *mut usize, to: usize)`: push the callee-saved registers,
// store the stack pointer at `save`, switch to `to` and pop the registers saved there.
// `oltpscope_rt_start`: the first return of a new context lands here, with its entry
// function in rbx and the function's argument in r12 (see `Fiber::new`). It marks the
// end of the call chain for unwinders (`.cfi_undefined rip`) and for frame-pointer
// walkers (rbp = 0).
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl oltpscope_rt_switch",
    ".type oltpscope_rt_switch,@function",
    "oltpscope_rt_switch:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "mov [rdi], rsp",
    "mov rsp, rsi",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    ".size oltpscope_rt_switch, .-oltpscope_rt_switch",
    ".p2align 4",
    ".globl oltpscope_rt_start",
    ".type oltpscope_rt_start,@function",
    "oltpscope_rt_start:",
    ".cfi_startproc",
    ".cfi_undefined rip",
    "xor ebp, ebp",
    "mov rdi, r12",
    "call rbx",
    "ud2",
    ".cfi_endproc",
    ".size oltpscope_rt_start, .-oltpscope_rt_start",
);

extern "C" {
    fn oltpscope_rt_switch(save: *mut usize, to: usize);
    fn oltpscope_rt_start();
}

/// A context's saved stack pointer (0: running, finished or not started by a switch).
#[derive(Default)]
pub(crate) struct Sp(Cell<usize>);

impl Sp {
    /// Save the running context into `self` and continue the context saved in `to`;
    /// returns when something switches back to `self`.
    ///
    /// # Safety
    /// `to` holds a context saved by this function or made by [`Fiber::new`], on a stack
    /// that is still allocated, and not resumed by anyone else meanwhile.
    #[inline(always)]
    pub(crate) unsafe fn switch_to(&self, to: &Sp) {
        let target = to.0.replace(0);
        debug_assert_ne!(target, 0, "switch to a context that is not suspended");
        oltpscope_rt_switch(self.0.as_ptr(), target);
    }
}

/// A coroutine's stack. [`Fiber::new`] leaves in `sp` a context that runs `entry(arg)`
/// when first switched to; `entry` must never return: it ends by switching away for
/// good. The stack must outlive every switch to that context.
pub(crate) struct Fiber {
    _stack: DefaultStack,
}

impl Fiber {
    /// `below_top`: bytes left unused at the stack's top, so that stacks mapped alike
    /// start in different cache sets (see `coro::stack_color`).
    pub(crate) fn new(
        bytes: usize,
        below_top: usize,
        entry: extern "C" fn(*mut u8) -> !,
        arg: *mut u8,
        sp_out: &Sp,
    ) -> Self {
        let stack = DefaultStack::new(bytes).expect("allocate a coroutine stack");
        assert!(
            below_top < bytes / 2,
            "a coroutine's colour takes half its stack"
        );
        let top = (stack.base().get() - below_top) & !15;
        // The frame `oltpscope_rt_switch` pops: r15, r14, r13, r12 (the argument),
        // rbx (the entry), rbp, then the return address. After that return the stack
        // pointer is `top`, 16-byte aligned as the ABI wants before a call.
        let frame: [usize; 7] = [
            0,
            0,
            0,
            arg as usize,
            entry as *const () as usize,
            0,
            oltpscope_rt_start as *const () as usize,
        ];
        let sp = top - 8 - 6 * 8;
        assert!(sp - 64 > stack.limit().get(), "coroutine stack too small");
        // SAFETY: the 7 words from `sp` up to `top` lie inside the freshly mapped stack.
        unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), sp as *mut usize, 7) };
        const _: () = assert!(std::mem::size_of::<usize>() == 8);
        sp_out.0.set(sp);
        Fiber { _stack: stack }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ping {
        main: Sp,
        fiber: Sp,
        log: Vec<u32>,
    }

    extern "C" fn body(arg: *mut u8) -> ! {
        // SAFETY: the test passes a `Ping` that outlives the fiber.
        let p = unsafe { &mut *(arg as *mut Ping) };
        let me = &p.fiber as *const Sp;
        for i in 0..3 {
            p.log.push(i);
            // A float and an aligned SSE operation: the stack must be 16-byte aligned.
            let v = std::hint::black_box(1.5f64) * i as f64;
            p.log.push(v as u32 + 100);
            unsafe { (*me).switch_to(&p.main) };
        }
        p.log.push(99);
        unsafe { (*me).switch_to(&p.main) };
        unreachable!("resumed after its end");
    }

    #[test]
    fn switches_there_and_back_with_registers_and_alignment() {
        let mut p = Box::new(Ping {
            main: Sp::default(),
            fiber: Sp::default(),
            log: Vec::new(),
        });
        let arg = &mut *p as *mut Ping as *mut u8;
        let _stack = Fiber::new(64 * 1024, 64 * 3, body, arg, &p.fiber);
        let mut seen = Vec::new();
        for _ in 0..4 {
            let kept = std::hint::black_box(0x1234_5678_u64);
            unsafe { p.main.switch_to(&p.fiber) };
            assert_eq!(std::hint::black_box(kept), 0x1234_5678);
            seen.push(p.log.len());
        }
        assert_eq!(p.log, vec![0, 100, 1, 101, 2, 103, 99]);
        assert_eq!(seen, vec![2, 4, 6, 7]);
    }
}
