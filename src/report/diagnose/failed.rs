//! What any run, closed loop or paced, says when its requests failed in a
//! way the figures alone do not explain: every request failed, a server
//! refused the client certificate in HTTP (400s), a proxy closed the
//! connections it kept alive. The closed loop's report stays wrk's when
//! none of these happened.

use serde_json::json;

use super::{Code, Diagnostic};
use crate::description::Description;
use crate::grpc_status;
use crate::stats::Stats;
use crate::target::Scheme;

/// The read error of a connection closed while a request was on it with
/// no byte of its response yet (the engine's cause, as counted).
pub const CLOSED_BEFORE_THE_RESPONSE: &str = "read: connection closed before the response";

/// A client certificate is blamed for the 400s when they are more than
/// this share of the responses.
const MOSTLY: f64 = 0.5;

/// The diagnostics of failed requests, whatever the mode.
pub fn diagnose(run: &Description, stats: &Stats) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    found.extend(all_failed(stats));
    found.extend(certificate_refused(run, stats));
    found.extend(proxy_closed(run, stats));
    found
}

/// Every request ended in an error or a status > 399: the run measured
/// nothing but failures, yet wrk (and pace) exit 0 for it.
fn all_failed(stats: &Stats) -> Option<Diagnostic> {
    let e = &stats.errors;
    let succeeded = stats.requests.saturating_sub(e.status);
    let failed = e.status + e.socket_total() + e.unsent;
    if succeeded > 0 || failed == 0 {
        return None;
    }
    let mut how: Vec<String> =
        stats.outcomes.http().map(|(s, n)| format!("status {s}: {n}")).collect();
    let calls = stats.outcomes.grpc().map(|(code, n)| format!("{}: {n}", grpc_status::name(code)));
    how.extend(calls);
    // gRPC calls succeed by their status, not by an HTTP status.
    let success = match stats.outcomes.grpc().next() {
        Some(_) => "an OK gRPC status",
        None => "a 2xx or 3xx response",
    };
    for (what, n) in [
        ("connect errors", e.connect),
        ("read errors", e.read),
        ("write errors", e.write),
        ("timeouts", e.timeout),
        ("never sent", e.unsent),
    ] {
        if n > 0 {
            how.push(format!("{what}: {n}"));
        }
    }
    Some(Diagnostic {
        code: Code::AllFailed,
        message: format!(
            "every request failed: none of the {failed} got {success} ({}), so the \
             report's figures are those of failures. pace exits 0 all the same, as wrk does; to \
             make such a run fail, give it --slo 'errors<1%' (exit code 4)",
            how.join(", ")
        ),
        figures: vec![
            ("failed", json!(failed)),
            ("responses", json!(stats.requests)),
            ("status_errors", json!(e.status)),
            ("socket_errors", json!(e.socket_total())),
            ("unsent", json!(e.unsent)),
        ],
    })
}

/// Most responses were 400 over https with a client certificate given: a
/// server that checks client certificates after the handshake (nginx's
/// `ssl_verify_client`) answers 400 to one it does not trust ("The SSL
/// certificate error"), where the handshake itself succeeded.
fn certificate_refused(run: &Description, stats: &Stats) -> Option<Diagnostic> {
    let https = run.scheme == Scheme::Https
        || run.reached.origins.iter().any(|origin| origin.origin.starts_with("https://"));
    let bad_requests = stats.outcomes.http_status(400);
    let mostly = bad_requests as f64 > MOSTLY * stats.requests as f64;
    if !(run.client_certificate && https && mostly) {
        return None;
    }
    Some(Diagnostic {
        code: Code::ClientCertificateRefused,
        message: format!(
            "{bad_requests} of the {} responses were 400 Bad Request, and a client certificate \
             was given (--cert): a server that checks client certificates in HTTP answers 400 \
             to one it does not trust (nginx: \"The SSL certificate error\"). Check that the \
             server trusts the certificate's issuer (nginx: ssl_client_certificate) and that \
             the certificate is valid now",
            stats.requests
        ),
        figures: vec![("bad_requests", json!(bad_requests)), ("responses", json!(stats.requests))],
    })
}

/// Read errors of connections closed before the response, on a run whose
/// requests went through a proxy in absolute form: a proxy that closes a
/// kept-alive client connection without `Connection: close` (tinyproxy
/// does, when it has answered) loses a request written just before the
/// close. Those errors are the proxy's, not the server's.
fn proxy_closed(run: &Description, stats: &Stats) -> Option<Diagnostic> {
    let proxy = run.reached.proxy.as_ref()?.url.as_ref()?;
    let absolute_form = run.reached.origins.iter().any(|origin| !origin.tunnel);
    let closed = stats.error_causes.get(CLOSED_BEFORE_THE_RESPONSE).copied().unwrap_or(0);
    if !absolute_form || closed == 0 {
        return None;
    }
    Some(Diagnostic {
        code: Code::ProxyClosedConnections,
        message: format!(
            "{closed} read errors (connection closed before the response) came through the \
             proxy {proxy}, which carried the requests in absolute form: a proxy that closes a \
             kept-alive connection without saying so (no Connection: close; tinyproxy does \
             after its responses) loses the request pace wrote just before the close. They \
             are the proxy's errors, not the server's"
        ),
        figures: vec![
            ("closed_before_the_response", json!(closed)),
            ("read", json!(stats.errors.read)),
        ],
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::{BenchConfig, Mode};
    use crate::proxy;
    use crate::stats::{ErrorKind, Outcome, RunResult};
    use crate::target::Target;

    fn closed_loop(url: &str) -> BenchConfig {
        BenchConfig {
            threads: 1,
            connections: 2,
            duration: Some(Duration::from_secs(1)),
            mode: Mode::ClosedLoop,
            ..BenchConfig::new(Target::parse(url).unwrap())
        }
    }

    fn codes(cfg: &BenchConfig, stats: &Stats) -> Vec<&'static str> {
        let result = RunResult::measured(stats.clone(), Duration::from_secs(1));
        super::super::diagnose(&Description::of(cfg), &result)
            .iter()
            .map(|d| d.code.name())
            .collect()
    }

    fn responses(statuses: &[(u16, u64)]) -> Stats {
        let mut stats = Stats::new(3);
        for &(status, n) in statuses {
            for _ in 0..n {
                stats.response(Outcome::Http(status));
                stats.corrected.record(100).unwrap();
            }
        }
        stats
    }

    /// Issue 34, item 7: a closed loop whose every request failed exited 0
    /// without a word.
    #[test]
    fn every_request_failing_is_said_in_any_mode() {
        let cfg = closed_loop("http://127.0.0.1:1/");
        let mut refused = Stats::new(3);
        for _ in 0..3 {
            refused.error(ErrorKind::Connect, "connection refused");
        }
        let result = RunResult::measured(refused.clone(), Duration::from_secs(1));
        let found = super::super::diagnose(&Description::of(&cfg), &result);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].message,
            "every request failed: none of the 3 got a 2xx or 3xx response (connect errors: \
             3), so the report's figures are those of failures. pace exits 0 all the same, as \
             wrk does; to make such a run fail, give it --slo 'errors<1%' (exit code 4)"
        );
        assert_eq!(codes(&cfg, &responses(&[(404, 5)])), ["all_failed"]);
        // One success is enough; nothing attempted says nothing.
        assert!(codes(&cfg, &responses(&[(404, 5), (200, 1)])).is_empty());
        assert!(codes(&cfg, &Stats::new(3)).is_empty());
    }

    /// Issue 34, item 7: nginx answers 400 to every request with a client
    /// certificate it does not trust; only a missing one got a hint.
    #[test]
    fn mostly_400_with_a_client_certificate_over_https_blames_it() {
        let mut cfg = closed_loop("https://127.0.0.1:1/");
        let mostly_400 = responses(&[(400, 8), (200, 2)]);
        assert!(codes(&cfg, &mostly_400).is_empty(), "no certificate given");
        let run = Description { client_certificate: true, ..Description::of(&cfg) };
        let found = diagnose(&run, &mostly_400);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].code, Code::ClientCertificateRefused);
        assert!(found[0].message.starts_with("8 of the 10 responses were 400 Bad Request"));
        assert!(diagnose(&run, &responses(&[(400, 5), (200, 5)])).is_empty(), "half");
        cfg.target = Target::parse("http://127.0.0.1:1/").unwrap();
        let plain = Description { client_certificate: true, ..Description::of(&cfg) };
        assert!(diagnose(&plain, &mostly_400).is_empty(), "not https");
        // All 400: both said.
        let all = diagnose(&run, &responses(&[(400, 4)]));
        let codes: Vec<Code> = all.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::AllFailed, Code::ClientCertificateRefused]);
    }

    /// Issue 34, item 8: through tinyproxy about 10% of the requests were
    /// read errors, explained only in the README.
    #[test]
    fn closes_through_a_proxy_in_absolute_form_are_the_proxys() {
        let mut cfg = closed_loop("http://127.0.0.1:8080/");
        let mut stats = responses(&[(200, 90)]);
        for _ in 0..10 {
            stats.error(ErrorKind::Read, "connection closed before the response");
        }
        assert!(codes(&cfg, &stats).is_empty(), "no proxy");
        cfg.proxy = Some(proxy::route("http://127.0.0.1:3128", &cfg.target).unwrap());
        let found = diagnose(&Description::of(&cfg), &stats);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].code, Code::ProxyClosedConnections);
        assert!(
            found[0].message.starts_with(
                "10 read errors (connection closed before the response) came through the proxy \
                 http://127.0.0.1:3128, which carried the requests in absolute form"
            ),
            "{}",
            found[0].message
        );
        // Through a CONNECT tunnel the proxy is out of the requests.
        cfg.target = Target::parse("https://127.0.0.1:8443/").unwrap();
        cfg.proxy = Some(proxy::route("http://127.0.0.1:3128", &cfg.target).unwrap());
        assert!(diagnose(&Description::of(&cfg), &stats).is_empty());
    }
}
