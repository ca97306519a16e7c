//! Page format shared by every page kind: the page size (the one constant), the common
//! header (checksum, magic, version, page id, LSN, type) and its checksum rules.
//! This module owns byte layout only; it must never do I/O or take latches.
//!
//! Header (little-endian, 32 bytes):
//! `[0..4)` crc32 of bytes `[4..PAGE_SIZE)`, `[4..8)` magic, `[8..16)` page id,
//! `[16..24)` page LSN, `[24]` page type, `[25]` format version, `[26..32)` reserved.

pub const PAGE_SIZE: usize = 8192;
pub const HEADER: usize = 32;
// Header fields (byte offsets), in the order the layout above gives them.
const CRC_AT: usize = 0;
const MAGIC_AT: usize = 4;
const ID_AT: usize = 8;
const LSN_AT: usize = 16;
const TYPE_AT: usize = 24;
const VERSION_AT: usize = 25;
// Each field ends where the next begins, the last inside the header; a page is whole
// 4 KiB blocks (the unit the double-write file and the OS write).
const _: () = assert!(CRC_AT + 4 == MAGIC_AT && MAGIC_AT + 4 == ID_AT && ID_AT + 8 == LSN_AT);
const _: () = assert!(LSN_AT + 8 == TYPE_AT && TYPE_AT + 1 == VERSION_AT && VERSION_AT < HEADER);
const _: () = assert!(PAGE_SIZE.is_power_of_two() && PAGE_SIZE.is_multiple_of(4096));
pub const MAGIC: u32 = 0x4f53_4450; // "PDSO"
/// 3: B-tree slots carry the key head (2: slotted B-tree pages; 1: fixed entry slots).
pub const VERSION: u8 = 3;
/// A page id that never names a page (frames without a page, "no sibling").
pub const NO_PAGE: u64 = u64::MAX;

pub type Page = [u8; PAGE_SIZE];

/// The full check of a page's content by the module that owns its type (the B+tree's
/// `check_cells`), run once when a page enters the buffer pool from disk. Registered
/// with the pool (`BufferPool::with_content_check`) so the pool knows no data structure.
pub type ContentCheck = fn(PageType, &Page, u64) -> api::Result<()>;

/// The content check of a pool nobody registered one with (unit tests of the pool).
pub fn no_content_check(_: PageType, _: &Page, _: u64) -> api::Result<()> {
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageType {
    /// Never written: an all-zero page inside (or past the end of) the file.
    Free = 0,
    Catalog = 1,
    Heap = 2,
    BTree = 3,
}

impl PageType {
    fn from_u8(v: u8) -> Option<PageType> {
        match v {
            0 => Some(PageType::Free),
            1 => Some(PageType::Catalog),
            2 => Some(PageType::Heap),
            3 => Some(PageType::BTree),
            _ => None,
        }
    }
}

#[inline]
pub fn get_u16(p: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(p[at..at + 2].try_into().unwrap())
}
#[inline]
pub fn put_u16(p: &mut [u8], at: usize, v: u16) {
    p[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn get_u32(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(p[at..at + 4].try_into().unwrap())
}
#[inline]
pub fn put_u32(p: &mut [u8], at: usize, v: u32) {
    p[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn get_u64(p: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(p[at..at + 8].try_into().unwrap())
}
#[inline]
pub fn put_u64(p: &mut [u8], at: usize, v: u64) {
    p[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn lsn(p: &Page) -> u64 {
    get_u64(p, LSN_AT)
}
#[inline]
pub fn set_lsn(p: &mut Page, lsn: u64) {
    put_u64(p, LSN_AT, lsn)
}
#[inline]
pub fn page_id(p: &Page) -> u64 {
    get_u64(p, ID_AT)
}
#[inline]
pub fn page_type(p: &Page) -> u8 {
    p[TYPE_AT]
}

/// Zero the page and write a fresh header of type `t` (LSN 0 until the caller logs).
pub fn format(p: &mut Page, id: u64, t: PageType) {
    p.fill(0);
    put_u32(p, MAGIC_AT, MAGIC);
    put_u64(p, ID_AT, id);
    p[TYPE_AT] = t as u8;
    p[VERSION_AT] = VERSION;
}

/// Fill in the checksum (on a copy about to be written).
pub fn seal(p: &mut Page) {
    let c = crc32fast::hash(&p[MAGIC_AT..]);
    put_u32(p, CRC_AT, c);
}

/// Check a page read from disk as page `id`. An all-zero page is a page that was
/// allocated but never written (or lies past the end of the file): it is valid and empty.
pub fn verify(p: &Page, id: u64) -> api::Result<PageType> {
    if p.iter().all(|&b| b == 0) {
        return Ok(PageType::Free);
    }
    let stored = get_u32(p, CRC_AT);
    if crc32fast::hash(&p[MAGIC_AT..]) != stored {
        return Err(api::Error::fatal(format!(
            "data page {id} is damaged (checksum mismatch)"
        )));
    }
    if get_u32(p, MAGIC_AT) != MAGIC {
        return Err(api::Error::fatal(format!(
            "data page {id} has a wrong magic number (not an oltpscope disk database?)"
        )));
    }
    if p[VERSION_AT] != VERSION {
        return Err(api::Error::fatal(format!(
            "data page {id} has format version {}, this build reads version {VERSION}",
            p[VERSION_AT]
        )));
    }
    if page_id(p) != id {
        return Err(api::Error::fatal(format!(
            "data page {id} claims to be page {} (misplaced write)",
            page_id(p)
        )));
    }
    PageType::from_u8(p[TYPE_AT])
        .ok_or_else(|| api::Error::fatal(format!("data page {id} has unknown type {}", p[TYPE_AT])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_page_verifies_and_damage_is_caught() {
        let mut p: Page = [0; PAGE_SIZE];
        assert_eq!(verify(&p, 3).unwrap(), PageType::Free);
        format(&mut p, 3, PageType::Heap);
        set_lsn(&mut p, 77);
        seal(&mut p);
        assert_eq!(verify(&p, 3).unwrap(), PageType::Heap);
        assert!(verify(&p, 4).is_err(), "wrong id must be refused");
        p[5000] ^= 1;
        assert!(verify(&p, 3).is_err(), "flipped bit must be refused");
    }
}
