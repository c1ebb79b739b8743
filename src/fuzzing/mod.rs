//! Entry points for the fuzz targets in `fuzz/` (with the `fuzzing`
//! feature) and the property tests below (`cargo test`): one function per
//! parser, taking arbitrary bytes. Each derives its input from the bytes
//! (a stream, cut points, flags, values to build), runs the parser and
//! checks what must hold whatever the input; a violation panics, which
//! libFuzzer reports as a crash. They are the same checks for both, so a
//! property test exercises exactly what a fuzz target does.
//!
//! Only the normal build of the library leaves this module out; it is no
//! API. `fuzz/README.md` lists the targets and how to run them.

pub(crate) mod frames;
mod http;
mod http1;
mod http2;
mod http3;
pub(crate) mod input;
mod lua;
mod text;

#[cfg(test)]
mod tests;

pub use self::http::{built_request, chunked_body, request_batch, response_stream, run_responses};
pub use self::http1::http1_responses;
pub use self::http2::http2_responses;
pub use self::http3::http3_frames;
pub use crate::serve::fuzzing::{serve_connection, serve_http2, serve_requests};
pub use lua::lua_transfer;
pub use text::{command_line, units, url};
