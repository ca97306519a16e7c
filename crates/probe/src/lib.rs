//! Markers for the profiler and the tracer: operation begin/end, transaction begin/end,
//! tracing start/stop. Under the oltpscope valgrind tool they become client requests the
//! tracer sees; natively they cost a few instructions and change nothing.
//!
//! This crate must stay free of dependencies and of any state on the hot path.

/// The database operations the engine marks (one entry point each, in `api::Session`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum Op {
    Begin = 1,
    Commit = 2,
    Abort = 3,
    IndexProbe = 4,
    Scan = 5,
    Insert = 6,
    Update = 7,
    Delete = 8,
}

impl Op {
    pub const ALL: [Op; 8] = [
        Op::Begin,
        Op::Commit,
        Op::Abort,
        Op::IndexProbe,
        Op::Scan,
        Op::Insert,
        Op::Update,
        Op::Delete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Begin => "begin",
            Op::Commit => "commit",
            Op::Abort => "abort",
            Op::IndexProbe => "index_probe",
            Op::Scan => "scan",
            Op::Insert => "insert",
            Op::Update => "update",
            Op::Delete => "delete",
        }
    }

    pub fn from_u32(v: u32) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| *o as u32 == v)
    }
}

/// What a thread does, declared once by the thread itself (`thread_role`), so the
/// simulator can tell the workers, whose caches the papers measured, from background
/// threads, which a real machine runs on other cores. 0 in the trace = none declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum Role {
    /// Runs transactions (the driver's worker threads).
    Worker = 1,
    /// The driver's main thread (time keeping, progress line).
    Main = 2,
    PageCleaner = 3,
    LogFlusher = 4,
    Checkpointer = 5,
    /// The memory engine's epoch advancer.
    Epoch = 6,
    /// Threads that carry blocking I/O for coroutines (`rt::io`).
    Io = 7,
}

impl Role {
    pub const ALL: [Role; 7] = [
        Role::Worker,
        Role::Main,
        Role::PageCleaner,
        Role::LogFlusher,
        Role::Checkpointer,
        Role::Epoch,
        Role::Io,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Main => "main",
            Role::PageCleaner => "page cleaner",
            Role::LogFlusher => "log flusher",
            Role::Checkpointer => "checkpointer",
            Role::Epoch => "epoch",
            Role::Io => "io",
        }
    }

    pub fn from_u32(v: u32) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| *r as u32 == v)
    }
}

/// Declares the calling thread's role to the tracer (remembered even while not tracing).
#[inline]
pub fn thread_role(r: Role) {
    client::request(client::THREAD_ROLE, r as u64, 0);
}

/// Marks an operation from creation to drop.
pub struct OpGuard(Op);

#[inline(always)]
pub fn op(o: Op) -> OpGuard {
    op_begin(o);
    OpGuard(o)
}

impl Drop for OpGuard {
    #[inline(always)]
    fn drop(&mut self) {
        op_end(self.0);
    }
}

#[inline(always)]
pub fn op_begin(o: Op) {
    client::request(client::OP_BEGIN, o as u64, 0);
}

#[inline(always)]
pub fn op_end(o: Op) {
    client::request(client::OP_END, o as u64, 0);
}

#[inline(always)]
pub fn txn_begin(txn_type: u32) {
    client::request(client::TXN_BEGIN, txn_type as u64, 0);
}

/// Set in TXN_END's argument when the transaction aborted: the simulator counts
/// committed transactions apart from attempts. A trace that never sets it (older traces,
/// PostgreSQL's, marked at the backend's end of transaction) counts every end as a commit.
/// The argument keeps the type's low 31 bits (the untyped `u32::MAX` of loads and checks
/// loses its top bit; nothing reads the type back from TXN_END).
pub const TXN_ABORTED: u32 = 1 << 31;

#[inline(always)]
pub fn txn_end(txn_type: u32, committed: bool) {
    let ty = txn_type & !TXN_ABORTED;
    let arg = if committed { ty } else { ty | TXN_ABORTED };
    client::request(client::TXN_END, arg as u64, 0);
}

/// A STEPS candidate context-switch point of engine component `component` (the index
/// of `rt::Component`) was reached; autoSTEPS places CTX calls from these. Emitted only
/// while `rt` is told to (`rt::set_trace_ctx`).
#[inline(always)]
pub fn ctx_point(component: u32) {
    client::request(client::CTX_POINT, component as u64, 0);
}

/// B+tree levels (`simulate --btree-levels`): the node a descent reaches next, as the
/// argument of a BTREE_LEVEL marker; the simulator counts the B+tree's own accesses and
/// misses per tree and level until the next marker or the operation's end. Bits 0-7:
/// the node's depth (0: the root); 8-15: the tree's height in levels as the descent
/// knows it; 16: a leaf reached through a lookup's leaf hint (no depth or height);
/// 17-31: the tree ([`level::tree`]).
pub mod level {
    /// The leaf a caller's leaf hint named, reached without a descent.
    pub const HINT: u32 = 1 << 16;
    /// A tree its owner did not name.
    pub const NO_TREE: u32 = 0x7fff;

    /// The tree of table `table`'s index `index` (0: the primary index, k: the k-th
    /// secondary one); [`NO_TREE`] beyond 2,047 tables or 15 secondary indexes.
    pub fn tree(table: usize, index: usize) -> u32 {
        if table < 2047 && index < 16 {
            (table as u32) << 4 | index as u32
        } else {
            NO_TREE
        }
    }

    /// Depth `depth` (0: the root) of tree `tree`, whose leaves lie at depth `leaf_depth`
    /// as far as the caller knows (a tree grows under a descent: a deeper `depth` wins).
    #[inline(always)]
    pub fn at(tree: u32, depth: u32, leaf_depth: u32) -> u32 {
        let d = depth.min(254);
        d | (leaf_depth.max(d).min(254) + 1) << 8 | tree << 17
    }

    /// A leaf of tree `tree` reached through a hint.
    #[inline(always)]
    pub fn hint(tree: u32) -> u32 {
        HINT | tree << 17
    }

    /// What a marker's argument says.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Level {
        /// (table, index), None for [`NO_TREE`].
        pub tree: Option<(u32, u32)>,
        /// (depth, height), None for a hinted leaf.
        pub at: Option<(u32, u32)>,
    }

    pub fn decode(arg: u32) -> Level {
        let t = arg >> 17;
        Level {
            tree: (t != NO_TREE).then_some((t >> 4, t & 15)),
            at: (arg & HINT == 0).then_some((arg & 0xff, (arg >> 8) & 0xff)),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn levels_and_trees_round_trip() {
            let t = tree(9, 2);
            assert_eq!(
                decode(at(t, 3, 4)),
                Level {
                    tree: Some((9, 2)),
                    at: Some((3, 5))
                }
            );
            // A tree that grew under the descent: the depth reached wins.
            assert_eq!(decode(at(t, 5, 4)).at, Some((5, 6)));
            assert_eq!(
                decode(hint(t)),
                Level {
                    tree: Some((9, 2)),
                    at: None
                }
            );
            assert_eq!(decode(at(NO_TREE, 0, 0)).tree, None);
            assert_eq!(tree(2047, 0), NO_TREE);
            assert_eq!(tree(0, 16), NO_TREE);
            assert_eq!(decode(at(tree(2046, 15), 254, 300)).tree, Some((2046, 15)));
        }
    }
}

/// Whether B+tree descents mark their levels ([`set_trace_levels`]; off unless a traced
/// run asked: a marker per node visited adds instructions to the trace).
static TRACE_LEVELS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn set_trace_levels(on: bool) {
    TRACE_LEVELS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// A B+tree descent reaches the node `arg` ([`level`]) names. Natively (and in traced
/// runs that did not ask) one load and a branch: the request is out of line, so its
/// registers and memory clobber stay off the descent's path (inline, the check cost
/// about 6 instructions per node).
#[inline(always)]
pub fn btree_level(arg: u32) {
    if TRACE_LEVELS.load(std::sync::atomic::Ordering::Relaxed) {
        btree_level_request(arg);
    }
}

#[cold]
#[inline(never)]
fn btree_level_request(arg: u32) {
    client::request(client::BTREE_LEVEL, arg as u64, 0);
}

/// Start recording (the tracer ignores everything before: loading is not traced).
pub fn tracing_start() {
    client::request(client::TRACE_START, 0, 0);
}

pub fn tracing_stop() {
    client::request(client::TRACE_STOP, 0, 0);
}

/// True when the process runs under valgrind (any tool): asked once, then remembered.
pub fn running_on_valgrind() -> bool {
    client::on_valgrind()
}

/// Valgrind client requests: the amd64 "magic sequence" that valgrind's JIT recognises
/// (valgrind.h, `VALGRIND_DO_CLIENT_REQUEST_EXPR`). On real hardware the four rotates of
/// `rdi` add up to 128 bits (no change) and `xchg rbx, rbx` does nothing, so a request
/// costs a few instructions and returns the default result. Elsewhere (other
/// architectures or systems) every request is a no-op returning the default.
pub mod client {
    pub const OP_BEGIN: u64 = 1;
    pub const OP_END: u64 = 2;
    pub const TXN_BEGIN: u64 = 3;
    pub const TXN_END: u64 = 4;
    pub const TRACE_START: u64 = 5;
    pub const TRACE_STOP: u64 = 6;
    pub const THREAD_ROLE: u64 = 7;
    pub const CTX_POINT: u64 = 8;
    /// A coroutine scheduler's thread now runs context `a` (coroutine `a - 1`; 0: the
    /// thread's own stack): the simulator keeps open operations and the transaction in
    /// progress per context.
    pub const CONTEXT: u64 = 9;
    /// A B+tree descent reaches a node of the level `a` names (`crate::level`).
    pub const BTREE_LEVEL: u64 = 10;

    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

    /// `VG_USERREQ_TOOL_BASE('O','S')`: the oltptrace tool's requests are base | code.
    pub const TOOL_BASE: u64 = ((b'O' as u64) << 24) | ((b'S' as u64) << 16);
    /// Core request `VG_USERREQ__RUNNING_ON_VALGRIND`.
    pub const RUNNING_ON_VALGRIND: u64 = 0x1001;

    /// Issues the oltptrace request `code` (1..=10) with arguments `a`, `b`: only under
    /// valgrind. Natively a request is one load and a branch instead of the sequence, its
    /// six argument stores and the registers the compiler writes back around it (the
    /// sequence may read memory), at a few hundred markers per TPC-C transaction.
    #[inline(always)]
    pub fn request(code: u64, a: u64, b: u64) {
        debug_assert!(
            (1..=0xffff).contains(&code),
            "tool request code {code} out of range"
        );
        if on_valgrind() {
            raw(&[TOOL_BASE | code, a, b, 0, 0, 0], 0);
        }
    }

    /// Whether the process runs under valgrind: asked once (the answer cannot change
    /// while it runs), then remembered.
    static ON_VALGRIND: AtomicU8 = AtomicU8::new(UNKNOWN);
    const UNKNOWN: u8 = 0;
    const NATIVE: u8 = 1;
    const VALGRIND: u8 = 2;

    #[inline(always)]
    pub(crate) fn on_valgrind() -> bool {
        match ON_VALGRIND.load(Relaxed) {
            NATIVE => false,
            VALGRIND => true,
            _ => ask_valgrind(),
        }
    }

    #[cold]
    #[inline(never)]
    fn ask_valgrind() -> bool {
        let on = running_on_valgrind_depth() > 0;
        ON_VALGRIND.store(if on { VALGRIND } else { NATIVE }, Relaxed);
        on
    }

    /// Valgrind's nesting depth (0 natively, 1 under valgrind).
    #[inline]
    pub fn running_on_valgrind_depth() -> u64 {
        raw(&[RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0], 0)
    }

    /// The raw client request: `args` = [request, arg1..arg5]; returns valgrind's answer,
    /// or `default` when not under valgrind.
    #[cfg(all(
        target_arch = "x86_64",
        any(target_os = "linux", target_os = "freebsd")
    ))]
    #[inline(always)]
    pub fn raw(args: &[u64; 6], default: u64) -> u64 {
        let mut result = default;
        // SAFETY: the sequence only reads `args` (valgrind reads it through rax) and
        // leaves every register but rdx (the result) and the flags as it found them:
        // rdi is rotated by 3+13+61+51 = 128 bits, xchg rbx, rbx swaps rbx with itself.
        // No `nomem`: the request must stay ordered with the memory accesses around it
        // (a marker must not move across the work it marks).
        unsafe {
            core::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") result,
                in("rax") args.as_ptr(),
                options(nostack),
            );
        }
        result
    }

    #[cfg(not(all(
        target_arch = "x86_64",
        any(target_os = "linux", target_os = "freebsd")
    )))]
    #[inline(always)]
    pub fn raw(_args: &[u64; 6], default: u64) -> u64 {
        default
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_harmless_natively() {
        // Under `cargo test` (not under valgrind) every request returns its default and
        // changes nothing observable.
        if running_on_valgrind() {
            eprintln!("SKIPPED: running under valgrind");
            return;
        }
        assert_eq!(
            client::raw(&[client::TOOL_BASE | 99, 1, 2, 3, 4, 5], 42),
            42
        );
        let _g = op(Op::Scan);
        txn_begin(3);
        txn_end(3, true);
        tracing_start();
        tracing_stop();
    }

    #[test]
    fn tool_base_matches_valgrind_h() {
        // VG_USERREQ_TOOL_BASE('O','S') = ('O' & 0xff) << 24 | ('S' & 0xff) << 16
        assert_eq!(client::TOOL_BASE, 0x4f53_0000);
    }

    #[test]
    fn op_codes_round_trip() {
        for o in Op::ALL {
            assert_eq!(Op::from_u32(o as u32), Some(o));
        }
        assert_eq!(Op::from_u32(0), None);
        assert_eq!(Op::from_u32(9), None);
        for r in Role::ALL {
            assert_eq!(Role::from_u32(r as u32), Some(r));
        }
        assert_eq!(Role::from_u32(0), None);
    }
}
