//! Errors of transactional operations: a retryable conflict, a user abort, a duplicate
//! key, or a real error. The driver retries conflicts with the same inputs, counts user
//! aborts, and stops on anything else.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Concurrency-control abort (validation failure, deadlock victim, lock timeout).
    /// The transaction has no effect; retrying it with the same inputs is correct.
    Conflict(&'static str),
    /// The transaction logic asked to roll back (e.g. TPC-C New-Order's unused item).
    UserAbort,
    /// `insert` of a key that is already present (and committed, or written by this
    /// transaction).
    Duplicate,
    /// Anything else: I/O error, corruption, misuse. Not retryable.
    Fatal(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn fatal(msg: impl Into<String>) -> Self {
        Error::Fatal(msg.into())
    }
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Conflict(why) => write!(f, "conflict abort ({why})"),
            Error::UserAbort => write!(f, "user abort"),
            Error::Duplicate => write!(f, "duplicate key"),
            Error::Fatal(msg) => write!(f, "{msg}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Fatal(e.to_string())
    }
}
