//! The header lines of how a run reached its servers
//! ([`crate::description::reached`]): the connections per origin, the
//! proxy, and where the connections went when an option changed it.

use std::io::{self, Write};

use crate::description::reached::{OriginReach, Reached};

impl Reached {
    /// The header line of the connections per origin, with several.
    pub fn write_spread(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.origins.len() < 2 {
            return Ok(());
        }
        let parts: Vec<String> =
            self.origins.iter().map(|o| format!("{} to {}", o.connections, o.origin)).collect();
        writeln!(out, "  connections per origin: {}", parts.join(", "))
    }

    /// The header lines of the proxy, and of where the connections went,
    /// when an option changed it.
    pub fn write_routes(&self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(line) = self.proxy_line() {
            writeln!(out, "  {line}")?;
        }
        if let Some(line) = self.connecting_line() {
            writeln!(out, "  {line}")?;
        }
        Ok(())
    }

    /// `Through the proxy URL (--proxy), ...`, or why `--proxy env` went
    /// direct.
    fn proxy_line(&self) -> Option<String> {
        let proxy = self.proxy.as_ref()?;
        if let Some(why) = &proxy.direct {
            return Some(format!("No proxy (--proxy env): {why}"));
        }
        let named = match proxy.from.as_str() {
            "--proxy" => "--proxy".to_string(),
            variable => format!("--proxy env: {variable}"),
        };
        let (tunnelled, plain): (Vec<&OriginReach>, Vec<&OriginReach>) =
            self.origins.iter().partition(|o| o.tunnel);
        let mut how = Vec::new();
        if !plain.is_empty() {
            how.push(match self.origins.len() {
                1 => "absolute-form requests".to_string(),
                _ => format!("absolute-form requests to {}", names(&plain, |o| o.origin.clone())),
            });
        }
        if !tunnelled.is_empty() {
            let tunnels = if tunnelled.len() == 1 { "tunnel" } else { "tunnels" };
            how.push(format!("CONNECT {tunnels} to {}", names(&tunnelled, authority)));
        }
        let url = proxy.url.as_deref().unwrap_or_default();
        Some(format!("Through the proxy {url} ({named}), {}", how.join("; ")))
    }

    /// `connecting to ADDR (--connect-to), over IPv6 only (-6)`; with
    /// several origins, each redirected one with its address.
    fn connecting_line(&self) -> Option<String> {
        let redirected: Vec<&OriginReach> =
            self.origins.iter().filter(|o| o.connected_to.is_some()).collect();
        let to_socket = redirected
            .first()
            .and_then(|o| o.connected_to.as_deref())
            .filter(|to| to.starts_with("unix:"));
        let to = match (to_socket, self.origins.len()) {
            _ if redirected.is_empty() => None,
            (Some(socket), _) => Some(format!("to {socket} (--unix-socket)")),
            (None, 1) => {
                Some(format!("to {} (--connect-to)", redirected[0].connected_to.as_deref()?))
            }
            (None, _) => {
                let each = |o: &OriginReach| {
                    format!("{} to {}", o.origin, o.connected_to.as_deref().unwrap_or_default())
                };
                Some(format!("{} (--connect-to)", names(&redirected, each)))
            }
        };
        // A Unix socket has no address family.
        let only = (self.family.filter(|_| to_socket.is_none()))
            .map(|family| format!("over {family} only ({})", family.option()));
        let parts: Vec<String> = to.into_iter().chain(only).collect();
        (!parts.is_empty()).then(|| format!("connecting {}", parts.join(", ")))
    }
}

/// `host:port` of an origin `scheme://host:port`.
fn authority(origin: &OriginReach) -> String {
    let text = origin.origin.as_str();
    text.split_once("://").map_or(text, |(_, authority)| authority).to_string()
}

fn names(origins: &[&OriginReach], name: impl Fn(&OriginReach) -> String) -> String {
    origins.iter().map(|o| name(o)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::origins::config_with_targets;
    use crate::config::BenchConfig;
    use crate::protocol::Protocol;
    use crate::proxy::{route, Route};
    use crate::reach::{ConnectTo, Family, Reach};
    use crate::target::Target;

    fn config(url: &str) -> BenchConfig {
        BenchConfig::new(Target::parse(url).unwrap())
    }

    /// `cfg` with a targets file of `urls` (a GET each), 3 connections
    /// for each of 2 threads.
    fn with_targets(urls: &[&str]) -> BenchConfig {
        let mut cfg = config_with_targets(urls);
        cfg.connections = 6;
        cfg.threads = 2;
        cfg
    }

    fn header(reached: &Reached) -> String {
        let mut out = Vec::new();
        reached.write_spread(&mut out).unwrap();
        reached.write_routes(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn rules(texts: &[&str]) -> Vec<ConnectTo> {
        texts.iter().map(|text| ConnectTo::parse(text).unwrap()).collect()
    }

    #[test]
    fn one_origin_says_where_its_connections_go_when_redirected() {
        let mut cfg = config("http://pace.test:8080/");
        assert_eq!(header(&Reached::of(&cfg)), "");
        cfg.reach.unix_socket = Some(Path::new("/run/a.sock").into());
        assert_eq!(
            header(&Reached::of(&cfg)),
            "  connecting to unix:/run/a.sock (--unix-socket)\n"
        );
        cfg.reach = Reach {
            connect_to: rules(&["pace.test:8080:[::1]:9000"]),
            family: Some(Family::V6),
            ..Reach::default()
        };
        let reached = Reached::of(&cfg);
        assert_eq!(reached.origins[0].connected_to.as_deref(), Some("[::1]:9000"));
        assert_eq!(
            header(&reached),
            "  connecting to [::1]:9000 (--connect-to), over IPv6 only (-6)\n"
        );
        cfg.reach = Reach { family: Some(Family::V4), ..Reach::default() };
        assert_eq!(header(&Reached::of(&cfg)), "  connecting over IPv4 only (-4)\n");
        // A rule that does not match changes nothing.
        cfg.reach = Reach { connect_to: rules(&["other::a:1"]), ..Reach::default() };
        assert_eq!(header(&Reached::of(&cfg)), "");
    }

    #[test]
    fn several_origins_each_say_their_own() {
        let mut cfg =
            with_targets(&["http://a:80/", "http://a:80/x", "https://b/", "http://c:81/"]);
        cfg.reach.connect_to = rules(&["a:80:127.0.0.1:9000", "c:81:[::1]:9001"]);
        cfg.proxy = Some(route("http://p:3128", &cfg.target).unwrap());
        let reached = Reached::of(&cfg);
        // 3 connections a thread: one to each origin.
        let counts: Vec<usize> = reached.origins.iter().map(|o| o.connections).collect();
        assert_eq!(counts, [2, 2, 2]);
        assert_eq!(
            header(&reached),
            "  connections per origin: 2 to http://a:80, 2 to https://b:443, 2 to http://c:81\n  \
             Through the proxy http://p:3128 (--proxy), absolute-form requests to http://a:80, \
             http://c:81; CONNECT tunnel to b:443\n  \
             connecting http://a:80 to 127.0.0.1:9000, http://c:81 to [::1]:9001 (--connect-to)\n"
        );
        assert!(reached.proxy.as_ref().unwrap().tunnel, "b tunnels");
    }

    #[test]
    fn runs_reached_the_same_way_add_their_connections() {
        let cfg = with_targets(&["http://a:80/", "http://b:80/"]);
        let one = Reached::of(&cfg);
        let sum = Reached::together(&[&one, &one]).unwrap();
        assert_eq!(sum.origins.iter().map(|o| o.connections).collect::<Vec<_>>(), [8, 4]);
        let mut other = one.clone();
        other.family = Some(Family::V4);
        assert!(Reached::together(&[&one, &other]).is_none());
        assert!(Reached::together(&[]).is_none());
    }

    /// The header's line on the proxy (without the indent), if any.
    fn proxy_line(cfg: &BenchConfig) -> Option<String> {
        let mut out = Vec::new();
        Reached::of(cfg).write_routes(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        text.lines().next().map(|line| line.trim_start().to_string())
    }

    fn proxied(url: &str, proxy: &str, protocol: Protocol) -> BenchConfig {
        let mut cfg = config(url);
        cfg.protocol = protocol;
        cfg.proxy = Some(route(proxy, &cfg.target).unwrap());
        cfg
    }

    #[test]
    fn the_proxy_line_says_how_each_origin_goes_through_it() {
        let plain = proxied("http://127.0.0.1:8080/", "u:secret@127.0.0.1:3128", Protocol::Http1);
        assert_eq!(
            proxy_line(&plain).unwrap(),
            "Through the proxy http://u@127.0.0.1:3128 (--proxy), absolute-form requests"
        );
        let tls = proxied("https://example.com/", "http://127.0.0.1:3128", Protocol::Http1);
        assert_eq!(
            proxy_line(&tls).unwrap(),
            "Through the proxy http://127.0.0.1:3128 (--proxy), CONNECT tunnel to example.com:443"
        );
        let h2c = proxied("http://[::1]:8080/", "127.0.0.1:3128", Protocol::Http2);
        assert!(proxy_line(&h2c).unwrap().ends_with("CONNECT tunnel to [::1]:8080"));
        // Never the password.
        assert!(!proxy_line(&plain).unwrap().contains("secret"));
    }

    #[test]
    fn without_the_option_nothing_is_said_and_direct_runs_say_why() {
        let mut cfg = config("http://127.0.0.1:8080/");
        assert!(proxy_line(&cfg).is_none() && Reached::of(&cfg).proxy.is_none());
        cfg.proxy = Some(Route::Direct("no_proxy (*) matches 127.0.0.1".into()));
        assert_eq!(
            proxy_line(&cfg).unwrap(),
            "No proxy (--proxy env): no_proxy (*) matches 127.0.0.1"
        );
    }
}
