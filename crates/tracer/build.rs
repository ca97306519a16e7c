//! Builds the oltptrace valgrind tool (c/ot_main.c) against the tool-building headers and
//! static libraries of the installed valgrind, the way valgrind builds its own tools.
//!
//! Must never fail the build: oltpscope has to build on machines without valgrind. When
//! the tool cannot be built, the reason goes into `OLTPTRACE_BUILD` and
//! `tracer::prepare()` reports it at run time.
//!
//! Outputs (rustc-env): `OLTPTRACE_BUILD` = "ok" or the reason; `OLTPTRACE_TOOL` = path of
//! the tool (an empty file when not built, so `include_bytes!` always works);
//! `OLTPTRACE_VALGRIND_VERSION` = the version of the headers; `OLTPTRACE_TESTPROG` = a
//! small static C program for the tests (empty path when not built).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TOOL_FILE: &str = "oltptrace-amd64-linux";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=c");
    for var in [
        "CC",
        "OLTPTRACE_VALGRIND_INCLUDE",
        "OLTPTRACE_VALGRIND_LIBDIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let tool = out.join(TOOL_FILE);
    let testprog = out.join("oltptrace-testprog");
    let _ = std::fs::remove_file(&tool);
    let _ = std::fs::remove_file(&testprog);

    let (status, version) = match build_tool(&out, &tool) {
        Ok(version) => ("ok".to_string(), version),
        Err(reason) => {
            println!("cargo:warning=oltptrace (the valgrind tool) not built: {reason}");
            std::fs::write(&tool, b"").expect("OUT_DIR is writable");
            (reason, String::new())
        }
    };
    let testprog_path = if status == "ok" && build_testprog(&testprog).is_ok() {
        testprog.display().to_string()
    } else {
        String::new()
    };
    println!("cargo:rustc-env=OLTPTRACE_BUILD={status}");
    println!("cargo:rustc-env=OLTPTRACE_TOOL={}", tool.display());
    println!("cargo:rustc-env=OLTPTRACE_VALGRIND_VERSION={version}");
    println!("cargo:rustc-env=OLTPTRACE_TESTPROG={testprog_path}");
}

fn compiler() -> String {
    env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Returns the valgrind version the tool was built against.
fn build_tool(out: &Path, tool: &Path) -> Result<String, String> {
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if arch != "x86_64" || os != "linux" {
        return Err(format!(
            "oltptrace supports amd64 Linux only (target is {arch}-{os})"
        ));
    }
    let include = find_dir(
        "OLTPTRACE_VALGRIND_INCLUDE",
        &["/usr/include/valgrind", "/usr/local/include/valgrind"],
        "pub_tool_basics.h",
    )
    .ok_or(
        "valgrind's tool headers (pub_tool_basics.h) are missing: apt-get install -y valgrind",
    )?;
    let libdir = find_dir(
        "OLTPTRACE_VALGRIND_LIBDIR",
        &[
            "/usr/lib/x86_64-linux-gnu/valgrind",
            "/usr/lib/valgrind",
            "/usr/libexec/valgrind",
            "/usr/local/lib/valgrind",
            "/usr/local/libexec/valgrind",
        ],
        "libcoregrind-amd64-linux.a",
    )
    .ok_or(
        "valgrind's tool libraries (libcoregrind-amd64-linux.a) are missing: \
         apt-get install -y valgrind",
    )?;
    let version = header_version(&include.join("config.h"))
        .ok_or("valgrind's config.h has no VERSION: unsupported valgrind installation")?;

    let src = Path::new("c/ot_main.c");
    let obj = out.join("ot_main.o");
    let mut cc = Command::new(compiler());
    cc.args(["-c", "-O2", "-g", "-m64", "-std=gnu99"])
        .arg(format!("-I{}", include.display()))
        // The defines and flags valgrind's own tools are compiled with.
        .args([
            "-DVGA_amd64=1",
            "-DVGO_linux=1",
            "-DVGP_amd64_linux=1",
            "-DVGPV_amd64_linux_vanilla=1",
            "-fno-strict-aliasing",
            "-fno-builtin",
            "-fno-stack-protector",
            "-fomit-frame-pointer",
            "-fno-pie",
            "-Wall",
            "-Wno-unused-parameter",
            "-Wmissing-prototypes",
            "-Wshadow",
            "-Wpointer-arith",
            "-Wstrict-prototypes",
        ])
        .arg(src)
        .arg("-o")
        .arg(&obj);
    run(&mut cc, "compiling c/ot_main.c")?;

    let mut ld = Command::new(compiler());
    ld.args([
        "-m64",
        "-static",
        "-nodefaultlibs",
        "-nostartfiles",
        "-u",
        "_start",
        "-Wl,--build-id=none",
        // Valgrind loads tools at this address (valt_load_address in valgrind.pc).
        "-Wl,-Ttext-segment=0x58000000",
        "-o",
    ])
    .arg(tool)
    .arg(&obj)
    .arg(libdir.join("libcoregrind-amd64-linux.a"))
    .arg(libdir.join("libvex-amd64-linux.a"))
    .arg(libdir.join("libgcc-sup-amd64-linux.a"))
    .arg("-lgcc");
    run(&mut ld, "linking the oltptrace tool")?;
    Ok(version)
}

/// A static C program with a fixed amount of work, whose instruction count the tests
/// compare with cachegrind's (static: no dynamic loader, so nothing depends on paths).
fn build_testprog(out: &Path) -> Result<(), String> {
    let mut cc = Command::new(compiler());
    cc.args(["-O1", "-static", "-o"])
        .arg(out)
        .arg("c/testprog.c");
    run(&mut cc, "building c/testprog.c").map_err(|e| {
        println!("cargo:warning=oltptrace test program not built: {e}");
        e
    })
}

fn find_dir(var: &str, candidates: &[&str], marker: &str) -> Option<PathBuf> {
    let from_env = env::var_os(var).map(PathBuf::from);
    from_env
        .into_iter()
        .chain(candidates.iter().map(PathBuf::from))
        .find(|d| d.join(marker).is_file())
}

fn header_version(config_h: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config_h).ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("#define VERSION ")?;
        Some(rest.trim().trim_matches('"').to_string())
    })
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    match cmd.output() {
        Err(e) => Err(format!("{what}: cannot run {:?}: {e}", cmd.get_program())),
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => {
            let stderr = String::from_utf8_lossy(&o.stderr);
            let first = stderr
                .lines()
                .find(|l| l.contains("error"))
                .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
                .unwrap_or("no diagnostics")
                .trim();
            Err(format!("{what} failed ({}): {first}", o.status))
        }
    }
}
