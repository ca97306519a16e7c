//! Which addresses of an object file lie inside a sized function symbol. A stripped
//! library's code outside every sized symbol (libc's IFUNC memcpy variants) must not be
//! named after the nearest preceding symbol; both symbolizers (`simulate`'s and
//! `profile`'s) ask this before using a symbol-table name.

/// The address ranges covered by sized function symbols of `path` (symtab and dynsym),
/// sorted and merged. Empty if the file cannot be read: then no name is rejected.
pub fn symbol_extents(path: &std::path::Path) -> Vec<(u64, u64)> {
    use object::{Object as _, ObjectSymbol as _};
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let mut v: Vec<(u64, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.size() > 0 && s.kind() == object::SymbolKind::Text)
        .map(|s| (s.address(), s.address().saturating_add(s.size())))
        .collect();
    v.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Whether `probe` lies inside a sized symbol (or nothing is known about sizes).
pub fn covered(extents: &[(u64, u64)], probe: u64) -> bool {
    if extents.is_empty() {
        return true;
    }
    let i = extents.partition_point(|&(a, _)| a <= probe);
    i > 0 && probe < extents[i - 1].1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_past_every_sized_symbol_is_not_covered() {
        let e = [(0x100, 0x180), (0x200, 0x240)];
        assert!(covered(&e, 0x100) && covered(&e, 0x17f) && covered(&e, 0x23f));
        assert!(!covered(&e, 0xff) && !covered(&e, 0x180) && !covered(&e, 0x1ff));
        assert!(!covered(&e, 0x240));
        assert!(covered(&[], 0x1234), "no size information rejects nothing");
        // The test binary's own symbols come out sorted and merged.
        let exe = std::env::current_exe().unwrap();
        let ext = symbol_extents(&exe);
        assert!(!ext.is_empty());
        assert!(ext.windows(2).all(|w| w[0].1 < w[1].0), "merged and sorted");
    }
}
