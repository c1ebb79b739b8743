//! The target URL, split the way wrk splits it.

use std::fmt;

/// URL scheme. As in wrk, anything starting with `https` selects TLS and
/// every other scheme is plain TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// The target URL, split the way wrk splits it (`src/script.c:
/// script_parse_url`): the path keeps the query and fragment, IPv6 hosts are
/// stored without brackets. Unlike wrk, the path is made a valid request
/// target as curl makes it (see [`request_target`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The URL exactly as typed (printed in the report header).
    pub url: String,
    /// The scheme as typed (`http`, `https`, ...), for Lua's `wrk.scheme`.
    pub scheme_name: String,
    pub scheme: Scheme,
    /// Host name or address, without IPv6 brackets.
    pub host: String,
    /// The port to connect to (explicit, or 80/443 from the scheme).
    pub port: u16,
    /// Whether the URL named the port (then it is part of the Host header).
    pub explicit_port: bool,
    /// Path, query and fragment; `/` when the URL has no path. Bytes a
    /// request target may not hold are percent-encoded ([`request_target`]).
    pub path: String,
    /// `user:password` from the URL (`http://user:password@host/`),
    /// percent-decoded: sent as Basic authorization, as curl does.
    pub userinfo: Option<String>,
}

/// Why a URL was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError(pub String);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Target {
    /// Parses `scheme://host[:port][/path][?query][#fragment]`.
    pub fn parse(url: &str) -> Result<Target, UrlError> {
        let bad = |why: &str| UrlError(format!("invalid URL: {url} ({why})"));
        let (scheme_name, rest) =
            url.split_once("://").ok_or_else(|| bad("expected scheme://host"))?;
        if scheme_name.is_empty()
            || !scheme_name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            || !scheme_name.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(bad("bad scheme"));
        }
        let lower = scheme_name.to_ascii_lowercase();
        let scheme = if lower.starts_with("https") { Scheme::Https } else { Scheme::Http };
        let default_port = match lower.as_str() {
            "http" | "ws" => 80,
            "https" | "wss" => 443,
            _ if scheme == Scheme::Https => 443,
            _ => return Err(bad("unsupported scheme, use http or https")),
        };
        let path_start = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(path_start);
        let path = match path.chars().next() {
            None => "/".to_string(),
            Some('/') => request_target(path),
            // wrk drops a query that has no path before it; we keep it.
            Some(_) => request_target(&format!("/{path}")),
        };
        let (userinfo, authority) = match authority.rsplit_once('@') {
            Some((userinfo, hostport)) => {
                let decoded =
                    percent_decode(userinfo).ok_or_else(|| bad("bad %-escape in user:password"))?;
                (Some(decoded), hostport)
            }
            None => (None, authority),
        };
        let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
            let (host, after) = inner.split_once(']').ok_or_else(|| bad("unclosed '[' in host"))?;
            if host.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad("bad IPv6 address"));
            }
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| bad("junk after ']'"))?),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                // `http://::1/` would be host `:` port 1, whose Host header
                // `[:]:1` is no URL at all.
                Some((h, _)) if h.contains(':') => {
                    return Err(bad("IPv6 address without brackets"))
                }
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("missing host"));
        }
        if host.contains(|c: char| c.is_whitespace() || "/\\[]".contains(c)) {
            return Err(bad("bad character in host"));
        }
        let (port, explicit_port) = match port {
            None | Some("") => (default_port, false),
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => (n, true),
                _ => return Err(bad("bad port")),
            },
        };
        Ok(Target {
            url: url.to_string(),
            scheme_name: scheme_name.to_string(),
            scheme,
            host: host.to_string(),
            port,
            explicit_port,
            path,
            userinfo,
        })
    }

    /// The `Authorization` header for the URL's `user:password`, if it has
    /// one (Basic, RFC 7617).
    pub fn basic_authorization(&self) -> Option<String> {
        use base64::Engine;
        let userinfo = self.userinfo.as_deref()?;
        Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(userinfo)))
    }

    /// The default `Host` header value, as wrk's `wrk.init` builds it: the
    /// host (IPv6 re-bracketed) plus `:port` only if the URL named one.
    pub fn host_header(&self) -> String {
        let host =
            if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.explicit_port {
            format!("{host}:{}", self.port)
        } else {
            host
        }
    }
}

/// `path` (with its query and fragment) as a request target may carry it,
/// encoded as curl encodes a URL it is given: a space is `%20` in the path
/// and `+` in the query, and every other byte no request target may hold
/// (RFC 3986: controls, bytes beyond ASCII, and `"` `<` `>` `\` `^` the
/// backtick `{` `|` `}`) is `%XX`. Without it the space of
/// `http://host/a b` ends the request line early and every response is
/// 400. What is already valid (`%20`, `+`) is kept as typed.
fn request_target(path: &str) -> String {
    let mut target = String::with_capacity(path.len());
    let mut in_query = false;
    for byte in path.bytes() {
        in_query |= byte == b'?';
        match byte {
            b' ' if in_query => target.push('+'),
            _ if allowed_in_target(byte) => target.push(char::from(byte)),
            _ => target.push_str(&format!("%{byte:02X}")),
        }
    }
    target
}

/// A byte a request target may hold as it is: visible ASCII, except the
/// characters RFC 3986 leaves out of URLs.
fn allowed_in_target(byte: u8) -> bool {
    byte.is_ascii_graphic() && !b"\"<>\\^`{|}".contains(&byte)
}

/// `%XX` escapes decoded (RFC 3986); None for a malformed escape or bytes
/// that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_url() {
        let t = Target::parse("http://localhost:8080/index.html?x=1#f").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!(t.host, "localhost");
        assert_eq!(t.port, 8080);
        assert!(t.explicit_port);
        assert_eq!(t.path, "/index.html?x=1#f");
        assert_eq!(t.host_header(), "localhost:8080");
    }

    #[test]
    fn default_ports_and_paths() {
        let t = Target::parse("https://example.com").unwrap();
        assert_eq!((t.scheme, t.port, t.path.as_str()), (Scheme::Https, 443, "/"));
        assert_eq!(t.host_header(), "example.com");
        let t = Target::parse("http://example.com?q").unwrap();
        assert_eq!(t.path, "/?q");
    }

    #[test]
    fn ipv6_hosts() {
        let t = Target::parse("http://[::1]:8080/").unwrap();
        assert_eq!(t.host, "::1");
        assert_eq!(t.host_header(), "[::1]:8080");
        assert!(Target::parse("http://[::1/").is_err());
        assert!(Target::parse("http://[zz]:80/").is_err());
    }

    /// Found by the URL property test: `::80` was host `:`, port 80.
    #[test]
    fn ipv6_hosts_need_brackets() {
        for url in ["http://::80?q=1", "http://::1/", "http://a:b:80/", "http://fe80::1:8080/"] {
            let error = Target::parse(url).unwrap_err();
            assert!(error.0.ends_with("(IPv6 address without brackets)"), "{url}: {error}");
        }
    }

    #[test]
    fn credentials_become_basic_authorization() {
        let t = Target::parse("http://alice:s%40cret@example.com:8080/x").unwrap();
        assert_eq!(t.userinfo.as_deref(), Some("alice:s@cret"));
        assert_eq!((t.host.as_str(), t.port), ("example.com", 8080));
        assert_eq!(t.basic_authorization().unwrap(), "Basic YWxpY2U6c0BjcmV0");
        assert_eq!(Target::parse("http://h/").unwrap().basic_authorization(), None);
        assert!(Target::parse("http://a:%zz@h/").is_err());
        assert!(Target::parse("http://a:%4@h/").is_err());
    }

    /// As curl sends them: `curl 'http://h/a b?q=x y'` asks for
    /// `/a%20b?q=x+y`.
    #[test]
    fn paths_are_encoded_as_curl_encodes_them() {
        let path = |url: &str| Target::parse(url).unwrap().path;
        assert_eq!(path("http://h/a b"), "/a%20b");
        assert_eq!(path("http://h/a b?q=x y&r=1"), "/a%20b?q=x+y&r=1");
        assert_eq!(path("http://h?q=a b"), "/?q=a+b");
        assert_eq!(path("http://h/caf\u{e9}"), "/caf%C3%A9");
        assert_eq!(path("http://h/\"x\"<{|}>\\^`"), "/%22x%22%3C%7B%7C%7D%3E%5C%5E%60");
        assert_eq!(path("http://h/tab\there"), "/tab%09here");
        // What is already valid is sent as typed, so encoding twice
        // changes nothing.
        for url in ["http://h/a%20b?q=x+y&z=%2F", "http://h/p;a=1/:@!$&'()*+,=~-._?/?#f"] {
            let once = path(url);
            assert_eq!(once, url.strip_prefix("http://h").unwrap());
            assert_eq!(path(&format!("http://h{once}")), once);
        }
        // The URL as typed is what the report's header shows.
        assert_eq!(Target::parse("http://h/a b").unwrap().url, "http://h/a b");
    }

    #[test]
    fn rejects_bad_urls() {
        for u in [
            "localhost:8080/",
            "http://",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "ftp://h/",
            "://h/",
        ] {
            assert!(Target::parse(u).is_err(), "{u}");
        }
    }
}
