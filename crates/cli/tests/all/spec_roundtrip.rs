//! The round trip: a `runspec::RunSpec`, encoded with `to_args`, parsed by `cli`'s own
//! clap parser and converted back, is the spec it was. A flag renamed (or a value
//! spelled differently) in `args.rs` fails here, not in a sweep at run time.

use clap::Parser;
use oltpscope::args::*;
use oltpscope::spec::*;
use proptest::prelude::*;
use runspec::{
    Columns, Command, Distribution, MicroIndex, MicroMode, Options, RunSpec, WarmupTxns, Workload,
};
use std::path::PathBuf;

// ------------------------------------------------ from clap's structs back to a spec

/// The database options every command of a database shares.
fn db_options(d: &DbArgs) -> Options {
    Options {
        engine: d.engine.map(|e| e.as_str().to_string()),
        db: d.db.clone(),
        log_dir: d.log_dir.clone(),
        ..Options::default()
    }
}

fn run_options(o: &RunOpts) -> Options {
    Options {
        threads: Some(o.threads),
        seed: Some(o.seed),
        log: o.log.map(log_mode),
        bpool_size: o.disk.bpool_size,
        escalation: o.disk.escalation,
        checkpoint_ms: o.disk.checkpoint_ms,
        checkpoint_log: o.memory.checkpoint_log,
        partitions: o.partitioned.partitions,
        ordered_index: o.partitioned.ordered_index.map(ordered_index),
        coroutines: o.coroutines,
        steps_team: o.steps_team.into_iter().collect(),
        steps_points: o.steps_points.clone(),
        interleave: Some(o.interleave).filter(|&n| n > 1),
        interleave_group: o.interleave_group,
        interleave_min_table: o.memory.interleave_min_table,
        no_pin: o.no_pin,
        // A run of a number of transactions has no duration (the two conflict).
        duration: Some(o.duration).filter(|_| o.txns.is_none()),
        txns: o.txns,
        warmup: Some(o.warmup),
        no_load: o.no_load,
        reload: o.reload,
        no_check: o.no_check,
        stats: o.stats,
        trace_measured: o.trace_measured,
        trace_ctx: o.trace_ctx,
        btree_levels: o.btree_levels,
        acked_file: o.acked_file.clone(),
        report_interval: o.report_interval,
        json: o.json.clone(),
        progress_file: o.progress_file.clone(),
        out: o.out.clone(),
        ..db_options(&o.db)
    }
}

fn sim_options(o: &SimOpts) -> Options {
    Options {
        engine: Some(o.engine.as_str().to_string()),
        threads: Some(o.threads),
        seed: Some(o.seed),
        log: o.log.map(log_mode),
        bpool_size: o.disk.bpool_size,
        escalation: o.disk.escalation,
        checkpoint_ms: o.disk.checkpoint_ms,
        partitions: o.partitioned.partitions,
        ordered_index: o.partitioned.ordered_index.map(ordered_index),
        coroutines: o.coroutines,
        steps_team: o.steps_team.clone(),
        steps_points: o.steps_points.clone(),
        interleave: Some(o.interleave).filter(|&n| n > 1),
        interleave_group: o.interleave_group,
        interleave_min_table: o.interleave_min_table,
        no_pin: o.no_pin,
        txns: o.txns,
        cpu: o.sim.cpu.clone(),
        l1i: o.sim.l1i.clone(),
        llc: o.sim.llc.clone(),
        sweep: o.sim.sweep.clone(),
        warmup_txns: o.sim.warmup_txns.map(|w| match w {
            Warmup::Auto => WarmupTxns::Auto,
            Warmup::Txns(n) => WarmupTxns::Txns(n),
        }),
        until_settled: o.sim.until_settled,
        no_3c: o.sim.no_3c,
        btree_levels: o.btree_levels,
        json: o.json.clone(),
        out: o.out.clone(),
        ..Options::default()
    }
}

fn check_options(o: &CheckOpts) -> Options {
    Options {
        bpool_size: o.bpool_size,
        json: o.json.clone(),
        acked_file: o.acked_file.clone(),
        ..db_options(&o.db)
    }
}

fn load_options(o: &LoadOpts) -> Options {
    Options {
        threads: Some(o.threads),
        seed: Some(o.seed),
        reload: o.reload,
        bpool_size: o.bpool_size,
        report_interval: o.report_interval,
        ..db_options(&o.db)
    }
}

/// A database's workload (`load`, `check`): its data options only.
fn data_workload<C: clap::Args>(w: &DataWorkload<C>) -> Workload {
    match w {
        DataWorkload::Micro(a) => Workload::Micro(runspec::Micro {
            size: a.data.size,
            keys: a.data.keys,
            columns: Some(match a.data.columns {
                ColumnsArg::Long => Columns::Long,
                ColumnsArg::String => Columns::String,
            }),
            index: Some(match a.data.index {
                IndexArg::Btree => MicroIndex::Btree,
                IndexArg::Hash => MicroIndex::Hash,
            }),
            ..runspec::Micro::default()
        }),
        DataWorkload::Tpcb(a) => Workload::Tpcb(runspec::Tpcb {
            scale: Some(a.data.scale),
            pad: a.data.pad,
            affinity: false,
        }),
        DataWorkload::Tpcc(a) => Workload::Tpcc(runspec::Tpcc {
            warehouses: Some(a.data.warehouses),
            ..runspec::Tpcc::default()
        }),
        DataWorkload::Tpce(a) => Workload::Tpce(runspec::Tpce {
            customers: Some(a.data.customers),
            trade_days: Some(a.data.trade_days),
            ..runspec::Tpce::default()
        }),
        DataWorkload::Tpch(a) => Workload::Tpch(runspec::Tpch {
            scale_factor: Some(a.data.scale_factor),
            ..runspec::Tpch::default()
        }),
        DataWorkload::Chbench(a) => Workload::Chbench(runspec::Chbench {
            tpcc: runspec::Tpcc {
                warehouses: Some(a.data.warehouses),
                ..runspec::Tpcc::default()
            },
            ..runspec::Chbench::default()
        }),
    }
}

/// What `cli` parsed, as a spec.
fn back(cli: &Cli) -> RunSpec {
    let spec = |command, workload, options| RunSpec {
        command,
        workload,
        options,
        extra: Vec::new(),
    };
    match &cli.cmd {
        Cmd::Run { workload: Some(w) } => spec(Command::Run, workload(w), run_options(w.common())),
        Cmd::Profile { workload: Some(w) } => {
            spec(Command::Profile, workload(w), run_options(&w.common().run))
        }
        Cmd::Simulate { workload: Some(w) } => {
            spec(Command::Simulate, workload(w), sim_options(w.common()))
        }
        Cmd::Load { workload: Some(w) } => {
            let c = match w {
                DataWorkload::Micro(a) => &a.common,
                DataWorkload::Tpcb(a) => &a.common,
                DataWorkload::Tpcc(a) => &a.common,
                DataWorkload::Tpce(a) => &a.common,
                DataWorkload::Tpch(a) => &a.common,
                DataWorkload::Chbench(a) => &a.common,
            };
            spec(Command::Load, data_workload(w), load_options(c))
        }
        Cmd::Check { workload: Some(w) } => {
            let c = match w {
                DataWorkload::Micro(a) => &a.common,
                DataWorkload::Tpcb(a) => &a.common,
                DataWorkload::Tpcc(a) => &a.common,
                DataWorkload::Tpce(a) => &a.common,
                DataWorkload::Tpch(a) => &a.common,
                DataWorkload::Chbench(a) => &a.common,
            };
            spec(Command::Check, data_workload(w), check_options(c))
        }
        other => panic!("not a child's command: {other:?}"),
    }
}

/// Encode, parse with the real parser, convert back.
fn round_trip(s: &RunSpec) -> RunSpec {
    let argv = std::iter::once("oltpscope".to_string()).chain(s.to_args());
    let cli = Cli::try_parse_from(argv)
        .unwrap_or_else(|e| panic!("{:?} does not parse: {e}", s.to_args()));
    back(&cli)
}

// ------------------------------------------------ specs as clap fills them in

fn path() -> impl Strategy<Value = PathBuf> {
    "[a-z0-9_./]{0,12}[a-z0-9]".prop_map(PathBuf::from)
}

fn word() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9=,.:]{0,12}"
}

fn seconds() -> impl Strategy<Value = f64> {
    (1..=1_000_000u32).prop_map(|n| f64::from(n) / 1000.0)
}

fn size() -> impl Strategy<Value = u64> {
    1..=(1u64 << 40)
}

fn engine() -> impl Strategy<Value = String> {
    prop::sample::select(EngineName::ALL).prop_map(|e| e.as_str().to_string())
}

fn micro_txn() -> impl Strategy<Value = runspec::Micro> {
    (
        prop::option::of(prop::bool::ANY.prop_flat_map(|keys| size().prop_map(move |n| (keys, n)))),
        prop::sample::select(Columns::ALL),
        prop::sample::select(MicroIndex::ALL),
        prop::sample::select(MicroMode::ALL),
        prop::sample::select(Distribution::ALL),
        1..=1000u32,
        (0..=1000u32).prop_map(|t| f64::from(t) / 1000.0),
    )
        .prop_map(|(sizing, c, i, m, d, rows, theta)| runspec::Micro {
            // --size and --keys conflict: one of them at most.
            size: sizing.filter(|s| !s.0).map(|s| s.1),
            keys: sizing.filter(|s| s.0).map(|s| s.1),
            columns: Some(c),
            index: Some(i),
            mode: Some(m),
            distribution: Some(d),
            rows: Some(rows),
            theta: Some(theta),
        })
}

/// A mix summing to `total`, on two of the `slots` (perhaps the same one twice).
fn mix(slots: Vec<usize>, total: u32) -> impl Strategy<Value = Vec<(usize, u32)>> {
    (
        prop::sample::select(slots.clone()),
        prop::sample::select(slots),
        0..=total,
    )
        .prop_map(move |(i, j, k)| vec![(i, k), (j, total - k)])
}

/// A query list of `max` queries in `--queries`' words (one to three, none twice).
fn queries(max: u32) -> impl Strategy<Value = String> {
    prop::sample::subsequence((1..=max).collect::<Vec<_>>(), 1..=3)
        .prop_map(|q| oltpscope::spec::query_words(&q))
}

fn tpcc_options() -> impl Strategy<Value = runspec::Tpcc> {
    let tpcc: Vec<usize> = (0..workloads::tpcc::TXN_NAMES.len()).collect();
    (
        1..=100_000u32,
        prop::option::of(mix(tpcc, 100)),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(w, m, affinity, terminal_times)| runspec::Tpcc {
            warehouses: Some(w),
            mix: m.map(|m| {
                let mut a = [0; 5];
                m.into_iter().for_each(|(i, p)| a[i] += p);
                tpcc_mix(a)
            }),
            affinity,
            terminal_times,
        })
}

/// The workloads every run command parses: the transactional kits, and TPC-H's and
/// CH-benCHmark's run options ([`workloads`] adds them).
fn workloads() -> impl Strategy<Value = Workload> {
    prop_oneof![
        oltp_workloads(),
        (
            1..=1000u32,
            prop::option::of(queries(22)),
            prop::option::of(prop_oneof![
                Just("min".to_string()),
                (0..=40u32).prop_map(|n| n.to_string())
            ]),
            any::<bool>(),
            1..=64u32,
        )
            .prop_map(
                |(sf, q, streams, no_refresh, qt)| Workload::Tpch(runspec::Tpch {
                    scale_factor: Some(f64::from(sf) / 100.0),
                    // Only implemented CH queries parse; every TPC-H query is.
                    queries: q,
                    streams,
                    no_refresh,
                    query_threads: Some(qt),
                })
            ),
        (
            tpcc_options(),
            0..=64u32,
            any::<bool>(),
            prop::option::of(prop::sample::subsequence(
                workloads::chbench::queries::IMPLEMENTED.to_vec(),
                1..=3
            )),
            any::<bool>(),
            1..=64u32,
            priority(),
        )
            .prop_map(|(tpcc, a, only, q, alone, qt, p)| Workload::Chbench(
                runspec::Chbench {
                    tpcc,
                    analytic_streams: Some(a),
                    // The two conflict: one of them at most.
                    analytics_only: only && !alone,
                    queries: q.map(|q| oltpscope::spec::query_words(&q)),
                    alone,
                    query_threads: Some(qt),
                    analytics_priority: Some(p),
                }
            )),
    ]
}

fn oltp_workloads() -> impl Strategy<Value = Workload> {
    let tpce: Vec<usize> = workloads::tpce::DEALT.iter().map(|&i| i as usize).collect();
    prop_oneof![
        micro_txn().prop_map(Workload::Micro),
        (1..=100_000u64, any::<bool>(), any::<bool>()).prop_map(|(s, pad, affinity)| {
            Workload::Tpcb(runspec::Tpcb {
                scale: Some(s),
                pad,
                affinity,
            })
        }),
        tpcc_options().prop_map(Workload::Tpcc),
        (
            1..=1_000_000u64,
            1..=300u32,
            prop::option::of(mix(tpce, 1000)),
            0..=64u32,
            prop::option::of(queries(4)),
            any::<bool>(),
            priority(),
        )
            .prop_map(|(c, d, m, n, q, alone, p)| Workload::Tpce(runspec::Tpce {
                customers: Some(c),
                trade_days: Some(d),
                mix: m.map(|m| {
                    let mut a = [0; 12];
                    m.into_iter().for_each(|(i, p)| a[i] += p);
                    tpce_mix(a)
                }),
                analytics: Some(n),
                queries: q,
                alone,
                analytics_priority: Some(p),
            })),
    ]
}

/// `--analytics-priority`'s words.
fn priority() -> impl Strategy<Value = runspec::AnalyticsPriority> {
    prop::sample::select(runspec::AnalyticsPriority::ALL)
}

/// A micro-benchmark's or TPC workload's data options only (`check`).
fn data_only(w: Workload) -> Workload {
    match w {
        Workload::Micro(m) => Workload::Micro(runspec::Micro {
            size: m.size,
            keys: m.keys,
            columns: m.columns,
            index: m.index,
            ..runspec::Micro::default()
        }),
        Workload::Tpcb(b) => Workload::Tpcb(runspec::Tpcb {
            affinity: false,
            ..b
        }),
        Workload::Tpcc(c) => Workload::Tpcc(runspec::Tpcc {
            warehouses: c.warehouses,
            ..runspec::Tpcc::default()
        }),
        Workload::Tpce(e) => Workload::Tpce(runspec::Tpce {
            customers: e.customers,
            trade_days: e.trade_days,
            ..runspec::Tpce::default()
        }),
        Workload::Tpch(h) => Workload::Tpch(runspec::Tpch {
            scale_factor: h.scale_factor,
            ..runspec::Tpch::default()
        }),
        Workload::Chbench(c) => Workload::Chbench(runspec::Chbench {
            tpcc: runspec::Tpcc {
                warehouses: c.tpcc.warehouses,
                ..runspec::Tpcc::default()
            },
            ..runspec::Chbench::default()
        }),
    }
}

/// The workloads `load` and `check` take: every one's data options, and TPC-H (loaded
/// and checked only, so far).
fn data_workloads() -> impl Strategy<Value = Workload> {
    prop_oneof![
        workloads().prop_map(data_only),
        (1..=1_000_000u32).prop_map(|n| Workload::Tpch(runspec::Tpch {
            scale_factor: Some(f64::from(n) / 100.0),
            ..runspec::Tpch::default()
        })),
    ]
}

/// The engine options `run` and `simulate` share, as clap fills them in.
fn engine_options() -> impl Strategy<Value = Options> {
    (
        engine(),
        1..=1024u32,
        any::<u64>(),
        prop::option::of(prop::sample::select(runspec::LogMode::ALL)),
        prop::option::of(size()),
        prop::option::of(1..=u32::MAX),
        prop::option::of(0..=MAX_CHECKPOINT_MS),
        prop::option::of(1..=engine_partitioned::MAX_PARTITIONS as u64),
        prop::option::of(prop::sample::select(runspec::OrderedIndex::ALL)),
        (
            prop::option::of(1..=1024u32),
            any::<bool>(),
            prop::option::of((2..=1024u32, prop::option::of(1..=1024u32))),
            prop::option::of(size()),
        ),
    )
        .prop_map(
            |(e, t, seed, log, b, esc, ck, p, o, (co, no_pin, il, mt))| Options {
                engine: Some(e),
                // --interleave conflicts with --coroutines (and --steps-team, dropped by
                // the specs that set it).
                interleave: il.filter(|_| co.is_none()).map(|i| i.0),
                interleave_group: il.filter(|_| co.is_none()).and_then(|i| i.1),
                interleave_min_table: mt,
                threads: Some(t),
                seed: Some(seed),
                log,
                bpool_size: b,
                escalation: esc,
                checkpoint_ms: ck,
                partitions: p,
                ordered_index: o,
                coroutines: co,
                no_pin,
                ..Options::default()
            },
        )
}

fn run_spec() -> impl Strategy<Value = RunSpec> {
    let files = (
        prop::option::of(path()),
        prop::option::of(path()),
        prop::option::of(path()),
        prop::option::of(path()),
        prop::option::of(path()),
        prop::option::of(path()),
        prop::option::of((1..=1024u32, prop::option::of(path()))),
    );
    let run = (
        prop::option::of(1..=MAX_TXNS),
        seconds(),
        seconds(),
        0..3u8,
        any::<[bool; 5]>(),
        prop::option::of(prop::sample::select(vec![0.0, 0.5, 10.0])),
        prop::option::of(size()),
        any::<bool>(),
    );
    (workloads(), engine_options(), files, run).prop_map(|(w, base, files, run)| {
        let (db, log_dir, acked, json, progress, out, steps) = files;
        let (txns, duration, warmup, load, sw, interval, ckl, profile) = run;
        let no_steps = steps.is_none();
        let options = Options {
            db,
            log_dir,
            acked_file: acked,
            json,
            progress_file: progress,
            out,
            steps_team: steps.iter().map(|s| s.0).collect(),
            steps_points: steps.and_then(|s| s.1),
            interleave: base.interleave.filter(|_| no_steps),
            interleave_group: base.interleave_group.filter(|_| no_steps),
            txns,
            duration: Some(duration).filter(|_| txns.is_none()),
            warmup: Some(warmup),
            // --no-load and --reload conflict.
            no_load: load == 1,
            reload: load == 2,
            no_check: sw[0],
            stats: sw[1],
            trace_measured: sw[2],
            trace_ctx: sw[3],
            btree_levels: sw[4],
            report_interval: interval,
            checkpoint_log: ckl,
            ..base
        };
        let command = if profile {
            Command::Profile
        } else {
            Command::Run
        };
        let mut s = RunSpec::new(command, w);
        s.options = options;
        s
    })
}

fn simulate_spec() -> impl Strategy<Value = RunSpec> {
    (
        workloads(),
        engine_options(),
        prop::option::of(1..=MAX_TXNS),
        prop::collection::vec(1..=1024u32, 0..4),
        prop::option::of(path()),
        (
            prop::option::of(word()),
            prop::option::of(word()),
            prop::option::of(word()),
            prop::collection::vec(word(), 0..3),
        ),
        prop::option::of(prop_oneof![
            Just(WarmupTxns::Auto),
            (0..=MAX_TXNS).prop_map(WarmupTxns::Txns)
        ]),
        (
            any::<bool>(),
            // Half-percent steps up to 50%: every one is written and read back exactly.
            prop::option::of((1..=100u32).prop_map(|h| h as f64 / 2.0)),
            any::<bool>(),
        ),
        (prop::option::of(path()), prop::option::of(path())),
    )
        .prop_map(
            |(
                w,
                base,
                txns,
                teams,
                points,
                (cpu, l1i, llc, sweep),
                warm,
                (no_3c, until_settled, btree_levels),
                (json, out),
            )| {
                let mut s = RunSpec::new(Command::Simulate, w);
                s.options = Options {
                    txns,
                    // --steps-points needs --steps-team.
                    steps_points: points.filter(|_| !teams.is_empty()),
                    interleave: base.interleave.filter(|_| teams.is_empty()),
                    interleave_group: base.interleave_group.filter(|_| teams.is_empty()),
                    steps_team: teams,
                    cpu,
                    l1i,
                    llc,
                    sweep,
                    warmup_txns: warm,
                    until_settled,
                    no_3c,
                    btree_levels,
                    json,
                    out,
                    ..base
                };
                s
            },
        )
}

fn check_spec() -> impl Strategy<Value = RunSpec> {
    (
        data_workloads(),
        prop::option::of(engine()),
        (prop::option::of(path()), prop::option::of(path())),
        prop::option::of(size()),
        (prop::option::of(path()), prop::option::of(path())),
    )
        .prop_map(|(w, engine, (db, log_dir), b, (json, acked))| {
            let mut s = RunSpec::new(Command::Check, w);
            s.options = Options {
                engine,
                db,
                log_dir,
                bpool_size: b,
                json,
                acked_file: acked,
                ..Options::default()
            };
            s
        })
}

fn load_spec() -> impl Strategy<Value = RunSpec> {
    (
        data_workloads(),
        prop::option::of(engine()),
        (prop::option::of(path()), prop::option::of(path())),
        (1..=1024u32, any::<u64>(), any::<bool>()),
        prop::option::of(size()),
        prop::option::of(prop::sample::select(vec![0.0, 2.5])),
    )
        .prop_map(|(w, engine, (db, log_dir), (t, seed, reload), b, ri)| {
            let mut s = RunSpec::new(Command::Load, w);
            s.options = Options {
                engine,
                db,
                log_dir,
                threads: Some(t),
                seed: Some(seed),
                reload,
                bpool_size: b,
                report_interval: ri,
                ..Options::default()
            };
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn run_and_profile_specs_survive_clap(s in run_spec()) {
        prop_assert_eq!(round_trip(&s), s);
    }

    #[test]
    fn simulate_specs_survive_clap(s in simulate_spec()) {
        prop_assert_eq!(round_trip(&s), s);
    }

    #[test]
    fn load_specs_survive_clap(s in load_spec()) {
        prop_assert_eq!(round_trip(&s), s);
    }

    #[test]
    fn check_specs_survive_clap(s in check_spec()) {
        prop_assert_eq!(round_trip(&s), s);
    }
}

/// The round trip can fail: a spec whose flag `cli` spells otherwise does not parse.
#[test]
fn a_misspelt_flag_is_refused_by_the_parser() {
    let mut s = RunSpec::new(Command::Run, Workload::named("tpcb").unwrap());
    s.extra = vec!["--thread".into(), "2".into()];
    let argv = std::iter::once("oltpscope".to_string()).chain(s.to_args());
    assert!(Cli::try_parse_from(argv).is_err());
}
