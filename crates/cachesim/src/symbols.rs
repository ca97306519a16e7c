//! Instruction address -> function -> storage-manager component.
//!
//! Owns the objects announced by MAP records (loaded lazily with `addr2line`, which reads
//! the ELF symbol table and the DWARF line/inline tables) and the ordered component table.
//! Resolution walks the inlined frames innermost first and takes the first frame whose
//! module path names a component, so a B-tree function inlined into session code is
//! charged to the B-tree while `core`/`alloc` code inlined into it is charged to its
//! caller's component. Must never fail the simulation: an unreadable object becomes a
//! warning and its addresses are charged to `other`. Also tells library code (shared
//! libraries such as libc, Rust's standard library, the allocator) from the system's
//! own, so a report can say which of the code no rule maps is a map's miss.

use addr2line::Loader;
use components::extents::Layout;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use components::{is_std, module_path, ComponentTable, OTHER};

/// The separate debug file of `path` by its GNU build id
/// (`/usr/lib/debug/.build-id/xx/yyyy.debug`, where Debian's `-dbg` packages such as
/// libc6-dbg put them), if there is one: it has the full symbol table and DWARF of a
/// stripped library, at the same addresses.
pub fn debug_file(path: &Path) -> Option<PathBuf> {
    use object::Object as _;
    // Read through a cache of the parts parsed (headers, the build-id note): reading the
    // whole file first cost a quarter of a second per simulation on oltpscope's own
    // 67 MB binary (issue 41).
    let cache = object::ReadCache::new(std::fs::File::open(path).ok()?);
    let file = object::File::parse(&cache).ok()?;
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
    /// The object's sized symbols; loaded on the first fallback to the symbol table.
    layout: Option<Layout>,
    /// A shared library (`lib*.so*`, the dynamic loader): its code is library code.
    shared_library: bool,
    /// The object's file name (`path` may become its debug file's).
    file: String,
}

/// Resolves runtime instruction addresses of MAP'd objects.
pub struct Symbolizer {
    objects: Vec<Object>,
    pub table: ComponentTable,
    pub warnings: Vec<String>,
    /// The names resolved in library code: a shared library's, Rust's standard library's
    /// or the allocator's ([`components::is_library_code`]).
    pub library: HashSet<String>,
}

impl Symbolizer {
    pub fn new(table: ComponentTable) -> Symbolizer {
        Symbolizer {
            objects: Vec::new(),
            table,
            warnings: Vec::new(),
            library: HashSet::new(),
        }
    }

    /// Text of `path` is mapped at [avma, avma+size); ELF address = runtime - bias.
    pub fn add_object(&mut self, avma: u64, size: u64, bias: i64, path: &Path) {
        // A re-announced range replaces the old one (an object unmapped and another
        // mapped in its place).
        let end = avma.saturating_add(size);
        let file = path
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        self.objects
            .retain(|o| o.avma.saturating_add(o.size) <= avma || end <= o.avma);
        self.objects.push(Object {
            avma,
            size,
            bias,
            path: path.to_path_buf(),
            loader: None,
            layout: None,
            shared_library: components::is_shared_library(&file),
            file,
        });
    }

    /// Demangled name of the function that decides the component (None if unknown), and
    /// the component index. A name with no component that is library code is recorded in
    /// `library`.
    pub fn resolve(&mut self, addr: u64) -> (Option<String>, u16) {
        let (name, comp, shared_library) = self.lookup(addr);
        if let Some(n) = &name {
            if comp == 0 && (shared_library || components::is_library_code(n)) {
                self.library.insert(n.clone());
            }
        }
        (name, comp)
    }

    /// `resolve`, and whether the address lies in a shared library.
    fn lookup(&mut self, addr: u64) -> (Option<String>, u16, bool) {
        let Some(o) = self
            .objects
            .iter_mut()
            .find(|o| addr >= o.avma && addr - o.avma < o.size)
        else {
            return (None, 0, false);
        };
        let lib = o.shared_library;
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
                return (None, 0, lib);
            }
        };
        let probe = (addr as i64).wrapping_sub(o.bias) as u64;
        let mut first: Option<String> = None;
        if let Ok(mut frames) = loader.find_frames(probe) {
            // The inlined frames at this address, innermost first; the shared rule picks
            // the one that decides (a plan's closure inlined into a query operator
            // counts for the operator).
            let mut names = Vec::new();
            while let Ok(Some(f)) = frames.next() {
                let Some(name) = f.function.as_ref().and_then(|n| n.demangle().ok()) else {
                    continue;
                };
                names.push(components::frame_name(
                    &name,
                    f.location.as_ref().and_then(|l| l.file),
                ));
            }
            if let Some((i, c)) = self.table.charge_chain(names.iter().map(String::as_str)) {
                return (Some(names.swap_remove(i)), c, lib);
            }
            first = names.into_iter().next();
        }
        // The nearest preceding symbol is the function only if the address lies inside
        // it: a stripped library (libc's IFUNC memcmp/memcpy variants have no dynamic
        // symbol) would otherwise name its code after an unrelated neighbour. Such code
        // is named after the symbols on both sides, and has their component if they
        // agree (see `components::extents`).
        let layout = o.layout.get_or_insert_with(|| Layout::of(&o.path));
        let sym = loader.find_symbol(probe);
        if sym.is_some() && !layout.covered(probe) {
            if first.is_some() {
                return (first, 0, lib);
            }
            let name = layout.unnamed(&o.file, probe);
            let c = self.table.classify_demangled(&name);
            return (Some(name), c, lib);
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
                return (Some(name), c, lib);
            }
        }
        (first, 0, lib)
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
        assert!(!s.objects[0].shared_library);
        s.add_object(
            0x2000,
            0x100,
            0,
            Path::new("/lib/x86_64-linux-gnu/libc.so.6"),
        );
        assert!(s.objects[1].shared_library);
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
