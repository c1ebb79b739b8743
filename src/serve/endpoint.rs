//! The built-in server's endpoints: which one a request target names
//! (`/status/503`, `/bytes/1000`, `/delay/5`, ...), for both protocols.

use crate::http::framing::decimal;

/// The token `/auth` hands out and `/resource` requires (as in the nginx
/// benchmark configuration).
pub(super) const TOKEN: &str = "tok123";

const DEFAULT_CHUNKS: u32 = 3;
const MAX_CHUNKS: u32 = 10_000;
const MAX_DELAY_MS: u64 = 24 * 3600 * 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Endpoint {
    Default,
    Status(u16),
    Bytes(u64),
    Chunked(u32),
    Close,
    Eof,
    Continue,
    Delay(u64),
    Hang,
    Echo,
    Auth,
    Resource,
    Stats,
    /// A known endpoint with an argument it cannot use.
    BadArgument,
}

impl Endpoint {
    /// The endpoint a request target names.
    pub(super) fn route(target: &str) -> Endpoint {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match path {
            "/chunked" => return chunk_count(query),
            "/close" => return Endpoint::Close,
            "/eof" => return Endpoint::Eof,
            "/continue" => return Endpoint::Continue,
            "/hang" => return Endpoint::Hang,
            "/echo" => return Endpoint::Echo,
            "/auth" | "/authenticate" => return Endpoint::Auth,
            "/resource" => return Endpoint::Resource,
            "/stats" => return Endpoint::Stats,
            _ => {}
        }
        let argument = |prefix: &str| path.strip_prefix(prefix).map(|a| decimal(a.as_bytes()));
        let endpoint = if let Some(code) = argument("/status/") {
            code.and_then(|c| u16::try_from(c).ok())
                .filter(|c| (200..=599).contains(c))
                .map(Endpoint::Status)
        } else if let Some(n) = argument("/bytes/") {
            n.map(Endpoint::Bytes)
        } else if let Some(ms) = argument("/delay/") {
            ms.filter(|&ms| ms <= MAX_DELAY_MS).map(Endpoint::Delay)
        } else {
            Some(Endpoint::Default)
        };
        endpoint.unwrap_or(Endpoint::BadArgument)
    }
}

/// `/chunked?n=<count>`.
fn chunk_count(query: &str) -> Endpoint {
    let count = query.split('&').find_map(|pair| pair.strip_prefix("n="));
    match count.map(|n| decimal(n.as_bytes())) {
        None => Endpoint::Chunked(DEFAULT_CHUNKS),
        Some(Some(n)) if n <= u64::from(MAX_CHUNKS) => Endpoint::Chunked(n as u32),
        Some(_) => Endpoint::BadArgument,
    }
}
