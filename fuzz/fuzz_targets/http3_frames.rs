#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pace::fuzzing::http3_frames(data));
