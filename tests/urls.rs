//! URLs as people type them: with spaces and other bytes a request
//! target may not hold (encoded as curl encodes them), and with a
//! password (masked wherever pace prints the URL).

mod common;

use std::time::Duration;

use common::{default_server, load_lock, pace, url};

const LIMIT: Duration = Duration::from_secs(30);

/// Prints the first response's body: against `/echo`, the request as the
/// server received it.
const PRINT_BODY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/print_body.lua");

/// `http://host/a b` was sent raw: the space ended the request line and
/// every response was 400. Now the request is curl's, the header keeps
/// the URL as typed.
#[test]
fn spaces_and_other_bytes_are_sent_encoded_as_curl_sends_them() {
    let _load = load_lock();
    let server = default_server();
    let typed = url(server.addr(), "/echo?q=x y&name=café&json={\"a\"}");
    let run = pace(&["-t1", "-c1", "-n", "3", "-s", PRINT_BODY, &typed], LIMIT);
    run.assert_ok();
    let sent = "\nGET /echo?q=x+y&name=caf%C3%A9&json=%7B%22a%22%7D\n";
    assert!(run.stdout.contains(sent), "{run}");
    assert!(run.stdout.contains(&format!("Running 3 requests @ {typed}\n")), "{run}");
    // A space in the path, without a script: answered 200, not 400.
    let typed = url(server.addr(), "/a b/c d");
    let run = pace(&["-t1", "-c1", "-n", "5", &typed], LIMIT);
    run.assert_ok();
    assert_eq!(run.report().requests(), 5, "{run}");
    assert_eq!(run.report().non_2xx_3xx(), None, "{run}");
}

/// The text report's header masks the password as the JSON and the HTML
/// do; the server still gets it as Basic authorization.
#[test]
fn the_header_masks_the_password_of_the_url() {
    let _load = load_lock();
    let server = default_server();
    let typed = format!("http://alice:s3cret@{}/echo", server.addr());
    let run = pace(&["-t1", "-c1", "-n", "3", "-s", PRINT_BODY, &typed], LIMIT);
    run.assert_ok();
    let masked = format!("Running 3 requests @ http://alice:***@{}/echo\n", server.addr());
    assert!(run.stdout.contains(&masked), "{run}");
    assert!(!run.stdout.contains("s3cret") && !run.stderr.contains("s3cret"), "{run}");
    // alice:s3cret in base64.
    assert!(run.stdout.contains("Authorization: Basic YWxpY2U6czNjcmV0"), "{run}");
}
