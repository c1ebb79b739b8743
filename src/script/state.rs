//! Creating one Lua state as wrk's `script_create` does: all standard
//! libraries (`ffi` and `jit` included, as `luaL_openlibs`), the global
//! `wrk = require "wrk"` from the embedded `wrk.lua`, its fields from the
//! URL and `-H` (and `wrk.grpc` in a `--grpc` run), the C functions
//! (`lookup`, `connect`, `time_us`), then the script file.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use mlua::{Function, Lua, LuaOptions, StdLib, Table};

use crate::config::BenchConfig;
use crate::grpc::call::Call;

/// The `wrk` module, adapted from wrk's `src/wrk.lua`.
const WRK_LUA: &str = include_str!("wrk.lua");

/// Everything needed to create a state for the script: the same for the
/// main state and every thread state.
pub struct Recipe {
    /// The script's text, read once (wrk read the file for every state).
    source: Vec<u8>,
    /// `@<path>`: Lua then names the file in messages as `<path>:<line>:`.
    chunk_name: String,
    /// The path as the user wrote it.
    pub file: String,
    scheme: String,
    host: String,
    /// Only when the URL names it, as wrk's `wrk.port`.
    port: Option<String>,
    path: String,
    headers: Vec<(String, String)>,
    /// `--grpc`: the call, for `wrk.grpc` ([`super::grpc`]).
    grpc: Option<Call>,
}

impl Recipe {
    pub fn new(path: &Path, source: Vec<u8>, cfg: &BenchConfig) -> Recipe {
        let file = path.display().to_string();
        let target = &cfg.target;
        Recipe {
            source,
            chunk_name: format!("@{file}"),
            file,
            scheme: target.scheme_name.clone(),
            host: target.host.clone(),
            port: target.explicit_port.then(|| target.port.to_string()),
            path: target.path.clone(),
            headers: cfg.headers.clone(),
            grpc: cfg.grpc_call.clone(),
        }
    }

    /// A new state that has run the script; returns it with its `wrk`
    /// table. Errors are the script's (syntax, or raised while running its
    /// top level) or, very unlikely, Lua running out of memory.
    pub fn create(&self) -> mlua::Result<(Lua, Table)> {
        // SAFETY: `unsafe_new_with` only lifts mlua's restriction on the
        // `ffi` and `debug` libraries, which wrk scripts may use (wrk opens
        // every library). Memory safety of pace does not depend on scripts
        // not misusing `ffi`: a script is code the user chose to run.
        let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
        let loader = lua.load(WRK_LUA).set_name("=wrk.lua").into_function()?;
        lua.preload_module("wrk", loader)?;
        let require: Function = lua.globals().get("require")?;
        let wrk: Table = require.call("wrk")?;
        lua.globals().set("wrk", &wrk)?;
        self.fill_in(&lua, &wrk)?;
        lua.load(&self.source[..]).set_name(&self.chunk_name).exec()?;
        Ok((lua, wrk))
    }

    fn fill_in(&self, lua: &Lua, wrk: &Table) -> mlua::Result<()> {
        wrk.raw_set("scheme", self.scheme.as_str())?;
        wrk.raw_set("host", self.host.as_str())?;
        wrk.raw_set("port", self.port.as_deref())?;
        wrk.raw_set("path", self.path.as_str())?;
        let headers: Table = wrk.raw_get("headers")?;
        for (name, value) in &self.headers {
            headers.raw_set(name.as_str(), value.as_str())?;
        }
        if let Some(call) = &self.grpc {
            super::grpc::register(lua, wrk, call)?;
        }
        super::addr::register(lua, wrk)?;
        // giltene/wrk2's addition (wrk2#38): wall-clock microseconds.
        let time_us = lua.create_function(|_, ()| {
            let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            Ok(since_epoch.as_micros() as f64)
        })?;
        wrk.raw_set("time_us", time_us)
    }
}
