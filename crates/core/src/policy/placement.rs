//! Where a new worker runs: on which worker host a slot is leased, and whether a CPU worker takes a
//! worker host's slot or a thread of the scheduler's own host. The live pool's remote backend asks;
//! the rules are here so that they are one decision, readable and tested apart from the sockets.

/// A worker host as placement sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostSlots<A> {
    /// Its address (or any stable, ordered name).
    pub addr: A,
    /// Slots of the wanted kind it has free.
    pub free: u32,
}

/// The host to lease a slot on: the one with the most free slots of the kind (spreading the pool
/// over hosts, so one host going down takes the fewest workers), ties to the lowest address (a
/// stable order, so the same pool state places the same way). `None`: no host has one free.
pub fn pick_host<A: Ord + Copy>(hosts: impl IntoIterator<Item = HostSlots<A>>) -> Option<A> {
    hosts
        .into_iter()
        .filter(|h| h.free > 0)
        .max_by(|a, b| a.free.cmp(&b.free).then(b.addr.cmp(&a.addr)))
        .map(|h| h.addr)
}

/// Where a CPU worker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuSite {
    /// A worker host's CPU slot (leased).
    Remote,
    /// A thread on the scheduler's own host.
    Local,
}

/// A CPU worker takes a worker host's slot while one could be leased, else a local thread: a burst
/// is never refused for want of remote slots (CPU spin-up is milliseconds either way).
pub fn cpu_site(remote_slot_leased: bool) -> CpuSite {
    if remote_slot_leased { CpuSite::Remote } else { CpuSite::Local }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(addr: u8, free: u32) -> HostSlots<u8> {
        HostSlots { addr, free }
    }

    #[test]
    fn the_host_with_most_free_slots_wins_ties_to_the_lowest_address() {
        assert_eq!(pick_host([h(3, 1), h(1, 2), h(2, 2)]), Some(1));
        assert_eq!(pick_host([h(3, 4), h(1, 2)]), Some(3));
        assert_eq!(pick_host([h(1, 0), h(2, 0)]), None);
        assert_eq!(pick_host(Vec::<HostSlots<u8>>::new()), None);
    }

    #[test]
    fn a_cpu_worker_falls_back_to_a_local_thread() {
        assert_eq!(cpu_site(true), CpuSite::Remote);
        assert_eq!(cpu_site(false), CpuSite::Local);
    }
}
