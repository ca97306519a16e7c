//! The command line's own pieces, through what the library shows its tests: the clap
//! definition, sizes, the engine registry, the fit check and `simulate`'s child.

use clap::Parser;
use oltpscope::args::{one_line, parse_size, Cli, Cmd, RunWorkload};
use oltpscope::engines::EngineName;
use oltpscope::{check_fits_in, child_spec};

#[test]
fn the_command_line_definition_is_consistent() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

#[test]
fn clap_hints_stay_on_the_one_line() {
    let text = "error: unexpected argument '--thread' found\n\n  tip: a similar argument exists: '--threads'\n\nUsage: oltpscope run tpcc [OPTIONS]\n\nFor more information, try '--help'.\n";
    assert_eq!(
        one_line(text),
        "error: unexpected argument '--thread' found; tip: a similar argument exists: '--threads' (see --help)"
    );
}

#[test]
fn sizes_parse_with_binary_units() {
    assert_eq!(parse_size("10MB"), Ok(10 << 20));
    assert_eq!(parse_size("1gb"), Ok(1 << 30));
    assert_eq!(parse_size("1.5K"), Ok(1536));
    assert_eq!(parse_size("4096"), Ok(4096));
    assert!(parse_size("0MB").is_err());
    assert!(parse_size("-1MB").is_err());
    assert!(parse_size("10XB").is_err());
    assert!(parse_size("MB").is_err());
}

#[test]
fn the_registry_names_each_engine_once_by_its_own_name() {
    let names: Vec<&str> = EngineName::ALL.iter().map(|e| e.as_str()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for e in EngineName::ALL {
        let n = e.as_str();
        use clap::ValueEnum;
        assert_eq!(EngineName::from_str(n, false), Ok(*e));
    }
    // The engines a database directory is recognised for keep files.
    let dir = std::env::temp_dir().join(format!("oltpscope-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(EngineName::owning(&*storage::os(), &dir), None);
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn the_disk_engine_runs_databases_larger_than_memory_through_its_buffer_pool() {
    const G: u64 = 1 << 30;
    let fits = |engine, bpool| check_fits_in("micro", 80 * G, engine, bpool, 20 * G);
    // 80 GiB of data in 20 GiB of memory: refused unless the disk engine is given a
    // buffer pool that fits.
    let e = fits(EngineName::Memory, None).unwrap_err();
    assert!(e.contains("80.0 GiB") && !e.contains("bpool"), "{e}");
    let e = fits(EngineName::Disk, None).unwrap_err();
    assert!(e.contains("--bpool-size"), "{e}");
    fits(EngineName::Disk, Some(4 * G)).unwrap();
    let e = fits(EngineName::Disk, Some(30 * G)).unwrap_err();
    assert!(e.contains("more than the 20.0 GiB"), "{e}");
    // A buffer pool does not make the memory engine's data smaller.
    assert!(fits(EngineName::Memory, Some(4 * G)).is_err());
    // What fits is accepted, and unknown memory (0) refuses nothing.
    check_fits_in("micro", G, EngineName::Memory, None, 20 * G).unwrap();
    check_fits_in("micro", 80 * G, EngineName::Memory, None, 0).unwrap();
}

#[test]
fn the_child_gets_the_parsed_options_and_not_simulates_own() {
    let cli = Cli::try_parse_from(
        "oltpscope simulate tpcb --scale 2 --cpu zen3 --sweep=l1i=8K,16K --json out.json --txns 50 --threads 1 --engine disk --bpool-size 64MB"
            .split(' '),
    )
    .unwrap();
    let Cmd::Simulate {
        workload: Some(w @ RunWorkload::Tpcb(_)),
    } = &cli.cmd
    else {
        panic!("parsed as something else")
    };
    let RunWorkload::Tpcb(a) = w else {
        unreachable!()
    };
    let v = child_spec(&a.common, oltpscope::spec::workload(w), 7, 1).to_args();
    let line = v.join(" ");
    assert_eq!(
        line,
        "run tpcb --scale 2 --engine disk --threads 1 --seed 1 --log async --bpool-size 67108864 --txns 57 --warmup 0 --no-check --trace-measured"
    );
    // What the child is given, it accepts.
    let mut full = vec!["oltpscope".to_string()];
    full.extend(v);
    Cli::try_parse_from(full).unwrap();
}
