//! Driver for the Verilated dispatch engine, with the golden model's port types so co-simulation
//! compares the two cycle by cycle.

use spork_golden::dispatch::{Decision, Descriptor, Inputs, Outputs};

use crate::{Instance, Model, Port, SimError};

pub struct Dispatch {
    inst: Instance,
    cfg_we: Port,
    cfg_pe: Port,
    cfg_kernel: Port,
    cfg_enable: Port,
    cfg_busy: Port,
    hold: Port,
    push: Port,
    req_id: Port,
    req_kernel: Port,
    req_est: Port,
    req_deadline: Port,
    full: Port,
    now: Port,
    grant_valid: Port,
    grant_id: Port,
    grant_pe: Port,
    grant_start: Port,
    grant_finish: Port,
    reject_valid: Port,
    reject_id: Port,
}

impl Dispatch {
    pub fn new(model: &Model) -> Result<Dispatch, SimError> {
        Ok(Dispatch {
            cfg_we: model.input("cfg_we")?,
            cfg_pe: model.input("cfg_pe")?,
            cfg_kernel: model.input("cfg_kernel")?,
            cfg_enable: model.input("cfg_enable")?,
            cfg_busy: model.input("cfg_busy")?,
            hold: model.input("hold")?,
            push: model.input("push")?,
            req_id: model.input("req_id")?,
            req_kernel: model.input("req_kernel")?,
            req_est: model.input("req_est")?,
            req_deadline: model.input("req_deadline")?,
            full: model.output("full")?,
            now: model.output("now")?,
            grant_valid: model.output("grant_valid")?,
            grant_id: model.output("grant_id")?,
            grant_pe: model.output("grant_pe")?,
            grant_start: model.output("grant_start")?,
            grant_finish: model.output("grant_finish")?,
            reject_valid: model.output("reject_valid")?,
            reject_id: model.output("reject_id")?,
            inst: model.instantiate("clock")?,
        })
    }

    /// One clock cycle: returns the outputs shown during it, drives `inputs`, takes the edge.
    pub fn cycle(&mut self, inputs: &Inputs) -> Outputs {
        let i = &mut self.inst;
        let decision = if i.get(self.grant_valid) == 1 {
            Some(Decision::Grant {
                id: i.get(self.grant_id) as u16,
                pe: i.get(self.grant_pe) as u8,
                start: i.get(self.grant_start),
                finish: i.get(self.grant_finish),
            })
        } else if i.get(self.reject_valid) == 1 {
            Some(Decision::Reject { id: i.get(self.reject_id) as u16 })
        } else {
            None
        };
        let shown = Outputs { now: i.get(self.now), full: i.get(self.full) == 1, decision };
        let c = inputs.configure.unwrap_or_default();
        i.set(self.cfg_we, u64::from(inputs.configure.is_some()));
        i.set(self.cfg_pe, u64::from(c.pe));
        i.set(self.cfg_kernel, u64::from(c.kernel));
        i.set(self.cfg_enable, u64::from(c.enabled));
        i.set(self.cfg_busy, c.busy_until);
        let d = inputs.push.unwrap_or(Descriptor { id: 0, kernel: 0, est: 0, deadline: 0 });
        i.set(self.hold, u64::from(inputs.hold));
        i.set(self.push, u64::from(inputs.push.is_some()));
        i.set(self.req_id, u64::from(d.id));
        i.set(self.req_kernel, u64::from(d.kernel));
        i.set(self.req_est, u64::from(d.est));
        i.set(self.req_deadline, d.deadline);
        i.cycle();
        shown
    }
}
