//! `--alone` (`run chbench`, `run tpce --analytics N`): what its three runs' reports
//! say side by side: each side's rate alone and together, and the slowdown ratios
//! (transactions with the analytics over alone; queries with the transactions over
//! alone), as text and JSON. The runs themselves are `commands`'.

use serde_json::json;

/// The three runs, in the order they run: (title, transaction workers?, streams?).
pub const PHASES: [(&str, bool, bool); 3] = [
    ("transactions alone", true, false),
    ("analytics alone", false, true),
    ("together", true, true),
];

/// One run's rates: the kit's transactions per second (its first `kit_types` types,
/// rolled-back ones included) and the queries per hour (the types after them), and the
/// share of the measured time its workers were on a CPU.
fn rates(r: &driver::Report, kit_types: usize) -> (f64, f64, Option<f64>) {
    let secs = r.duration_s.max(1e-9);
    let txns: u64 = r.per_txn[..kit_types]
        .iter()
        .map(|t| t.committed + t.user_aborts)
        .sum();
    let queries: u64 = r.per_txn[kit_types..].iter().map(|t| t.committed).sum();
    (
        txns as f64 / secs,
        queries as f64 * 3600.0 / secs,
        r.worker_cpu_busy,
    )
}

fn ratio(with: f64, alone: f64) -> Option<f64> {
    (alone > 0.0).then(|| with / alone)
}

fn pct(busy: Option<f64>) -> String {
    busy.map_or("unknown".into(), |b| format!("{:.0}%", b * 100.0))
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("none (nothing ran alone)".into(), |r| format!("{r:.2}"))
}

/// The summary of `runs` (in [`PHASES`]' order) of a kit named `label` with
/// `kit_types` transaction types: text lines and the JSON `alone` object.
pub fn summary(
    label: &str,
    runs: [&driver::Report; 3],
    kit_types: usize,
) -> (String, serde_json::Value) {
    let [(t_alone, _, b0), (_, q_alone, b1), (t_with, q_with, b2)] =
        runs.map(|r| rates(r, kit_types));
    let (t_ratio, q_ratio) = (ratio(t_with, t_alone), ratio(q_with, q_alone));
    let text = format!(
        "\n--alone: three runs of {:.1} s measured, each on the database loaded afresh\n\
         {label} alone: {t_alone:.1} txn/s | analytics alone: {q_alone:.1} queries/h\n\
         together: {label} {t_with:.1} txn/s, analytics {q_with:.1} queries/h\n\
         slowdown: {label} with analytics / alone {}; queries with {label} / alone {}\n\
         workers on CPU: {} ({label} alone), {} (analytics alone), {} (together)\n",
        runs[2].duration_s,
        fmt_ratio(t_ratio),
        fmt_ratio(q_ratio),
        pct(b0),
        pct(b1),
        pct(b2),
    );
    let v = json!({
        "transactions_alone_per_s": t_alone,
        "queries_alone_per_h": q_alone,
        "transactions_together_per_s": t_with,
        "queries_together_per_h": q_with,
        "transactions_ratio": t_ratio,
        "queries_ratio": q_ratio,
        "workers_on_cpu": [b0, b1, b2],
        "fresh_load_per_run": true,
    });
    (text, v)
}
