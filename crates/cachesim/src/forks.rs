//! One trace stream from the frames of several processes (`oltptrace --follow-forks`).
//!
//! Owns the reading of the multiplexed stream: frames of `u64 (pid << 32 | bytes)` and
//! that many bytes of the process's own version-1 stream (each process's stream starts
//! with the header, as a fresh trace would). Every process's records are re-emitted in
//! one version-1 stream, in the order the frames arrived, with each (process, thread)
//! given a thread id of its own (1, 2, ... in order of appearance) so the simulator
//! sees several threads; the processes' END records become one END with their sum.
//! Processes that never traced (the postmaster, the background processes) add nothing
//! but their MAP records, and are counted.
//!
//! Must never lose or reorder a process's records: a record split between two frames
//! waits for the rest of it.

use crate::trace::Record;
use std::collections::HashMap;
use std::io::{self, BufWriter, Read, Write};

/// Bytes of merged stream gathered before one write: a write per 8-byte record made
/// the kernel's pipe the bottleneck of a PostgreSQL simulation (issue 41: 57 s of
/// system time in a 43 s run).
const OUT_BUF_BYTES: usize = 1 << 20;

const MAGIC: u64 = 0x3145_4341_5254_534F; // "OSTRACE1"

/// What the merged stream held.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ForkStats {
    /// Processes that wrote a stream (the postmaster and everything it forked).
    pub processes: usize,
    /// Processes that traced instructions (the backends that served the workers).
    pub traced_processes: usize,
    /// Instructions each traced process counted (its END record), by pid.
    pub instructions_by_pid: Vec<(u32, u64)>,
    /// Traced processes whose stream ended without END (killed).
    pub without_end: usize,
    /// Whether the reader of the merged stream stopped early (the rest was drained).
    pub drained: bool,
}

#[derive(Default)]
struct Proc {
    pending: Vec<u8>,
    header: bool,
    tid: Option<u32>,
    traced: bool,
    end: Option<u64>,
}

struct Merger<W: Write> {
    out: Option<BufWriter<W>>,
    procs: HashMap<u32, Proc>,
    order: Vec<u32>,
    /// (pid, local tid) -> merged tid.
    tids: HashMap<(u32, u32), u32>,
    /// The (pid, local tid) of the last record emitted, and its merged tid.
    last: Option<((u32, u32), u32)>,
    written_tid: u32,
    drained: bool,
}

impl<W: Write> Merger<W> {
    fn emit(&mut self, bytes: &[u8]) {
        if let Some(o) = self.out.as_mut() {
            if o.write_all(bytes).is_err() {
                // The simulator has what it needs: keep reading (the traced server must
                // not block on a full pipe), write nothing more.
                self.out = None;
                self.drained = true;
            }
        }
    }

    fn switch_to(&mut self, pid: u32, tid: u32) {
        // Most records come from the thread of the record before: no hash lookup.
        let g = match self.last {
            Some((k, g)) if k == (pid, tid) => g,
            _ => {
                let n = self.tids.len() as u32 + 1;
                let g = *self.tids.entry((pid, tid)).or_insert(n);
                self.last = Some(((pid, tid), g));
                g
            }
        };
        if g != self.written_tid {
            self.written_tid = g;
            self.emit(&((5u64 << 60) | g as u64).to_le_bytes());
        }
    }

    /// Parses and re-emits every complete record of `pid`'s pending bytes.
    fn drain(&mut self, pid: u32) -> io::Result<()> {
        let mut p = self.procs.remove(&pid).expect("known process");
        let mut at = 0usize;
        let word = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if !p.header {
            if p.pending.len() < 16 {
                self.procs.insert(pid, p);
                return Ok(());
            }
            if word(&p.pending, 0) != MAGIC || word(&p.pending, 8) != 1 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("process {pid}'s trace does not start with a version-1 header"),
                ));
            }
            p.header = true;
            at = 16;
        }
        while p.pending.len() - at >= 8 {
            let w = word(&p.pending, at);
            let need = match w >> 60 {
                6 => 32 + ((w & 0xffff) as usize).div_ceil(8) * 8,
                7 => 16,
                _ => 8,
            };
            if p.pending.len() - at < need {
                break;
            }
            match w >> 60 {
                5 => p.tid = Some((w & 0xffff_ffff) as u32),
                7 => p.end = Some(word(&p.pending, at + 8)),
                6 => {
                    let bytes = p.pending[at..at + need].to_vec();
                    self.emit(&bytes);
                }
                k => {
                    if k == 0 {
                        p.traced = true;
                    }
                    self.switch_to(pid, p.tid.unwrap_or(1));
                    self.emit(&w.to_le_bytes());
                }
            }
            at += need;
        }
        p.pending.drain(..at);
        self.procs.insert(pid, p);
        Ok(())
    }
}

/// Reads the frames of `input` to its end and writes one version-1 stream to `out`
/// (which may be dropped early: the rest is read and discarded).
pub fn merge<R: Read, W: Write>(mut input: R, out: W) -> io::Result<ForkStats> {
    let mut m = Merger {
        out: Some(BufWriter::with_capacity(OUT_BUF_BYTES, out)),
        procs: HashMap::new(),
        order: Vec::new(),
        tids: HashMap::new(),
        last: None,
        written_tid: 0,
        drained: false,
    };
    let mut header = Vec::with_capacity(16);
    header.extend_from_slice(&MAGIC.to_le_bytes());
    header.extend_from_slice(&1u64.to_le_bytes());
    m.emit(&header);
    let mut frame = vec![0u8; 4096];
    loop {
        let mut h = [0u8; 8];
        match read_full(&mut input, &mut h)? {
            0 => break,
            8 => {}
            n => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the trace ends inside a frame header ({n} of 8 bytes)"),
                ))
            }
        }
        let h = u64::from_le_bytes(h);
        let (pid, len) = ((h >> 32) as u32, (h & 0xffff_ffff) as usize);
        if len == 0 || len > 4088 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a frame of {len} bytes from process {pid} (at most 4088)"),
            ));
        }
        if read_full(&mut input, &mut frame[..len])? != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the trace ends inside a frame",
            ));
        }
        let proc = m.procs.entry(pid).or_insert_with(|| {
            m.order.push(pid);
            Proc::default()
        });
        proc.pending.extend_from_slice(&frame[..len]);
        m.drain(pid)?;
    }
    let mut stats = ForkStats {
        processes: m.order.len(),
        ..ForkStats::default()
    };
    let mut total = 0;
    for pid in &m.order {
        let p = &m.procs[pid];
        if p.traced {
            stats.traced_processes += 1;
            match p.end {
                Some(n) => stats.instructions_by_pid.push((*pid, n)),
                None => stats.without_end += 1,
            }
        }
        total += p.end.unwrap_or(0);
    }
    let mut end = Vec::with_capacity(16);
    end.extend_from_slice(&(7u64 << 60).to_le_bytes());
    end.extend_from_slice(&total.to_le_bytes());
    m.emit(&end);
    if let Some(mut o) = m.out.take() {
        if o.flush().is_err() {
            m.drained = true;
        }
    }
    stats.drained = m.drained;
    Ok(stats)
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Frames `records` of process `pid` as `oltptrace --follow-forks` would (tests).
pub fn frame(pid: u32, records: &[Record]) -> Vec<u8> {
    let mut w = crate::trace::Writer::new(Vec::new()).expect("writing to memory");
    for r in records {
        w.write(r).expect("writing to memory");
    }
    let bytes = w.into_inner();
    let mut out = Vec::new();
    // Odd frame sizes split records between frames, as the tool's 4088-byte frames do.
    for chunk in bytes.chunks(24) {
        out.extend_from_slice(&(((pid as u64) << 32) | chunk.len() as u64).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Reader;

    #[test]
    fn processes_become_threads_and_their_ends_one_end() {
        let map = Record::Map {
            avma: 0x1000,
            size: 0x2000,
            bias: 0,
            path: "/usr/lib/postgresql/15/bin/postgres".into(),
        };
        let a = frame(
            100,
            &[
                map.clone(),
                Record::End {
                    total_instructions: 0,
                },
            ],
        );
        let b = frame(
            200,
            &[
                map.clone(),
                Record::Thread { tid: 1 },
                Record::Marker { code: 5, arg: 0 },
                Record::IFetch {
                    addr: 0x1100,
                    ninstr: 3,
                    len: 9,
                },
                Record::Marker { code: 4, arg: 0 },
                Record::End {
                    total_instructions: 3,
                },
            ],
        );
        let c = frame(
            300,
            &[
                Record::Thread { tid: 1 },
                Record::IFetch {
                    addr: 0x1200,
                    ninstr: 2,
                    len: 5,
                },
                Record::End {
                    total_instructions: 2,
                },
            ],
        );
        // Interleave b's and c's frames.
        let mut input = a.clone();
        let (hb, hc) = (b.len() / 2, c.len() / 2);
        let cut = |v: &[u8], at: usize| {
            // A frame boundary at or after `at`.
            let mut i = 0;
            while i < at {
                let len = u64::from_le_bytes(v[i..i + 8].try_into().unwrap()) & 0xffff_ffff;
                i += 8 + len as usize;
            }
            i
        };
        let (sb, sc) = (cut(&b, hb), cut(&c, hc));
        input.extend_from_slice(&b[..sb]);
        input.extend_from_slice(&c[..sc]);
        input.extend_from_slice(&b[sb..]);
        input.extend_from_slice(&c[sc..]);
        let mut out = Vec::new();
        let stats = merge(&input[..], &mut out).unwrap();
        assert_eq!(stats.processes, 3);
        assert_eq!(stats.traced_processes, 2);
        assert_eq!(stats.instructions_by_pid, vec![(200, 3), (300, 2)]);
        let recs: Vec<Record> = Reader::new(&out[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let ifetch_threads: Vec<u32> = recs
            .iter()
            .scan(0, |t, r| {
                if let Record::Thread { tid } = r {
                    *t = *tid;
                }
                Some((*t, r.clone()))
            })
            .filter(|(_, r)| matches!(r, Record::IFetch { .. }))
            .map(|(t, _)| t)
            .collect();
        assert_eq!(ifetch_threads, vec![1, 2], "each process its own thread");
        assert!(recs.contains(&Record::Marker { code: 4, arg: 0 }));
        assert_eq!(
            recs.last(),
            Some(&Record::End {
                total_instructions: 5
            })
        );
    }

    /// The merged stream leaves in large writes, not one per record: each write to
    /// the simulator's pipe is a system call.
    #[test]
    fn the_merged_stream_is_written_in_large_chunks() {
        struct Counting(Vec<u8>, usize);
        impl Write for Counting {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.1 += 1;
                self.0.extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut recs = vec![Record::Thread { tid: 1 }];
        for i in 0..20_000u64 {
            recs.push(Record::IFetch {
                addr: 0x1000 + (i % 64) * 32,
                ninstr: 2,
                len: 8,
            });
        }
        recs.push(Record::End {
            total_instructions: 40_000,
        });
        let mut out = Counting(Vec::new(), 0);
        merge(&frame(9, &recs)[..], &mut out).unwrap();
        let merged: Vec<Record> = Reader::new(&out.0[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(merged.len(), recs.len());
        assert_eq!(
            &merged[1..],
            &recs[1..],
            "same records after the first THREAD"
        );
        assert!(out.1 <= 2, "{} writes for {} records", out.1, recs.len());
    }

    #[test]
    fn damaged_frames_are_errors_and_a_gone_reader_is_drained() {
        let mut bad = frame(1, &[Record::Thread { tid: 1 }]);
        bad.truncate(bad.len() - 3);
        assert!(merge(&bad[..], Vec::new()).is_err());
        let huge = ((1u64 << 32) | 5000).to_le_bytes();
        assert!(merge(&huge[..], Vec::new()).is_err());
        struct Gone;
        impl Write for Gone {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let ok = frame(
            7,
            &[
                Record::Thread { tid: 1 },
                Record::End {
                    total_instructions: 0,
                },
            ],
        );
        assert!(merge(&ok[..], Gone).unwrap().drained);
    }
}
