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

#[inline(always)]
pub fn txn_end(txn_type: u32) {
    client::request(client::TXN_END, txn_type as u64, 0);
}

/// Start recording (the tracer ignores everything before: loading is not traced).
pub fn tracing_start() {
    client::request(client::TRACE_START, 0, 0);
}

pub fn tracing_stop() {
    client::request(client::TRACE_STOP, 0, 0);
}

/// Valgrind client requests. Filled in by the tracer work (issue 5); until then every
/// request is a no-op, which is also exactly what it must be when not under valgrind.
pub mod client {
    pub const OP_BEGIN: u64 = 1;
    pub const OP_END: u64 = 2;
    pub const TXN_BEGIN: u64 = 3;
    pub const TXN_END: u64 = 4;
    pub const TRACE_START: u64 = 5;
    pub const TRACE_STOP: u64 = 6;

    #[inline(always)]
    pub fn request(_code: u64, _a: u64, _b: u64) {}
}
