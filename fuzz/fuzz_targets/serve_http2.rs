#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pace::fuzzing::serve_http2(data));
