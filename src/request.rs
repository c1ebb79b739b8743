//! One request as every protocol can send it: its method, target, header
//! fields and body, without the syntax of any. The requests of the command
//! line and of a targets file are made this way (`crate::requests`), a
//! script's HTTP/1.1 text is parsed into it once (`crate::http::request`),
//! and each protocol encodes its own form of it once per batch: HTTP/1.1's
//! bytes (`crate::http::request::encode`), HTTP/2's header block and body
//! (`crate::http2::request`).

use std::sync::Arc;

/// A request, protocol-neutral.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// As typed (methods are case-sensitive).
    pub method: String,
    /// The request target: a path with its query (origin form), or an
    /// absolute URL (through a plain-HTTP proxy, or as a script wrote it).
    pub target: String,
    /// The header fields in the order they go, `Host` among them (HTTP/2
    /// sends it as `:authority`); names as typed.
    pub fields: Vec<(String, Vec<u8>)>,
    /// The body as it follows the head in HTTP/1.1: as typed, or encoded
    /// as a `Transfer-Encoding` among the fields says (HTTP/2 sends it
    /// decoded). None: no body.
    pub body: Option<Arc<[u8]>>,
}

impl Request {
    /// A HEAD request: its response has no body.
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }

    /// The value of the field `name` (any case), the first if several.
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        let (_, value) = self.fields.iter().find(|(field, _)| field.eq_ignore_ascii_case(name))?;
        Some(value)
    }

    /// Some field is named `name` (any case).
    pub fn has_field(&self, name: &str) -> bool {
        self.field(name).is_some()
    }
}
