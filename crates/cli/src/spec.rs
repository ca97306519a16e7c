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
        RunWorkload::Tpcc(a) => runspec::Workload::Tpcc(tpcc(&a.data, &a.txn)),
        RunWorkload::Tpce(a) => runspec::Workload::Tpce(runspec::Tpce {
            customers: Some(a.data.customers),
            trade_days: Some(a.data.trade_days),
            mix: a.txn.mix.map(tpce_mix),
            analytics: Some(a.txn.analytics),
            queries: a.txn.queries.as_ref().map(|q| query_words(&q.0)),
            alone: a.txn.alone,
            analytics_priority: Some(priority(a.txn.analytics_priority)),
        }),
        RunWorkload::Tpch(a) => runspec::Workload::Tpch(runspec::Tpch {
            scale_factor: Some(a.data.scale_factor),
            // `--query N` is `--queries N`.
            queries: a
                .txn
                .query
                .as_ref()
                .or(a.txn.queries.as_ref())
                .map(|q| query_words(&q.0)),
            streams: a.txn.streams.map(|s| match s.0 {
                Some(n) => n.to_string(),
                None => "min".to_string(),
            }),
            no_refresh: a.txn.no_refresh,
            query_threads: Some(a.txn.query_threads as u32),
        }),
        RunWorkload::Chbench(a) => runspec::Workload::Chbench(runspec::Chbench {
            tpcc: tpcc(&a.data, &a.txn),
            analytic_streams: Some(a.ch.analytic_streams),
            analytics_only: a.ch.analytics_only,
            queries: a.ch.queries.as_ref().map(|q| query_words(&q.0)),
            alone: a.ch.alone,
            query_threads: Some(a.ch.query_threads as u32),
            analytics_priority: Some(priority(a.ch.analytics_priority)),
        }),
    }
}

fn tpcc(d: &TpccData, t: &TpccTxn) -> runspec::Tpcc {
    runspec::Tpcc {
        warehouses: Some(d.warehouses),
        mix: t.mix.map(tpcc_mix),
        affinity: t.affinity,
        terminal_times: t.terminal_times,
    }
}

/// `--analytics-priority` as the spec's word.
fn priority(p: workloads::htap::Priority) -> runspec::AnalyticsPriority {
    runspec::AnalyticsPriority::parse(p.as_str()).expect("the same three words")
}

/// A query list in `--queries`' words: `1,6,3`.
pub fn query_words(q: &[u32]) -> String {
    q.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
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
