//! `--pg-url`: a connection string as libpq reads one, either `key=value` pairs
//! (`host=/tmp port=5432 dbname=x`, values in single quotes with backslash escapes) or
//! a URI (`postgresql://user:pw@host:5432,host2/db?sslmode=disable`, percent-encoded).
//!
//! Parsed here rather than by the `postgres` crate, whose `Config` came with tokio and
//! its async stack for the sake of this one parser (issue 39: they were about 6% of a
//! first build). Only the keys oltpscope's connections use are accepted; any other is
//! refused by name, so a setting is never silently ignored.

use std::path::PathBuf;
use std::time::Duration;

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// The directory of its Unix socket (`.s.PGSQL.<port>` in it).
    Unix(PathBuf),
    /// A host name or address.
    Tcp(String),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Unix(d) => write!(f, "socket directory {}", d.display()),
            Host::Tcp(h) => write!(f, "host {h}"),
        }
    }
}

/// A parsed connection string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnInfo {
    /// Tried in order; the first that accepts a connection is used.
    pub hosts: Vec<Host>,
    /// None, one for every host, or one per host.
    pub ports: Vec<u16>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub dbname: Option<String>,
    pub options: Option<String>,
    pub application_name: Option<String>,
    pub connect_timeout: Option<Duration>,
}

impl ConnInfo {
    /// The port of the `i`th host (libpq's rule: one port for all, or one each).
    pub fn port(&self, i: usize) -> u16 {
        match self.ports.len() {
            0 => 5432,
            1 => self.ports[0],
            _ => self.ports.get(i).copied().unwrap_or(5432),
        }
    }
}

/// Parse `s` (either form). Errors name what is wrong, without the password.
pub fn parse(s: &str) -> Result<ConnInfo, String> {
    let t = s.trim();
    let pairs = if let Some(rest) = t
        .strip_prefix("postgresql://")
        .or_else(|| t.strip_prefix("postgres://"))
    {
        uri_pairs(rest)?
    } else {
        keyword_pairs(t)?
    };
    let mut c = ConnInfo::default();
    for (k, v) in pairs {
        set(&mut c, &k, v)?;
    }
    if !c.ports.is_empty() && c.ports.len() != 1 && c.ports.len() != c.hosts.len() {
        return Err(format!(
            "{} ports given for {} hosts (give one, or one per host)",
            c.ports.len(),
            c.hosts.len()
        ));
    }
    Ok(c)
}

fn set(c: &mut ConnInfo, key: &str, v: String) -> Result<(), String> {
    match key {
        "host" | "hostaddr" => {
            c.hosts = v
                .split(',')
                .filter(|h| !h.is_empty())
                .map(|h| {
                    if h.starts_with('/') {
                        Host::Unix(PathBuf::from(h))
                    } else {
                        Host::Tcp(h.to_string())
                    }
                })
                .collect()
        }
        "port" => {
            c.ports = v
                .split(',')
                .map(|p| {
                    p.parse::<u16>()
                        .ok()
                        .filter(|&p| p > 0)
                        .ok_or_else(|| format!("port {p:?} is not a port number"))
                })
                .collect::<Result<_, _>>()?
        }
        "user" => c.user = Some(v),
        "password" => c.password = Some(v),
        "dbname" => c.dbname = Some(v),
        "options" => c.options = Some(v),
        "application_name" => c.application_name = Some(v),
        "connect_timeout" => {
            let secs: u64 = v
                .parse()
                .map_err(|_| format!("connect_timeout {v:?} is not a number of seconds"))?;
            // libpq: zero (or none) waits for ever.
            c.connect_timeout = (secs > 0).then(|| Duration::from_secs(secs));
        }
        "sslmode" => match v.as_str() {
            "disable" | "allow" | "prefer" => {}
            "require" | "verify-ca" | "verify-full" => {
                return Err(format!("sslmode={v}: this client speaks no TLS"))
            }
            _ => return Err(format!("sslmode {v:?} is not one of libpq's modes")),
        },
        _ => {
            return Err(format!(
                "connection option {key:?} is not one oltpscope uses (host, hostaddr, port, user, password, dbname, options, application_name, connect_timeout, sslmode)"
            ))
        }
    }
    Ok(())
}

/// `key=value` pairs separated by white space; a value may be quoted with `'`, inside
/// which (and outside) a backslash takes the next character as it is.
fn keyword_pairs(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    loop {
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        if it.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(c) = it.next_if(|&c| c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        if it.next() != Some('=') {
            return Err(format!("{key:?} has no value (the form is key=value)"));
        }
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        let mut val = String::new();
        if it.next_if_eq(&'\'').is_some() {
            loop {
                match it.next() {
                    None => return Err(format!("the value of {key} has no closing quote")),
                    Some('\'') => break,
                    Some('\\') => val.extend(it.next()),
                    Some(c) => val.push(c),
                }
            }
        } else {
            while let Some(c) = it.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    val.extend(it.next());
                } else {
                    val.push(c);
                }
            }
        }
        out.push((key, val));
    }
}

/// The part of a URI after `postgresql://`: `[user[:password]@][host[:port][,...]][/dbname][?k=v&...]`.
fn uri_pairs(s: &str) -> Result<Vec<(String, String)>, String> {
    let (main, query) = s.split_once('?').unwrap_or((s, ""));
    let (authority, db) = main.split_once('/').unwrap_or((main, ""));
    let mut out = Vec::new();
    let hostspec = match authority.rsplit_once('@') {
        Some((userinfo, h)) => {
            let (u, p) = match userinfo.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (userinfo, None),
            };
            if !u.is_empty() {
                out.push(("user".to_string(), decode(u)?));
            }
            if let Some(p) = p {
                out.push(("password".to_string(), decode(p)?));
            }
            h
        }
        None => authority,
    };
    let (mut hosts, mut ports) = (Vec::new(), Vec::new());
    for part in hostspec.split(',').filter(|p| !p.is_empty()) {
        // `[::1]:5432`: the brackets keep an address's colons from the port's.
        let (h, p) = if let Some(rest) = part.strip_prefix('[') {
            let (h, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("{part:?}: an address opened with [ is not closed"))?;
            (h, after.strip_prefix(':'))
        } else {
            match part.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (part, None),
            }
        };
        hosts.push(decode(h)?);
        ports.push(p.unwrap_or(""));
    }
    if !hosts.is_empty() {
        out.push(("host".to_string(), hosts.join(",")));
    }
    if ports.iter().any(|p| !p.is_empty()) {
        let ports: Vec<&str> = ports
            .iter()
            .map(|p| if p.is_empty() { "5432" } else { p })
            .collect();
        out.push(("port".to_string(), ports.join(",")));
    }
    if !db.is_empty() {
        out.push(("dbname".to_string(), decode(db)?));
    }
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("URI parameter {kv:?} has no value (the form is key=value)"))?;
        out.push((decode(k)?, decode(v)?));
    }
    Ok(out)
}

/// Percent-decoding (`%2Ftmp` is `/tmp`, a socket directory given as a URI's host).
fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{s:?}: a % not followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?}: percent-encoding that is not UTF-8"))
}
