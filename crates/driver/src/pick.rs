//! Keeping a thread's coroutines from colliding (`--interleave N`, issue 40).
//!
//! The coroutines of one worker thread run one transaction each, interleaved at index
//! probes. Two of them on the same TPC-C warehouse abort each other under OCC (New-Order
//! reads the warehouse row Payment writes; both update a district; Delivery takes every
//! district's oldest new order), and such an abort is pure loss: the thread did the work
//! of both and keeps one. So a stream does not start a transaction whose conflict key
//! (`Workload::conflict_key`) another transaction of its thread has in flight: it looks
//! a few inputs ahead in its own terminal's sequence and starts the first whose key is
//! free (a reorder), or, when none is free or the oldest has been passed over too often,
//! waits for the oldest one's key (a hold).
//!
//! What stays honest: every input a terminal draws runs, in the order drawn except that
//! an input may be passed by at most [`MAX_PASSED`] later ones of the same terminal (so
//! the mix, dealt from each terminal's deck, is unchanged; only the inputs still waiting
//! when the run stops are not run, as the ones not yet drawn). The report counts the
//! reorders and holds.

use std::cell::RefCell;
use std::collections::VecDeque;

/// Inputs a stream keeps drawn ahead of the one it starts (the oldest included).
pub(crate) const DEPTH: usize = 4;
/// Times the oldest waiting input may be passed over by later ones before the stream
/// waits for its key instead.
pub(crate) const MAX_PASSED: u32 = 4;

/// The conflict keys of the transactions in flight on one thread (its coroutines'):
/// at most one per key, a handful at a time (so a vector).
#[derive(Default)]
pub(crate) struct InFlight {
    keys: RefCell<Vec<u64>>,
}

impl InFlight {
    pub(crate) fn busy(&self, key: u64) -> bool {
        self.keys.borrow().contains(&key)
    }

    /// Mark `key` in flight; it must not be already (the picker saw to that).
    pub(crate) fn enter(&self, key: u64) {
        let mut k = self.keys.borrow_mut();
        assert!(
            !k.contains(&key),
            "conflict key {key} started twice on one thread"
        );
        k.push(key);
    }

    pub(crate) fn leave(&self, key: u64) {
        let mut k = self.keys.borrow_mut();
        let i = k
            .iter()
            .position(|&x| x == key)
            .expect("a transaction leaves the key it entered");
        k.swap_remove(i);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.keys.borrow().len()
    }
}

/// One drawn input: its type, the input and its conflict key.
pub(crate) struct Drawn<I> {
    pub ty: u32,
    pub input: I,
    pub key: Option<u64>,
}

/// What [`Lookahead::pick`] decided.
pub(crate) enum Pick<I> {
    /// Start this one; `reordered`: it passed over older inputs of its terminal.
    Start { drawn: Drawn<I>, reordered: bool },
    /// Every candidate's key is in flight (or the oldest was passed over too often):
    /// wait until this key is free, then pick again.
    Hold(u64),
}

/// One stream's inputs drawn ahead, oldest first, each with the times a later one was
/// started before it.
pub(crate) struct Lookahead<I> {
    q: VecDeque<(Drawn<I>, u32)>,
}

impl<I> Lookahead<I> {
    pub(crate) fn new() -> Self {
        Lookahead {
            q: VecDeque::with_capacity(DEPTH),
        }
    }

    /// A workload without conflict keys, the common case: with nothing drawn ahead,
    /// draw one input and, if it has no key, hand it back to start at once, as `pick`
    /// would (a keyless input is always free, and it would be the oldest), without
    /// queueing it and the [`DEPTH`] - 1 after it. An input with a key is queued
    /// (`None`: call `pick`). The queue's moves of whole inputs were about a tenth of a
    /// B+tree point read's time under `--interleave 8` (issue 40).
    #[inline]
    pub(crate) fn draw_keyless(&mut self, draw: impl FnOnce() -> Drawn<I>) -> Option<Drawn<I>> {
        if !self.q.is_empty() {
            return None;
        }
        let d = draw();
        if d.key.is_none() {
            return Some(d);
        }
        self.q.push_back((d, 0));
        None
    }

    /// Fill up to [`DEPTH`] inputs with `draw`, then choose the oldest whose key `busy`
    /// does not report in flight, unless an older one has been passed over
    /// [`MAX_PASSED`] times already: then hold for that one's key.
    pub(crate) fn pick(
        &mut self,
        mut draw: impl FnMut() -> Drawn<I>,
        busy: impl Fn(u64) -> bool,
    ) -> Pick<I> {
        while self.q.len() < DEPTH {
            self.q.push_back((draw(), 0));
        }
        for i in 0..self.q.len() {
            let (d, passed) = &self.q[i];
            match d.key {
                Some(k) if busy(k) => {
                    if *passed >= MAX_PASSED {
                        return Pick::Hold(k);
                    }
                }
                _ => {
                    for older in self.q.range_mut(..i) {
                        older.1 += 1;
                    }
                    let (drawn, _) = self.q.remove(i).expect("index in range");
                    return Pick::Start {
                        drawn,
                        reordered: i > 0,
                    };
                }
            }
        }
        let k = self.q[0].0.key.expect("a keyless input is always free");
        Pick::Hold(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Simulate `streams` streams on one thread: at each step a random stream either
    /// starts its next transaction (if it has none in flight) or finishes it. Checks
    /// that no two in-flight transactions share a key, that every input is started in
    /// its terminal's order except for passes by at most `MAX_PASSED` later ones, and
    /// that holds are the only way a stream stalls.
    fn simulate(keys: &[Vec<Option<u64>>], steps: &[(usize, bool)]) {
        let inflight = InFlight::default();
        let n = keys.len();
        let mut la: Vec<Lookahead<usize>> = (0..n).map(|_| Lookahead::new()).collect();
        let mut next_draw = vec![0usize; n];
        let mut running: Vec<Option<Option<u64>>> = vec![None; n];
        let mut started: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(s, finish) in steps {
            let s = s % n;
            if let Some(k) = running[s] {
                if finish {
                    if let Some(k) = k {
                        inflight.leave(k);
                    }
                    running[s] = None;
                }
                continue;
            }
            let ks = &keys[s];
            let nd = &mut next_draw[s];
            let mut draw = || {
                let i = *nd;
                *nd += 1;
                Drawn {
                    ty: 0,
                    input: i,
                    key: ks[i % ks.len()],
                }
            };
            // As the driver does: a keyless input with nothing ahead starts at once.
            let p = match la[s].draw_keyless(&mut draw) {
                Some(drawn) => Pick::Start {
                    drawn,
                    reordered: false,
                },
                None => la[s].pick(&mut draw, |k| inflight.busy(k)),
            };
            match p {
                Pick::Start { drawn, .. } => {
                    if let Some(k) = drawn.key {
                        assert!(!inflight.busy(k), "key {k} started while in flight");
                        inflight.enter(k);
                    }
                    running[s] = Some(drawn.key);
                    started[s].push(drawn.input);
                }
                Pick::Hold(k) => assert!(inflight.busy(k), "held for a free key"),
            }
            let live = running
                .iter()
                .filter(|r| matches!(r, Some(Some(_))))
                .count();
            assert_eq!(inflight.len(), live);
        }
        for st in &started {
            // Each input is passed by at most MAX_PASSED later ones, and none is lost
            // but the last DEPTH-1 drawn.
            for (pos, &i) in st.iter().enumerate() {
                let later_before = st[..pos].iter().filter(|&&j| j > i).count();
                assert!(later_before <= MAX_PASSED as usize, "{st:?}");
            }
            let mut sorted = st.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), st.len(), "an input started twice: {st:?}");
            if let Some(&max) = st.iter().max() {
                let missing = (0..max).filter(|i| !st.contains(i)).count();
                assert!(missing < DEPTH, "{st:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn never_two_with_one_key_and_order_kept(
            keys in prop::collection::vec(
                prop::collection::vec(prop::option::weighted(0.9, 0u64..4), 1..20), 2..6),
            steps in prop::collection::vec((0usize..8, any::<bool>()), 0..400),
        ) {
            simulate(&keys, &steps);
        }
    }

    /// Keyless inputs are handed back one at a time in the order drawn, never queued;
    /// a keyed one is queued and `pick` starts it next, before any drawn after it.
    #[test]
    fn keyless_inputs_skip_the_queue() {
        let mut la = Lookahead::new();
        let keys = [None, None, Some(5), None, Some(6)];
        let mut i = 0usize;
        let mut draw = || {
            i += 1;
            Drawn {
                ty: 0,
                input: i - 1,
                key: keys[(i - 1) % keys.len()],
            }
        };
        for want in 0..2 {
            let d = la.draw_keyless(&mut draw).expect("keyless");
            assert_eq!(d.input, want);
        }
        assert!(
            la.draw_keyless(&mut draw).is_none(),
            "a keyed input is queued"
        );
        assert_eq!(la.q.len(), 1);
        match la.pick(&mut draw, |_| false) {
            Pick::Start { drawn, reordered } => {
                assert_eq!((drawn.input, reordered), (2, false));
            }
            Pick::Hold(_) => panic!("held with a free key"),
        }
        // Inputs 3.. were drawn ahead by `pick`: no keyless shortcut until they ran.
        assert_eq!(la.q.len(), DEPTH - 1);
        assert!(la.draw_keyless(&mut draw).is_none());
    }

    #[test]
    fn passes_over_a_busy_key_then_holds() {
        let inflight = InFlight::default();
        inflight.enter(7);
        let mut la = Lookahead::new();
        let mut i = 0u64;
        // Oldest input has key 7 (busy), the rest key 1, 2, 3...
        let mut draw = || {
            let key = if i == 0 { 7 } else { i };
            i += 1;
            Drawn {
                ty: 0,
                input: key,
                key: Some(key),
            }
        };
        for round in 0..MAX_PASSED {
            match la.pick(&mut draw, |k| inflight.busy(k)) {
                Pick::Start { drawn, reordered } => {
                    assert!(reordered);
                    assert_ne!(drawn.key, Some(7), "round {round}");
                }
                Pick::Hold(_) => panic!("held with free inputs after {round} passes"),
            }
        }
        assert!(matches!(
            la.pick(&mut draw, |k| inflight.busy(k)),
            Pick::Hold(7)
        ));
        inflight.leave(7);
        match la.pick(&mut draw, |k| inflight.busy(k)) {
            Pick::Start { drawn, reordered } => {
                assert_eq!(drawn.key, Some(7));
                assert!(!reordered);
            }
            Pick::Hold(_) => panic!("held on a free key"),
        }
    }
}
