//! The `addr` userdata and the two functions that make them, as in wrk's
//! `src/script.c`: `script_wrk_lookup` (`wrk.lookup(host, service)`),
//! `script_wrk_connect` (`wrk.connect(addr)`) and `script_addr_tostring`
//! (`tostring(addr)` gives `host:port`, IPv6 without brackets).
//!
//! Two deliberate differences from wrk: a failed lookup raises a Lua error
//! (`unable to resolve host:service: reason`) instead of exiting the
//! process, and the test connection of `wrk.connect` gives up after
//! [`CONNECT_TIMEOUT`] instead of waiting for the kernel's SYN retries.
//!
//! One addition: with `--unix-socket`, `wrk.addrs` holds the socket, an
//! addr whose `tostring` is `unix:/path`; it works with `wrk.connect` and
//! `thread.addr` like any other.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use mlua::{Lua, MetaMethod, Table, UserData, UserDataMethods, Value};

use super::errors::located_error;
use super::value::lua_type_name;
use crate::endpoint::Endpoint;
use crate::error::io_reason;

/// How long `wrk.connect` waits for a test connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A resolved socket address (or a Unix socket), as Lua scripts see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Addr(pub Endpoint);

impl UserData for Addr {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, addr, ()| {
            Ok(match &addr.0 {
                // wrk's `host:port`, IPv6 without brackets.
                Endpoint::Tcp(addr) => format!("{}:{}", addr.ip(), addr.port()),
                unix => unix.to_string(),
            })
        });
    }
}

/// The address inside `value`, if it is an `addr` userdata.
pub fn addr_of(value: &Value) -> Option<Addr> {
    match value {
        Value::UserData(data) => data.borrow::<Addr>().ok().map(|addr| addr.clone()),
        _ => None,
    }
}

/// Adds `wrk.lookup` and `wrk.connect` to the `wrk` table.
pub fn register(lua: &Lua, wrk: &Table) -> mlua::Result<()> {
    let lookup = lua.create_function(|lua, (host, service): (Value, Value)| {
        let host = plain_text(&host);
        let service = plain_text(&service);
        let addrs = resolve(&host, &service).map_err(|reason| {
            located_error(lua, format!("unable to resolve {host}:{service}: {reason}"))
        })?;
        lua.create_sequence_from(addrs.into_iter().map(|addr| Addr(Endpoint::Tcp(addr))))
    })?;
    let connect = lua.create_function(|lua, addr: Value| {
        let addr = addr_of(&addr).ok_or_else(|| {
            located_error(
                lua,
                format!(
                    "bad argument #1 to 'connect' (addr expected, got {})",
                    lua_type_name(&addr)
                ),
            )
        })?;
        Ok(addr.0.connect(CONNECT_TIMEOUT).is_ok())
    })?;
    wrk.raw_set("lookup", lookup)?;
    wrk.raw_set("connect", connect)
}

/// A string or number argument as text (wrk uses `lua_tostring`, which
/// gives NULL for anything else: shown here as `nil`).
fn plain_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.to_string_lossy(),
        Value::Integer(n) => n.to_string(),
        Value::Number(n) => n.to_string(),
        _ => "nil".to_string(),
    }
}

/// getaddrinfo(host, service) for TCP, through std's resolver. The service
/// is a port number or one of the names URLs use.
fn resolve(host: &str, service: &str) -> Result<Vec<SocketAddr>, String> {
    let port = match service {
        "http" => 80,
        "https" => 443,
        _ => service.parse::<u16>().map_err(|_| "unknown service".to_string())?,
    };
    let addrs: Vec<SocketAddr> =
        (host, port).to_socket_addrs().map_err(|err| io_reason(&err))?.collect();
    if addrs.is_empty() {
        return Err("no addresses found".to_string());
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua_with_wrk() -> (Lua, Table) {
        let lua = Lua::new();
        let wrk = lua.create_table().unwrap();
        register(&lua, &wrk).unwrap();
        lua.globals().set("wrk", &wrk).unwrap();
        (lua, wrk)
    }

    #[test]
    fn lookup_gives_addrs_that_print_as_host_port() {
        let (lua, _) = lua_with_wrk();
        let printed: String = lua
            .load(r#"local a = wrk.lookup("127.0.0.1", "8080") return #a .. " " .. tostring(a[1])"#)
            .eval()
            .unwrap();
        assert_eq!(printed, "1 127.0.0.1:8080");
        let printed: String =
            lua.load(r#"return tostring(wrk.lookup("::1", "http")[1])"#).eval().unwrap();
        assert_eq!(printed, "::1:80");
    }

    #[test]
    fn failed_lookup_is_a_lua_error_with_the_line() {
        let (lua, _) = lua_with_wrk();
        let err = lua
            .load("\nlocal a = wrk.lookup('127.0.0.1', 'nonsense')")
            .set_name("@x.lua")
            .exec()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("x.lua:2: unable to resolve 127.0.0.1:nonsense: unknown service"),
            "{err}"
        );
    }

    #[test]
    fn connect_tells_whether_something_listens() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (lua, _) = lua_with_wrk();
        let code = format!("return wrk.connect(wrk.lookup('127.0.0.1', '{port}')[1])");
        assert!(lua.load(&code).eval::<bool>().unwrap());
        drop(listener);
        assert!(!lua.load(&code).eval::<bool>().unwrap());
        let err = lua.load("return wrk.connect(5)").eval::<bool>().unwrap_err().to_string();
        assert!(err.contains("addr expected, got number"), "{err}");
    }
}
