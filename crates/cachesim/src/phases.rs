//! One traced process's stream holding several measured phases, split into one complete
//! version-1 stream per phase, so that each phase is simulated from scratch (caches,
//! counters, warm-up) as if it had been traced alone.
//!
//! `simulate --steps-team 1,8` loads the database once in its traced child and then
//! measures once per team size, each in a trace window of its own: a phase is the
//! records up to and including its window's TRACE_STOP marker. What a fresh stream
//! would hold but the tracer writes once per process is carried into every later
//! phase's stream: the MAP records so far (the tracer announces an object once), the
//! thread the stream is in (a THREAD record) and each thread's role (a THREAD_ROLE
//! marker after the thread's first THREAD record of the phase, where the tracer writes
//! a role it has not written yet). Each phase's stream ends with an END counting its
//! own instructions; the process's END must count those of all phases, and nothing
//! traced may follow the last phase: a stream with fewer or more phases, or cut short,
//! is an error, never a short figure.

use crate::trace::{self, marker, Reader, Record};
use api::Error;
use std::collections::{BTreeMap, HashSet};
use std::io::{self, Read};

/// Bytes a phase's stream is produced in at a time.
const CHUNK_BYTES: usize = 256 << 10;

/// The source stream and what carries from one phase into the next.
pub struct Phases<R: Read> {
    src: Reader<R>,
    expected: usize,
    /// Phases handed out so far.
    begun: usize,
    /// Every MAP record read so far, encoded.
    maps: Vec<u8>,
    /// Each thread's role as last declared (threads without one are absent).
    roles: BTreeMap<u32, u32>,
    /// The thread of the last THREAD record.
    tid: Option<u32>,
    /// Instructions of the phases that ended.
    instructions: u64,
    /// Why the source is unusable (the first error, kept for every later call).
    failed: Option<String>,
}

/// One phase's stream, readable as a complete version-1 stream.
pub struct Phase<'a, R: Read> {
    p: &'a mut Phases<R>,
    out: Vec<u8>,
    pos: usize,
    /// Its TRACE_STOP and END were produced.
    ended: bool,
    instructions: u64,
    /// Threads whose role this phase's stream has stated.
    stated: HashSet<u32>,
}

fn word(out: &mut Vec<u8>, w: u64) {
    out.extend_from_slice(&w.to_le_bytes());
}

fn encode(rec: &Record) -> Vec<u8> {
    let mut w = trace::Writer::new(Vec::new()).expect("writing to memory");
    w.write(rec).expect("writing to memory");
    w.into_inner().split_off(trace::HEADER_BYTES)
}

impl<R: Read> Phases<R> {
    /// `expected`: the phases the source must hold (at least 1).
    pub fn new(src: Reader<R>, expected: usize) -> Phases<R> {
        assert!(expected >= 1, "a stream of no phase");
        Phases {
            src,
            expected,
            begun: 0,
            maps: Vec::new(),
            roles: BTreeMap::new(),
            tid: None,
            instructions: 0,
            failed: None,
        }
    }

    fn fail(&mut self, what: String) -> Error {
        let e = self.failed.get_or_insert(what);
        Error::Fatal(e.clone())
    }

    /// The next phase's stream. Each must be read to its end (or `drain`ed) before the
    /// next is asked for.
    pub fn next_phase(&mut self) -> Result<Phase<'_, R>, Error> {
        if let Some(e) = &self.failed {
            return Err(Error::Fatal(e.clone()));
        }
        if self.begun == self.expected {
            return Err(Error::Fatal(format!(
                "the trace was split into its {} phases already",
                self.expected
            )));
        }
        self.begun += 1;
        // The header (the source's was read by its reader), and what carries (nothing
        // before the first phase).
        let mut out = Vec::with_capacity(CHUNK_BYTES + 4096);
        out.extend_from_slice(trace::MAGIC);
        out.extend_from_slice(&trace::VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.maps);
        let mut stated = HashSet::new();
        if let Some(tid) = self.tid {
            word(&mut out, 5 << 60 | tid as u64);
            self.state_role(tid, &mut out);
            stated.insert(tid);
        }
        Ok(Phase {
            p: self,
            out,
            pos: 0,
            ended: false,
            instructions: 0,
            stated,
        })
    }

    fn state_role(&self, tid: u32, out: &mut Vec<u8>) {
        if let Some(&role) = self.roles.get(&tid) {
            word(
                out,
                4 << 60 | (marker::THREAD_ROLE as u64) << 48 | role as u64,
            );
        }
    }

    /// After the last phase: the rest of the source holds nothing traced, and its END
    /// counts the instructions of all the phases.
    pub fn finish(mut self) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(Error::Fatal(e.clone()));
        }
        if self.begun < self.expected {
            return Err(self.fail(format!(
                "the trace's phases were not all read ({} of {})",
                self.begun, self.expected
            )));
        }
        loop {
            let Some((w, at)) = self.src.next_word()? else {
                return Err(self.fail("the trace has no END record".into()));
            };
            match w >> 60 {
                0..=3 => {
                    return Err(self.fail(format!(
                        "the trace holds more than its {} phases: a traced record at byte {at} after the last one's end",
                        self.expected
                    )))
                }
                _ => match self.src.decode(w, at)? {
                    Record::Marker { code, .. } if code == marker::TRACE_START => {
                        return Err(self.fail(format!(
                            "the trace holds more than its {} phases (another trace window at byte {at})",
                            self.expected
                        )))
                    }
                    Record::End { total_instructions } => {
                        if total_instructions != self.instructions {
                            return Err(self.fail(format!(
                                "the trace's END counts {total_instructions} instructions, its {} phases {}",
                                self.expected, self.instructions
                            )));
                        }
                        return Ok(());
                    }
                    _ => {}
                },
            }
        }
    }
}

impl<R: Read> Phase<'_, R> {
    /// Reads the source until `out` holds a chunk or the phase has ended.
    fn pump(&mut self) -> Result<(), Error> {
        let p = &mut *self.p;
        while !self.ended && self.out.len() < CHUNK_BYTES {
            let next = match p.src.next_word() {
                Ok(n) => n,
                Err(e) => return Err(p.fail(cut(p.begun, p.expected, &e))),
            };
            let Some((w, at)) = next else {
                return Err(p.fail(format!(
                    "the trace ended inside its phase {} of {}",
                    p.begun, p.expected
                )));
            };
            match w >> 60 {
                0 => {
                    self.instructions += trace::ifetch_fields(w).1 as u64;
                    word(&mut self.out, w);
                }
                1..=3 => word(&mut self.out, w),
                5 => {
                    let tid = w as u32;
                    p.tid = Some(tid);
                    word(&mut self.out, w);
                    if self.stated.insert(tid) && p.begun > 1 {
                        p.state_role(tid, &mut self.out);
                    }
                }
                _ => {
                    let rec = match p.src.decode(w, at) {
                        Ok(r) => r,
                        Err(e) => return Err(p.fail(cut(p.begun, p.expected, &e))),
                    };
                    match rec {
                        Record::Map { .. } => {
                            let bytes = encode(&rec);
                            p.maps.extend_from_slice(&bytes);
                            self.out.extend_from_slice(&bytes);
                        }
                        Record::Marker { code, arg } => {
                            word(&mut self.out, w);
                            if code == marker::THREAD_ROLE {
                                if let Some(tid) = p.tid {
                                    match arg {
                                        0 => p.roles.remove(&tid),
                                        r => p.roles.insert(tid, r),
                                    };
                                }
                            } else if code == marker::TRACE_STOP {
                                self.out.extend_from_slice(&encode(&Record::End {
                                    total_instructions: self.instructions,
                                }));
                                p.instructions += self.instructions;
                                self.ended = true;
                            }
                        }
                        Record::End { .. } => {
                            return Err(p.fail(format!(
                                "the trace ended inside its phase {} of {} (the traced run stopped before that phase's end)",
                                p.begun, p.expected
                            )))
                        }
                        Record::Thread { .. }
                        | Record::IFetch { .. }
                        | Record::Load { .. }
                        | Record::Store { .. }
                        | Record::Modify { .. } => unreachable!("dispatched by kind above"),
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads what is left of the phase (the simulation stopped reading it early).
    pub fn drain(&mut self) -> Result<(), Error> {
        while !self.ended {
            self.out.clear();
            self.pos = 0;
            self.pump()?;
        }
        self.out.clear();
        self.pos = 0;
        Ok(())
    }

    /// The phase's instructions (the END its stream ends with).
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// Why the split failed, if it did (the simulator sees it as a read error).
    pub fn failure(&self) -> Option<&str> {
        self.p.failed.as_deref()
    }
}

fn cut(phase: usize, of: usize, e: &Error) -> String {
    format!("the trace's phase {phase} of {of}: {e}")
}

impl<R: Read> Read for Phase<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.out.len() {
            if self.ended {
                return Ok(0);
            }
            self.out.clear();
            self.pos = 0;
            self.pump().map_err(|e| io::Error::other(e.to_string()))?;
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Writer;

    const START: Record = Record::Marker {
        code: marker::TRACE_START,
        arg: 0,
    };
    const STOP: Record = Record::Marker {
        code: marker::TRACE_STOP,
        arg: 0,
    };

    fn role(r: u32) -> Record {
        Record::Marker {
            code: marker::THREAD_ROLE,
            arg: r,
        }
    }

    fn fetch(addr: u64, ninstr: u8) -> Record {
        Record::IFetch {
            addr,
            ninstr,
            len: ninstr,
        }
    }

    fn map(path: &str) -> Record {
        Record::Map {
            avma: 0x40_0000,
            size: 0x1000,
            bias: 0x40_0000,
            path: path.into(),
        }
    }

    fn encode_all(recs: &[Record]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new()).unwrap();
        for r in recs {
            w.write(r).unwrap();
        }
        w.into_inner()
    }

    /// A process as the tracer writes it: the load untraced (a MAP only), a background
    /// thread's role and the main thread's declared in the first window, then two
    /// windows of worker threads (the second reusing thread 3), then END.
    fn two_phases() -> Vec<Record> {
        vec![
            map("/bin/oltpscope"),
            Record::Thread { tid: 1 },
            role(3),
            START,
            Record::Thread { tid: 2 },
            role(4),
            fetch(0x40_0100, 5),
            Record::Thread { tid: 3 },
            role(1),
            fetch(0x40_0200, 7),
            Record::Store {
                addr: 0x9000,
                size: 8,
            },
            Record::Thread { tid: 1 },
            STOP,
            START,
            map("/lib/libc.so"),
            Record::Thread { tid: 3 },
            role(0),
            role(1),
            fetch(0x40_0300, 11),
            Record::Thread { tid: 2 },
            fetch(0x40_0100, 2),
            Record::Thread { tid: 1 },
            STOP,
            Record::End {
                total_instructions: 25,
            },
        ]
    }

    /// Every phase's records, each read as a stream of its own.
    fn split(bytes: &[u8], n: usize) -> Result<Vec<Vec<Record>>, Error> {
        let mut p = Phases::new(Reader::new(bytes)?, n);
        let mut all = Vec::new();
        for _ in 0..n {
            let mut ph = p.next_phase()?;
            let recs: Vec<Record> = Reader::new(&mut ph)?.collect::<Result<_, _>>()?;
            all.push(recs);
        }
        p.finish()?;
        Ok(all)
    }

    #[test]
    fn each_phase_is_a_complete_stream_with_what_carries() {
        let phases = split(&encode_all(&two_phases()), 2).unwrap();
        let src = two_phases();
        // The first is the source up to its window's end, then its END.
        let mut first = src[..13].to_vec();
        first.push(Record::End {
            total_instructions: 12,
        });
        assert_eq!(phases[0], first);
        // The second starts with the MAP so far, the thread the stream is in and its
        // role; a thread it meets gets its role after its first THREAD record.
        let second = vec![
            map("/bin/oltpscope"),
            Record::Thread { tid: 1 },
            role(3),
            START,
            map("/lib/libc.so"),
            Record::Thread { tid: 3 },
            role(1),
            role(0),
            role(1),
            fetch(0x40_0300, 11),
            Record::Thread { tid: 2 },
            role(4),
            fetch(0x40_0100, 2),
            Record::Thread { tid: 1 },
            STOP,
            Record::End {
                total_instructions: 13,
            },
        ];
        assert_eq!(phases[1], second);
    }

    /// Each phase simulated from the split gives what the phase's records alone give:
    /// nothing of the first phase's caches or counts reaches the second.
    #[test]
    fn a_phase_simulates_as_if_traced_alone() {
        let cfg = crate::Config::preset("athlonxp").unwrap();
        let bytes = encode_all(&two_phases());
        let mut p = Phases::new(Reader::new(&bytes[..]).unwrap(), 2);
        let mut got = Vec::new();
        for _ in 0..2 {
            let mut sim = crate::Simulator::new(cfg.clone()).unwrap();
            let mut ph = p.next_phase().unwrap();
            sim.run(Reader::new(&mut ph).unwrap()).unwrap();
            ph.drain().unwrap();
            got.push(sim.report());
        }
        p.finish().unwrap();
        let alone = |recs: &[Record]| {
            let mut sim = crate::Simulator::new(cfg.clone()).unwrap();
            sim.run(Reader::new(&encode_all(recs)[..]).unwrap())
                .unwrap();
            sim.report()
        };
        let phases = split(&bytes, 2).unwrap();
        for (r, recs) in got.iter().zip(&phases) {
            let a = alone(recs);
            assert_eq!(r.instructions, a.instructions);
            assert_eq!(r.to_text(), a.to_text());
        }
        // The workers' instructions: thread 3's alone in each phase. Threads 1 (role 3)
        // and 2 (role 4) stay background in the second phase, whose records do not
        // declare their roles again.
        assert_eq!((got[0].instructions, got[1].instructions), (7, 11));
        // Fresh caches: the second phase misses on the line the first fetched.
        assert_eq!(got[1].to_text(), alone(&phases[1]).to_text());
    }

    #[test]
    fn short_long_and_cut_streams_are_refused() {
        let good = encode_all(&two_phases());
        let msg = |r: Result<Vec<Vec<Record>>, Error>| match r {
            Err(Error::Fatal(m)) => m,
            other => panic!("expected an error, got {other:?}"),
        };
        // Three phases expected, two present: the END comes inside the third.
        let m = msg(split(&good, 3));
        assert!(m.contains("inside its phase 3 of 3"), "{m}");
        // One expected, two present: the second window is refused.
        let m = msg(split(&good, 1));
        assert!(m.contains("more than its 1 phases"), "{m}");
        // Cut inside the second phase (no END): an error naming the phase.
        let m = msg(split(&good[..good.len() - 40], 2));
        assert!(m.contains("phase 2 of 2"), "{m}");
        // An END that does not count the phases' instructions.
        let mut recs = two_phases();
        *recs.last_mut().unwrap() = Record::End {
            total_instructions: 24,
        };
        let m = msg(split(&encode_all(&recs), 2));
        assert!(
            m.contains("END counts 24 instructions, its 2 phases 25"),
            "{m}"
        );
        // A phase asked for past the expected count.
        let mut p = Phases::new(Reader::new(&good[..]).unwrap(), 1);
        let mut ph = p.next_phase().unwrap();
        ph.drain().unwrap();
        assert_eq!(ph.instructions(), 12);
        assert!(p.next_phase().is_err());
    }
}
