//! Requests without a script: what `-m`, `--body`, `--body-file`, `-H` and
//! `--targets` describe, turned into the list of request batches every
//! engine thread sends in turn (a Lua script, `-s`, replaces all of it).
//!
//! - One request: `-m` (default GET) of the URL's path, `Host` from the URL
//!   unless `-H` gives one, the `-H` headers, and the body of `--body` or
//!   `--body-file` with its `Content-Length`. POST, PUT and PATCH without a
//!   body say `Content-Length: 0`, as Go's net/http and hyper do (some
//!   servers answer 411 to a POST without a length).
//! - `--targets FILE`: one request per target of a vegeta targets file
//!   ([`targets`]), each with its method, its URL's path and `Host`, the
//!   `-H` headers (a target's own header of the same name replaces them),
//!   and its body (`@file`), else the `--body`. Each goes to its own
//!   scheme, host and port: with several, every thread has connections to
//!   each ([`origins`]) and a request goes on one to its own origin
//!   ([`crate::engine::Routed`] says in which order).
//!
//! Threads start at different places of the list (thread i at request i)
//! and go round, so the run as a whole sends the requests in turn; with
//! `--targets-order random` each thread draws its next request from its own
//! stream of the run's random numbers (the run's seed, `--seed` or a fresh
//! one, is printed on stderr so that the order can be repeated).

mod made;

use std::sync::Arc;

use crate::config::origins::Origins;
use crate::config::targets::TargetsOrder;
use crate::config::BenchConfig;
use crate::endpoint::Endpoint;
use crate::grpc::call::{Call, Message};
use crate::plan::random::Draws;
use crate::request::Request;
use crate::target::Target;
use crate::workload::{Batch, NoScript, Order, Requests, Workload};

/// The stream of the run's random numbers `--targets-order random` draws
/// from (see [`crate::plan::random`]).
const TARGET_DRAWS: u64 = 1;
/// The stream the random actions of `--data`'s templates draw from.
const TEMPLATE_DRAWS: u64 = 2;

/// Methods that carry content: without a body they still say
/// `Content-Length: 0`.
const BODY_METHODS: [&str; 3] = ["POST", "PUT", "PATCH"];

/// The workload of the command line, the first origin's connections going
/// to `endpoint`: every thread sends the same requests (the URL's, or the
/// targets', to the first origin's; a targets file may name more), in
/// turn or in random order (`--targets-order`). Threads are numbered
/// across the shards (`--shard`) as the plan numbers them, thread i of
/// shard s being i·N + s: each starts at its own request and draws its own
/// random order, so that the instances of a shared plan do not repeat one
/// another.
pub fn workload(cfg: &BenchConfig, endpoint: &Endpoint) -> Workload<NoScript> {
    let origins = Origins::of(cfg).list.len();
    let listed = cfg.targets.is_some() || cfg.grpc_messages.len() > 1;
    let random = listed && cfg.targets_order == TargetsOrder::Random;
    if random {
        let what = if cfg.targets.is_some() { "targets" } else { "--data's messages" };
        eprintln!("pace: {what} in random order, seed {} (--seed {0} repeats the order)", cfg.seed);
    }
    let made = cfg.grpc_call.as_ref().is_some_and(Call::made_per_call);
    let batches: Arc<[Batch]> = match made {
        true => Arc::new([]),
        false => batches(cfg).into(),
    };
    let messages: Arc<[Message]> = cfg.grpc_messages.clone().into();
    let metadata: made::MadeMetadata = (cfg.grpc_call.iter())
        .flat_map(|call| call.varying_metadata())
        .map(|(field, template)| (field.to_string(), template.clone()))
        .collect();
    let threads = cfg.threads * cfg.shard.count;
    let threads = (0..cfg.threads)
        .map(|thread| {
            let global = thread * cfg.shard.count + cfg.shard.index;
            let order = match random {
                true => Order::Random(Draws::at(cfg.seed, TARGET_DRAWS, global as u64)),
                false => Order::Sequential,
            };
            if made {
                let call = request(&cfg.method, &cfg.target, &cfg.headers, &[], None);
                let draws = Draws::at(cfg.seed, TEMPLATE_DRAWS, global as u64);
                let made_of = (messages.clone(), metadata.clone());
                let calls = made::MadeCalls::new(call, made_of, order, (global, threads), draws);
                return Requests::Made { maker: Box::new(calls), endpoint: endpoint.clone() };
            }
            let batches = batches.clone();
            Requests::Fixed { batches, origins, first: global, order, endpoint: endpoint.clone() }
        })
        .collect();
    Workload { threads }
}

/// The requests of the command line, one batch (of one request) each: the
/// targets of `--targets` in the order of the file (each knowing its index
/// and its origin), or the one request of `-m`, the URL and the body.
pub fn batches(cfg: &BenchConfig) -> Vec<Batch> {
    let body = cfg.body.as_ref();
    match &cfg.targets {
        Some(targets) => {
            let origins = Origins::of(cfg);
            targets
                .list
                .iter()
                .enumerate()
                .map(|(i, target)| {
                    let body = target.body.as_ref().or(body);
                    let mut request = request(
                        &target.method,
                        &target.target,
                        &cfg.headers,
                        &target.headers,
                        body,
                    );
                    through_proxy(cfg, &target.target, &mut request);
                    Batch::new([request]).routed(i, origins.of_target.get(i).copied().unwrap_or(0))
                })
                .collect()
        }
        // Each gRPC message is a request of its own (those made per call
        // are not in the list: see `workload`).
        None if !cfg.grpc_messages.is_empty() => (cfg.grpc_messages.iter())
            .filter_map(|message| match message {
                Message::Framed(framed) => Some(framed),
                Message::Template(_) => None,
            })
            .map(|framed| {
                let request = request(&cfg.method, &cfg.target, &cfg.headers, &[], Some(framed));
                Batch::new([request])
            })
            .collect(),
        None => {
            let mut request = request(&cfg.method, &cfg.target, &cfg.headers, &[], body);
            through_proxy(cfg, &cfg.target, &mut request);
            vec![Batch::new([request])]
        }
    }
}

/// `request`, to `target`, in the form a proxy takes when the run goes
/// through one in plain HTTP ([`crate::proxy::absolute`]).
fn through_proxy(cfg: &BenchConfig, target: &Target, request: &mut Request) {
    if let Some(form) =
        cfg.proxy.as_ref().and_then(|route| route.absolute_form(cfg.protocol, target))
    {
        form.apply(request);
    }
}

/// One request: `method` of `target`'s path, `Host` (unless a header names
/// one), the run's headers `common` except those `own` replaces (same name,
/// any case), then `own`, and the body (its `Content-Length` is the
/// protocol's to add). `target`'s `user:password@` is its Basic
/// authorization unless a header of its own gives one.
fn request(
    method: &str,
    target: &Target,
    common: &[(String, String)],
    own: &[(String, String)],
    body: Option<&Arc<[u8]>>,
) -> Request {
    let named = |list: &[(String, String)], name: &str| {
        list.iter().any(|(other, _)| other.eq_ignore_ascii_case(name))
    };
    let mut own = own.to_vec();
    if let Some(credentials) =
        target.basic_authorization().filter(|_| !named(&own, "authorization"))
    {
        own.push(("Authorization".to_string(), credentials));
    }
    let headers: Vec<(String, String)> = common
        .iter()
        .filter(|(name, _)| !named(&own, name))
        .cloned()
        .chain(own.iter().cloned())
        .collect();
    let headers = default_headers(&target.host_header(), &headers);
    let body = body.cloned().or(BODY_METHODS.contains(&method).then(|| Arc::from(&[][..])));
    Request {
        method: method.to_string(),
        target: target.path.clone(),
        fields: headers.into_iter().map(|(name, value)| (name, value.into_bytes())).collect(),
        body,
    }
}

/// The headers of every request: `Host` first (`host_header` is the URL's
/// host, with its port when not the default), unless the user gave one of
/// their own (any case); then the user's headers in their order.
fn default_headers(host_header: &str, user: &[(String, String)]) -> Vec<(String, String)> {
    let user_host = user.iter().any(|(name, _)| name.eq_ignore_ascii_case("host"));
    let host = (!user_host).then(|| ("Host".to_string(), host_header.to_string()));
    host.into_iter().chain(user.iter().cloned()).collect()
}

/// Says on stderr which options the script makes pointless (it builds the
/// requests itself).
pub fn note_script_overrides(cfg: &BenchConfig) {
    let mut given = Vec::new();
    // A gRPC call's method (POST) is the call's, not the user's.
    if cfg.method != "GET" && cfg.grpc.is_none() {
        given.push("-m");
    }
    if cfg.body.is_some() {
        given.push("--body/--body-file");
    }
    if cfg.targets.is_some() {
        given.push("--targets");
    }
    if !given.is_empty() {
        eprintln!(
            "pace: the script (-s) makes the requests: {} {} not used",
            given.join(", "),
            if given.len() == 1 { "is" } else { "are" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::targets::{TargetRequest, Targets};
    use crate::http::request::{count_requests, encode};

    fn config(url: &str) -> BenchConfig {
        BenchConfig::new(Target::parse(url).unwrap())
    }

    /// The batch as HTTP/1.1 writes it.
    fn text(batch: &Batch) -> String {
        let mut bytes = Vec::new();
        batch.requests.iter().for_each(|request| encode(request, &mut bytes));
        String::from_utf8(bytes).unwrap()
    }

    fn heads(batch: &Batch) -> Vec<bool> {
        batch.requests.iter().map(Request::is_head).collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect()
    }

    /// Every batch holds one request whose HEAD flag is the parser's.
    fn check(batches: &[Batch]) {
        for batch in batches {
            let parsed = count_requests(text(batch).as_bytes()).unwrap();
            assert_eq!(parsed.is_head, heads(batch), "{}", text(batch));
        }
    }

    #[test]
    fn a_get_of_the_url_by_default() {
        let mut cfg = config("http://example.com:8080/a?b=1");
        cfg.headers = pairs(&[("X-A", "1")]);
        let batches = batches(&cfg);
        check(&batches);
        assert_eq!(batches.len(), 1);
        assert_eq!(
            text(&batches[0]),
            "GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nX-A: 1\r\n\r\n"
        );
    }

    #[test]
    fn method_and_body_with_content_length() {
        let mut cfg = config("http://h/p");
        cfg.method = "POST".into();
        cfg.body = Some(Arc::from(&b"a=b"[..]));
        let batches = batches(&cfg);
        check(&batches);
        assert_eq!(
            text(&batches[0]),
            "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\na=b"
        );
    }

    #[test]
    fn methods_with_content_say_when_they_have_none() {
        let mut cfg = config("http://h/");
        for method in ["POST", "PUT", "PATCH"] {
            cfg.method = method.into();
            let request = text(&batches(&cfg)[0]);
            assert!(request.ends_with("Content-Length: 0\r\n\r\n"), "{request}");
        }
        for method in ["GET", "DELETE", "OPTIONS", "HEAD"] {
            cfg.method = method.into();
            let request = text(&batches(&cfg)[0]);
            assert!(!request.contains("Content-Length"), "{request}");
        }
    }

    #[test]
    fn head_is_flagged() {
        let mut cfg = config("http://h/");
        cfg.method = "HEAD".into();
        let batches = batches(&cfg);
        check(&batches);
        assert_eq!(heads(&batches[0]), [true]);
        cfg.method = "head".into();
        // Methods are case-sensitive: `head` is not HEAD.
        assert_eq!(heads(&super::batches(&cfg)[0]), [false]);
    }

    fn target(line: usize, method: &str, url: &str, headers: &[(&str, &str)]) -> TargetRequest {
        TargetRequest {
            line,
            method: method.into(),
            target: Target::parse(url).unwrap(),
            headers: pairs(headers),
            body: None,
        }
    }

    #[test]
    fn one_request_per_target_with_common_headers_and_body() {
        let mut cfg = config("http://h:1/");
        cfg.headers = pairs(&[("Accept", "*/*"), ("X-Run", "r"), ("x-run", "r2")]);
        cfg.body = Some(Arc::from(&b"common"[..]));
        let mut own_body = target(3, "PUT", "http://h:1/b", &[("X-RUN", "mine")]);
        own_body.body = Some(Arc::from(&b"own"[..]));
        cfg.targets = Some(Targets {
            file: "t.txt".into(),
            list: vec![
                target(1, "GET", "http://h:1/a", &[]),
                own_body,
                target(5, "HEAD", "http://h:1/c", &[("Host", "virtual")]),
            ],
        });
        let batches = batches(&cfg);
        check(&batches);
        let texts: Vec<String> = batches.iter().map(text).collect();
        assert_eq!(
            texts,
            [
                "GET /a HTTP/1.1\r\nHost: h:1\r\nAccept: */*\r\nX-Run: r\r\nx-run: r2\r\n\
                 Content-Length: 6\r\n\r\ncommon",
                "PUT /b HTTP/1.1\r\nHost: h:1\r\nAccept: */*\r\nX-RUN: mine\r\n\
                 Content-Length: 3\r\n\r\nown",
                "HEAD /c HTTP/1.1\r\nAccept: */*\r\nX-Run: r\r\nx-run: r2\r\nHost: virtual\r\n\
                 Content-Length: 6\r\n\r\ncommon",
            ]
        );
        let heads: Vec<Vec<bool>> = batches.iter().map(heads).collect();
        assert_eq!(heads, [[false], [false], [true]]);
    }

    #[test]
    fn a_targets_credentials_are_its_own_authorization() {
        let mut cfg = config("http://h/");
        cfg.headers = pairs(&[("Authorization", "Bearer run")]);
        cfg.targets = Some(Targets {
            file: "t.txt".into(),
            list: vec![
                target(1, "GET", "http://u:p@h/a", &[]),
                target(2, "GET", "http://u:p@h/b", &[("authorization", "Bearer own")]),
                target(3, "GET", "http://h/c", &[]),
            ],
        });
        let texts: Vec<String> = batches(&cfg).iter().map(text).collect();
        assert!(texts[0].contains("\r\nAuthorization: Basic dTpw\r\n"), "{}", texts[0]);
        assert!(!texts[0].contains("Bearer"), "{}", texts[0]);
        assert!(texts[1].contains("\r\nauthorization: Bearer own\r\n"), "{}", texts[1]);
        assert!(!texts[1].contains("Basic") && !texts[1].contains("run"), "{}", texts[1]);
        assert!(texts[2].contains("\r\nAuthorization: Bearer run\r\n"), "{}", texts[2]);
    }

    #[test]
    fn threads_start_at_their_own_target() {
        let mut cfg = config("http://h/");
        cfg.threads = 3;
        cfg.targets = Some(Targets {
            file: "t.txt".into(),
            list: vec![target(1, "GET", "http://h/a", &[]), target(2, "GET", "http://h/b", &[])],
        });
        let endpoint = Endpoint::Tcp("127.0.0.1:1".parse().unwrap());
        let firsts: Vec<usize> = (workload(&cfg, &endpoint).threads.iter())
            .map(|requests| match requests {
                Requests::Fixed { first, order: Order::Sequential, .. } => *first,
                _ => panic!("not in turn"),
            })
            .collect();
        assert_eq!(firsts, [0, 1, 2]);
        // Shard 1 of 2: its threads are the plan's threads 1 and 3.
        cfg.threads = 2;
        cfg.shard = crate::config::Shard { index: 1, count: 2 };
        let firsts: Vec<usize> = (workload(&cfg, &endpoint).threads.iter())
            .map(|requests| match requests {
                Requests::Fixed { first, .. } => *first,
                _ => panic!("not fixed"),
            })
            .collect();
        assert_eq!(firsts, [1, 3]);
    }

    #[test]
    fn random_order_is_seeded_per_thread() {
        let mut cfg = config("http://h/");
        cfg.threads = 2;
        cfg.targets_order = TargetsOrder::Random;
        cfg.seed = 42;
        let list = (0..10).map(|i| target(i + 1, "GET", &format!("http://h/{i}"), &[])).collect();
        cfg.targets = Some(Targets { file: "t.txt".into(), list });
        let endpoint = Endpoint::Tcp("127.0.0.1:1".parse().unwrap());
        let draws = |cfg: &BenchConfig| -> Vec<Vec<u64>> {
            (workload(cfg, &endpoint).threads.into_iter())
                .map(|requests| match requests {
                    Requests::Fixed { order: Order::Random(mut draws), .. } => {
                        (0..50).map(|_| (draws.uniform() * 1e9) as u64).collect()
                    }
                    _ => panic!("not random"),
                })
                .collect()
        };
        let first = draws(&cfg);
        assert_eq!(first, draws(&cfg));
        assert_ne!(first[0], first[1], "the threads draw differently");
        cfg.seed = 43;
        assert_ne!(first, draws(&cfg));
    }

    #[test]
    fn host_comes_first_unless_the_user_gives_one() {
        let user = pairs(&[("Accept", "*/*"), ("X", "y")]);
        let expected = pairs(&[("Host", "example.com:8080"), ("Accept", "*/*"), ("X", "y")]);
        assert_eq!(default_headers("example.com:8080", &user), expected);
        let user = pairs(&[("Accept", "*/*"), ("hOsT", "other")]);
        assert_eq!(default_headers("example.com", &user), user);
    }
}
