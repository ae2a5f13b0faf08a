//! Inlined functions put back into sampled stacks.
//!
//! At `-O2` the compiler inlines PostgreSQL's static functions into their
//! callers: `exec_bind_message` becomes part of `PostgresMain`, and a
//! profile that names only the functions with a symbol of their own blames
//! the caller (`PostgresMain +29.8pp`) for the slower function inside it.
//! The build's debug information still knows, for every address, the chain
//! of inlined calls it belongs to. Debian's `perf script --inline` prints
//! nothing more here, so each distinct address of a binary is asked of
//! `addr2line -i` once, in one call per binary, and the frames it names are
//! written into the `perf script` text as frames of their own, as if they
//! had been calls: the profile then folds, compares and draws them like any
//! other function.
//!
//! The address of a frame above the leaf is a return address, the
//! instruction after the call, which may already belong to the next
//! inlined scope; it is looked up one byte earlier, as debuggers do.

use crate::proc::{self, Ended};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Inline chains of addresses in one binary.
pub trait InlineResolver {
    /// For each address of `binary` it can place, the functions whose code
    /// is there, innermost first: the last one is the function that holds
    /// the address in the symbol table. An address it cannot place (no
    /// debug information) is left out.
    fn resolve(&self, binary: &Path, addrs: &[u64]) -> HashMap<u64, Vec<String>>;
}

/// `addr2line` from binutils.
#[derive(Debug, Clone)]
pub struct Addr2line {
    /// The program: a name looked up on `PATH`, or a path.
    pub program: String,
}

impl Default for Addr2line {
    fn default() -> Self {
        Addr2line {
            program: "addr2line".to_string(),
        }
    }
}

/// How long `addr2line` may take over one binary's addresses.
const RESOLVE_LIMIT: Duration = Duration::from_secs(120);

impl InlineResolver for Addr2line {
    fn resolve(&self, binary: &Path, addrs: &[u64]) -> HashMap<u64, Vec<String>> {
        let input: String = addrs.iter().map(|a| format!("{a:x}\n")).collect();
        let mut args: Vec<std::ffi::OsString> =
            ["-a", "-i", "-f", "-C", "-e"].map(Into::into).into();
        args.push(binary.as_os_str().to_owned());
        let expr = duct::cmd(&self.program, args)
            .stdin_bytes(input)
            .stdout_capture()
            .stderr_null();
        match proc::run(expr, RESOLVE_LIMIT) {
            Ok(Ended::Exited(out)) if out.status.success() => {
                parse_addr2line(&String::from_utf8_lossy(&out.stdout))
            }
            // No addr2line, a binary it cannot read, a deadline: the
            // profile keeps the frames perf named.
            _ => HashMap::new(),
        }
    }
}

/// Reads `addr2line -a -i -f` output: each address (`0x...`) followed by
/// pairs of lines, a function and its `file:line`, innermost first.
fn parse_addr2line(text: &str) -> HashMap<u64, Vec<String>> {
    let mut chains = HashMap::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(addr) = line
            .strip_prefix("0x")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        else {
            continue;
        };
        let mut chain = Vec::new();
        while let Some(next) = lines.peek() {
            if next.starts_with("0x") {
                break;
            }
            let function = lines.next().unwrap_or_default();
            let _source_line = lines.next();
            if function != "??" && !function.is_empty() {
                chain.push(function.to_string());
            }
        }
        if !chain.is_empty() {
            chains.insert(addr, chain);
        }
    }
    chains
}

/// One frame line of `perf script`: `\t<ip> <symbol> (<binary>)`.
struct Frame<'a> {
    indent: &'a str,
    ip: u64,
    symbol: &'a str,
    binary: &'a str,
}

fn frame(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_start();
    if text.len() == line.len() {
        return None;
    }
    let indent = &line[..line.len() - text.len()];
    let (ip, rest) = text.split_once(' ')?;
    let ip = u64::from_str_radix(ip, 16).ok()?;
    let rest = rest.strip_suffix(')')?;
    let (symbol, binary) = rest.rsplit_once(" (")?;
    Some(Frame {
        indent,
        ip,
        symbol,
        binary,
    })
}

/// The symbol without perf's `+0x2d` offset.
fn bare(symbol: &str) -> &str {
    symbol.split_once("+0x").map_or(symbol, |(name, _)| name)
}

/// The address looked up for a frame: a return address one byte back.
fn lookup_ip(ip: u64, leaf: bool) -> u64 {
    if leaf { ip } else { ip.saturating_sub(1) }
}

/// The frames of each sample's stack, with whether each is the leaf.
fn frames(script: &str) -> impl Iterator<Item = (Frame<'_>, bool)> {
    let mut leaf = true;
    script.lines().filter_map(move |line| match frame(line) {
        Some(f) => {
            let was_leaf = leaf;
            leaf = false;
            Some((f, was_leaf))
        }
        None => {
            leaf = true;
            None
        }
    })
}

/// `script` with the inlined functions of every frame in a binary on disk
/// written in as frames of their own, innermost (nearest the leaf) first.
/// Frames in the kernel, in binaries gone since, or without debug
/// information are left as they were.
pub fn expand(script: &str, resolver: &dyn InlineResolver) -> String {
    let mut wanted: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for (f, leaf) in frames(script) {
        if f.binary.starts_with('/') {
            wanted
                .entry(f.binary)
                .or_default()
                .insert(lookup_ip(f.ip, leaf));
        }
    }
    let mut chains: HashMap<(&str, u64), Vec<String>> = HashMap::new();
    for (binary, addrs) in wanted {
        if !Path::new(binary).is_file() {
            continue;
        }
        let addrs: Vec<u64> = addrs.into_iter().collect();
        for (addr, chain) in resolver.resolve(&PathBuf::from(binary), &addrs) {
            chains.insert((binary, addr), chain);
        }
    }
    if chains.is_empty() {
        return script.to_string();
    }
    let mut out = String::with_capacity(script.len() + script.len() / 4);
    let mut leaf = true;
    for line in script.lines() {
        if let Some(f) = frame(line) {
            let key = (f.binary, lookup_ip(f.ip, leaf));
            if let Some(chain) = chains.get(&key)
                && chain.len() > 1
                && chain.last().map(String::as_str) == Some(bare(f.symbol))
            {
                for inlined in &chain[..chain.len() - 1] {
                    out.push_str(&format!(
                        "{}{:x} {inlined} ({})\n",
                        f.indent, f.ip, f.binary
                    ));
                }
            }
            leaf = false;
        } else {
            leaf = true;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers from a table, and remembers what it was asked.
    struct Table {
        chains: HashMap<u64, Vec<String>>,
        asked: std::cell::RefCell<Vec<(PathBuf, Vec<u64>)>>,
    }

    impl InlineResolver for Table {
        fn resolve(&self, binary: &Path, addrs: &[u64]) -> HashMap<u64, Vec<String>> {
            self.asked
                .borrow_mut()
                .push((binary.to_path_buf(), addrs.to_vec()));
            addrs
                .iter()
                .filter_map(|a| Some((*a, self.chains.get(a)?.clone())))
                .collect()
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn addr2line_output_is_read_address_by_address() {
        let text = "0x00000000000011dd\nspin\n/t.c:5\nwork\n/t.c:7\nouter\n/t.c:8\n\
                    0x0000000000001000\n??\n??:0\n0x0000000000001207\nouter\n/t.c:8\n";
        let chains = parse_addr2line(text);
        assert_eq!(chains[&0x11dd], names(&["spin", "work", "outer"]));
        assert_eq!(chains[&0x1207], names(&["outer"]));
        assert!(!chains.contains_key(&0x1000));
    }

    #[test]
    fn inlined_functions_become_frames_of_their_own_below_their_holder() {
        // A binary that exists: the test's own executable.
        let exe = std::env::current_exe().unwrap();
        let exe = exe.to_str().unwrap();
        let script = format!(
            "postgres  1/1  1.0: cpu-clock:ppp: \n\
             \t          11dd PostgresMain ({exe})\n\
             \t          2001 main ({exe})\n\
             \tffffffff813aeb13 schedule ([kernel.kallsyms])\n\
             \n"
        );
        let table = Table {
            chains: HashMap::from([
                (0x11dd, names(&["exec_bind_message", "PostgresMain"])),
                // A return address, looked up one byte back.
                (0x2000, names(&["startup", "main"])),
            ]),
            asked: Default::default(),
        };
        let out = expand(&script, &table);
        let frames: Vec<&str> = out.lines().filter_map(|l| Some(frame(l)?.symbol)).collect();
        assert_eq!(
            frames,
            [
                "exec_bind_message",
                "PostgresMain",
                "startup",
                "main",
                "schedule"
            ]
        );
        // One question for the binary, none for the kernel.
        let asked = table.asked.borrow();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].1, [0x11dd, 0x2000]);
        // Folded, the inlined function is a frame of its own.
        let folded = crate::perf::Folded::from_perf_script(&out).unwrap();
        assert!(
            folded.has_function("exec_bind_message"),
            "{}",
            folded.to_text()
        );
    }

    #[test]
    fn a_chain_that_does_not_end_in_perfs_symbol_is_not_trusted() {
        let exe = std::env::current_exe().unwrap();
        let script = format!("p 1/1 1.0: e: \n\t 10 foo+0x10 ({})\n", exe.display());
        let table = Table {
            chains: HashMap::from([(0x10, names(&["bar", "baz"]))]),
            asked: Default::default(),
        };
        assert_eq!(expand(&script, &table), script);
    }

    #[test]
    fn binaries_that_are_gone_are_not_asked_about() {
        let script = "p 1/1 1.0: e: \n\t 10 foo (/nonexistent/postgres)\n";
        let table = Table {
            chains: HashMap::new(),
            asked: Default::default(),
        };
        assert_eq!(expand(script, &table), script);
        assert!(table.asked.borrow().is_empty());
    }

    /// The real `addr2line` over a real optimized build with debug
    /// information: a static function inlined into its caller is named.
    #[test]
    fn addr2line_names_a_function_the_compiler_inlined() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("t.c");
        std::fs::write(
            &source,
            "static volatile unsigned long sink;\n\
             static void spin(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }\n\
             __attribute__((noinline)) void outer(unsigned long n) { spin(n); }\n\
             int main(int c, char **v) { (void) v; outer((unsigned long) c * 1000); return 0; }\n",
        )
        .unwrap();
        let binary = dir.path().join("t");
        let built = std::process::Command::new("gcc")
            .args(["-O2", "-g", "-o"])
            .arg(&binary)
            .arg(&source)
            .status();
        if !matches!(built, Ok(s) if s.success()) {
            assert!(
                std::env::var_os("CI").is_none(),
                "gcc is needed (apt-get install build-essential)"
            );
            crate::testing::skipped("needs gcc (apt-get install build-essential)");
            return;
        }
        // Every address of `outer` per the symbol table.
        let nm = std::process::Command::new("nm")
            .arg(&binary)
            .output()
            .unwrap();
        let nm = String::from_utf8_lossy(&nm.stdout);
        let start = nm
            .lines()
            .find(|l| l.ends_with(" outer"))
            .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
            .unwrap();
        let addrs: Vec<u64> = (start..start + 32).collect();
        let chains = Addr2line::default().resolve(&binary, &addrs);
        assert!(
            chains
                .values()
                .any(|c| c.first().map(String::as_str) == Some("spin")
                    && c.last().map(String::as_str) == Some("outer")),
            "{chains:?}"
        );
    }
}
