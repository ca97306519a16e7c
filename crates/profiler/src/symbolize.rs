//! Runtime address -> the names of the functions inlined there, innermost first.
//!
//! The objects come from the running process itself (`dl_iterate_phdr`: each loaded
//! object's executable segments and load bias), read after the run, when every object
//! the workers used is loaded. Each object's symbols are read once, lazily, with
//! `addr2line` (DWARF line and inline tables, else the ELF symbol table). Never fails:
//! what cannot be read is reported once as a warning and its addresses stay unnamed.

use addr2line::Loader;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// One executable segment of a loaded object.
#[derive(Debug, Clone)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    /// Runtime address - ELF address.
    pub bias: u64,
    pub path: PathBuf,
}

/// The executable segments of every object loaded in this process.
pub fn loaded_segments() -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info for the duration of the call; `data` is
        // the `Vec` passed below, borrowed exclusively for the iteration.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut Vec<Segment>)) };
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated string owned by the loader.
            unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        // The main program has an empty name; the vDSO has no file.
        let path = if name.is_empty() {
            match std::fs::read_link("/proc/self/exe") {
                Ok(p) => p,
                Err(_) => return 0,
            }
        } else if name.starts_with('/') {
            PathBuf::from(name)
        } else {
            return 0;
        };
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                let start = info.dlpi_addr.wrapping_add(ph.p_vaddr);
                out.push(Segment {
                    start,
                    end: start.wrapping_add(ph.p_memsz),
                    bias: info.dlpi_addr,
                    path: path.clone(),
                });
            }
        }
        0
    }
    // SAFETY: `each` only reads the loader's data and writes into `out`.
    unsafe {
        libc::dl_iterate_phdr(
            Some(each),
            &mut out as *mut Vec<Segment> as *mut libc::c_void,
        );
    }
    out.sort_by_key(|s| s.start);
    out
}

/// The executable segments of another process (`/proc/<pid>/maps`), each with the load
/// bias computed from its file's program headers: what `loaded_segments` gives for this
/// process. Read while the process lives (a backend exits when its connection closes).
pub fn process_segments(pid: u32) -> Result<Vec<Segment>, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("cannot read /proc/{pid}/maps: {e}"))?;
    let mut headers: HashMap<PathBuf, Vec<(u64, u64, u64)>> = HashMap::new();
    let mut out = Vec::new();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || !f[1].contains('x') || !f[5].starts_with('/') {
            continue;
        }
        let Some((start, end)) = f[0].split_once('-') else {
            continue;
        };
        let hex = |x: &str| u64::from_str_radix(x, 16).ok();
        let (Some(start), Some(end), Some(off)) = (hex(start), hex(end), hex(f[2])) else {
            continue;
        };
        let path = PathBuf::from(f[5..].join(" "));
        let loads = headers
            .entry(path.clone())
            .or_insert_with(|| load_headers(&path));
        // The PT_LOAD segment holding this mapping's file offset gives its address.
        // (The mapping starts at the page holding the segment's first byte.)
        if let Some(&(p_off, p_vaddr, _)) = loads
            .iter()
            .find(|&&(o, _, size)| (o & !0xfff) <= off && off < o + size.max(1))
        {
            let vaddr = p_vaddr.wrapping_add(off).wrapping_sub(p_off);
            out.push(Segment {
                start,
                end,
                bias: start.wrapping_sub(vaddr),
                path,
            });
        }
    }
    if out.is_empty() {
        return Err(format!("process {pid} has no executable file mapped"));
    }
    out.sort_by_key(|s| s.start);
    Ok(out)
}

/// (p_offset, p_vaddr, p_filesz) of each executable PT_LOAD segment of an ELF file
/// (a read-only segment may share the page an executable one starts in); empty if it
/// cannot be read.
fn load_headers(path: &std::path::Path) -> Vec<(u64, u64, u64)> {
    use object::read::elf::{FileHeader as _, ProgramHeader as _};
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(elf) = object::elf::FileHeader64::<object::Endianness>::parse(&*data) else {
        return Vec::new();
    };
    let Ok(endian) = elf.endian() else {
        return Vec::new();
    };
    let Ok(phdrs) = elf.program_headers(endian, &*data) else {
        return Vec::new();
    };
    phdrs
        .iter()
        .filter(|p| {
            p.p_type(endian) == object::elf::PT_LOAD && p.p_flags(endian) & object::elf::PF_X != 0
        })
        .map(|p| (p.p_offset(endian), p.p_vaddr(endian), p.p_filesz(endian)))
        .collect()
}

pub struct Symbolizer {
    segments: Vec<Segment>,
    loaders: HashMap<PathBuf, Option<Loader>>,
    layouts: HashMap<PathBuf, components::extents::Layout>,
    cache: HashMap<u64, Vec<String>>,
    pub warnings: Vec<String>,
    /// The names found in shared libraries (libc): library code, which has no component
    /// of its own (as in `simulate`).
    pub library: HashSet<String>,
}

impl Symbolizer {
    pub fn new(segments: Vec<Segment>) -> Symbolizer {
        Symbolizer {
            segments,
            loaders: HashMap::new(),
            layouts: HashMap::new(),
            cache: HashMap::new(),
            warnings: Vec::new(),
            library: HashSet::new(),
        }
    }

    /// Functions inlined at `addr`, innermost first (empty: unknown).
    pub fn frames(&mut self, addr: u64) -> &[String] {
        if !self.cache.contains_key(&addr) {
            let names = self.lookup(addr);
            self.cache.insert(addr, names);
        }
        &self.cache[&addr]
    }

    fn lookup(&mut self, addr: u64) -> Vec<String> {
        let i = self.segments.partition_point(|s| s.start <= addr);
        let Some(seg) = i.checked_sub(1).map(|i| &self.segments[i]) else {
            return Vec::new();
        };
        if addr >= seg.end {
            return Vec::new();
        }
        let probe = addr.wrapping_sub(seg.bias);
        let path = seg.path.clone();
        let shared = path
            .file_name()
            .is_some_and(|f| components::is_shared_library(&f.to_string_lossy()));
        let warnings = &mut self.warnings;
        let loader = self
            .loaders
            .entry(path.clone())
            .or_insert_with(|| match Loader::new(&path) {
                Ok(l) => Some(l),
                Err(e) => {
                    warnings.push(format!(
                        "cannot read symbols of {}: {e}; its samples are unnamed",
                        path.display()
                    ));
                    None
                }
            });
        let Some(loader) = loader else {
            return Vec::new();
        };
        let mut names = Vec::new();
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(f)) = frames.next() {
                if let Some(n) = f.function.as_ref().and_then(|n| n.demangle().ok()) {
                    let file = f.location.as_ref().and_then(|l| l.file);
                    names.push(components::frame_name(&n, file));
                }
            }
        }
        if names.is_empty() {
            if let Some(sym) = loader.find_symbol(probe) {
                let layout = self
                    .layouts
                    .entry(path.clone())
                    .or_insert_with(|| components::extents::Layout::of(&path));
                if layout.covered(probe) {
                    names.push(format!("{:#}", rustc_demangle::demangle(sym)));
                } else {
                    // Named after its neighbours, whose component it has if they agree.
                    let file = path.file_name().unwrap_or(path.as_os_str());
                    names.push(layout.unnamed(&file.to_string_lossy(), probe));
                }
            }
        }
        if shared {
            self.library.extend(names.iter().cloned());
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_to_find() -> u64 {
        std::hint::black_box(42)
    }

    #[test]
    fn this_process_s_own_functions_are_found() {
        let segs = loaded_segments();
        assert!(!segs.is_empty());
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert!(
            segs.iter().any(|s| s.path == exe),
            "the program itself is listed"
        );
        let addr = a_function_to_find as *const () as u64;
        let mut s = Symbolizer::new(segs);
        let names = s.frames(addr).to_vec();
        assert!(
            names.iter().any(|n| n.contains("a_function_to_find")),
            "{names:?}"
        );
        assert!(s.frames(8).is_empty(), "an unmapped address is unknown");
    }

    #[test]
    fn another_process_s_segments_match_what_it_loaded() {
        // This process read through /proc, as a backend would be: the same objects at
        // the same addresses, with the same biases.
        let own = loaded_segments();
        let by_maps = process_segments(std::process::id()).unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let a = own.iter().find(|s| s.path == exe).unwrap();
        let b = by_maps.iter().find(|s| s.path == exe).unwrap();
        assert_eq!(a.bias, b.bias);
        assert!(b.start <= a.start + 4096 && a.start < b.end, "{a:?} {b:?}");
        let addr = a_function_to_find as *const () as u64;
        let mut s = Symbolizer::new(by_maps);
        let names = s.frames(addr).to_vec();
        assert!(
            names.iter().any(|n| n.contains("a_function_to_find")),
            "{names:?}"
        );
        assert!(process_segments(u32::MAX - 1).is_err());
    }
}
