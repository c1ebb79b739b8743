//! QUIC's variable-length integers (RFC 9000, section 16), which HTTP/3
//! frames use for their types, lengths and values: the two high bits of the
//! first byte give the length (1, 2, 4 or 8 bytes), the rest is the value,
//! most significant byte first, at most 2^62 - 1.

/// The largest value a variable-length integer holds.
pub const MAX: u64 = (1 << 62) - 1;

/// The value at the start of `input` and how many bytes it took, or None
/// while `input` holds only part of it.
pub fn decode(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let len = 1usize << (first >> 6);
    let bytes = input.get(..len)?;
    let value = bytes[1..].iter().fold(u64::from(first & 0x3f), |v, &b| (v << 8) | u64::from(b));
    Some((value, len))
}

/// How many bytes `value` takes (the shortest form).
pub fn len(value: u64) -> usize {
    match value {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `value` in its shortest form. Values above [`MAX`] are a bug of
/// the caller (nothing pace sends comes near).
pub fn encode(value: u64, out: &mut Vec<u8>) {
    debug_assert!(value <= MAX, "{value} does not fit a QUIC varint");
    let len = len(value);
    let tag = (len.trailing_zeros() as u64) << (8 * len - 2);
    out.extend_from_slice(&(value | tag).to_be_bytes()[8 - len..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_of_rfc_9000_decode() {
        // RFC 9000, A.1.
        let examples: [(&[u8], u64); 4] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in examples {
            assert_eq!(decode(bytes), Some((value, bytes.len())));
            let mut out = Vec::new();
            encode(value, &mut out);
            assert_eq!(out, bytes);
        }
        // A longer form than needed is valid too.
        assert_eq!(decode(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn every_length_round_trips_and_a_cut_one_is_incomplete() {
        for value in [0, 63, 64, 16_383, 16_384, 1_073_741_823, 1_073_741_824, MAX] {
            let mut out = Vec::new();
            encode(value, &mut out);
            assert_eq!(out.len(), len(value));
            assert_eq!(decode(&out), Some((value, out.len())), "{value}");
            assert_eq!(decode(&out[..out.len() - 1]), None, "{value}");
        }
        assert_eq!(decode(&[]), None);
    }
}
