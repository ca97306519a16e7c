//! Control groups for a sweep's children: cores through a cpuset and storage bandwidth
//! through block-I/O throttling, on cgroup v1 (`cpuset`, `blkio`) or v2 (`cpuset`, `io`)
//! as the machine has them, found from `/proc/self/mountinfo`.
//!
//! Owns: finding the hierarchies and the block device under a path, creating one cgroup
//! per child (`oltpscope-<pid>-<n>-<tag>`), making the child join it before it executes, and
//! removing it afterwards. Every function that reads the system takes its inputs (the
//! mountinfo text, the sysfs root) so tests run on recorded trees. Must never: change
//! a cgroup it did not create, or leave a resource silently unconstrained (what cannot
//! be controlled is an error naming why).

use std::path::{Path, PathBuf};
use std::process::Command;

pub const MOUNTINFO: &str = "/proc/self/mountinfo";
pub const SYSFS: &str = "/sys";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where a controller can be used: its hierarchy's root and the cgroup version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    pub root: PathBuf,
    pub version: Version,
}

/// One line of mountinfo: (major:minor, mount point, filesystem type, super options).
#[derive(Debug, Clone, PartialEq)]
struct Mount {
    dev: (u32, u32),
    point: PathBuf,
    fstype: String,
    options: String,
}

/// Mountinfo's octal escapes (`\040` for a space) decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn mounts(mountinfo: &str) -> Vec<Mount> {
    let mut v = Vec::new();
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 5 || r.is_empty() {
            continue;
        }
        let Some((ma, mi)) = l[2].split_once(':') else {
            continue;
        };
        let (Ok(ma), Ok(mi)) = (ma.parse(), mi.parse()) else {
            continue;
        };
        v.push(Mount {
            dev: (ma, mi),
            point: PathBuf::from(unescape(l[4])),
            fstype: r[0].to_string(),
            options: r.get(2).unwrap_or(&"").to_string(),
        });
    }
    v
}

/// The hierarchy holding `controller` (`cpuset`, or `blkio` / `io` for bandwidth: give
/// the v1 name, the v2 one is looked up too). v1 first: a controller bound to a v1
/// hierarchy is absent from v2's `cgroup.controllers`.
pub fn find(controller: &str, mountinfo: &str) -> Option<Hierarchy> {
    let ms = mounts(mountinfo);
    if let Some(m) = ms
        .iter()
        .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == controller))
    {
        return Some(Hierarchy {
            root: m.point.clone(),
            version: Version::V1,
        });
    }
    let v2name = if controller == "blkio" {
        "io"
    } else {
        controller
    };
    ms.iter()
        .filter(|m| m.fstype == "cgroup2")
        .find(|m| {
            std::fs::read_to_string(m.point.join("cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|x| x == v2name))
        })
        .map(|m| Hierarchy {
            root: m.point.clone(),
            version: Version::V2,
        })
}

/// The block device (major, minor) holding `path`: the mount with the longest mount
/// point containing it (the path made absolute and its symlinks resolved, or its nearest
/// existing ancestor when it does not exist yet), then the whole disk if that device is
/// a partition (throttling applies to whole disks). Refused for filesystems without a
/// block device (tmpfs, overlay, NFS: major 0).
pub fn device_of(path: &Path, mountinfo: &str, sysfs: &Path) -> Result<(u32, u32), String> {
    let mut p = std::path::absolute(path)
        .map_err(|e| format!("{}: cannot resolve: {e}", path.display()))?;
    let real = loop {
        if let Ok(r) = p.canonicalize() {
            break r;
        }
        if !p.pop() {
            return Err(format!(
                "{}: no existing directory above it",
                path.display()
            ));
        }
    };
    let m = mounts(mountinfo)
        .into_iter()
        .filter(|m| real.starts_with(&m.point))
        .max_by_key(|m| m.point.components().count())
        .ok_or_else(|| format!("{}: no mount holds it", real.display()))?;
    if m.dev.0 == 0 {
        return Err(format!(
            "{} is on {} ({}), which has no block device to throttle",
            real.display(),
            m.point.display(),
            m.fstype
        ));
    }
    let dir = sysfs
        .join("dev/block")
        .join(format!("{}:{}", m.dev.0, m.dev.1));
    if dir.join("partition").is_file() {
        // .../block/vda/vda1 -> the parent directory is the disk; its `dev` its numbers.
        let target = std::fs::canonicalize(&dir)
            .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?;
        let parent = target.parent().expect("a partition has a disk above it");
        let dev = std::fs::read_to_string(parent.join("dev"))
            .map_err(|e| format!("cannot read {}: {e}", parent.join("dev").display()))?;
        return parse_dev(dev.trim())
            .ok_or_else(|| format!("{}: not MAJ:MIN", parent.join("dev").display()));
    }
    Ok(m.dev)
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// One cgroup made for one child, removed when dropped (the kernel removes only an
/// empty one: the child has exited by then).
#[derive(Debug)]
pub struct Group {
    pub path: PathBuf,
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value)
        .map_err(|e| format!("cannot write '{}' to {}: {e}", value.trim(), path.display()))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

impl Hierarchy {
    /// A new cgroup `oltpscope-<pid>-<n>-<tag>` under the root, `n` counting this
    /// process's groups: sweeps run at once (`reproduce`) make groups of the same tag
    /// (`cores-2-1` of two sweeps varying cores). On v2 the controller is first enabled
    /// for the root's children (`+cpuset`, `+io` in `cgroup.subtree_control`).
    pub fn create(&self, v2controller: &str, tag: &str) -> Result<Group, String> {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        if self.version == Version::V2 {
            let sc = self.root.join("cgroup.subtree_control");
            let on = read(&sc)?;
            if !on.split_whitespace().any(|c| c == v2controller) {
                write(&sc, &format!("+{v2controller}"))?;
            }
        }
        let path = self.root.join(format!(
            "oltpscope-{}-{}-{tag}",
            std::process::id(),
            MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir(&path)
            .map_err(|e| format!("cannot create the cgroup {}: {e}", path.display()))?;
        Ok(Group { path })
    }

    /// Can a cgroup be made here? (Why not, if not.)
    pub fn probe(&self, v2controller: &str) -> Result<(), String> {
        self.create(v2controller, "probe").map(drop)
    }

    /// Remove the empty cgroups an interrupted sweep left (`oltpscope-<pid>-...` of a
    /// process that no longer exists). The kernel refuses to remove one holding tasks.
    pub fn remove_stale(&self) {
        let Ok(rd) = std::fs::read_dir(&self.root) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = name
                .strip_prefix("oltpscope-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }

    /// Confine `group` to the first `n` CPUs its parent allows.
    pub fn set_cores(&self, group: &Group, n: u32) -> Result<(), String> {
        let eff = |f: &str| read(&self.root.join(f));
        let cpus = parse_cpu_list(
            &eff("cpuset.cpus.effective")
                .or_else(|_| eff("cpuset.effective_cpus"))
                .or_else(|_| eff("cpuset.cpus"))?,
        );
        if n == 0 || n as usize > cpus.len() {
            return Err(format!(
                "cores={n}: this machine's cpuset allows 1 to {} cores",
                cpus.len()
            ));
        }
        let list: Vec<String> = cpus[..n as usize].iter().map(u32::to_string).collect();
        write(&group.path.join("cpuset.cpus"), &list.join(","))?;
        if self.version == Version::V1 {
            // v1 cpusets start without memory nodes and refuse tasks until given some.
            let mems = eff("cpuset.mems")?;
            write(&group.path.join("cpuset.mems"), mems.trim())?;
        }
        Ok(())
    }

    /// Throttle `group`'s writes (or reads) to `devices` at `bytes_per_s`.
    pub fn set_bandwidth(
        &self,
        group: &Group,
        devices: &[(u32, u32)],
        write_bw: bool,
        bytes_per_s: u64,
    ) -> Result<(), String> {
        assert!(bytes_per_s > 0, "a zero limit means none to the kernel");
        for (ma, mi) in devices {
            match self.version {
                Version::V1 => write(
                    &group.path.join(if write_bw {
                        "blkio.throttle.write_bps_device"
                    } else {
                        "blkio.throttle.read_bps_device"
                    }),
                    &format!("{ma}:{mi} {bytes_per_s}"),
                )?,
                Version::V2 => write(
                    &group.path.join("io.max"),
                    &format!(
                        "{ma}:{mi} {}={bytes_per_s}",
                        if write_bw { "wbps" } else { "rbps" }
                    ),
                )?,
            }
        }
        Ok(())
    }

    /// Lift `group`'s throttles on `devices` (both directions): the group's processes
    /// then read and write at the device's own speed.
    pub fn lift_bandwidth(&self, group: &Group, devices: &[(u32, u32)]) -> Result<(), String> {
        for (ma, mi) in devices {
            match self.version {
                // v1: a limit of 0 removes the device's rule.
                Version::V1 => {
                    for f in [
                        "blkio.throttle.write_bps_device",
                        "blkio.throttle.read_bps_device",
                    ] {
                        write(&group.path.join(f), &format!("{ma}:{mi} 0"))?;
                    }
                }
                Version::V2 => write(
                    &group.path.join("io.max"),
                    &format!("{ma}:{mi} rbps=max wbps=max"),
                )?,
            }
        }
        Ok(())
    }
}

/// CPU numbers of a cpuset list such as `0-3,6`.
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    v.extend(a..=b);
                }
            }
            None => v.extend(part.parse::<u32>().ok()),
        }
    }
    v
}

/// Make `cmd`'s process join every group before it executes (so every thread it starts
/// is confined from its first instruction).
pub fn join_before_exec(groups: &[Group], cmd: &mut Command) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let procs: Vec<std::ffi::CString> = groups
        .iter()
        .map(|g| {
            std::ffi::CString::new(
                g.path
                    .join("cgroup.procs")
                    .as_os_str()
                    .as_encoded_bytes()
                    .to_vec(),
            )
            .map_err(|_| "a cgroup path with a NUL byte".to_string())
        })
        .collect::<Result<_, _>>()?;
    if procs.is_empty() {
        return Ok(());
    }
    // SAFETY: between fork and exec only async-signal-safe calls (open, write, close)
    // on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            for p in &procs {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0" is the writing process itself.
                let r = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                if r != 1 {
                    return Err(err);
                }
            }
            Ok(())
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's kind of mountinfo (recorded), with the cgroup mounts moved under
    /// `root` so the tests can build the trees.
    fn mountinfo(root: &Path) -> String {
        let r = root.display();
        format!(
            "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n\
             25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683656k\n\
             31 23 0:28 / {r}/cg rw,relatime - tmpfs tmpfs rw,mode=755\n\
             34 31 0:31 / {r}/cg/cpuset rw,relatime - cgroup cgroup rw,cpuset\n\
             38 31 0:35 / {r}/cg/blkio rw,relatime - cgroup cgroup rw,blkio\n\
             41 31 0:38 / {r}/cg/unified rw,relatime - cgroup2 cgroup2 rw\n\
             50 27 8:17 / {r}/data\\040disk rw,relatime shared:5 - xfs /dev/sdb1 rw\n"
        )
    }

    #[test]
    fn hierarchies_are_found_by_version() {
        let d = tempfile::tempdir().unwrap();
        let mi = mountinfo(d.path());
        let cg = d.path().join("cg");
        assert_eq!(
            find("cpuset", &mi),
            Some(Hierarchy {
                root: cg.join("cpuset"),
                version: Version::V1
            })
        );
        assert_eq!(find("blkio", &mi).unwrap().root, cg.join("blkio"));
        // Only v2, with io and cpuset enabled at its root.
        let v2 = d.path().join("v2");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::write(v2.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        let only_v2 = format!(
            "41 31 0:38 / {} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
            v2.display()
        );
        let h = find("blkio", &only_v2).unwrap();
        assert_eq!((h.root.as_path(), h.version), (v2.as_path(), Version::V2));
        assert_eq!(find("cpuset", &only_v2).unwrap().version, Version::V2);
        // v2 mounted but the controller not in it (this machine: v1 holds them all).
        std::fs::create_dir_all(cg.join("unified")).unwrap();
        std::fs::write(cg.join("unified/cgroup.controllers"), "\n").unwrap();
        let no_io = mi.replace("cgroup cgroup rw,blkio", "cgroup cgroup rw,pids");
        assert_eq!(find("blkio", &no_io), None);
    }

    #[test]
    fn the_device_is_the_longest_mount_and_its_whole_disk() {
        let d = tempfile::tempdir().unwrap();
        let mi = mountinfo(d.path());
        let sys = d.path().join("sys");
        // sysfs: 8:17 is partition sdb1 of disk sdb (8:16); 254:0 a whole disk.
        let sdb = sys.join("devices/pci/block/sdb");
        std::fs::create_dir_all(sdb.join("sdb1")).unwrap();
        std::fs::write(sdb.join("dev"), "8:16\n").unwrap();
        std::fs::write(sdb.join("sdb1/dev"), "8:17\n").unwrap();
        std::fs::write(sdb.join("sdb1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(sdb.join("sdb1"), sys.join("dev/block/8:17")).unwrap();
        let data = d.path().join("data disk");
        std::fs::create_dir_all(data.join("db")).unwrap();
        // An existing directory on the partition, and one not made yet under it.
        assert_eq!(device_of(&data.join("db"), &mi, &sys), Ok((8, 16)));
        assert_eq!(device_of(&data.join("db/new/log"), &mi, &sys), Ok((8, 16)));
        // Elsewhere: the root filesystem's whole disk.
        assert_eq!(device_of(d.path(), &mi, &sys), Ok((254, 0)));
        // tmpfs has no block device: refused, saying why.
        let shm = mi.replace("/dev/shm", &d.path().join("shm").display().to_string());
        std::fs::create_dir_all(d.path().join("shm")).unwrap();
        let e = device_of(&d.path().join("shm/x"), &shm, &sys).unwrap_err();
        assert!(e.contains("no block device") && e.contains("tmpfs"), "{e}");
    }

    /// Sweeps run at once make groups of one tag (each sweep's point and repetition):
    /// each gets its own, and an interrupted run's are still found stale by their pid.
    #[test]
    fn groups_of_one_tag_are_distinct_and_named_by_pid() {
        let d = tempfile::tempdir().unwrap();
        let h = Hierarchy {
            root: d.path().join("cpuset"),
            version: Version::V1,
        };
        std::fs::create_dir_all(&h.root).unwrap();
        let a = h.create("cpuset", "cores-2-1").unwrap();
        let b = h.create("cpuset", "cores-2-1").unwrap();
        assert_ne!(a.path, b.path);
        assert!(a.path.is_dir() && b.path.is_dir());
        let pid = std::process::id().to_string();
        for g in [&a, &b] {
            let name = g.path.file_name().unwrap().to_string_lossy().to_string();
            let rest = name.strip_prefix("oltpscope-").unwrap();
            assert_eq!(rest.split('-').next(), Some(pid.as_str()), "{name}");
            assert!(name.ends_with("-cores-2-1"), "{name}");
        }
        // A dead process's group is removed, ours kept.
        let dead = h.root.join("oltpscope-4194304000-7-cores-1-1");
        std::fs::create_dir(&dead).unwrap();
        h.remove_stale();
        assert!(!dead.exists() && a.path.is_dir());
    }

    #[test]
    fn limits_are_written_in_each_versions_format() {
        let d = tempfile::tempdir().unwrap();
        let v1 = Hierarchy {
            root: d.path().join("blkio"),
            version: Version::V1,
        };
        std::fs::create_dir_all(&v1.root).unwrap();
        let g = v1.create("io", "pt-1").unwrap();
        v1.set_bandwidth(&g, &[(254, 0), (8, 16)], true, 10 << 20)
            .unwrap();
        // A real cgroup file takes one line per write; the fake keeps the last.
        assert_eq!(
            std::fs::read_to_string(g.path.join("blkio.throttle.write_bps_device")).unwrap(),
            "8:16 10485760"
        );
        v1.set_bandwidth(&g, &[(254, 0)], false, 1 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(g.path.join("blkio.throttle.read_bps_device")).unwrap(),
            "254:0 1048576"
        );
        // Lifted: the device's rules removed (a limit of 0), both directions.
        v1.lift_bandwidth(&g, &[(254, 0)]).unwrap();
        for f in [
            "blkio.throttle.write_bps_device",
            "blkio.throttle.read_bps_device",
        ] {
            assert_eq!(std::fs::read_to_string(g.path.join(f)).unwrap(), "254:0 0");
        }
        let gpath = g.path.clone();
        for f in [
            "blkio.throttle.write_bps_device",
            "blkio.throttle.read_bps_device",
        ] {
            std::fs::remove_file(gpath.join(f)).unwrap();
        }
        drop(g);
        assert!(!gpath.exists(), "an empty group is removed when dropped");

        let v2 = Hierarchy {
            root: d.path().join("unified"),
            version: Version::V2,
        };
        std::fs::create_dir_all(&v2.root).unwrap();
        std::fs::write(v2.root.join("cgroup.subtree_control"), "").unwrap();
        std::fs::write(v2.root.join("cpuset.cpus.effective"), "0-3\n").unwrap();
        let g = v2.create("io", "pt-2").unwrap();
        assert_eq!(
            std::fs::read_to_string(v2.root.join("cgroup.subtree_control")).unwrap(),
            "+io"
        );
        v2.set_bandwidth(&g, &[(254, 0)], true, 50 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(g.path.join("io.max")).unwrap(),
            "254:0 wbps=52428800"
        );
        v2.lift_bandwidth(&g, &[(254, 0)]).unwrap();
        assert_eq!(
            std::fs::read_to_string(g.path.join("io.max")).unwrap(),
            "254:0 rbps=max wbps=max"
        );
        v2.set_cores(&g, 2).unwrap();
        assert_eq!(
            std::fs::read_to_string(g.path.join("cpuset.cpus")).unwrap(),
            "0,1"
        );
        let e = v2.set_cores(&g, 5).unwrap_err();
        assert!(e.contains("1 to 4 cores"), "{e}");
        // v1 cpusets need their memory nodes too.
        let c1 = Hierarchy {
            root: d.path().join("cpuset"),
            version: Version::V1,
        };
        std::fs::create_dir_all(&c1.root).unwrap();
        std::fs::write(c1.root.join("cpuset.effective_cpus"), "0-1\n").unwrap();
        std::fs::write(c1.root.join("cpuset.mems"), "0\n").unwrap();
        let g1 = c1.create("cpuset", "pt-3").unwrap();
        c1.set_cores(&g1, 1).unwrap();
        assert_eq!(
            std::fs::read_to_string(g1.path.join("cpuset.mems")).unwrap(),
            "0"
        );
        for g in [&g, &g1] {
            for e in std::fs::read_dir(&g.path).unwrap() {
                std::fs::remove_file(e.unwrap().path()).unwrap();
            }
        }
    }

    #[test]
    fn mountinfo_lines_parse_with_optional_fields_and_escapes() {
        let ms = mounts(
            "50 27 8:17 / /mnt/a\\040b rw,relatime shared:5 master:2 - xfs /dev/sdb1 rw,attr2\nbad line\n",
        );
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].point, PathBuf::from("/mnt/a b"));
        assert_eq!((ms[0].dev, ms[0].fstype.as_str()), ((8, 17), "xfs"));
        assert_eq!(parse_cpu_list("0-3,6\n"), vec![0, 1, 2, 3, 6]);
    }
}
