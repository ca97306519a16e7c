//! [`tests!`](crate::tests): the suite as `#[test]` functions, one line in each engine's
//! tests instead of the same eighty lines of boilerplate per engine (issue 39).

/// The primary index kinds each test runs with.
pub const KINDS: [api::IndexKind; 2] = [api::IndexKind::BTree, api::IndexKind::Hash];

/// Declares the conformance suite's `#[test]` functions for engine type `E` opened with
/// the options expression `opts` (evaluated afresh in each test). Parts, as an engine
/// supports them:
/// - `threads`: the five tests on real threads, each with both primary index kinds;
/// - `repeated`: the four concurrent tests 30 times over (ignored: a soak, `-- --ignored`);
/// - `coroutines(N)`: the concurrent tests as coroutines on one thread under N seeds
///   (each seed one interleaving; a failure names it, `OLTPSCOPE_SCHED_SEED=S` reruns it);
/// - `steps`: the concurrent tests under STEPS, teams of 1, 2, 4 and 8;
/// - `optimistic`: [`own_splits_keep_phantom_checks`](crate::own_splits_keep_phantom_checks),
///   for optimistic engines only (a locking engine's scan would block the other inserter).
///
/// `conformance::tests!(MemoryEngine, EngineOptions::default(), "memory"; threads, steps);`
#[macro_export]
macro_rules! tests {
    ($e:ty, $opts:expr, $name:literal; $($part:ident $(($arg:expr))?),+ $(,)?) => {
        $( $crate::tests!(@$part $e, $opts, $name $(, $arg)?); )+
    };
    (@threads $e:ty, $opts:expr, $name:literal) => {
        #[test]
        fn transfers_keep_total() {
            for k in $crate::KINDS {
                $crate::transfers_keep_total::<$e>(&$opts, k);
            }
        }
        #[test]
        fn scans_never_see_partial_txn() {
            for k in $crate::KINDS {
                $crate::scans_never_see_partial_txn::<$e>(&$opts, k);
            }
        }
        #[test]
        fn write_skew_prevented() {
            for k in $crate::KINDS {
                $crate::write_skew_prevented::<$e>(&$opts, k);
            }
        }
        #[test]
        fn phantom_insert_detected() {
            for k in $crate::KINDS {
                $crate::phantom_insert_detected::<$e>(&$opts, k);
            }
        }
        #[test]
        fn crud_matches_serial() {
            for k in $crate::KINDS {
                $crate::crud_matches_serial::<$e>(&$opts, k);
            }
        }
    };
    (@repeated $e:ty, $opts:expr, $name:literal) => {
        /// Longer: the concurrent tests many times with more worker threads' interleavings.
        #[test]
        #[ignore = "a soak: `-- --ignored conformance_repeated`"]
        fn conformance_repeated() {
            for _ in 0..30 {
                for k in $crate::KINDS {
                    let o = $opts;
                    $crate::transfers_keep_total::<$e>(&o, k);
                    $crate::scans_never_see_partial_txn::<$e>(&o, k);
                    $crate::write_skew_prevented::<$e>(&o, k);
                    $crate::phantom_insert_detected::<$e>(&o, k);
                }
            }
        }
    };
    (@coroutines $e:ty, $opts:expr, $name:literal, $seeds:expr) => {
        #[test]
        fn conformance_under_seeded_coroutines() {
            $crate::rt::coro::each_seed(concat!($name, " conformance"), $seeds, |seed| {
                let k = $crate::KINDS[seed as usize % 2];
                $crate::all_under_seed::<$e>(&$opts, k, seed);
            });
        }
    };
    (@steps $e:ty, $opts:expr, $name:literal) => {
        #[test]
        fn conformance_under_steps() {
            for (i, team) in [1, 2, 4, 8].into_iter().enumerate() {
                $crate::all_under_steps::<$e>(&$opts, $crate::KINDS[i % 2], team);
            }
        }
    };
    (@optimistic $e:ty, $opts:expr, $name:literal) => {
        #[test]
        fn own_splits_keep_phantom_checks() {
            $crate::own_splits_keep_phantom_checks::<$e>(&$opts, $crate::api::IndexKind::BTree);
        }
    };
}
