//! Cancellation of one call: a served face sets it when its caller goes away or cancels, and the adapter
//! stops the command (a wrap's whole process group, a composite's call).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A flag shared by a call and whoever may cancel it. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag nobody has set.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks the call to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Sets the flag when dropped unless disarmed: held by a future, it cancels the call when the future is
/// dropped before it finished (a client that went away).
#[derive(Debug)]
pub struct CancelOnDrop(Option<Cancel>);

impl CancelOnDrop {
    pub fn new(c: Cancel) -> CancelOnDrop {
        CancelOnDrop(Some(c))
    }

    /// The call finished: dropping this no longer cancels it.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.cancel();
        }
    }
}

impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_an_armed_guard_cancels_and_a_disarmed_one_does_not() {
        let c = Cancel::new();
        CancelOnDrop::new(c.clone()).disarm();
        assert!(!c.is_cancelled());
        drop(CancelOnDrop::new(c.clone()));
        assert!(c.is_cancelled());
    }
}
