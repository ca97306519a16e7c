//! What was parsed, as a child command line's typed specification (`runspec`): the
//! workload's options for `simulate`'s traced run, and (tests) every option a child
//! command line of `lab`, `crashtest` or `simulate` uses, converted back from clap's
//! structs so that the round-trip test can compare it with the spec it encoded.

use crate::args::*;
use runspec::{Columns, Distribution, MicroIndex, MicroMode};

/// The workload and its options, every one written (defaults included), so the child
/// parses the same workload.
pub fn workload<C: clap::Args>(w: &RunWorkload<C>) -> runspec::Workload {
    match w {
        RunWorkload::Micro(a) => micro(&a.data, &a.txn),
        RunWorkload::Tpcb(a) => runspec::Workload::Tpcb(runspec::Tpcb {
            scale: Some(a.data.scale),
            pad: a.data.pad,
            affinity: a.txn.affinity,
        }),
        RunWorkload::Tpcc(a) => runspec::Workload::Tpcc(runspec::Tpcc {
            warehouses: Some(a.data.warehouses),
            mix: a.txn.mix.map(tpcc_mix),
            affinity: a.txn.affinity,
            terminal_times: a.txn.terminal_times,
        }),
        RunWorkload::Tpce(a) => runspec::Workload::Tpce(runspec::Tpce {
            customers: Some(a.data.customers),
            trade_days: Some(a.data.trade_days),
            mix: a.txn.mix.map(tpce_mix),
        }),
        RunWorkload::Tpch(a) => runspec::Workload::Tpch(runspec::Tpch {
            scale_factor: Some(a.data.scale_factor),
        }),
        // No child command line runs it (`simulate chbench` is refused before).
        RunWorkload::Chbench(_) => unreachable!("chbench is not traced"),
    }
}

fn micro(d: &MicroData, t: &MicroTxn) -> runspec::Workload {
    runspec::Workload::Micro(runspec::Micro {
        size: d.size,
        keys: d.keys,
        columns: Some(match d.columns {
            ColumnsArg::Long => Columns::Long,
            ColumnsArg::String => Columns::String,
        }),
        index: Some(match d.index {
            IndexArg::Btree => MicroIndex::Btree,
            IndexArg::Hash => MicroIndex::Hash,
        }),
        mode: Some(match t.mode {
            ModeArg::Read => MicroMode::Read,
            ModeArg::Update => MicroMode::Update,
        }),
        distribution: Some(match t.distribution {
            DistArg::Uniform => Distribution::Uniform,
            DistArg::Zipf => Distribution::Zipf,
        }),
        rows: Some(t.rows),
        theta: Some(t.theta),
    })
}

/// A TPC-C mix in `--mix`'s words: each transaction's percentage.
pub fn tpcc_mix(mix: [u32; 5]) -> String {
    let m: Vec<String> = workloads::tpcc::TXN_NAMES
        .iter()
        .zip(mix)
        .map(|(n, p)| format!("{n}={p}"))
        .collect();
    m.join(",")
}

/// A TPC-E mix in `--mix`'s words: each dealt transaction's percentage, in tenths.
pub fn tpce_mix(mix: [u32; 12]) -> String {
    let m: Vec<String> = workloads::tpce::DEALT
        .iter()
        .map(|&i| {
            let tenths = mix[i as usize];
            format!(
                "{}={}.{}",
                workloads::tpce::TXN_NAMES[i as usize],
                tenths / 10,
                tenths % 10
            )
        })
        .collect();
    m.join(",")
}

pub fn log_mode(l: LogArg) -> runspec::LogMode {
    match l {
        LogArg::Off => runspec::LogMode::Off,
        LogArg::Async => runspec::LogMode::Async,
        LogArg::Sync => runspec::LogMode::Sync,
    }
}

pub fn ordered_index(o: OrderedIndexArg) -> runspec::OrderedIndex {
    match o {
        OrderedIndexArg::Btree => runspec::OrderedIndex::Btree,
        OrderedIndexArg::Rbtree => runspec::OrderedIndex::Rbtree,
    }
}

#[cfg(test)]
#[path = "spec_roundtrip.rs"]
mod roundtrip;
