//! The `btree` and `hash` indexes against `BTreeMap`/`HashMap` (random operation
//! sequences), and under real-thread stress (threads inserting, removing and scanning
//! disjoint and overlapping keys; the content afterwards is exactly what the successful
//! operations imply; scans are always sorted).

use memindex::btree::{BTree, Hints, LeafHint};
use memindex::hash::{HashIndex, Keys};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, u64),
    Remove(Vec<u8>),
    Get(Vec<u8>),
    Scan(Bound<Vec<u8>>, Bound<Vec<u8>>, bool, usize),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Short keys over a tiny alphabet: many prefixes and equal first words.
        4 => prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 0xff]), 0..11),
        // Long keys sharing a 50-byte prefix: comparisons beyond the first word.
        1 => prop::collection::vec(prop::sample::select(vec![0u8, 7, 0xff]), 0..14)
            .prop_map(|s| { let mut k = vec![b'a'; 50]; k.extend(s); k }),
        // Dense integer keys: many splits.
        4 => (0u16..600).prop_map(|v| v.to_be_bytes().to_vec()),
    ]
}

/// Hash values are addresses of leaked (key, number) pairs: the index reads a value's key
/// where the value points, as the engine's values are records that hold their key.
struct Item {
    key: Vec<u8>,
    n: u64,
}

struct ItemKeys;

impl Keys for ItemKeys {
    unsafe fn key<'a>(&self, v: u64) -> &'a [u8] {
        // SAFETY: values are leaked `Item`s (never freed).
        unsafe { &(*(v as *const Item)).key }
    }
    fn prefetch(&self, _: u64, _: usize) {}
}

fn item(key: &[u8], n: u64) -> u64 {
    Box::leak(Box::new(Item {
        key: key.to_vec(),
        n,
    })) as *const Item as u64
}

fn n_of(v: u64) -> u64 {
    // SAFETY: as in `ItemKeys::key`.
    unsafe { (*(v as *const Item)).n }
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => key().prop_map(Bound::Included),
        2 => key().prop_map(Bound::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (key(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => key().prop_map(Op::Remove),
        2 => key().prop_map(Op::Get),
        1 => (bound(), bound(), any::<bool>(), 0usize..80).prop_map(|(a, b, f, l)| Op::Scan(a, b, f, l)),
    ]
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn tree_scan(
    t: &BTree,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    fwd: bool,
    limit: usize,
) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    if limit == 0 {
        return out;
    }
    // A small, varying hint: the scan must go on correctly after a capped first visit.
    let want = limit % 5 + 1;
    t.scan_hint(lo, hi, fwd, want, &mut |_, _| {}, &mut |k, v| {
        out.push((k.to_vec(), v));
        out.len() < limit
    });
    out
}

fn model_scan(
    m: &BTreeMap<Vec<u8>, u64>,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    fwd: bool,
    limit: usize,
) -> Vec<(Vec<u8>, u64)> {
    // BTreeMap::range panics on inverted or equal-excluded ranges; filter instead.
    let inside = |k: &Vec<u8>| {
        (match lo {
            Bound::Included(x) => k >= x,
            Bound::Excluded(x) => k > x,
            Bound::Unbounded => true,
        }) && (match hi {
            Bound::Included(x) => k <= x,
            Bound::Excluded(x) => k < x,
            Bound::Unbounded => true,
        })
    };
    let it = m
        .iter()
        .filter(|(k, _)| inside(k))
        .map(|(k, v)| (k.clone(), *v));
    if fwd {
        it.take(limit).collect()
    } else {
        let mut all: Vec<_> = it.collect();
        all.reverse();
        all.truncate(limit);
        all
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn btree_matches_btreemap(ops in prop::collection::vec(op(), 1..1500)) {
        let t = BTree::new();
        let mut m = BTreeMap::new();
        for o in &ops {
            match o {
                Op::Insert(k, v) => {
                    let r = t.insert(k, *v);
                    match m.get(k) {
                        Some(old) => prop_assert_eq!(r.err(), Some(*old)),
                        None => { prop_assert!(r.is_ok()); m.insert(k.clone(), *v); }
                    }
                }
                Op::Remove(k) => {
                    let want = m.remove(k);
                    // A removal expecting the wrong value must not remove.
                    if let Some(v) = want {
                        prop_assert!(t.remove(k, v.wrapping_add(1)).is_none());
                        prop_assert!(t.remove_and_prune(k, v).is_some());
                    } else {
                        prop_assert!(t.remove(k, 0).is_none());
                    }
                }
                Op::Get(k) => prop_assert_eq!(t.get(k).0, m.get(k).copied()),
                Op::Scan(lo, hi, fwd, limit) => {
                    let got = tree_scan(&t, as_ref(lo), as_ref(hi), *fwd, *limit);
                    let want = model_scan(&m, lo, hi, *fwd, *limit);
                    prop_assert_eq!(got, want, "scan {:?}..{:?} fwd {} limit {}", lo, hi, fwd, limit);
                }
            }
        }
        let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
        prop_assert_eq!(all, m.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn hash_matches_hashmap(ops in prop::collection::vec(op(), 1..1500)) {
        // Four buckets: most keys go past the four slots onto overflow chains.
        let h = HashIndex::with_buckets(4, ItemKeys);
        // key -> (number, value)
        let mut m: HashMap<Vec<u8>, (u64, u64)> = HashMap::new();
        let g = crossbeam_epoch::pin();
        for o in &ops {
            match o {
                Op::Insert(k, n) => {
                    let v = item(k, *n);
                    let r = h.insert(k, v, &g);
                    match m.get(k) {
                        Some(&(_, old)) => prop_assert_eq!(r.err(), Some(old)),
                        None => { prop_assert!(r.is_ok()); m.insert(k.clone(), (*n, v)); }
                    }
                }
                Op::Remove(k) => {
                    if let Some((n, v)) = m.remove(k) {
                        // Another value with the same key and number is not this one.
                        prop_assert!(h.remove(k, item(k, n), &g).is_none());
                        prop_assert!(h.remove(k, v, &g).is_some());
                    } else {
                        prop_assert!(h.remove(k, item(k, 0), &g).is_none());
                    }
                }
                Op::Get(k) | Op::Scan(Bound::Included(k), _, _, _) => {
                    let got = h.get(k, &g).0;
                    prop_assert_eq!(got.map(n_of), m.get(k).map(|e| e.0));
                    prop_assert_eq!(got, m.get(k).map(|e| e.1));
                }
                Op::Scan(..) => {}
            }
        }
        for (k, &(_, v)) in &m {
            prop_assert_eq!(h.get(k, &g).0, Some(v));
        }
        let mut h = h;
        let mut n = 0;
        h.for_each_entry(|k, v| { n += 1; assert_eq!(m[k].1, v); });
        prop_assert_eq!(n, m.len());
    }
}

#[test]
fn btree_versions_change_on_insert_and_remove_only() {
    let t = BTree::new();
    let (none, ver, v0) = t.get(b"k");
    assert_eq!(none, None);
    let c = t.insert(b"k", 1).unwrap();
    assert_eq!(c.ver, ver);
    assert_eq!(c.before, v0);
    assert_ne!(c.after, v0);
    // A failed insert and a lookup leave the version alone.
    assert_eq!(t.insert(b"k", 2).unwrap_err(), 1);
    let (_, _, v1) = t.get(b"k");
    assert_eq!(v1, c.after);
    let c2 = t.remove(b"k", 1).unwrap();
    assert_eq!(c2.before, v1);
    assert_ne!(c2.after, v1);
}

/// Keys of growing length in the same leaves: each longer key widens the nodes' key side
/// block (copying the other slots' words); every key stays found and ordered.
#[test]
fn btree_keys_growing_longer_in_one_node() {
    let t = BTree::new();
    let mut model = BTreeMap::new();
    // Lengths 1, 9, 17, ..., 64: each round needs one more word per slot.
    for (round, len) in [1usize, 9, 17, 25, 33, 41, 49, 57, 64]
        .into_iter()
        .enumerate()
    {
        for i in 0..3u8 {
            let mut k = vec![b'a' + i; len];
            if len > 1 {
                k[len - 1] = round as u8;
            }
            let v = (round * 10 + i as usize) as u64;
            t.insert(&k, v).unwrap();
            model.insert(k, v);
        }
        for (k, &v) in &model {
            assert_eq!(
                t.get(k).0,
                Some(v),
                "key of {} bytes after round {round}",
                k.len()
            );
        }
        let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
        assert_eq!(
            all,
            model
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect::<Vec<_>>()
        );
    }
    // Removing the long keys leaves the short ones findable through the wide block.
    for (k, &v) in model.iter().filter(|(k, _)| k.len() > 8) {
        assert!(t.remove(k, v).is_some());
    }
    for (k, &v) in model.iter().filter(|(k, _)| k.len() <= 8) {
        assert_eq!(t.get(k).0, Some(v));
    }
}

/// Ten ranges appended to in turn (TPC-C's orders and order lines, one range per
/// district): each insert lands in front of the next range's first keys, not past the
/// node's last key. Leaves must still fill up (they were left half full).
#[test]
fn btree_runs_appended_in_the_middle_fill_their_nodes() {
    let t = BTree::new();
    let key = |r: u64, i: u64| ((r << 40) | i).to_be_bytes();
    let per_run = 5_000u64;
    for i in 0..per_run {
        for r in 0..10u64 {
            t.insert(&key(r, i), i).unwrap();
        }
    }
    let (entries, nodes) = t.census();
    assert_eq!(entries, 10 * per_run);
    // 32 keys per leaf at best; half-full leaves would take 3,125 nodes and more.
    assert!(
        nodes * 24 <= entries,
        "{nodes} nodes for {entries} entries: {:.1} per node",
        entries as f64 / nodes as f64
    );
    let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    assert_eq!(all.len() as u64, entries);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
}

/// Inserts through two hints taken in turn (where each one's last insert went), and
/// lookups and removals through another, agree with a model, whatever else changes the
/// tree between them: the other hint's inserts, other inserts splitting the hinted leaf
/// or its neighbours, removals emptying and pruning leaves, duplicates.
#[test]
fn btree_hinted_inserts_match_a_model() {
    // 9-byte keys: two words, as TPC-C's (key blocks allocated with their nodes).
    hinted_inserts_match_a_model(9);
}

/// The same with 50-byte keys (the micro benchmark's string keys): their words past the
/// first sit in key blocks of their own, and a lookup reads the hint's high fence from
/// the node it names after the descent, not level by level on the way down.
#[test]
fn btree_hinted_long_keys_match_a_model() {
    hinted_inserts_match_a_model(50);
}

fn hinted_inserts_match_a_model(len: usize) {
    let t = BTree::new();
    let mut model = BTreeMap::new();
    // Two insert hints taken in turn, as two workers appending to the same runs: each
    // sees the leaf changed by the other's inserts since it last used it.
    let mut hints = [LeafHint::default(), LeafHint::default()];
    let mut look = LeafHint::default();
    let mut aheads = 0u64;
    let key = |r: u64, i: u64| {
        let mut k = ((r << 40) | i).to_be_bytes().to_vec();
        // Bytes past the first word that vary too (the tail is not all one value).
        k.extend((0..len - 8).map(|j| ((i % 3) as u8).wrapping_add(j as u8)));
        k
    };
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = [0u64; 8];
    for step in 0..40_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = x % 8;
        match (x >> 8) % 10 {
            // Runs appended through the hint, a few keys at a time per run.
            0..=5 => {
                for _ in 0..(x >> 16) % 12 {
                    let k = key(r, next[r as usize]);
                    next[r as usize] += 1;
                    let hint = &mut hints[(next[r as usize] % 2) as usize];
                    let got = t.insert_hinted(&k, step, hint);
                    match model.get(&k) {
                        Some(&was) => assert_eq!(got.err(), Some(was), "{k:?}"),
                        None => {
                            assert!(got.is_ok(), "{k:?}");
                            model.insert(k, step);
                        }
                    }
                }
            }
            // A duplicate through the hint.
            6 if next[r as usize] > 0 => {
                let k = key(r, next[r as usize] - 1);
                let got = t.insert_hinted(&k, step, &mut hints[(step % 2) as usize]);
                match model.get(&k) {
                    Some(&want) => assert_eq!(got.err(), Some(want)),
                    None => {
                        assert!(got.is_ok());
                        model.insert(k, step);
                    }
                }
            }
            // Plain inserts anywhere (splits under the hint).
            7 => {
                let k = key(r, (x >> 20) % (next[r as usize] + 50));
                let got = t.insert(&k, step);
                assert_eq!(got.is_ok(), !model.contains_key(&k));
                model.entry(k).or_insert(step);
            }
            // Removals from the front of a run (pruning leaves under the hint).
            _ => {
                let lo = key(r, 0);
                let gone: Vec<(Vec<u8>, u64)> = model
                    .range(lo..key(r + 1, 0))
                    .take(((x >> 24) % 40) as usize)
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                for (k, v) in gone {
                    // Through the lookup finger too (a wrong value first: not removed).
                    if step % 2 == 0 {
                        assert!(t.remove_hinted(&k, v + 1, &mut look).is_none());
                        assert!(t.remove_hinted(&k, v, &mut look).is_some());
                    } else {
                        assert!(t.remove_and_prune(&k, v).is_some());
                    }
                    model.remove(&k);
                }
            }
        }
        // Lookups through a finger (where the last one ended): runs of nearby keys, and
        // keys of other runs, present or not, as the tree changes under the finger.
        for j in 0..4 {
            let q = if j == 3 { (x >> 30) % 8 } else { r };
            let k = key(q, (x >> (32 + 4 * j)) % (next[q as usize] + 5));
            let (got, _, _) = t.get_hinted(&k, &mut look);
            assert_eq!(got, model.get(&k).copied(), "step {step}: {k:?}");
            // Then the keys after it, in order, as Delivery reads an order's lines: a
            // lookup that found its key in the slot after the last one names the value
            // of the key after it (`ahead`), and only that.
            if j == 0 {
                let run: Vec<Vec<u8>> = model
                    .range::<Vec<u8>, _>((Bound::Excluded(&k), Bound::Unbounded))
                    .take(4)
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in run {
                    let (got, _, _) = t.get_hinted(&k, &mut look);
                    assert_eq!(got, model.get(&k).copied(), "step {step}: {k:?}");
                    if look.ahead() != 0 {
                        let after = model
                            .range::<Vec<u8>, _>((Bound::Excluded(&k), Bound::Unbounded))
                            .next()
                            .map(|(_, v)| *v);
                        assert_eq!(Some(look.ahead()), after, "step {step}: {k:?}");
                        aheads += 1;
                    }
                }
            }
        }
    }
    // Most runs of lookups stay in one leaf: the values ahead were named.
    assert!(aheads > 50_000, "{aheads} values ahead named");
    let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

/// A table's hints keep one slot per key prefix for TPC-C's keys: the twenty districts of
/// two warehouses, visited in turn, each find the slot they used before, and no two share
/// one (a shared slot undoes the other district's hint at every visit).
#[test]
fn btree_hints_keep_one_slot_per_district() {
    let key = |w: u32, d: u8, o: u32| {
        let mut k = w.to_be_bytes().to_vec();
        k.push(d);
        k.extend_from_slice(&o.to_be_bytes());
        k.push(1);
        k
    };
    for o in [1u32, 3_000, 70_000, 1 << 20] {
        let mut h = Hints::default();
        let mut first = Vec::new();
        for round in 0..3 {
            for w in 1..=2 {
                for d in 1..=10 {
                    let p = h.for_key(&key(w, d, o + round)) as *const LeafHint;
                    if round == 0 {
                        first.push(p);
                    } else {
                        assert_eq!(p, first[((w - 1) * 10 + d as u32 - 1) as usize]);
                    }
                }
            }
        }
        let mut distinct = first.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            20,
            "orders near {o}: districts share hint slots"
        );
    }
}

/// Ten queues side by side (TPC-C's New-Order table, one per district): each appends
/// at its back and removes from its front, so inner nodes at the fronts are drained of
/// children. The tree must not keep what is drained: the nodes reachable stay in
/// proportion to the live entries, and a scan from a queue's start finds its head at once.
#[test]
fn btree_queues_do_not_keep_drained_nodes() {
    let t = BTree::new();
    let key = |q: u64, i: u64| ((q << 40) | i).to_be_bytes();
    let (mut head, mut tail) = ([0u64; 10], [0u64; 10]);
    // Each queue spans more leaves than an inner node holds, so whole inner nodes drain.
    for round in 0..150 {
        for q in 0..10 {
            for _ in 0..200 {
                t.insert(&key(q, tail[q as usize]), tail[q as usize])
                    .unwrap();
                tail[q as usize] += 1;
            }
            let keep = if round % 5 == 0 { 1_500 } else { 2_500 };
            while tail[q as usize] - head[q as usize] > keep {
                let h = head[q as usize];
                assert!(
                    t.remove_and_prune(&key(q, h), h).is_some(),
                    "remove {q}/{h}"
                );
                head[q as usize] += 1;
            }
        }
    }
    let live: u64 = (0..10).map(|q| tail[q] - head[q]).sum();
    let (entries, nodes) = t.census();
    assert_eq!(entries, live);
    // Nearly full leaves (appends) would be live / 32; a queue's ends add a partly
    // filled leaf or two each. Drained chains kept added 60% more (1,354 nodes for
    // 23,000 entries against 793).
    assert!(
        nodes <= live / 20 + 40,
        "{nodes} nodes reachable for {live} live entries (pruned {})",
        t.pruned_nodes()
    );
    for q in 0..10u64 {
        let from = key(q, 0);
        let first = tree_scan(&t, Bound::Included(&from), Bound::Unbounded, true, 1);
        assert_eq!(
            first,
            vec![(key(q, head[q as usize]).to_vec(), head[q as usize])]
        );
        let all = tree_scan(
            &t,
            Bound::Included(&from),
            Bound::Excluded(&key(q + 1, 0)),
            true,
            usize::MAX,
        );
        assert_eq!(all.len() as u64, tail[q as usize] - head[q as usize]);
    }
}

/// A queue (TPC-C's New-Order table): appends at the back, removes from the front.
/// Emptied leaves leave the tree, and lookups, scans and inserts stay right.
#[test]
fn btree_queue_prunes_emptied_leaves() {
    let t = BTree::new();
    let key = |i: u64| i.to_be_bytes();
    let (mut head, mut tail) = (0u64, 0u64);
    for round in 0..40 {
        for _ in 0..300 {
            t.insert(&key(tail), tail).unwrap();
            tail += 1;
        }
        for _ in 0..(if round % 4 == 3 { 100 } else { 250 }) {
            assert!(
                t.remove_and_prune(&key(head), head).is_some(),
                "remove {head}"
            );
            head += 1;
        }
        // The first entry from the start of the key space is the queue's head.
        let first = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, 1);
        assert_eq!(first, vec![(key(head).to_vec(), head)]);
        let back = tree_scan(&t, Bound::Unbounded, Bound::Excluded(&key(head)), false, 1);
        assert!(back.is_empty(), "a removed key is still scanned");
    }
    assert!(t.pruned_nodes() > 0, "no emptied leaf was pruned");
    let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    assert_eq!(
        all,
        (head..tail)
            .map(|i| (key(i).to_vec(), i))
            .collect::<Vec<_>>()
    );
    for i in (0..tail).step_by(7) {
        assert_eq!(t.get(&key(i)).0, (i >= head).then_some(i), "get {i}");
    }
    // Re-inserting removed keys lands in the leaves that took the pruned ranges over.
    for i in 0..head {
        t.insert(&key(i), i).unwrap();
    }
    let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    assert_eq!(
        all,
        (0..tail).map(|i| (key(i).to_vec(), i)).collect::<Vec<_>>()
    );
}

const THREADS: u64 = 4;

fn stress_key(k: u64) -> Vec<u8> {
    // Mix short and long keys.
    if k.is_multiple_of(5) {
        let mut v = vec![b'x'; 40];
        v.extend_from_slice(&k.to_be_bytes());
        v
    } else {
        k.to_be_bytes().to_vec()
    }
}

/// Threads own the keys they inserted; the shared key range makes inserts race.
fn stress<I: Sync>(
    index: &I,
    ops_per_thread: u64,
    insert: impl Fn(&I, &[u8], u64) -> Result<(), u64> + Sync,
    remove: impl Fn(&I, &[u8], u64) -> bool + Sync,
    get: impl Fn(&I, &[u8]) -> Option<u64> + Sync,
    scan: Option<&(dyn Fn(&I) + Sync)>,
) -> BTreeMap<Vec<u8>, u64> {
    stress_by(stress_key, index, ops_per_thread, insert, remove, get, scan)
}

/// `stress` with the keys `key_of` makes of the numbers drawn.
fn stress_by<I: Sync>(
    key_of: fn(u64) -> Vec<u8>,
    index: &I,
    ops_per_thread: u64,
    insert: impl Fn(&I, &[u8], u64) -> Result<(), u64> + Sync,
    remove: impl Fn(&I, &[u8], u64) -> bool + Sync,
    get: impl Fn(&I, &[u8]) -> Option<u64> + Sync,
    scan: Option<&(dyn Fn(&I) + Sync)>,
) -> BTreeMap<Vec<u8>, u64> {
    let models: Vec<BTreeMap<Vec<u8>, u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (insert, remove, get) = (&insert, &remove, &get);
                s.spawn(move || {
                    let mut model = BTreeMap::new();
                    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1);
                    for i in 0..ops_per_thread {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Half the keys are disjoint per thread, half shared by all.
                        let k = if x.is_multiple_of(2) {
                            (x >> 8) % 3000 * THREADS + t
                        } else {
                            1_000_000 + (x >> 8) % 2000
                        };
                        let key = key_of(k);
                        let v = (t << 48) | i;
                        match (x >> 4) % 4 {
                            0 | 1 => {
                                if insert(index, &key, v).is_ok() {
                                    model.insert(key, v);
                                }
                            }
                            2 => {
                                if let Some(&mine) = model.get(&key) {
                                    assert!(remove(index, &key, mine), "owner's remove failed");
                                    model.remove(&key);
                                }
                            }
                            _ => {
                                if let Some(&mine) = model.get(&key) {
                                    assert_eq!(get(index, &key), Some(mine), "owner's key lost");
                                }
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        if let Some(scan) = scan {
            for _ in 0..50 {
                scan(index);
            }
        }
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = BTreeMap::new();
    for m in models {
        for (k, v) in m {
            assert!(all.insert(k, v).is_none(), "two threads own one key");
        }
    }
    all
}

#[test]
fn btree_concurrent_stress() {
    let t = Arc::new(BTree::new());
    let scan = |t: &Arc<BTree>| {
        for fwd in [true, false] {
            let mut prev: Option<Vec<u8>> = None;
            let lo = 500u64.to_be_bytes();
            t.scan(
                Bound::Included(&lo),
                Bound::Unbounded,
                fwd,
                &mut |_, _| {},
                &mut |k, _| {
                    if fwd {
                        assert!(k >= &lo[..]);
                    }
                    if let Some(p) = &prev {
                        assert!(
                            if fwd {
                                p.as_slice() < k
                            } else {
                                p.as_slice() > k
                            },
                            "scan out of order"
                        );
                    }
                    prev = Some(k.to_vec());
                    true
                },
            );
        }
    };
    let want = stress(
        &t,
        30_000,
        |t, k, v| t.insert(k, v).map(|_| ()),
        |t, k, v| t.remove_and_prune(k, v).is_some(),
        |t, k| t.get(k).0,
        Some(&scan),
    );
    let got = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    assert_eq!(got, want.into_iter().collect::<Vec<_>>());
}

/// The stress above through hinted lookups and inserts (one hint per thread): a
/// lookup reads its leaf's high fence after the leaf, from the node the descent noted,
/// and may suspend (a probe point) between searching the leaf and comparing the whole
/// key; the leaf's and that node's versions, checked after, must catch every change.
#[test]
fn btree_concurrent_stress_hinted() {
    thread_local! {
        static LOOK: std::cell::RefCell<LeafHint> = std::cell::RefCell::new(LeafHint::default());
        static INS: std::cell::RefCell<LeafHint> = std::cell::RefCell::new(LeafHint::default());
    }
    let t = Arc::new(BTree::new());
    let want = stress(
        &t,
        30_000,
        |t, k, v| INS.with(|h| t.insert_hinted(k, v, &mut h.borrow_mut()).map(|_| ())),
        |t, k, v| LOOK.with(|h| t.remove_hinted(k, v, &mut h.borrow_mut()).is_some()),
        |t, k| LOOK.with(|h| t.get_hinted(k, &mut h.borrow_mut()).0),
        None,
    );
    let got = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    assert_eq!(got, want.into_iter().collect::<Vec<_>>());
}

#[test]
fn hash_concurrent_stress() {
    // Small: long chains, slots refilled from them.
    let h = HashIndex::with_buckets(64, ItemKeys);
    let want = stress(
        &h,
        30_000,
        |h, k, n| {
            let v = item(k, n);
            h.insert(k, v, &crossbeam_epoch::pin())
                .map(|_| ())
                .map_err(n_of)
        },
        |h, k, n| {
            // The owner's value for its key (only the owner removes it).
            let g = crossbeam_epoch::pin();
            match h.get(k, &g).0 {
                Some(v) if n_of(v) == n => h.remove(k, v, &g).is_some(),
                _ => false,
            }
        },
        |h, k| h.get(k, &crossbeam_epoch::pin()).0.map(n_of),
        None,
    );
    let g = crossbeam_epoch::pin();
    for (k, n) in &want {
        assert_eq!(h.get(k, &g).0.map(n_of), Some(*n));
    }
    let mut n = 0;
    let mut h = h;
    h.for_each(|_| n += 1);
    assert_eq!(n, want.len(), "hash holds entries no thread owns");
}

/// Queues of several threads side by side (each thread its own queue, the queues sharing
/// inner nodes), with scans running meanwhile: drained leaves and chains of inner nodes
/// are cut out while other threads descend through and split their neighbours.
#[test]
fn btree_concurrent_queues() {
    let t = BTree::new();
    let key = |q: u64, i: u64| ((q << 40) | i).to_be_bytes();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let heads: Vec<(u64, u64)> = std::thread::scope(|s| {
        let scanner = s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
                assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "scan out of order");
                for (k, v) in &all {
                    assert_eq!(
                        u64::from_be_bytes(k[..].try_into().unwrap()) & ((1 << 40) - 1),
                        *v
                    );
                }
            }
        });
        let hs: Vec<_> = (0..THREADS)
            .map(|q| {
                let t = &t;
                s.spawn(move || {
                    let (mut head, mut tail) = (0u64, 0u64);
                    let mut hint = LeafHint::default();
                    for round in 0..60u64 {
                        for _ in 0..150 {
                            t.insert_hinted(&key(q, tail), tail, &mut hint).unwrap();
                            tail += 1;
                        }
                        let keep = if round % 3 == 0 { 200 } else { 1_200 };
                        while tail - head > keep {
                            assert!(t.remove_and_prune(&key(q, head), head).is_some());
                            head += 1;
                        }
                        let first =
                            tree_scan(t, Bound::Included(&key(q, 0)), Bound::Unbounded, true, 1);
                        assert_eq!(first, vec![(key(q, head).to_vec(), head)]);
                    }
                    (head, tail)
                })
            })
            .collect();
        let r = hs.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        scanner.join().unwrap();
        r
    });
    let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    let want: Vec<(Vec<u8>, u64)> = heads
        .iter()
        .enumerate()
        .flat_map(|(q, &(h, tl))| (h..tl).map(move |i| (key(q as u64, i).to_vec(), i)))
        .collect();
    assert_eq!(all, want);
    assert!(t.pruned_nodes() > 0);
}

/// A keyed B+tree lookup (`BTree::get_hinted_keyed`) whose values are leaked `Item`s:
/// the key is compared in the item. Returns the item's number and whether the lookup
/// found it through the item (the candidate slot alone, no key block).
fn keyed_get(t: &BTree, hints: &mut Hints, k: &[u8]) -> (Option<u64>, bool) {
    let (v, _, _, by_item) = t.get_hinted_keyed(
        k,
        hints.for_key(k),
        |_| {},
        // SAFETY: values are leaked `Item`s (never freed).
        |v, k| unsafe { ItemKeys.key(v) } == k,
    );
    (v.map(n_of), by_item)
}

/// `k` with its last byte changed: the same first word and length, another key (the
/// candidate a keyed lookup compares in the value, which must not take it for `k`).
fn twin(k: &[u8]) -> Vec<u8> {
    let mut t = k.to_vec();
    if let Some(b) = t.last_mut() {
        *b ^= 1;
    }
    t
}

/// Keys of 17-64 bytes (and a few short ones): a random first word (alone in its leaf,
/// the keyed path), or first 8 or 16 bytes shared by many keys (the key block decides),
/// tails over a tiny alphabet so that keys of equal first word and length abound.
fn long_key() -> impl Strategy<Value = Vec<u8>> {
    let tail = |lo: usize, hi: usize| {
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xff]), lo..hi)
    };
    prop_oneof![
        3 => (any::<u64>(), tail(9, 57)).prop_map(|(w, t)| {
            let mut k = w.to_be_bytes().to_vec();
            k.extend(t);
            k
        }),
        2 => (0u8..3, tail(9, 24)).prop_map(|(p, t)| {
            let mut k = vec![p; 8];
            k.extend(t);
            k
        }),
        2 => (0u8..2, tail(1, 12)).prop_map(|(p, t)| {
            let mut k = vec![b'q'; 8];
            k.extend([p; 8]);
            k.extend(t);
            k
        }),
        1 => tail(0, 17),
    ]
}

#[derive(Debug, Clone)]
enum KeyedOp {
    Insert(Vec<u8>),
    Remove(Vec<u8>),
    Get(Vec<u8>),
}

fn keyed_op() -> impl Strategy<Value = KeyedOp> {
    prop_oneof![
        4 => long_key().prop_map(KeyedOp::Insert),
        1 => long_key().prop_map(KeyedOp::Remove),
        3 => long_key().prop_map(KeyedOp::Get),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Keyed lookups agree with a map for every key present and absent, and for each
    /// present key's twin (same first word and length, present or not); plain lookups
    /// and scans of the same tree too.
    #[test]
    fn btree_keyed_lookups_match_btreemap(ops in prop::collection::vec(keyed_op(), 1..1200)) {
        let t = BTree::new();
        let mut hints = Hints::default();
        let mut m: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for (n, o) in ops.iter().enumerate() {
            match o {
                KeyedOp::Insert(k) => {
                    let v = item(k, n as u64);
                    match t.insert_hinted(k, v, hints.for_key(k)) {
                        Ok(_) => {
                            prop_assert!(m.insert(k.clone(), v).is_none());
                        }
                        Err(old) => prop_assert_eq!(Some(old), m.get(k).copied()),
                    }
                }
                KeyedOp::Remove(k) => match m.remove(k) {
                    Some(v) => prop_assert!(t.remove_hinted(k, v, hints.for_key(k)).is_some()),
                    None => prop_assert!(t.remove(k, 0).is_none()),
                },
                KeyedOp::Get(k) => {
                    for k in [k.clone(), twin(k)] {
                        let want = m.get(&k).copied().map(n_of);
                        prop_assert_eq!(keyed_get(&t, &mut hints, &k).0, want, "{:?}", k);
                    }
                }
            }
        }
        for (k, &v) in &m {
            prop_assert_eq!(keyed_get(&t, &mut hints, k).0, Some(n_of(v)));
            let tw = twin(k);
            prop_assert_eq!(keyed_get(&t, &mut hints, &tw).0, m.get(&tw).copied().map(n_of));
            prop_assert_eq!(t.get(k).0, Some(v));
        }
        let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
        prop_assert_eq!(all, m.into_iter().collect::<Vec<_>>());
    }
}

/// Which path a keyed lookup takes: a key alone with its first word in its leaf is found
/// through the value (its twin, same first word and length, is compared there and
/// refused); keys sharing their first 8 or 16 bytes, and keys of at most 16 bytes, are
/// found through the key block; lookups in key order (through the hint, whose high fence
/// is read only then) and after removals agree.
#[test]
fn btree_keyed_lookups_compare_in_the_value_when_the_first_word_decides() {
    let t = BTree::new();
    let mut hints = Hints::default();
    let random = |i: u64| {
        // (Not 0 for i = 0: the short keys' first word is 0 for theirs.)
        let mut k = (i + 1)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .to_be_bytes()
            .to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k.resize(50, b'z');
        k
    };
    let shared8 = |i: u64| {
        let mut k = b"shared:8".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k.resize(30, b'y');
        k
    };
    let shared16 = |i: u64| {
        let mut k = b"shared:16-bytes!".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k.push(1);
        k
    };
    let short = |i: u64| (i * 3).to_be_bytes()[2..].to_vec();
    let kinds: [&dyn Fn(u64) -> Vec<u8>; 4] = [&random, &shared8, &shared16, &short];
    const N: u64 = 5_000;
    for (j, kind) in kinds.iter().enumerate() {
        for i in 0..N {
            let k = kind(i);
            t.insert(&k, item(&k, j as u64 * N + i)).expect("a new key");
        }
    }
    for (j, kind) in kinds.iter().enumerate() {
        for i in 0..N {
            let k = kind(i);
            let (got, by_item) = keyed_get(&t, &mut hints, &k);
            assert_eq!(got, Some(j as u64 * N + i), "kind {j} key {i}");
            assert_eq!(by_item, j == 0, "kind {j} key {i}: found through the item");
            assert_eq!(
                keyed_get(&t, &mut hints, &twin(&k)).0,
                None,
                "kind {j} twin {i}"
            );
            let mut longer = k.clone();
            longer.push(0);
            assert_eq!(
                keyed_get(&t, &mut hints, &longer).0,
                None,
                "kind {j} longer {i}"
            );
        }
    }
    // In key order: runs of lookups in one leaf, through the hint.
    let all = tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
    assert_eq!(all.len() as u64, 4 * N);
    for (k, v) in &all {
        assert_eq!(keyed_get(&t, &mut hints, k).0, Some(n_of(*v)));
    }
    // Every other key removed: the removed ones absent, the others found.
    for (i, (k, v)) in all.iter().enumerate() {
        if i % 2 == 0 {
            assert!(t.remove_and_prune(k, *v).is_some());
        }
    }
    for (i, (k, v)) in all.iter().enumerate() {
        let want = (i % 2 == 1).then(|| n_of(*v));
        assert_eq!(
            keyed_get(&t, &mut hints, k).0,
            want,
            "key {i} after removals"
        );
    }
}

/// Keys for the keyed stress: most with a first word of their own, a quarter sharing
/// one, a few short; 17-56 bytes.
fn keyed_stress_key(k: u64) -> Vec<u8> {
    if k.is_multiple_of(7) {
        return k.to_be_bytes().to_vec();
    }
    let mut v = if k.is_multiple_of(4) {
        b"shared:k".to_vec()
    } else {
        k.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes().to_vec()
    };
    v.extend_from_slice(&k.to_be_bytes());
    v.resize(17 + (k % 40) as usize, b'z');
    v
}

/// The stress through keyed lookups (values are leaked `Item`s holding their keys, as
/// the engine's records do): a lookup compares the key in the value after the leaf's
/// version was checked and after a probe point, while other threads insert, remove and
/// split around it.
#[test]
fn btree_concurrent_stress_keyed() {
    thread_local! {
        static LOOK: std::cell::RefCell<Hints> = std::cell::RefCell::new(Hints::default());
        static INS: std::cell::RefCell<Hints> = std::cell::RefCell::new(Hints::default());
        static OWN: std::cell::RefCell<HashMap<u64, u64>> = Default::default();
    }
    let t = BTree::new();
    let want = stress_by(
        keyed_stress_key,
        &t,
        30_000,
        |t, k, n| {
            let v = item(k, n);
            INS.with(|h| t.insert_hinted(k, v, h.borrow_mut().for_key(k)))
                .map(|_| {
                    OWN.with(|o| o.borrow_mut().insert(n, v));
                })
                .map_err(n_of)
        },
        |t, k, n| {
            let v = OWN
                .with(|o| o.borrow_mut().remove(&n))
                .expect("the owner's value");
            LOOK.with(|h| t.remove_hinted(k, v, h.borrow_mut().for_key(k)).is_some())
        },
        |t, k| LOOK.with(|h| keyed_get(t, &mut h.borrow_mut(), k).0),
        None,
    );
    let mut hints = Hints::default();
    for (k, n) in &want {
        assert_eq!(keyed_get(&t, &mut hints, k).0, Some(*n));
    }
    let got: Vec<(Vec<u8>, u64)> =
        tree_scan(&t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX)
            .into_iter()
            .map(|(k, v)| (k, n_of(v)))
            .collect();
    assert_eq!(got, want.into_iter().collect::<Vec<_>>());
}

/// Trees of at least three levels at whatever `FANOUT` nodes have (a two-level tree holds
/// at most `FANOUT * (FANOUT + 1)` keys, and these hold three times `FANOUT` squared), of
/// each kind of key: 8-byte integers (no key block), 12-byte composite keys (a one-word
/// block allocated with each node), 50-byte strings (blocks of their own), and lengths
/// from 1 to 64 bytes mixed (blocks widened in full nodes). Inserts in a scrambled
/// order, plain and hinted (leaf and inner splits at every point of the node); then
/// lookups, scans across many leaves both ways, capped and bounded; then half the keys
/// removed with pruning, and the same checks again.
#[test]
fn btree_deep_trees_at_the_fanout_match_a_model() {
    use memindex::btree::FANOUT;
    let count = 3 * FANOUT * FANOUT;
    assert!(count > FANOUT * (FANOUT + 1));
    let scramble = |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
    type KeyOf<'a> = &'a dyn Fn(u64) -> Vec<u8>;
    let kinds: [(&str, KeyOf); 4] = [
        ("8-byte", &|i| scramble(i).to_be_bytes().to_vec()),
        ("12-byte", &|i| {
            let mut k = vec![0u8; 4];
            k.extend(scramble(i).to_be_bytes());
            k
        }),
        ("50-byte", &|i| {
            let mut k = scramble(i).to_be_bytes().to_vec();
            k.resize(50, b'x');
            k[49] = i as u8;
            k
        }),
        ("1-64-byte", &|i| {
            let s = scramble(i);
            let mut k = s.to_be_bytes().to_vec();
            k.resize(1 + (s % 64) as usize, (i % 251) as u8);
            k
        }),
    ];
    for (name, key) in kinds {
        let t = BTree::new();
        let mut hint = LeafHint::default();
        let mut m = BTreeMap::new();
        for i in 0..count as u64 {
            let k = key(i);
            let r = if i % 3 == 0 {
                t.insert_hinted(&k, i, &mut hint)
            } else {
                t.insert(&k, i)
            };
            match m.get(&k) {
                Some(&old) => assert_eq!(r.err(), Some(old), "{name}"),
                None => {
                    assert!(r.is_ok(), "{name}");
                    m.insert(k, i);
                }
            }
        }
        let check = |t: &BTree, m: &BTreeMap<Vec<u8>, u64>| {
            assert_eq!(t.census().0, m.len() as u64, "{name}");
            for (k, &v) in m.iter().step_by(7) {
                assert_eq!(t.get(k).0, Some(v), "{name}");
            }
            let fwd = tree_scan(t, Bound::Unbounded, Bound::Unbounded, true, usize::MAX);
            assert_eq!(
                fwd,
                m.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>()
            );
            let mut back = tree_scan(t, Bound::Unbounded, Bound::Unbounded, false, usize::MAX);
            back.reverse();
            assert_eq!(back, fwd, "{name}: backward scan");
            let keys: Vec<&Vec<u8>> = m.keys().collect();
            for j in 0..60u64 {
                let a = keys[(scramble(j) % keys.len() as u64) as usize].clone();
                let b = keys[(scramble(j + 1000) % keys.len() as u64) as usize].clone();
                let (lo, hi) = if j % 2 == 0 {
                    (Bound::Included(a), Bound::Excluded(b))
                } else {
                    (Bound::Excluded(a), Bound::Included(b))
                };
                let limit = [1, 3 * FANOUT, 700][j as usize % 3];
                let fwd = j % 4 < 2;
                assert_eq!(
                    tree_scan(t, as_ref(&lo), as_ref(&hi), fwd, limit),
                    model_scan(m, &lo, &hi, fwd, limit),
                    "{name}: scan {j}"
                );
            }
        };
        check(&t, &m);
        let gone: Vec<(Vec<u8>, u64)> = m
            .iter()
            .enumerate()
            .filter(|(j, _)| {
                scramble(*j as u64).is_multiple_of(2) || (j / FANOUT).is_multiple_of(5)
            })
            .map(|(_, (k, v))| (k.clone(), *v))
            .collect();
        for (k, v) in &gone {
            assert!(t.remove_and_prune(k, *v).is_some(), "{name}");
            m.remove(k);
            assert_eq!(t.get(k).0, None, "{name}");
        }
        assert!(
            t.pruned_nodes() > 0,
            "{name}: runs of removed keys empty whole leaves"
        );
        check(&t, &m);
    }
}

/// Under `--interleave` (a scheduler that switches at probe points), a point lookup asks
/// for a leaf below the top two levels in two steps: the lines its search reads, then the
/// line of the value the search chose, with a probe point after each; alone on its thread
/// it asks for whole leaves. In a tree of four levels (leaves at depth 3, one probe point
/// per lookup with whole leaves) that is two probe points per lookup of a present key;
/// every lookup still reads the right value, and a scan the right keys.
#[test]
fn btree_interleaved_lookups_ask_for_the_leaf_in_two_steps() {
    let t = BTree::new();
    // Loaded in order, 40,000 keys make four levels at 32 keys per node (31 per node
    // after the splits of appends: 1,291 leaves, 42 and 2 inner nodes, the root).
    const N: u64 = 40_000;
    for k in 0..N {
        assert!(t.insert(&(2 * k).to_be_bytes(), k).is_ok());
    }
    const LOOKUPS: u64 = 500;
    let t = &t;
    let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..2u64)
        .map(|c| {
            Box::new(move || {
                let mut hints = Hints::default();
                for i in 0..LOOKUPS {
                    let k = (i * 7919 + c * 104_729) % N;
                    let key = (2 * k).to_be_bytes();
                    assert_eq!(t.get_hinted(&key, hints.for_key(&key)).0, Some(k));
                    assert_eq!(t.get(&key).0, Some(k));
                }
            }) as Box<dyn FnOnce() + '_>
        })
        .collect();
    let st = rt::coro::run(rt::coro::Policy::INTERLEAVE, bodies);
    // Two lookups per step of each coroutine; the last of one runs alone (no switch).
    let lookups = 2 * 2 * LOOKUPS;
    assert!(st.probe_switches >= 2 * lookups - 4, "{st:?}");
    assert!(st.probe_switches <= 2 * lookups, "{st:?}");
    // Absent keys (between present ones) and scans take the same leaves.
    let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..2u64)
        .map(|c| {
            Box::new(move || {
                for i in 0..LOOKUPS {
                    let k = (i * 7919 + c * 104_729) % N;
                    assert_eq!(t.get(&(2 * k + 1).to_be_bytes()).0, None);
                    let from = (2 * k).to_be_bytes();
                    let seen = tree_scan(t, Bound::Included(&from[..]), Bound::Unbounded, true, 3);
                    let want: Vec<(Vec<u8>, u64)> = (k..(k + 3).min(N))
                        .map(|j| ((2 * j).to_be_bytes().to_vec(), j))
                        .collect();
                    assert_eq!(seen, want);
                }
            }) as Box<dyn FnOnce() + '_>
        })
        .collect();
    rt::coro::run(rt::coro::Policy::INTERLEAVE, bodies);
}

/// `set_probes(false)` (a table expected to stay in cache): lookups in the same four-level
/// tree and in a hash index still find every key, prefetching as before, but reach no
/// probe point, so an interleaving scheduler never switches inside them; with probes on
/// (the default) the same lookups switch.
#[test]
fn lookups_without_probes_never_switch() {
    const N: u64 = 40_000;
    const LOOKUPS: u64 = 300;
    let g = crossbeam_epoch::pin();
    let mut tree = BTree::new();
    let mut hash = HashIndex::new(N, ItemKeys);
    let mut items = Vec::new();
    for k in 0..N {
        assert!(tree.insert(&(2 * k).to_be_bytes(), k).is_ok());
        let key = k.to_be_bytes();
        let v = item(&key, k);
        assert!(hash.insert(&key, v, &g).is_ok());
        items.push(v);
    }
    for probes in [true, false] {
        tree.set_probes(probes);
        hash.set_probes(probes);
        assert_eq!((tree.probes(), hash.probes()), (probes, probes));
        let (t, h, items) = (&tree, &hash, &items);
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..2u64)
            .map(|c| {
                Box::new(move || {
                    let g = crossbeam_epoch::pin();
                    let mut hints = Hints::default();
                    for i in 0..LOOKUPS {
                        let k = (i * 7919 + c * 104_729) % N;
                        let key = (2 * k).to_be_bytes();
                        assert_eq!(t.get_hinted(&key, hints.for_key(&key)).0, Some(k));
                        let hk = k.to_be_bytes();
                        assert_eq!(h.get(&hk, &g).0, Some(items[k as usize]));
                    }
                }) as Box<dyn FnOnce() + '_>
            })
            .collect();
        let st = rt::coro::run(rt::coro::Policy::INTERLEAVE, bodies);
        if probes {
            // The tree's two steps and the hash's bucket and record, per lookup pair.
            assert!(st.probe_switches >= 3 * LOOKUPS, "{st:?}");
        } else {
            assert_eq!(st.probe_switches, 0, "{st:?}");
        }
    }
}

/// A transaction that scanned a range and then inserts into it in no order relieves full
/// leaves into their siblings (and splits them): its node set, forgiven each of its own
/// changes, still holds after every insert, and still fails on a key another writer
/// puts into the range afterwards (into a leaf that took keys from a moved sibling).
#[test]
fn btree_own_moves_keep_a_scan_node_set() {
    use memindex::nodeset::NodeSet;
    let t = BTree::new();
    let mix = |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) >> 16;
    // Two thousand keys spread out, so the range holds many leaves under one parent.
    for i in 0..2_000u64 {
        t.insert(&(mix(i) << 8).to_be_bytes(), i)
            .expect("distinct keys");
    }
    let mut set = NodeSet::default();
    let mut scanned = 0;
    t.scan(
        Bound::Unbounded,
        Bound::Unbounded,
        true,
        &mut |ver, v| set.push(ver, v),
        &mut |_, _| {
            scanned += 1;
            true
        },
    );
    assert_eq!(scanned, 2_000);
    let (mut moves, mut splits) = (0, 0);
    for i in 0..6_000u64 {
        let k = ((mix(i + 10_000) << 8) | 1).to_be_bytes();
        let c = t.insert(&k, i).expect("distinct keys");
        if let Some(s) = c.split {
            if s.other_before.is_some() {
                moves += 1;
            } else {
                splits += 1;
            }
        }
        set.forgive(c);
        // SAFETY: the tree outlives the node set's use.
        assert!(
            unsafe { set.unchanged() },
            "own insert {i} failed its own check"
        );
    }
    assert!(moves > 50 && splits > 50, "{moves} moves, {splits} splits");
    // Another writer's key anywhere in the scanned range is a phantom.
    t.insert(&((mix(77) << 8) | 2).to_be_bytes(), 1)
        .expect("a new key");
    assert!(!unsafe { set.unchanged() });
}

/// Under interleaving whose probes' prefetches are held back and issued in groups
/// (`--interleave-group`), lookups in a B+tree of long keys (the key compared in the
/// value) and of short keys, and in a hash index, still find every key and miss every
/// absent one: a held prefetch only moves when the lines are asked for.
#[test]
fn grouped_probes_find_every_key() {
    const N: u64 = 30_000;
    let g = crossbeam_epoch::pin();
    let short = BTree::new();
    let long = BTree::new();
    let hash = HashIndex::new(N, ItemKeys);
    let mut items = Vec::new();
    for k in 0..N {
        assert!(short.insert(&(2 * k).to_be_bytes(), k).is_ok());
        let key = keyed_stress_key(2 * k);
        let v = item(&key, k);
        assert!(long.insert(&key, v).is_ok());
        assert!(hash.insert(&key, v, &g).is_ok());
        items.push(v);
    }
    let (short, long, hash, items) = (&short, &long, &hash, &items);
    for group in [2usize, 4] {
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..4u64)
            .map(|c| {
                Box::new(move || {
                    let g = crossbeam_epoch::pin();
                    // Hints are per tree.
                    let (mut hints, mut long_hints) = (Hints::default(), Hints::default());
                    for i in 0..400 {
                        let k = (i * 7919 + c * 104_729) % N;
                        let key = (2 * k).to_be_bytes();
                        assert_eq!(short.get_hinted(&key, hints.for_key(&key)).0, Some(k));
                        assert_eq!(short.get(&(2 * k + 1).to_be_bytes()).0, None);
                        let lk = keyed_stress_key(2 * k);
                        assert_eq!(keyed_get(long, &mut long_hints, &lk).0, Some(k));
                        let absent = keyed_stress_key(2 * k + 1);
                        assert_eq!(keyed_get(long, &mut long_hints, &absent).0, None);
                        assert_eq!(hash.get(&lk, &g).0, Some(items[k as usize]));
                        assert_eq!(hash.get(&absent, &g).0, None);
                    }
                }) as Box<dyn FnOnce() + '_>
            })
            .collect();
        let st = rt::coro::run(rt::coro::Policy::Interleave { group }, bodies);
        assert!(st.probe_switches > 4 * 400, "group {group}: {st:?}");
    }
}
