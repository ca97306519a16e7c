//! Keeping a thread's coroutines from colliding (`--interleave N`, issue 40).
//!
//! The coroutines of one worker thread run one transaction each, interleaved at index
//! probes. Two of them on the same TPC-C warehouse abort each other under OCC (New-Order
//! reads the warehouse row Payment writes; both update a district; Delivery takes every
//! district's oldest new order), and such an abort is pure loss: the thread did the work
//! of both and keeps one. So a stream does not start a transaction whose conflict
//! classes (`Workload::conflicts`, TPC-C's warehouses) meet those another transaction
//! of its thread has in flight: it looks a few inputs ahead in its own terminal's
//! sequence and starts the first whose classes are free (a reorder), or, when none is
//! free or the oldest has been passed over too often, waits for the oldest one's
//! classes (a hold), first in line for them.
//!
//! What stays honest: every input a terminal draws runs, in the order drawn except that
//! an input may be passed by at most [`MAX_PASSED`] later ones of the same terminal (so
//! the mix, dealt from each terminal's deck, is unchanged; only the inputs still waiting
//! when the run stops are not run, as the ones not yet drawn). The report counts the
//! reorders and holds.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use workloads::Conflicts;

/// Inputs a stream keeps drawn ahead of the one it starts (the oldest included).
pub(crate) const DEPTH: usize = 4;
/// Times the oldest waiting input may be passed over by later ones before the stream
/// waits for its classes instead.
pub(crate) const MAX_PASSED: u32 = 4;

/// The conflict classes of the transactions in flight on one thread (its
/// coroutines'): their union, as the picker never lets two in flight share a class.
/// And the streams waiting for classes, in the order they began to wait: each has the
/// first claim on its classes, before every stream after it and every stream not
/// waiting. Without that claim a stream on a busy warehouse could wait for good, as
/// another stream took the warehouse again each time it let go, before the waiter
/// ran (each stream of `--affinity` runs its own warehouse back to back).
#[derive(Default)]
pub(crate) struct InFlight {
    classes: Cell<Conflicts>,
    queue: RefCell<Vec<(u32, Conflicts)>>,
    /// The union of `queue`'s classes.
    queued: Cell<Conflicts>,
    streams: Cell<u32>,
}

impl InFlight {
    /// A new stream's identity on this thread.
    pub(crate) fn stream_id(&self) -> u32 {
        let id = self.streams.get();
        self.streams.set(id + 1);
        id
    }

    /// Whether stream `id` may not start a transaction with classes `c` now: one of
    /// them is in flight, or claimed by a stream that began to wait before `id` did (or
    /// at all, if `id` is not waiting).
    pub(crate) fn busy(&self, id: u32, c: Conflicts) -> bool {
        if self.classes.get().meets(c) {
            return true;
        }
        if !self.queued.get().meets(c) {
            return false;
        }
        for &(s, q) in self.queue.borrow().iter() {
            if s == id {
                return false;
            }
            if q.meets(c) {
                return true;
            }
        }
        false
    }

    /// Stream `id` waits for classes `c`: queued behind the streams already waiting
    /// (once: a stream already waiting keeps its place).
    pub(crate) fn wait_for(&self, id: u32, c: Conflicts) {
        let mut q = self.queue.borrow_mut();
        if q.iter().all(|&(s, _)| s != id) {
            q.push((id, c));
            self.queued.set(self.queued.get().union(c));
        }
    }

    /// Stream `id` no longer waits (it started, or the run stopped).
    pub(crate) fn unqueue(&self, id: u32) {
        let mut q = self.queue.borrow_mut();
        if let Some(i) = q.iter().position(|&(s, _)| s == id) {
            q.remove(i);
            self.queued
                .set(q.iter().fold(Conflicts::NONE, |u, &(_, c)| u.union(c)));
        }
    }

    /// Stream `id` starts a transaction with classes `c`: in flight until `leave`.
    /// None may be in flight already (the picker saw to that).
    pub(crate) fn enter(&self, id: u32, c: Conflicts) {
        let cur = self.classes.get();
        assert!(
            !cur.meets(c),
            "conflict classes {c:?} started while in flight ({cur:?})"
        );
        self.classes.set(cur.union(c));
        self.unqueue(id);
    }

    pub(crate) fn leave(&self, c: Conflicts) {
        let cur = self.classes.get();
        assert!(
            cur.contains(c),
            "a transaction leaves the classes it entered"
        );
        self.classes.set(cur.minus(c));
    }

    #[cfg(test)]
    pub(crate) fn classes(&self) -> Conflicts {
        self.classes.get()
    }

    #[cfg(test)]
    pub(crate) fn waiting(&self) -> Vec<u32> {
        self.queue.borrow().iter().map(|&(s, _)| s).collect()
    }
}

/// One drawn input: its type, the input and its conflict classes.
pub(crate) struct Drawn<I> {
    pub ty: u32,
    pub input: I,
    pub conflicts: Conflicts,
}

/// What [`Lookahead::pick`] decided.
pub(crate) enum Pick<I> {
    /// Start this one; `reordered`: it passed over older inputs of its terminal.
    Start { drawn: Drawn<I>, reordered: bool },
    /// Every candidate's classes meet those in flight (or the oldest was passed over
    /// too often): wait until these are free, then pick again.
    Hold(Conflicts),
}

/// One stream's inputs drawn ahead, oldest first, each with the times a later one was
/// started before it.
pub(crate) struct Lookahead<I> {
    q: VecDeque<(Drawn<I>, u32)>,
    /// The stream's identity in its thread's [`InFlight`].
    pub id: u32,
}

impl<I> Lookahead<I> {
    pub(crate) fn new(id: u32) -> Self {
        Lookahead {
            q: VecDeque::with_capacity(DEPTH),
            id,
        }
    }

    /// A workload without conflict classes, the common case: with nothing drawn ahead,
    /// draw one input and, if it has none, hand it back to start at once, as `pick`
    /// would (such an input is always free, and it would be the oldest), without
    /// queueing it and the [`DEPTH`] - 1 after it. An input with classes is queued
    /// (`None`: call `pick`). The queue's moves of whole inputs were about a tenth of a
    /// B+tree point read's time under `--interleave 8` (issue 40).
    #[inline]
    pub(crate) fn draw_keyless(&mut self, draw: impl FnOnce() -> Drawn<I>) -> Option<Drawn<I>> {
        if !self.q.is_empty() {
            return None;
        }
        let d = draw();
        if d.conflicts.is_empty() {
            return Some(d);
        }
        self.q.push_back((d, 0));
        None
    }

    /// Fill up to [`DEPTH`] inputs with `draw`, then choose the oldest whose classes
    /// `busy` does not report in flight, unless an older one has been passed over
    /// [`MAX_PASSED`] times already: then hold for that one's classes.
    pub(crate) fn pick(
        &mut self,
        mut draw: impl FnMut() -> Drawn<I>,
        busy: impl Fn(Conflicts) -> bool,
    ) -> Pick<I> {
        while self.q.len() < DEPTH {
            self.q.push_back((draw(), 0));
        }
        for i in 0..self.q.len() {
            let (d, passed) = &self.q[i];
            if busy(d.conflicts) {
                if *passed >= MAX_PASSED {
                    return Pick::Hold(d.conflicts);
                }
            } else {
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
        let c = self.q[0].0.conflicts;
        assert!(!c.is_empty(), "an input without classes is always free");
        Pick::Hold(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A set of the classes whose bits `mask` has (classes 0..8).
    fn set(mask: u8) -> Conflicts {
        (0..8)
            .filter(|c| mask & 1 << c != 0)
            .fold(Conflicts::NONE, |s, c| s.with(c))
    }

    /// Simulate `streams` streams on one thread: at each step a random stream either
    /// starts its next transaction (if it has none in flight) or finishes it. Checks
    /// that no two in-flight transactions share a class, that every input is started
    /// in its terminal's order except for passes by at most `MAX_PASSED` later ones,
    /// and that holds are the only way a stream stalls.
    fn simulate(keys: &[Vec<Conflicts>], steps: &[(usize, bool)]) {
        let inflight = InFlight::default();
        let n = keys.len();
        let mut la: Vec<Lookahead<usize>> = (0..n)
            .map(|_| Lookahead::new(inflight.stream_id()))
            .collect();
        let mut next_draw = vec![0usize; n];
        let mut running: Vec<Option<Conflicts>> = vec![None; n];
        let mut started: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(s, finish) in steps {
            let s = s % n;
            if let Some(c) = running[s] {
                if finish {
                    inflight.leave(c);
                    running[s] = None;
                }
                continue;
            }
            let id = la[s].id;
            let first_in_line = inflight.waiting().first() == Some(&id);
            let ks = &keys[s];
            let nd = &mut next_draw[s];
            let mut draw = || {
                let i = *nd;
                *nd += 1;
                Drawn {
                    ty: 0,
                    input: i,
                    conflicts: ks[i % ks.len()],
                }
            };
            // As the driver does: an input without classes and nothing ahead starts at
            // once.
            let p = match la[s].draw_keyless(&mut draw) {
                Some(drawn) => Pick::Start {
                    drawn,
                    reordered: false,
                },
                None => la[s].pick(&mut draw, |c| inflight.busy(id, c)),
            };
            match p {
                Pick::Start { drawn, .. } => {
                    let c = drawn.conflicts;
                    assert!(!inflight.busy(id, c), "{c:?} started while taken");
                    assert!(
                        !inflight.classes().meets(c),
                        "{c:?} started while in flight"
                    );
                    inflight.enter(id, c);
                    assert!(!inflight.waiting().contains(&id), "started, still in line");
                    running[s] = Some(c);
                    started[s].push(drawn.input);
                }
                Pick::Hold(c) => {
                    assert!(inflight.busy(id, c), "held for free classes");
                    // The first in line waits only for classes in flight.
                    assert!(
                        !first_in_line || inflight.classes().meets(c),
                        "the first in line held for classes not in flight"
                    );
                    inflight.wait_for(id, c);
                }
            }
            // The in-flight classes are exactly the running ones', pairwise apart.
            let mut union = Conflicts::NONE;
            for c in running.iter().flatten() {
                assert!(!union.meets(*c), "two in flight share a class");
                union = union.union(*c);
            }
            assert_eq!(inflight.classes(), union);
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
        fn never_two_sharing_a_class_and_order_kept(
            masks in prop::collection::vec(
                prop::collection::vec(
                    prop::option::weighted(0.9, 1u8..16).prop_map(|m| m.unwrap_or(0)),
                    1..20,
                ),
                2..6,
            ),
            steps in prop::collection::vec((0usize..8, any::<bool>()), 0..400),
        ) {
            let keys: Vec<Vec<Conflicts>> = masks
                .iter()
                .map(|v| v.iter().map(|&m| set(m)).collect())
                .collect();
            simulate(&keys, &steps);
        }
    }

    /// Inputs without classes are handed back one at a time in the order drawn, never
    /// queued; one with classes is queued and `pick` starts it next, before any drawn
    /// after it.
    #[test]
    fn keyless_inputs_skip_the_queue() {
        let mut la = Lookahead::new(0);
        let none = Conflicts::NONE;
        let keys = [none, none, set(1 << 5), none, set(1 << 6)];
        let mut i = 0usize;
        let mut draw = || {
            i += 1;
            Drawn {
                ty: 0,
                input: i - 1,
                conflicts: keys[(i - 1) % keys.len()],
            }
        };
        for want in 0..2 {
            let d = la.draw_keyless(&mut draw).expect("no classes");
            assert_eq!(d.input, want);
        }
        assert!(
            la.draw_keyless(&mut draw).is_none(),
            "an input with classes is queued"
        );
        assert_eq!(la.q.len(), 1);
        match la.pick(&mut draw, |_| false) {
            Pick::Start { drawn, reordered } => {
                assert_eq!((drawn.input, reordered), (2, false));
            }
            Pick::Hold(_) => panic!("held with free classes"),
        }
        // Inputs 3.. were drawn ahead by `pick`: no shortcut until they ran.
        assert_eq!(la.q.len(), DEPTH - 1);
        assert!(la.draw_keyless(&mut draw).is_none());
    }

    /// An input is held back when any one of its classes is in flight (here the oldest
    /// has classes 7 and 0, and only 7 is in flight), passed over at most `MAX_PASSED`
    /// times, then waited for; once its classes are free it starts.
    #[test]
    fn passes_over_a_busy_class_then_holds() {
        let inflight = InFlight::default();
        let (other, me) = (inflight.stream_id(), inflight.stream_id());
        inflight.enter(other, set(1 << 7));
        let mut la = Lookahead::new(me);
        let mut i = 0u8;
        // The oldest input: classes 0 and 7; the rest one class each, 1 to 6 in turn.
        let mut draw = || {
            let c = if i == 0 {
                set(1 | 1 << 7)
            } else {
                set(1 << (1 + (i - 1) % 6))
            };
            i += 1;
            Drawn {
                ty: 0,
                input: i - 1,
                conflicts: c,
            }
        };
        for round in 0..MAX_PASSED {
            match la.pick(&mut draw, |c| inflight.busy(me, c)) {
                Pick::Start { drawn, reordered } => {
                    assert!(reordered);
                    assert_ne!(drawn.input, 0, "round {round}");
                }
                Pick::Hold(_) => panic!("held with free inputs after {round} passes"),
            }
        }
        match la.pick(&mut draw, |c| inflight.busy(me, c)) {
            Pick::Hold(c) => assert_eq!(c, set(1 | 1 << 7)),
            Pick::Start { .. } => panic!("started past an input passed over too often"),
        }
        inflight.leave(set(1 << 7));
        match la.pick(&mut draw, |c| inflight.busy(me, c)) {
            Pick::Start { drawn, reordered } => {
                assert_eq!(drawn.input, 0);
                assert!(!reordered);
            }
            Pick::Hold(_) => panic!("held on free classes"),
        }
    }

    /// A stream waiting for a class has the first claim on it: when the class is let
    /// go, a stream not waiting cannot take it again before the waiter starts, and of
    /// two waiters the first in line goes first.
    #[test]
    fn a_waiter_is_not_overtaken() {
        let inflight = InFlight::default();
        let (a, b, c) = (
            inflight.stream_id(),
            inflight.stream_id(),
            inflight.stream_id(),
        );
        let three = set(1 << 3);
        inflight.enter(b, three);
        assert!(inflight.busy(a, three));
        inflight.wait_for(a, three);
        inflight.wait_for(c, three.with(4));
        inflight.wait_for(a, three); // already in line: keeps its place
        assert_eq!(inflight.waiting(), vec![a, c]);
        inflight.leave(three);
        // B, not waiting, would take class 3 again: it is a's.
        assert!(inflight.busy(b, three));
        assert!(inflight.busy(c, three.with(4)), "c is behind a");
        assert!(!inflight.busy(b, set(1 << 5)), "other classes stay free");
        // Class 4 alone is claimed by c (in line) against b, not against a before it.
        assert!(inflight.busy(b, set(1 << 4)));
        assert!(!inflight.busy(a, set(1 << 4)));
        assert!(!inflight.busy(a, three));
        inflight.enter(a, three);
        assert_eq!(inflight.waiting(), vec![c]);
        assert!(inflight.busy(c, three.with(4)), "in flight now");
        inflight.leave(three);
        assert!(!inflight.busy(c, three.with(4)));
        assert!(inflight.busy(b, three), "c's claim now");
        inflight.unqueue(c);
        assert!(!inflight.busy(b, three));
        assert!(inflight.waiting().is_empty());
    }
}
