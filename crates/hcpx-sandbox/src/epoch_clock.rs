//! What moves a one-shot process's wasmtime epoch, so a composite guest spinning in wasm is stopped at its
//! deadline, without a ticker thread in every `hcpx exec`. The runtime's unsafe-free crate cannot make these
//! calls; this crate holds the kernel's (docs/security.md, Composites).
//!
//! Every one-shot composite adapter of a process shares one engine ([`engine`]), a static, so the signal handler
//! reaches it without a pointer that could outlive it. A call driven on one thread (`hcpx exec`: the adapter's
//! current-thread tokio runtime) arms a POSIX timer for its deadline ([`arm`]): at the deadline, and every tick
//! after it, the kernel sends [`signal`] to that thread, whose handler only advances the engine's epoch (an atomic
//! add: wasmtime documents `Engine::increment_epoch` as signal-safe). The timer is deleted when the call ends, so
//! a call that answers in time never receives a signal, and nothing is left to fire into what comes after it.
//! A call not driven on one thread (an async caller's), or a process where the timer cannot be had (the signal
//! already handled by someone else, blocked on the thread, `timer_create` refused), gets the ticker thread
//! instead ([`ticking`]), as a long-lived runtime has. Either way an epoch advance only makes a store look at the
//! clock: a store's deadline is a time, checked by the runtime's epoch callback, so one call's timer cannot stop
//! another call early.

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::Engine;

/// The engine every one-shot composite adapter of this process uses, once made.
static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
/// Whether this module's handler is the one for [`signal`] (installed on the first [`arm`]).
static HANDLER: OnceLock<bool> = OnceLock::new();
/// The ticker thread for calls without a timer (started on the first one).
static TICKER: OnceLock<Result<(), String>> = OnceLock::new();

/// The process's one-shot engine, made by `make` on first use.
pub fn engine(make: impl FnOnce() -> Result<Engine, String>) -> Result<&'static Engine, String> {
    match ENGINE.get_or_init(make) {
        Ok(e) => Ok(e),
        Err(msg) => Err(msg.clone()),
    }
}

/// The signal a call's timer sends: a real-time signal nothing else in hcpx uses.
pub fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 2
}

/// The handler of [`signal`]: advances the one-shot engine's epoch and does nothing else (no syscall, no lock, no
/// allocation: `OnceLock::get` is an atomic load, `increment_epoch` an atomic add; `errno` is untouched).
extern "C" fn on_deadline(_sig: libc::c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if let Some(Ok(engine)) = ENGINE.get() {
        engine.increment_epoch();
    }
}

/// Installs [`on_deadline`] for [`signal`] unless something else already handles it (then this process's calls
/// use the ticker). `SA_RESTART`: a restartable system call the signal lands in is restarted, not failed with
/// `EINTR`; `SA_ONSTACK`: on the thread's alternate stack when it has one, not a guest fiber's.
fn handler_installed() -> bool {
    *HANDLER.get_or_init(|| {
        let sig = signal();
        // SAFETY: `sigaction` with a zeroed struct to read the current action, then one that names a handler of
        // the SA_SIGINFO shape; both structs are plain data owned here.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut current) != 0
                || current.sa_sigaction != libc::SIG_DFL
            {
                return false;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_deadline as *const () as libc::sighandler_t;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut()) == 0
        }
    })
}

/// Advances the one-shot engine's epoch every `tick` from a thread of its own, from now on (started once).
pub fn ticking(tick: Duration) -> Result<(), String> {
    TICKER
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("hcpx-epoch".into())
                .spawn(move || loop {
                    std::thread::sleep(tick);
                    if let Some(Ok(e)) = ENGINE.get() {
                        e.increment_epoch();
                    }
                })
                .map(|_| ())
                .map_err(|e| format!("cannot start the epoch ticker: {e}"))
        })
        .clone()
}

/// What advances the epoch for one call, until dropped: its timer, or the ticker thread.
#[derive(Debug)]
pub struct Deadline {
    /// The kernel's id of the call's timer (`timer_t`, kept as an integer so the guard may cross an await).
    timer: Option<usize>,
}

impl Deadline {
    /// Whether the call has a timer of its own (false: the ticker thread advances the epoch).
    pub fn timed(&self) -> bool {
        self.timer.is_some()
    }
}

/// For a call driven on the calling thread from now until the guard drops: a timer that sends [`signal`] to this
/// thread once `after` has passed and every `tick` after that; or, where the process cannot have it, the ticker.
pub fn arm(after: Duration, tick: Duration) -> Result<Deadline, String> {
    match timer(after, tick) {
        Some(id) => Ok(Deadline { timer: Some(id) }),
        None => ticking(tick).map(|()| Deadline { timer: None }),
    }
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// The call's timer, armed; `None` when the process cannot have one.
fn timer(after: Duration, tick: Duration) -> Option<usize> {
    if !matches!(ENGINE.get(), Some(Ok(_))) || !handler_installed() {
        return None;
    }
    let sig = signal();
    // A zero `it_value` would disarm the timer: a deadline of zero fires at once instead.
    let first = after.max(Duration::from_nanos(1));
    // SAFETY: plain-data structs owned here; `timer_create` writes the new id into `id`, which is deleted on every
    // path that does not hand it to the guard (whose Drop deletes it).
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        if libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) != 0
            || libc::sigismember(&mask, sig) != 0
        {
            // Blocked on this thread: the signal would wait, and the guest with it.
            return None;
        }
        let mut event: libc::sigevent = std::mem::zeroed();
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = sig;
        event.sigev_notify_thread_id = libc::gettid();
        let mut id: libc::timer_t = std::ptr::null_mut();
        if libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut id) != 0 {
            return None;
        }
        let spec = libc::itimerspec { it_value: timespec(first), it_interval: timespec(tick) };
        if libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) != 0 {
            libc::timer_delete(id);
            return None;
        }
        Some(id as usize)
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(id) = self.timer.take() {
            // SAFETY: `id` came from `timer_create` in `timer` and is deleted once, here. A signal it sent just
            // before is handled on its thread's next return from the kernel; its handler touches only the static
            // engine, so it is harmless whenever it runs.
            unsafe {
                libc::timer_delete(id as libc::timer_t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn test_engine() -> &'static Engine {
        let mut cfg = wasmtime::Config::new();
        cfg.epoch_interruption(true);
        engine(|| Engine::new(&cfg).map_err(|e| e.to_string())).unwrap()
    }

    /// The timer's ids in `/proc/self/timers` (one `ID: n` line per POSIX timer of the process).
    fn live_timers() -> Vec<usize> {
        std::fs::read_to_string("/proc/self/timers")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("ID: ")?.trim().parse().ok())
            .collect()
    }

    /// `(module (func (export "spin") (loop (br 0))))`: wasm that never yields to the host.
    const SPIN: &[u8] = &[
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
        0x03, 0x02, 0x01, 0x00, // function 0 of type 0
        0x07, 0x08, 0x01, 0x04, b's', b'p', b'i', b'n', 0x00, 0x00, // export "spin"
        0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop { br 0 }
    ];

    #[test]
    fn a_spinning_guest_is_stopped_by_its_calls_timer_which_is_gone_when_the_call_ends() {
        let engine = test_engine();
        let module = wasmtime::Module::new(engine, SPIN).unwrap();
        let mut store = wasmtime::Store::new(engine, ());
        store.set_epoch_deadline(1);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let spin = instance.get_typed_func::<(), ()>(&mut store, "spin").unwrap();
        let started = Instant::now();
        let armed = arm(Duration::from_millis(50), Duration::from_millis(2)).unwrap();
        assert!(armed.timed(), "this process can have a timer: {armed:?}");
        let id = armed.timer.unwrap_or_default();
        let timers = std::path::Path::new("/proc/self/timers").exists();
        if timers {
            assert!(live_timers().contains(&id), "timer {id} armed");
        }
        // Only the timer's signal can end this: nothing else advances the epoch of the one-shot engine.
        let trap = spin.call(&mut store, ()).unwrap_err();
        let took = started.elapsed();
        assert_eq!(trap.downcast_ref::<wasmtime::Trap>(), Some(&wasmtime::Trap::Interrupt), "{trap:?}");
        assert!(took >= Duration::from_millis(50), "stopped before its deadline: {took:?}");
        drop(armed);
        if timers {
            assert!(!live_timers().contains(&id), "timer {id} deleted with its guard");
        }
    }
}
