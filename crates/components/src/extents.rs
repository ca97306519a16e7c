//! Which addresses of an object file lie inside a sized function symbol, and what lies
//! around those that do not. A stripped library's code outside every sized symbol
//! (libc's IFUNC memcpy variants) must not be named after the nearest preceding symbol;
//! both symbolizers (`simulate`'s and `profile`'s) ask this before using a symbol-table
//! name, and name such code after its neighbours instead ([`Layout::unnamed`]).
//!
//! Why the neighbours: a linker lays out each object file's code contiguously, so the
//! static functions of a C file that a stripped binary does not name (Debian's
//! PostgreSQL server keeps only its exported symbols) lie between the exported functions
//! of the same file. When the exported functions on both sides belong to one component,
//! the code between them does too ([`gap_neighbours`] lets the component table decide);
//! when they differ the code stays unmapped. The exception is GCC's cold section (the
//! `.cold` parts of every file, gathered in one place), code that rarely runs.

/// The sized function symbols of one object file (symtab and dynsym), by address.
#[derive(Debug, Default)]
pub struct Layout {
    /// Merged [start, end) ranges covered by sized function symbols.
    extents: Vec<(u64, u64)>,
    /// (start, end, name) of every sized function symbol, by start; one name per start.
    symbols: Vec<(u64, u64, String)>,
}

/// The prefix and separator of the name of code between two symbols.
const GAP_OPEN: &str = " static code between ";
const GAP_AND: &str = " and ";

impl Layout {
    /// Reads the symbol tables of `path`. Empty if the file cannot be read: then no name
    /// is rejected.
    pub fn of(path: &std::path::Path) -> Layout {
        use object::{Object as _, ObjectSymbol as _};
        let Ok(data) = std::fs::read(path) else {
            return Layout::default();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return Layout::default();
        };
        let symbols = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.size() > 0 && s.kind() == object::SymbolKind::Text)
            .map(|s| {
                let name = s.name().unwrap_or("");
                let name = format!("{:#}", rustc_demangle::demangle(name));
                (s.address(), s.address().saturating_add(s.size()), name)
            })
            .collect();
        Layout::from_symbols(symbols)
    }

    /// A layout of the given (start, end, name) symbols, in any order.
    pub fn from_symbols(mut symbols: Vec<(u64, u64, String)>) -> Layout {
        symbols.sort_unstable();
        symbols.dedup_by(|b, a| a.0 == b.0);
        let mut extents: Vec<(u64, u64)> = Vec::with_capacity(symbols.len());
        for &(a, b, _) in &symbols {
            match extents.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => extents.push((a, b)),
            }
        }
        debug_assert!(extents.windows(2).all(|w| w[0].1 < w[1].0));
        Layout { extents, symbols }
    }

    /// Whether `probe` lies inside a sized symbol (or nothing is known about sizes).
    pub fn covered(&self, probe: u64) -> bool {
        covered(&self.extents, probe)
    }

    /// The name of code at `probe` that no sized symbol covers, in object `file`: after
    /// the sized symbols on either side, `(postgres static code between A and B)`, or
    /// `(postgres code without a symbol)` where one side has none.
    pub fn unnamed(&self, file: &str, probe: u64) -> String {
        debug_assert!(!self.covered(probe) || self.extents.is_empty());
        let i = self.symbols.partition_point(|s| s.0 <= probe);
        // The symbol before ends at or before `probe` (it does not cover it).
        let before = i.checked_sub(1).map(|j| &self.symbols[j].2);
        match (before, self.symbols.get(i)) {
            (Some(a), Some(b)) if !a.is_empty() && !b.2.is_empty() => {
                format!("({file}{GAP_OPEN}{a}{GAP_AND}{})", b.2)
            }
            _ => format!("({file} code without a symbol)"),
        }
    }
}

/// The two neighbours named by [`Layout::unnamed`], if `name` is such a name.
pub fn gap_neighbours(name: &str) -> Option<(&str, &str)> {
    let inner = name.strip_prefix('(')?.strip_suffix(')')?;
    let (_, rest) = inner.split_once(GAP_OPEN)?;
    // C names hold no " and " (a demangled Rust name with one in a generic argument
    // would split wrongly and then match no rule: it stays unmapped).
    let (a, b) = rest.split_once(GAP_AND)?;
    (!a.is_empty() && !b.is_empty()).then_some((a, b))
}

/// Whether `probe` lies inside one of the merged `extents` (or nothing is known about
/// sizes).
fn covered(extents: &[(u64, u64)], probe: u64) -> bool {
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
        let ext = Layout::of(&exe).extents;
        assert!(!ext.is_empty());
        assert!(ext.windows(2).all(|w| w[0].1 < w[1].0), "merged and sorted");
    }

    #[test]
    fn code_between_symbols_is_named_after_both_neighbours() {
        let l = Layout::from_symbols(vec![
            (0x200, 0x240, "_bt_compare".into()),
            (0x100, 0x180, "_bt_parallel_done".into()),
            (0x300, 0x310, "ExecInitNode".into()),
        ]);
        assert!(l.covered(0x100) && !l.covered(0x180));
        let gap = l.unnamed("postgres", 0x1a0);
        assert_eq!(
            gap,
            "(postgres static code between _bt_parallel_done and _bt_compare)"
        );
        assert_eq!(
            gap_neighbours(&gap),
            Some(("_bt_parallel_done", "_bt_compare"))
        );
        // Before the first and after the last symbol there is one neighbour only.
        assert_eq!(
            l.unnamed("postgres", 0x10),
            "(postgres code without a symbol)"
        );
        assert_eq!(
            l.unnamed("postgres", 0x400),
            "(postgres code without a symbol)"
        );
        assert_eq!(gap_neighbours("(postgres code without a symbol)"), None);
        assert_eq!(gap_neighbours("_bt_compare"), None);
    }
}
