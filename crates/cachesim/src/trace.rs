//! Reader (and, for tests and tools, writer) of the oltpscope trace stream, version 1
//! (contract: docs/design/cachesim.md, "Trace stream").
//!
//! Owns decoding and checking of the byte stream. Must never panic on a damaged stream:
//! a bad magic, version, record kind, field or a truncation is an `api::Error::Fatal`
//! naming the byte offset.

use api::Error;
use std::io::{self, Read, Write};
use std::path::PathBuf;

pub const MAGIC: &[u8; 8] = b"OSTRACE1";
pub const VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 16;

const ADDR_MASK: u64 = (1 << 48) - 1;
/// Runs start in one aligned 32-byte block: at most 32 instructions, 31 + 15 bytes.
pub const MAX_RUN_INSTRS: u8 = 32;
pub const MAX_RUN_BYTES: u8 = 46;
const READ_BUF_BYTES: usize = 1 << 20;

/// MARKER codes (the `probe` crate's client-request codes).
pub mod marker {
    pub const OP_BEGIN: u8 = probe::client::OP_BEGIN as u8;
    pub const OP_END: u8 = probe::client::OP_END as u8;
    pub const TXN_BEGIN: u8 = probe::client::TXN_BEGIN as u8;
    pub const TXN_END: u8 = probe::client::TXN_END as u8;
    pub const TRACE_START: u8 = probe::client::TRACE_START as u8;
    pub const TRACE_STOP: u8 = probe::client::TRACE_STOP as u8;
    pub const THREAD_ROLE: u8 = probe::client::THREAD_ROLE as u8;
    pub const CTX_POINT: u8 = probe::client::CTX_POINT as u8;
    pub const CONTEXT: u8 = probe::client::CONTEXT as u8;
    pub const BTREE_LEVEL: u8 = probe::client::BTREE_LEVEL as u8;
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A run of `ninstr` instructions covering `len` bytes from `addr`.
    IFetch {
        addr: u64,
        ninstr: u8,
        len: u8,
    },
    Load {
        addr: u64,
        size: u16,
    },
    Store {
        addr: u64,
        size: u16,
    },
    Modify {
        addr: u64,
        size: u16,
    },
    Marker {
        code: u8,
        arg: u32,
    },
    Thread {
        tid: u32,
    },
    /// An object's text mapping: runtime address - `bias` = ELF symbol address.
    Map {
        avma: u64,
        size: u64,
        bias: i64,
        path: PathBuf,
    },
    /// Total instructions the tracer saw while tracing.
    End {
        total_instructions: u64,
    },
}

/// Iterates the records of a stream; yields `End` last, then `None`. A stream that stops
/// without `End` yields an error (the tracer died or the writer was cut off).
pub struct Reader<R: Read> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    /// Stream offset of buf[0].
    base: u64,
    done: bool,
}

fn corrupt(offset: u64, what: impl std::fmt::Display) -> Error {
    Error::Fatal(format!("trace stream corrupt at byte {offset}: {what}"))
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    pub fn new(inner: R) -> Result<Reader<R>, Error> {
        let mut r = Reader {
            inner,
            buf: vec![0u8; READ_BUF_BYTES].into_boxed_slice(),
            pos: 0,
            len: 0,
            base: 0,
            done: false,
        };
        let mut h = [0u8; HEADER_BYTES];
        let got = r.read_bytes(&mut h)?;
        if got < 8 || &h[..8] != MAGIC {
            return Err(Error::Fatal(format!(
                "not an oltpscope trace stream (expected magic OSTRACE1, got {:?})",
                String::from_utf8_lossy(&h[..got.min(8)])
            )));
        }
        if got < HEADER_BYTES {
            return Err(Error::Fatal(
                "trace stream truncated inside its 16-byte header".into(),
            ));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
        let flags = u32::from_le_bytes(h[12..16].try_into().unwrap());
        if version != VERSION {
            return Err(Error::Fatal(format!(
                "trace stream version {version} is not supported (this reader knows {VERSION})"
            )));
        }
        if flags != 0 {
            return Err(corrupt(12, format!("header flags {flags:#x}, expected 0")));
        }
        Ok(r)
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn fill(&mut self) -> Result<(), Error> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.base += self.pos as u64;
            self.len -= self.pos;
            self.pos = 0;
        }
        loop {
            match self.inner.read(&mut self.buf[self.len..]) {
                Ok(n) => {
                    self.len += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(Error::Fatal(format!(
                        "reading trace stream at byte {}: {e}",
                        self.offset()
                    )))
                }
            }
        }
    }

    /// Copies up to out.len() bytes; fewer only at end of stream.
    fn read_bytes(&mut self, out: &mut [u8]) -> Result<usize, Error> {
        let mut n = 0;
        while n < out.len() {
            if self.pos == self.len {
                self.fill()?;
                if self.len == 0 {
                    break;
                }
            }
            let k = (self.len - self.pos).min(out.len() - n);
            out[n..n + k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
            n += k;
        }
        Ok(n)
    }

    /// Next word; Ok(None) at a clean end of stream.
    #[inline]
    fn word(&mut self) -> Result<Option<u64>, Error> {
        if self.len - self.pos >= 8 {
            let w = u64::from_le_bytes(self.buf[self.pos..self.pos + 8].try_into().unwrap());
            self.pos += 8;
            return Ok(Some(w));
        }
        let at = self.offset();
        let mut b = [0u8; 8];
        match self.read_bytes(&mut b)? {
            0 => Ok(None),
            8 => Ok(Some(u64::from_le_bytes(b))),
            n => Err(Error::Fatal(format!(
                "trace stream truncated at byte {at}: {n} of 8 bytes of a record"
            ))),
        }
    }

    fn payload_word(&mut self, what: &str) -> Result<u64, Error> {
        let at = self.offset();
        self.word()?.ok_or_else(|| {
            Error::Fatal(format!("trace stream truncated at byte {at} inside {what}"))
        })
    }

    /// Decodes the next record; Ok(None) after END.
    pub fn next_record(&mut self) -> Result<Option<Record>, Error> {
        let Some((w, at)) = self.next_word()? else {
            return Ok(None);
        };
        self.decode(w, at).map(Some)
    }

    /// The first word of the next record and its offset; Ok(None) after END; an error at
    /// an end of stream without END.
    #[inline]
    pub(crate) fn next_word(&mut self) -> Result<Option<(u64, u64)>, Error> {
        if self.done {
            return Ok(None);
        }
        let at = self.offset();
        match self.word()? {
            Some(w) => Ok(Some((w, at))),
            None => {
                self.done = true;
                Err(Error::Fatal(format!(
                    "trace stream ended at byte {at} without an END record (tracer stopped \
                     early?)"
                )))
            }
        }
    }

    /// Decodes the record starting with word `w` at offset `at` (reading its payload).
    pub(crate) fn decode(&mut self, w: u64, at: u64) -> Result<Record, Error> {
        let addr = w & ADDR_MASK;
        let size = ((w >> 48) & 0xfff) as u16;
        let rec = match w >> 60 {
            0 => {
                let (addr, ninstr, len) = ifetch_fields(w);
                check_ifetch(ninstr, len, at)?;
                Record::IFetch { addr, ninstr, len }
            }
            1 => Record::Load { addr, size },
            2 => Record::Store { addr, size },
            3 => Record::Modify { addr, size },
            4 => Record::Marker {
                code: ((w >> 48) & 0xff) as u8,
                arg: w as u32,
            },
            5 => Record::Thread { tid: w as u32 },
            6 => {
                let name_len = (w & 0xffff) as usize;
                let avma = self.payload_word("a MAP record")?;
                let size = self.payload_word("a MAP record")?;
                let bias = self.payload_word("a MAP record")? as i64;
                let padded = name_len.div_ceil(8) * 8;
                let mut name = vec![0u8; padded];
                let pat = self.offset();
                if self.read_bytes(&mut name)? < padded {
                    return Err(Error::Fatal(format!(
                        "trace stream truncated at byte {pat} inside a MAP record's path"
                    )));
                }
                name.truncate(name_len);
                use std::os::unix::ffi::OsStringExt;
                let path = PathBuf::from(std::ffi::OsString::from_vec(name));
                Record::Map {
                    avma,
                    size,
                    bias,
                    path,
                }
            }
            7 => {
                let total_instructions = self.payload_word("the END record")?;
                self.done = true;
                Record::End { total_instructions }
            }
            k => return Err(corrupt(at, format!("unknown record kind {k}"))),
        };
        Ok(rec)
    }
}

/// (addr, ninstr, len) of an IFETCH word.
#[inline]
pub(crate) fn ifetch_fields(w: u64) -> (u64, u8, u8) {
    (
        w & ADDR_MASK,
        ((w >> 48) & 0x3f) as u8,
        ((w >> 54) & 0x3f) as u8,
    )
}

#[inline]
pub(crate) fn check_ifetch(ninstr: u8, len: u8, at: u64) -> Result<(), Error> {
    if ninstr == 0 || ninstr > MAX_RUN_INSTRS || len == 0 || len > MAX_RUN_BYTES {
        return Err(corrupt(
            at,
            format!("IFETCH with {ninstr} instructions, {len} bytes"),
        ));
    }
    Ok(())
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Encodes records (for tests, adapters and tools that produce streams).
pub struct Writer<W: Write> {
    out: W,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W) -> io::Result<Writer<W>> {
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        Ok(Writer { out })
    }

    fn word(&mut self, w: u64) -> io::Result<()> {
        self.out.write_all(&w.to_le_bytes())
    }

    /// Panics on a record that the format cannot hold (a programmer error of the caller).
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        let acc = |kind: u64, addr: u64, size: u16| {
            assert!(
                addr <= ADDR_MASK && size <= 0xfff,
                "access {addr:#x}+{size} not encodable"
            );
            kind << 60 | (size as u64) << 48 | addr
        };
        match r {
            Record::IFetch { addr, ninstr, len } => {
                assert!(
                    *addr <= ADDR_MASK
                        && (1..=MAX_RUN_INSTRS).contains(ninstr)
                        && (1..=MAX_RUN_BYTES).contains(len),
                    "IFETCH {addr:#x} {ninstr} {len} not encodable"
                );
                self.word((*len as u64) << 54 | (*ninstr as u64) << 48 | addr)
            }
            Record::Load { addr, size } => self.word(acc(1, *addr, *size)),
            Record::Store { addr, size } => self.word(acc(2, *addr, *size)),
            Record::Modify { addr, size } => self.word(acc(3, *addr, *size)),
            Record::Marker { code, arg } => self.word(4 << 60 | (*code as u64) << 48 | *arg as u64),
            Record::Thread { tid } => self.word(5 << 60 | *tid as u64),
            Record::Map {
                avma,
                size,
                bias,
                path,
            } => {
                use std::os::unix::ffi::OsStrExt;
                let name = path.as_os_str().as_bytes();
                assert!(name.len() <= 0xffff, "MAP path longer than 65535 bytes");
                self.word(6 << 60 | name.len() as u64)?;
                self.word(*avma)?;
                self.word(*size)?;
                self.word(*bias as u64)?;
                self.out.write_all(name)?;
                let pad = name.len().div_ceil(8) * 8 - name.len();
                self.out.write_all(&[0u8; 8][..pad])
            }
            Record::End { total_instructions } => {
                self.word(7 << 60)?;
                self.word(*total_instructions)
            }
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Record> {
        vec![
            Record::Thread { tid: 1 },
            Record::Map {
                avma: 0x108000,
                size: 4096,
                bias: 0x108000,
                path: "/bin/x".into(),
            },
            Record::Marker {
                code: marker::TRACE_START,
                arg: 0,
            },
            Record::IFetch {
                addr: 0x1234,
                ninstr: 3,
                len: 11,
            },
            Record::Load {
                addr: 0xffff_ffff_ffff,
                size: 8,
            },
            Record::Store {
                addr: 0x10,
                size: 4095,
            },
            Record::Modify {
                addr: 0x20,
                size: 1,
            },
            Record::Marker {
                code: marker::OP_BEGIN,
                arg: 4,
            },
            Record::End {
                total_instructions: 3,
            },
        ]
    }

    fn encode(recs: &[Record]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new()).unwrap();
        for r in recs {
            w.write(r).unwrap();
        }
        w.into_inner()
    }

    fn err_of(bytes: &[u8]) -> String {
        match Reader::new(bytes) {
            Err(Error::Fatal(m)) => m,
            Err(e) => panic!("unexpected error kind {e:?}"),
            Ok(r) => match r.collect::<Result<Vec<_>, _>>() {
                Err(Error::Fatal(m)) => m,
                other => panic!("expected an error, got {other:?}"),
            },
        }
    }

    #[test]
    fn round_trip() {
        let recs = sample();
        let got: Vec<Record> = Reader::new(&encode(&recs)[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, recs);
    }

    #[test]
    fn damaged_streams_are_clear_errors() {
        let good = encode(&sample());
        assert!(err_of(b"GARBAGE!\x01\0\0\0\0\0\0\0").contains("expected magic OSTRACE1"));
        assert!(err_of(b"").contains("not an oltpscope trace"));
        assert!(err_of(&good[..12]).contains("truncated inside its 16-byte header"));
        let mut v2 = good.clone();
        v2[8] = 2;
        assert!(err_of(&v2).contains("version 2 is not supported"));
        // Cut inside a record, inside a MAP path, and at a record boundary before END.
        assert!(err_of(&good[..good.len() - 3]).contains("truncated"));
        assert!(err_of(&good[..16 + 8 + 8 * 4 + 2]).contains("MAP record's path"));
        assert!(err_of(&good[..good.len() - 16]).contains("without an END record"));
        let mut bad_kind = good.clone();
        bad_kind[16 + 7] = 0x90;
        assert!(err_of(&bad_kind).contains("unknown record kind 9"));
        let mut bad_run = encode(&[Record::IFetch {
            addr: 1,
            ninstr: 1,
            len: 1,
        }]);
        bad_run[16 + 6] = 0; // ninstr = 0
        assert!(err_of(&bad_run).contains("IFETCH with 0 instructions"));
    }
}
