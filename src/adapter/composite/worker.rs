//! Threads that run component calls, so a call blocked in a host call can be abandoned at its deadline while
//! the runtime goes on. Workers are kept and reused: starting a thread per call (and wasmtime's per-thread
//! trap-handling setup on it) cost more than the call itself.

use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long each side spins before it sleeps: waking a sleeping thread costs tens of microseconds, more
/// than a whole warm call, so a worker keeps looking for the next job, and a caller for its answer, this long.
const SPIN: Duration = Duration::from_micros(200);

/// Polls `rx` for up to `SPIN`; `Err(true)` when the sender is gone.
fn spin_recv<T>(rx: &Receiver<T>) -> Result<T, bool> {
    let start = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Disconnected) => return Err(true),
            Err(TryRecvError::Empty) if start.elapsed() < SPIN => std::hint::spin_loop(),
            Err(TryRecvError::Empty) => return Err(false),
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// One worker thread; dropping it ends the thread once its current job returns.
struct Worker {
    jobs: Sender<Job>,
}

impl Worker {
    fn spawn() -> std::io::Result<Worker> {
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new().name("hcpx-composite".into()).spawn(move || {
            loop {
                let job = match spin_recv(&rx) {
                    Ok(job) => job,
                    Err(true) => return,
                    Err(false) => match rx.recv() {
                        Ok(job) => job,
                        Err(_) => return,
                    },
                };
                job();
            }
        })?;
        Ok(Worker { jobs })
    }
}

/// Most idle workers kept for reuse.
const MAX_IDLE: usize = 16;

/// Idle workers, shared by the calls of one adapter.
#[derive(Default)]
pub struct Workers {
    idle: Mutex<Vec<Worker>>,
}

/// Why a job gave no answer.
pub enum Unanswered {
    /// No worker could be started.
    NoThread(String),
    /// No answer within the limit; the worker was abandoned.
    TimedOut,
}

impl Workers {
    /// Runs `job` on a worker and waits up to `limit` for its answer.
    pub fn run<T: Send + 'static>(&self, limit: Duration, job: impl FnOnce() -> T + Send + 'static) -> Result<T, Unanswered> {
        let reused = self.idle.lock().ok().and_then(|mut v| v.pop());
        let worker = match reused {
            Some(w) => w,
            None => Worker::spawn().map_err(|e| Unanswered::NoThread(e.to_string()))?,
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let sent = worker.jobs.send(Box::new(move || {
            let _ = tx.send(job());
        }));
        if sent.is_err() {
            return Err(Unanswered::NoThread("the worker thread is gone".into()));
        }
        let started = Instant::now();
        let answer = match spin_recv(&rx) {
            Ok(a) => Ok(a),
            Err(_) => rx.recv_timeout(limit.saturating_sub(started.elapsed())),
        };
        match answer {
            Ok(answer) => {
                if let Ok(mut idle) = self.idle.lock() {
                    if idle.len() < MAX_IDLE {
                        idle.push(worker);
                    }
                }
                Ok(answer)
            }
            // The worker is stuck in the job: drop it, so its thread ends when the job returns.
            Err(_) => Err(Unanswered::TimedOut),
        }
    }
}
