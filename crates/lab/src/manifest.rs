//! The manifest of a results directory: how the results were made (configuration,
//! command line, build, machine), so a directory can be trusted, joined and rerun.

use sha2::{Digest, Sha256};

/// Bumped whenever a results file changes meaning or layout (docs/results.md).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Build {
    /// `git rev-parse HEAD` when the binary was built, or "unknown".
    pub git_commit: String,
    /// Cargo profile: "release", "debug".
    pub profile: String,
    pub allocator: String,
    pub version: String,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MachineInfo {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    pub os: String,
    pub hostname: String,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub schema_version: u32,
    /// "run" or "simulate".
    pub kind: String,
    /// The command line exactly as given (arguments as the program received them).
    pub command_line: Vec<String>,
    /// The full configuration the command ran with.
    pub config: serde_json::Value,
    /// SHA-256 of the configuration's canonical JSON (keys sorted, no spaces): equal
    /// configurations have equal hashes, whatever the command line's spelling.
    pub config_hash: String,
    pub build: Build,
    pub machine: MachineInfo,
    pub created_unix_s: u64,
    /// The files of the directory (relative paths), written before this manifest.
    pub files: Vec<String>,
}

/// The command line manifests record when it is not the process's own: `--file`
/// expands to the file's options, and the manifest keeps the expanded line, so it repeats
/// the run without the file.
static COMMAND_LINE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Record `line` as this process's command line for manifests (the first call wins).
pub fn set_command_line(line: Vec<String>) {
    let _ = COMMAND_LINE.set(line);
}

impl Manifest {
    /// A manifest for this process: `allocator` is the binary's global allocator.
    pub fn new(kind: &str, config: serde_json::Value, allocator: &str) -> Manifest {
        let m = driver::machine::describe();
        Manifest {
            schema_version: SCHEMA_VERSION,
            kind: kind.to_string(),
            command_line: COMMAND_LINE
                .get()
                .cloned()
                .unwrap_or_else(|| std::env::args().collect()),
            config_hash: config_hash(&config),
            config,
            build: Build {
                git_commit: env!("OLTPSCOPE_GIT_COMMIT").to_string(),
                profile: env!("OLTPSCOPE_PROFILE").to_string(),
                allocator: allocator.to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
            },
            machine: MachineInfo {
                cpu_model: m.cpu_model,
                cores: m.cores,
                memory_bytes: m.memory_bytes,
                kernel: m.kernel,
                os: m.os,
                hostname: m.hostname,
            },
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            files: Vec::new(),
        }
    }
}

/// `v` as JSON with every object's keys sorted, whatever map serde_json was built with.
pub fn canonical_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(v)).expect("JSON values serialize")
}

/// The configuration's hash, as lowercase hex.
pub fn config_hash(config: &serde_json::Value) -> String {
    let digest = Sha256::digest(canonical_json(config).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_sees_every_value() {
        let a = json!({"threads": 2, "workload": {"keys": 10, "rows": 1}});
        let b = json!({"workload": {"rows": 1, "keys": 10}, "threads": 2});
        let c = json!({"threads": 2, "workload": {"keys": 10, "rows": 2}});
        assert_eq!(config_hash(&a), config_hash(&b));
        assert_ne!(config_hash(&a), config_hash(&c));
        assert_eq!(config_hash(&a).len(), 64);
        // The SHA-256 of a known text, so the hash is the standard one.
        assert_eq!(
            config_hash(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn the_manifest_names_build_machine_and_schema() {
        let m = Manifest::new("run", json!({"threads": 1}), "mimalloc");
        assert_eq!(m.schema_version, SCHEMA_VERSION);
        assert_eq!(m.build.allocator, "mimalloc");
        assert!(!m.build.git_commit.is_empty());
        assert!(["debug", "release"].contains(&m.build.profile.as_str()));
        assert!(m.machine.cores >= 1);
        assert!(!m.command_line.is_empty());
        let v = serde_json::to_value(&m).unwrap();
        for key in [
            "schema_version",
            "kind",
            "command_line",
            "config",
            "config_hash",
            "build",
            "machine",
            "files",
        ] {
            assert!(v.get(key).is_some(), "manifest lacks {key}");
        }
        let back: Manifest = serde_json::from_value(v).unwrap();
        assert_eq!(back.config_hash, m.config_hash);
    }
}
