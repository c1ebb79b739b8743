//! The tables of the RFCs, as data: QPACK's static table (RFC 9204,
//! Appendix A) and the Huffman code of HPACK that QPACK uses for strings
//! (RFC 7541, Appendix B).

/// QPACK's static table: (name, value) at each index.
pub(super) const STATIC_TABLE: [(&str, &str); 99] = [
    (":authority", ""),                                                            // 0
    (":path", "/"),                                                                // 1
    ("age", "0"),                                                                  // 2
    ("content-disposition", ""),                                                   // 3
    ("content-length", "0"),                                                       // 4
    ("cookie", ""),                                                                // 5
    ("date", ""),                                                                  // 6
    ("etag", ""),                                                                  // 7
    ("if-modified-since", ""),                                                     // 8
    ("if-none-match", ""),                                                         // 9
    ("last-modified", ""),                                                         // 10
    ("link", ""),                                                                  // 11
    ("location", ""),                                                              // 12
    ("referer", ""),                                                               // 13
    ("set-cookie", ""),                                                            // 14
    (":method", "CONNECT"),                                                        // 15
    (":method", "DELETE"),                                                         // 16
    (":method", "GET"),                                                            // 17
    (":method", "HEAD"),                                                           // 18
    (":method", "OPTIONS"),                                                        // 19
    (":method", "POST"),                                                           // 20
    (":method", "PUT"),                                                            // 21
    (":scheme", "http"),                                                           // 22
    (":scheme", "https"),                                                          // 23
    (":status", "103"),                                                            // 24
    (":status", "200"),                                                            // 25
    (":status", "304"),                                                            // 26
    (":status", "404"),                                                            // 27
    (":status", "503"),                                                            // 28
    ("accept", "*/*"),                                                             // 29
    ("accept", "application/dns-message"),                                         // 30
    ("accept-encoding", "gzip, deflate, br"),                                      // 31
    ("accept-ranges", "bytes"),                                                    // 32
    ("access-control-allow-headers", "cache-control"),                             // 33
    ("access-control-allow-headers", "content-type"),                              // 34
    ("access-control-allow-origin", "*"),                                          // 35
    ("cache-control", "max-age=0"),                                                // 36
    ("cache-control", "max-age=2592000"),                                          // 37
    ("cache-control", "max-age=604800"),                                           // 38
    ("cache-control", "no-cache"),                                                 // 39
    ("cache-control", "no-store"),                                                 // 40
    ("cache-control", "public, max-age=31536000"),                                 // 41
    ("content-encoding", "br"),                                                    // 42
    ("content-encoding", "gzip"),                                                  // 43
    ("content-type", "application/dns-message"),                                   // 44
    ("content-type", "application/javascript"),                                    // 45
    ("content-type", "application/json"),                                          // 46
    ("content-type", "application/x-www-form-urlencoded"),                         // 47
    ("content-type", "image/gif"),                                                 // 48
    ("content-type", "image/jpeg"),                                                // 49
    ("content-type", "image/png"),                                                 // 50
    ("content-type", "text/css"),                                                  // 51
    ("content-type", "text/html; charset=utf-8"),                                  // 52
    ("content-type", "text/plain"),                                                // 53
    ("content-type", "text/plain;charset=utf-8"),                                  // 54
    ("range", "bytes=0-"),                                                         // 55
    ("strict-transport-security", "max-age=31536000"),                             // 56
    ("strict-transport-security", "max-age=31536000; includesubdomains"),          // 57
    ("strict-transport-security", "max-age=31536000; includesubdomains; preload"), // 58
    ("vary", "accept-encoding"),                                                   // 59
    ("vary", "origin"),                                                            // 60
    ("x-content-type-options", "nosniff"),                                         // 61
    ("x-xss-protection", "1; mode=block"),                                         // 62
    (":status", "100"),                                                            // 63
    (":status", "204"),                                                            // 64
    (":status", "206"),                                                            // 65
    (":status", "302"),                                                            // 66
    (":status", "400"),                                                            // 67
    (":status", "403"),                                                            // 68
    (":status", "421"),                                                            // 69
    (":status", "425"),                                                            // 70
    (":status", "500"),                                                            // 71
    ("accept-language", ""),                                                       // 72
    ("access-control-allow-credentials", "FALSE"),                                 // 73
    ("access-control-allow-credentials", "TRUE"),                                  // 74
    ("access-control-allow-headers", "*"),                                         // 75
    ("access-control-allow-methods", "get"),                                       // 76
    ("access-control-allow-methods", "get, post, options"),                        // 77
    ("access-control-allow-methods", "options"),                                   // 78
    ("access-control-expose-headers", "content-length"),                           // 79
    ("access-control-request-headers", "content-type"),                            // 80
    ("access-control-request-method", "get"),                                      // 81
    ("access-control-request-method", "post"),                                     // 82
    ("alt-svc", "clear"),                                                          // 83
    ("authorization", ""),                                                         // 84
    ("content-security-policy", "script-src 'none'; object-src 'none'; base-uri 'none'"), // 85
    ("early-data", "1"),                                                           // 86
    ("expect-ct", ""),                                                             // 87
    ("forwarded", ""),                                                             // 88
    ("if-range", ""),                                                              // 89
    ("origin", ""),                                                                // 90
    ("purpose", "prefetch"),                                                       // 91
    ("server", ""),                                                                // 92
    ("timing-allow-origin", "*"),                                                  // 93
    ("upgrade-insecure-requests", "1"),                                            // 94
    ("user-agent", ""),                                                            // 95
    ("x-forwarded-for", ""),                                                       // 96
    ("x-frame-options", "deny"),                                                   // 97
    ("x-frame-options", "sameorigin"),                                             // 98
];

/// The Huffman code of each symbol (0-255, and 256: EOS): (code, length
/// in bits), the code in the low bits.
pub(super) const HUFFMAN_CODES: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];
