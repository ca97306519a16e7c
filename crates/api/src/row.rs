//! Fixed-layout rows: each table's row is a `#[repr(C)]` plain-old-data struct of a fixed
//! size, stored by engines as bytes. No per-column typing, no heap allocation per row.
//! Rows are copied in and out (engines need not keep them aligned).

pub use bytemuck::{Pod, Zeroable};

/// Read a row of type `T` from engine bytes (any alignment).
#[inline]
pub fn read<T: Pod>(bytes: &[u8]) -> T {
    bytemuck::pod_read_unaligned(bytes)
}

/// The `F` at byte `offset` of a row (`offset_of!`), without copying the rest of it.
#[inline]
pub fn field<F: Pod>(row: &[u8], offset: usize) -> F {
    read(&row[offset..offset + std::mem::size_of::<F>()])
}

/// Write a row of type `T` into engine bytes.
#[inline]
pub fn write<T: Pod>(row: &T, bytes: &mut [u8]) {
    bytes.copy_from_slice(bytemuck::bytes_of(row));
}

#[inline]
pub fn bytes<T: Pod>(row: &T) -> &[u8] {
    bytemuck::bytes_of(row)
}

/// Store `s` in a fixed-width string column, zero-padded (cut if longer).
pub fn set_str(dst: &mut [u8], s: &[u8]) {
    let n = s.len().min(dst.len());
    dst[..n].copy_from_slice(&s[..n]);
    dst[n..].fill(0);
}

/// The string stored in a fixed-width column (up to the first zero byte).
pub fn get_str(src: &[u8]) -> &[u8] {
    let n = src.iter().position(|&b| b == 0).unwrap_or(src.len());
    &src[..n]
}
