//! Instruction address -> function -> storage-manager component.
//!
//! Owns the objects announced by MAP records (loaded lazily with `addr2line`, which reads
//! the ELF symbol table and the DWARF line/inline tables) and the ordered component table.
//! Resolution walks the inlined frames innermost first and takes the first frame whose
//! module path names a component, so a B-tree function inlined into session code is
//! charged to the B-tree while `core`/`alloc` code inlined into it is charged to its
//! caller's component. Must never fail the simulation: an unreadable object becomes a
//! warning and its addresses are charged to `other`.

use addr2line::Loader;
use components::extents::{covered, symbol_extents};
use std::path::{Path, PathBuf};

pub use components::{is_std, module_path, ComponentTable, OTHER};

/// The separate debug file of `path` by its GNU build id
/// (`/usr/lib/debug/.build-id/xx/yyyy.debug`, where Debian's `-dbg` packages such as
/// libc6-dbg put them), if there is one: it has the full symbol table and DWARF of a
/// stripped library, at the same addresses.
pub fn debug_file(path: &Path) -> Option<PathBuf> {
    use object::Object as _;
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let id = file.build_id().ok()??;
    if id.len() < 2 {
        return None;
    }
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let p = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    p.is_file().then_some(p)
}

struct Object {
    avma: u64,
    size: u64,
    bias: i64,
    path: PathBuf,
    loader: Option<Result<Loader, String>>,
    /// Merged [start, end) ELF address ranges of the symbols that have a size; loaded on
    /// the first fallback to the symbol table.
    extents: Option<Vec<(u64, u64)>>,
}

/// Resolves runtime instruction addresses of MAP'd objects.
pub struct Symbolizer {
    objects: Vec<Object>,
    pub table: ComponentTable,
    pub warnings: Vec<String>,
}

impl Symbolizer {
    pub fn new(table: ComponentTable) -> Symbolizer {
        Symbolizer {
            objects: Vec::new(),
            table,
            warnings: Vec::new(),
        }
    }

    /// Text of `path` is mapped at [avma, avma+size); ELF address = runtime - bias.
    pub fn add_object(&mut self, avma: u64, size: u64, bias: i64, path: &Path) {
        // A re-announced range replaces the old one (an object unmapped and another
        // mapped in its place).
        let end = avma.saturating_add(size);
        self.objects
            .retain(|o| o.avma.saturating_add(o.size) <= avma || end <= o.avma);
        self.objects.push(Object {
            avma,
            size,
            bias,
            path: path.to_path_buf(),
            loader: None,
            extents: None,
        });
    }

    /// Demangled name of the function that decides the component (None if unknown), and
    /// the component index.
    pub fn resolve(&mut self, addr: u64) -> (Option<String>, u16) {
        let Some(o) = self
            .objects
            .iter_mut()
            .find(|o| addr >= o.avma && addr - o.avma < o.size)
        else {
            return (None, 0);
        };
        let loader = o.loader.get_or_insert_with(|| {
            // From now on the object is read through its debug file, if it has one.
            if let Some(d) = debug_file(&o.path) {
                o.path = d;
            }
            Loader::new(&o.path).map_err(|e| format!("{}: {e}", o.path.display()))
        });
        let loader = match loader {
            Ok(l) => l,
            Err(e) => {
                let w = format!("cannot read symbols of {e}; its code is charged to 'other'");
                if !self.warnings.contains(&w) {
                    self.warnings.push(w);
                }
                return (None, 0);
            }
        };
        let probe = (addr as i64).wrapping_sub(o.bias) as u64;
        let mut first: Option<String> = None;
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(f)) = frames.next() {
                let Some(name) = f.function.as_ref().and_then(|n| n.demangle().ok()) else {
                    continue;
                };
                let path = module_path(&name);
                let c = if is_std(&path) {
                    0
                } else {
                    self.table.classify(&path)
                };
                if c != 0 {
                    return (Some(name.into_owned()), c);
                }
                first.get_or_insert_with(|| name.into_owned());
            }
        }
        // The nearest preceding symbol is the function only if the address lies inside
        // it: a stripped library (libc's IFUNC memcmp/memcpy variants have no dynamic
        // symbol) would otherwise name its code after an unrelated neighbour.
        let extents = o.extents.get_or_insert_with(|| symbol_extents(&o.path));
        let sym = loader.find_symbol(probe);
        if sym.is_some() && !covered(extents, probe) {
            if first.is_some() {
                return (first, 0);
            }
            let file = o.path.file_name().unwrap_or(o.path.as_os_str());
            return (
                Some(format!(
                    "({} code without a symbol)",
                    file.to_string_lossy()
                )),
                0,
            );
        }
        if let Some(sym) = sym {
            let name = format!("{:#}", rustc_demangle::demangle(sym));
            let path = module_path(&name);
            let c = if is_std(&path) {
                0
            } else {
                self.table.classify(&path)
            };
            if c != 0 || first.is_none() {
                return (Some(name), c);
            }
        }
        (first, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_components;

    #[test]
    fn unmapped_addresses_and_unreadable_objects_are_other() {
        let mut s = Symbolizer::new(ComponentTable::new(&default_components()));
        assert_eq!(s.resolve(0x1000), (None, 0));
        s.add_object(0x1000, 0x100, 0, Path::new("/nonexistent/object.so"));
        assert_eq!(s.resolve(0x1010), (None, 0));
        assert_eq!(s.warnings.len(), 1);
        assert!(
            s.warnings[0].contains("/nonexistent/object.so"),
            "{}",
            s.warnings[0]
        );
        s.resolve(0x1020);
        assert_eq!(s.warnings.len(), 1, "a warning is given once per object");
    }
}
