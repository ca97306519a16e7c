//! TPC-H value generation (clause 4.2): the fixed lists (nations, regions, the part
//! name words, types, containers, segments, priorities, ship instructions and modes),
//! dates, phone numbers and the comments' text. Every row is a pure function of the
//! population salt and its own key (`row_rng`), so the data is the same whatever the
//! number of loading threads and whichever thread loads a row.
//!
//! Deviations from clause 4.2.2.10 (documented in docs/design/tpch.md): comments are
//! sentences drawn from the grammar of clause 4.2.2.14 with word lists that are a
//! subset of the specification's, generated per comment, not cut from a 300 MB pool.

use crate::util::{rng_for, KitRng};
use rand::Rng;

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
pub const fn days_from_civil(y: i32, m: u32, d: u32) -> u32 {
    // Howard Hinnant's algorithm (public domain), shifted so March starts the year.
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = (y - era * 400) as u32;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe as i32 - 719_468) as u32
}

/// The civil date (year, month, day) of a day number.
pub fn civil_from_days(z: u32) -> (i32, u32, u32) {
    let z = z as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = (yoe + era * 400 + i64::from(m <= 2)) as i32;
    (y, m, d)
}

/// `YYYY-MM-DD` of a day number.
pub fn date_string(z: u32) -> String {
    let (y, m, d) = civil_from_days(z);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Clause 4.2.3: STARTDATE, CURRENTDATE and ENDDATE.
pub const START_DATE: u32 = days_from_civil(1992, 1, 1);
pub const CURRENT_DATE: u32 = days_from_civil(1995, 6, 17);
pub const END_DATE: u32 = days_from_civil(1998, 12, 31);

/// The 25 nations with their region keys (clause 4.2.3).
pub const NATIONS: [(&str, u32); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

/// The words P_NAME is made of (clause 4.2.3: 92 of them).
pub const P_NAME_WORDS: [&str; 92] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
];

pub const TYPE_S1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
pub const TYPE_S2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
pub const TYPE_S3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
pub const CONTAINER_S1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
pub const CONTAINER_S2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
pub const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
pub const PRIORITIES: [&str; 5] = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];
pub const INSTRUCTIONS: [&str; 4] = [
    "DELIVER IN PERSON",
    "COLLECT COD",
    "NONE",
    "TAKE BACK RETURN",
];
pub const MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];

// The grammar's word classes (clause 4.2.2.14), a subset of the specification's lists
// that keeps the words the queries look for ("special", "requests", ...).
const NOUNS: [&str; 24] = [
    "foxes",
    "ideas",
    "theodolites",
    "pinto beans",
    "instructions",
    "dependencies",
    "excuses",
    "platelets",
    "asymptotes",
    "courts",
    "dolphins",
    "multipliers",
    "packages",
    "requests",
    "accounts",
    "deposits",
    "frets",
    "patterns",
    "braids",
    "warhorses",
    "pearls",
    "waters",
    "sheaves",
    "realms",
];
const VERBS: [&str; 20] = [
    "sleep",
    "wake",
    "are",
    "cajole",
    "haggle",
    "nag",
    "use",
    "boost",
    "affix",
    "detect",
    "integrate",
    "maintain",
    "nod",
    "was",
    "lose",
    "solve",
    "engage",
    "print",
    "serve",
    "run",
];
const ADJECTIVES: [&str; 16] = [
    "furious", "sly", "careful", "blithe", "quick", "fluffy", "slow", "quiet", "final", "ironic",
    "even", "bold", "special", "pending", "unusual", "express",
];
const ADVERBS: [&str; 14] = [
    "sometimes",
    "always",
    "never",
    "furiously",
    "slyly",
    "carefully",
    "blithely",
    "quickly",
    "fluffily",
    "slowly",
    "quietly",
    "finally",
    "ironically",
    "evenly",
];
const PREPOSITIONS: [&str; 12] = [
    "about",
    "above",
    "according to",
    "across",
    "after",
    "against",
    "along",
    "among",
    "around",
    "at",
    "beside",
    "among the",
];
const AUXILIARIES: [&str; 8] = [
    "do", "may", "might", "shall", "will", "would", "can", "could",
];
const TERMINATORS: [&str; 6] = [".", ";", ":", "?", "!", "--"];

fn pick<'a, R: Rng>(rng: &mut R, list: &[&'a str]) -> &'a str {
    list[rng.gen_range(0..list.len())]
}

fn noun_phrase<R: Rng>(rng: &mut R, out: &mut String) {
    match rng.gen_range(0..4) {
        0 => {}
        1 => {
            out.push_str(pick(rng, &ADJECTIVES));
            out.push(' ');
        }
        2 => {
            out.push_str(pick(rng, &ADJECTIVES));
            out.push_str(", ");
            out.push_str(pick(rng, &ADJECTIVES));
            out.push(' ');
        }
        _ => {
            out.push_str(pick(rng, &ADVERBS));
            out.push(' ');
            out.push_str(pick(rng, &ADJECTIVES));
            out.push(' ');
        }
    }
    out.push_str(pick(rng, &NOUNS));
}

fn verb_phrase<R: Rng>(rng: &mut R, out: &mut String) {
    let aux = rng.gen_bool(0.5);
    if aux {
        out.push_str(pick(rng, &AUXILIARIES));
        out.push(' ');
    }
    out.push_str(pick(rng, &VERBS));
    if rng.gen_bool(0.5) {
        out.push(' ');
        out.push_str(pick(rng, &ADVERBS));
    }
}

/// One sentence of clause 4.2.2.14's grammar.
fn sentence<R: Rng>(rng: &mut R, out: &mut String) {
    noun_phrase(rng, out);
    out.push(' ');
    verb_phrase(rng, out);
    if rng.gen_bool(0.5) {
        out.push(' ');
        out.push_str(pick(rng, &PREPOSITIONS));
        out.push_str(" the ");
        noun_phrase(rng, out);
    }
    out.push_str(pick(rng, &TERMINATORS));
}

/// A comment of `min..=max` bytes (clause 4.2.2.10's text string: its length uniform
/// in the range), sentences of the grammar cut to that length.
pub fn text<R: Rng>(rng: &mut R, min: usize, max: usize, dst: &mut [u8]) {
    let len = rng.gen_range(min..=max).min(dst.len());
    let mut s = String::with_capacity(len + 64);
    while s.len() < len {
        if !s.is_empty() {
            s.push(' ');
        }
        sentence(rng, &mut s);
    }
    // A trailing blank would vanish in CHAR comparisons of some systems: avoid it.
    let mut b = s.as_bytes()[..len].to_vec();
    if let Some(last) = b.last_mut() {
        if *last == b' ' {
            *last = b'x';
        }
    }
    api::row::set_str(dst, &b);
}

/// A v-string (clause 4.2.2.7): `min..=max` random alphanumeric characters, average
/// length (min + max) / 2.
pub fn v_string<R: Rng>(rng: &mut R, min: usize, max: usize, dst: &mut [u8]) {
    const ALPHA: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,";
    let len = rng.gen_range(min..=max).min(dst.len());
    for b in dst.iter_mut().take(len) {
        // ',' at most at positions past the first (a leading comma reads oddly in CSV).
        *b = ALPHA[rng.gen_range(0..ALPHA.len() - 1)];
    }
    dst[len..].fill(0);
}

/// A phone number of nation `n` (clause 4.2.2.9): `CC-LLL-LLL-LLLL`, CC = n + 10.
pub fn phone<R: Rng>(rng: &mut R, nation: u32, dst: &mut [u8]) {
    let s = format!(
        "{}-{}-{}-{}",
        nation + 10,
        rng.gen_range(100..=999),
        rng.gen_range(100..=999),
        rng.gen_range(1000..=9999)
    );
    api::row::set_str(dst, s.as_bytes());
}

/// A random decimal in cents in `lo..=hi` cents.
pub fn cents<R: Rng>(rng: &mut R, lo: i64, hi: i64) -> i64 {
    rng.gen_range(lo..=hi)
}

/// `"{prefix}{n:09}"`, the names of suppliers, customers and clerks.
pub fn numbered(prefix: &str, n: u64, dst: &mut [u8]) {
    api::row::set_str(dst, format!("{prefix}{n:09}").as_bytes());
}

/// P_RETAILPRICE of part `p` in cents (clause 4.2.3's formula, in cents).
pub fn retail_price(p: u32) -> i64 {
    let p = p as i64;
    90_000 + ((p / 10) % 20_001) + 100 * (p % 1000)
}

/// The supplier of part `p`'s `i`-th (0..4) PARTSUPP row, among `s` suppliers (clause
/// 4.2.3's formula for PS_SUPPKEY and L_SUPPKEY).
pub fn part_supplier(p: u32, i: u32, s: u32) -> u32 {
    let (p, i, s) = (p as u64, i as u64, s as u64);
    ((p + i * (s / 4 + (p - 1) / s)) % s + 1) as u32
}

/// The sparse order key of the `i`-th order (1-based): the first 8 keys of each 32
/// (clause 4.2.3's O_ORDERKEY).
pub fn order_key_of(i: u64) -> u64 {
    let z = i - 1;
    (z / 8) * 32 + z % 8 + 1
}

/// The generator of one row: a pure function of the population salt, the table and
/// the row's number, so any thread may generate any row.
pub fn row_rng(salt: u64, table: u32, n: u64) -> KitRng {
    rng_for(salt ^ ((table as u64 + 1) << 56), n)
}

/// The number of line items of the `i`-th order (1 to 7, clause 4.2.3): a pure function
/// of the salt, so the load's row count is known before loading.
pub fn lines_of_order(salt: u64, i: u64) -> u32 {
    let mut z = salt ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x11AE;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    1 + (z % 7) as u32
}

/// The number of line items of the `m`-th order inserted by the refresh functions
/// (1-based over all refresh pairs): 1 to 7, as a loaded order's, from another hash.
pub fn lines_of_new_order(salt: u64, m: u64) -> u32 {
    lines_of_order(salt ^ 0x5EED_0F2E_F2E5, m)
}

/// O_TOTALPRICE's formula (clause 4.2.3): sum over the order's lines of
/// L_EXTENDEDPRICE x (1 + L_TAX) x (1 - L_DISCOUNT), in cents. Each term is exact in
/// 10^-6 units; the sum is rounded half away from zero to cents once, at the end.
pub fn total_price(lines: impl Iterator<Item = (i64, i64, i64)>) -> i64 {
    let micro: i128 = lines
        .map(|(ext, disc, tax)| ext as i128 * (100 - disc) as i128 * (100 + tax) as i128)
        .sum();
    let (q, r) = (micro / 10_000, micro % 10_000);
    (q + if r.abs() >= 5_000 { r.signum() } else { 0 }) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn dates_round_trip_and_the_constants_are_the_specification_s() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(START_DATE, 8035);
        assert_eq!(date_string(CURRENT_DATE), "1995-06-17");
        assert_eq!(date_string(END_DATE), "1998-12-31");
        for z in START_DATE..=END_DATE + 400 {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn lists_have_the_specification_s_sizes() {
        let words: HashSet<_> = P_NAME_WORDS.iter().collect();
        assert_eq!(words.len(), 92);
        assert_eq!(NATIONS.iter().filter(|n| n.1 < 5).count(), 25);
        for r in 0..5 {
            assert_eq!(NATIONS.iter().filter(|n| n.1 == r).count(), 5);
        }
    }

    #[test]
    fn keys_and_formulas() {
        let keys: Vec<u64> = (1..=17).map(order_key_of).collect();
        assert_eq!(keys[..9], [1, 2, 3, 4, 5, 6, 7, 8, 33]);
        assert_eq!(keys[16], 65);
        assert_eq!(retail_price(1), 90_000 + 100);
        // Four distinct suppliers per part, for every part of SF 0.01 and SF 1.
        for (parts, s) in [(2_000u32, 100u32), (200_000, 10_000)] {
            for p in (1..=parts).step_by(7) {
                let set: HashSet<u32> = (0..4).map(|i| part_supplier(p, i, s)).collect();
                assert_eq!(set.len(), 4, "part {p}");
                assert!(set.iter().all(|&x| (1..=s).contains(&x)));
            }
        }
        // 100.00 x 1.08 x 0.9 = 97.20; the sum rounds once.
        assert_eq!(total_price([(10_000, 10, 8)].into_iter()), 9_720);
        assert_eq!(total_price([(1, 0, 5), (1, 0, 5)].into_iter()), 2);
    }

    #[test]
    fn text_has_its_length_and_no_trailing_blank() {
        let mut rng = row_rng(1, 0, 1);
        for _ in 0..200 {
            let mut b = [0u8; 44];
            text(&mut rng, 10, 43, &mut b);
            let s = api::row::get_str(&b);
            assert!((10..=43).contains(&s.len()));
            assert_ne!(s.last(), Some(&b' '));
        }
    }
}
