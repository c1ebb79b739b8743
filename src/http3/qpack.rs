//! QPACK (RFC 9204) without a dynamic table: the field sections of HTTP/3's
//! HEADERS frames.
//!
//! pace tells its peer a dynamic table capacity of 0 (it sends no
//! `SETTINGS_QPACK_MAX_TABLE_CAPACITY`), so the peer may use only the
//! static table and literals, and neither side needs QPACK's encoder and
//! decoder streams (RFC 9204, section 3.2.3): each field section decodes
//! alone. A reference to the dynamic table, or a Required Insert Count
//! other than 0, is the peer's error, `QPACK_DECOMPRESSION_FAILED`.
//!
//! pace encodes with the static table where a field (or its name) is in it,
//! and literals otherwise, without Huffman coding: the requests of a run are
//! encoded once, so a few bytes more per request cost nothing to build, and
//! QPACK needs no table lookups or code for them on the other side either.

use super::error::{H3Error, QPACK_DECOMPRESSION_FAILED};
use super::huffman;
use super::tables::STATIC_TABLE;

/// Appends the field section of `fields` (names in lower case, the pseudo
/// fields first, as HTTP/3 wants them; the caller sees to that).
pub fn encode<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>, out: &mut Vec<u8>) {
    // Required Insert Count 0, Base 0.
    out.extend_from_slice(&[0, 0]);
    for (name, value) in fields {
        let mut name_index = None;
        let mut exact = None;
        for (i, &(n, v)) in STATIC_TABLE.iter().enumerate() {
            if n.as_bytes() == name {
                name_index.get_or_insert(i);
                if v.as_bytes() == value {
                    exact = Some(i);
                    break;
                }
            }
        }
        match (exact, name_index) {
            // Indexed field line, static: 11xxxxxx.
            (Some(i), _) => integer(0xc0, 6, i as u64, out),
            // Literal with a static name reference: 0101xxxx.
            (None, Some(i)) => {
                integer(0x50, 4, i as u64, out);
                string(value, out);
            }
            // Literal with a literal name: 0010xxxx (the length in 3 bits).
            (None, None) => {
                integer(0x20, 3, name.len() as u64, out);
                out.extend_from_slice(name);
                string(value, out);
            }
        }
    }
}

/// A string literal without Huffman coding: H = 0, the length in 7 bits.
fn string(value: &[u8], out: &mut Vec<u8>) {
    integer(0, 7, value.len() as u64, out);
    out.extend_from_slice(value);
}

/// An integer with an N-bit prefix (RFC 7541, section 5.1): `flags` hold
/// the bits of the first byte above the prefix.
fn integer(flags: u8, prefix: u32, value: u64, out: &mut Vec<u8>) {
    let max = (1u64 << prefix) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// The fields of a field section, each handed to `field` as (name, value)
/// in their order; Err on a malformed section or one that refers to a
/// dynamic table.
pub fn decode(block: &[u8], field: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), H3Error> {
    let mut reader = Reader { input: block, at: 0 };
    let required_insert_count = reader.integer(8)?;
    if required_insert_count != 0 {
        return Err(failed("it refers to the dynamic table (Required Insert Count > 0)"));
    }
    // The sign bit and Delta Base: the base of dynamic references, of which
    // there must be none.
    reader.integer(7)?;
    let mut name_buf = Vec::new();
    let mut value_buf = Vec::new();
    while let Some(&first) = reader.input.get(reader.at) {
        if first & 0x80 != 0 {
            // Indexed field line: 1Txxxxxx.
            let index = reader.integer(6)?;
            let (name, value) = static_entry(first & 0x40 != 0, index)?;
            field(name.as_bytes(), value.as_bytes());
        } else if first & 0x40 != 0 {
            // Literal with name reference: 01NTxxxx.
            let index = reader.integer(4)?;
            let (name, _) = static_entry(first & 0x10 != 0, index)?;
            let value = reader.string(7, &mut value_buf)?;
            field(name.as_bytes(), value);
        } else if first & 0x20 != 0 {
            // Literal with literal name: 001NHxxx.
            let name = reader.string(3, &mut name_buf)?;
            let value = reader.string(7, &mut value_buf)?;
            field(name, value);
        } else {
            // 0001xxxx and 0000xxxx: post-base references, always dynamic.
            return Err(failed("it refers to the dynamic table (a post-base index)"));
        }
    }
    Ok(())
}

fn failed(why: &str) -> H3Error {
    H3Error::new(QPACK_DECOMPRESSION_FAILED, format!("a field section cannot be decoded: {why}"))
}

fn static_entry(is_static: bool, index: u64) -> Result<(&'static str, &'static str), H3Error> {
    if !is_static {
        return Err(failed("it refers to the dynamic table"));
    }
    STATIC_TABLE
        .get(index as usize)
        .copied()
        .ok_or_else(|| failed(&format!("static table index {index} is beyond the table's 99")))
}

struct Reader<'a> {
    input: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// An integer with an N-bit prefix, from the current byte on.
    fn integer(&mut self, prefix: u32) -> Result<u64, H3Error> {
        let truncated = || failed("it ends inside an integer");
        let max = (1u64 << prefix) - 1;
        let first = *self.input.get(self.at).ok_or_else(truncated)?;
        self.at += 1;
        let mut value = u64::from(first) & max;
        if value < max {
            return Ok(value);
        }
        let mut shift = 0;
        loop {
            let byte = *self.input.get(self.at).ok_or_else(truncated)?;
            self.at += 1;
            // 62 bits are more than any length or index can be.
            if shift > 56 {
                return Err(failed("an integer is too large"));
            }
            value += u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
    }

    /// A string literal whose H bit is just above an N-bit length prefix;
    /// Huffman-coded ones are decoded into `buf`.
    fn string<'b>(&mut self, prefix: u32, buf: &'b mut Vec<u8>) -> Result<&'b [u8], H3Error>
    where
        'a: 'b,
    {
        let huffman = self.input.get(self.at).is_some_and(|b| b & (1 << prefix) != 0);
        let len = self.integer(prefix)?;
        let bytes = self
            .input
            .get(self.at..)
            .and_then(|rest| rest.get(..usize::try_from(len).ok()?))
            .ok_or_else(|| failed("it ends inside a string"))?;
        self.at += bytes.len();
        if !huffman {
            return Ok(bytes);
        }
        buf.clear();
        huffman::decode(bytes, buf).map_err(failed)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(block: &[u8]) -> Result<Vec<(String, String)>, H3Error> {
        let mut fields = Vec::new();
        decode(block, &mut |n, v| {
            fields.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
        })?;
        Ok(fields)
    }

    fn pairs(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields.iter().map(|&(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_static_table_is_the_rfcs() {
        assert_eq!(STATIC_TABLE[0], (":authority", ""));
        assert_eq!(STATIC_TABLE[17], (":method", "GET"));
        assert_eq!(STATIC_TABLE[23], (":scheme", "https"));
        assert_eq!(STATIC_TABLE[25], (":status", "200"));
        assert_eq!(STATIC_TABLE[31], ("accept-encoding", "gzip, deflate, br"));
        assert_eq!(STATIC_TABLE[63], (":status", "100"));
        assert_eq!(STATIC_TABLE[98], ("x-frame-options", "sameorigin"));
    }

    #[test]
    fn the_example_of_rfc_9204_decodes() {
        // RFC 9204, B.1: a literal with a static name reference.
        let block = [
            0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d,
            0x6c,
        ];
        assert_eq!(decoded(&block).unwrap(), pairs(&[(":path", "/index.html")]));
    }

    #[test]
    fn a_request_round_trips_through_each_representation() {
        let long = "x".repeat(300);
        let fields = [
            (":method", "GET"),            // indexed (17)
            (":scheme", "https"),          // indexed (23)
            (":authority", "example.com"), // name reference (0)
            (":path", "/a/b?c=d"),         // name reference (1)
            ("user-agent", "pace"),        // name reference (95)
            ("x-custom", long.as_str()),   // literal name; value length > 127
            ("a-name-longer-than-seven", ""),
        ];
        let mut block = Vec::new();
        encode(fields.iter().map(|&(n, v)| (n.as_bytes(), v.as_bytes())), &mut block);
        assert_eq!(&block[..3], &[0x00, 0x00, 0xc0 | 17]);
        assert_eq!(decoded(&block).unwrap(), pairs(&fields));
    }

    #[test]
    fn huffman_coded_strings_decode() {
        // A server's :status 302 by name reference with a Huffman value,
        // and a literal name and value, both Huffman-coded.
        let mut block = vec![0x00, 0x00, 0x50 | 0x0f, 24 - 15];
        let value = huffman::tests::encode(b"302");
        block.push(0x80 | value.len() as u8);
        block.extend_from_slice(&value);
        let (name, value) = (huffman::tests::encode(b"custom-key"), huffman::tests::encode(b"v"));
        integer(0x28, 3, name.len() as u64, &mut block);
        block.extend_from_slice(&name);
        block.push(0x80 | value.len() as u8);
        block.extend_from_slice(&value);
        assert_eq!(decoded(&block).unwrap(), pairs(&[(":status", "302"), ("custom-key", "v")]));
    }

    #[test]
    fn dynamic_references_and_broken_sections_are_the_peers_error() {
        let broken: [&[u8]; 9] = [
            &[0x01, 0x00],                   // Required Insert Count 1
            &[0x00, 0x00, 0x80],             // indexed, dynamic
            &[0x00, 0x00, 0x10],             // post-base indexed
            &[0x00, 0x00, 0x00, 0x00],       // post-base name reference
            &[0x00, 0x00, 0x40, 0x00],       // name reference, dynamic
            &[0x00, 0x00, 0xff, 0x25],       // static index 63 + 37 = 100
            &[0x00, 0x00, 0x51, 0x05, b'/'], // a value cut short
            &[0x00],                         // a prefix cut short
            &[0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
        ];
        for block in broken {
            let e = decoded(block).unwrap_err();
            assert_eq!(e.code, QPACK_DECOMPRESSION_FAILED, "{block:?}: {e}");
        }
        // Bad Huffman padding is the same error.
        let e = decoded(&[0x00, 0x00, 0x5f, 0x0a, 0x81, 0x00]).unwrap_err();
        assert_eq!(e.code, QPACK_DECOMPRESSION_FAILED);
    }
}
