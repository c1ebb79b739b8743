//! Where the connections go when it is not simply the URL's host and port:
//! `--unix-socket PATH` (every connection to a Unix socket), `--connect-to
//! HOST:PORT:ADDR:PORT` (curl's: another address for a name) and `-4`/`-6`
//! (one address family). None of them changes the requests: the URL still
//! gives the `Host` header, the path and the TLS server name.

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use crate::target::Target;

/// How the command line asked to reach the target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    /// `--unix-socket`: every connection goes to this socket; the URL's
    /// host is not resolved.
    pub unix_socket: Option<Arc<Path>>,
    /// `--connect-to`, in the order given: the first that matches applies.
    pub connect_to: Vec<ConnectTo>,
    /// `-4`/`-6`: only addresses of this family.
    pub family: Option<Family>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn holds(self, ip: IpAddr) -> bool {
        match self {
            Family::V4 => ip.is_ipv4(),
            Family::V6 => ip.is_ipv6(),
        }
    }

    /// The option that asked for it.
    pub fn option(self) -> &'static str {
        match self {
            Family::V4 => "-4",
            Family::V6 => "-6",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// One `--connect-to HOST:PORT:ADDR:PORT` rule, curl's: a request for
/// HOST:PORT connects to ADDR:PORT instead. An empty HOST or PORT matches
/// any; an empty ADDR or PORT keeps the request's own. Hosts are kept
/// without the brackets of IPv6 literals, as [`Target::host`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectTo {
    host: Option<String>,
    port: Option<u16>,
    to_host: Option<String>,
    to_port: Option<u16>,
}

impl ConnectTo {
    /// Parses `HOST:PORT:ADDR:PORT`; IPv6 literals in brackets.
    pub fn parse(text: &str) -> Result<ConnectTo, String> {
        let bad = |why: &str| {
            format!(
                "'{text}' is not HOST:PORT:ADDR:PORT ({why}; e.g. example.com:443:127.0.0.1:8443, \
                 an IPv6 address in brackets, an empty field for any or the same)"
            )
        };
        let (host, rest) = host_field(text).map_err(bad)?;
        let (port, rest) = rest.split_once(':').ok_or_else(|| bad("too few fields"))?;
        let (to_host, to_port) = host_field(rest).map_err(bad)?;
        if to_port.contains(':') {
            return Err(bad("too many fields"));
        }
        let port_field = |field: &str| -> Result<Option<u16>, String> {
            match field {
                "" => Ok(None),
                _ => match field.parse::<u16>() {
                    Ok(port) if port > 0 => Ok(Some(port)),
                    _ => Err(bad(&format!("'{field}' is not a port number"))),
                },
            }
        };
        Ok(ConnectTo {
            host: host.map(str::to_string),
            port: port_field(port)?,
            to_host: to_host.map(str::to_string),
            to_port: port_field(to_port)?,
        })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        self.host.as_deref().is_none_or(|h| h.eq_ignore_ascii_case(host))
            && self.port.is_none_or(|p| p == port)
    }
}

/// The host field at the start of `text` (None when empty), then the rest
/// after the `:` that ends it. Err(why) when the `:` is missing or a `[`
/// is not closed by `]`.
fn host_field(text: &str) -> Result<(Option<&str>, &str), &'static str> {
    let (host, rest) = match text.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed.split_once(']').ok_or("a bracket is not closed")?;
            (host, after.strip_prefix(':').ok_or("too few fields")?)
        }
        None => text.split_once(':').ok_or("too few fields")?,
    };
    Ok(((!host.is_empty()).then_some(host), rest))
}

/// Where a connection for `host:port` goes under `rules`: the first rule
/// that matches, with its empty fields filled from the origin; the origin
/// itself when none does. Hosts without brackets.
pub fn connect_address<'a>(host: &'a str, port: u16, rules: &'a [ConnectTo]) -> (&'a str, u16) {
    match rules.iter().find(|rule| rule.matches(host, port)) {
        Some(rule) => (rule.to_host.as_deref().unwrap_or(host), rule.to_port.unwrap_or(port)),
        None => (host, port),
    }
}

/// `host:port`, IPv6 in brackets.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl Reach {
    /// Where the connections go when that is not the URL's host and port,
    /// in words: `unix:/run/app.sock`, `127.0.0.1:8081`; None otherwise.
    pub fn redirected(&self, target: &Target) -> Option<String> {
        if let Some(path) = &self.unix_socket {
            return Some(format!("unix:{}", path.display()));
        }
        let origin = (target.host.as_str(), target.port);
        let (host, port) = connect_address(origin.0, origin.1, &self.connect_to);
        ((host, port) != origin).then(|| host_port(host, port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> ConnectTo {
        ConnectTo::parse(text).unwrap()
    }

    fn rules(texts: &[&str]) -> Vec<ConnectTo> {
        texts.iter().map(|text| rule(text)).collect()
    }

    #[test]
    fn parses_the_four_fields() {
        let parsed = rule("example.com:443:127.0.0.1:8443");
        assert_eq!(
            parsed,
            ConnectTo {
                host: Some("example.com".into()),
                port: Some(443),
                to_host: Some("127.0.0.1".into()),
                to_port: Some(8443),
            }
        );
        assert_eq!(
            rule("::[::1]:"),
            ConnectTo { host: None, port: None, to_host: Some("::1".into()), to_port: None }
        );
        assert_eq!(
            rule("[::1]:80:localhost:8080"),
            ConnectTo {
                host: Some("::1".into()),
                port: Some(80),
                to_host: Some("localhost".into()),
                to_port: Some(8080),
            }
        );
        assert_eq!(rule(":::"), ConnectTo { host: None, port: None, to_host: None, to_port: None });
    }

    #[test]
    fn refuses_what_is_not_four_fields() {
        for (text, why) in [
            ("example.com:443:127.0.0.1", "too few fields"),
            ("example.com", "too few fields"),
            ("a:1:b:2:3", "too many fields"),
            ("a:1:[::1:2", "a bracket is not closed"),
            ("[::1:1:b:2", "a bracket is not closed"),
            ("a:http:b:2", "'http' is not a port number"),
            ("a:1:b:0", "'0' is not a port number"),
            ("a:1:b:65536", "'65536' is not a port number"),
        ] {
            let error = ConnectTo::parse(text).unwrap_err();
            assert!(
                error.starts_with(&format!("'{text}' is not HOST:PORT:ADDR:PORT ({why};")),
                "{error}"
            );
        }
    }

    #[test]
    fn the_first_matching_rule_applies() {
        let list = rules(&["other:80:a:1", "pace.test:8080:127.0.0.1:9000", "::b:2"]);
        assert_eq!(connect_address("pace.test", 8080, &list), ("127.0.0.1", 9000));
        // Host names match whatever their case; the port must match too.
        assert_eq!(connect_address("PACE.test", 8080, &list), ("127.0.0.1", 9000));
        assert_eq!(connect_address("pace.test", 8081, &list), ("b", 2));
    }

    #[test]
    fn empty_fields_match_any_and_keep_the_origin() {
        assert_eq!(connect_address("h", 80, &rules(&[":80::8080"])), ("h", 8080));
        assert_eq!(connect_address("h", 80, &rules(&["h::[::1]:"])), ("::1", 80));
        assert_eq!(connect_address("h", 81, &rules(&["h:80:x:1"])), ("h", 81));
        assert_eq!(connect_address("h", 80, &[]), ("h", 80));
    }
}
