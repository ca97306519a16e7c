//! Adapter from valgrind lackey's `--trace-mem=yes` text (`I  addr,size`, ` L addr,size`,
//! ` S ...`, ` M ...`) to trace records: one IFETCH of one instruction per `I` line. Used
//! to validate against cachegrind and to simulate programs traced without the oltpscope
//! tool (lackey writes no MAP, THREAD or MARKER records).
//!
//! Owns nothing but the line format. Must never panic on a malformed line: such lines
//! (and valgrind's own `==pid==` messages) are skipped and counted.

use crate::trace::Record;
use std::io::BufRead;

/// valgrind (amd64) loads a position-independent main executable at this address, so
/// its load bias is this value (lackey does not report mappings).
pub const VALGRIND_PIE_BASE: u64 = 0x108000;

/// Parses one line; None for anything that is not an access.
pub fn parse_line(line: &str) -> Option<Record> {
    let tag = line.get(..2)?;
    let (a, n) = line.get(2..)?.trim().split_once(',')?;
    let addr = u64::from_str_radix(a, 16).ok()?;
    let size: u64 = n.trim().parse().ok()?;
    Some(match tag {
        "I " if (1..=15).contains(&size) => Record::IFetch {
            addr,
            ninstr: 1,
            len: size as u8,
        },
        " L" if size <= 0xfff => Record::Load {
            addr,
            size: size as u16,
        },
        " S" if size <= 0xfff => Record::Store {
            addr,
            size: size as u16,
        },
        " M" if size <= 0xfff => Record::Modify {
            addr,
            size: size as u16,
        },
        _ => return None,
    })
}

/// Calls `f` for every access in a lackey log; returns the number of lines skipped
/// (valgrind's messages and anything malformed).
pub fn for_each_record(input: impl BufRead, mut f: impl FnMut(&Record)) -> std::io::Result<u64> {
    let mut skipped = 0;
    for line in input.lines() {
        match parse_line(&line?) {
            Some(r) => f(&r),
            None => skipped += 1,
        }
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(
            parse_line("I  0401a2b,3"),
            Some(Record::IFetch {
                addr: 0x401a2b,
                ninstr: 1,
                len: 3
            })
        );
        assert_eq!(
            parse_line(" L 1ffefff8a0,8"),
            Some(Record::Load {
                addr: 0x1ffefff8a0,
                size: 8
            })
        );
        assert_eq!(
            parse_line(" S 10,4"),
            Some(Record::Store {
                addr: 0x10,
                size: 4
            })
        );
        assert_eq!(
            parse_line(" M 10,16"),
            Some(Record::Modify {
                addr: 0x10,
                size: 16
            })
        );
        for bad in [
            "==123== Lackey",
            "",
            "I",
            "I  zz,3",
            "I  10,0",
            " L 10,",
            " X 10,4",
            "é",
        ] {
            assert_eq!(parse_line(bad), None, "{bad}");
        }
    }
}
