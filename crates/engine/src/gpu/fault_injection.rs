//! Tests only (the `fault-injection` feature): faults armed on a device and produced at the
//! engine's own GPU seams, so the paths that turn them into errors run on lavapipe.

use std::sync::Mutex;

use super::GpuContext;

/// A fault to produce on the device, now or some operations from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuFault {
    /// The device is destroyed, as after a driver reset: everything on it is gone.
    DeviceLost,
    /// The submit after the next `after` submits carries a command that fails wgpu's
    /// validation, so its whole command buffer is refused, as a recording bug would have it.
    FailSubmit { after: u32 },
    /// The weight buffer allocated after the next `after` ones reports out of memory through
    /// its error scope, as a full GPU would.
    OutOfMemory { after: u32 },
}

/// The faults armed on one device, each a countdown of operations still let through.
#[derive(Debug, Default)]
pub(super) struct ArmedFaults {
    submit: Mutex<Option<u32>>,
    allocation: Mutex<Option<u32>>,
}

/// Counts one operation down; `true` when it is the one to fail (which disarms the fault).
fn count_down(countdown: &Mutex<Option<u32>>) -> bool {
    let mut countdown = countdown.lock().unwrap_or_else(|e| e.into_inner());
    match *countdown {
        Some(0) => {
            *countdown = None;
            true
        }
        Some(left) => {
            *countdown = Some(left - 1);
            false
        }
        None => false,
    }
}

impl GpuContext {
    /// Arms `fault` (a lost device happens at once); it fires once.
    pub fn inject_fault(&self, fault: GpuFault) {
        let (countdown, after) = match fault {
            GpuFault::DeviceLost => return self.device.destroy(),
            GpuFault::FailSubmit { after } => (&self.faults.submit, after),
            GpuFault::OutOfMemory { after } => (&self.faults.allocation, after),
        };
        *countdown.lock().unwrap_or_else(|e| e.into_inner()) = Some(after);
    }

    /// Where a failed submit is armed and due, records into `encoder` a copy of a buffer onto
    /// itself, which wgpu's validation refuses, invalidating everything recorded with it.
    pub(super) fn sabotage_if_due(&self, encoder: &mut wgpu::CommandEncoder) {
        if !count_down(&self.faults.submit) {
            return;
        }
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("injected fault"),
            size: 8,
            usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.copy_buffer_to_buffer(&buffer, 0, &buffer, 4, 4);
    }

    /// Whether an armed out-of-memory fault is due at this weight allocation.
    pub(super) fn allocation_fails_now(&self) -> bool {
        count_down(&self.faults.allocation)
    }
}
