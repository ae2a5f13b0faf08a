//! A host's facts, read over whatever reaches it, and the check that the
//! hosts of one hunt are alike.
//!
//! Runs made on different machines are not comparable as if they were one
//! machine's: a hunt spread over hosts needs hosts that are the same in
//! what the report's machine section names (CPU model and count, NUMA
//! nodes, memory, kernel, compiler). The host prints the same files
//! [`Machine::collect`] reads here, and they are read by the same code.

use crate::machine::{Machine, Texts};

/// Shell text that prints what [`parse`] reads.
pub const SCRIPT: &str = "echo '--- cpuinfo'; cat /proc/cpuinfo; \
     echo '--- meminfo'; cat /proc/meminfo; \
     echo '--- kernel'; cat /proc/sys/kernel/osrelease; \
     echo '--- nodes'; ls /sys/devices/system/node 2>/dev/null; \
     echo '--- cc'; cc --version 2>/dev/null | head -n 1; \
     echo '--- end'";

/// The machine [`SCRIPT`]'s output describes; `None` when the output is
/// not [`SCRIPT`]'s (it stopped early).
pub fn parse(output: &str) -> Option<Machine> {
    if !output.lines().any(|l| l == "--- end") {
        return None;
    }
    let section = |name: &str| -> String {
        let mark = format!("--- {name}");
        output
            .lines()
            .skip_while(|l| *l != mark)
            .skip(1)
            .take_while(|l| !l.starts_with("--- "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (cpuinfo, meminfo, kernel, nodes, cc) = (
        section("cpuinfo"),
        section("meminfo"),
        section("kernel"),
        section("nodes"),
        section("cc"),
    );
    Some(Machine::from_texts(&Texts {
        cpuinfo: &cpuinfo,
        meminfo: &meminfo,
        kernel: &kernel,
        node_names: &nodes,
        compiler: &cc,
    }))
}

/// Memory as the check compares it: whole GiB, since identical machines
/// differ by what their firmware and kernel keep back.
fn memory_gib(m: &Machine) -> u64 {
    (m.memory_gib()).round() as u64
}

/// `Ok` with the first host's facts when every host has the same facts;
/// otherwise each difference, naming the hosts and both values.
pub fn alike(hosts: &[(String, Machine)]) -> Result<Machine, String> {
    let Some((first, base)) = hosts.first() else {
        return Err("no hosts".into());
    };
    type Fact = (&'static str, fn(&Machine) -> String);
    let facts: [Fact; 6] = [
        ("CPU model", |m| m.cpu_model.clone()),
        ("CPU count", |m| m.cpus.to_string()),
        ("NUMA nodes", |m| m.numa_nodes.to_string()),
        ("memory", |m| format!("{} GiB", memory_gib(m))),
        ("kernel", |m| m.kernel.clone()),
        ("compiler", |m| m.compiler.clone()),
    ];
    let mut differences = Vec::new();
    for (host, m) in &hosts[1..] {
        for (name, get) in &facts {
            let (a, b) = (get(base), get(m));
            if a != b {
                differences.push(format!("{name}: {first} has {a}, {host} has {b}"));
            }
        }
    }
    if differences.is_empty() {
        Ok(base.clone())
    } else {
        Err(differences.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "--- cpuinfo\nprocessor\t: 0\nmodel name\t: Xeon X\n\nprocessor\t: 1\nmodel name\t: Xeon X\n--- meminfo\nMemTotal:  16777216 kB\n--- kernel\n6.1.0-18-amd64\n--- nodes\nnode0\npossible\n--- cc\ngcc (Debian 12.2.0-14) 12.2.0\n--- end\n";

    #[test]
    fn the_scripts_output_reads_as_a_machine() {
        let m = parse(OUTPUT).unwrap();
        assert_eq!(m.cpu_model, "Xeon X");
        assert_eq!(m.cpus, 2);
        assert_eq!(m.numa_nodes, 1);
        assert_eq!(m.memory_bytes, 16_777_216 * 1024);
        assert_eq!(m.kernel, "6.1.0-18-amd64");
        assert_eq!(m.compiler, "gcc (Debian 12.2.0-14) 12.2.0");
        assert_eq!(parse("--- cpuinfo\nprocessor: 0\n"), None);
    }

    #[test]
    fn hosts_that_differ_are_named_with_both_values() {
        let a = parse(OUTPUT).unwrap();
        let b = parse(&OUTPUT.replace("6.1.0-18", "6.1.0-21")).unwrap();
        let c = parse(&OUTPUT.replace("16777216", "16777000")).unwrap();
        assert_eq!(
            alike(&[("a".into(), a.clone()), ("c".into(), c)]).unwrap(),
            a
        );
        let err = alike(&[("a".into(), a), ("b".into(), b)]).unwrap_err();
        assert_eq!(err, "kernel: a has 6.1.0-18-amd64, b has 6.1.0-21-amd64");
    }

    /// This machine, read through the script, is what it reads itself.
    #[test]
    fn the_script_reads_this_machine_as_collect_does() {
        let out = std::process::Command::new("sh")
            .args(["-c", SCRIPT])
            .output()
            .unwrap();
        let read = parse(&String::from_utf8_lossy(&out.stdout)).unwrap();
        let here = Machine::collect();
        assert_eq!(
            alike(&[("script".into(), read), ("here".into(), here)]).map(|_| ()),
            Ok(())
        );
    }
}
