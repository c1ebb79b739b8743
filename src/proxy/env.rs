//! `--proxy env`: the proxy of the environment, read as curl reads it. For
//! an `http://` target `http_proxy` (never `HTTP_PROXY`: a CGI program gets
//! a request's `Proxy:` header as that variable, httpoxy), for `https://`
//! `https_proxy` then `HTTPS_PROXY`; then `all_proxy`, `ALL_PROXY`. A
//! target that `no_proxy` (else `NO_PROXY`) matches goes direct: a list of
//! names, each matching itself and its subdomains (a leading `.` is
//! ignored), IP addresses, CIDR ranges (`10.0.0.0/8`), or `*` for all.
//! Empty variables are unset.

use std::net::IpAddr;

use super::url::{parse_proxy, without_password};
use super::{Route, Via};
use crate::target::{Scheme, Target};

/// The proxy the environment gives `target`, or why it goes direct.
/// `var` reads a variable (`std::env::var` in pace, a table in tests).
pub fn from_env(target: &Target, var: impl Fn(&str) -> Option<String>) -> Result<Route, String> {
    let var = |name: &str| var(name).filter(|value| !value.trim().is_empty());
    let names: &[&'static str] = match target.scheme {
        Scheme::Http => &["http_proxy", "all_proxy", "ALL_PROXY"],
        Scheme::Https => &["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"],
    };
    let scheme = match target.scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    let Some((name, value)) = names.iter().find_map(|name| Some((*name, var(name)?))) else {
        return Ok(Route::Direct(format!(
            "no proxy for {scheme}:// targets in the environment ({} unset)",
            names.join(", ")
        )));
    };
    let no_proxy = ["no_proxy", "NO_PROXY"].into_iter().find_map(|name| Some((name, var(name)?)));
    if let Some((list_name, list)) = no_proxy {
        if let Some(entry) = no_proxy_match(&list, &target.host) {
            return Ok(Route::Direct(format!("{list_name} ({entry}) matches {}", target.host)));
        }
    }
    let proxy = parse_proxy(&value)
        .map_err(|why| format!("--proxy env: {name}={}: {why}", without_password(&value)))?;
    Ok(Route::Proxy { proxy, via: Via::Env(name) })
}

/// The entry of the `no_proxy` list that matches `host`, if one does.
fn no_proxy_match<'a>(list: &'a str, host: &str) -> Option<&'a str> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let host_ip = host.parse::<IpAddr>().ok();
    list.split(|c: char| c == ',' || c.is_ascii_whitespace()).filter(|e| !e.is_empty()).find(
        |&entry| {
            if entry == "*" {
                return true;
            }
            let bare = entry.trim_start_matches('[').trim_end_matches(']');
            match host_ip {
                Some(ip) => ip_matches(ip, bare),
                None => {
                    let name = bare.trim_start_matches('.').trim_end_matches('.');
                    let name = name.to_ascii_lowercase();
                    !name.is_empty()
                        && (host == name
                            || host.strip_suffix(&name).is_some_and(|head| head.ends_with('.')))
                }
            }
        },
    )
}

/// `ip` is the address `entry` names, or in its CIDR range.
fn ip_matches(ip: IpAddr, entry: &str) -> bool {
    let (addr, bits) = match entry.split_once('/') {
        Some((addr, bits)) => match bits.parse::<u32>() {
            Ok(bits) => (addr, Some(bits)),
            Err(_) => return false,
        },
        None => (entry, None),
    };
    let Ok(net) = addr.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() else {
        return false;
    };
    let (ip, net, width) = match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => (u32::from(ip) as u128, u32::from(net) as u128, 32),
        (IpAddr::V6(ip), IpAddr::V6(net)) => (u128::from(ip), u128::from(net), 128),
        _ => return false,
    };
    let bits = bits.unwrap_or(width);
    if bits > width {
        return false;
    }
    let shift = width - bits;
    shift == width || (ip >> shift) == (net >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(url: &str, vars: &[(&str, &str)]) -> Result<Route, String> {
        let target = Target::parse(url).unwrap();
        from_env(&target, |name| {
            vars.iter().find(|(n, _)| *n == name).map(|(_, value)| value.to_string())
        })
    }

    fn proxy_from(route: Result<Route, String>) -> (String, &'static str) {
        match route.unwrap() {
            Route::Proxy { proxy, via: Via::Env(name) } => (proxy.shown(), name),
            other => panic!("not a proxy from the environment: {other:?}"),
        }
    }

    fn direct(route: Result<Route, String>) -> String {
        match route.unwrap() {
            Route::Direct(why) => why,
            other => panic!("not direct: {other:?}"),
        }
    }

    #[test]
    fn per_scheme_as_curl_reads_them() {
        let vars = [("http_proxy", "http://h:1"), ("https_proxy", "s:2"), ("all_proxy", "a:3")];
        assert_eq!(proxy_from(route("http://x/", &vars)), ("http://h:1".into(), "http_proxy"));
        assert_eq!(proxy_from(route("https://x/", &vars)), ("http://s:2".into(), "https_proxy"));
        let upper = [("HTTPS_PROXY", "u:4")];
        assert_eq!(proxy_from(route("https://x/", &upper)), ("http://u:4".into(), "HTTPS_PROXY"));
        let all = [("ALL_PROXY", "a:5")];
        assert_eq!(proxy_from(route("http://x/", &all)), ("http://a:5".into(), "ALL_PROXY"));
    }

    #[test]
    fn uppercase_http_proxy_is_ignored_as_curl_does() {
        let why = direct(route("http://x/", &[("HTTP_PROXY", "h:1"), ("http_proxy", "")]));
        assert!(why.contains("no proxy for http:// targets"), "{why}");
        assert!(why.contains("http_proxy, all_proxy, ALL_PROXY unset"), "{why}");
    }

    #[test]
    fn no_proxy_sends_matching_targets_direct() {
        let vars = |list| [("http_proxy", "h:1"), ("no_proxy", list)];
        let why = direct(route("http://127.0.0.1:8080/", &vars("localhost,127.0.0.1")));
        assert_eq!(why, "no_proxy (127.0.0.1) matches 127.0.0.1");
        direct(route("http://api.example.com/", &vars(".example.com")));
        direct(route("http://api.example.com/", &vars("example.com")));
        direct(route("http://EXAMPLE.com./", &vars("example.com")));
        direct(route("http://x/", &vars("*")));
        direct(route("http://10.1.2.3/", &vars("192.168.0.1 10.0.0.0/8")));
        direct(route("http://[::1]:80/", &vars("[::1]")));
        direct(route("http://[fd00::5]/", &vars("fd00::/8")));
        direct(route("http://x/", &[("http_proxy", "h:1"), ("NO_PROXY", "x")]));
        proxy_from(route("http://notexample.com/", &vars("example.com")));
        proxy_from(route("http://11.1.2.3/", &vars("10.0.0.0/8")));
        proxy_from(route("http://127.0.0.1/", &vars("127.0.0.2,localhost")));
        proxy_from(route("http://x/", &vars("*.x")));
        // no_proxy wins over NO_PROXY, as in curl.
        let both = [("http_proxy", "h:1"), ("no_proxy", "y"), ("NO_PROXY", "x")];
        proxy_from(route("http://x/", &both));
    }

    #[test]
    fn a_bad_variable_is_named_without_its_password() {
        let error = route("https://x/", &[("https_proxy", "socks5://u:secret@h")]).unwrap_err();
        assert!(error.starts_with("--proxy env: https_proxy=socks5://u@h: "), "{error}");
        assert!(!error.contains("secret"), "{error}");
    }
}
