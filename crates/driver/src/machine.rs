//! What machine a run happened on: CPU model, cores, memory, OS (read from /proc).

#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub memory_available_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub hostname: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn meminfo_kib(field: &str) -> u64 {
    read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Memory the system could give a new process now (MemAvailable), in bytes.
pub fn available_memory_bytes() -> u64 {
    meminfo_kib("MemAvailable:") * 1024
}

pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

pub fn describe() -> Machine {
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let os = read("/etc/os-release")
        .lines()
        .find(|l| l.starts_with("PRETTY_NAME="))
        .map(|l| {
            l.trim_start_matches("PRETTY_NAME=")
                .trim_matches('"')
                .to_string()
        })
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    Machine {
        cpu_model,
        cores: cores(),
        memory_bytes: meminfo_kib("MemTotal:") * 1024,
        memory_available_bytes: available_memory_bytes(),
        os,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
    }
}
