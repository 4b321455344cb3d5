//! Tests only (the `fault-injection` feature): GPU faults injected into the worker's device,
//! so the paths that recover from them run on lavapipe.

use doppler_engine::Engine;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedFault {
    /// The device is destroyed, as after a driver reset: every model on it is gone.
    DeviceLost,
}

pub(crate) fn inject(engine: &Engine, fault: InjectedFault) {
    match fault {
        InjectedFault::DeviceLost => engine.gpu().device.destroy(),
    }
}
