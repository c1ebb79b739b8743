//! The `thread` userdata (wrk's `wrk.thread` metatable in `src/script.c`:
//! `script_thread_index`, `script_thread_newindex`, `script_thread_get`,
//! `script_thread_set`, `script_thread_stop`).
//!
//! The same object is seen from two states: the main state gets it in
//! `setup(thread)` (and keeps it for `done`), the thread's own state has it
//! as `wrk.thread`. Both hold an `Arc` of [`ThreadShared`]; it refers to
//! the thread's state weakly, so the thread state's own `wrk.thread` does
//! not keep that state alive in a cycle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mlua::{BString, Lua, MetaMethod, UserData, UserDataFields, UserDataMethods, Value, WeakLua};

use super::addr::{addr_of, Addr};
use super::errors::located_error;
use super::value::{lua_type_name, Transfer};
use crate::endpoint::Endpoint;

/// What the engine thread and both Lua states share about one thread.
pub struct ThreadShared {
    /// Where the thread's next connection goes (`thread.addr`).
    addr: Mutex<Endpoint>,
    /// `thread:stop()` was called.
    stop: AtomicBool,
    /// The thread's own Lua state, for `thread:get/set` from the main state.
    state: WeakLua,
}

impl ThreadShared {
    pub fn new(addr: Endpoint, state: WeakLua) -> ThreadShared {
        ThreadShared { addr: Mutex::new(addr), stop: AtomicBool::new(false), state }
    }

    pub fn addr(&self) -> Endpoint {
        self.addr.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    fn set_addr(&self, addr: Endpoint) {
        *self.addr.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = addr;
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn state(&self, caller: &Lua) -> mlua::Result<Lua> {
        self.state
            .try_upgrade()
            .ok_or_else(|| located_error(caller, "the thread's Lua state is gone"))
    }
}

/// The `thread` userdata.
#[derive(Clone)]
pub struct ThreadHandle(pub Arc<ThreadShared>);

impl UserData for ThreadHandle {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        // A copy, as in wrk: changing it does not move the thread.
        fields.add_field_method_get("addr", |_, thread| Ok(Addr(thread.0.addr())));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // Names are plain text before they reach the other state: mlua
        // refuses (panics on) a value of one state used in another.
        methods.add_method("get", |lua, thread, name: BString| {
            let state = thread.0.state(lua)?;
            let value: Value = state.globals().get(state.create_string(name)?)?;
            let detached = Transfer::from_lua(&value).map_err(|err| located_error(lua, err))?;
            detached.into_lua(lua)
        });
        methods.add_method("set", |lua, thread, (name, value): (BString, Value)| {
            let detached = Transfer::from_lua(&value).map_err(|err| located_error(lua, err))?;
            let state = thread.0.state(lua)?;
            let copied = detached.into_lua(&state)?;
            state.globals().set(state.create_string(name)?, copied)
        });
        methods.add_method("stop", |_, thread, ()| {
            thread.0.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
        methods.add_meta_method(
            MetaMethod::NewIndex,
            |lua, thread, (key, value): (Value, Value)| match (&key, addr_of(&value)) {
                (Value::String(name), Some(addr)) if name.as_bytes().as_ref() == b"addr" => {
                    thread.0.set_addr(addr.0);
                    Ok(())
                }
                _ => Err(located_error(
                    lua,
                    format!("cannot set '{}' on thread", lua_type_name(&value)),
                )),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(addr: &str) -> Endpoint {
        Endpoint::Tcp(addr.parse().unwrap())
    }

    /// A main state with `thread` and a thread state with `wrk.thread`,
    /// sharing one [`ThreadShared`].
    fn two_states() -> (Lua, Lua, Arc<ThreadShared>) {
        let main = Lua::new();
        let own = Lua::new();
        let shared = Arc::new(ThreadShared::new(tcp("127.0.0.1:80"), own.weak()));
        main.globals().set("thread", ThreadHandle(shared.clone())).unwrap();
        main.globals().set("other", Addr(tcp("[::1]:8080"))).unwrap();
        let wrk = own.create_table().unwrap();
        wrk.set("thread", ThreadHandle(shared.clone())).unwrap();
        own.globals().set("wrk", wrk).unwrap();
        (main, own, shared)
    }

    #[test]
    fn addr_is_read_and_replaced() {
        let (main, own, shared) = two_states();
        let before: String = main.load("return tostring(thread.addr)").eval().unwrap();
        assert_eq!(before, "127.0.0.1:80");
        main.load("thread.addr = other").exec().unwrap();
        assert_eq!(shared.addr(), tcp("[::1]:8080"));
        let seen: String = own.load("return tostring(wrk.thread.addr)").eval().unwrap();
        assert_eq!(seen, "::1:8080");
    }

    #[test]
    fn setting_anything_else_names_the_type() {
        let (main, _own, _) = two_states();
        let err = main.load("\nthread.addr = 'x'").set_name("@s.lua").exec().unwrap_err();
        assert!(err.to_string().contains("s.lua:2: cannot set 'string' on thread"), "{err}");
        let err = main.load("thread.id = 5").set_name("@s.lua").exec().unwrap_err();
        assert!(err.to_string().contains("s.lua:1: cannot set 'number' on thread"), "{err}");
    }

    #[test]
    fn set_and_get_copy_between_the_states() {
        let (main, own, _) = two_states();
        main.load("thread:set('id', 3) thread:set('conf', { path = '/a', list = { 1, 2 } })")
            .exec()
            .unwrap();
        let seen: String = own
            .load("return id .. conf.path .. conf.list[2] .. tostring(rawequal(conf, nil))")
            .eval()
            .unwrap();
        assert_eq!(seen, "3/a2false");
        own.load("counts = { requests = 10, ['/x'] = 'y' }").exec().unwrap();
        let back: String = main
            .load("local c = thread:get('counts') return c.requests .. c['/x']")
            .eval()
            .unwrap();
        assert_eq!(back, "10y");
        let own_view: f64 = own.load("return wrk.thread:get('id')").eval().unwrap();
        assert_eq!(own_view, 3.0);
        let err = main.load("thread:set('f', print)").exec().unwrap_err();
        assert!(err.to_string().contains("cannot transfer 'function' to thread"), "{err}");
    }

    #[test]
    fn stop_from_either_state() {
        let (main, own, shared) = two_states();
        assert!(!shared.stop_requested());
        own.load("wrk.thread:stop()").exec().unwrap();
        assert!(shared.stop_requested());
        main.load("thread:stop()").exec().unwrap();
    }

    #[test]
    fn a_dropped_thread_state_is_an_error_not_a_crash() {
        let (main, own, _) = two_states();
        drop(own);
        let err = main.load("thread:get('x')").exec().unwrap_err();
        assert!(err.to_string().contains("the thread's Lua state is gone"), "{err}");
    }
}
