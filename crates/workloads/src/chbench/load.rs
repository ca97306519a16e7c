//! CH-benCHmark's population: TPC-C's (its own loader, `tpcc::load`) and then the
//! three added tables, each row a pure function of its key and the kit's salt, so every
//! engine holds the same SUPPLIER, NATION and REGION. Never runs a transaction of the
//! mix.

use super::schema::*;
use crate::tpcc::gen::{a_string, n_string};
use api::row::{set_str, Zeroable};
use api::{Result, Session, Worker};
use rand::Rng;

/// Salt of the added tables' rows (their population depends on nothing else).
pub const SALT: u64 = 0xC4_BE4C;

/// The five regions, by key.
pub const REGION_NAMES: [&str; 5] = ["Africa", "America", "Asia", "Europe", "Middle East"];

/// The 62 nations in key order (key: the character code of `NATION_CHARS[i]`) with
/// their region. The benchmark fixes the count and the keys, not the names: these are
/// ours, chosen so that the nations of C_STATE's first letters (`A`-`Z`, entries 10 to
/// 35) include Germany and Cambodia, which Q7 and Q8 name.
pub const NATION_LIST: [(&str, u32); 62] = [
    ("Algeria", 0),
    ("Argentina", 1),
    ("Austria", 3),
    ("Bangladesh", 2),
    ("Bolivia", 1),
    ("Egypt", 0),
    ("Iran", 4),
    ("Denmark", 3),
    ("Ethiopia", 0),
    ("Iraq", 4),
    // 'A' .. 'Z'
    ("Belgium", 3),
    ("Brazil", 1),
    ("Cambodia", 2),
    ("Canada", 1),
    ("Chile", 1),
    ("China", 2),
    ("Colombia", 1),
    ("Finland", 3),
    ("France", 3),
    ("Germany", 3),
    ("Greece", 3),
    ("India", 2),
    ("Indonesia", 2),
    ("Israel", 4),
    ("Italy", 3),
    ("Japan", 2),
    ("Jordan", 4),
    ("Kenya", 0),
    ("Kuwait", 4),
    ("Mexico", 1),
    ("Morocco", 0),
    ("Nigeria", 0),
    ("Peru", 1),
    ("Saudi Arabia", 4),
    ("United States", 1),
    ("Vietnam", 2),
    // 'a' .. 'z'
    ("Cuba", 1),
    ("Ecuador", 1),
    ("Ireland", 3),
    ("Lebanon", 4),
    ("Malaysia", 2),
    ("Mozambique", 0),
    ("Nepal", 2),
    ("Netherlands", 3),
    ("Norway", 3),
    ("Oman", 4),
    ("Pakistan", 2),
    ("Philippines", 2),
    ("Poland", 3),
    ("Portugal", 3),
    ("Qatar", 4),
    ("Senegal", 0),
    ("South Africa", 0),
    ("Spain", 3),
    ("Sweden", 3),
    ("Tanzania", 0),
    ("Thailand", 2),
    ("Tunisia", 0),
    ("Uganda", 0),
    ("United Kingdom", 3),
    ("Uruguay", 1),
    ("Venezuela", 1),
];

/// The characters the nation keys are the codes of, in key order.
pub const NATION_CHARS: &[u8; 62] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Nation `i`'s key: its character's code (48 to 122).
pub fn nation_key_of(i: usize) -> u32 {
    u32::from(NATION_CHARS[i])
}

/// Rows the added tables hold.
pub fn rows() -> u64 {
    u64::from(SUPPLIERS + NATIONS + REGIONS)
}

/// REGION, NATION and SUPPLIER, in transactions of 500 rows.
pub fn load_extra<W: Worker>(s: &mut Session<W>, progress: &(dyn Fn(u64) + Sync)) -> Result<()> {
    crate::util::load_range(s, 0, u64::from(REGIONS), 500, progress, |s, r| {
        s.insert_row(REGION, &region_key(r as u32), &region(r as u32))
    })?;
    crate::util::load_range(s, 0, u64::from(NATIONS), 500, progress, |s, i| {
        let n = nation(i as usize);
        s.insert_row(NATION, &nation_key(n.n_nationkey), &n)
    })?;
    crate::util::load_range(s, 0, u64::from(SUPPLIERS), 500, progress, |s, k| {
        s.insert_row(SUPPLIER, &supplier_key(k as u32), &supplier(k as u32))
    })
}

fn rng(table: u64, key: u32) -> crate::util::KitRng {
    crate::util::rng_for(SALT ^ table, u64::from(key))
}

pub fn region(r: u32) -> Region {
    let mut g = rng(1, r);
    let mut row = Region::zeroed();
    row.r_regionkey = r;
    set_str(&mut row.r_name, REGION_NAMES[r as usize].as_bytes());
    a_string(&mut g, 31, 115, &mut row.r_comment);
    row
}

pub fn nation(i: usize) -> Nation {
    let mut g = rng(2, i as u32);
    let mut row = Nation::zeroed();
    let (name, region) = NATION_LIST[i];
    row.n_nationkey = nation_key_of(i);
    row.n_regionkey = region;
    set_str(&mut row.n_name, name.as_bytes());
    a_string(&mut g, 31, 114, &mut row.n_comment);
    row
}

/// Supplier `k`: `Supplier#` and its key in nine digits, a random address, a nation
/// drawn uniformly among the 62, a phone `CC-LLL-LLL-LLLL` (CC: 10 + the nation's
/// place), a balance in -999.99..=9,999.99 and a random comment (TPC-H's rules for
/// its SUPPLIER, which the benchmark's table follows).
pub fn supplier(k: u32) -> Supplier {
    let mut g = rng(3, k);
    let mut row = Supplier::zeroed();
    row.su_suppkey = k;
    set_str(&mut row.su_name, format!("Supplier#{k:09}").as_bytes());
    a_string(&mut g, 10, 40, &mut row.su_address);
    let n = g.gen_range(0..NATIONS as usize);
    row.su_nationkey = nation_key_of(n);
    let mut local = [0u8; 10];
    n_string(&mut g, 10, 10, &mut local);
    let l = std::str::from_utf8(&local).expect("digits");
    let phone = format!("{}-{}-{}-{}", 10 + n, &l[..3], &l[3..6], &l[6..]);
    set_str(&mut row.su_phone, phone.as_bytes());
    row.su_acctbal = g.gen_range(-99_999..=999_999);
    a_string(&mut g, 25, 100, &mut row.su_comment);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nations_are_keyed_by_character_and_customers_reach_germany_and_cambodia() {
        let keys: Vec<u32> = (0..62).map(nation_key_of).collect();
        assert_eq!((keys[0], keys[10], keys[61]), (48, 65, 122));
        let names: std::collections::HashSet<&str> = NATION_LIST.iter().map(|n| n.0).collect();
        assert_eq!(names.len(), 62, "distinct names");
        // C_STATE is two letters A-Z: its first letter's nation is one of 10..=35.
        let reached: Vec<&str> = NATION_LIST[10..36].iter().map(|n| n.0).collect();
        assert!(reached.contains(&"Germany") && reached.contains(&"Cambodia"));
        assert!(NATION_LIST.iter().all(|n| n.1 < REGIONS));
        let s = supplier(42);
        assert_eq!(api::row::get_str(&s.su_name), b"Supplier#000000042");
        assert_eq!(api::row::get_str(&s.su_phone).len(), 15);
        assert_eq!(
            supplier(42).su_comment,
            s.su_comment,
            "a pure function of the key"
        );
    }
}
