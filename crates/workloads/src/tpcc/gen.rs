//! TPC-C random value generation (clause 4.3.2 and 2.1.6): uniform ranges, NURand with
//! its C constants, a-strings and n-strings, customer last names from the syllable table,
//! "ORIGINAL" data. Owns no database state and must never touch a Session.

use rand::Rng;

/// The C constants of NURand (clause 2.1.6). `c_last_load` generated C_LAST at
/// population; `c_last_run` is used for C_LAST during runs and differs from it by a
/// delta in 65..=119 other than 96 and 112 (clause 2.1.6.1). C_ID and OL_I_ID are only
/// drawn with NURand during runs, so one constant each suffices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct NurandC {
    pub c_last_load: u32,
    pub c_last_run: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

pub fn c_delta_ok(load: u32, run: u32) -> bool {
    let d = load.abs_diff(run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

impl NurandC {
    /// The constants, drawn at random from `seed` (so a run in a later process that
    /// opens a loaded database can find the same C-Load again from the same setting).
    pub fn from_seed(seed: u64) -> Self {
        let mut r = crate::util::rng_for(seed, 0x00C0_C0C0);
        let c_last_load = r.gen_range(0..=255);
        // Each load value has at least 40 valid run values among 256, so 10,000 draws
        // failing is impossible in practice.
        for _ in 0..10_000 {
            let run = r.gen_range(0..=255);
            if c_delta_ok(c_last_load, run) {
                return NurandC {
                    c_last_load,
                    c_last_run: run,
                    c_id: r.gen_range(0..=1023),
                    ol_i_id: r.gen_range(0..=8191),
                };
            }
        }
        panic!("no C-Run for C-Load {c_last_load} in 10,000 draws: generator broken");
    }
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut impl Rng, a: u32, x: u32, y: u32, c: u32) -> u32 {
    debug_assert!(x <= y);
    (((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1)) + x
}

const ALNUM: &[u8; 62] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Fill `out` with a random a-string of length in lo..=hi (clause 4.3.2.2), zero-padded
/// to the field's width. Returns the length.
pub fn a_string(rng: &mut impl Rng, lo: usize, hi: usize, out: &mut [u8]) -> usize {
    assert!(
        lo <= hi && hi <= out.len(),
        "a-string length {lo}..={hi} exceeds field"
    );
    let n = rng.gen_range(lo..=hi);
    for b in &mut out[..n] {
        *b = ALNUM[rng.gen_range(0..ALNUM.len())];
    }
    out[n..].fill(0);
    n
}

/// Fill `out` with a random n-string (digits) of length in lo..=hi, zero-padded.
pub fn n_string(rng: &mut impl Rng, lo: usize, hi: usize, out: &mut [u8]) -> usize {
    assert!(
        lo <= hi && hi <= out.len(),
        "n-string length {lo}..={hi} exceeds field"
    );
    let n = rng.gen_range(lo..=hi);
    for b in &mut out[..n] {
        *b = b'0' + rng.gen_range(0..10u8);
    }
    out[n..].fill(0);
    n
}

/// I_DATA / S_DATA: a-string of 26..=50 characters; in 10% of rows "ORIGINAL" replaces
/// the characters at a random position (clause 4.3.3.1).
pub fn data_50(rng: &mut impl Rng, out: &mut [u8; 50]) {
    let n = a_string(rng, 26, 50, out);
    if rng.gen_range(0..10) == 0 {
        let at = rng.gen_range(0..=n - 8);
        out[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// Whether `data` holds "ORIGINAL" (New-Order's brand check, once per order line).
/// Eight bytes at a time, the 'O's are found with a zero-byte test on the word XOR
/// "OOOOOOOO", and only those places are compared with the whole word: about 60
/// instructions for a 50-byte field where comparing all 43 windows took 86 (and
/// `memchr`'s iterator, tried, about 280).
pub fn contains_original(data: &[u8]) -> bool {
    const WORD: u64 = u64::from_le_bytes(*b"ORIGINAL");
    const OS: u64 = u64::from_le_bytes([b'O'; 8]);
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let Some(last) = data.len().checked_sub(8) else {
        return false;
    };
    let at = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
    let mut i = 0;
    loop {
        // The last word overlaps the one before it: its places are looked at again.
        let start = i.min(last);
        let x = at(start) ^ OS;
        // A high bit at every zero byte (an 'O'), and possibly at a byte just above one:
        // every place flagged is checked, so none is missed and none wrongly taken.
        let mut m = x.wrapping_sub(LO) & !x & HI;
        while m != 0 {
            let j = start + (m.trailing_zeros() / 8) as usize;
            if j <= last && at(j) == WORD {
                return true;
            }
            m &= m - 1;
        }
        if start == last {
            return false;
        }
        i += 8;
    }
}

/// Zip code: 4 random digits followed by "11111" (clause 4.3.2.7).
pub fn zip(rng: &mut impl Rng, out: &mut [u8; 9]) {
    n_string(rng, 4, 4, &mut out[..4]);
    out[4..].copy_from_slice(b"11111");
}

/// State: two random letters.
pub fn state(rng: &mut impl Rng, out: &mut [u8; 2]) {
    for b in out.iter_mut() {
        *b = b'A' + rng.gen_range(0..26u8);
    }
}

const SYLLABLES: [&[u8]; 10] = [
    b"BAR", b"OUGHT", b"ABLE", b"PRI", b"PRES", b"ESE", b"ANTI", b"CALLY", b"ATION", b"EING",
];

/// C_LAST for a number in 0..=999: the syllables of its three digits (clause 4.3.2.3),
/// zero-padded to 16 bytes (the longest name has 15 characters).
pub fn last_name(num: u32) -> [u8; 16] {
    assert!(num <= 999, "last-name number {num} out of 0..=999");
    let mut out = [0u8; 16];
    let mut at = 0;
    for digit in [num / 100, (num / 10) % 10, num % 10] {
        let s = SYLLABLES[digit as usize];
        out[at..at + s.len()].copy_from_slice(s);
        at += s.len();
    }
    out
}

/// Microseconds since the Unix epoch: the representation of every TPC-C date (0 = NULL).
pub fn now_us() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_micros() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllable_table() {
        assert_eq!(api::row::get_str(&last_name(0)), b"BARBARBAR");
        assert_eq!(api::row::get_str(&last_name(371)), b"PRICALLYOUGHT");
        assert_eq!(api::row::get_str(&last_name(999)), b"EINGEINGEING");
        assert_eq!(api::row::get_str(&last_name(181)), b"OUGHTATIONOUGHT");
    }

    #[test]
    fn nurand_stays_in_range_and_c_delta_is_valid() {
        let mut r = crate::util::rng_for(1, 2);
        for seed in 0..200 {
            let c = NurandC::from_seed(seed);
            assert!(c_delta_ok(c.c_last_load, c.c_last_run), "{c:?}");
            assert!(c.c_id <= 1023 && c.ol_i_id <= 8191);
        }
        assert!(!c_delta_ok(10, 106) && !c_delta_ok(120, 8) && c_delta_ok(0, 65));
        for _ in 0..10_000 {
            let v = nurand(&mut r, 1023, 1, 3000, 77);
            assert!((1..=3000).contains(&v));
            let v = nurand(&mut r, 255, 0, 999, 200);
            assert!(v <= 999);
        }
    }

    /// `contains_original` agrees with looking at every 8-byte window: the word at each
    /// place of fields of every length up to 50, cut short at the end, with 'O's and
    /// near misses around it.
    #[test]
    fn original_is_found_wherever_it_is() {
        let slow = |d: &[u8]| d.windows(8).any(|w| w == b"ORIGINAL");
        let mut r = crate::util::rng_for(5, 6);
        for len in 0..=50usize {
            for at in 0..=len {
                for filler in [b'x', b'O'] {
                    let mut d = vec![filler; len];
                    let n = (len - at).min(8);
                    d[at..at + n].copy_from_slice(&b"ORIGINAL"[..n]);
                    assert_eq!(contains_original(&d), slow(&d), "{len} {at} {filler}");
                    // A near miss: one byte of the word changed.
                    if n == 8 {
                        d[at + (len % 8)] ^= 0x20;
                        assert_eq!(contains_original(&d), slow(&d), "{len} {at} near");
                    }
                }
            }
            let mut d = vec![0u8; len];
            for b in d.iter_mut() {
                *b = [b'O', b'R', b'I', b'G', b'N', b'A', b'L'][r.gen_range(0..7usize)];
            }
            assert_eq!(contains_original(&d), slow(&d), "{len} random");
        }
    }

    #[test]
    fn strings_have_the_requested_shapes() {
        let mut r = crate::util::rng_for(3, 4);
        let mut originals = 0;
        for _ in 0..2000 {
            let mut d = [0u8; 50];
            data_50(&mut r, &mut d);
            let n = api::row::get_str(&d).len();
            assert!((26..=50).contains(&n));
            assert!(d[..n].iter().all(|b| b.is_ascii_alphanumeric()));
            originals += contains_original(&d) as u32;
            let mut z = [0u8; 9];
            zip(&mut r, &mut z);
            assert!(z[..4].iter().all(|b| b.is_ascii_digit()) && &z[4..] == b"11111");
        }
        // 10% +- a wide margin (binomial sd is about 13 for 2000 draws).
        assert!(
            (120..=280).contains(&originals),
            "{originals} ORIGINAL rows of 2000"
        );
    }
}
