//! Decoding the Huffman code of HPACK (RFC 7541, section 5.2 and Appendix
//! B), which QPACK uses for the strings of a field section. pace writes its
//! own strings as literals; servers often Huffman-code theirs.

use std::sync::OnceLock;

use super::tables::HUFFMAN_CODES;

/// The code as a binary tree: node i's children for bit 0 and bit 1, each
/// either another node or a symbol (`LEAF` | symbol); the root is node 0.
type Tree = Vec<[u16; 2]>;

const LEAF: u16 = 0x8000;
const EOS: u16 = 256;

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        let mut tree: Tree = vec![[0, 0]];
        for (symbol, &(code, bits)) in HUFFMAN_CODES.iter().enumerate() {
            let mut node = 0usize;
            for i in (0..bits).rev() {
                let bit = ((code >> i) & 1) as usize;
                if i == 0 {
                    tree[node][bit] = LEAF | symbol as u16;
                } else {
                    if tree[node][bit] == 0 {
                        tree.push([0, 0]);
                        tree[node][bit] = (tree.len() - 1) as u16;
                    }
                    node = tree[node][bit] as usize;
                }
            }
        }
        tree
    })
}

/// Appends the decoded `input` to `out`; Err when it is not a valid code:
/// the EOS symbol in it, or padding that is longer than 7 bits or not the
/// most significant bits of EOS (all ones).
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let tree = tree();
    let mut node = 0usize;
    // Bits read since the last symbol, and whether all were ones.
    let mut pending = 0u32;
    let mut all_ones = true;
    for &byte in input {
        for i in (0..8).rev() {
            let bit = (byte >> i) & 1;
            let next = tree[node][bit as usize];
            pending += 1;
            all_ones &= bit == 1;
            if next & LEAF != 0 {
                let symbol = next & !LEAF;
                if symbol == EOS {
                    return Err("a Huffman-coded string holds the EOS symbol");
                }
                out.push(symbol as u8);
                node = 0;
                pending = 0;
                all_ones = true;
            } else {
                node = next as usize;
            }
        }
    }
    if pending > 7 || !all_ones {
        return Err("a Huffman-coded string ends in bad padding");
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The encoder servers use, for the tests: every symbol's code, then
    /// ones up to the byte.
    pub fn encode(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u64, 0u32);
        for &b in input {
            let (code, len) = HUFFMAN_CODES[b as usize];
            acc = (acc << len) | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) | (0xff >> bits)) as u8);
        }
        out
    }

    fn decoded(input: &[u8]) -> Result<Vec<u8>, &'static str> {
        let mut out = Vec::new();
        decode(input, &mut out).map(|()| out)
    }

    #[test]
    fn the_examples_of_rfc_7541_decode() {
        // RFC 7541, C.4.1 to C.4.3 and C.6.1.
        let examples: [(&str, &[u8]); 5] = [
            (
                "www.example.com",
                &[0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff],
            ),
            ("no-cache", &[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]),
            ("custom-key", &[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f]),
            ("custom-value", &[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf]),
            ("302", &[0x64, 0x02]),
        ];
        for (text, code) in examples {
            assert_eq!(decoded(code).unwrap(), text.as_bytes(), "{text}");
            assert_eq!(encode(text.as_bytes()), code, "{text}");
        }
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    #[test]
    fn every_byte_value_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encode(&all)).unwrap(), all);
        for b in 0..=255u8 {
            assert_eq!(decoded(&encode(&[b, b, b])).unwrap(), [b, b, b]);
        }
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        // "0" is 00000 (5 bits): padding of ones is right, of zeros wrong.
        assert_eq!(decoded(&[0x07]).unwrap(), b"0");
        assert!(decoded(&[0x00]).is_err(), "zeros as padding");
        // A whole byte of ones is more than 7 bits of padding.
        assert!(decoded(&[0x07, 0xff]).is_err());
        // EOS itself: 30 ones.
        assert!(decoded(&[0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
