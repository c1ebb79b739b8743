//! The wrk Lua API (wrk's `src/script.c` and `src/wrk.lua`), so that wrk
//! and wrk2 scripts run unchanged: one main state for `setup` and `done`,
//! one state per engine thread for `init`, `delay`, `request` and
//! `response`, created and called in wrk's order (reference 4.1):
//!
//! 1. [`Script::load`]: the main state runs the script (`script_create`),
//!    then [`Script::set_addrs`] gives it the checked addresses
//!    (`script_resolve`).
//! 2. [`Script::thread`] for each thread in turn: create the thread's state,
//!    set `wrk.thread`, call `setup(thread)` in the main state, then
//!    `wrk.init(args)` in the thread state, which calls the script's
//!    `init(args)` and freezes the static request (`script_init`).
//! 3. During the run the engine thread owns its [`ThreadScript`]:
//!    [`ThreadScript::request`], [`ThreadScript::response`],
//!    [`ThreadScript::delay`] (`script_request`, `script_response`,
//!    `script_delay`).
//! 4. [`Script::done`]: `done(summary, latency, requests)` in the main
//!    state, with the thread states back so `thread:get` still works
//!    (`script_summary`, `script_errors`, `script_done`).
//!
//! States are `Send` (mlua's `send` feature), so thread states are created
//! on the main thread in that order, moved to their engine threads and
//! handed back for `done`. Nothing is shared between states except what
//! `thread:get/set` copies and the thread's address and stop flag.
//!
//! Every call into Lua is protected: an error is a [`ScriptError`] (or
//! [`Error::Script`]) with `file:line:` and the Lua traceback, never a
//! process abort as in wrk.

mod addr;
mod errors;
mod grpc;
mod interrupt;
mod state;
mod stats;
mod thread;
mod value;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mlua::{Function, Lua, Table, Value};

use crate::config::BenchConfig;
use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::stats::RunResult;
use crate::workload::{Interrupt, Scripted};

pub use errors::ScriptError;
pub use interrupt::{Call, Interrupter};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use value::Transfer;

use addr::Addr;
use errors::describe;
use state::Recipe;
use stats::StatsObject;
use thread::{ThreadHandle, ThreadShared};

/// The main Lua state: runs the script file, `setup(thread)` for every
/// thread and `done()` at the end.
pub struct Script {
    main: Lua,
    /// The main state's `wrk` table.
    wrk: Table,
    recipe: Recipe,
    /// `init(args)`'s words: the URL, then the words after it.
    args: Vec<String>,
    interrupter: Interrupter,
}

impl Script {
    /// Creates the main state and runs the script in it. A script that
    /// cannot be read is [`Error::Setup`]; a syntax error or an error
    /// raised while the script runs is [`Error::Script`]
    /// (`<file>:<line>: <message>`, then the traceback for runtime errors).
    pub fn load(path: &Path, cfg: &BenchConfig) -> Result<Script, Error> {
        let source = crate::files::read_bounded(path, crate::files::SCRIPT)?;
        let recipe = Recipe::new(path, source, cfg);
        let (main, wrk) = recipe.create().map_err(script_error)?;
        let args = std::iter::once(cfg.target.url.clone())
            .chain(cfg.script_args.iter().cloned())
            .collect();
        let interrupter = Interrupter::new(&main);
        Ok(Script { main, wrk, recipe, args, interrupter })
    }

    /// Stops the main state's running call (`done()`) from another thread
    /// (see [`Interrupter`]).
    pub fn interrupter(&self) -> Interrupter {
        self.interrupter.clone()
    }

    /// Sets `wrk.addrs` in the main state: the target's addresses that
    /// accepted a test connection (wrk's `wrk.resolve`, which runs after
    /// the script was loaded, so a broken script stops pace before any
    /// connection is made).
    pub fn set_addrs(&mut self, addrs: &[Endpoint]) -> Result<(), Error> {
        let addrs = self
            .main
            .create_sequence_from(addrs.iter().cloned().map(Addr))
            .map_err(script_error)?;
        self.wrk.raw_set("addrs", addrs).map_err(script_error)
    }

    /// Creates the next thread's state, in wrk's order: the state runs the
    /// script, gets `wrk.thread`; `setup(thread)` runs in the main state
    /// (it may set `thread.addr` and call `thread:set`); `wrk.init(args)`
    /// runs in the thread state. The thread starts with `default_addr`.
    ///
    /// (wrk's thread index is not needed: threads are created in order and
    /// scripts never see an index.)
    pub fn thread(&mut self, default_addr: Endpoint) -> Result<ThreadScript, Error> {
        let (lua, shared) = self.set_up_thread(default_addr).map_err(script_error)?;
        ThreadScript::new(lua, shared, &self.recipe.file).map_err(Error::from)
    }

    fn set_up_thread(&self, default_addr: Endpoint) -> mlua::Result<(Lua, Arc<ThreadShared>)> {
        let (lua, wrk) = self.recipe.create()?;
        let shared = Arc::new(ThreadShared::new(default_addr, lua.weak()));
        wrk.raw_set("thread", ThreadHandle(shared.clone()))?;
        let setup: Function = self.wrk.raw_get("setup")?;
        setup.call::<()>(ThreadHandle(shared.clone()))?;
        let args = lua.create_table()?;
        for (index, word) in self.args.iter().enumerate() {
            // args[0] is the URL (wrk's lua_rawseti from 0).
            args.raw_set(index, word.as_str())?;
        }
        let init: Function = wrk.raw_get("init")?;
        init.call::<()>(args)?;
        Ok((lua, shared))
    }

    /// Calls `done(summary, latency, requests)` in the main state, if the
    /// script has one. `threads` are the thread states back from the
    /// engine: `thread:get` in `done` reads them. `latency` is the
    /// corrected histogram (us); `requests` the per-thread Req/Sec samples.
    pub fn done(&mut self, result: &RunResult, threads: Vec<ThreadScript>) -> Result<(), Error> {
        let Some(done) = global_function(&self.main, "done") else {
            return Ok(());
        };
        let summary = stats::summary(&self.main, result).map_err(script_error)?;
        let latency = StatsObject::latency(&result.total.corrected);
        let requests = StatsObject::rates(&result.total.rate_samples);
        self.interrupter
            .calling(Call::Done, || done.call::<()>((summary, latency, requests)))
            .map_err(script_error)?;
        // Only now may the thread states go.
        drop(threads);
        Ok(())
    }
}

/// One thread's Lua state, owned by its engine thread during the run.
pub struct ThreadScript {
    shared: Arc<ThreadShared>,
    /// The request frozen by `wrk.init` (`wrk.request()`).
    static_request: Arc<[u8]>,
    request: Option<Function>,
    response: Option<Function>,
    /// The metatable of the headers `response()` gets (with it).
    headers_metatable: Option<Table>,
    delay: Option<Function>,
    /// The script's path, for messages.
    file: String,
    interrupter: Interrupter,
    /// Last: the functions above refer to it.
    lua: Lua,
}

impl ThreadScript {
    fn new(lua: Lua, shared: Arc<ThreadShared>, file: &str) -> Result<ThreadScript, ScriptError> {
        let wrk: Table = lua.globals().get("wrk")?;
        let frozen: Function = wrk.get("request")?;
        let static_request = request_bytes(frozen.call(())?, file, "wrk.request()")?;
        let response = global_function(&lua, "response");
        let headers_metatable = response.as_ref().map(|_| headers_metatable(&lua)).transpose()?;
        Ok(ThreadScript {
            request: global_function(&lua, "request"),
            response,
            headers_metatable,
            delay: global_function(&lua, "delay"),
            shared,
            static_request,
            file: file.to_string(),
            interrupter: Interrupter::new(&lua),
            lua,
        })
    }

    /// Stops this state's running call from another thread (see
    /// [`Interrupter`]), and names it.
    pub fn interrupter(&self) -> Interrupter {
        self.interrupter.clone()
    }

    /// `thread.addr`: where this thread's next connection goes (`setup`
    /// may have changed it; read it whenever a connection is opened).
    pub fn endpoint(&self) -> Endpoint {
        self.shared.addr()
    }

    /// A global `response()` function exists: the engine must capture each
    /// response's headers and body and call [`ThreadScript::response`].
    pub fn has_response(&self) -> bool {
        self.response.is_some()
    }

    /// A global `delay()` function exists (wrk >= 4.0.2).
    pub fn has_delay(&self) -> bool {
        self.delay.is_some()
    }

    /// Never calls `delay()` (with `-R` the plan sets the send times).
    pub fn ignore_delay(&mut self) {
        self.delay = None;
    }

    /// The bytes of the next request batch (one request, or several for
    /// pipelining). Static scripts: the frozen request, shared (no Lua
    /// call, no copy). Dynamic scripts: `request()`'s string, copied once.
    /// None when `request()` returned nil (a script whose index ran past
    /// its table): wrk's connection then sends nothing more; pace warns
    /// once and the caller may try again.
    pub fn request(&mut self) -> Result<Option<Arc<[u8]>>, ScriptError> {
        let Some(request) = &self.request else {
            return Ok(Some(self.static_request.clone()));
        };
        match self.interrupter.calling(Call::Request, || request.call(()))? {
            Value::Nil => {
                warn_nil_request_once(request);
                Ok(None)
            }
            value => request_bytes(value, &self.file, "request()").map(Some),
        }
    }

    /// Calls `response(status, headers, body)` for a complete response:
    /// headers as received (the last of duplicate names wins; `pairs()`
    /// gives their names as they came), looked up in any case
    /// (`headers["etag"]`, `headers["ETag"]`), the body de-chunked.
    pub fn response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), ScriptError> {
        let Some(response) = &self.response else {
            return Ok(());
        };
        let table = self.lua.create_table_with_capacity(0, headers.len())?;
        for (name, value) in headers {
            table.raw_set(name.as_str(), value.as_str())?;
        }
        table.set_metatable(self.headers_metatable.clone())?;
        let body = self.lua.create_string(body)?;
        self.interrupter.calling(Call::Response, || response.call::<()>((status, table, body)))?;
        Ok(())
    }

    /// Calls `delay()`: how long to wait before the next batch. wrk
    /// truncates the milliseconds to an integer; pace keeps the fraction.
    /// Anything but a positive number is no delay, as in wrk.
    pub fn delay(&mut self) -> Result<Duration, ScriptError> {
        let Some(delay) = &self.delay else {
            return Ok(Duration::ZERO);
        };
        let ms = match self.interrupter.calling(Call::Delay, || delay.call::<Value>(()))? {
            Value::Integer(n) => n as f64,
            Value::Number(n) => n,
            Value::String(s) => s.to_str().ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0.0),
            _ => 0.0,
        };
        Ok(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::ZERO))
    }

    /// `thread:stop()` was called, from this thread's state or the main
    /// state: the thread should stop sending.
    pub fn stop_requested(&self) -> bool {
        self.shared.stop_requested()
    }
}

/// The engine's view of a thread's script (see [`crate::workload`]).
impl Scripted for ThreadScript {
    type Interrupter = Interrupter;

    fn request(&mut self) -> Result<Option<Arc<[u8]>>, ScriptError> {
        ThreadScript::request(self)
    }

    fn wants_responses(&self) -> bool {
        self.has_response()
    }

    fn response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), ScriptError> {
        ThreadScript::response(self, status, headers, body)
    }

    fn delay(&mut self) -> Result<Duration, ScriptError> {
        ThreadScript::delay(self)
    }

    fn stop_requested(&self) -> bool {
        ThreadScript::stop_requested(self)
    }

    fn endpoint(&self) -> Endpoint {
        ThreadScript::endpoint(self)
    }

    fn interrupter(&self) -> Interrupter {
        ThreadScript::interrupter(self)
    }
}

impl Interrupt for Interrupter {
    fn interrupt(&self) {
        Interrupter::interrupt(self)
    }

    fn withdraw(&self) {
        Interrupter::withdraw(self)
    }

    fn running(&self) -> Option<&'static str> {
        Interrupter::running(self).map(Call::name)
    }
}

/// The metatable of a response's headers: a name not there as written is
/// looked up in any case. Header names are case-insensitive (RFC 9110),
/// and the case a script sees depends on the server and the protocol
/// (HTTP/2 sends them lower-cased and pace gives them an HTTP/1.1 case,
/// which cannot know `ETag` from `Etag`), so a script written against one
/// server finds its header on any. The lookup runs only on a miss, over a
/// response's few headers, with functions taken before the script could
/// replace them.
fn headers_metatable(lua: &Lua) -> mlua::Result<Table> {
    const ANY_CASE: &str = r#"
        local next, type, lower = next, type, string.lower
        return function(headers, name)
            if type(name) ~= "string" then return nil end
            local wanted = lower(name)
            for key, value in next, headers do
                if type(key) == "string" and lower(key) == wanted then return value end
            end
            return nil
        end
    "#;
    let index: Function = lua.load(ANY_CASE).set_name("=pace headers").eval()?;
    let metatable = lua.create_table()?;
    metatable.raw_set("__index", index)?;
    Ok(metatable)
}

/// Says once per run, on stderr, that `request()` returned nil.
fn warn_nil_request_once(request: &Function) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    let info = request.info();
    let source = info.short_src.unwrap_or_default();
    let line = info.line_defined.unwrap_or(0);
    eprintln!(
        "pace: warning: request() ({source}:{line}) returned nil instead of a request: that \
         send is skipped and the connection tries again (counted in the report)"
    );
}

/// The request string a Lua function returned.
fn request_bytes(value: Value, file: &str, function: &str) -> Result<Arc<[u8]>, ScriptError> {
    match value {
        Value::String(s) => Ok(Arc::from(&*s.as_bytes())),
        other => Err(ScriptError(format!(
            "{file}: {function} returned {} instead of the request string",
            value::lua_type_name(&other)
        ))),
    }
}

/// The global `name`, if it is a function (wrk's `script_is_function`).
fn global_function(lua: &Lua, name: &str) -> Option<Function> {
    lua.globals().get::<Option<Function>>(name).ok().flatten()
}

fn script_error(err: mlua::Error) -> Error {
    Error::Script(describe(&err))
}
