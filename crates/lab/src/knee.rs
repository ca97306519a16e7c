//! Knees and sufficiency of a performance curve over one resource, as the
//! resource-sensitivity paper reads its curves: the knee (after Woo et al.'s working-set
//! knees: where the curve bends from steep to flat), and the least resource reaching 90%
//! and 95% of the best performance (the paper's Table 4, which takes the full allocation
//! as the reference; on a curve that rises to its end the two are the same point).
//!
//! The knee is the point farthest from the chord joining the curve's ends, both axes
//! scaled to [0, 1] (the resource on a log scale when it spans a factor of 16 or more, as
//! sizes and cache capacities are swept in powers): the "Kneedle" criterion. A curve too
//! close to its chord (under `MIN_BEND`) has no knee.

/// Below this normalized distance from the chord, a curve is taken as straight.
pub const MIN_BEND: f64 = 0.05;

/// A curve whose figure changes by less than this share of its largest value is flat:
/// no knee (scaling it to [0, 1] would otherwise turn run-to-run noise into a bend).
pub const MIN_CHANGE: f64 = 0.05;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sufficiency {
    /// The best performance and the resource where it was reached.
    pub best_x: f64,
    pub best_y: f64,
    /// The least resource reaching 90% (95%) of the best.
    pub x_90: f64,
    pub x_95: f64,
    /// The knee's resource, if the curve has one.
    pub knee_x: Option<f64>,
}

/// Analyse the curve `points` (resource, performance), in any order. None when there
/// are no points or the best performance is not positive.
pub fn analyse(points: &[(f64, f64)]) -> Option<Sufficiency> {
    analyse_as(points, false)
}

/// Analyse a curve of a cost (misses, stall cycles), where lower is better: the best is
/// the least cost, and "reaching 90% of the best" means a cost at most best / 0.90 (the
/// performance such a cost limits, its inverse, is then within 90%). None when there are
/// no points or a cost is negative.
pub fn analyse_cost(points: &[(f64, f64)]) -> Option<Sufficiency> {
    analyse_as(points, true)
}

fn analyse_as(points: &[(f64, f64)], lower_is_better: bool) -> Option<Sufficiency> {
    if lower_is_better {
        let p = sorted_finite(points);
        let &(best_x, best_y) = p.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
        if best_y < 0.0 {
            return None;
        }
        let least = |share: f64| {
            p.iter()
                .find(|(_, y)| *y * share <= best_y)
                .map(|(x, _)| *x)
                .expect("the best point reaches any share of itself")
        };
        return Some(Sufficiency {
            best_x,
            best_y,
            x_90: least(0.90),
            x_95: least(0.95),
            knee_x: knee(&p),
        });
    }
    analyse_performance(points)
}

fn sorted_finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut p: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    p
}

fn analyse_performance(points: &[(f64, f64)]) -> Option<Sufficiency> {
    let p = sorted_finite(points);
    let &(best_x, best_y) = p.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    if best_y <= 0.0 {
        return None;
    }
    let least = |share: f64| {
        p.iter()
            .find(|(_, y)| *y >= share * best_y)
            .map(|(x, _)| *x)
            .expect("the best point reaches any share of itself")
    };
    Some(Sufficiency {
        best_x,
        best_y,
        x_90: least(0.90),
        x_95: least(0.95),
        knee_x: knee(&p),
    })
}

/// The knee of a curve sorted by resource (see the module comment).
pub fn knee(p: &[(f64, f64)]) -> Option<f64> {
    if p.len() < 3 {
        return None;
    }
    let (x0, xn) = (p[0].0, p[p.len() - 1].0);
    let log = x0 > 0.0 && xn / x0 >= 16.0;
    let fx = |x: f64| if log { x.ln() } else { x };
    let (lo_x, hi_x) = (fx(x0), fx(xn));
    let lo_y = p.iter().map(|q| q.1).fold(f64::INFINITY, f64::min);
    let hi_y = p.iter().map(|q| q.1).fold(f64::NEG_INFINITY, f64::max);
    if hi_x <= lo_x || hi_y <= lo_y || hi_y - lo_y < MIN_CHANGE * hi_y.abs().max(lo_y.abs()) {
        return None;
    }
    let norm: Vec<(f64, f64)> = p
        .iter()
        .map(|&(x, y)| ((fx(x) - lo_x) / (hi_x - lo_x), (y - lo_y) / (hi_y - lo_y)))
        .collect();
    let (a, b) = (norm[0], norm[norm.len() - 1]);
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = (dx * dx + dy * dy).sqrt();
    let (i, dist) = norm
        .iter()
        .enumerate()
        .skip(1)
        .take(norm.len() - 2)
        .map(|(i, q)| (i, ((q.0 - a.0) * dy - (q.1 - a.1) * dx).abs() / len))
        .max_by(|u, v| u.1.total_cmp(&v.1))?;
    (dist >= MIN_BEND).then_some(p[i].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saturating_curve_has_its_knee_where_it_flattens() {
        // Throughput over cores: linear to 4, flat after.
        let p: Vec<(f64, f64)> = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
            .iter()
            .map(|&c: &f64| (c, 100.0 * c.min(4.0)))
            .collect();
        let s = analyse(&p).unwrap();
        assert_eq!(s.knee_x, Some(4.0));
        assert_eq!(s.best_y, 400.0);
        // 90% of 400 is 360: 3 cores give 300, 4 give 400.
        assert_eq!(s.x_90, 4.0);
        assert_eq!(s.x_95, 4.0);
    }

    #[test]
    fn sufficiency_takes_the_least_resource_reaching_the_share() {
        // Unsorted input; 90% of 100 is 90 (reached at 8), 95% is 95 (at 16).
        let p = [
            (32.0, 100.0),
            (2.0, 40.0),
            (8.0, 91.0),
            (16.0, 96.0),
            (4.0, 70.0),
        ];
        let s = analyse(&p).unwrap();
        assert_eq!((s.best_x, s.best_y), (32.0, 100.0));
        assert_eq!(s.x_90, 8.0);
        assert_eq!(s.x_95, 16.0);
        // Sizes over a factor of 16: the knee is found on the log scale.
        assert_eq!(s.knee_x, Some(8.0));
    }

    #[test]
    fn a_falling_curve_has_a_knee_too() {
        // Throughput over data size: flat while the data fits in cache, then a drop.
        let p = [
            (1.0, 100.0),
            (2.0, 99.0),
            (4.0, 98.0),
            (8.0, 40.0),
            (16.0, 35.0),
            (32.0, 33.0),
        ];
        let s = analyse(&p).unwrap();
        assert_eq!(s.best_x, 1.0);
        assert_eq!(s.x_90, 1.0);
        assert!(matches!(s.knee_x, Some(x) if x == 4.0 || x == 8.0), "{s:?}");
    }

    #[test]
    fn straight_short_and_empty_curves_have_no_knee() {
        let line: Vec<(f64, f64)> = (1..=6).map(|i| (i as f64, 10.0 * i as f64)).collect();
        assert_eq!(analyse(&line).unwrap().knee_x, None);
        assert_eq!(analyse(&[(1.0, 5.0), (2.0, 9.0)]).unwrap().knee_x, None);
        // Within 5% end to end: noise, not a knee.
        let flat = [(1.0, 100.0), (2.0, 97.0), (4.0, 96.5), (8.0, 96.4)];
        assert_eq!(analyse(&flat).unwrap().knee_x, None);
        assert_eq!(analyse(&[]), None);
        assert_eq!(analyse(&[(1.0, 0.0), (2.0, 0.0)]), None);
    }

    #[test]
    fn a_cost_curve_is_read_with_lower_as_better() {
        // LLC misses per 1000 instructions over cache size: falling, flat from 8 MB.
        let m = 1024.0 * 1024.0;
        let p = [
            (1.0 * m, 10.0),
            (2.0 * m, 6.0),
            (4.0 * m, 2.1),
            (8.0 * m, 1.05),
            (16.0 * m, 1.0),
            (32.0 * m, 1.0),
        ];
        let s = analyse_cost(&p).unwrap();
        assert_eq!(s.best_y, 1.0);
        assert_eq!(s.best_x, 16.0 * m, "the least resource with the least cost");
        // 1.0 / 0.90 = 1.11: 8 MB (1.05) suffices; 1.0 / 0.95 = 1.053: 8 MB too.
        assert_eq!((s.x_90, s.x_95), (8.0 * m, 8.0 * m));
        assert!(
            matches!(s.knee_x, Some(x) if x == 4.0 * m || x == 8.0 * m),
            "{s:?}"
        );
        // A zero cost is a best like any other; a negative one is not a cost.
        let z = analyse_cost(&[(1.0, 3.0), (2.0, 0.0)]).unwrap();
        assert_eq!((z.x_90, z.best_y), (2.0, 0.0));
        assert_eq!(analyse_cost(&[(1.0, -1.0)]), None);
        assert_eq!(analyse_cost(&[]), None);
    }
}
