//! Stopping the measured part of a simulation once its figures have settled.
//!
//! The measured transactions are cut into batches of `Rule::batch_txns` (method of batch
//! means). Every figure the rule watches is a ratio of two sums over the run:
//! instructions per transaction (instructions over transactions) and each level's or
//! sweep point's MPKI (misses × 1000 over instructions), so its estimate is the ratio of
//! the batches' sums (exactly the report's figure) and its 95% confidence interval the
//! ratio estimator's: with batch values (y_j, x_j), R = Σy / Σx, residuals
//! d_j = y_j − R·x_j, s² = Σd² / (n − 1), standard error s / (√n · x̄), half-width
//! t(0.975, n − 1) × that. A figure has settled when its half-width is within
//! `rel` × R (or, for an MPKI, within the absolute floor `abs_mpki`, so a level that
//! hardly misses does not need thousands of batches to pin down a rate near zero) and
//! the ratios of the first and second half of the batches differ by at most twice that
//! tolerance (a drifting series, e.g. a data set still being touched for the first
//! time, has narrow batch intervals around a moving mean: this catches it; for a steady
//! series the halves' difference has twice the standard error of the whole, so the
//! check rarely fires by chance once the interval is within the tolerance). The run
//! stops at the first batch end, at least `min_batches` in, where every watched figure
//! has settled; the caller's transaction count is the cap.
//!
//! Pure arithmetic on recorded batches: the simulator feeds it (`sim`), the report
//! shows it (`report`).

use serde::{Deserialize, Serialize};

/// Defaults of `Rule` (`simulate --until-settled` with no value: 2%).
pub const DEFAULT_REL: f64 = 0.02;
pub const DEFAULT_ABS_MPKI: f64 = 0.05;
pub const DEFAULT_BATCH_TXNS: u64 = 100;
pub const DEFAULT_MIN_BATCHES: u64 = 10;

/// When a simulation may stop measuring.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Largest relative half-width of the 95% interval (0.02: ±2%).
    pub rel: f64,
    /// Largest absolute half-width of an MPKI's interval that counts as settled
    /// whatever its relative width.
    pub abs_mpki: f64,
    /// Transactions per batch.
    pub batch_txns: u64,
    /// Batches before any stop.
    pub min_batches: u64,
}

// `Rule::new` refuses NaN, so equality is an equivalence relation on every Rule made.
impl Eq for Rule {}

impl Rule {
    /// A rule of relative half-width `rel` with the default floor, batch and minimum.
    pub fn new(rel: f64) -> Result<Rule, String> {
        if !(rel > 0.0 && rel <= 0.5) {
            return Err(format!(
                "the settling tolerance must be above 0% and at most 50%, not {}%",
                rel * 100.0
            ));
        }
        Ok(Rule {
            rel,
            abs_mpki: DEFAULT_ABS_MPKI,
            batch_txns: DEFAULT_BATCH_TXNS,
            min_batches: DEFAULT_MIN_BATCHES,
        })
    }

    /// The rule in words (for the report).
    pub fn describe(&self) -> String {
        format!(
            "stop at the first batch end (batches of {} transactions, at least {}) where, for \
             instructions per transaction and every level's and sweep point's MPKI, the 95% \
             confidence interval (batch means, ratio estimator, Student t) is within ±{}% \
             (MPKI: or ±{} MPKI) and the first and second half of the batches agree within \
             twice that; at most the --txns cap",
            self.batch_txns,
            self.min_batches,
            self.rel * 100.0,
            self.abs_mpki
        )
    }
}

/// What a watched figure is (its absolute floor differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// Instructions per transaction: relative tolerance only.
    PerTxn,
    /// Misses per 1000 instructions: relative or the absolute floor.
    Mpki,
}

/// A figure's estimate and interval over the batches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub name: String,
    pub kind: Kind,
    /// Ratio of the batches' sums (the report's figure over those batches).
    pub value: f64,
    /// Half-width of the 95% confidence interval (None under two batches).
    pub half_width: Option<f64>,
    /// The largest half-width the rule accepts for this figure.
    pub tolerance: f64,
    /// The ratios over the first and second half of the batches.
    pub halves: Option<(f64, f64)>,
    /// Within the tolerance, and the halves agree.
    pub settled: bool,
}

/// Two-sided 95% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, df): the table up to 30, then the Cornish-Fisher expansion around the normal
/// quantile (within 0.001 of the exact value from 30 degrees of freedom on).
pub fn t975(df: u64) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T975[df as usize - 1],
        _ => {
            let z: f64 = 1.959_964;
            let n = df as f64;
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// Ratio Σy / Σx of batches (y_j, x_j) and the half-width of its 95% interval.
pub fn ratio_interval(batches: &[(f64, f64)]) -> Option<(f64, Option<f64>)> {
    let n = batches.len();
    let (sy, sx) = batches
        .iter()
        .fold((0.0, 0.0), |(a, b), &(y, x)| (a + y, b + x));
    if n == 0 || sx <= 0.0 {
        return None;
    }
    let r = sy / sx;
    if n < 2 {
        return Some((r, None));
    }
    let ss: f64 = batches.iter().map(|&(y, x)| (y - r * x).powi(2)).sum();
    let s = (ss / (n - 1) as f64).sqrt();
    let se = s / ((n as f64).sqrt() * (sx / n as f64));
    Some((r, Some(t975(n as u64 - 1) * se)))
}

/// One batch: its transactions, the workers' instructions, and the misses of every
/// watched level and sweep point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub txns: u64,
    pub instructions: u64,
    pub misses: Vec<u64>,
}

/// Judges the batches by `rule`: every watched figure's interval (instructions per
/// transaction first, then the MPKI of each name in `levels`, whose misses are
/// `Batch::misses` in that order).
pub fn judge(rule: &Rule, levels: &[String], batches: &[Batch]) -> Vec<Interval> {
    let half = batches.len() / 2;
    let mut out = Vec::with_capacity(levels.len() + 1);
    let mut one = |name: String, kind: Kind, pairs: Vec<(f64, f64)>| {
        let Some((value, half_width)) = ratio_interval(&pairs) else {
            return;
        };
        let floor = match kind {
            Kind::PerTxn => 0.0,
            Kind::Mpki => rule.abs_mpki,
        };
        let tolerance = (rule.rel * value.abs()).max(floor);
        let halves = (half >= 1)
            .then(|| {
                let a = ratio_interval(&pairs[..half])?.0;
                let b = ratio_interval(&pairs[half..])?.0;
                Some((a, b))
            })
            .flatten();
        let settled = half_width.is_some_and(|h| h <= tolerance)
            && halves.is_some_and(|(a, b)| (a - b).abs() <= 2.0 * tolerance);
        out.push(Interval {
            name,
            kind,
            value,
            half_width,
            tolerance,
            halves,
            settled,
        });
    };
    one(
        "instructions/txn".to_string(),
        Kind::PerTxn,
        batches
            .iter()
            .map(|b| (b.instructions as f64, b.txns as f64))
            .collect(),
    );
    for (j, name) in levels.iter().enumerate() {
        one(
            format!("{name} MPKI"),
            Kind::Mpki,
            batches
                .iter()
                .map(|b| {
                    let m = b.misses.get(j).copied().unwrap_or(0);
                    (m as f64 * 1000.0, b.instructions as f64)
                })
                .collect(),
        );
    }
    out
}

/// Whether the run may stop after `batches`: enough of them, and every figure settled.
pub fn settled(rule: &Rule, intervals: &[Interval], batches: usize) -> bool {
    batches as u64 >= rule.min_batches.max(2) && intervals.iter().all(|i| i.settled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic generator (xorshift) for the synthetic series.
    struct Rng(u64);
    impl Rng {
        fn unit(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
        /// Roughly normal (sum of 12 uniforms), mean 0, sd 1.
        fn normal(&mut self) -> f64 {
            (0..12).map(|_| self.unit()).sum::<f64>() - 6.0
        }
    }

    /// Batches of 100 transactions of about `ipt` instructions each (relative sd
    /// `noise` per batch) and levels of `mpki[k]` (relative sd `noise`), the rate of each
    /// level multiplied by `drift(j)` in batch j.
    fn series(
        n: usize,
        ipt: f64,
        mpki: &[f64],
        noise: f64,
        drift: impl Fn(usize) -> f64,
    ) -> Vec<Batch> {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        (0..n)
            .map(|j| {
                let instr = (100.0 * ipt * (1.0 + noise * rng.normal())).max(1.0);
                let misses = mpki
                    .iter()
                    .map(|m| {
                        let rate = m * drift(j) * (1.0 + noise * rng.normal());
                        (rate.max(0.0) * instr / 1000.0).round() as u64
                    })
                    .collect();
                Batch {
                    txns: 100,
                    instructions: instr as u64,
                    misses,
                }
            })
            .collect()
    }

    fn names() -> Vec<String> {
        ["L1-I", "L1-D", "L2", "LLC"].map(String::from).to_vec()
    }

    /// The first batch count (from the minimum on) at which the rule would stop.
    fn stop_at(rule: &Rule, b: &[Batch]) -> Option<usize> {
        (rule.min_batches as usize..=b.len())
            .find(|&n| settled(rule, &judge(rule, &names(), &b[..n]), n))
    }

    #[test]
    fn t_quantiles_match_the_table_and_the_normal_limit() {
        assert_eq!(t975(0), f64::INFINITY);
        assert_eq!(t975(4), 2.776);
        assert!((t975(40) - 2.021).abs() < 0.001, "{}", t975(40));
        assert!((t975(120) - 1.980).abs() < 0.001, "{}", t975(120));
        assert!((t975(1_000_000) - 1.960).abs() < 0.001);
    }

    /// Known answer: y = (10, 12, 14), x = (1, 1, 1): R = 12, residuals -2, 0, 2,
    /// s = 2, se = 2/√3, half-width 4.303 × 2/√3.
    #[test]
    fn the_ratio_interval_of_a_known_series() {
        let (r, h) = ratio_interval(&[(10.0, 1.0), (12.0, 1.0), (14.0, 1.0)]).unwrap();
        assert_eq!(r, 12.0);
        let want = 4.303 * 2.0 / 3f64.sqrt();
        assert!((h.unwrap() - want).abs() < 1e-9, "{h:?} vs {want}");
        // Ratio of sums, not mean of ratios: (1 + 9) / (1 + 3) = 2.5.
        assert_eq!(ratio_interval(&[(1.0, 1.0), (9.0, 3.0)]).unwrap().0, 2.5);
        assert_eq!(ratio_interval(&[(5.0, 1.0)]), Some((5.0, None)));
        assert_eq!(ratio_interval(&[]), None);
    }

    /// A steady mix with 5% noise per batch settles to 2% within a few dozen batches,
    /// after the minimum, and its estimate is within the interval of the true rate.
    #[test]
    fn a_steady_series_settles() {
        let rule = Rule::new(0.02).unwrap();
        let b = series(300, 80_000.0, &[12.0, 20.0, 4.0, 0.5], 0.05, |_| 1.0);
        let n = stop_at(&rule, &b).expect("settles");
        assert!(
            n >= rule.min_batches as usize && n < 100,
            "stopped after {n} batches"
        );
        let iv = judge(&rule, &names(), &b[..n]);
        let l1i = iv.iter().find(|i| i.name == "L1-I MPKI").unwrap();
        assert!(
            (l1i.value - 12.0).abs() <= l1i.half_width.unwrap() * 2.0,
            "{l1i:?}"
        );
        assert!(iv.iter().all(|i| i.settled));
        // Never before the minimum, even on a noiseless series.
        let flat = series(300, 80_000.0, &[12.0, 20.0, 4.0, 0.5], 0.0, |_| 1.0);
        assert_eq!(stop_at(&rule, &flat), Some(rule.min_batches as usize));
    }

    /// Noise of 60% per batch needs far more than 300 batches for ±2%: never settles.
    #[test]
    fn a_noisy_series_never_settles() {
        let rule = Rule::new(0.02).unwrap();
        let b = series(300, 80_000.0, &[12.0, 20.0, 4.0, 2.0], 0.6, |_| 1.0);
        assert_eq!(stop_at(&rule, &b), None);
    }

    /// A level whose rate keeps rising (1% of its start per batch: a data set still
    /// growing) with little noise: its halves disagree, so it never settles.
    #[test]
    fn a_drifting_series_never_settles() {
        let rule = Rule::new(0.02).unwrap();
        let b = series(300, 80_000.0, &[12.0, 20.0, 4.0, 2.0], 0.01, |j| {
            1.0 + 0.01 * j as f64
        });
        assert_eq!(stop_at(&rule, &b), None);
        let iv = judge(&rule, &names(), &b);
        let l1i = iv.iter().find(|i| i.name == "L1-I MPKI").unwrap();
        let (a, z) = l1i.halves.unwrap();
        assert!((z - a).abs() > 2.0 * l1i.tolerance, "{l1i:?}");
        assert!(!l1i.settled);
        // Instructions per transaction do not drift: that figure alone settled.
        assert!(iv[0].settled, "{:?}", iv[0]);
    }

    /// An LLC at 0.01 MPKI with 80% noise never gets a ±2% interval, but its half-width
    /// is far below the 0.05 MPKI floor: it does not hold the run.
    #[test]
    fn a_tiny_rate_settles_on_the_absolute_floor() {
        let rule = Rule::new(0.02).unwrap();
        let mut b = series(300, 80_000.0, &[12.0, 20.0, 4.0], 0.03, |_| 1.0);
        let mut rng = Rng(7);
        for x in &mut b {
            let rate = (0.01 * (1.0 + 0.8 * rng.normal())).max(0.0);
            x.misses
                .push((rate * x.instructions as f64 / 1000.0).round() as u64);
        }
        let n = stop_at(&rule, &b).expect("settles");
        let iv = judge(&rule, &names(), &b[..n]);
        let llc = iv.iter().find(|i| i.name == "LLC MPKI").unwrap();
        assert_eq!(llc.tolerance, DEFAULT_ABS_MPKI);
        assert!(llc.half_width.unwrap() > rule.rel * llc.value, "{llc:?}");
        // Without the floor it would hold the run to the end.
        let strict = Rule {
            abs_mpki: 0.0,
            ..rule
        };
        assert_eq!(stop_at(&strict, &b), None);
    }

    #[test]
    fn a_bad_tolerance_is_refused() {
        for bad in [0.0, -0.01, 0.6, f64::NAN] {
            assert!(Rule::new(bad).is_err(), "{bad}");
        }
        assert!(Rule::new(0.03).is_ok());
    }
}
