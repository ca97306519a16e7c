//! The values the selftest's `clmul` mode prints: PCLMULQDQ and CRC32 over a fixed
//! sequence. Included by the selftest binary (run under the tool) and by the test that
//! computes them natively, so both run the same code.

/// PCLMULQDQ and CRC32 results over a xorshift sequence.
///
/// # Safety
/// The CPU must have PCLMULQDQ and SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,sse4.2")]
pub unsafe fn clmul_values() -> Vec<u64> {
    use std::arch::x86_64::*;
    let mut out = Vec::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let y = x.rotate_left(29) ^ 0xDEAD_BEEF;
        let (a, b) = (
            _mm_set_epi64x(y as i64, x as i64),
            _mm_set_epi64x(x as i64, y as i64),
        );
        for p in [
            _mm_clmulepi64_si128(a, b, 0x00),
            _mm_clmulepi64_si128(a, b, 0x11),
            _mm_clmulepi64_si128(a, b, 0x01),
        ] {
            out.push(_mm_cvtsi128_si64(p) as u64);
            out.push(_mm_extract_epi64(p, 1) as u64);
        }
        let c = x as u32;
        out.push(_mm_crc32_u8(c, y as u8) as u64);
        out.push(_mm_crc32_u16(c, y as u16) as u64);
        out.push(_mm_crc32_u32(c, y as u32) as u64);
        out.push(_mm_crc32_u64(c as u64, y));
    }
    out
}
