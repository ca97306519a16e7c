//! A worker's connection: PostgreSQL's frontend/backend protocol over a blocking socket,
//! the messages built and parsed by `postgres-protocol` and the values by
//! `postgres-types` (the crates `tokio_postgres` is made of), so that a round trip is
//! one `write` of every request it carries and blocking `read`s of their answers, as
//! libpq (and so pgbench) does it.
//!
//! Why not `tokio_postgres` on a current-thread runtime (this module until 2026-11-29):
//! a runtime, a connection task and channels between it and the client for every
//! request, and an `epoll_wait` park before each read. Profiled on TPC-B (1 client, read
//! committed, WAL wait off, `perf record -e cpu-clock`), that runtime's code was 10% of
//! the worker's CPU, and the same run went from 817 to 1,247 txn/s with this module
//! (docs/design/sql-adapters.md, "The client's own CPU"). The blocking `postgres` crate
//! wraps the same runtime and cannot pipeline. The admin connection (DDL, ANALYZE,
//! COPY, counts) is one of these too, and the connection string is parsed by
//! [`crate::conninfo`]: no async runtime is built into oltpscope.
//!
//! Each statement is sent as Bind, Execute and Sync (every statement its own implicit
//! sync point, as `tokio_postgres` sends them): after a failed statement in a
//! transaction block the server still runs the ones behind it, which fail (or, for
//! COMMIT, roll back), so the answers always line up with the requests.

use crate::conninfo::{ConnInfo, Host};
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use postgres_types::{FromSql, ToSql, Type};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// An error of the connection or of a statement: the server's SQLSTATE and message,
/// or (no code) what went wrong on the client's side.
#[derive(Debug, Clone)]
pub struct Error {
    code: Option<String>,
    msg: String,
}

impl Error {
    fn client(msg: impl Into<String>) -> Error {
        Error {
            code: None,
            msg: msg.into(),
        }
    }

    /// The server's SQLSTATE, if the server reported the error.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    pub fn message(&self) -> &str {
        &self.msg
    }

    fn from_fields(mut fields: postgres_protocol::message::backend::ErrorFields<'_>) -> Error {
        let (mut code, mut msg) = (None, String::new());
        loop {
            match fields.next() {
                Ok(Some(f)) => match f.type_() {
                    b'C' => code = Some(String::from_utf8_lossy(f.value_bytes()).into_owned()),
                    b'M' => msg = String::from_utf8_lossy(f.value_bytes()).into_owned(),
                    _ => {}
                },
                Ok(None) => break,
                Err(e) => {
                    msg = format!("unreadable error response: {e}");
                    break;
                }
            }
        }
        Error { code, msg }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(c) => write!(f, "{c}: {}", self.msg),
            None => f.write_str(&self.msg),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::client(format!("connection: {e}"))
    }
}

/// A statement prepared on one connection: its server-side name and the types of its
/// parameters and result columns (cheap to clone).
#[derive(Clone)]
pub struct Statement(Arc<StatementInner>);

struct StatementInner {
    name: String,
    params: Vec<Type>,
    cols: Vec<Type>,
}

/// What a statement sent back: its rows (none for a write without `RETURNING`; all the
/// rows' fields in one buffer) and the count of rows it touched (a write's; a select's
/// rows).
pub struct Sent {
    data: Vec<u8>,
    /// Per row and column, the field's range in `data` (`None`: NULL).
    cells: Vec<Option<(u32, u32)>>,
    cols: Option<Statement>,
    pub count: u64,
}

impl Sent {
    fn new() -> Sent {
        Sent {
            data: Vec::new(),
            cells: Vec::new(),
            cols: None,
            count: 0,
        }
    }

    /// Columns per row.
    pub fn width(&self) -> usize {
        self.cols.as_ref().map_or(0, |s| s.0.cols.len())
    }

    pub fn len(&self) -> usize {
        match self.width() {
            0 => 0,
            w => self.cells.len() / w,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn rows(&self) -> impl Iterator<Item = RowRef<'_>> {
        (0..self.len()).map(move |i| RowRef { sent: self, i })
    }

    pub fn first(&self) -> Option<RowRef<'_>> {
        self.rows().next()
    }
}

/// One row of a [`Sent`].
#[derive(Clone, Copy)]
pub struct RowRef<'s> {
    sent: &'s Sent,
    i: usize,
}

impl<'s> RowRef<'s> {
    /// Column `c` as `T` (`T` must accept the column's type: no conversion).
    pub fn try_get<T: FromSql<'s>>(&self, c: usize) -> Result<T, Error> {
        let s = self.sent;
        let w = s.width();
        let ty = s
            .cols
            .as_ref()
            .and_then(|st| st.0.cols.get(c))
            .ok_or_else(|| Error::client(format!("no column {c}")))?;
        if !T::accepts(ty) {
            return Err(Error::client(format!(
                "column {c} is a {ty}, not a {}",
                std::any::type_name::<T>()
            )));
        }
        let raw = s.cells[self.i * w + c].map(|(a, b)| &s.data[a as usize..b as usize]);
        T::from_sql_nullable(ty, raw).map_err(|e| Error::client(format!("column {c}: {e}")))
    }
}

enum Sock {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Sock {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Sock::Unix(s) => s.read(buf),
            Sock::Tcp(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sock::Unix(s) => s.write_all(buf),
            Sock::Tcp(s) => s.write_all(buf),
        }
    }
}

/// Bytes read from the socket at a time (TPC-C's largest answers are a few kB).
const READ_CHUNK: usize = 64 * 1024;
/// COPY data goes in messages of at most this size.
const COPY_CHUNK: usize = 1 << 20;

pub struct Conn {
    sock: Sock,
    out: BytesMut,
    inb: BytesMut,
    chunk: Box<[u8]>,
    /// Why the connection is unusable (a broken socket, answers out of step).
    broken: Option<String>,
    next_statement: u64,
}

impl Conn {
    pub fn connect(url: &str) -> std::result::Result<Conn, String> {
        let fail = |e: &dyn std::fmt::Display| format!("postgres: cannot connect ({url}): {e}");
        let cfg = crate::conninfo::parse(url).map_err(|e| fail(&e))?;
        let sock = open_socket(&cfg).map_err(|e| fail(&e))?;
        let mut c = Conn {
            sock,
            out: BytesMut::with_capacity(8192),
            inb: BytesMut::with_capacity(READ_CHUNK),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            broken: None,
            next_statement: 0,
        };
        c.startup(&cfg).map_err(|e| fail(&e))?;
        Ok(c)
    }

    /// The startup message, authentication, and the server's parameters up to its first
    /// ReadyForQuery.
    fn startup(&mut self, cfg: &ConnInfo) -> Result<(), Error> {
        let env_user = std::env::var("USER").unwrap_or_else(|_| "postgres".into());
        let user = cfg.user.clone().unwrap_or(env_user);
        let mut params = vec![
            ("client_encoding", "UTF8"),
            ("user", user.as_str()),
            ("database", cfg.dbname.as_deref().unwrap_or(&user)),
        ];
        if let Some(o) = &cfg.options {
            params.push(("options", o));
        }
        if let Some(a) = &cfg.application_name {
            params.push(("application_name", a));
        }
        self.out.clear();
        frontend::startup_message(params.iter().copied(), &mut self.out)?;
        self.send_out()?;
        let password = || {
            cfg.password
                .as_deref()
                .map(str::as_bytes)
                .ok_or_else(|| Error::client("the server asks for a password and none was given"))
        };
        let mut scram = None;
        loop {
            self.out.clear();
            match self.read_msg()? {
                Message::AuthenticationOk => break,
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password()?, &mut self.out)?;
                }
                Message::AuthenticationMd5Password(b) => {
                    let h = md5_hash(user.as_bytes(), password()?, b.salt());
                    frontend::password_message(h.as_bytes(), &mut self.out)?;
                }
                Message::AuthenticationSasl(b) => {
                    let mut mechs = b.mechanisms();
                    let mut scram_offered = false;
                    while let Some(m) = mechs.next()? {
                        scram_offered |= m == SCRAM_SHA_256;
                    }
                    if !scram_offered {
                        return Err(Error::client(
                            "the server offers no SASL mechanism known here",
                        ));
                    }
                    let s = ScramSha256::new(password()?, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.out)?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(b) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| Error::client("SASL continuation before its start"))?;
                    s.update(b.data())?;
                    frontend::sasl_response(s.message(), &mut self.out)?;
                }
                Message::AuthenticationSaslFinal(b) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| Error::client("SASL end before its start"))?;
                    s.finish(b.data())?;
                }
                Message::ErrorResponse(b) => return Err(Error::from_fields(b.fields())),
                _ => return Err(Error::client("an authentication method not supported here")),
            }
            if !self.out.is_empty() {
                self.send_out()?;
            }
        }
        self.finish(None, &mut None)
    }

    fn send_out(&mut self) -> Result<(), Error> {
        let r = self.sock.write_all(&self.out);
        self.out.clear();
        r.map_err(|e| self.break_with(e.into()))
    }

    /// Mark the connection unusable (its answers would no longer line up).
    fn break_with(&mut self, e: Error) -> Error {
        self.broken.get_or_insert_with(|| e.msg.clone());
        e
    }

    fn check(&self) -> Result<(), Error> {
        match &self.broken {
            Some(why) => Err(Error::client(format!("connection broken earlier: {why}"))),
            None => Ok(()),
        }
    }

    fn read_msg(&mut self) -> Result<Message, Error> {
        loop {
            match Message::parse(&mut self.inb) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => return Err(self.break_with(e.into())),
            }
            let n = loop {
                match self.sock.read(&mut self.chunk) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(self.break_with(e.into())),
                }
            };
            if n == 0 {
                return Err(self.break_with(Error::client("the server closed the connection")));
            }
            self.inb.extend_from_slice(&self.chunk[..n]);
        }
    }

    /// Read the answers of one request up to its ReadyForQuery: rows into `rows` (when
    /// given), the count into it, and the statement's error (the first) into `err`.
    fn finish(
        &mut self,
        mut rows: Option<&mut Sent>,
        err: &mut Option<Error>,
    ) -> Result<(), Error> {
        loop {
            match self.read_msg()? {
                Message::ReadyForQuery(_) => return Ok(()),
                Message::DataRow(b) => {
                    if let Some(s) = rows.as_deref_mut() {
                        let base = s.data.len() as u32;
                        let buf = b.buffer();
                        s.data.extend_from_slice(buf);
                        let mut r = b.ranges();
                        while let Some(f) = r.next()? {
                            s.cells
                                .push(f.map(|f| (base + f.start as u32, base + f.end as u32)));
                        }
                    }
                }
                Message::CommandComplete(b) => {
                    if let Some(s) = rows.as_deref_mut() {
                        // "UPDATE 3", "INSERT 0 3", "SELECT 3", "BEGIN": the last word's number.
                        let tag = b.tag()?;
                        let n = tag.rsplit(' ').next().and_then(|n| n.parse().ok());
                        s.count = n.unwrap_or(s.len() as u64);
                    }
                }
                Message::ErrorResponse(b) => {
                    let e = Error::from_fields(b.fields());
                    err.get_or_insert(e);
                }
                Message::BindComplete
                | Message::ParseComplete
                | Message::CloseComplete
                | Message::EmptyQueryResponse
                | Message::NoData
                | Message::RowDescription(_)
                | Message::NoticeResponse(_)
                | Message::ParameterStatus(_)
                | Message::NotificationResponse(_)
                | Message::BackendKeyData(_) => {}
                _ => {
                    return Err(self.break_with(Error::client(
                        "an answer this client did not ask for (protocol out of step)",
                    )))
                }
            }
        }
    }

    pub fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        self.check()?;
        let name = format!("s{}", self.next_statement);
        self.next_statement += 1;
        self.out.clear();
        frontend::parse(&name, sql, std::iter::empty(), &mut self.out)?;
        frontend::describe(b'S', &name, &mut self.out)?;
        frontend::sync(&mut self.out);
        self.send_out()?;
        let (mut params, mut cols, mut err) = (Vec::new(), Vec::new(), None);
        loop {
            match self.read_msg()? {
                Message::ReadyForQuery(_) => break,
                Message::ParameterDescription(b) => {
                    let mut it = b.parameters();
                    while let Some(oid) = it.next()? {
                        params.push(oid);
                    }
                }
                Message::RowDescription(b) => {
                    let mut it = b.fields();
                    while let Some(f) = it.next()? {
                        cols.push(f.type_oid());
                    }
                }
                Message::ErrorResponse(b) => {
                    err.get_or_insert(Error::from_fields(b.fields()));
                }
                _ => {}
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        let ty = |oid: u32| {
            Type::from_oid(oid).ok_or_else(|| {
                Error::client(format!(
                    "a type this client does not know (oid {oid}) in {sql}"
                ))
            })
        };
        Ok(Statement(Arc::new(StatementInner {
            name,
            params: params.into_iter().map(ty).collect::<Result<_, _>>()?,
            cols: cols.into_iter().map(ty).collect::<Result<_, _>>()?,
        })))
    }

    /// Run `sql` (several statements, no parameters) with the simple query protocol.
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.check()?;
        self.out.clear();
        frontend::query(sql, &mut self.out)?;
        self.send_out()?;
        let mut err = None;
        self.finish(None, &mut err)?;
        err.map_or(Ok(()), Err)
    }

    /// Bind, Execute and Sync of `st` with `params` into the output buffer.
    fn put(&mut self, st: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<(), Error> {
        let s = &st.0;
        if params.len() != s.params.len() {
            return Err(Error::client(format!(
                "{} parameters given to a statement of {}",
                params.len(),
                s.params.len()
            )));
        }
        let r = frontend::bind(
            "",
            &s.name,
            std::iter::once(1),
            params.iter().zip(&s.params),
            |(p, ty), buf| {
                // The two crates' IsNull: the same answer.
                Ok(match p.to_sql_checked(ty, buf)? {
                    postgres_types::IsNull::Yes => postgres_protocol::IsNull::Yes,
                    postgres_types::IsNull::No => postgres_protocol::IsNull::No,
                })
            },
            std::iter::once(1),
            &mut self.out,
        );
        match r {
            Ok(()) => {}
            Err(frontend::BindError::Conversion(e)) => {
                return Err(Error::client(format!("a parameter: {e}")))
            }
            Err(frontend::BindError::Serialization(e)) => return Err(e.into()),
        }
        frontend::execute("", 0, &mut self.out)?;
        frontend::sync(&mut self.out);
        Ok(())
    }

    /// Run `st`, with the statements `before` (with their parameters) sent ahead of it
    /// and `after` behind it, in one write. The server runs them in order whatever
    /// fails: after a failed statement in a transaction a COMMIT `after` rolls back.
    /// The first error is returned.
    pub fn run(
        &mut self,
        before: &[(&Statement, &[&(dyn ToSql + Sync)])],
        st: &Statement,
        params: &[&(dyn ToSql + Sync)],
        after: Option<&Statement>,
    ) -> Result<Sent, Error> {
        self.check()?;
        self.out.clear();
        for (s, p) in before {
            self.put(s, p)?;
        }
        self.put(st, params)?;
        if let Some(a) = after {
            self.put(a, &[])?;
        }
        self.send_out()?;
        let mut err = None;
        for _ in before {
            self.finish(None, &mut err)?;
        }
        let mut sent = Sent::new();
        sent.cols = Some(st.clone());
        self.finish(Some(&mut sent), &mut err)?;
        if after.is_some() {
            self.finish(None, &mut err)?;
        }
        match err {
            Some(e) => Err(e),
            None => Ok(sent),
        }
    }

    /// COPY `data` (COPY's text format) with the statement `sql` (`COPY ... FROM STDIN`).
    pub fn copy_in(&mut self, sql: &str, data: Vec<u8>) -> Result<u64, Error> {
        self.check()?;
        self.out.clear();
        frontend::query(sql, &mut self.out)?;
        self.send_out()?;
        let mut err = None;
        match self.read_msg()? {
            Message::CopyInResponse(_) => {}
            Message::ErrorResponse(b) => {
                err = Some(Error::from_fields(b.fields()));
                self.finish(None, &mut None)?;
                return Err(err.expect("set above"));
            }
            _ => {
                return Err(self.break_with(Error::client("COPY: no CopyInResponse")));
            }
        }
        for chunk in data.chunks(COPY_CHUNK) {
            frontend::CopyData::new(chunk)?.write(&mut self.out);
            self.send_out()?;
        }
        frontend::copy_done(&mut self.out);
        self.send_out()?;
        let mut sent = Sent::new();
        self.finish(Some(&mut sent), &mut err)?;
        err.map_or(Ok(sent.count), Err)
    }
}

fn open_socket(cfg: &ConnInfo) -> Result<Sock, String> {
    if cfg.hosts.is_empty() {
        return Err("no host given (host=DIR for a Unix socket, host=NAME for TCP)".into());
    }
    let mut last = String::new();
    for (i, h) in cfg.hosts.iter().enumerate() {
        let port = cfg.port(i);
        let r = match h {
            Host::Unix(dir) => {
                UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).map(Sock::Unix)
            }
            Host::Tcp(name) => tcp(name, port, cfg.connect_timeout).and_then(|s| {
                // Requests are written whole: nothing to gain from Nagle's delay.
                s.set_nodelay(true)?;
                Ok(Sock::Tcp(s))
            }),
        };
        match r {
            Ok(s) => return Ok(s),
            Err(e) => last = format!("{h} port {port}: {e}"),
        }
    }
    Err(last)
}

/// A TCP connection to the first of `name`'s addresses that answers, within `timeout`
/// per address when given.
fn tcp(name: &str, port: u16, timeout: Option<std::time::Duration>) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let Some(t) = timeout else {
        return TcpStream::connect((name, port));
    };
    let mut last = None;
    for a in (name, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&a, t) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("the name has no address")))
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Terminate, so the server ends the session at once (best effort).
        if self.broken.is_none() {
            self.out.clear();
            frontend::terminate(&mut self.out);
            let _ = self.sock.write_all(&self.out);
        }
    }
}
