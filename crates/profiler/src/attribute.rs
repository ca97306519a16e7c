//! One sample's call chain -> the component, operation and function it is charged to.
//!
//! Pure: takes the symbolized frames, so it is tested with recorded samples. The rules:
//! - component: walking outward from the sampled instruction (inlined functions
//!   innermost first), the first function the component map classifies. Code of libc,
//!   the allocator and Rust's standard library is not classified, so its time goes to
//!   the innermost engine component that called it (A-to-E charges a memcpy inside the
//!   buffer pool to the buffer pool the same way). A query operator's callbacks (a
//!   plan's predicate closure, datum code) count for the operator that called them
//!   (`ComponentTable::charge_chain`, shared with `simulate`).
//! - operation: the innermost `api::session::Session` method on the stack (the one entry
//!   point per operation, the same place that emits the `probe` markers `simulate`
//!   reads). Read from the stack rather than from a thread-local written at each
//!   operation: that costs nothing on the hot path, needs no change to `probe` (which
//!   must stay free of state), and stays right under coroutines, where one thread runs
//!   several transactions' operations interleaved.

use components::{module_path, ComponentTable};
use probe::Op;

/// The operation of a `Session` method's module path (`api::session::Session::get`, its
/// closures, its `_row`, `_part`, `_head` and `_batch` variants, an update's `add_i64`);
/// `None` for other functions and for `run`/`run_retry` (a transaction body between
/// operations). By the method's family, as `Session` marks them (`mark(Op::..)`), so a
/// new variant of an operation is charged to it without a line here.
pub fn session_op(path: &str) -> Option<Op> {
    // `api::session::get` is the same method named by its source file (line-tables-only
    // debug information names a method without its type: `components::frame_name`).
    let rest = path
        .split("api::session::Session::")
        .nth(1)
        .or_else(|| path.strip_prefix("api::session::"))?;
    let method = rest.split("::").next().unwrap_or(rest);
    let family = |p: &str| {
        method
            .strip_prefix(p)
            .is_some_and(|r| r.is_empty() || r.starts_with('_'))
    };
    Some(match method {
        "begin" => Op::Begin,
        "commit" => Op::Commit,
        "abort" => Op::Abort,
        "descent" => Op::IndexProbe,
        _ if family("get") => Op::IndexProbe,
        _ if family("scan") => Op::Scan,
        _ if family("insert") => Op::Insert,
        _ if family("update") || family("add") => Op::Update,
        _ if family("delete") => Op::Delete,
        _ => return None,
    })
}

/// What one sample is charged to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// Index into the component table's names (0 = other).
    pub component: u16,
    pub op: Option<Op>,
    /// Innermost function name known (the "self" function), if any.
    pub leaf: Option<String>,
}

/// `frames`: the sample's user-space frames, innermost first; each frame lists the
/// functions inlined at that address, innermost first (empty when nothing is known).
pub fn charge<S: AsRef<str>>(table: &ComponentTable, frames: &[Vec<S>]) -> Charge {
    let names = || frames.iter().flatten().map(AsRef::as_ref);
    let component = table.charge_chain(names()).map_or(0, |(_, c)| c);
    let op = names().find_map(|n| session_op(&module_path(n)));
    Charge {
        component,
        op,
        leaf: names().next().map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use components::default_components;

    fn name(t: &ComponentTable, c: &Charge) -> String {
        t.names()[c.component as usize].clone()
    }

    #[test]
    fn session_methods_name_operations() {
        assert_eq!(
            session_op("api::session::Session::get"),
            Some(Op::IndexProbe)
        );
        assert_eq!(
            session_op("api::session::Session::update_row::{{closure}}"),
            Some(Op::Update)
        );
        assert_eq!(
            session_op("api::session::Session::commit"),
            Some(Op::Commit)
        );
        // The variants of each operation, TPC-B's adds among them.
        for (m, op) in [
            ("get_part", Op::IndexProbe),
            ("get_part_batch", Op::IndexProbe),
            ("get_head", Op::IndexProbe),
            ("scan_part", Op::Scan),
            ("update_part", Op::Update),
            ("update_row_batch", Op::Update),
            ("add_i64", Op::Update),
            ("add_i64_blind::{{closure}}", Op::Update),
            ("insert_row", Op::Insert),
        ] {
            let path = format!("api::session::Session::{m}");
            assert_eq!(session_op(&path), Some(op), "{m}");
        }
        assert_eq!(session_op("api::session::get_row"), Some(Op::IndexProbe));
        assert_eq!(session_op("api::session::add_i64_blind"), Some(Op::Update));
        assert_eq!(session_op("api::session::run_retry"), None);
        assert_eq!(session_op("api::session::Session::run"), None);
        assert_eq!(session_op("api::session::Session::run_retry"), None);
        assert_eq!(session_op("api::session::Session::prefetch_part"), None);
        assert_eq!(session_op("api::session::Session::getter"), None);
        assert_eq!(session_op("engine_disk::btree::BTree::get"), None);
    }

    // Recorded from a disk-engine TPC-B profile (frames shortened to the names that
    // decide): a memcpy in libc under the heap, under an update.
    #[test]
    fn library_code_is_charged_to_the_innermost_engine_component() {
        let t = ComponentTable::new(&default_components());
        let frames = vec![
            vec!["__memmove_avx_unaligned_erms"],
            vec!["<alloc::vec::Vec<u8> as core::clone::Clone>::clone"],
            vec![
                "engine_disk::heap::HeapFile::read",
                "<engine_disk::xct::Worker as api::engine::Worker>::update",
            ],
            vec![
                "api::session::Session<engine_disk::xct::Worker>::update",
                "workloads::tpcb::account_update",
            ],
            vec!["driver::run::Shared<W>::stream"],
        ];
        let c = charge(&t, &frames);
        assert_eq!(name(&t, &c), "heap");
        assert_eq!(c.op, Some(Op::Update));
        assert_eq!(c.leaf.as_deref(), Some("__memmove_avx_unaligned_erms"));
    }

    // A TPC-H Q6 sample (memory engine): the plan's predicate, inlined into the scan
    // operator's callback, called by the engine's scan under `Session::scan`.
    #[test]
    fn a_query_s_predicate_counts_for_its_scan_operator() {
        let t = ComponentTable::new(&default_components());
        let frames = vec![
            vec![
                "workloads::tpch::queries::q06::plan::{{closure}}",
                "exec::scan::scan_each::{{closure}}",
            ],
            vec!["engine_memory::btree::BTree::scan"],
            vec!["api::session::Session<X>::scan"],
            vec![
                "exec::scan::scan_each",
                "workloads::tpch::queries::q06::plan",
            ],
        ];
        let c = charge(&t, &frames);
        assert_eq!(name(&t, &c), "q-scan");
        assert_eq!(c.op, Some(Op::Scan));
        assert_eq!(
            c.leaf.as_deref(),
            Some("workloads::tpch::queries::q06::plan::{{closure}}")
        );
    }

    #[test]
    fn workload_code_between_operations_has_no_operation() {
        let t = ComponentTable::new(&default_components());
        let frames = vec![
            vec!["workloads::tpcc::new_order::{{closure}}"],
            vec![
                "api::session::Session<X>::run",
                "driver::run::Shared<W>::stream",
            ],
        ];
        let c = charge(&t, &frames);
        assert_eq!(name(&t, &c), "workload");
        assert_eq!(c.op, None);
    }

    #[test]
    fn a_lock_wait_in_the_kernel_goes_to_the_lock_manager() {
        // futex wait: the user frames start at the syscall's return address.
        let t = ComponentTable::new(&default_components());
        let frames = vec![
            vec!["syscall"],
            vec!["parking_lot_core::parking_lot::park"],
            vec!["rt::Event::wait"],
            vec!["engine_disk::lock::LockManager::acquire"],
            vec!["api::session::Session<X>::get"],
        ];
        let c = charge(&t, &frames);
        assert_eq!(name(&t, &c), "lock");
        assert_eq!(c.op, Some(Op::IndexProbe));
    }

    #[test]
    fn nothing_known_is_other() {
        let t = ComponentTable::new(&default_components());
        let c = charge::<&str>(&t, &[vec![], vec![]]);
        assert_eq!(
            c,
            Charge {
                component: 0,
                op: None,
                leaf: None
            }
        );
    }
}
