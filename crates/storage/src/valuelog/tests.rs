//! The block codec, the reader's torn-tail/damage decision and the checkpoint file's
//! refusals, on the simulated disk with a small record format of this test's own.

use super::checkpoint::{self as vc, CheckpointFormat, Checkpoints};
use super::*;
use crate::logfile::{Header, HeaderFormat};
use crate::sim::SimStorage;
use crate::Storage;
use std::sync::Arc;

const RECS: RecordFormat = RecordFormat {
    kind_ok: |k, n| k == KIND_PUT || (k == KIND_DELETE && n == 0),
    stamp_error: |s| (s == 0).then(|| "a zero stamp".to_string()),
    counter_of: |s| s >> 8,
    counter: "epoch",
    max_key: 64,
};
const BLKS: BlockFormat = BlockFormat {
    magic: 0x4B4C_4254,
    check_payload: |p, n| RECS.check(p, n),
};
const LOGH: HeaderFormat = HeaderFormat {
    magic: b"TESTVLOG",
    version: 1,
    tag: None,
    label: "log file",
    kind: "log",
    what: "a test log",
    version_hint: "",
    others: &[],
};
const CKH: HeaderFormat = HeaderFormat {
    magic: b"TESTCKPT",
    label: "checkpoint file",
    ..LOGH
};
const CK: CheckpointFormat = CheckpointFormat {
    file: "t.ckpt",
    tmp: "t.ckpt.tmp",
    header: &CKH,
    blocks: &BLKS,
    records: &RECS,
};
const HDR: Header = Header {
    database_id: 7,
    schema: 9,
};

/// A record of a test block: stamp, key, row (None: a delete).
type Rec<'a> = (u64, &'a [u8], Option<&'a [u8]>);
/// A block as the reader handed it out: offset, durable, its records' stamps.
type ReadBlock = (u64, u64, Vec<u64>);

/// A block of `recs` stating `durable`.
fn block(durable: u64, recs: &[Rec<'_>]) -> Vec<u8> {
    let mut b = vec![0u8; BLOCK_HEADER_BYTES];
    for (s, k, r) in recs {
        let kind = if r.is_some() { KIND_PUT } else { KIND_DELETE };
        append_record(&mut b, *s, 3, kind, k, r.unwrap_or(&[]));
    }
    BLKS.seal(&mut b, durable, recs.len() as u32, BLOCK_DATA);
    b
}

fn log_of(blocks: &[Vec<u8>]) -> Vec<u8> {
    let mut f = LOGH.encode(&HDR).to_vec();
    for b in blocks {
        f.extend_from_slice(b);
    }
    f
}

/// Every block the reader hands out (offset, durable, stamps), and its end.
fn read_all(bytes: &[u8]) -> Result<(Vec<ReadBlock>, LogEnd), String> {
    let sim = SimStorage::new(1);
    sim.write_file(Path::new("/d/v.log"), bytes);
    let f = sim.open(Path::new("/d/v.log"), crate::Open::Read).unwrap();
    let mut r = LogReader::new_at(&*f, Path::new("/d/v.log"), &LOGH, &BLKS, 0)?;
    let mut out = Vec::new();
    while let Some(b) = r.next_block()? {
        out.push((b.offset, b.durable, b.records().map(|r| r.stamp).collect()));
    }
    Ok((out, r.end().unwrap()))
}

/// A block's bytes are the value logs' format 32-byte header, byte for byte.
#[test]
fn a_sealed_block_has_the_documented_layout() {
    let b = block(0x0102, &[(0x0300, b"k", Some(b"row"))]);
    assert_eq!(b.len(), 32 + 18 + 1 + 3);
    assert_eq!(le32(&b[0..4]), 0x4B4C_4254);
    assert_eq!(le32(&b[4..8]), 22);
    assert_eq!(le64(&b[8..16]), 0x0102);
    assert_eq!(le32(&b[16..20]), 1);
    assert_eq!(le32(&b[20..24]), BLOCK_DATA);
    assert_eq!(le32(&b[24..28]), 0);
    assert_eq!(le32(&b[28..32]), crc(&[&b[0..28], &b[32..]]));
    assert_eq!(
        &b[32..50],
        b"\x00\x03\0\0\0\0\0\0\x03\0\0\0\x03\0\0\0\x01\x01"
    );
    assert_eq!(RECS.scan(&b[32..]), (1, 3));
}

#[test]
fn the_reader_cuts_only_a_torn_tail() {
    let (a, b, c) = (
        block(1, &[(0x100, b"a", Some(b"1"))]),
        block(2, &[(0x200, b"b", None)]),
        block(3, &[(0x300, b"c", Some(b"3"))]),
    );
    let whole = log_of(&[a.clone(), b.clone(), c.clone()]);
    let (blocks, end) = read_all(&whole).unwrap();
    assert_eq!(blocks.iter().map(|b| b.1).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        end,
        LogEnd {
            valid: whole.len() as u64,
            torn_bytes: 0
        }
    );
    // The last block cut short: a torn tail, the valid log ends before it.
    let torn = &whole[..whole.len() - 2];
    let (blocks, end) = read_all(torn).unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(end.valid, (32 + a.len() + b.len()) as u64);
    assert_eq!(end.torn_bytes, c.len() as u64 - 2);
    // The middle block damaged with a valid block after it: refused, naming both.
    let mut bad = whole.clone();
    bad[32 + a.len() + 40] ^= 1;
    let e = read_all(&bad).unwrap_err();
    let at = 32 + a.len();
    assert!(
        e.contains(&format!(
            "is damaged at byte {at} (checksum mismatch) with a valid block after it at byte {}",
            at + b.len()
        )),
        "{e}"
    );
    // A record the format refuses (a zero stamp) in a block whose checksum is right.
    let z = block(4, &[(0, b"z", Some(b"0"))]);
    let e = read_all(&log_of(&[z, a])).unwrap_err();
    assert!(e.contains("(a zero stamp)"), "{e}");
}

#[test]
fn a_cut_tracker_finds_the_last_boundary_below_the_durable_counter() {
    let mut t = CutTracker::new(5, 32);
    // A block with records up to 7 stating 6: records before 32 are all <= 6.
    assert_eq!(
        t.block_written(7, 100, 6),
        Cut {
            log_from: 100,
            tomb_from: 32,
            durable: 6
        }
    );
    // Then one stating 7: everything before 100 is <= 7.
    assert_eq!(
        t.block_written(7, 200, 7),
        Cut {
            log_from: 200,
            tomb_from: 200,
            durable: 7
        }
    );
    assert_eq!(
        t.block_written(9, 300, 8),
        Cut {
            log_from: 300,
            tomb_from: 200,
            durable: 8
        }
    );
}

/// A checkpoint of two rows from a cut, read back; then its refusals.
#[test]
fn a_checkpoint_is_whole_or_refused() {
    let sim = SimStorage::new(2);
    let st = sim.as_storage();
    let dir = Path::new("/db");
    st.create_dir_all(dir).unwrap();
    let log: Arc<dyn crate::File> = crate::create_durable(&*st, &dir.join("v.log")).unwrap();
    let c = Checkpoints::new(st.clone(), dir.into(), &CK, HDR, log, Some(0), None);
    assert!(
        c.take(None, |_, _| unreachable!()).unwrap().is_none(),
        "no cut: nothing"
    );
    let cut = Cut {
        log_from: 4096 * 3,
        tomb_from: 4096 * 2,
        durable: 4,
    };
    let done = c
        .take(Some(cut), |w, _| {
            w.put(3, b"a", 0x300, b"1")?;
            w.put(3, b"b", 0x500, b"2")?;
            assert_eq!(w.max_counter(), 5);
            Ok(Some(5))
        })
        .unwrap()
        .unwrap();
    assert_eq!(
        done.end,
        vc::End {
            log_from: 4096 * 3,
            tomb_from: 4096 * 2,
            durable: 5,
            rows: 2
        }
    );
    assert_eq!(c.progress().count, 1);
    assert!(!st.exists(&dir.join("t.ckpt.tmp")).unwrap());
    let mut rows = Vec::new();
    let (end, bytes) = vc::read(&*st, dir, &CK, &HDR, |r| {
        rows.push((r.key.to_vec(), r.stamp));
        Ok(())
    })
    .unwrap()
    .unwrap();
    assert_eq!((end, bytes), (done.end, done.bytes));
    assert_eq!(rows, [(b"a".to_vec(), 0x300), (b"b".to_vec(), 0x500)]);
    let good = sim.read_file(&dir.join("t.ckpt")).unwrap();
    let refused = |bytes: &[u8], log: &Header, want: &str| {
        sim.write_file(&dir.join("t.ckpt"), bytes);
        let e = vc::read(&*st, dir, &CK, log, |_| Ok(())).unwrap_err();
        assert!(
            e.contains(want) && e.ends_with("refused, the file is left as it is"),
            "{want}: {e}"
        );
        assert_eq!(
            sim.read_file(&dir.join("t.ckpt")).unwrap(),
            bytes,
            "left as it is"
        );
    };
    let mut flip = good.clone();
    flip[40] ^= 4;
    refused(&flip, &HDR, "is damaged at byte 32 (checksum mismatch)");
    refused(&good[..good.len() - 64], &HDR, "has no end block");
    refused(&good[..good.len() - 1], &HDR, "is damaged at byte");
    let mut more = good.clone();
    more.extend_from_slice(&block(9, &[(0x900, b"c", Some(b"3"))]));
    refused(&more, &HDR, "has bytes after its end block");
    refused(
        &good,
        &Header {
            database_id: 8,
            schema: 9,
        },
        "belongs to another log",
    );
    refused(
        &good,
        &Header {
            database_id: 7,
            schema: 1,
        },
        "was written for another schema",
    );
    // A row above the counter its block states.
    let mut f = CKH.encode(&HDR).to_vec();
    f.extend_from_slice(&block(2, &[(0x300, b"a", Some(b"1"))]));
    refused(&f, &HDR, "holds a row above its epoch");
    // A delete in a checkpoint.
    let mut f = CKH.encode(&HDR).to_vec();
    f.extend_from_slice(&block(2, &[(0x100, b"a", None)]));
    refused(&f, &HDR, "holds a record that is not a row");
}

#[test]
fn a_checkpoint_past_the_end_of_its_log_is_refused() {
    let sim = SimStorage::new(3);
    let bytes = log_of(&[block(1, &[(0x100, b"k", Some(b"row"))])]);
    sim.write_file(Path::new("/d/v.log"), &bytes);
    let f = sim.open(Path::new("/d/v.log"), crate::Open::Read).unwrap();
    let len = bytes.len() as u64;
    let end = |log_from| vc::End {
        log_from,
        tomb_from: log_from - 1,
        durable: 1,
        rows: 0,
    };
    let (ckpt, log) = (Path::new("/d/t.ckpt"), Path::new("/d/v.log"));
    // The log reaches the checkpoint's end (also exactly): replay starts there.
    assert_eq!(end(len).replay_from(ckpt, &*f, log), Ok((len - 1, len)));
    assert_eq!(end(40).replay_from(ckpt, &*f, log), Ok((39, 40)));
    // A log shorter than where the checkpoint continues lost what it relies on.
    let e = end(len + 1).replay_from(ckpt, &*f, log).unwrap_err();
    assert_eq!(
        e,
        format!("checkpoint file /d/t.ckpt continues at byte {} of log file /d/v.log, which is {len} bytes long: refused, the files are left as they are", len + 1)
    );
}
