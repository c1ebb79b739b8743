//! Stopping a Lua call that does not return: a script stuck in a loop in
//! `response()` or `done()` must not keep pace from ending the run.
//!
//! Lua's way, which LuaJIT's own interpreter uses on Ctrl-C, is a hook set
//! from outside the running code (`lua_sethook` is meant to be called
//! asynchronously): at the next instruction the hook raises an error,
//! which unwinds the call like any script error. LuaJIT does not run hooks
//! inside code its JIT compiled, so a hot loop without calls may never
//! see it; whoever interrupts must be ready to give up on the thread.
//!
//! Each state also says which of its functions is running, so a stuck
//! call can be named.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use mlua::{ffi, Lua};

/// The script functions pace calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Call {
    Request = 1,
    Response = 2,
    Delay = 3,
    Done = 4,
}

impl Call {
    pub fn name(self) -> &'static str {
        match self {
            Call::Request => "request()",
            Call::Response => "response()",
            Call::Delay => "delay()",
            Call::Done => "done()",
        }
    }

    fn from_u8(value: u8) -> Option<Call> {
        [Call::Request, Call::Response, Call::Delay, Call::Done]
            .into_iter()
            .find(|call| *call as u8 == value)
    }
}

/// Can interrupt one Lua state from another thread.
#[derive(Clone)]
pub struct Interrupter {
    state: *mut ffi::lua_State,
    running: Arc<AtomicU8>,
}

// SAFETY: the pointer is only handed to lua_sethook, which Lua documents as
// safe to call while the state runs on another thread (LuaJIT's interpreter
// calls it from a signal handler); the state outlives every Interrupter,
// because the engine keeps each thread's state (the ThreadScript) until
// after it stopped interrupting.
unsafe impl Send for Interrupter {}
unsafe impl Sync for Interrupter {}

impl Interrupter {
    pub(super) fn new(lua: &Lua) -> Interrupter {
        let mut state = std::ptr::null_mut();
        // SAFETY: the closure only copies the state pointer.
        let captured = unsafe { lua.exec_raw::<()>((), |raw| state = raw) };
        debug_assert!(captured.is_ok() && !state.is_null());
        Interrupter { state, running: Arc::new(AtomicU8::new(0)) }
    }

    /// Makes the running Lua code fail at its next instruction (see the
    /// module documentation for what LuaJIT cannot interrupt).
    pub fn interrupt(&self) {
        let mask = ffi::LUA_MASKCALL | ffi::LUA_MASKRET | ffi::LUA_MASKCOUNT;
        // SAFETY: see the Send/Sync comment above.
        unsafe { ffi::lua_sethook(self.state, Some(interrupt_hook), mask, 1) };
    }

    /// Takes back an interruption that found no Lua code running, so that
    /// it does not fail a later call.
    pub fn withdraw(&self) {
        // SAFETY: as for `interrupt`; called when the state is idle.
        unsafe { ffi::lua_sethook(self.state, None, 0, 0) };
    }

    /// The script function running now, if one is.
    pub fn running(&self) -> Option<Call> {
        Call::from_u8(self.running.load(Ordering::Relaxed))
    }

    /// Runs `f` as a call of `call`, so that `running` can name it.
    pub(super) fn calling<R>(&self, call: Call, f: impl FnOnce() -> R) -> R {
        self.running.store(call as u8, Ordering::Relaxed);
        let result = f();
        self.running.store(0, Ordering::Relaxed);
        result
    }
}

/// Raises `file:line: interrupted by pace` where the code is, once.
unsafe extern "C-unwind" fn interrupt_hook(state: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    // SAFETY: called by Lua on the running state; the message is a C
    // string literal; lua_error does not return.
    unsafe {
        ffi::lua_sethook(state, None, 0, 0);
        ffi::luaL_where(state, 1);
        ffi::lua_pushstring(state, c"interrupted by pace".as_ptr());
        ffi::lua_concat(state, 2);
        ffi::lua_error(state);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_running_loop_is_interrupted_from_another_thread() {
        let lua = Lua::new();
        // os.clock() is a C call: the loop stays in the interpreter.
        let spin = lua
            .load("function spin() local n = 0 while true do n = n + os.clock() end end")
            .set_name("@spin.lua");
        spin.exec().unwrap();
        let interrupter = Interrupter::new(&lua);
        let watcher = interrupter.clone();
        let stopper = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while watcher.running() != Some(Call::Response) && Instant::now() < deadline {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(20));
            watcher.interrupt();
        });
        let spin: mlua::Function = lua.globals().get("spin").unwrap();
        let result = interrupter.calling(Call::Response, || spin.call::<()>(()));
        stopper.join().unwrap();
        let message = result.unwrap_err().to_string();
        assert!(message.contains("spin.lua:1: interrupted by pace"), "{message}");
        assert_eq!(interrupter.running(), None);
        // The hook went with the error: the state works on.
        assert_eq!(lua.load("return 1 + 1").eval::<i32>().unwrap(), 2);
    }

    #[test]
    fn a_withdrawn_interruption_fails_nothing() {
        let lua = Lua::new();
        let interrupter = Interrupter::new(&lua);
        interrupter.interrupt();
        interrupter.withdraw();
        assert_eq!(lua.load("return 2 * 21").eval::<i32>().unwrap(), 42);
    }
}
