//! Blocks that httparse parses whole (a header block, a trailer section):
//! gathering one that socket reads split, and finding where a malformed one
//! goes wrong.

use super::MAX_BLOCK_BYTES;

/// Parses a block that ends with a LF in place when `data` holds all of it,
/// and gathers it in `partial` when it is split across reads. Returns the
/// bytes of `data` used and, once the block is complete, what `parse` made
/// of it. `parse` gets the block from its start and returns its length and
/// value, or None while it is incomplete. A block longer than
/// [`MAX_BLOCK_BYTES`] is the error `too_large`.
///
/// `partial` is cleared, never shrunk, so that no allocation happens per
/// block once it has grown.
pub(super) fn gather<T, E>(
    partial: &mut Vec<u8>,
    data: &[u8],
    too_large: E,
    parse: impl FnOnce(&[u8]) -> Result<Option<(usize, T)>, E>,
) -> Result<(usize, Option<T>), E> {
    if partial.is_empty() {
        return match parse(data)? {
            Some((length, _)) if length > MAX_BLOCK_BYTES => Err(too_large),
            Some((length, value)) => Ok((length, Some(value))),
            None if data.len() > MAX_BLOCK_BYTES => Err(too_large),
            None => {
                partial.extend_from_slice(data);
                Ok((data.len(), None))
            }
        };
    }
    let held = partial.len();
    // One byte past the limit is enough to tell the block is too large.
    let new = &data[..data.len().min((MAX_BLOCK_BYTES + 1).saturating_sub(held))];
    partial.extend_from_slice(new);
    // Only a LF can complete the block: parsing again without one would let
    // a peer that trickles bytes cost quadratic time.
    if new.contains(&b'\n') {
        if let Some((length, value)) = parse(partial)? {
            if length > MAX_BLOCK_BYTES {
                return Err(too_large);
            }
            partial.clear();
            // The held bytes did not complete the block, so it ends in
            // `new`: length > held.
            return Ok((length.saturating_sub(held), Some(value)));
        }
    }
    if partial.len() > MAX_BLOCK_BYTES {
        return Err(too_large);
    }
    Ok((new.len(), None))
}

/// The offset of the byte at which a parser that fails on `buf` first fails:
/// the last byte of the shortest failing prefix. httparse does not tell, but
/// it parses left to right, so a prefix fails exactly when it holds that byte
/// and a binary search finds it in a few parses.
pub(super) fn first_error_at(buf: &[u8], fails: impl Fn(&[u8]) -> bool) -> usize {
    let (mut passing, mut failing) = (0, buf.len());
    while failing - passing > 1 {
        let middle = passing + (failing - passing) / 2;
        if fails(&buf[..middle]) {
            failing = middle;
        } else {
            passing = middle;
        }
    }
    failing.saturating_sub(1)
}
