//! What a kernel process gives up before it opens a user's library. It runs as the server's user,
//! so by default it could signal the server, trace it, or read and write its memory through
//! `/proc`. A seccomp filter (all its threads, kept across exec by no_new_privs) refuses with EPERM
//! every signal aimed at another process and every call that reaches into one (ptrace,
//! process_vm_readv/writev, pidfds); dropping its capabilities leaves a root server's kernel without
//! CAP_SYS_PTRACE, which with the server not dumpable ([`server_not_dumpable`]) closes
//! `/proc/PID/mem` too. Signals to itself (`abort`, `raise`) still work. A call through another
//! ABI (i386's `int 0x80`) ends the process (seccompiler checks the architecture); x32's numbers,
//! where a kernel enables x32, are refused alike.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// Installs the filter and drops every capability of this process (a kernel process, before it
/// opens the user's library).
pub fn confine() -> Result<(), String> {
    drop_capabilities()?;
    let filter = filter().map_err(|e| format!("building the seccomp filter: {e}"))?;
    seccompiler::apply_filter_all_threads(&filter).map_err(|e| format!("installing the seccomp filter: {e}"))
}

/// Makes the server's memory unreachable through `/proc/PID/mem` (and tracing) for processes
/// without CAP_SYS_PTRACE, as its kernel processes are ([`confine`]). Costs the server its core
/// dumps.
pub fn server_not_dumpable() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: prctl with integer arguments.
    ONCE.call_once(|| unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    });
}

/// The x32 ABI's flag on x86_64 (a kernel that enables x32 takes these numbers too; the filter
/// refuses them alike).
const X32: i64 = if cfg!(target_arch = "x86_64") { 0x4000_0000 } else { 0 };

/// x32's own numbers of the signal calls (kill and tgkill share x86_64's) and of the calls that reach
/// another process (ptrace, process_vm_readv/writev).
const X32_SIGNALS: &[i64] = if cfg!(target_arch = "x86_64") { &[62, 234, 524, 536] } else { &[] };
const X32_REACHES: &[i64] = if cfg!(target_arch = "x86_64") { &[521, 539, 540] } else { &[] };

fn filter() -> Result<BpfProgram, seccompiler::BackendError> {
    // SAFETY: getpid has no preconditions.
    let me = u64::from(unsafe { libc::getpid() }.unsigned_abs());
    // The call's first argument (a pid or tgid) is not this process.
    let elsewhere = || -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        let c = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, me)?;
        Ok(vec![SeccompRule::new(vec![c])?])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let signals = [libc::SYS_kill, libc::SYS_tgkill, libc::SYS_rt_sigqueueinfo, libc::SYS_rt_tgsigqueueinfo];
    let reaches = [
        libc::SYS_tkill,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_open,
        libc::SYS_pidfd_send_signal,
        libc::SYS_pidfd_getfd,
    ];
    for call in signals.into_iter().chain(X32_SIGNALS.iter().map(|&n| X32 | n)) {
        rules.insert(call, elsewhere()?);
    }
    for call in reaches.into_iter().chain(reaches.iter().chain(X32_REACHES).map(|&n| X32 | n)) {
        rules.insert(call, Vec::new());
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?
        .try_into()
}

/// Empties this process's effective, permitted and inheritable capability sets.
fn drop_capabilities() -> Result<(), String> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header { version: VERSION_3, pid: 0 };
    let data = [Data::default(); 2];
    // SAFETY: capset with a valid header and the two data words version 3 takes.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) };
    if rc != 0 {
        return Err(format!("dropping capabilities: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
