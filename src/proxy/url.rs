//! `--proxy URL` (or a proxy variable's value) read as curl reads it:
//! `http://[user:password@]host[:port][/]`, or `host[:port]` without a
//! scheme (http assumed). The port defaults to 1080, curl's default proxy
//! port. Credentials are percent-decoded and become the proxy's Basic
//! authorization. Only plain HTTP proxies are supported: TLS to the proxy
//! (`https://`) and SOCKS are refused in words.

use base64::Engine;

use super::Proxy;
use crate::target::Target;

/// curl's port for a proxy URL that names none.
const DEFAULT_PORT: u16 = 1080;

/// The proxy `text` names; the error says why it cannot be used.
pub fn parse_proxy(text: &str) -> Result<Proxy, String> {
    let bad = |why: &str| format!("invalid proxy URL '{}' ({why})", without_password(text));
    let (scheme, rest) = match text.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None => ("http".to_string(), text),
    };
    match scheme.as_str() {
        "http" => {}
        "https" => {
            return Err(format!(
                "proxy '{}': TLS to the proxy (https://) is not supported; use its http:// \
                 address (https:// targets still go through it in a CONNECT tunnel)",
                without_password(text)
            ))
        }
        s if s.starts_with("socks") => {
            return Err(format!(
                "proxy '{}': SOCKS proxies are not supported, only HTTP proxies (http://)",
                without_password(text)
            ))
        }
        _ => return Err(bad("unsupported scheme, use http://")),
    }
    // The target URL parser knows hosts, ports, IPv6 brackets and
    // `user:password@` with its %-escapes.
    let parsed = Target::parse(&format!("http://{rest}")).map_err(|_| bad("expected host:port"))?;
    if parsed.path != "/" {
        return Err(bad("a proxy URL has no path"));
    }
    let authorization = parsed.userinfo.as_deref().map(|userinfo| {
        // `user` alone is `user:` with an empty password, as curl sends it.
        let credentials = match userinfo.contains(':') {
            true => userinfo.to_string(),
            false => format!("{userinfo}:"),
        };
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials))
    });
    // The user as typed (still %-escaped), for the header of the report.
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let user = rest[..end]
        .rsplit_once('@')
        .map(|(userinfo, _)| userinfo.split(':').next().unwrap_or_default().to_string());
    Ok(Proxy {
        host: parsed.host,
        port: if parsed.explicit_port { parsed.port } else { DEFAULT_PORT },
        authorization,
        user,
    })
}

/// `text` with the password of its `user:password@` left out, for
/// messages (a password is never printed).
pub fn without_password(text: &str) -> String {
    let (scheme, rest) = match text.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), text),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((userinfo, hostport)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}{user}@{hostport}{}", &rest[end..])
        }
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_with_or_without_scheme() {
        let proxy = parse_proxy("http://127.0.0.1:3128").unwrap();
        assert_eq!((proxy.host.as_str(), proxy.port), ("127.0.0.1", 3128));
        assert_eq!(proxy.authorization, None);
        assert_eq!(parse_proxy("proxy.example:8080").unwrap().port, 8080);
        assert_eq!(parse_proxy("HTTP://proxy.example:8080/").unwrap().host, "proxy.example");
        let v6 = parse_proxy("http://[::1]:3128").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 3128));
        assert_eq!(v6.shown(), "http://[::1]:3128");
    }

    #[test]
    fn default_port_is_curls() {
        assert_eq!(parse_proxy("http://proxy.example").unwrap().port, 1080);
        assert_eq!(parse_proxy("proxy.example").unwrap().port, 1080);
    }

    #[test]
    fn credentials_are_decoded_basic_authorization_and_never_shown() {
        let proxy = parse_proxy("http://us%40er:p%3Ass@proxy:3128").unwrap();
        // base64("us@er:p:ss")
        assert_eq!(proxy.authorization.as_deref(), Some("Basic dXNAZXI6cDpzcw=="));
        assert_eq!(proxy.user.as_deref(), Some("us%40er"));
        assert_eq!(proxy.shown(), "http://us%40er@proxy:3128");
        let user_only = parse_proxy("http://user@proxy:3128").unwrap();
        assert_eq!(user_only.authorization.as_deref(), Some("Basic dXNlcjo=")); // "user:"
    }

    #[test]
    fn unsupported_proxies_are_refused_in_words() {
        let https = parse_proxy("https://user:secret@proxy:443").unwrap_err();
        assert!(https.contains("TLS to the proxy (https://) is not supported"), "{https}");
        assert!(!https.contains("secret"), "{https}");
        let socks = parse_proxy("socks5://proxy:1080").unwrap_err();
        assert!(socks.contains("SOCKS proxies are not supported"), "{socks}");
        assert!(parse_proxy("socks5h://proxy").unwrap_err().contains("SOCKS"));
        assert!(parse_proxy("ftp://proxy").unwrap_err().contains("unsupported scheme"));
        assert!(parse_proxy("http://proxy:3128/path").unwrap_err().contains("no path"));
        assert!(parse_proxy("http://proxy:99999").is_err());
        assert!(parse_proxy("").is_err());
        assert!(parse_proxy("http://u:p%zz@proxy").is_err());
    }

    #[test]
    fn passwords_are_left_out_of_messages() {
        assert_eq!(without_password("http://u:secret@h:1/"), "http://u@h:1/");
        assert_eq!(without_password("u:secret@h:1"), "u@h:1");
        assert_eq!(without_password("http://h:1"), "http://h:1");
    }
}
