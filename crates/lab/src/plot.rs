//! `oltpscope plot DIR`: SVG figures (plotters' SVG backend: text is written as SVG
//! `<text>`, so no font files are needed) and one self-contained HTML page embedding them.
//!
//! A sweep directory gets a throughput curve per curve of its summary, with the knee
//! and the 90%/95%-of-best levels marked, and a normalized-throughput table coloured
//! by ratio (as the "revisited" paper's Tables 2-4: each column normalized to the
//! baseline row, the first value of the first varied key). A results directory gets its
//! per-second throughput and latency.

use crate::results;
use crate::sweep::{self, Axis, Curve, PointSummary, Summary};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

pub const PLOTS: &str = "plots";
pub const INDEX: &str = "index.html";

const W: u32 = 720;
const H: u32 = 420;

/// Draw `dir`; returns the files written.
pub fn plot(dir: &Path) -> Result<Vec<PathBuf>, String> {
    if dir.join(sweep::SUMMARY_JSON).is_file() {
        let text = std::fs::read_to_string(dir.join(sweep::SUMMARY_JSON)).map_err(|e| {
            format!(
                "cannot read {}: {e}",
                dir.join(sweep::SUMMARY_JSON).display()
            )
        })?;
        let s: Summary = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: not a sweep summary: {e}",
                dir.join(sweep::SUMMARY_JSON).display()
            )
        })?;
        plot_sweep(dir, &s)
    } else if dir.join(results::TIMESERIES).is_file() {
        plot_results(dir)
    } else if let Some(r) = results::load_report(dir)
        .ok()
        .filter(|r| r.get("simulation").is_some())
    {
        plot_simulation(dir, &r)
    } else if dir.is_dir() {
        Err(format!(
            "{}: neither a sweep directory ({}), a run's results directory ({}) nor a simulation's ({} with a simulation)",
            dir.display(),
            sweep::SUMMARY_JSON,
            results::TIMESERIES,
            results::REPORT
        ))
    } else {
        Err(format!("{}: no such directory", dir.display()))
    }
}

/// A size in bytes the way it is typed (powers of 1024).
pub fn fmt_size(b: f64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if (v - v.round()).abs() < 0.05 {
        format!("{:.0}{}", v.round(), units[u])
    } else {
        format!("{v:.1}{}", units[u])
    }
}

fn fmt_x(axis: Axis, x: f64) -> String {
    match axis {
        Axis::Size => fmt_size(x),
        _ if (x - x.round()).abs() < 1e-9 => format!("{x:.0}"),
        _ => format!("{x:.2}"),
    }
}

fn draw_err<E: std::fmt::Debug>(e: E) -> String {
    format!("cannot draw the figure: {e:?}")
}

/// The summary point of a curve's value.
fn point_of<'a>(s: &'a Summary, c: &Curve, value: &str) -> Option<&'a PointSummary> {
    s.points.iter().find(|p| {
        p.values.iter().all(|(k, v)| {
            if *k == c.over {
                v == value
            } else {
                c.fixed.iter().any(|(fk, fv)| fk == k && fv == v)
            }
        })
    })
}

/// Curves drawn together: the same figure over the same key with the same numeric
/// settings, one curve per value of the category keys (engine, mode, ...), so engines
/// are compared on one chart instead of one SVG each.
pub fn charts(s: &Summary) -> Vec<Vec<&Curve>> {
    let numeric_fixed = |c: &Curve| -> Vec<(String, String)> {
        c.fixed
            .iter()
            .filter(|(k, _)| sweep::axis(k) != Axis::Category)
            .cloned()
            .collect()
    };
    let mut out: Vec<Vec<&Curve>> = Vec::new();
    for c in s.curves.iter().filter(|c| !c.points.is_empty()) {
        let key = (&c.over, &c.figure, numeric_fixed(c));
        match out
            .iter_mut()
            .find(|g| (&g[0].over, &g[0].figure, numeric_fixed(g[0])) == key)
        {
            Some(g) => g.push(c),
            None => out.push(vec![c]),
        }
    }
    out
}

/// A curve's name in a chart's legend: its category values (`engine=disk`).
fn curve_name(c: &Curve) -> String {
    let cat: Vec<String> = c
        .fixed
        .iter()
        .filter(|(k, _)| sweep::axis(k) == Axis::Category)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if cat.is_empty() {
        "median".into()
    } else {
        cat.join(", ")
    }
}

/// A chart's drawing context: both axes plain numbers (a log axis is drawn as log2 of
/// the values).
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A point's spread for its bar: (x, min, max, unreliable).
type PointSpread = (f64, f64, f64, bool);

/// One chart as SVG: each curve's median with min-max bars (hollow markers on points
/// flagged unreliable), its knee as a vertical line in its colour; with one curve also
/// the 90/95%-of-best levels. Ticks sit on the varied values, so a thread count gets
/// integer ticks and a size its typed form.
fn chart_svg(s: &Summary, curves: &[&Curve]) -> Result<String, String> {
    let c0 = curves[0];
    let axis = sweep::axis(&c0.over);
    let mut xs: Vec<f64> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    let log = x0 > 0.0 && x1 / x0 >= 16.0;
    let tx = move |x: f64| if log { x.log2() } else { x };
    let (lo, hi) = if x1 > x0 {
        let pad = (tx(x1) - tx(x0)) * 0.05;
        (tx(x0) - pad, tx(x1) + pad)
    } else {
        (tx(x0) - 1.0, tx(x0) + 1.0)
    };
    let spreads = point_spreads(s, curves);
    let ymax = spreads
        .iter()
        .flatten()
        .map(|p| p.2)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let what = sweep::figure_label(&c0.figure);
    let title = chart_title(s, curves, &what);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut ch = ChartBuilder::on(&root)
            .caption(&title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(lo..hi, 0.0..ymax)
            .map_err(draw_err)?;
        let xfmt = move |v: &f64| fmt_x(axis, if log { v.exp2() } else { *v });
        ch.configure_mesh()
            .x_desc(if log {
                format!("{} (log scale)", c0.over)
            } else {
                c0.over.clone()
            })
            .y_desc(format!("{what} (median of runs)"))
            .x_labels(x_label_count(
                &xs.iter().map(|&x| tx(x)).collect::<Vec<_>>(),
                lo,
                hi,
            ))
            .x_label_formatter(&xfmt)
            .y_label_formatter(&|v: &f64| {
                if *v >= 100.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.2}")
                }
            })
            .draw()
            .map_err(draw_err)?;
        if let (Some(a), true) = (&c0.analysis, curves.len() == 1) {
            draw_best_levels(&mut ch, c0, a, (lo, hi))?;
        }
        for (i, (c, sp)) in curves.iter().zip(&spreads).enumerate() {
            draw_curve(&mut ch, (i, curves.len()), c, sp, (log, axis), ymax, &what)?;
        }
        draw_legend_notes(&mut ch, &spreads, curves.len())?;
        let last: Vec<(String, f64, f64)> = curves
            .iter()
            .filter_map(|c| c.points.last().cloned())
            .collect();
        ch.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(legend_corner(&last, ymax))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(out)
}

/// Each curve's points' spreads over their repetitions (the median alone when a point
/// has no summary of the figure).
fn point_spreads(s: &Summary, curves: &[&Curve]) -> Vec<Vec<PointSpread>> {
    curves
        .iter()
        .map(|c| {
            c.points
                .iter()
                .map(|(v, x, m)| {
                    let p = point_of(s, c, v);
                    let sp = p.and_then(|p| sweep::figure(p, &c.figure));
                    let bad = p.is_some_and(|p| p.unreliable.is_some());
                    (*x, sp.map_or(*m, |t| t.min), sp.map_or(*m, |t| t.max), bad)
                })
                .collect()
        })
        .collect()
}

/// A chart's title: the kind of sweep, workload, figure and varied key, and the values
/// held fixed (categories too when there is one curve: the curves name them otherwise).
fn chart_title(s: &Summary, curves: &[&Curve], what: &str) -> String {
    let c0 = curves[0];
    let fixed: Vec<String> = c0
        .fixed
        .iter()
        .filter(|(k, _)| curves.len() == 1 || sweep::axis(k) != Axis::Category)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "{}{} {} over {}{}",
        match s.spec.kind {
            sweep::Kind::Simulate => "simulated ",
            sweep::Kind::Profile => "profiled ",
            sweep::Kind::Run => "",
        },
        s.spec.workload,
        if c0.figure == "throughput_tps" {
            "throughput"
        } else {
            what
        },
        c0.over,
        if fixed.is_empty() {
            String::new()
        } else {
            format!(" ({})", fixed.join(", "))
        }
    )
}

/// One curve's 90% and 95%-of-best levels as horizontal lines from `lo` to `hi`.
fn draw_best_levels(
    ch: &mut Chart,
    c0: &Curve,
    a: &crate::knee::Sufficiency,
    (lo, hi): (f64, f64),
) -> Result<(), String> {
    let axis = sweep::axis(&c0.over);
    for (share, color, name) in [
        (0.90, &RGBColor(230, 140, 0), "90%"),
        (0.95, &RGBColor(200, 0, 120), "95%"),
    ] {
        // A cost's level: the most it may be for its inverse to reach the share.
        let y = if c0.lower_is_better {
            a.best_y / share
        } else {
            a.best_y * share
        };
        ch.draw_series(LineSeries::new([(lo, y), (hi, y)], color.stroke_width(1)))
            .map_err(draw_err)?
            .label(format!(
                "{name} of best: from {}={}",
                c0.over,
                fmt_x(axis, if name == "90%" { a.x_90 } else { a.x_95 })
            ))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
    }
    Ok(())
}

/// Curve `i` of `n`: its knee, median line, markers (hollow when unreliable) and
/// min-max bars.
fn draw_curve(
    ch: &mut Chart,
    (i, n): (usize, usize),
    c: &Curve,
    sp: &[PointSpread],
    (log, axis): (bool, Axis),
    ymax: f64,
    what: &str,
) -> Result<(), String> {
    let tx = move |x: f64| if log { x.log2() } else { x };
    // One curve keeps the knee red as before; several get their own colours.
    let colour = if n == 1 {
        RGBColor(20, 80, 200)
    } else {
        PALETTE[i % 10]
    };
    if let Some(k) = c.analysis.as_ref().and_then(|a| a.knee_x) {
        let kc = if n == 1 { RGBColor(200, 0, 0) } else { colour };
        ch.draw_series(DashedLineSeries::new(
            [(tx(k), 0.0), (tx(k), ymax)],
            6,
            4,
            kc.stroke_width(2),
        ))
        .map_err(draw_err)?
        .label(if n == 1 {
            format!("knee at {}={}", c.over, fmt_x(axis, k))
        } else {
            format!("{}: knee at {}={}", curve_name(c), c.over, fmt_x(axis, k))
        })
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], kc));
    }
    ch.draw_series(LineSeries::new(
        c.points.iter().map(|p| (tx(p.1), p.2)),
        colour.stroke_width(2),
    ))
    .map_err(draw_err)?
    .label(if n == 1 {
        format!("median {what} (bars: min-max)")
    } else {
        curve_name(c)
    })
    .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour));
    ch.draw_series(c.points.iter().zip(sp).map(|(p, q)| {
        let style = if q.3 {
            colour.stroke_width(2)
        } else {
            colour.filled()
        };
        Circle::new((tx(p.1), p.2), 4, style)
    }))
    .map_err(draw_err)?;
    ch.draw_series(
        sp.iter().map(|&(x, a, b, _)| {
            PathElement::new([(tx(x), a), (tx(x), b)], colour.stroke_width(1))
        }),
    )
    .map_err(draw_err)?;
    Ok(())
}

/// Legend entries that belong to no curve: what a hollow marker means (when a point is
/// unreliable) and, with several curves, what the bars are.
fn draw_legend_notes(ch: &mut Chart, spreads: &[Vec<PointSpread>], n: usize) -> Result<(), String> {
    if spreads.iter().flatten().any(|p| p.3) {
        // A legend entry for the hollow markers: what makes a point unreliable.
        let grey = RGBColor(90, 90, 90);
        ch.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(draw_err)?
            .label(format!(
                "hollow: unreliable (spread > {}x or CPU < {:.0}%)",
                sweep::MAX_SPREAD_RATIO,
                100.0 * sweep::MIN_WORKER_CPU
            ))
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, grey.stroke_width(2)));
    }
    if n > 1 {
        ch.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(draw_err)?
            .label("bars: min-max of runs")
            .legend(|(x, y)| PathElement::new([(x + 8, y - 5), (x + 8, y + 5)], BLACK));
    }
    Ok(())
}

/// How many x labels to ask plotters for. When every position is an integer (thread
/// counts; powers of two on a log axis) at most one per integer in the range, so the
/// step plotters picks (1, 2, 5, 10, ... times a power of ten, the finest that fits) is
/// a whole number: no tick at 1.5 threads.
fn x_label_count(positions: &[f64], lo: f64, hi: f64) -> usize {
    let integral = positions.iter().all(|x| (x - x.round()).abs() < 1e-9);
    if integral {
        ((hi.floor() - lo.ceil()) as usize + 1).clamp(2, 12)
    } else {
        10
    }
}

/// Segment colours: ten strong ones, then their light companions, so up to 20 series
/// (Wonderland's components are 15) are told apart; more repeat.
const PALETTE: [RGBColor; 20] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(152, 223, 138),
    RGBColor(255, 152, 150),
    RGBColor(197, 176, 213),
    RGBColor(196, 156, 148),
    RGBColor(247, 182, 210),
    RGBColor(199, 199, 199),
    RGBColor(219, 219, 141),
    RGBColor(158, 218, 229),
];

/// Where the legend goes: the right-hand corner the curve's right end is away from (a
/// falling curve ends low, so its legend goes up), so it hides no point there.
/// With several curves, `points` are their right ends: the legend goes up only when
/// every one ends low.
fn legend_corner(points: &[(String, f64, f64)], ymax: f64) -> SeriesLabelPosition {
    match points.iter().map(|p| p.2).reduce(f64::max) {
        Some(y) if y < ymax / 2.0 => SeriesLabelPosition::UpperRight,
        _ => SeriesLabelPosition::LowerRight,
    }
}

/// Background colour of a normalized value: white at 1, greener above, redder below
/// (saturating at 8x either way).
pub fn ratio_colour(r: f64) -> String {
    if !(r.is_finite() && r > 0.0) {
        return "#eeeeee".into();
    }
    let t = (r.log2().abs() / 3.0).min(1.0);
    let fade = |c: f64| (255.0 - (255.0 - c) * t).round() as u8;
    let (r_, g, b) = if r >= 1.0 {
        (fade(60.0), fade(170.0), fade(75.0))
    } else {
        (fade(215.0), fade(60.0), fade(50.0))
    };
    format!("#{r_:02x}{g:02x}{b:02x}")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The normalized table: rows are the first varied key's values, columns the other
/// keys' combinations, each column divided by its baseline (first) row. Throughput for
/// run sweeps, stall cycles per transaction for simulate sweeps.
pub fn normalized_table(s: &Summary) -> String {
    let fig = match s.spec.kind {
        sweep::Kind::Run | sweep::Kind::Profile => "throughput_tps",
        sweep::Kind::Simulate => "stall_cycles_per_txn",
    };
    normalized_table_of(s, fig)
}

/// With several keys, the same figure normalized along each of the others too: rows that
/// key's values, each column divided by its first value (the "revisited" paper's Table 2
/// gives both: each engine against DBMS D per size, and each engine against its
/// smallest size).
pub fn other_normalizations(s: &Summary) -> String {
    let mut h = String::new();
    for i in 1..s.spec.vary.len() {
        let mut t = s.clone();
        let k = t.spec.vary.remove(i);
        t.spec.vary.insert(0, k);
        h += &normalized_table(&t);
    }
    h
}

/// The normalized table of one figure (see `normalized_table`).
pub fn normalized_table_of(s: &Summary, fig: &str) -> String {
    let lower = sweep::lower_is_better(fig);
    let what = if fig == "throughput_tps" {
        "Throughput".to_string()
    } else {
        sweep::figure_label(fig)
    };
    let Some(first) = s.spec.vary.first() else {
        return String::new();
    };
    let mut cols: Vec<Vec<(String, String)>> = Vec::new();
    for p in &s.points {
        let rest: Vec<(String, String)> = p
            .values
            .iter()
            .filter(|(k, _)| *k != first.key)
            .cloned()
            .collect();
        if !cols.contains(&rest) {
            cols.push(rest);
        }
    }
    let median = |row: &str, col: &[(String, String)]| {
        s.points
            .iter()
            .find(|p| {
                p.values.iter().all(|(k, v)| {
                    (*k == first.key && v == row) || col.contains(&(k.clone(), v.clone()))
                })
            })
            .and_then(|p| sweep::figure(p, fig))
            .map(|t| t.median)
    };
    let cell = |v, b| cell(v, b, lower, &what);
    let base = &first.values[0];
    let mut h = format!(
        "<table class=\"norm\"><caption>{} normalized to {}={} (per column)</caption><tr><th>{}</th>",
        esc(&what),
        esc(&first.key),
        esc(base),
        esc(&first.key)
    );
    for c in &cols {
        let label: Vec<String> = c.iter().map(|(k, v)| format!("{k}={v}")).collect();
        h += &format!(
            "<th>{}</th>",
            esc(&if label.is_empty() {
                what.clone()
            } else {
                label.join(", ")
            })
        );
    }
    h += "</tr>\n";
    // With one key the row's own values are the columns: normalize along the row.
    let one_row = cols.len() == 1 && cols[0].is_empty();
    if one_row {
        h = format!(
            "<table class=\"norm\"><caption>{} normalized to {}={}</caption><tr>",
            esc(&what),
            esc(&first.key),
            esc(base)
        );
        for v in &first.values {
            h += &format!("<th>{}={}</th>", esc(&first.key), esc(v));
        }
        h += "</tr>\n<tr>";
        let b = median(base, &[]);
        for v in &first.values {
            h += &cell(median(v, &[]), b);
        }
        h += "</tr>\n</table>\n";
        return h;
    }
    for row in &first.values {
        h += &format!("<tr><th>{}</th>", esc(row));
        for c in &cols {
            h += &cell(median(row, c), median(base, c));
        }
        h += "</tr>\n";
    }
    h += "</table>\n";
    h
}

/// A normalized cell; a cost above its baseline is coloured as a loss (red).
fn cell(v: Option<f64>, base: Option<f64>, lower_is_better: bool, what: &str) -> String {
    match (v, base) {
        (Some(v), Some(b)) if b > 0.0 => {
            let r = v / b;
            format!(
                "<td style=\"background:{}\" title=\"{} {}\">{}</td>",
                ratio_colour(if lower_is_better { 1.0 / r } else { r }),
                if v >= 100.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.3}")
                },
                esc(what),
                if r >= 10.0 {
                    format!("{r:.1}")
                } else {
                    format!("{r:.2}")
                }
            )
        }
        _ => "<td style=\"background:#eeeeee\">-</td>".into(),
    }
}

fn page(title: &str, body: &str) -> String {
    page_with_style(title, body, "")
}

/// A self-contained page with extra CSS.
pub fn page_with_style(title: &str, body: &str, style: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>\
body{{font-family:sans-serif;margin:2em;max-width:80em}}\
table.norm{{border-collapse:collapse;margin:1em 0}}\
table.norm td,table.norm th{{border:1px solid #999;padding:0.3em 0.8em;text-align:right}}\
table.norm caption{{text-align:left;font-weight:bold;padding:0.3em 0}}\
figure{{margin:1em 0}}{style}\
</style></head>\n<body>\n<h1>{t}</h1>\n{body}</body></html>\n",
        t = esc(title)
    )
}

/// Stacked bars, one bar per category, one coloured segment per series (as the
/// Wonderland paper's breakdowns): `series[j].1[i]` is series j's part of category i.
pub fn stacked_bars(
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<String, String> {
    assert!(
        series.iter().all(|s| s.1.len() == categories.len()),
        "one value per category in every series"
    );
    let n = categories.len().max(1);
    let ymax = (0..categories.len())
        .map(|i| series.iter().map(|s| s.1[i].max(0.0)).sum::<f64>())
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.1;
    // Labels wider than their bar's slot (about 7 px a character) stand on end, below.
    let longest = categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let rotate = longest * 7 > (W - 170 - 94) / n as u32;
    let label_area = if rotate {
        (longest * 7 + 12).min(H / 2)
    } else {
        40
    };
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (plot_area, legend_area) = root.split_horizontally(W - 170);
        let mut ch = ChartBuilder::on(&plot_area)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(label_area)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..ymax)
            .map_err(draw_err)?;
        let cats = categories.to_vec();
        let xfmt = move |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                cats.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut mesh = ch.configure_mesh();
        mesh.disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&xfmt)
            .y_desc(y_desc)
            .y_label_formatter(&|v: &f64| {
                if *v >= 100.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.2}")
                }
            });
        if rotate {
            mesh.x_label_style(
                ("sans-serif", 12)
                    .into_font()
                    .transform(FontTransform::Rotate90),
            );
        }
        mesh.draw().map_err(draw_err)?;
        let mut base = vec![0.0; categories.len()];
        for (j, (_, vals)) in series.iter().enumerate() {
            let c = PALETTE[j % PALETTE.len()];
            ch.draw_series(vals.iter().enumerate().map(|(i, v)| {
                let (x0, x1) = (i as f64 - 0.35, i as f64 + 0.35);
                let r = Rectangle::new([(x0, base[i]), (x1, base[i] + v.max(0.0))], c.filled());
                base[i] += v.max(0.0);
                r
            }))
            .map_err(draw_err)?;
        }
        // The legend beside the chart, top to bottom in stacking order reversed (the top
        // segment first), so it reads like the bars.
        for (k, (j, (name, _))) in series.iter().enumerate().rev().enumerate() {
            let c = PALETTE[j % PALETTE.len()];
            let y = 30 + 18 * k as i32;
            legend_area
                .draw(&Rectangle::new([(4, y), (16, y + 12)], c.filled()))
                .map_err(draw_err)?;
            legend_area
                .draw(&Text::new(name.clone(), (22, y), ("sans-serif", 13)))
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(out)
}

fn write(path: &Path, text: &str) -> Result<PathBuf, String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

fn plots_dir(dir: &Path) -> Result<PathBuf, String> {
    let p = dir.join(PLOTS);
    std::fs::create_dir_all(&p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
    Ok(p)
}

/// A point's label under its bar: `threads=2` (`engine=disk, threads=2`).
fn point_label(p: &PointSummary) -> String {
    if p.values.is_empty() {
        return "all".into();
    }
    p.values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A profile sweep's stacked bars, one bar per point (median shares, in percent):
/// the sampled time by component (A-to-E's Figure 1), by transaction type, and the
/// lock manager's split where the engine has one (Figure 2). (file name, caption, SVG)
pub fn profile_bars(s: &Summary) -> Result<Vec<(String, String, String)>, String> {
    let pts: Vec<&PointSummary> = s.points.iter().filter(|p| p.profile.is_some()).collect();
    if s.spec.kind != sweep::Kind::Profile || pts.is_empty() {
        return Ok(Vec::new());
    }
    let cats: Vec<String> = pts.iter().map(|p| point_label(p)).collect();
    let pct = |p: &PointSummary, fig: &str| sweep::figure(p, fig).map_or(0.0, |t| 100.0 * t.median);
    // Series in the order of first appearance, those no point has left out.
    let series = |names: Vec<(String, String)>| -> Vec<(String, Vec<f64>)> {
        names
            .into_iter()
            .map(|(label, fig)| {
                (
                    label,
                    pts.iter().map(|p| pct(p, &fig)).collect::<Vec<f64>>(),
                )
            })
            .filter(|(_, v)| v.iter().any(|x| *x > 0.0))
            .collect()
    };
    let mut comps: Vec<(String, String)> = Vec::new();
    let mut types: Vec<(String, String)> = Vec::new();
    for p in &pts {
        let f = p.profile.as_ref().expect("filtered");
        for c in &f.components {
            if !comps.iter().any(|x| x.0 == c.name) {
                comps.push((c.name.clone(), format!("component_{}_share", c.name)));
            }
        }
        for t in &f.txn_types {
            if !types.iter().any(|x| x.0 == t.name) {
                types.push((
                    t.name.clone(),
                    format!("txn_{}_share", sweep::txn_key(&t.name)),
                ));
            }
        }
    }
    let fixed = if s.spec.args.is_empty() {
        String::new()
    } else {
        format!(" ({})", s.spec.args.join(" "))
    };
    let mut out = Vec::new();
    let title = format!("{}: sampled time by component", s.spec.workload);
    out.push((
        "profile-components".to_string(),
        format!(
            "{} time by storage-manager component, share of the CPU samples per point (median of runs){fixed}",
            s.spec.workload
        ),
        stacked_bars(&title, "% of CPU samples", &cats, &series(comps))?,
    ));
    if types.len() > 1 {
        let title = format!("{}: sampled time by transaction type", s.spec.workload);
        out.push((
            "profile-txn-types".to_string(),
            format!(
                "{} time by transaction type, share of the CPU samples per point",
                s.spec.workload
            ),
            stacked_bars(&title, "% of CPU samples", &cats, &series(types))?,
        ));
    }
    if pts
        .iter()
        .any(|p| p.profile.as_ref().is_some_and(|f| f.lock_split.is_some()))
    {
        let parts: Vec<(String, String)> = sweep::LOCK_SPLIT
            .iter()
            .map(|(k, label)| (label.to_string(), format!("lock_split_{k}_share")))
            .collect();
        let title = format!("{}: lock manager time", s.spec.workload);
        out.push((
            "profile-lock-split".to_string(),
            format!(
                "{} lock manager time split as A-to-E's Figure 2 (Lock: locking work; Lock-PC: waiting for a lock entry's latch; Lock-LC: waiting for a conflicting lock), share of the workers' measured time",
                s.spec.workload
            ),
            // Every part, even one at zero everywhere: Figure 2 names all three.
            stacked_bars(
                &title,
                "% of workers' time",
                &cats,
                &parts
                    .iter()
                    .map(|(l, f)| (l.clone(), pts.iter().map(|p| pct(p, f)).collect()))
                    .collect::<Vec<_>>(),
            )?,
        ));
    }
    Ok(out)
}

fn plot_sweep(dir: &Path, s: &Summary) -> Result<Vec<PathBuf>, String> {
    let pd = plots_dir(dir)?;
    let mut files = Vec::new();
    let mut body = String::new();
    let vary: Vec<String> = s
        .spec
        .vary
        .iter()
        .map(|v| format!("{}={}", v.key, v.values.join(",")))
        .collect();
    body += &format!(
        "<p>oltpscope {} {} {} &mdash; varied: {}; {} run(s) per point.</p>\n",
        s.spec.kind.as_str(),
        esc(&s.spec.workload),
        esc(&s.spec.args.join(" ")),
        esc(&vary.join("; ")),
        s.spec.repeat
    );
    body += &normalized_table(s);
    body += &other_normalizations(s);
    for (name, caption, svg) in profile_bars(s)? {
        files.push(write(&pd.join(format!("{name}.svg")), &svg)?);
        body += &format!(
            "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
            esc(&caption)
        );
    }
    body += &unreliable_note(s);
    for (i, g) in charts(s).iter().enumerate() {
        let svg = chart_svg(s, g)?;
        files.push(write(&pd.join(format!("curve-{}.svg", i + 1)), &svg)?);
        body += &format!("<figure>{svg}</figure>\n");
    }
    if s.curves.is_empty() {
        body += "<p>No numeric key was varied: no curve to draw.</p>\n";
    }
    files.push(write(
        &dir.join(INDEX),
        &page(
            &format!(
                "oltpscope sweep: {} {}",
                s.spec.kind.as_str(),
                s.spec.workload
            ),
            &body,
        ),
    )?);
    Ok(files)
}

/// The points flagged unreliable, with their reasons (an empty string when none is).
fn unreliable_note(s: &Summary) -> String {
    let bad: Vec<String> = s
        .points
        .iter()
        .filter_map(|p| {
            let why = p.unreliable.as_ref()?;
            Some(format!("<li>{}: {}</li>", esc(&point_label(p)), esc(why)))
        })
        .collect();
    if bad.is_empty() {
        return String::new();
    }
    format!(
        "<p class=\"unreliable\">Unreliable points (hollow markers; repetitions spread more than {}x, or workers on CPU under {:.0}% of the measured time):</p>\n<ul>{}</ul>\n",
        sweep::MAX_SPREAD_RATIO,
        100.0 * sweep::MIN_WORKER_CPU,
        bad.join("")
    )
}

/// Lines over the run's seconds, one per named series (a legend when there are
/// several).
fn series_svg(
    title: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String, String> {
    let all = || series.iter().flat_map(|s| s.1.iter());
    let xmax = all().map(|p| p.0).fold(1.0, f64::max);
    let ymax = all().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.1;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut ch = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(draw_err)?;
        ch.configure_mesh()
            .x_desc("second of the run")
            .y_desc(y_desc)
            .y_label_formatter(&|v: &f64| {
                if *v >= 100.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.1}")
                }
            })
            .draw()
            .map_err(draw_err)?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = if series.len() == 1 {
                RGBColor(20, 80, 200)
            } else {
                PALETTE[i % PALETTE.len()]
            };
            ch.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(draw_err)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c));
        }
        if series.len() > 1 {
            ch.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(out)
}

/// (second, value) points.
type Points = Vec<(f64, f64)>;
/// A named series of points.
type Series = (String, Points);

/// The per-second series of `timeseries.csv`: throughput, and p99 latency per
/// transaction type (`<txn>_p99_us` columns; the aggregate `p99_us` when the file has
/// none, or only one type).
fn read_timeseries(path: &Path) -> Result<(Points, Vec<Series>), String> {
    let mut rd =
        csv::Reader::from_path(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let h = rd
        .headers()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .clone();
    let col = |n: &str| {
        h.iter()
            .position(|c| c == n)
            .ok_or_else(|| format!("{}: no column {n}", path.display()))
    };
    let (cs, ct, cp) = (col("second")?, col("throughput_tps")?, col("p99_us")?);
    let mut lat: Vec<(String, usize)> = h
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((c.strip_suffix("_p99_us")?.to_string(), i)))
        .filter(|(n, _)| !n.is_empty())
        .collect();
    if lat.len() < 2 {
        lat = vec![("all types".into(), cp)];
    }
    let mut tps = Vec::new();
    let mut p99: Vec<Series> = lat.iter().map(|(n, _)| (n.clone(), Vec::new())).collect();
    for r in rd.records() {
        let r = r.map_err(|e| format!("{}: {e}", path.display()))?;
        let num = |i: usize| r.get(i).and_then(|v| v.parse::<f64>().ok());
        let Some(s) = num(cs) else {
            return Err(format!("{}: a row without its second", path.display()));
        };
        if let Some(t) = num(ct) {
            tps.push((s, t));
        }
        // An empty cell: nothing of that type ended in the second (no point drawn).
        for (k, (_, i)) in lat.iter().enumerate() {
            if let Some(l) = num(*i) {
                p99[k].1.push((s, l));
            }
        }
    }
    Ok((tps, p99))
}

fn plot_results(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let (tps, p99) = read_timeseries(&dir.join(results::TIMESERIES))?;
    let pd = plots_dir(dir)?;
    let a = series_svg(
        "throughput per second",
        "txn/s",
        &[("throughput".to_string(), tps)],
    )?;
    let title = if p99.len() > 1 {
        "99th-percentile latency per second, per transaction type"
    } else {
        "99th-percentile latency per second"
    };
    let b = series_svg(title, "us", &p99)?;
    let files = vec![
        write(&pd.join("throughput.svg"), &a)?,
        write(&pd.join("latency-p99.svg"), &b)?,
    ];
    let title = results::load_report(dir)
        .ok()
        .map(|r| {
            format!(
                "oltpscope run: {} on {}",
                r["workload"].as_str().unwrap_or("?"),
                r["engine"].as_str().unwrap_or("?")
            )
        })
        .unwrap_or_else(|| "oltpscope run".into());
    let body = format!("<figure>{a}</figure>\n<figure>{b}</figure>\n");
    let mut files = files;
    files.push(write(&dir.join(INDEX), &page(&title, &body))?);
    Ok(files)
}

/// A `simulate --out` directory: MPKI per level split into instructions and data, and
/// the share of the stall cycles per component and per database operation, stacked by
/// level (from the report's `simulation`; [docs/results.md]); with a size sweep, the
/// swept levels' MPKI and stall share per size.
fn plot_simulation(dir: &Path, report: &serde_json::Value) -> Result<Vec<PathBuf>, String> {
    let sim = &report["simulation"];
    let bad = |what: &str| format!("{}: the simulation has no {what}", dir.display());
    let levels = sim["levels"].as_array().ok_or_else(|| bad("levels"))?;
    let names: Vec<String> = levels
        .iter()
        .map(|l| l["name"].as_str().unwrap_or("?").to_string())
        .collect();
    let split = |part: &str| -> Vec<f64> {
        levels
            .iter()
            .map(|l| l["mpki"][part].as_f64().unwrap_or(0.0))
            .collect()
    };
    let mpki = stacked_bars(
        "misses per 1000 instructions, per level",
        "MPKI",
        &names,
        &[
            ("instructions".to_string(), split("i")),
            ("data".to_string(), split("d")),
        ],
    )?;
    let total = sim["total_stall_cycles"]
        .as_f64()
        .ok_or_else(|| bad("total_stall_cycles"))?;
    let pd = plots_dir(dir)?;
    let mut files = vec![write(&pd.join("mpki.svg"), &mpki)?];
    let mut body = format!("<figure>{mpki}</figure>\n");
    for (key, label, file) in [
        ("by_component", "component", "stall-by-component.svg"),
        ("by_operation", "operation", "stall-by-operation.svg"),
    ] {
        if let Some(svg) = stall_breakdown(sim, &names, total, key, label)? {
            files.push(write(&pd.join(file), &svg)?);
            body += &format!("<figure>{svg}</figure>\n");
        }
    }
    if let Some(svg) = btree_levels(sim, levels, total)? {
        files.push(write(&pd.join("stall-by-btree-level.svg"), &svg)?);
        body += &format!("<figure>{svg}</figure>\n");
    }
    for (level, svgs) in size_sweep(sim)? {
        for (i, svg) in svgs.iter().enumerate() {
            let kind = ["mpki", "stall-share"][i];
            let file = format!("sweep-{}-{kind}.svg", level.to_lowercase());
            files.push(write(&pd.join(file), svg)?);
            body += &format!("<figure>{svg}</figure>\n");
        }
    }
    let what = report["child_args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let title = format!("oltpscope simulate: {}", sim_title(sim, &what));
    files.push(write(&dir.join(INDEX), &page(&title, &body))?);
    Ok(files)
}

/// A simulation's stall-cycle breakdown `key` (`by_component`, `by_operation`) as stacked
/// bars: rows of the breakdown as categories, levels as the stacked series (% of all stall
/// cycles `total`), rows with no stall cycles left out; none when there is nothing to draw.
fn stall_breakdown(
    sim: &serde_json::Value,
    names: &[String],
    total: f64,
    key: &str,
    label: &str,
) -> Result<Option<String>, String> {
    let Some(rows) = sim[key].as_array() else {
        return Ok(None);
    };
    let rows: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["stall_cycles"].as_f64().unwrap_or(0.0) > 0.0)
        .collect();
    if rows.is_empty() || total <= 0.0 {
        return Ok(None);
    }
    let field = if key == "by_component" {
        "component"
    } else {
        "operation"
    };
    let cats: Vec<String> = rows
        .iter()
        .map(|r| r[field].as_str().unwrap_or("?").to_string())
        .collect();
    let series: Vec<(String, Vec<f64>)> = names
        .iter()
        .map(|lv| {
            let v = rows
                .iter()
                .map(|r| {
                    let cycles = r["levels"]
                        .as_array()
                        .and_then(|ls| ls.iter().find(|l| l["level"] == lv.as_str()))
                        .and_then(|l| l["stall_cycles"]["total"].as_f64())
                        .unwrap_or(0.0);
                    100.0 * cycles / total
                })
                .collect();
            (lv.clone(), v)
        })
        .collect();
    stacked_bars(
        &format!("share of stall cycles by {label}, per level"),
        "% of stall cycles",
        &cats,
        &series,
    )
    .map(Some)
}

/// Bars of the B+tree level chart at most (TPC-C has about 30 levels and hinted leaves).
const BTREE_BARS: usize = 12;

/// `simulate --btree-levels`: each B+tree level's (and hinted leaves') share of all stall
/// cycles `total`, stacked by cache level (its misses there times the level's miss
/// penalty), the levels of one tree side by side; none without the table.
fn btree_levels(
    sim: &serde_json::Value,
    levels: &[serde_json::Value],
    total: f64,
) -> Result<Option<String>, String> {
    let Some(rows) = sim["btree_levels"].as_array() else {
        return Ok(None);
    };
    // The rows of trees (not the code outside any level) with stall cycles, at most
    // `BTREE_BARS` of them, those with the most, in the table's order.
    let mut rows: Vec<(usize, &serde_json::Value)> = rows
        .iter()
        .filter(|r| r["height"].is_u64() || r["hint"] == true)
        .filter(|r| r["stall_cycles"].as_f64().unwrap_or(0.0) > 0.0)
        .enumerate()
        .collect();
    rows.sort_by(|a, b| {
        let s = |r: &serde_json::Value| r["stall_cycles"].as_f64().unwrap_or(0.0);
        s(b.1).total_cmp(&s(a.1))
    });
    rows.truncate(BTREE_BARS);
    rows.sort_by_key(|r| r.0);
    let rows: Vec<&serde_json::Value> = rows.into_iter().map(|r| r.1).collect();
    if rows.is_empty() || total <= 0.0 {
        return Ok(None);
    }
    let cats: Vec<String> = rows
        .iter()
        .map(|r| r["name"].as_str().unwrap_or("?").to_string())
        .collect();
    let series: Vec<(String, Vec<f64>)> = levels
        .iter()
        .map(|l| {
            let name = l["name"].as_str().unwrap_or("?");
            let penalty = l["miss_penalty_cycles"].as_f64().unwrap_or(0.0);
            let v = rows
                .iter()
                .map(|r| {
                    let misses = (r["misses"].as_array().into_iter().flatten())
                        .find(|m| m[0] == name)
                        .and_then(|m| m[1]["total"].as_f64())
                        .unwrap_or(0.0);
                    100.0 * misses * penalty / total
                })
                .collect();
            (name.to_string(), v)
        })
        .collect();
    stacked_bars(
        "stall cycles' share of the B+tree levels with most (tree level/levels)",
        "% of stall cycles",
        &cats,
        &series,
    )
    .map(Some)
}

/// A size sweep (`simulate --sweep l1i=...,llc=...`): per swept level, its MPKI at each
/// size (instructions and data) and its share of all stall cycles had that cache been in
/// place (the report's `stall_share`; sizes of reports older than the figure get none),
/// the papers' footprint-to-cache question as two charts.
fn size_sweep(sim: &serde_json::Value) -> Result<Vec<(String, Vec<String>)>, String> {
    let Some(points) = sim["sweep"].as_array().filter(|p| !p.is_empty()) else {
        return Ok(Vec::new());
    };
    let mut levels: Vec<String> = Vec::new();
    for p in points {
        let l = p["level"].as_str().unwrap_or("?").to_string();
        if !levels.contains(&l) {
            levels.push(l);
        }
    }
    let mut out = Vec::new();
    for level in levels {
        let pts: Vec<&serde_json::Value> = points
            .iter()
            .filter(|p| p["level"].as_str() == Some(level.as_str()))
            .collect();
        let sizes: Vec<String> = pts
            .iter()
            .map(|p| {
                let c = &p["config"];
                let kb = c["size_bytes"].as_u64().unwrap_or(0) / 1024;
                let size = if kb >= 1024 && kb % 1024 == 0 {
                    format!("{} MB", kb / 1024)
                } else {
                    format!("{kb} KB")
                };
                format!("{size} {}-way", c["ways"].as_u64().unwrap_or(0))
            })
            .collect();
        let split = |part: &str| -> Vec<f64> {
            pts.iter()
                .map(|p| p["mpki"][part].as_f64().unwrap_or(0.0))
                .collect()
        };
        let mut svgs = vec![stacked_bars(
            &format!("{level} misses per 1000 instructions, per {level} size"),
            "MPKI",
            &sizes,
            &[
                ("instructions".to_string(), split("i")),
                ("data".to_string(), split("d")),
            ],
        )?];
        if pts.iter().any(|p| p["stall_share"].is_f64()) {
            let share: Vec<f64> = pts
                .iter()
                .map(|p| 100.0 * p["stall_share"].as_f64().unwrap_or(0.0))
                .collect();
            svgs.push(stacked_bars(
                &format!("{level} share of all stall cycles, per {level} size"),
                "% of stall cycles",
                &sizes,
                &[(level.clone(), share)],
            )?);
        }
        out.push((level, svgs));
    }
    Ok(out)
}

/// Transactions and instructions per transaction, and the traced run's command.
fn sim_title(sim: &serde_json::Value, what: &str) -> String {
    format!(
        "{} transactions, {:.0} instructions/txn{}",
        sim["transactions"].as_u64().unwrap_or(0),
        sim["instructions_per_txn"].as_f64().unwrap_or(0.0),
        if what.is_empty() {
            String::new()
        } else {
            format!(" ({what})")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{parse_vary, Spec, Spread};

    fn summary() -> Summary {
        let spec = Spec {
            kind: sweep::Kind::Run,
            workload: "micro".into(),
            vary: vec![
                parse_vary("engine=disk,memory").unwrap(),
                parse_vary("size=1MB,16MB,1GB").unwrap(),
            ],
            repeat: 1,
            args: vec![],
            load_once: None,
        };
        let points: Vec<PointSummary> = spec
            .points()
            .iter()
            .enumerate()
            .map(|(i, p)| PointSummary {
                name: p.name(),
                values: p.values.clone(),
                reps_done: 1,
                reps_failed: 0,
                error: None,
                throughput_tps: Spread::of(&[100.0 * (i + 1) as f64]),
                abort_rate: None,
                latency_p99_us: None,
                queries_per_hour: None,
                simulation: None,
                profile: None,
                worker_cpu_busy: None,
                spread_ratio: None,
                unreliable: None,
            })
            .collect();
        let curves = sweep::curves(&spec, &points);
        Summary {
            spec,
            points,
            curves,
        }
    }

    #[test]
    fn the_table_normalizes_each_column_to_the_baseline_row() {
        let t = normalized_table(&summary());
        // memory/1MB is point 4 (400) over disk/1MB (100).
        assert!(t.contains(">4.00<"), "{t}");
        assert!(t.contains(">1.00<"), "{t}");
        assert!(t.contains("size=16MB"), "{t}");
        // Along the other key: memory/1GB (600) over memory/1MB (400).
        let t = other_normalizations(&summary());
        assert!(t.contains("normalized to size=1MB"), "{t}");
        assert!(t.contains("engine=memory") && t.contains(">1.50<"), "{t}");
        assert_eq!(ratio_colour(1.0), "#ffffff");
        assert_ne!(ratio_colour(2.0), ratio_colour(0.5));
    }

    #[test]
    fn the_legend_goes_where_the_curve_does_not_end() {
        // The curves' right ends: the legend goes up only when all of them end low.
        let ends = |ys: &[f64]| -> Vec<(String, f64, f64)> {
            ys.iter().map(|&y| ("8".to_string(), 8.0, y)).collect()
        };
        assert!(matches!(
            legend_corner(&ends(&[100.0]), 550.0),
            SeriesLabelPosition::UpperRight
        ));
        assert!(matches!(
            legend_corner(&ends(&[500.0]), 550.0),
            SeriesLabelPosition::LowerRight
        ));
        assert!(matches!(
            legend_corner(&ends(&[100.0, 500.0]), 550.0),
            SeriesLabelPosition::LowerRight
        ));
    }

    #[test]
    fn stacked_bars_draw_a_segment_per_series_and_a_legend() {
        let cats = vec!["tpcb memory".to_string(), "tpcb disk".to_string()];
        let series = vec![
            ("L1-I".to_string(), vec![10.0, 20.0]),
            ("LLC D".to_string(), vec![5.0, 0.0]),
        ];
        let svg = stacked_bars("t", "stall cycles / txn", &cats, &series).unwrap();
        let doc = count_of(&svg, "<rect");
        // The background, the plot area, 4 segments and 2 legend swatches at least.
        assert!(doc >= 6, "{doc} rects");
        assert!(svg.contains("LLC D") && svg.contains("tpcb disk"), "{svg}");
        // Fifteen series (Wonderland's components) get fifteen colours.
        let many: Vec<(String, Vec<f64>)> =
            (0..15).map(|i| (format!("c{i}"), vec![1.0, 1.0])).collect();
        let svg = stacked_bars("t", "MPKI", &cats, &many).unwrap();
        let fills: std::collections::HashSet<&str> = svg
            .split("fill=\"")
            .skip(1)
            .filter_map(|f| f.split('"').next())
            .filter(|f| *f != "#FFFFFF" && *f != "#000000" && *f != "none")
            .collect();
        assert!(fills.len() >= 15, "{fills:?}");
        let distinct: std::collections::HashSet<_> =
            PALETTE.iter().map(|c| (c.0, c.1, c.2)).collect();
        assert_eq!(distinct.len(), PALETTE.len());
    }

    #[test]
    fn a_profile_sweep_gets_stacked_bars_of_components_types_and_lock_split() {
        use crate::sweep::{LockSplitFigures, ProfileFigures, ShareFigure, TxnFigures};
        let spec = Spec {
            kind: sweep::Kind::Profile,
            workload: "tpcc".into(),
            vary: vec![parse_vary("threads=1,2").unwrap()],
            repeat: 1,
            args: vec!["--engine".into(), "disk".into()],
            load_once: None,
        };
        let share = |n: &str, x: f64| ShareFigure {
            name: n.into(),
            share: Spread::of(&[x]),
        };
        let points: Vec<PointSummary> = spec
            .points()
            .iter()
            .enumerate()
            .map(|(i, p)| PointSummary {
                name: p.name(),
                values: p.values.clone(),
                reps_done: 1,
                reps_failed: 0,
                error: None,
                throughput_tps: Spread::of(&[100.0]),
                abort_rate: None,
                latency_p99_us: None,
                queries_per_hour: None,
                simulation: None,
                profile: Some(ProfileFigures {
                    samples: Spread::of(&[1000.0]),
                    read_overhead: None,
                    components: vec![
                        share("btree", 0.6 - 0.1 * i as f64),
                        share("lock", 0.4 + 0.1 * i as f64),
                        share("occ", 0.0),
                    ],
                    txn_types: vec![
                        TxnFigures {
                            name: "new_order".into(),
                            share: Spread::of(&[0.6]),
                            components: vec![],
                        },
                        TxnFigures {
                            name: "payment".into(),
                            share: Spread::of(&[0.4]),
                            components: vec![],
                        },
                    ],
                    lock_split: Some(LockSplitFigures {
                        lock: Spread::of(&[0.3]),
                        lock_pc: Spread::of(&[0.0]),
                        lock_lc: Spread::of(&[0.05 * i as f64]),
                    }),
                }),
                worker_cpu_busy: None,
                spread_ratio: None,
                unreliable: None,
            })
            .collect();
        let curves = sweep::curves(&spec, &points);
        let s = Summary {
            spec,
            points,
            curves,
        };
        let bars = profile_bars(&s).unwrap();
        let names: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "profile-components",
                "profile-txn-types",
                "profile-lock-split"
            ]
        );
        let comp = &bars[0].2;
        assert!(
            comp.contains("threads=1") && comp.contains("threads=2"),
            "{comp}"
        );
        // plotters writes a text element's content on its own line.
        let label = |svg: &str, t: &str| svg.contains(&format!(">\n{t}\n</text>"));
        assert!(label(comp, "btree") && label(comp, "lock"), "{comp}");
        assert!(
            !label(comp, "occ"),
            "a component never sampled has no legend entry"
        );
        // Figure 2 names all three parts, Lock-PC too though it is zero.
        assert!(label(&bars[2].2, "Lock-PC") && label(&bars[2].2, "Lock-LC"));
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(sweep::SUMMARY_JSON),
            serde_json::to_string(&s).unwrap(),
        )
        .unwrap();
        let files = plot(d.path()).unwrap();
        assert!(files
            .iter()
            .any(|f| f.ends_with("plots/profile-components.svg")));
        let html = std::fs::read_to_string(d.path().join(INDEX)).unwrap();
        // Three bar figures and the throughput curve.
        assert_eq!(html.matches("<svg").count(), 4, "{html}");
        assert!(html.contains("Figure 2"), "{html}");
    }

    #[test]
    fn integer_positions_get_a_whole_step() {
        // Threads 1..8 on a linear axis: at most 8 labels, so the step is 1, not 0.5.
        assert_eq!(x_label_count(&[1.0, 2.0, 4.0, 8.0], 0.65, 8.35), 8);
        // Many integers: capped, and plotters' steps above 1 are whole (2, 5, 10).
        assert_eq!(x_label_count(&[1.0, 64.0], -2.0, 67.0), 12);
        assert_eq!(x_label_count(&[1.5, 3.0], 1.4, 3.1), 10);
    }

    fn count_of(s: &str, what: &str) -> usize {
        s.matches(what).count()
    }

    #[test]
    fn a_sweep_plots_into_svg_and_one_html_page() {
        let d = tempfile::tempdir().unwrap();
        let s = summary();
        std::fs::write(
            d.path().join(sweep::SUMMARY_JSON),
            serde_json::to_string(&s).unwrap(),
        )
        .unwrap();
        let files = plot(d.path()).unwrap();
        // One chart over size, a curve per engine in it.
        assert_eq!(files.len(), 2, "{files:?}");
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("<polyline"),
            "{svg}"
        );
        assert!(
            svg.contains("engine=disk") && svg.contains("engine=memory"),
            "{svg}"
        );
        let html = std::fs::read_to_string(d.path().join(INDEX)).unwrap();
        assert_eq!(html.matches("<svg").count(), 1);
        assert_eq!(
            html.matches("class=\"norm\"").count(),
            2,
            "one table per key"
        );
        assert_eq!(fmt_size(16.0 * 1048576.0), "16MB");
        assert_eq!(fmt_size(1536.0), "1.5KB");
        let e = plot(&d.path().join("nothing")).unwrap_err();
        assert!(e.contains("no such directory"), "{e}");
    }
}
