//! Applying a placement to a child process before it executes.
//!
//! The child sets its own CPU affinity (`sched_setaffinity`) and, on
//! machines with several NUMA nodes, binds its memory to one node
//! (`set_mempolicy(MPOL_BIND)`) between fork and exec; both are inherited
//! by everything it forks, so pinning `pg_ctl start` pins the postmaster
//! and every backend. No `taskset` or `numactl` is needed.

use super::CpuSet;

/// `MPOL_BIND` of <linux/mempolicy.h>.
const MPOL_BIND: libc::c_int = 2;

/// Node masks handed to `set_mempolicy`: enough words for 1024 nodes.
const NODE_MASK_WORDS: usize = 16;

/// What to apply to one child: CPUs and a memory node, each optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pin {
    pub cpus: Option<CpuSet>,
    pub memory_node: Option<u32>,
}

impl Pin {
    pub fn new(cpus: Option<CpuSet>, memory_node: Option<u32>) -> Pin {
        Pin { cpus, memory_node }
    }

    /// Applies nothing.
    pub fn none() -> Pin {
        Pin::default()
    }

    pub fn is_none(&self) -> bool {
        self.cpus.is_none() && self.memory_node.is_none()
    }

    /// `expr` with this pin applied in the child before it executes.
    pub fn apply(&self, expr: duct::Expression) -> duct::Expression {
        if self.is_none() {
            return expr;
        }
        let cpu_mask = self.cpus.as_ref().map(cpu_set);
        let node_mask = self.memory_node.and_then(node_mask);
        expr.before_spawn(move |cmd| {
            use std::os::unix::process::CommandExt;
            // SAFETY: the hook only makes two system calls on data prepared
            // before the fork; it allocates nothing and takes no lock.
            unsafe {
                cmd.pre_exec(move || apply_in_child(cpu_mask.as_ref(), node_mask.as_ref()));
            }
            Ok(())
        })
    }
}

/// Runs in the forked child: no allocation, system calls only.
fn apply_in_child(
    cpus: Option<&libc::cpu_set_t>,
    nodes: Option<&[libc::c_ulong; NODE_MASK_WORDS]>,
) -> std::io::Result<()> {
    if let Some(set) = cpus {
        // SAFETY: `set` is a valid cpu_set_t of the size passed.
        let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    if let Some(mask) = nodes {
        let max_node = (NODE_MASK_WORDS * libc::c_ulong::BITS as usize) as libc::c_ulong;
        // SAFETY: `mask` holds `max_node` bits.
        let rc =
            unsafe { libc::syscall(libc::SYS_set_mempolicy, MPOL_BIND, mask.as_ptr(), max_node) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn cpu_set(cpus: &CpuSet) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        // SAFETY: CpuSet holds CPUs below MAX_CPUS, the size of cpu_set_t.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    set
}

fn node_mask(node: u32) -> Option<[libc::c_ulong; NODE_MASK_WORDS]> {
    let bits = libc::c_ulong::BITS as usize;
    let node = node as usize;
    let mut mask = [0; NODE_MASK_WORDS];
    *mask.get_mut(node / bits)? |= 1 << (node % bits);
    Some(mask)
}

/// The CPUs this process may run on, if the kernel says.
pub fn current_affinity() -> Option<CpuSet> {
    // SAFETY: zeroed cpu_set_t is valid; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return None;
    }
    let cpus = (0..super::MAX_CPUS).filter(|cpu| {
        // SAFETY: cpu < MAX_CPUS, within the set.
        unsafe { libc::CPU_ISSET(*cpu as usize, &set) }
    });
    CpuSet::from_cpus(cpus.collect::<Vec<_>>())
}

/// `Cpus_allowed_list` of a /proc/PID/status text.
pub fn allowed_cpus(status: &str) -> Option<CpuSet> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuSet::parse(line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpus_allowed_from_status() {
        let status = "Name:\tpostgres\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(allowed_cpus(status).unwrap().to_string(), "0-1");
        assert_eq!(allowed_cpus("Name:\tx\n"), None);
    }

    #[test]
    fn node_masks_set_one_bit() {
        let mask = node_mask(65).unwrap();
        assert_eq!(mask[1], 2);
        assert!(mask.iter().enumerate().all(|(i, w)| i == 1 || *w == 0));
        assert_eq!(node_mask(5000), None);
    }

    fn status_of(pin: &Pin, program: &str, args: &[&str]) -> String {
        let out = pin
            .apply(duct::cmd(program, args))
            .stdout_capture()
            .run()
            .expect("the pinned child runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The real thing: a child started with the pin runs on the CPU named,
    /// and so do the processes it forks (the postmaster's backends).
    #[test]
    fn a_pinned_child_and_its_children_run_on_the_cpus_named() {
        let mine = current_affinity().expect("this process's affinity");
        let cpu = mine.highest(1);
        let pin = Pin::new(Some(cpu.clone()), None);
        let own = status_of(&pin, "cat", &["/proc/self/status"]);
        assert_eq!(allowed_cpus(&own), Some(cpu.clone()), "{own}");
        let forked = status_of(&pin, "sh", &["-c", "cat /proc/self/status | cat"]);
        assert_eq!(allowed_cpus(&forked), Some(cpu), "{forked}");
        let free = status_of(&Pin::none(), "cat", &["/proc/self/status"]);
        assert_eq!(allowed_cpus(&free), Some(mine));
    }

    /// Node 0 exists on every Linux machine; its binding shows in numa_maps.
    #[test]
    fn memory_binding_shows_in_numa_maps() {
        if !std::path::Path::new("/proc/self/numa_maps").exists() {
            return; // a kernel without NUMA support
        }
        let pin = Pin::new(None, Some(0));
        let maps = status_of(&pin, "cat", &["/proc/self/numa_maps"]);
        assert!(maps.contains("bind:0"), "{maps}");
    }

    #[test]
    fn a_cpu_outside_the_machine_fails_the_spawn() {
        let far = CpuSet::parse("1023").unwrap();
        let result = Pin::new(Some(far), None)
            .apply(duct::cmd("true", Vec::<String>::new()))
            .run();
        assert!(result.is_err());
    }
}
