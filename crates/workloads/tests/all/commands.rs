//! Each kit's inputs as logged commands (`encode_input` / `decode_input`): every
//! transaction type drawn by `next` comes back equal, TPC-E with what its body took;
//! a command cut short at any length, with a byte too many, or of another kit is an
//! error, never a panic.

use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::tpce::txn::Taken;
use workloads::tpce::{Tpce, TpceConfig};
use workloads::Workload;

/// Draw `n` inputs; each encoded command must decode to an input that `same` accepts,
/// and every prefix of it (and it plus one byte) must be refused.
fn round_trip<W: Workload>(
    wl: &W,
    n: usize,
    mut prepare: impl FnMut(&mut W::WorkerState),
    same: impl Fn(&W::Input, &W::Input, &W::WorkerState) -> bool,
) -> Vec<u32> {
    let mut st = wl.worker_state(0, 1, 11);
    let mut replay = wl.worker_state(0, 1, 11);
    let mut types = Vec::new();
    for _ in 0..n {
        let (ty, input) = wl.next(&mut st);
        prepare(&mut st);
        let mut buf = Vec::new();
        wl.encode_input(&st, &input, &mut buf);
        let back = wl
            .decode_input(&mut replay, &buf)
            .unwrap_or_else(|e| panic!("{} type {ty}: {e}", wl.name()));
        assert!(same(&input, &back, &replay), "{} type {ty}", wl.name());
        for cut in 0..buf.len() {
            assert!(
                wl.decode_input(&mut replay, &buf[..cut]).is_err(),
                "{} type {ty}: cut at {cut} of {} accepted",
                wl.name(),
                buf.len()
            );
        }
        buf.push(0);
        assert!(wl.decode_input(&mut replay, &buf).is_err());
        if !types.contains(&ty) {
            types.push(ty);
        }
    }
    types.sort();
    types
}

#[test]
fn micro_and_tpcb_commands_round_trip() {
    let wl = Micro::new(MicroConfig {
        keys: 1000,
        rows_per_txn: 10,
        mode: Mode::Update,
        columns: Columns::Long,
        distribution: Distribution::Uniform,
        index: api::IndexKind::BTree,
    })
    .unwrap();
    round_trip(&wl, 50, |_| {}, |a, b, _| a.keys() == b.keys());
    let wl = Tpcb::new(
        TpcbConfig {
            scale: 3,
            pad: false,
            affinity: false,
        },
        1,
    )
    .unwrap();
    // The run id travels in the command: a later process inserts the same History key.
    round_trip(
        &wl,
        50,
        |_| {},
        |a, b, _| format!("{a:?}") == format!("{b:?}") && b.run_id == wl.run_id(),
    );
}

#[test]
fn tpcc_commands_round_trip_for_every_type() {
    let wl = Tpcc::new(TpccConfig {
        warehouses: 3,
        ..TpccConfig::default()
    })
    .unwrap();
    let types = round_trip(&wl, 300, |_| {}, |a, b, _| a == b);
    assert_eq!(types, [0, 1, 2, 3, 4]);
}

#[test]
fn tpce_commands_round_trip_with_what_the_body_took() {
    let wl = Tpce::new(TpceConfig {
        customers: 1000,
        trade_hours: 1,
        daily_market_days: 20,
        ..TpceConfig::default()
    })
    .unwrap();
    let mut k = 0u64;
    let types = round_trip(
        &wl,
        600,
        |st| {
            // As a body would leave it: the clock, a trade id, the run's first trade id.
            k += 1;
            st.taken = Taken {
                now: 1_700_000_000_000_000 + k,
                t_id: 200_000 + k,
                first_tid: 100_000,
            };
        },
        |a, b, replay| {
            a == b
                && replay
                    .replay
                    .is_some_and(|t| t.first_tid == 100_000 && t.t_id > 200_000)
        },
    );
    assert!(types.len() >= 9, "types drawn: {types:?}");
}

#[test]
fn a_command_of_another_kit_is_refused() {
    let tpcc = Tpcc::new(TpccConfig {
        warehouses: 1,
        ..TpccConfig::default()
    })
    .unwrap();
    let tpcb = Tpcb::new(
        TpcbConfig {
            scale: 1,
            pad: false,
            affinity: false,
        },
        1,
    )
    .unwrap();
    let mut st = tpcb.worker_state(0, 1, 1);
    let (_, input) = tpcb.next(&mut st);
    let mut buf = Vec::new();
    tpcb.encode_input(&st, &input, &mut buf);
    let mut cst = tpcc.worker_state(0, 1, 1);
    let e = tpcc.decode_input(&mut cst, &buf).unwrap_err().to_string();
    assert!(e.contains("cannot be decoded"), "{e}");
}
